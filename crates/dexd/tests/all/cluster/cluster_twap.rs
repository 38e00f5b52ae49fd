//! A TWAP through a leader change, black box: two real `dexd` nodes on a real PostgreSQL. The
//! TWAP starts on the leader, which runs its first slice and is then SIGKILLed; the other node
//! takes the chain over and its timer runs the next slice when it is due, once: the schedule
//! lives in the journal, not in the node that started it.

use crate::common;

use std::time::{Duration, Instant};

use common::cluster::{default_node_config, leader_other_than};
use common::{BinaryServer, TestServer, Trader};
use dexd_store::postgres::test_server::PostgresServer;
use serde_json::{json, Value};

async fn twap_of(server: &TestServer, trader: &Trader) -> Value {
    let (status, body) = server
        .get("/order/twaps", &[("chainId", "1"), ("account", &trader.address)])
        .await;
    assert_eq!(status, 200, "{body}");
    body["twaps"][0].clone()
}

async fn wait_for_slices(server: &TestServer, trader: &Trader, slices: u64, within: Duration) -> Value {
    let started = Instant::now();
    loop {
        let twap = twap_of(server, trader).await;
        if twap["slices"] == slices {
            return twap;
        }
        assert!(started.elapsed() < within, "slice {slices} did not run: {twap}");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn the_node_that_takes_over_runs_the_next_slice_once() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = |node_id| default_node_config(folder.path(), &postgres, node_id);
    let node_a = BinaryServer::start_with(&folder.path().join("node-a"), Some(&config("node-a")));
    let node_b = BinaryServer::start_with(&folder.path().join("node-b"), Some(&config("node-b")));
    let leader = leader_other_than(&node_a.base_url, 1, None, Duration::from_secs(10)).await;
    // The cluster names nodes by their ids.
    let (mut leading, following) = match leader.as_str() {
        "node-a" => (node_a, node_b),
        "node-b" => (node_b, node_a),
        other => panic!("one of the two nodes leads, not {other}"),
    };
    let on_leader = TestServer::at(&leading.base_url);
    let seller = Trader::new(0x5e);
    let buyer = Trader::new(0xb7);
    on_leader.deposit(&seller, "ETH", "5").await;
    on_leader.deposit(&buyer, "USDC", "10000").await;
    on_leader.limit(&seller, "sell", "2000", "2").await;
    let (status, started) = on_leader
        .post_json(
            "/order/addTwap",
            json!({"chainId": "1", "symbol": "ETH/USDC", "direction": "buy", "amount": "1", "durationMs": 300_000,
                   "intervalMs": 30_000, "limitPrice": "2000", "privateKey": buyer.key}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let started_at = started["twap"]["startedAt"].as_u64().unwrap();
    wait_for_slices(&on_leader, &buyer, 1, Duration::from_secs(10)).await;
    leading.kill();

    let follower = TestServer::at(&following.base_url);
    leader_other_than(&following.base_url, 1, Some(&leader), Duration::from_secs(15)).await;
    // The next slice is due 30 s after the start: the node that took over runs it.
    let due_in = Duration::from_millis((started_at + 30_000).saturating_sub(dexd_store::now_ms()));
    let second = wait_for_slices(&follower, &buyer, 2, due_in + Duration::from_secs(10)).await;
    assert_eq!(
        (&second["filled"], &second["status"]),
        (&json!("0.2"), &json!("running"))
    );
    let filled = follower.account_list("/order/filledOrders", &buyer, "orders").await;
    let slices = filled
        .iter()
        .filter(|order| order["twapId"] == second["twapId"])
        .count();
    assert_eq!(slices, 2, "each slice once: {filled:?}");
    assert_eq!(follower.balance(&buyer, "USDC").await["total"], "9600");
}
