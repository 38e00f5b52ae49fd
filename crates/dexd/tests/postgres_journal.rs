//! The venue on a PostgreSQL journal, black box: real `dexd` binaries against a real PostgreSQL
//! (Debian's, in a temporary folder). Every acknowledged change survives SIGKILL and is served
//! again by a node whose own data directory is empty (the journal is the database's, the
//! history is rebuilt from it); a second node waits for the chains' leases while the first
//! leads, takes them over after the first dies, and serves the same state; a leader stopped
//! (SIGSTOP) past its lease and woken again can never append.

mod common;

use std::time::{Duration, Instant};

use common::{observable_state, BinaryServer, TestServer, Trader};
use dexd_store::postgres::test_server::PostgresServer;
use serde_json::json;

/// How long a node's lease of a chain lasts in these tests.
const LEASE_MS: u64 = 1_000;

fn postgres_config(folder: &std::path::Path, postgres: &PostgresServer, node_id: &str) -> std::path::PathBuf {
    let path = folder.join(format!("dexd-{node_id}.toml"));
    std::fs::write(
        &path,
        format!(
            "{}\n[store]\njournal = \"postgres\"\npostgres_url = \"{}\"\n\n[cluster]\nnode_id = \"{node_id}\"\nlease_ms = {LEASE_MS}\n",
            dexd::config::DEFAULT_CONFIG_TOML,
            postgres.url()
        ),
    )
    .unwrap();
    path
}

/// Trades and transfers of two accounts, each acknowledged: the state to find again.
async fn trade_a_little(server: &TestServer) -> Vec<String> {
    let (alice, bob) = common::alice_with_dollars_and_bob_offering(server).await;
    server.limit(&alice, "buy", "2100", "0.5").await;
    server.limit(&alice, "buy", "2000", "0.25").await;
    server.limit(&bob, "sell", "2200", "1").await;
    vec![alice.address, bob.address]
}

#[tokio::test]
async fn every_acknowledged_change_is_in_postgresql_and_survives_sigkill() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let config = postgres_config(folder.path(), &postgres, "node-a");
    let first_data = tempfile::tempdir().unwrap();
    let mut first = BinaryServer::start_with(first_data.path(), Some(&config));
    let accounts = trade_a_little(&TestServer::at(&first.base_url)).await;
    let before = observable_state(&first.base_url, &accounts).await;
    first.kill();

    // A node with an empty data directory: everything comes from the journal in PostgreSQL.
    let second_data = tempfile::tempdir().unwrap();
    let second = BinaryServer::start_with(second_data.path(), Some(&config));
    assert_eq!(observable_state(&second.base_url, &accounts).await, before);
    // And it goes on from there: the next change follows the journal's last one.
    let carol = Trader::new(0xc0);
    TestServer::at(&second.base_url).deposit(&carol, "USDC", "10").await;
    let url = postgres.url();
    // The synchronous client runs on a thread of its own, outside the test's runtime.
    let sequences: Vec<i64> = std::thread::spawn(move || {
        let mut client = dexd_store::postgres::connect(&url).unwrap();
        let rows = client
            .query(
                "SELECT sequence FROM dexd_journal WHERE chain_id = 1 ORDER BY sequence",
                &[],
            )
            .unwrap();
        rows.iter().map(|row| row.get(0)).collect()
    })
    .join()
    .unwrap();
    assert_eq!(sequences, (1..=sequences.len() as i64).collect::<Vec<_>>(), "gapless");
    assert_eq!(sequences.len(), 7, "3 deposits and 4 placements");
}

#[tokio::test]
async fn a_waiting_node_takes_the_chains_over_when_the_leader_dies() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut leader = BinaryServer::start_with(
        data_a.path(),
        Some(&postgres_config(folder.path(), &postgres, "node-a")),
    );
    let standby = BinaryServer::start_listening(
        data_b.path(),
        Some(&postgres_config(folder.path(), &postgres, "node-b")),
        None,
    );
    let http = reqwest::Client::new();
    let accounts = trade_a_little(&TestServer::at(&leader.base_url)).await;
    let before = observable_state(&leader.base_url, &accounts).await;
    // While the leader lives, the other node waits for the leases and is not ready.
    tokio::time::sleep(Duration::from_millis(3 * LEASE_MS)).await;
    let ready = http.get(format!("{}/ready", standby.base_url)).send().await.unwrap();
    assert_eq!(ready.status(), 503, "a node without its chains' leases is not ready");

    leader.kill();
    let killed_at = Instant::now();
    common::wait_until_ready(&http, &standby.base_url).await;
    let takeover = killed_at.elapsed();
    assert!(
        takeover < Duration::from_millis(LEASE_MS) + Duration::from_secs(5),
        "took the chains over {takeover:?} after the leader died"
    );
    assert_eq!(observable_state(&standby.base_url, &accounts).await, before);
    let dave = Trader::new(0xd0);
    TestServer::at(&standby.base_url).deposit(&dave, "USDC", "1").await;
}

#[tokio::test]
async fn a_leader_stopped_past_its_lease_never_appends_again() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let old = BinaryServer::start_with(
        data_a.path(),
        Some(&postgres_config(folder.path(), &postgres, "node-a")),
    );
    let new = BinaryServer::start_listening(
        data_b.path(),
        Some(&postgres_config(folder.path(), &postgres, "node-b")),
        None,
    );
    let accounts = trade_a_little(&TestServer::at(&old.base_url)).await;
    let pid = old.child.id().to_string();
    let signal = |name: &str| {
        assert!(std::process::Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap()
            .success())
    };
    signal("-STOP");
    let http = reqwest::Client::new();
    common::wait_until_ready(&http, &new.base_url).await;
    let before = observable_state(&new.base_url, &accounts).await;
    signal("-CONT");

    // The old leader wakes believing nothing changed: its write is refused, not acknowledged.
    let erin = Trader::new(0xe0);
    let (status, body) = TestServer::at(&old.base_url)
        .post_json(
            "/portfolio/deposit",
            json!({"chainId": "1", "from": erin.address, "symbol": "USDC", "quantity": "5", "privateKey": erin.key}),
        )
        .await;
    assert_ne!(status, 200, "a stale leader acknowledged a write: {body}");
    // Nothing of it reached the journal: the new leader's state is unchanged, and its own
    // writes go on.
    assert_eq!(observable_state(&new.base_url, &accounts).await, before);
    let erin_balances = TestServer::at(&new.base_url).balance(&erin, "USDC").await;
    assert_eq!(erin_balances["total"], "0", "the stale leader's deposit is nowhere");
    TestServer::at(&new.base_url).deposit(&erin, "USDC", "5").await;
    assert_eq!(TestServer::at(&new.base_url).balance(&erin, "USDC").await["total"], "5");
}
