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

#[path = "common/nodes.rs"]
mod nodes;

use std::time::{Duration, Instant};

use dexd_store::postgres::test_server::PostgresServer;
use hdrhistogram::Histogram;
use nodes::{setting, start_node, trader_address, trader_key};
use serde_json::json;

fn main() {
    let seconds = setting("DEXD_BENCH_SECONDS", 10);
    let rate = setting("DEXD_BENCH_RATE", 1_000);
    let postgres = PostgresServer::start();
    let folder = tempfile::tempdir().unwrap();
    let leader = start_node(folder.path(), &postgres.url(), "node-a", 3_000);
    // The follower starts once the leader holds the leases.
    std::thread::sleep(Duration::from_millis(500));
    let follower = start_node(folder.path(), &postgres.url(), "node-b", 3_000);
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
