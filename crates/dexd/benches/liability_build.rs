//! The liability tree built beside the writer: placements through the durable path (as
//! `durable.rs` runs them) on a chain holding many funded accounts, measured alone, then while
//! trees are built one after the other at the journal's end (each from the newest snapshot and
//! the journal, on a thread of its own, as the committer asks for them), then alone again. The
//! goal: placement throughput unchanged within noise while a root is built.
//!
//! `cargo bench -p dexd --bench liability_build`. `DEXD_BENCH_TREE_ACCOUNTS` (default 300,000)
//! accounts get three assets each (so three times as many leaves); `DEXD_BENCH_SECONDS` (default
//! 10) is each phase's length; `DEXD_BENCH_CONCURRENCY` (default 256) the placements in flight.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod workload;

use dexd_core::{Address, AssetIndex, Command, Event, OrderId, OrderStatus};
use dexd_venue::config::Config;
use dexd_venue::Chain;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const TRADERS: usize = 200;

fn address(index: u64) -> Address {
    let mut bytes = [0u8; 20];
    bytes[0] = 0xcd;
    bytes[12..].copy_from_slice(&index.to_be_bytes());
    Address::from_bytes(bytes)
}

fn deposit(account: Address, asset: u16, units: u128) -> Command {
    dexd_core::testing::deposit(account, AssetIndex(asset), units)
}

fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default)
}

/// Open orders a task keeps at most: it cancels one of its own beyond this, so that the book
/// stays the same size from phase to phase.
const MAX_OPEN_ORDERS_PER_TASK: usize = 8;

/// Places and cancels at `concurrency` for `seconds`; accepted commands per second.
async fn placements(chain: &Arc<Chain>, concurrency: usize, seconds: u64, seed: u64) -> f64 {
    let stop = Arc::new(AtomicBool::new(false));
    let accepted = Arc::new(AtomicU64::new(0));
    let started = Instant::now();
    let tasks: Vec<_> = (0..concurrency)
        .map(|task| {
            let (chain, stop, accepted) = (Arc::clone(chain), Arc::clone(&stop), Arc::clone(&accepted));
            tokio::spawn(async move {
                let mut random = StdRng::seed_from_u64(seed * 100_000 + task as u64);
                let trader = address(task as u64 % TRADERS as u64);
                let mut open: Vec<OrderId> = Vec::new();
                while !stop.load(Ordering::Relaxed) {
                    if open.len() >= MAX_OPEN_ORDERS_PER_TASK {
                        let order_id = open.swap_remove(random.gen_range(0..open.len()));
                        let cancel = Command::CancelOrder {
                            account: trader,
                            order_id,
                            pair: None,
                        };
                        if chain.submit(cancel, None).await.is_ok() {
                            accepted.fetch_add(1, Ordering::Relaxed);
                        }
                        continue;
                    }
                    let (command, authorization) = workload::place(&mut random, trader);
                    if let Ok(events) = chain.submit(command, Some(authorization.clone())).await {
                        accepted.fetch_add(1, Ordering::Relaxed);
                        let resting = events.iter().rev().find_map(|event| match event {
                            Event::OrderUpdated(record) if authorization.order_id == Some(record.terms.order_id) => {
                                Some(record.status == OrderStatus::Open)
                            }
                            _ => None,
                        });
                        if let (Some(order_id), Some(true)) = (authorization.order_id, resting) {
                            open.push(order_id);
                        }
                    }
                }
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    for task in tasks {
        task.await.unwrap();
    }
    accepted.load(Ordering::Relaxed) as f64 / started.elapsed().as_secs_f64()
}

/// Waits until the history holds everything journaled (the funding's transfers), so that a
/// phase does not run beside the projector's backlog.
async fn wait_for_history(chain: &Chain) {
    while chain.history().await.is_err() {}
}

fn main() {
    if std::env::var_os("RUST_LOG").is_some() {
        tracing_subscriber::fmt()
            .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
            .init();
    }
    let tree_accounts = setting("DEXD_BENCH_TREE_ACCOUNTS", 300_000);
    let seconds = setting("DEXD_BENCH_SECONDS", 10);
    let concurrency = setting("DEXD_BENCH_CONCURRENCY", 256) as usize;
    let runtime = workload::two_core_runtime();
    let data_dir = tempfile::tempdir().unwrap();
    let mut config = Config::embedded_default();
    config.limits.write_queue_capacity = 8_192;
    let data_path = data_dir.path().to_path_buf();
    runtime.block_on(async {
        let venue = workload::start_venue(config, data_path).await;
        let chain = venue.chain(1).unwrap();
        let funding = Instant::now();
        for trader in 0..TRADERS as u64 {
            for asset in 0..2u16 {
                chain
                    .submit(deposit(address(trader), asset, 10u128.pow(30)), None)
                    .await
                    .unwrap();
            }
        }
        let mut group = Vec::new();
        for index in 0..tree_accounts {
            for asset in 0..3u16 {
                group.push((deposit(address(1_000_000_000 + index), asset, 1_000 + index as u128), None));
            }
            if group.len() >= 3_000 || index + 1 == tree_accounts {
                for outcome in chain.submit_group(std::mem::take(&mut group)).await.unwrap() {
                    outcome.unwrap();
                }
            }
        }
        println!(
            "{tree_accounts} accounts × 3 assets funded in {:.1} s; {concurrency} placements in flight, {seconds} s per phase",
            funding.elapsed().as_secs_f64()
        );
        wait_for_history(&chain).await;
        // A first tree, so that the phases compare placements with and without a build, not a
        // first allocation of the tree's memory.
        let (_, sequence) = chain.durable_position();
        let built = Instant::now();
        let tree = chain.liability_tree(sequence).await.unwrap();
        println!(
            "one tree alone: {} leaves in {:.2} s (state rebuilt from the journal, then hashed)",
            tree.leaves.len(),
            built.elapsed().as_secs_f64()
        );
        drop(tree);
        // A phase to settle the book's size before the measured ones.
        placements(&chain, concurrency, seconds, 9).await;
        wait_for_history(&chain).await;
        let alone = placements(&chain, concurrency, seconds, 1).await;
        println!("placements alone: {alone:.0}/s");
        let building = Arc::new(AtomicBool::new(true));
        let builds = Arc::new(AtomicU64::new(0));
        let builder = {
            let (chain, building, builds) = (Arc::clone(&chain), Arc::clone(&building), Arc::clone(&builds));
            tokio::spawn(async move {
                while building.load(Ordering::Relaxed) {
                    let (_, sequence) = chain.durable_position();
                    chain.liability_tree(sequence).await.unwrap();
                    builds.fetch_add(1, Ordering::Relaxed);
                }
            })
        };
        wait_for_history(&chain).await;
        let during = placements(&chain, concurrency, seconds, 2).await;
        building.store(false, Ordering::Relaxed);
        builder.await.unwrap();
        println!(
            "placements while trees are built: {during:.0}/s ({} trees built in the phase, {:+.1} %)",
            builds.load(Ordering::Relaxed),
            (during / alone - 1.0) * 100.0
        );
        wait_for_history(&chain).await;
        let after = placements(&chain, concurrency, seconds, 3).await;
        println!("placements alone again: {after:.0}/s");
    });
}
