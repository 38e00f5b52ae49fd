//! What a cluster costs, on real binaries and a real PostgreSQL (Debian's, started here in a
//! temporary folder): placements per second sent through a follower (which forwards each to the
//! leader) against sent straight to the leader, by the same closed-loop clients in the same run;
//! the time from SIGKILL of a chain's leader until the other node acknowledges a write; and how
//! the journal table grows (bytes per command).
//!
//! `cargo bench -p dexd --bench cluster`; `DEXD_BENCH_SECONDS` (per placement run, default 10),
//! `DEXD_BENCH_CLIENTS` (default 64), `DEXD_BENCH_TAKEOVERS` (default 5) and
//! `DEXD_BENCH_LEASE_MS` (default 3000, the configuration's default).

#[path = "common/nodes.rs"]
mod nodes;

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dexd_store::postgres::test_server::PostgresServer;
use nodes::{setting, start_node, trader_address, trader_key, Node};
use serde_json::{json, Value};

/// Placements acknowledged per second by `clients` closed-loop clients sending to `base_url`
/// for `seconds`.
async fn placements_per_second(http: &reqwest::Client, base_url: &str, clients: usize, seconds: u64) -> f64 {
    let acknowledged = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let mut tasks = Vec::new();
    for client in 0..clients {
        let (http, base_url, acknowledged) = (http.clone(), base_url.to_string(), Arc::clone(&acknowledged));
        tasks.push(tokio::spawn(async move {
            let key = trader_key(client);
            let mut count = 0u64;
            while started.elapsed() < Duration::from_secs(seconds) {
                count += 1;
                // Buys well under the sells: the book grows, nothing trades.
                let (direction, price) = if count.is_multiple_of(2) {
                    ("buy", 1_000 + count % 100)
                } else {
                    ("sell", 3_000 + count % 100)
                };
                let answer = http
                    .post(format!("{base_url}/order/addOrder"))
                    .json(
                        &json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": direction,
                        "price": price.to_string(), "amount": "0.01", "privateKey": key}),
                    )
                    .send()
                    .await
                    .unwrap();
                if answer.status() == 200 {
                    acknowledged.fetch_add(1, Ordering::Relaxed);
                }
                let _ = answer.bytes().await;
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    acknowledged.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// The node that leads chain 1, as `base_url` sees it.
async fn leader_of_chain_one(http: &reqwest::Client, base_url: &str) -> Option<String> {
    let cluster: Value = http
        .get(format!("{base_url}/cluster"))
        .send()
        .await
        .ok()?
        .json()
        .await
        .ok()?;
    cluster["chains"]
        .as_array()?
        .iter()
        .find(|chain| chain["chainId"] == "1")?["leader"]
        .as_str()
        .map(str::to_string)
}

fn main() {
    let seconds = setting("DEXD_BENCH_SECONDS", 10);
    let clients = setting("DEXD_BENCH_CLIENTS", 64) as usize;
    let takeovers = setting("DEXD_BENCH_TAKEOVERS", 5);
    let lease_ms = setting("DEXD_BENCH_LEASE_MS", 3_000);
    let postgres = PostgresServer::start();
    let url = postgres.url();
    let folder = tempfile::tempdir().unwrap();
    let ids = ["node-a", "node-b"];
    let mut nodes: Vec<Node> = Vec::new();
    for id in ids {
        nodes.push(start_node(folder.path(), &url, id, lease_ms));
        // The second node starts once the first holds the leases.
        std::thread::sleep(Duration::from_millis(500));
    }
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    let http = reqwest::Client::new();
    runtime.block_on(async {
        let leader = leader_of_chain_one(&http, &nodes[0].base_url).await.unwrap();
        assert_eq!(leader, "node-a");
        for client in 0..clients {
            let key = trader_key(client);
            for (symbol, quantity) in [("USDC", "100000000"), ("ETH", "100000")] {
                let answer = http
                    .post(format!("{}/portfolio/deposit", nodes[0].base_url))
                    .json(&json!({"chainId": "1", "from": trader_address(&key), "symbol": symbol, "quantity": quantity, "privateKey": key}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(answer.status(), 200);
            }
        }
        // Leader, follower, leader, follower: drift over the run falls on both alike.
        let mut rates = [Vec::new(), Vec::new()];
        for round in 0..4 {
            let target = round % 2;
            rates[target].push(placements_per_second(&http, &nodes[target].base_url, clients, seconds).await);
        }
        let mean = |rates: &[f64]| rates.iter().sum::<f64>() / rates.len() as f64;
        println!("placements, {clients} closed-loop clients, {seconds} s per run, two runs each:");
        println!("  straight to the leader:  {:>8.0}/s  ({:.0}, {:.0})", mean(&rates[0]), rates[0][0], rates[0][1]);
        println!("  through the follower:    {:>8.0}/s  ({:.0}, {:.0})", mean(&rates[1]), rates[1][0], rates[1][1]);
        println!("  follower / leader:       {:>8.1} %", 100.0 * mean(&rates[1]) / mean(&rates[0]));
    });

    // The journal table, with every placement of the runs above in it.
    let (total_bytes, table_bytes, commands, command_bytes): (i64, i64, i64, f64) = std::thread::spawn({
        let url = url.clone();
        move || {
            let mut client = dexd_store::postgres::connect(&url).unwrap();
            let row = client
                .query_one(
                    "SELECT pg_total_relation_size('dexd_journal'), pg_relation_size('dexd_journal'), count(*),
                         COALESCE(avg(octet_length(command) + COALESCE(octet_length(authorization_record), 0)), 0)::float8
                     FROM dexd_journal",
                    &[],
                )
                .unwrap();
            (row.get(0), row.get(1), row.get(2), row.get(3))
        }
    })
    .join()
    .unwrap();
    println!(
        "journal table: {commands} commands, {} bytes with its index ({:.0} per command), {} bytes of rows ({:.0} per command), {:.0} bytes of command and authorization per command",
        total_bytes,
        total_bytes as f64 / commands as f64,
        table_bytes,
        table_bytes as f64 / commands as f64,
        command_bytes
    );

    // Takeovers: SIGKILL the leader of chain 1; the other node must take it over.
    let mut times_ms = Vec::new();
    for _ in 0..takeovers {
        let leader = runtime
            .block_on(leader_of_chain_one(&http, &nodes[0].base_url))
            .expect("chain 1 has a leader");
        let dead = ids.iter().position(|id| *id == leader).unwrap();
        let survivor = 1 - dead;
        let killed_at = Instant::now();
        nodes[dead].kill();
        let taken_after = runtime.block_on(async {
            let key = trader_key(0);
            loop {
                // Marked as forwarded: the survivor answers it itself, 503 until it leads.
                let answer = http
                    .post(format!("{}/portfolio/deposit", nodes[survivor].base_url))
                    .header("X-Dexd-Forwarded", "1")
                    .json(&json!({"chainId": "1", "from": trader_address(&key), "symbol": "USDC", "quantity": "1", "privateKey": key}))
                    .send()
                    .await
                    .unwrap();
                if answer.status() == 200 {
                    return killed_at.elapsed();
                }
                assert!(killed_at.elapsed() < Duration::from_secs(60), "no takeover");
                tokio::time::sleep(Duration::from_millis(10)).await;
            }
        });
        times_ms.push(taken_after.as_secs_f64() * 1_000.0);
        nodes[dead] = start_node(folder.path(), &url, ids[dead], lease_ms);
        std::thread::sleep(Duration::from_millis(500));
    }
    times_ms.sort_by(f64::total_cmp);
    if times_ms.is_empty() {
        return;
    }
    println!(
        "takeover after SIGKILL of the leader (lease {lease_ms} ms), {} times: min {:.0} ms, median {:.0} ms, max {:.0} ms",
        times_ms.len(),
        times_ms[0],
        times_ms[times_ms.len() / 2],
        times_ms[times_ms.len() - 1]
    );
}
