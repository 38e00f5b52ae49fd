//! The cluster's own channel, black box: two real `dexd` nodes on a real PostgreSQL sharing a
//! secret (`[cluster] secret_env`), and clients on distinct loopback addresses. A write sent to
//! the follower is forwarded to the leader signed with the client's address, so the leader
//! counts it against the client's own budget, not the follower's; a client that writes the
//! channel's headers itself, with no valid signature, is counted against its own address.

use crate::common;

use std::net::IpAddr;

use common::cluster::{cluster_sections, leader_other_than};
use common::{BinaryServer, Trader};
use dexd_store::postgres::test_server::PostgresServer;
use serde_json::json;

/// A client whose connections come from `address` (any of 127.0.0.0/8 on Linux).
fn client_from(address: &str) -> reqwest::Client {
    reqwest::Client::builder()
        .local_address(address.parse::<IpAddr>().unwrap())
        .build()
        .unwrap()
}

fn deposit(trader: &Trader) -> serde_json::Value {
    json!({"chainId": "1", "from": trader.address, "symbol": "USDC", "quantity": "1", "privateKey": trader.key})
}

#[tokio::test]
async fn a_forwarded_write_counts_against_its_clients_budget_at_the_leader() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let base = dexd_venue::config::DEFAULT_CONFIG_TOML
        .replace("requests_per_second_per_ip = 20000", "requests_per_second_per_ip = 1");
    assert_ne!(base, dexd_venue::config::DEFAULT_CONFIG_TOML);
    let start = |node_id: &str| {
        let config = folder.path().join(format!("{node_id}.toml"));
        std::fs::write(
            &config,
            format!(
                "{base}{}secret_env = \"{}\"\n",
                cluster_sections(&postgres.url(), node_id),
                common::cluster::TEST_CLUSTER_SECRET_VARIABLE
            ),
        )
        .unwrap();
        BinaryServer::start_with(&folder.path().join(node_id), Some(&config))
    };
    let leader = start("node-a");
    let follower = start("node-b");
    assert_eq!(
        leader_other_than(&leader.base_url, 1, None, std::time::Duration::from_secs(10)).await,
        "node-a"
    );

    // 127.0.0.2 spends its budget (one request a second) at the leader.
    let exhausted = client_from("127.0.0.2");
    let mut limited = false;
    for _ in 0..3 {
        let answer = exhausted
            .get(format!("{}/chains", leader.base_url))
            .send()
            .await
            .unwrap();
        limited |= answer.status() == 429;
    }
    assert!(limited, "127.0.0.2 is over its budget at the leader");
    // Its write through the follower reaches the leader as 127.0.0.2's: refused there.
    let forwarded = exhausted
        .post(format!("{}/portfolio/deposit", follower.base_url))
        .json(&deposit(&Trader::new(0x21)))
        .send()
        .await
        .unwrap();
    assert_eq!(forwarded.status(), 429, "counted against the client, not the follower");
    assert_eq!(forwarded.headers()["x-dexd-leader"], "node-a", "the leader's answer");

    // Another client's write through the follower is its own: applied.
    let fresh = client_from("127.0.0.3")
        .post(format!("{}/portfolio/deposit", follower.base_url))
        .json(&deposit(&Trader::new(0x31)))
        .send()
        .await
        .unwrap();
    assert_eq!(fresh.status(), 200);

    // A client that writes the channel's headers itself is counted against its own address.
    let forged = client_from("127.0.0.4")
        .post(format!("{}/portfolio/deposit", leader.base_url))
        .header("X-Dexd-Forwarded", "1")
        .header("X-Dexd-Forwarded-By", "node-b")
        .header("X-Dexd-Client-Ip", "127.0.0.2")
        .header("X-Dexd-Forwarded-At", dexd_store::now_ms().to_string())
        .header("X-Dexd-Cluster-Signature", "00".repeat(32))
        .json(&deposit(&Trader::new(0x41)))
        .send()
        .await
        .unwrap();
    assert_eq!(forged.status(), 200, "not believed to be 127.0.0.2");
}
