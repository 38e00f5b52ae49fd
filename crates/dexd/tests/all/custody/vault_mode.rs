//! Vault custody at its edges: the real dexd binary on a vault chain of a real node (anvil). The
//! node going away makes deposits 502 while withdrawals wait and trading goes on; bad deposits
//! and withdrawals are refused and change nothing; reserve readings are shared.

use crate::common;

use std::time::Duration;

use alloy::primitives::U256;
use alloy::signers::local::PrivateKeySigner;
use common::chain::{NodeProxy, TestChain, USDC_UNIT};
use common::vault_venue::{address_of, deposit_body, key_of, VaultVenue};
use dexd_custody::deploy;
use serde_json::json;

#[tokio::test]
async fn the_node_down_makes_deposits_502_while_withdrawals_wait_and_trading_goes_on() {
    let chain = TestChain::start().await;
    let proxy = NodeProxy::start(chain.anvil.endpoint().trim_start_matches("http://").to_string()).await;
    let mut venue = VaultVenue::start_on(chain, &proxy.url);
    let alice = venue.chain.users[0].clone();
    venue
        .fund(&alice, Some(venue.chain.usdc), 200 * USDC_UNIT, "USDC", "200")
        .await;
    proxy.down().await;
    let (status, body) = venue
        .post("/portfolio/deposit", deposit_body(&alice, "USDC", "5"))
        .await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "CHAIN_UNAVAILABLE");
    // The node URL is a secret (providers put keys in it): no answer names it.
    let node_host = proxy
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    assert!(!body.to_string().contains(&node_host), "the node URL leaked: {body}");
    let deposits = venue.transfers(&alice, "deposit").await;
    assert_eq!(deposits.len(), 1, "nothing was applied: {deposits:?}");
    let (status, body) = venue
        .post("/portfolio/withdraw", deposit_body(&alice, "USDC", "50"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["withdrawal"]["status"], "pending");
    let order = json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100", "amount": "0.5", "privateKey": key_of(&alice)});
    let (status, body) = venue.post("/order/addOrder", order).await;
    assert_eq!(status, 200, "trading goes on: {body}");
    let (status, body) = venue.get("/account/reserves", &[]).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (502, Some("CHAIN_UNAVAILABLE")),
        "{body}"
    );
    assert!(!body.to_string().contains(&node_host), "the node URL leaked: {body}");
    venue.chain.mine(3).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        venue.transfers(&alice, "withdraw").await[0]["status"],
        "pending",
        "it waits for the node"
    );
    // A restart while the node is down changes nothing either.
    venue.restart();
    proxy.up();
    let before = venue.usdc_in_wallet(&alice).await;
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    let after = venue.usdc_in_wallet(&alice).await;
    assert_eq!(after - before, U256::from(50 * USDC_UNIT));
    venue.assert_conserved().await;
}

#[tokio::test]
async fn bad_deposits_and_withdrawals_on_a_vault_chain_are_refused_and_change_nothing() {
    let venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    // No key: dexd cannot send a deposit for the account.
    let signed = json!({"from": address_of(&alice), "symbol": "USDC", "quantity": "1", "nonce": "1",
        "expiry": (dexd_store::now_ms() + 60_000).to_string(), "signature": format!("0x{}", "11".repeat(65))});
    let body = venue
        .refused("/portfolio/deposit", signed, 400, "INVALID_PARAMETER")
        .await;
    assert!(
        body["error"]["message"].as_str().unwrap().contains("from the wallet"),
        "{body}"
    );
    // An account without the token; one with the token and no gas; more ETH than it has.
    let empty = PrivateKeySigner::random();
    venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&empty, "USDC", "1"),
            422,
            "INSUFFICIENT_FUNDS_ON_CHAIN",
        )
        .await;
    let no_gas = PrivateKeySigner::random();
    deploy::mint(
        &venue.chain.node,
        &venue.chain.deployer,
        venue.chain.usdc,
        no_gas.address(),
        U256::from(10 * USDC_UNIT),
    )
    .await
    .unwrap();
    let body = venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&no_gas, "USDC", "1"),
            422,
            "INSUFFICIENT_FUNDS_ON_CHAIN",
        )
        .await;
    assert!(body["error"]["message"].as_str().unwrap().contains("gas"), "{body}");
    venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&alice, "ETH", "1000000"),
            422,
            "INSUFFICIENT_FUNDS_ON_CHAIN",
        )
        .await;
    // Beyond the token's decimals, an unknown token, a withdrawal beyond the balance.
    venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&alice, "USDC", "1.0000001"),
            400,
            "INVALID_NUMBER",
        )
        .await;
    venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&alice, "DAI", "1"),
            404,
            "UNKNOWN_ASSET",
        )
        .await;
    venue
        .refused(
            "/portfolio/withdraw",
            deposit_body(&alice, "USDC", "1"),
            422,
            "INSUFFICIENT_BALANCE",
        )
        .await;
    // Nothing was sent or recorded.
    for account in [&alice, &empty, &no_gas] {
        assert!(venue.transfers(account, "deposit").await.is_empty());
        assert!(venue.transfers(account, "withdraw").await.is_empty());
    }
    assert_eq!(venue.chain.vault_balance(Some(venue.chain.usdc)).await, U256::ZERO);
    assert_eq!(venue.chain.vault_balance(None).await, U256::ZERO);
}

#[tokio::test]
async fn reserves_readings_are_shared_so_callers_cannot_multiply_the_nodes_load() {
    let venue = VaultVenue::start().await;
    // Twenty callers at once, with a block mined among them: one reading serves them all.
    let mine = async {
        venue.chain.mine(1).await;
    };
    let calls = futures_util::future::join_all((0..20).map(|_| venue.get("/account/reserves", &[])));
    let (answers, ()) = tokio::join!(calls, mine);
    let readings: std::collections::BTreeSet<(String, String)> = answers
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 200, "{body}");
            (body["readAt"].to_string(), body["blockNumber"].to_string())
        })
        .collect();
    assert_eq!(readings.len(), 1, "one reading for twenty callers: {readings:?}");
    let (read_at, block) = readings.into_iter().next().unwrap();
    // A reading older than a second is replaced by a fresh one, at the newer block.
    venue.chain.mine(1).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let (status, body) = venue.get("/account/reserves", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["readAt"].as_u64() > read_at.parse().ok(), "{body}");
    assert!(body["blockNumber"].as_u64() > block.parse().ok(), "{body}");
}
