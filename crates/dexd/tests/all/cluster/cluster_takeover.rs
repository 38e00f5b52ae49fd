//! A leader SIGKILLed under load, black box: two real `dexd` nodes on a real PostgreSQL, and
//! clients depositing into a fresh account each, to both nodes, without pause. The other node
//! leads within 5 s of the lease's end, and afterwards every acknowledged deposit is there
//! exactly once (its account holds 1, never 2) on both nodes, the killed one restarted; a
//! deposit whose answer was lost with the leader is there at most once.

use crate::common;

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::cluster::{default_node_config, LEASE_MS};
use common::{BinaryServer, TestServer, Trader};
use dexd_store::postgres::test_server::PostgresServer;
use serde_json::json;

/// What the clients learnt of their deposits, by trader number: acknowledged, or not (refused
/// while no node led, or of unknown outcome: the answer was lost with the leader, or the leader
/// did not answer a forward).
#[derive(Default)]
struct Outcomes {
    acknowledged: BTreeSet<u64>,
    unknown: BTreeSet<u64>,
}

#[tokio::test]
async fn every_acknowledged_change_is_there_exactly_once_after_the_leader_dies_under_load() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = |node_id| default_node_config(folder.path(), &postgres, node_id);
    let (config_a, config_b) = (config("node-a"), config("node-b"));
    let (data_a, data_b) = (folder.path().join("node-a"), folder.path().join("node-b"));
    let mut node_a = BinaryServer::start_with(&data_a, Some(&config_a));
    let node_b = BinaryServer::start_with(&data_b, Some(&config_b));
    let urls = [node_a.base_url.clone(), node_b.base_url.clone()];

    let stop = Arc::new(AtomicBool::new(false));
    let next_trader = Arc::new(AtomicU64::new(0));
    let outcomes = Arc::new(parking_lot::Mutex::new(Outcomes::default()));
    let mut clients = Vec::new();
    for client in 0..4 {
        let (stop, next_trader, outcomes, urls) = (stop.clone(), next_trader.clone(), outcomes.clone(), urls.clone());
        clients.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            while !stop.load(Ordering::Relaxed) {
                let number = next_trader.fetch_add(1, Ordering::Relaxed);
                let trader = Trader::numbered(number);
                let sent = http
                    .post(format!("{}/portfolio/deposit", urls[client % 2]))
                    .json(&json!({"chainId": "1", "from": trader.address, "symbol": "USDC", "quantity": "1", "privateKey": trader.key}))
                    .timeout(Duration::from_secs(15))
                    .send()
                    .await;
                let status = match sent {
                    Ok(answer) => answer.status().as_u16(),
                    Err(_) => 0,
                };
                match status {
                    200 => {
                        outcomes.lock().acknowledged.insert(number);
                    }
                    // Refused at the node (no leader yet): nothing applied, unless a forward
                    // went unanswered, whose outcome is unknown, as is a lost answer.
                    _ => {
                        outcomes.lock().unknown.insert(number);
                        tokio::time::sleep(Duration::from_millis(20)).await;
                    }
                }
            }
        }));
    }
    tokio::time::sleep(Duration::from_secs(1)).await;
    let before_kill = outcomes.lock().acknowledged.len();
    assert!(before_kill > 10, "load before the kill: {before_kill}");
    node_a.kill();
    let killed_at = Instant::now();
    // node-b leads once a deposit sent to it is acknowledged after the kill.
    let acknowledged_at_kill = outcomes.lock().acknowledged.len();
    loop {
        if outcomes.lock().acknowledged.len() > acknowledged_at_kill + 20 {
            break;
        }
        assert!(
            killed_at.elapsed() < Duration::from_millis(LEASE_MS) + Duration::from_secs(5),
            "node-b did not lead within the lease and 5 s"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    stop.store(true, Ordering::Relaxed);
    for client in clients {
        client.await.unwrap();
    }
    let node_a = BinaryServer::start_with(&data_a, Some(&config_a));
    let outcomes = std::mem::take(&mut *outcomes.lock());
    let sent = next_trader.load(Ordering::Relaxed);
    for base_url in [&node_b.base_url, &node_a.base_url] {
        let server = TestServer::at(base_url);
        // The restarted node follows: wait until it has node-b's journal.
        let position = TestServer::at(&node_b.base_url).get("/cluster", &[]).await.1["chains"][0]["sequence"]
            .as_u64()
            .unwrap();
        let started = Instant::now();
        while TestServer::at(base_url).get("/cluster", &[]).await.1["chains"][0]["appliedSequence"]
            .as_u64()
            .unwrap()
            < position
        {
            assert!(
                started.elapsed() < Duration::from_secs(10),
                "{base_url} did not catch up"
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
        let mut applied = 0;
        for number in 0..sent {
            let total = server.balance(&Trader::numbered(number), "USDC").await["total"].clone();
            if outcomes.acknowledged.contains(&number) {
                assert_eq!(total, "1", "{base_url}: acknowledged deposit {number} exactly once");
            } else {
                assert!(
                    total == "0" || total == "1",
                    "{base_url}: deposit {number} at most once: {total}"
                );
            }
            applied += u64::from(total == "1");
        }
        // The journal opens with the chain's configuration, journaled once.
        assert_eq!(
            position,
            applied + 1,
            "{base_url}: the configuration, then one journaled command per applied deposit, no other"
        );
    }
    assert!(outcomes.acknowledged.len() > before_kill + 20);
}
