//! Custody under injected faults: dexd in process on a vault chain of a real node (anvil), with
//! fail-rs failpoints in the journal (compiled into test builds only); and, with the same
//! failpoints, what a read sees while the journal is slow. The failpoints are global to the
//! process, so these tests live in their own binary and run one at a time.

// The shared harness of the `all` binary; this binary uses a part of it.
#[allow(dead_code)]
#[path = "all/common/mod.rs"]
mod common;

use std::time::{Duration, Instant};

use alloy::eips::BlockId;
use alloy::primitives::U256;
use alloy::signers::local::PrivateKeySigner;
use common::chain::{TestChain, ETH_UNIT};
use common::TestServer;
use dexd_crypto::checksummed;
use dexd_custody::deploy;
use dexd_custody::vault::venue_address;
use dexd_venue::config::Config;
use serde_json::json;

/// The failpoints are process-wide: one test at a time uses them.
static FAILPOINTS: tokio::sync::Mutex<()> = tokio::sync::Mutex::const_new(());

fn address_of(signer: &PrivateKeySigner) -> String {
    checksummed(&venue_address(&signer.address()))
}

async fn eth_available(server: &TestServer, chain: &TestChain, account: &PrivateKeySigner) -> String {
    let chain_id = chain.chain_id.to_string();
    let address = address_of(account);
    let (status, body) = server
        .get(
            "/account/assetBalances",
            &[("chainId", &chain_id), ("account", &address)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    common::balance_in(&body, "ETH")["available"]
        .as_str()
        .unwrap()
        .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_whose_journal_append_fails_is_never_paid() {
    let _failpoints = FAILPOINTS.lock().await;
    let chain = TestChain::start().await;
    let folder = tempfile::tempdir().unwrap();
    let config_path = chain.write_dexd_config(folder.path(), &chain.anvil.endpoint());
    let server = TestServer::start_in(Config::load(&config_path).unwrap(), &folder.path().join("data")).await;
    let alice = chain.users[0].clone();
    deploy::deposit_from_wallet(&chain.node, &alice, None, U256::from(ETH_UNIT))
        .await
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while eth_available(&server, &chain, &alice).await != "1" {
        assert!(Instant::now() < deadline, "the deposit was not credited");
        chain.mine(1).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let vault_before = chain.vault_balance(None).await;
    // The next append stalls for three seconds, as on a slow disk, then fails: the withdrawal is
    // in the engine all that time and never in the journal.
    fail::cfg("journal-append-stall", "1*sleep(3000)").unwrap();
    fail::cfg("journal-append", "1*return").unwrap();
    let key = format!("0x{}", alloy::hex::encode(alice.to_bytes()));
    let withdrawal = json!({"chainId": chain.chain_id.to_string(), "from": address_of(&alice), "symbol": "ETH",
        "quantity": "0.5", "privateKey": key});
    let (status, body) = server.post_json("/portfolio/withdraw", withdrawal).await;
    fail::remove("journal-append-stall");
    fail::remove("journal-append");
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (503, Some("UNAVAILABLE")),
        "{body}"
    );
    // Blocks come for a while: the payer had every chance to send it.
    for _ in 0..15 {
        chain.mine(1).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        chain.vault_balance(None).await,
        vault_before,
        "the vault paid a withdrawal the journal never held"
    );
    let in_wallet = chain
        .node
        .balance(None, alice.address(), BlockId::latest())
        .await
        .unwrap();
    assert_eq!(eth_available(&server, &chain, &alice).await, "1", "nothing was debited");
    // And the account can withdraw for real afterwards.
    let withdrawal = json!({"chainId": chain.chain_id.to_string(), "from": address_of(&alice), "symbol": "ETH",
        "quantity": "0.5", "privateKey": key});
    let (status, body) = server.post_json("/portfolio/withdraw", withdrawal).await;
    assert_eq!(status, 200, "{body}");
    let deadline = Instant::now() + Duration::from_secs(30);
    while chain
        .node
        .balance(None, alice.address(), BlockId::latest())
        .await
        .unwrap()
        <= in_wallet
    {
        assert!(Instant::now() < deadline, "the durable withdrawal was not paid");
        chain.mine(1).await;
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(chain.vault_balance(None).await, vault_before - U256::from(ETH_UNIT / 2));
}

/// Regression: a balance read shows a batch the writer has applied and is still journaling; a
/// history read after it listed the deposit only once the batch was acknowledged, so a client
/// saw its balance credited and its deposit missing. The history read now waits for what the
/// engine had applied when it began.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_history_read_after_a_balance_read_lists_what_the_balance_showed() {
    let _failpoints = FAILPOINTS.lock().await;
    let folder = tempfile::tempdir().unwrap();
    let server = TestServer::start_in(Config::embedded_default(), folder.path()).await;
    let alice = common::Trader::new(0xa1);
    server.deposit(&alice, "USDC", "10").await;
    // The next append stalls, as on a slow disk: the deposit is in the engine, not yet journaled.
    fail::cfg("journal-append-stall", "1*sleep(1500)").unwrap();
    let deposit = {
        let server = TestServer::at(&server.base_url);
        let alice = common::Trader::new(0xa1);
        tokio::spawn(async move { server.deposit(&alice, "USDC", "5").await })
    };
    let deadline = Instant::now() + Duration::from_secs(5);
    while server.balance(&alice, "USDC").await["available"] != "15" {
        assert!(Instant::now() < deadline, "the deposit never reached the engine");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let deposits = server
        .account_list("/portfolio/depositHistories", &alice, "deposits")
        .await;
    fail::remove("journal-append-stall");
    assert_eq!(deposits.len(), 2, "the balance showed both deposits: {deposits:?}");
    deposit.await.unwrap();
}
