//! The projector alone: how fast the history tables (orders, trades, transfers) are written from
//! journaled commands' events, in the batches the projector thread uses. The durable path's
//! sustained rate cannot exceed this, because the projector's backlog is bounded.
//!
//! `cargo bench -p dexd --bench projector`. `DEXD_PROJECTOR_COMMANDS` sets the stream length
//! (default 400,000): 200 accounts placing limit orders around a mid price, about a third of
//! them crossing, with random order ids, as in the durable benchmark.

use std::sync::Arc;
use std::time::{Duration, Instant};

mod workload;

use dexd_core::{Address, Amount, AssetIndex, Command, Engine, TransferRequest};
use dexd_store::{Authorization, Projection};
use dexd_venue::config::Config;
use dexd_venue::MAX_PROJECTION_BATCH;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The allocator the `dexd` binary uses, so that the benchmark measures what the service runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ACCOUNTS: usize = 200;

fn main() {
    let commands: usize = std::env::var("DEXD_PROJECTOR_COMMANDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(400_000);
    let config = Config::embedded_default();
    let mut engine = Engine::new(config.chain(1).unwrap().engine_config(&config.limits)).unwrap();
    let mut random = StdRng::seed_from_u64(7);
    let accounts: Vec<Address> = (0..ACCOUNTS).map(|_| Address::from_bytes(random.gen())).collect();
    let mut projections = Vec::with_capacity(commands + 2 * ACCOUNTS);
    let mut time_ms = 1_700_000_000_000;
    let mut run = |engine: &mut Engine, command: Command, authorization: Option<Authorization>| {
        let mut events = Vec::new();
        time_ms += 1;
        if engine.execute(command, time_ms, &mut events).is_ok() {
            projections.push(Projection {
                sequence: projections.len() as u64 + 1,
                events: Arc::new(events),
                authorization,
            });
        }
    };
    for account in &accounts {
        for asset in 0..2u16 {
            let request = TransferRequest {
                transfer_id: random.gen(),
                account: *account,
                asset: AssetIndex(asset),
                amount: Amount::from_units(10u128.pow(30)),
            };
            run(&mut engine, Command::Deposit(request), None);
        }
    }
    for _ in 0..commands {
        let account = accounts[random.gen_range(0..ACCOUNTS)];
        let (command, authorization) = workload::place(&mut random, account);
        run(&mut engine, command, Some(authorization));
    }
    let data_dir = tempfile::tempdir().unwrap();
    let (_journal, mut projector, _reader) = dexd_store::open(data_dir.path(), 1, Duration::from_secs(5)).unwrap();
    let events: usize = projections.iter().map(|projection| projection.events.len()).sum();
    println!(
        "projector: {} commands ({events} events) in batches of {MAX_PROJECTION_BATCH}",
        projections.len()
    );
    let started = Instant::now();
    let mut last_report = Instant::now();
    let mut written = 0usize;
    for batch in projections.chunks(MAX_PROJECTION_BATCH) {
        projector.project(batch).unwrap();
        written += batch.len();
        if last_report.elapsed() > Duration::from_secs(2) {
            println!(
                "  {written:>9} written, {:>8.0} commands/s so far",
                written as f64 / started.elapsed().as_secs_f64()
            );
            last_report = Instant::now();
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    println!(
        "projector: {:.0} commands/s ({:.1} µs per command), {:.2} s in all",
        written as f64 / elapsed,
        elapsed * 1e6 / written as f64,
        elapsed
    );
}
