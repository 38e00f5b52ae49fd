//! How far a follower runs behind its chain's leader on the PostgreSQL journal: two real `dexd`
//! binaries (a leader and a follower) on one real PostgreSQL (Debian's, started here in a
//! temporary folder), placements sent to the leader at a steady offered rate by several clients,
//! and for a sample of them the time from the leader's answer (with its `X-Dexd-Sequence`) until
//! a read on the follower with `X-Dexd-Min-Sequence` set to it is answered: the lag a client
//! that reads its own write from a follower sees, read included. Then the same read on the
//! leader, for the cost of the read alone.
//!
//! `cargo bench -p dexd --bench follower_lag`; `DEXD_BENCH_SECONDS` (default 10) and
//! `DEXD_BENCH_RATE` (placements per second offered, default 1000).

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use dexd_store::postgres::test_server::PostgresServer;
use hdrhistogram::Histogram;
use serde_json::json;

/// A `dexd serve` on the PostgreSQL journal; killed when dropped.
struct Node {
    child: Child,
    base_url: String,
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn start_node(folder: &std::path::Path, postgres: &PostgresServer, node_id: &str) -> Node {
    let config = folder.join(format!("{node_id}.toml"));
    let mut text = dexd::config::DEFAULT_CONFIG_TOML
        .replace(
            "requests_per_second_per_ip = 20000",
            "requests_per_second_per_ip = 1000000",
        )
        .replace(
            "writes_per_second_per_account = 1000",
            "writes_per_second_per_account = 1000000",
        );
    text.push_str(&format!(
        "\n[store]\njournal = \"postgres\"\npostgres_url = \"{}\"\n\n[cluster]\nnode_id = \"{node_id}\"\n",
        postgres.url()
    ));
    std::fs::write(&config, text).unwrap();
    let data_dir = folder.join(node_id);
    let mut child = Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(&data_dir)
        .env("RUST_LOG", "warn,dexd=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut address = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(rest) = line.split("address=").nth(1) {
            address = Some(rest.split_whitespace().next().unwrap().to_string());
        }
        if line.contains("dexd ready") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Node {
        child,
        base_url: format!("http://{}", address.expect("dexd prints its address")),
    }
}

fn trader_key(index: usize) -> String {
    format!("0x{}", format!("{:02x}", index + 1).repeat(32))
}

fn trader_address(key: &str) -> String {
    dexd_crypto::checksummed(&dexd_crypto::PrivateKey::parse(key).unwrap().address())
}

fn main() {
    let seconds: u64 = std::env::var("DEXD_BENCH_SECONDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(10);
    let rate: u64 = std::env::var("DEXD_BENCH_RATE")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1_000);
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let leader = start_node(folder.path(), &postgres, "node-a");
    // The follower starts once the leader holds the leases.
    std::thread::sleep(Duration::from_millis(500));
    let follower = start_node(folder.path(), &postgres, "node-b");
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::new();
        const CLIENTS: usize = 16;
        for client in 0..CLIENTS {
            let key = trader_key(client);
            for (symbol, quantity) in [("USDC", "100000000"), ("ETH", "100000")] {
                let answer = http
                    .post(format!("{}/portfolio/deposit", leader.base_url))
                    .json(&json!({"chainId": "1", "from": trader_address(&key), "symbol": symbol, "quantity": quantity, "privateKey": key}))
                    .send()
                    .await
                    .unwrap();
                assert_eq!(answer.status(), 200);
            }
        }
        let interval = Duration::from_secs_f64(CLIENTS as f64 / rate as f64);
        let mut tasks = Vec::new();
        for client in 0..CLIENTS {
            let (http, leader_url, follower_url) = (http.clone(), leader.base_url.clone(), follower.base_url.clone());
            tasks.push(tokio::spawn(async move {
                let key = trader_key(client);
                let account = trader_address(&key);
                let mut from_follower = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
                let mut from_leader = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
                let mut ticker = tokio::time::interval(interval);
                let started = Instant::now();
                let mut count = 0u64;
                while started.elapsed() < Duration::from_secs(seconds) {
                    ticker.tick().await;
                    count += 1;
                    let direction = if count.is_multiple_of(2) { "buy" } else { "sell" };
                    let price = format!("{}", 1_900 + (count * 13 + client as u64) % 200);
                    let placed = http
                        .post(format!("{leader_url}/order/addOrder"))
                        .json(&json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": direction, "price": price, "amount": "0.01", "privateKey": key}))
                        .send()
                        .await
                        .unwrap();
                    let Some(sequence) = placed
                        .headers()
                        .get("x-dexd-sequence")
                        .map(|value| value.to_str().unwrap().to_string())
                    else {
                        continue;
                    };
                    let acknowledged = Instant::now();
                    // One placement in eight is followed by a read of its position.
                    if !count.is_multiple_of(8) {
                        continue;
                    }
                    let (histogram, base_url) = if count.is_multiple_of(16) {
                        (&mut from_leader, &leader_url)
                    } else {
                        (&mut from_follower, &follower_url)
                    };
                    let read = http
                        .get(format!("{base_url}/account/assetBalances"))
                        .query(&[("chainId", "1"), ("account", account.as_str())])
                        .header("X-Dexd-Min-Sequence", &sequence)
                        .send()
                        .await
                        .unwrap();
                    assert_eq!(read.status(), 200);
                    histogram.record(acknowledged.elapsed().as_micros().max(1) as u64).unwrap();
                }
                (from_follower, from_leader)
            }));
        }
        let mut from_follower = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        let mut from_leader = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
        for task in tasks {
            let (follower_part, leader_part) = task.await.unwrap();
            from_follower.add(follower_part).unwrap();
            from_leader.add(leader_part).unwrap();
        }
        println!("placements offered at {rate}/s on the leader for {seconds} s, {CLIENTS} clients");
        for (name, histogram) in [("follower", &from_follower), ("leader", &from_leader)] {
            println!(
                "read of one's own write on the {name:>8}: {:>5} samples  p50 {:>6} µs  p99 {:>6} µs  max {:>6} µs",
                histogram.len(),
                histogram.value_at_quantile(0.5),
                histogram.value_at_quantile(0.99),
                histogram.max()
            );
        }
    });
}
