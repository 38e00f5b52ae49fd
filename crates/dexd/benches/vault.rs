//! Vault custody figures on a real node (anvil from `contracts/node_modules`):
//!
//! - gas of a deposit (ERC-20 with its approve, native) and of withdrawals, alone and batched;
//! - how fast the deposit watcher credits a backlog of 10,000 confirmed deposits (target
//!   5,000/s): the venue starts on a fresh data directory after they are mined;
//! - the credit lag: from the block that gives a deposit its last confirmation to the credit.
//!
//! `cargo bench -p dexd --bench vault` (`DEXD_BENCH_BACKLOG` changes the backlog's size).

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::node_bindings::Anvil;
use alloy::primitives::{Address as ChainAddress, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use dexd_crypto::{PrivateKey, SigningDomain};
use dexd_custody::devnet::{self, DevnetConfigOptions};
use dexd_custody::node::{Fees, Node, TransactionTerms};
use dexd_custody::vault::{venue_address, DexdVault, WithdrawalTerms};
use dexd_custody::{deploy, Custodians};
use dexd_venue::config::Config;
use dexd_venue::Venue;

#[path = "common/anvil.rs"]
mod anvil;

use anvil::{anvil_path, signer};

fn key_of(signer: &PrivateKeySigner) -> PrivateKey {
    PrivateKey::parse(&format!("0x{}", alloy::hex::encode(signer.to_bytes()))).unwrap()
}

async fn mine(node: &Node, blocks: u64) {
    node.raw_request("anvil_mine", serde_json::json!([format!("0x{blocks:x}")]))
        .await
        .unwrap();
}

/// Starts the venue and its custody in process on `config_toml`, in a fresh data directory.
async fn start_venue(config_toml: &str, data_dir: &std::path::Path) -> (Arc<Venue>, Custodians) {
    let config = Config::parse(config_toml).unwrap();
    let venue = Arc::new(Venue::start(config, data_dir).unwrap());
    let custody = Custodians::start(dexd_venue::vault_chain_setups(&venue)).await.unwrap();
    (venue, custody)
}

fn credited(venue: &Venue, chain_id: u64) -> u64 {
    venue
        .chain(chain_id)
        .unwrap()
        .read_engine(|engine| engine.custody().next_deposit_id())
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() {
    let backlog: usize = std::env::var("DEXD_BENCH_BACKLOG")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(10_000);
    let anvil = Anvil::at(anvil_path())
        .args(["--accounts", "20", "--balance", "1000000"])
        .spawn();
    let funder = signer(&anvil, 0);
    let (network, operator) = devnet::set_up(&anvil.endpoint(), &funder, 2).await.unwrap();
    let node = Node::connect(
        &anvil.endpoint(),
        network.vault,
        network.chain_id,
        Duration::from_secs(30),
    )
    .unwrap();
    let folder = tempfile::tempdir().unwrap();

    // Gas.
    let alice = &network.accounts[0];
    let approve = deploy::approve(&node, alice, network.usdc, network.vault, U256::from(1_000_000_000u64))
        .await
        .unwrap();
    let deposit = |amount: u64| {
        DexdVault::depositCall {
            token: network.usdc,
            amount: U256::from(amount),
        }
        .abi_encode()
    };
    let first = deploy::send_and_wait(
        &node,
        alice,
        TxKind::Call(network.vault),
        deposit(500_000_000),
        U256::ZERO,
    )
    .await
    .unwrap();
    let second = deploy::send_and_wait(
        &node,
        alice,
        TxKind::Call(network.vault),
        deposit(400_000_000),
        U256::ZERO,
    )
    .await
    .unwrap();
    let native = deploy::send_and_wait(
        &node,
        alice,
        TxKind::Call(network.vault),
        DexdVault::depositNativeCall {}.abi_encode(),
        U256::from(10u128.pow(18)),
    )
    .await
    .unwrap();
    println!(
        "gas: approve {}, ERC-20 deposit {} (first of the account) / {} (later), native deposit {}",
        approve.gas_used, first.gas_used, second.gas_used, native.gas_used
    );
    let domain = SigningDomain::new(network.chain_id, venue_address(&network.vault));
    let alice_key = key_of(alice);
    let mut next_id = 1u64;
    let mut withdrawal = || {
        let mut id = [0u8; 32];
        id[24..].copy_from_slice(&next_id.to_be_bytes());
        next_id += 1;
        let terms = WithdrawalTerms {
            account: venue_address(&alice.address()),
            token: Some(venue_address(&network.usdc)),
            amount_units: 1_000_000,
            withdrawal_id: id,
            expiry_ms: 4_000_000_000_000,
        };
        terms.call_argument(&alice_key.sign_digest(terms.digest(&domain)))
    };
    for size in [1usize, 10, 50] {
        let batch: Vec<_> = (0..size).map(|_| withdrawal()).collect();
        let input = DexdVault::withdrawBatchCall { withdrawals: batch }.abi_encode();
        let receipt = deploy::send_and_wait(&node, &operator, TxKind::Call(network.vault), input, U256::ZERO)
            .await
            .unwrap();
        println!(
            "gas: withdrawBatch of {size}: {} in all, {} per withdrawal",
            receipt.gas_used,
            receipt.gas_used / size as u64
        );
    }
    let single = DexdVault::withdrawCall {
        withdrawal: withdrawal(),
    }
    .abi_encode();
    let receipt = deploy::send_and_wait(&node, &operator, TxKind::Call(network.vault), single, U256::ZERO)
        .await
        .unwrap();
    println!("gas: withdraw (one, not batched): {}", receipt.gas_used);

    // A backlog of confirmed deposits, made before the venue starts.
    node.raw_request("evm_setAutomine", serde_json::json!([false]))
        .await
        .unwrap();
    let senders: Vec<PrivateKeySigner> = (1..11).map(|index| signer(&anvil, index)).collect();
    let (max_fee_per_gas, max_priority_fee_per_gas) = node.fee_estimate().await.unwrap();
    let fees = Fees {
        max_fee_per_gas: max_fee_per_gas * 4,
        max_priority_fee_per_gas,
        gas_limit: 60_000,
    };
    let started = Instant::now();
    for (index, sender) in senders.iter().enumerate() {
        let first_nonce = node.pending_nonce(sender.address()).await.unwrap();
        let count = backlog / senders.len() + usize::from(index < backlog % senders.len());
        for offset in 0..count as u64 {
            let terms = TransactionTerms {
                to: TxKind::Call(network.vault),
                input: DexdVault::depositNativeCall {}.abi_encode(),
                value: U256::from(1_000u64),
                nonce: first_nonce + offset,
                fees,
                blobs: None,
            };
            node.send(sender, terms).await.unwrap();
        }
    }
    let sent_in = started.elapsed();
    let mut mined_blocks = 0;
    loop {
        mine(&node, 1).await;
        mined_blocks += 1;
        let pending = node.raw_request("txpool_status", serde_json::json!([])).await.unwrap();
        if pending["pending"].as_str().is_none_or(|count| count == "0x0") {
            break;
        }
    }
    mine(&node, 3).await;
    node.raw_request("evm_setAutomine", serde_json::json!([true]))
        .await
        .unwrap();
    println!(
        "backlog: {backlog} native deposits sent in {:.1} s, mined in {mined_blocks} blocks",
        sent_in.as_secs_f64()
    );
    let options = DevnetConfigOptions {
        confirmations: 2,
        poll_interval_ms: 100,
        replace_after_ms: 30_000,
        root_interval_ms: 86_400_000,
    };
    let config_path = devnet::write_files(&network, &operator, folder.path(), options, None).unwrap();
    let config_toml = std::fs::read_to_string(&config_path).unwrap().replace(
        "operator_key_file = \"operator.key\"",
        &format!(
            "operator_key_file = \"{}\"",
            folder.path().join("operator.key").display()
        ),
    );
    let expected = credited_target(&node, &network.vault).await;
    let data_dir = folder.path().join("data");
    let started = Instant::now();
    let (venue, custody) = start_venue(&config_toml, &data_dir).await;
    while credited(&venue, network.chain_id) < expected {
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let elapsed = started.elapsed();
    println!(
        "backlog: {expected} deposits credited in {:.3} s from the venue's start: {:.0} deposits/s (target 5,000/s)",
        elapsed.as_secs_f64(),
        expected as f64 / elapsed.as_secs_f64()
    );

    // The credit lag after the last confirmation (polling every 100 ms).
    let mut lags = Vec::new();
    for _ in 0..20 {
        deploy::deposit_from_wallet(&node, alice, None, U256::from(1_000u64))
            .await
            .unwrap();
        let target = credited(&venue, network.chain_id) + 1;
        mine(&node, 1).await;
        let confirmed_at = Instant::now();
        mine(&node, 1).await;
        while credited(&venue, network.chain_id) < target {
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        lags.push(confirmed_at.elapsed());
    }
    lags.sort();
    println!(
        "credit lag after the last confirmation (poll interval 100 ms, 20 deposits): p50 {} ms, max {} ms",
        lags[lags.len() / 2].as_millis(),
        lags[lags.len() - 1].as_millis()
    );
    custody.stop().await;
    venue.close().await;
}

/// The number of deposits the vault has made.
async fn credited_target(node: &Node, vault: &ChainAddress) -> u64 {
    let output = node
        .call(
            None,
            *vault,
            DexdVault::depositCountCall {}.abi_encode(),
            U256::ZERO,
            alloy::eips::BlockId::latest(),
        )
        .await
        .unwrap();
    u64::try_from(DexdVault::depositCountCall::abi_decode_returns(&output).unwrap()).unwrap()
}
