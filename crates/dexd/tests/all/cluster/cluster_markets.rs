//! Markets listed at run time on a cluster, black box: two real `dexd` nodes on a real
//! PostgreSQL, each with its admin listener. A pair listed and a fee cut on the leader are
//! served by the follower as soon as it follows the journal; when the leader is SIGKILLed, the
//! node that takes over journals its configuration file merged with the journal's, so the
//! listing and the cuts stand (the file is the one last journaled, even for a pair the file
//! lists), and the new pair trades.

use crate::common;

use std::time::{Duration, Instant};

use common::cluster::{default_node_config, leader_other_than};
use common::{BinaryServer, TestServer, Trader};
use dexd_store::postgres::test_server::PostgresServer;
use serde_json::{json, Value};

const TOKEN: &str = "0123456789abcdef0123456789abcdef-operator";

async fn admin_post(admin_url: &str, path: &str, body: Value) -> (u16, Value) {
    let response = reqwest::Client::new()
        .post(format!("{admin_url}{path}"))
        .header("authorization", format!("Bearer {TOKEN}"))
        .json(&body)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

/// The pair `symbol` as the node serves it, once it has it (within `within`).
async fn pair_on(server: &TestServer, symbol: &str, within: Duration) -> Value {
    let started = Instant::now();
    loop {
        let (status, pairs) = server.get("/account/assetPairs", &[("chainId", "1")]).await;
        if status == 200 {
            if let Some(pair) = pairs["pairs"]
                .as_array()
                .unwrap()
                .iter()
                .find(|pair| pair["symbol"] == symbol)
            {
                return pair.clone();
            }
        }
        assert!(started.elapsed() < within, "{symbol} is not served: {pairs}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_pair_listed_on_the_leader_is_served_by_the_follower_and_outlives_the_leader() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = |node_id| default_node_config(folder.path(), &postgres, node_id);
    let (node_a, admin_a) =
        BinaryServer::start_with_admin_and_config(&folder.path().join("node-a"), Some(&config("node-a")), TOKEN);
    let (node_b, admin_b) =
        BinaryServer::start_with_admin_and_config(&folder.path().join("node-b"), Some(&config("node-b")), TOKEN);
    let leader = leader_other_than(&node_a.base_url, 1, None, Duration::from_secs(10)).await;
    let (mut leading, leading_admin, following, following_admin) = match leader.as_str() {
        "node-a" => (node_a, admin_a, node_b, admin_b),
        "node-b" => (node_b, admin_b, node_a, admin_a),
        other => panic!("one of the two nodes leads, not {other}"),
    };
    let pair = json!({"chainId": "1", "base": "WBTC", "quote": "USDT", "tickSize": "0.01", "stepSize": "0.0001",
                      "minAmount": "0.0001", "minNotional": "1", "makerFee": "0.001", "takerFee": "0.002"});
    // A follower does not take the operator's changes: they are the leader's to journal.
    let (status, _) = admin_post(&following_admin, "/admin/listPair", pair.clone()).await;
    assert_eq!(status, 503);
    let (status, listed) = admin_post(&leading_admin, "/admin/listPair", pair).await;
    assert_eq!(status, 200, "{listed}");
    let cut = json!({"chainId": "1", "symbol": "WBTC/USDT", "makerFee": "0.0001", "takerFee": "0.0003"});
    let (status, answer) = admin_post(&leading_admin, "/admin/setFees", cut).await;
    assert_eq!(status, 200, "{answer}");
    // A pair of the configuration file too: its cut stands while the file is the one journaled
    // (its fingerprint is kept in PostgreSQL, for every node).
    let file_cut = json!({"chainId": "1", "symbol": "ETH/USDC", "makerFee": "0.0002", "takerFee": "0.0004"});
    let (status, answer) = admin_post(&leading_admin, "/admin/setFees", file_cut).await;
    assert_eq!(status, 200, "{answer}");

    let follower = TestServer::at(&following.base_url);
    let served = pair_on(&follower, "WBTC/USDT", Duration::from_secs(10)).await;
    assert_eq!(served["base"], "WBTC", "{served}");
    let started = Instant::now();
    while pair_on(&follower, "WBTC/USDT", Duration::from_secs(1)).await["takerFee"] != "0.0003" {
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "the follower serves the cut"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    leading.kill();

    leader_other_than(&following.base_url, 1, Some(&leader), Duration::from_secs(15)).await;
    let kept = pair_on(&follower, "WBTC/USDT", Duration::from_secs(10)).await;
    assert_eq!(
        (&kept["makerFee"], &kept["takerFee"]),
        (&json!("0.0001"), &json!("0.0003")),
        "the node that took over keeps the cut: {kept}"
    );

    let seller = Trader::new(0x5e);
    let buyer = Trader::new(0xb7);
    follower.deposit(&seller, "WBTC", "1").await;
    follower.deposit(&buyer, "USDT", "100000").await;
    // The new leader applies writes only after it journaled its configuration: what it serves
    // now is what it journaled.
    let eth = pair_on(&follower, "ETH/USDC", Duration::from_secs(1)).await;
    assert_eq!(
        (&eth["takerFee"], &eth["feeRaise"]),
        (&json!("0.0004"), &Value::Null),
        "the file's pair keeps its run-time cut: {eth}"
    );
    let order = |trader: &Trader, direction: &str| {
        json!({"chainId": "1", "symbol": "WBTC/USDT", "type": "limit", "direction": direction, "price": "60000",
               "amount": "0.5", "privateKey": trader.key})
    };
    let (status, resting) = follower.post_json("/order/addOrder", order(&seller, "sell")).await;
    assert_eq!(status, 200, "{resting}");
    let (status, taken) = follower.post_json("/order/addOrder", order(&buyer, "buy")).await;
    assert_eq!(
        (status, taken["trades"].as_array().map(Vec::len)),
        (200, Some(1)),
        "{taken}"
    );
    // 0.5 WBTC less the taker's 0.03 %.
    assert_eq!(follower.balance(&buyer, "WBTC").await["total"], "0.49985");
}
