//! The venue on a PostgreSQL journal, black box: real `dexd` binaries against a real PostgreSQL
//! (Debian's, in a temporary folder). Every acknowledged change survives SIGKILL and is served
//! again by a node whose own data directory is empty (the journal is the database's, the
//! history is rebuilt from it); a second node follows the journal while the first leads,
//! serving the same state and refusing writes, and takes the chains over after the first dies;
//! a leader stopped (SIGSTOP) past its lease and woken again never appends, and follows.

use crate::common;

use std::time::{Duration, Instant};

use common::cluster::{default_node_config, write_node_config, LEASE_MS};
use common::{observable_state, BinaryServer, TestServer, Trader};
use dexd_store::postgres::test_server::PostgresServer;
use serde_json::json;

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
    let config = default_node_config(folder.path(), &postgres, "node-a");
    let first_data = tempfile::tempdir().unwrap();
    let mut first = BinaryServer::start_with(first_data.path(), Some(&config));
    let accounts = trade_a_little(&TestServer::at(&first.base_url)).await;
    let before = observable_state(&first.base_url, &accounts).await;
    first.kill();

    // A node with an empty data directory: everything comes from the journal in PostgreSQL.
    let second_data = tempfile::tempdir().unwrap();
    let mut second = BinaryServer::start_with(second_data.path(), Some(&config));
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
    assert_eq!(sequences.len(), 8, "the configuration, 3 deposits and 4 placements");
    // Regression: a graceful stop closed the cluster's database connection on the async
    // runtime's thread, and panicked.
    let exit = second.stop_gracefully().await;
    assert!(exit.success(), "dexd stopped with {exit}");
}

/// A deposit of 1 USDC for `trader` answered by the node at `base_url` itself (marked as
/// forwarded already, so that it is not passed on to the leader): its status and body.
async fn try_deposit(base_url: &str, trader: &Trader) -> (u16, serde_json::Value) {
    let answer = reqwest::Client::new()
        .post(format!("{base_url}/portfolio/deposit"))
        .header("X-Dexd-Forwarded", "1")
        .json(&json!({"chainId": "1", "from": trader.address, "symbol": "USDC", "quantity": "1", "privateKey": trader.key}))
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    (status, answer.json().await.unwrap())
}

