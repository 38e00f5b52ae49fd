//! The durable path: commands through the chain's writer, the engine and the SQLite store with
//! group commit, acknowledged only once on disk. No HTTP and no signing: those are measured by
//! the end-to-end benchmarks.
//!
//! `cargo bench -p dexd --bench durable` prints throughput and latency percentiles for a few
//! concurrency levels. `DEXD_BENCH_SECONDS` sets the length of each run (default 5) and
//! `DEXD_BENCH_CONCURRENCY` the levels (a comma-separated list; default 64,256,1024,4096).
//! `DEXD_BENCH_JOURNAL=postgres` runs the chain on the PostgreSQL journal instead, against a
//! real PostgreSQL (Debian's) started afresh for each level in a temporary folder;
//! `DEXD_BENCH_JOURNAL=postgres-standby` on a primary whose commits wait for a synchronous
//! standby (both on this machine).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod workload;

use dexd_core::{Address, AssetIndex, Command, Event, OrderId, OrderStatus};
use dexd_venue::config::Config;
use dexd_venue::Chain;
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The allocator the `dexd` binary uses, so that the benchmark measures what the service runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ACCOUNTS: usize = 200;

fn account(index: usize) -> Address {
    let mut bytes: [u8; 20] = rand::rngs::StdRng::seed_from_u64(index as u64).gen();
    bytes[0] = 0xab;
    Address::from_bytes(bytes)
}

/// Open orders an account keeps at most, below the venue's limit, so that the book reaches a
/// steady size instead of running into the limit, where placements would be refused.
const MAX_OPEN_ORDERS_PER_ACCOUNT: usize = 400;

/// What the submitters counted.
#[derive(Default)]
struct Counts {
    accepted: AtomicU64,
    refused: AtomicU64,
}

async fn submitter(
    chain: Arc<Chain>,
    task: usize,
    tasks: usize,
    stop: Arc<AtomicBool>,
    counts: Arc<Counts>,
) -> Histogram<u64> {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    let mut random = StdRng::seed_from_u64(task as u64 + 1_000);
    let trader = task % ACCOUNTS;
    let max_open = MAX_OPEN_ORDERS_PER_ACCOUNT / tasks.div_ceil(ACCOUNTS);
    let mut open: Vec<OrderId> = Vec::new();
    while !stop.load(Ordering::Relaxed) {
        let cancel = open.len() >= max_open || (random.gen_range(0..100) < 20 && !open.is_empty());
        let (command, authorization) = if cancel {
            let order_id = open.swap_remove(random.gen_range(0..open.len()));
            (
                Command::CancelOrder {
                    account: account(trader),
                    order_id,
                    pair: None,
                },
                None,
            )
        } else {
            let (command, authorization) = workload::place(&mut random, account(trader));
            (command, Some(authorization))
        };
        let started = Instant::now();
        let result = chain.submit(command, authorization.clone()).await;
        histogram.record(started.elapsed().as_micros().max(1) as u64).unwrap();
        match result {
            Ok(events) => {
                counts.accepted.fetch_add(1, Ordering::Relaxed);
                let placed = authorization.and_then(|authorization| authorization.order_id);
                // Only an order left resting can be cancelled later.
                let resting = events.iter().rev().find_map(|event| match event {
                    Event::OrderUpdated(record) if Some(record.terms.order_id) == placed => {
                        Some(record.status == OrderStatus::Open)
                    }
                    _ => None,
                });
                if let (Some(order_id), Some(true)) = (placed, resting) {
                    open.push(order_id);
                }
            }
            Err(_) => {
                counts.refused.fetch_add(1, Ordering::Relaxed);
            }
        }
    }
    histogram
}

fn main() {
    let seconds: u64 = std::env::var("DEXD_BENCH_SECONDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(5);
    let runtime = workload::two_core_runtime();
    let journal = std::env::var("DEXD_BENCH_JOURNAL").unwrap_or_default();
    let on_postgres = journal.starts_with("postgres");
    let with_standby = journal == "postgres-standby";
    if with_standby {
        println!("durable path: engine + PostgreSQL group commit with a synchronous standby, {seconds} s per run");
    } else if on_postgres {
        println!("durable path: engine + PostgreSQL group commit (fsync, synchronous_commit on), {seconds} s per run");
    } else {
        println!("durable path: engine + SQLite group commit (WAL, synchronous=FULL), {seconds} s per run");
    }
    println!(
        "{:>12} {:>14} {:>9} {:>9} {:>9} {:>9}",
        "concurrency", "accepted/s", "p50 µs", "p99 µs", "p99.9 µs", "max µs"
    );
    let concurrencies: Vec<usize> = match std::env::var("DEXD_BENCH_CONCURRENCY") {
        Ok(list) => list
            .split(',')
            .map(|text| text.trim().parse().expect("a number"))
            .collect(),
        Err(_) => vec![64, 256, 1024, 4096],
    };
    for concurrency in concurrencies {
        let data_dir = tempfile::tempdir().unwrap();
        let mut config = Config::embedded_default();
        config.limits.write_queue_capacity = concurrency.max(4096);
        use dexd_store::postgres::test_server::PostgresServer;
        let postgres = on_postgres.then(|| {
            if with_standby {
                let primary = PostgresServer::start_primary();
                let standby = PostgresServer::start_standby_of(&primary);
                (primary, Some(standby))
            } else {
                (PostgresServer::start(), None)
            }
        });
        if let Some((postgres, _standby)) = &postgres {
            config.journal = dexd_store::backend::JournalBackend::Postgres(dexd_store::backend::PostgresBackend {
                url: postgres.url(),
                node_id: "bench".into(),
                lease_ms: 3_000,
                advertised_url: None,
            });
        }
        let data_path = data_dir.path().to_path_buf();
        runtime.block_on(async {
            // Opening runs the journal's synchronous client, off the runtime's threads.
            let venue = workload::start_venue(config, data_path).await;
            let chain = venue.chain(1).unwrap();
            for trader in 0..ACCOUNTS {
                for asset in 0..2u16 {
                    let command = dexd_core::testing::deposit(account(trader), AssetIndex(asset), 10u128.pow(30));
                    chain.submit(command, None).await.unwrap();
                }
            }
            let stop = Arc::new(AtomicBool::new(false));
            let counts = Arc::new(Counts::default());
            let started = Instant::now();
            let tasks: Vec<_> = (0..concurrency)
                .map(|task| {
                    tokio::spawn(submitter(
                        Arc::clone(&chain),
                        task,
                        concurrency,
                        Arc::clone(&stop),
                        Arc::clone(&counts),
                    ))
                })
                .collect();
            tokio::time::sleep(Duration::from_secs(seconds)).await;
            stop.store(true, Ordering::Relaxed);
            let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
            for task in tasks {
                histogram.add(task.await.unwrap()).unwrap();
            }
            let elapsed = started.elapsed().as_secs_f64();
            println!(
                "{:>12} {:>14.0} {:>9} {:>9} {:>9} {:>9}",
                concurrency,
                counts.accepted.load(Ordering::Relaxed) as f64 / elapsed,
                histogram.value_at_quantile(0.5),
                histogram.value_at_quantile(0.99),
                histogram.value_at_quantile(0.999),
                histogram.max()
            );
            let resting = chain.read_engine(|engine| engine.resting_order_count());
            println!(
                "{:>12} resting orders at the end: {resting}; refused commands: {}",
                "",
                counts.refused.load(Ordering::Relaxed)
            );
        });
    }
}
