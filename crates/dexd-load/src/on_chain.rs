//! Funding the generator's accounts on a vault chain of a devnet (`--fund-on-chain
//! devnet.json`): each account gets the native asset from the node's `anvil_setBalance`, mints
//! itself test `USDC`, and deposits both straight into the vault, as a wallet would; the run
//! starts once dexd has credited every account after the confirmations.
//!
//! For devnets (anvil) only: it uses anvil's own RPC method and the test token's open `mint`.

use std::time::{Duration, Instant};

use alloy::primitives::{Address as ChainAddress, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use dexd_crypto::parse_address;
use dexd_custody::deploy::TestToken;
use dexd_custody::node::{Fees, Node, TransactionTerms};
use dexd_custody::vault::{chain_address, DexdVault, Erc20};
use serde_json::Value;

use crate::RunSettings;

/// What each account deposits: as much as the ledger funding of [`crate::fund_accounts`].
const ETH_WEI: u128 = 1_000_000 * 1_000_000_000_000_000_000;
const USDC_UNITS: u128 = 10_000_000_000 * 1_000_000;

fn address(description: &Value, pointer: &str) -> Result<ChainAddress, String> {
    let text = description
        .pointer(pointer)
        .and_then(Value::as_str)
        .ok_or_else(|| format!("devnet.json has no {pointer}"))?;
    parse_address(text)
        .map(|address| chain_address(&address))
        .map_err(|_| format!("devnet.json: {pointer} is not an address"))
}

/// Funds the run's accounts through the devnet's vault and waits until dexd credited them.
pub async fn fund_accounts_on_chain(settings: &RunSettings, devnet_json: &std::path::Path) -> Result<(), String> {
    let text = std::fs::read_to_string(devnet_json).map_err(|error| format!("{}: {error}", devnet_json.display()))?;
    let description: Value = serde_json::from_str(&text).map_err(|error| format!("devnet.json: {error}"))?;
    let rpc_url = description["rpcUrl"].as_str().ok_or("devnet.json has no rpcUrl")?;
    let vault = address(&description, "/vault")?;
    let usdc = address(&description, "/tokens/USDC/address")?;
    let node = Node::connect(rpc_url, vault, settings.chain_id, Duration::from_secs(30))?;
    let (max_fee_per_gas, max_priority_fee_per_gas) = node.fee_estimate().await.map_err(|error| error.to_string())?;
    let fees = Fees {
        max_fee_per_gas: max_fee_per_gas * 4,
        max_priority_fee_per_gas,
        gas_limit: 150_000,
    };
    let started = Instant::now();
    for index in 0..settings.accounts {
        let trader = crate::trader(index);
        let signer = PrivateKeySigner::from_slice(&dexd_crypto::parse_hex_bytes::<32>(&trader.key).ok_or("bad key")?)
            .map_err(|error| error.to_string())?;
        let account = signer.address();
        node.raw_request(
            "anvil_setBalance",
            serde_json::json!([account.to_string(), format!("0x{:x}", ETH_WEI * 2)]),
        )
        .await
        .map_err(|error| error.to_string())?;
        fund_account(&node, &signer, (vault, usdc), fees, index).await?;
    }
    // The confirmations, then dexd's credit of the last account.
    wait_for_the_credits(&node, settings).await?;
    println!(
        "funded {} accounts through the vault in {:.1} s",
        settings.accounts,
        started.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Sends one account's funding: USDC minted, approved and deposited, and ETH deposited.
async fn fund_account(
    node: &Node,
    signer: &PrivateKeySigner,
    (vault, usdc): (ChainAddress, ChainAddress),
    fees: Fees,
    index: usize,
) -> Result<(), String> {
    let account = signer.address();
    let nonce = node.pending_nonce(account).await.map_err(|error| error.to_string())?;
    let transactions = [
        (
            usdc,
            TestToken::mintCall {
                to: account,
                amount: U256::from(USDC_UNITS),
            }
            .abi_encode(),
            U256::ZERO,
        ),
        (
            usdc,
            Erc20::approveCall {
                spender: vault,
                amount: U256::from(USDC_UNITS),
            }
            .abi_encode(),
            U256::ZERO,
        ),
        (
            vault,
            DexdVault::depositCall {
                token: usdc,
                amount: U256::from(USDC_UNITS),
            }
            .abi_encode(),
            U256::ZERO,
        ),
        (vault, DexdVault::depositNativeCall {}.abi_encode(), U256::from(ETH_WEI)),
    ];
    // The node mines each as it arrives, in order, so the approve is in before the deposit.
    for (offset, (to, input, value)) in transactions.into_iter().enumerate() {
        let terms = TransactionTerms {
            to: TxKind::Call(to),
            input,
            value,
            nonce: nonce + offset as u64,
            fees,
            blobs: None,
        };
        node.send(signer, terms)
            .await
            .map_err(|error| format!("funding account {index}: {error}"))?;
    }
    Ok(())
}

/// Mines the confirmations, then waits until dexd credited the last account.
async fn wait_for_the_credits(node: &Node, settings: &RunSettings) -> Result<(), String> {
    node.raw_request("anvil_mine", serde_json::json!(["0x4"]))
        .await
        .map_err(|error| error.to_string())?;
    let last = crate::trader(settings.accounts - 1);
    let url = format!(
        "{}/account/assetBalances?chainId={}&account={}",
        settings.target, settings.chain_id, last.address
    );
    let deadline = Instant::now() + Duration::from_secs(300);
    loop {
        let (status, body) = crate::get_json(&settings.target, &url).await?;
        let credited = status == 200
            && body["balances"].as_array().is_some_and(|balances| {
                balances
                    .iter()
                    .filter(|balance| balance["symbol"] == "ETH" || balance["symbol"] == "USDC")
                    .all(|balance| balance["total"] != "0")
            });
        if credited {
            break;
        }
        if Instant::now() > deadline {
            return Err(format!("dexd did not credit the on-chain deposits: {body}"));
        }
        node.raw_request("anvil_mine", serde_json::json!(["0x1"]))
            .await
            .map_err(|error| error.to_string())?;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    Ok(())
}