/// Waits until the node at `base_url` shows `expected` for `accounts` (a follower's lag).
async fn wait_for_state(base_url: &str, accounts: &[String], expected: &serde_json::Value) {
    let started = Instant::now();
    loop {
        let state = observable_state(base_url, accounts).await;
        if &state == expected {
            return;
        }
        assert!(
            started.elapsed() < Duration::from_secs(10),
            "{base_url} never showed the state: {state}"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test]
async fn a_follower_serves_the_leaders_state_and_takes_the_chains_over_when_it_dies() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let mut leader = BinaryServer::start_with(
        data_a.path(),
        Some(&default_node_config(folder.path(), &postgres, "node-a")),
    );
    let follower = BinaryServer::start_with(
        data_b.path(),
        Some(&default_node_config(folder.path(), &postgres, "node-b")),
    );
    let accounts = trade_a_little(&TestServer::at(&leader.base_url)).await;
    let before = observable_state(&leader.base_url, &accounts).await;
    // The follower serves what the leader acknowledged, and refuses writes: it does not lead.
    wait_for_state(&follower.base_url, &accounts, &before).await;
    let cluster = TestServer::at(&follower.base_url).get("/cluster", &[]).await.1;
    assert_eq!(cluster["node"], "node-b", "{cluster}");
    let alive: Vec<(&str, bool)> = cluster["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| (node["id"].as_str().unwrap(), node["alive"].as_bool().unwrap()))
        .collect();
    assert_eq!(alive, vec![("node-a", true), ("node-b", true)]);
    let chain_one = &cluster["chains"][0];
    assert_eq!(
        (chain_one["chainId"].as_str(), chain_one["leader"].as_str()),
        (Some("1"), Some("node-a"))
    );
    // The configuration, then the six commands.
    assert_eq!(chain_one["sequence"], 7, "{cluster}");
    assert_eq!(chain_one["appliedSequence"], 7, "{cluster}");
    // A write sent to the follower is forwarded to the leader and answered as if local.
    let dave = Trader::new(0xd0);
    let deposit = |trader: &Trader| json!({"chainId": "1", "from": trader.address, "symbol": "USDC", "quantity": "1", "privateKey": trader.key});
    let http = reqwest::Client::new();
    let forwarded = http
        .post(format!("{}/portfolio/deposit", follower.base_url))
        .json(&deposit(&dave))
        .send()
        .await
        .unwrap();
    assert_eq!(forwarded.status(), 200);
    assert_eq!(forwarded.headers()["x-dexd-leader"], "node-a");
    assert_eq!(
        forwarded.headers()["x-dexd-sequence"],
        "8",
        "the change's journal position (after the configuration and six commands)"
    );
    assert_eq!(
        TestServer::at(&leader.base_url).balance(&dave, "USDC").await["total"],
        "1"
    );
    // A request already forwarded once is never forwarded again: the follower refuses it.
    let twice = http
        .post(format!("{}/portfolio/deposit", follower.base_url))
        .header("X-Dexd-Forwarded", "1")
        .json(&deposit(&dave))
        .send()
        .await
        .unwrap();
    assert_eq!(twice.status(), 503);
    // Reading one's own writes from a follower: a read that names the position waits for it.
    // Positions: the configuration and six commands (7), then dave's forwarded deposit 8, then
    // erin's 9.
    let erin = Trader::new(0xe0);
    TestServer::at(&leader.base_url).deposit(&erin, "USDC", "7").await;
    let read = http
        .get(format!("{}/account/assetBalances", follower.base_url))
        .query(&[("chainId", "1"), ("account", erin.address.as_str())])
        .header("X-Dexd-Min-Sequence", "9")
        .send()
        .await
        .unwrap();
    assert_eq!(read.headers()["x-dexd-node"], "node-b");
    let balances: serde_json::Value = read.json().await.unwrap();
    assert_eq!(common::balance_in(&balances, "USDC")["total"], "7", "{balances}");
    let malformed = http
        .get(format!("{}/account/assetBalances", follower.base_url))
        .query(&[("chainId", "1"), ("account", erin.address.as_str())])
        .header("X-Dexd-Min-Sequence", "seven")
        .send()
        .await
        .unwrap();
    assert_eq!(malformed.status(), 400);
    // A position the shared journal never reached is refused at once, not waited for.
    let never = common::cluster::balances_at(&follower.base_url, &erin.address, "1000").await;
    assert!(
        never["error"]["message"]
            .as_str()
            .unwrap()
            .contains("ends at position 9"),
        "{never}"
    );
    // A flood of such reads costs a directory read at a time, not one each (each took a
    // blocking thread and the directory's one connection, and held up leader lookups and the
    // forwarding of writes).
    let directory_reads = |metrics: String| -> u64 {
        metrics
            .lines()
            .find_map(|line| line.strip_prefix("dexd_cluster_directory_reads_total "))
            .unwrap()
            .parse()
            .unwrap()
    };
    let reads_before = directory_reads(TestServer::at(&follower.base_url).get_text("/metrics").await);
    let flood: Vec<_> = (0..200)
        .map(|_| common::cluster::balances_at(&follower.base_url, &erin.address, "1000"))
        .collect();
    let forwarded_during = http
        .post(format!("{}/portfolio/deposit", follower.base_url))
        .json(&deposit(&erin))
        .send();
    let (answers, forwarded_during) = tokio::join!(futures_util::future::join_all(flood), forwarded_during);
    assert!(answers.iter().all(|answer| answer["error"]["code"] == "UNAVAILABLE"));
    assert_eq!(
        forwarded_during.unwrap().status(),
        200,
        "writes are forwarded meanwhile"
    );
    let during = directory_reads(TestServer::at(&follower.base_url).get_text("/metrics").await) - reads_before;
    assert!(
        during <= 40,
        "{during} directory reads for 200 reads waiting for a position"
    );
    leader.kill();
    let killed_at = Instant::now();
    loop {
        // Marked as forwarded, so that the follower answers it itself rather than trying the
        // dead leader: 503 until it leads.
        let (status, body) = try_deposit(&follower.base_url, &dave).await;
        if status == 200 {
            break;
        }
        assert_eq!(status, 503, "{body}");
        assert!(
            killed_at.elapsed() < Duration::from_millis(LEASE_MS) + Duration::from_secs(5),
            "the follower did not take the chain over"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    assert_eq!(observable_state(&follower.base_url, &accounts).await, before);
    assert_eq!(
        TestServer::at(&follower.base_url).balance(&dave, "USDC").await["total"],
        "2"
    );
}

#[tokio::test]
async fn a_leader_stopped_past_its_lease_never_appends_again_and_follows() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let old = BinaryServer::start_with(
        data_a.path(),
        Some(&default_node_config(folder.path(), &postgres, "node-a")),
    );
    let new = BinaryServer::start_with(
        data_b.path(),
        Some(&default_node_config(folder.path(), &postgres, "node-b")),
    );
    let mut accounts = trade_a_little(&TestServer::at(&old.base_url)).await;
    let pid = old.child.id().to_string();
    let signal = |name: &str| {
        assert!(std::process::Command::new("kill")
            .args([name, &pid])
            .status()
            .unwrap()
            .success())
    };
    signal("-STOP");
    let frank = Trader::new(0xf0);
    let started = Instant::now();
    while try_deposit(&new.base_url, &frank).await.0 != 200 {
        assert!(started.elapsed() < Duration::from_secs(10), "the new node never led");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    signal("-CONT");

    // The old leader wakes believing nothing changed: its own write (marked as forwarded, so
    // that it cannot pass it on to the new leader) is refused, not acknowledged.
    let erin = Trader::new(0xe0);
    let answer = reqwest::Client::new()
        .post(format!("{}/portfolio/deposit", old.base_url))
        .header("X-Dexd-Forwarded", "1")
        .json(&json!({"chainId": "1", "from": erin.address, "symbol": "USDC", "quantity": "1", "privateKey": erin.key}))
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 503, "a stale leader acknowledged a write");
    assert_eq!(TestServer::at(&new.base_url).balance(&erin, "USDC").await["total"], "0");
    // It follows the new leader from then on, and shows what the new leader acknowledged.
    accounts.push(frank.address.clone());
    let now = observable_state(&new.base_url, &accounts).await;
    wait_for_state(&old.base_url, &accounts, &now).await;
}

#[tokio::test]
async fn a_node_on_the_embedded_journal_is_a_cluster_of_one() {
    let server = TestServer::start().await;
    let (status, cluster) = server.get("/cluster", &[]).await;
    assert_eq!(status, 200, "{cluster}");
    assert_eq!(cluster["node"], "dexd");
    assert_eq!(cluster["nodes"].as_array().unwrap().len(), 1);
    let chains = cluster["chains"].as_array().unwrap();
    assert_eq!(chains.len(), 3);
    assert!(chains
        .iter()
        .all(|chain| chain["leader"] == "dexd" && chain["epoch"] == 0));
    // A write's answer carries its change's journal position; a refused one carries none.
    let alice = Trader::new(0xa1);
    let deposit = |quantity: &str| json!({"chainId": "1", "from": alice.address, "symbol": "USDC", "quantity": quantity, "privateKey": alice.key});
    let http = reqwest::Client::new();
    // Position 1 is the chain's configuration.
    for (quantity, position) in [("1", Some("2")), ("2", Some("3")), ("-3", None)] {
        let answer = http
            .post(format!("{}/portfolio/deposit", server.base_url))
            .json(&deposit(quantity))
            .send()
            .await
            .unwrap();
        let header = answer
            .headers()
            .get("x-dexd-sequence")
            .map(|value| value.to_str().unwrap().to_string());
        assert_eq!(header.as_deref(), position, "deposit of {quantity}");
    }
}

/// A book subscription on a follower sees every change the leader journals, in the journal's
/// numbering, without a gap, and ends on the leader's own REST book at the same position.
#[tokio::test]
async fn a_followers_book_stream_is_gapless_and_ends_on_the_leaders_rest_book() {
    use common::stream_client::{ClientBook, StreamClient};
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let leader = BinaryServer::start_with(
        data_a.path(),
        Some(&default_node_config(folder.path(), &postgres, "node-a")),
    );
    let follower = BinaryServer::start_with(
        data_b.path(),
        Some(&default_node_config(folder.path(), &postgres, "node-b")),
    );
    let on_leader = TestServer::at(&leader.base_url);
    let traders = [Trader::new(0x31), Trader::new(0x32)];
    for trader in &traders {
        on_leader.deposit(trader, "USDC", "1000000").await;
        on_leader.deposit(trader, "ETH", "1000").await;
    }
    let mut stream = StreamClient::connect(&follower.base_url).await;
    stream
        .send(json!({"op": "subscribe", "id": "b", "channel": "book", "chainId": "1", "pair": "ETH/USDC", "depth": 25}))
        .await;
    let mut book = ClientBook {
        depth: 25,
        ..ClientBook::default()
    };
    // Crossing and resting orders from both sides, so that levels appear, fill and vanish.
    for index in 0..40u32 {
        let direction = if index % 2 == 0 { "buy" } else { "sell" };
        let price = format!("{}", 1_990 + (index * 7) % 21);
        on_leader
            .limit(&traders[(index % 2) as usize], direction, &price, "0.1")
            .await;
    }
    let mut snapshots = 0;
    while let Some(message) = stream.next_within(Duration::from_millis(1_500)).await {
        match message["event"].as_str() {
            Some("subscribed") => {}
            Some("snapshot") => {
                snapshots += 1;
                book.apply(&message);
            }
            Some("update") => book.apply(&message),
            _ => panic!("unexpected message {message}"),
        }
    }
    assert_eq!(snapshots, 1, "one snapshot, then updates only");
    assert!(book.updates > 0, "the follower streamed the leader's changes");
    let level = |level: &serde_json::Value| {
        (
            level["price"].as_str().unwrap().to_string(),
            level["amount"].as_str().unwrap().to_string(),
            level["orders"].as_u64().unwrap(),
        )
    };
    let mut rest = Vec::new();
    for path in ["/order/buyOrderbooks", "/order/sellOrderbooks"] {
        let (status, body) = on_leader
            .get(path, &[("chainId", "1"), ("pair", "ETH/USDC"), ("depth", "25")])
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(
            body["sequence"].as_u64(),
            Some(book.sequence),
            "the same journal position"
        );
        rest.push(body["levels"].as_array().unwrap().iter().map(level).collect::<Vec<_>>());
    }
    let (bids, asks) = book.levels();
    assert_eq!((bids, asks), (rest[0].clone(), rest[1].clone()));
}

/// PostgreSQL's primary stops at once (`-m immediate`) under a stream of writes, and its
/// synchronous standby is promoted: the nodes, on a URL naming both hosts, find the new
/// primary; every change they acknowledged is there, on both nodes; and writes go on.
#[tokio::test]
async fn no_acknowledged_change_is_lost_when_the_primary_stops_and_the_standby_is_promoted() {
    let mut primary = PostgresServer::start_primary();
    let standby = PostgresServer::start_standby_of(&primary);
    let url = format!(
        "postgresql://dexd@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        primary.port, standby.port
    );
    let folder = tempfile::tempdir().unwrap();
    let (data_a, data_b) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
    let config = |node_id| write_node_config(folder.path(), dexd_venue::config::DEFAULT_CONFIG_TOML, &url, node_id);
    let node_a = BinaryServer::start_with(data_a.path(), Some(&config("node-a")));
    let node_b = BinaryServer::start_with(data_b.path(), Some(&config("node-b")));
    let carol = Trader::new(0xc1);
    // Deposits of 1 USDC, one after the other, through node-a (which forwards them if node-b
    // comes to lead): how many were acknowledged, and how many were sent.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let (stop, base_url, carol) = (stop.clone(), node_a.base_url.clone(), Trader::new(0xc1));
        tokio::spawn(async move {
            let http = reqwest::Client::new();
            let (mut acknowledged, mut sent) = (0u64, 0u64);
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                sent += 1;
                let answer = http
                    .post(format!("{base_url}/portfolio/deposit"))
                    .json(&json!({"chainId": "1", "from": carol.address, "symbol": "USDC", "quantity": "1", "privateKey": carol.key}))
                    .send()
                    .await
                    .unwrap();
                match answer.status().as_u16() {
                    200 => acknowledged += 1,
                    503 => tokio::time::sleep(Duration::from_millis(20)).await,
                    other => panic!("{other}: {}", answer.text().await.unwrap()),
                }
            }
            (acknowledged, sent)
        })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    primary.stop_immediately();
    tokio::time::sleep(Duration::from_millis(500)).await;
    // `pg_promote` through psql blocks: off the test's runtime.
    let standby = tokio::task::spawn_blocking(move || {
        standby.promote();
        standby
    })
    .await
    .unwrap();
    // Writes are acknowledged again on the new primary.
    let total = |base_url: String| {
        let carol = Trader::new(0xc1);
        async move {
            let total = TestServer::at(&base_url).balance(&carol, "USDC").await["total"].clone();
            total.as_str().unwrap().parse::<u64>().unwrap()
        }
    };
    let promoted_at = Instant::now();
    let at_promotion = total(node_a.base_url.clone()).await;
    while total(node_a.base_url.clone()).await < at_promotion + 5 {
        assert!(
            promoted_at.elapsed() < Duration::from_secs(20),
            "no write acknowledged after the promotion: {}",
            standby.log()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let (acknowledged, sent) = writer.await.unwrap();
    // A write answered 503 as the primary died may have committed (its answer was lost): it is
    // then in the journal, and counted; none acknowledged is missing.
    let on_a = total(node_a.base_url.clone()).await;
    assert!(
        (acknowledged..=sent).contains(&on_a),
        "{acknowledged} acknowledged, {sent} sent, {on_a} journaled"
    );
    let expected = observable_state(&node_a.base_url, std::slice::from_ref(&carol.address)).await;
    wait_for_state(&node_b.base_url, std::slice::from_ref(&carol.address), &expected).await;
    // The journal is the promoted standby's, gapless.
    let rows = standby.sql("SELECT count(*) || ' ' || max(sequence) FROM dexd_journal WHERE chain_id = 1");
    let (count, last) = rows.split_once(' ').unwrap();
    assert_eq!(count, last, "gapless: {rows}");
    assert_eq!(
        count.parse::<u64>().unwrap(),
        on_a + 1,
        "the configuration, then one journaled command per deposit"
    );
}

/// A node's snapshots are shared in PostgreSQL: a node whose own are gone (its history kept)
/// starts from the newest one there, and serves the same state.
#[tokio::test]
async fn a_node_without_its_snapshots_starts_from_one_shared_in_postgresql() {
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let base = format!(
        "{}\n[snapshots]\nevery_commands = 5\ncheck_interval_ms = 5\n",
        dexd_venue::config::DEFAULT_CONFIG_TOML
    );
    let config = write_node_config(folder.path(), &base, &postgres.url(), "node-a");
    let data = folder.path().join("node-a");
    let mut node = BinaryServer::start_with(&data, Some(&config));
    let accounts = trade_a_little(&TestServer::at(&node.base_url)).await;
    let carol = Trader::new(0xc0);
    for _ in 0..4 {
        TestServer::at(&node.base_url).deposit(&carol, "USDC", "1").await;
    }
    let started = Instant::now();
    let shared = loop {
        let shared = postgres.sql("SELECT coalesce(max(sequence), 0) FROM dexd_snapshots WHERE chain_id = 1");
        if shared != "0" {
            break shared;
        }
        assert!(started.elapsed() < Duration::from_secs(20), "no snapshot shared");
        tokio::time::sleep(Duration::from_millis(50)).await;
    };
    let before = observable_state(&node.base_url, &accounts).await;
    node.kill();
    std::fs::remove_dir_all(dexd_store::snapshots::snapshot_directory(&data, 1)).unwrap();

    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let node = BinaryServer::start_logging(&data, Some(&config), "info", Some(log.clone()));
    assert_eq!(observable_state(&node.base_url, &accounts).await, before);
    let said = log.lock().unwrap().clone();
    assert!(said.contains("a newer snapshot taken from PostgreSQL"), "{said}");
    assert!(
        said.lines()
            .any(|line| line.contains("chain state restored from a snapshot") && line.contains("chain_id=1")),
        "{said}"
    );
    let restored: u64 = shared.parse().unwrap();
    assert!(restored >= 5, "{restored}");
}
