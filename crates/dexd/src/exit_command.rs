//! `dexd exit`: an account's way out of a frozen vault (version 2) without the venue. It reads
//! the proof the venue served (`GET /account/liabilityProof`, saved to a file), checks each leaf
//! against the root the vault itself will use, and sends the vault's `exit` for each, from any
//! funded key (the vault pays only the account). With `--freeze`, it first freezes the vault if
//! no root has come for its `maxRootAge`.
//!
//! It trusts nothing in the file it can check: the call is built from the leaf's fields, not
//! taken from `exitCalldata`, and a leaf whose proof does not lead to the vault's exit root is
//! not sent. It needs no running venue.

use std::path::PathBuf;
use std::process::ExitCode;

use alloy::eips::BlockId;
use alloy::primitives::{FixedBytes, TxKind, U256};
use alloy::sol_types::SolCall;
use clap::Args;
use dexd_crypto::liability_tree::{verify, LiabilityLeaf};
use dexd_crypto::{checksummed, parse_address};
use dexd_settlement::deploy;
use dexd_settlement::node::{Node, NodeError};
use dexd_settlement::vault::{chain_address, DexdVaultV2};
use serde_json::{json, Value};

use crate::chain_commands::{address_argument, connect, runtime, KeyArguments};

/// `dexd exit`
#[derive(Args)]
pub struct Exit {
    /// The proof, as `GET /account/liabilityProof` answered it (a JSON file).
    #[arg(long)]
    proof: PathBuf,
    /// The chain's JSON-RPC URL.
    #[arg(long)]
    rpc_url: String,
    /// The vault.
    #[arg(long)]
    vault: String,
    /// Freeze the vault first if it is not frozen and may be. The transactions are sent and
    /// paid for by the key given (any funded account: the vault pays only the proof's account).
    #[arg(long)]
    freeze: bool,
    #[command(flatten)]
    key: KeyArguments,
}

/// One leaf of the proof file, as the exit takes it.
struct ExitLeaf {
    symbol: String,
    leaf: LiabilityLeaf,
    proof: Vec<[u8; 32]>,
}

fn units(leaf: &Value, name: &str) -> Result<u128, String> {
    leaf[name]
        .as_str()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| format!("the proof's leaf has no {name} in smallest units"))
}

fn read_leaves(proof: &Value) -> Result<Vec<ExitLeaf>, String> {
    let account = proof["account"]
        .as_str()
        .and_then(|text| parse_address(text).ok())
        .ok_or("the proof names no account")?;
    let leaves = proof["leaves"].as_array().ok_or("the proof has no leaves")?;
    leaves
        .iter()
        .map(|leaf| {
            let token = leaf["token"]
                .as_str()
                .and_then(|text| parse_address(text).ok())
                .ok_or("a leaf has no token")?;
            let path = leaf["proof"]
                .as_array()
                .ok_or("a leaf has no proof")?
                .iter()
                .map(|node| {
                    node.as_str()
                        .and_then(|text| alloy::hex::decode(text.trim_start_matches("0x")).ok())
                        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
                        .ok_or_else(|| "a proof node is not 32 bytes of hex".to_string())
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(ExitLeaf {
                symbol: leaf["symbol"].as_str().unwrap_or("?").to_string(),
                leaf: LiabilityLeaf {
                    account,
                    token,
                    balance: units(leaf, "balance")?,
                    credited_deposits: units(leaf, "creditedDeposits")?,
                    debited_withdrawals: units(leaf, "debitedWithdrawals")?,
                },
                proof: path,
            })
        })
        .collect()
}

async fn view<Call: SolCall>(node: &Node, call: Call) -> Result<Call::Return, String> {
    node.view(node.vault(), call, BlockId::latest())
        .await
        .map_err(|error| format!("cannot read the vault: {error}"))
}

async fn exit(arguments: Exit) -> Result<Value, String> {
    let text = std::fs::read_to_string(&arguments.proof)
        .map_err(|error| format!("cannot read {}: {error}", arguments.proof.display()))?;
    let proof: Value = serde_json::from_str(&text).map_err(|error| format!("the proof is not JSON: {error}"))?;
    let leaves = read_leaves(&proof)?;
    let vault = address_argument(&arguments.vault, "vault")?;
    let signer = arguments.key.signer()?;
    let node = connect(&arguments.rpc_url, vault).await?;
    let send = |input: Vec<u8>| {
        let (node, signer) = (&node, &signer);
        async move { deploy::send_and_wait(node, signer, TxKind::Call(vault), input, U256::ZERO).await }
    };
    if !view(&node, DexdVaultV2::frozenCall {}).await? {
        if !arguments.freeze {
            return Err(
                "the vault is not frozen: exits open once it is (add --freeze to freeze it, which the vault \
                        allows only when no root has come for its maxRootAge)"
                    .into(),
            );
        }
        send(DexdVaultV2::freezeCall {}.abi_encode())
            .await
            .map_err(|error| match error {
                NodeError::Reverted { .. } => {
                    "the vault refuses to freeze: a root came within its maxRootAge (the operator is there)".to_string()
                }
                other => format!("the freeze failed: {other}"),
            })?;
    }
    let exit_root = if view(&node, DexdVaultV2::hasExitRootCall {}).await? {
        let epoch = view(&node, DexdVaultV2::exitEpochCall {}).await?;
        Some(view(&node, DexdVaultV2::liabilityRootCall { epoch }).await?.root.0)
    } else {
        None
    };
    let mut results = Vec::new();
    for exit in leaves {
        let checks = match exit_root {
            Some(root) => verify(&root, &exit.leaf, &exit.proof),
            None => false,
        };
        if !checks {
            results.push(json!({"symbol": exit.symbol, "sent": false,
                "reason": "the leaf is not in the vault's exit root (a newer root than the vault's, or a vetoed one)"}));
            continue;
        }
        let call = DexdVaultV2::exitCall {
            account: chain_address(&exit.leaf.account),
            token: chain_address(&exit.leaf.token),
            balance: U256::from(exit.leaf.balance),
            creditedDeposits: U256::from(exit.leaf.credited_deposits),
            debitedWithdrawals: U256::from(exit.leaf.debited_withdrawals),
            proof: exit.proof.iter().map(|node| FixedBytes(*node)).collect(),
        };
        match send(call.abi_encode()).await {
            Ok(receipt) => results.push(json!({"symbol": exit.symbol, "sent": true,
                "block": receipt.block_number, "gasUsed": receipt.gas_used})),
            Err(error) => results.push(json!({"symbol": exit.symbol, "sent": false, "reason": error.to_string()})),
        }
    }
    Ok(
        json!({"account": proof["account"], "vault": checksummed(&dexd_settlement::vault::venue_address(&vault)), "exits": results}),
    )
}

/// Runs `dexd exit`; prints what was sent as JSON.
pub fn run_exit(arguments: Exit) -> ExitCode {
    match runtime().block_on(exit(arguments)) {
        Ok(output) => {
            println!("{output}");
            if output["exits"]
                .as_array()
                .is_some_and(|exits| exits.iter().all(|exit| exit["sent"] == true))
            {
                ExitCode::SUCCESS
            } else {
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("dexd exit: {error}");
            ExitCode::FAILURE
        }
    }
}
