//! The journal alone: durable appends of batches of commands, the embedded SQLite journal
//! against the PostgreSQL journal (a real server from Debian's packages, started here in a
//! temporary folder with its default durability: `fsync` and `synchronous_commit` on). One
//! appender, as a chain's writer is; each batch is one transaction, acknowledged once durable.
//!
//! `cargo bench -p dexd --bench journal` prints commands/s and the latency of one append for
//! each backend and batch size. `DEXD_BENCH_SECONDS` sets the length of each run (default 3),
//! `DEXD_BENCH_BATCHES` the batch sizes (default 1,16,128,1024).

use std::time::{Duration, Instant};

use dexd_store::postgres::test_server::PostgresServer;
use dexd_store::postgres::{self, lease, PostgresJournal};
use dexd_store::{Authorization, Journal, JournalEntry};
use hdrhistogram::Histogram;

/// An entry the size of a signed placement: a 160-byte command and its authorization.
fn entry(sequence: u64) -> JournalEntry {
    let mut command = vec![0u8; 160];
    command[..8].copy_from_slice(&sequence.to_be_bytes());
    JournalEntry {
        sequence,
        time_ms: 1_790_000_000_000 + sequence,
        command,
        authorization: Some(Authorization {
            order_id: None,
            nonce: [7; 32],
            expiry_ms: 1_790_000_600_000,
            signature: [0x1b; 65],
            client_signed: true,
        }),
    }
}

fn run(journal: &mut dyn Journal, batch_size: u64, seconds: u64) -> (f64, Histogram<u64>) {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    let mut next = journal.last_sequence().unwrap() + 1;
    let started = Instant::now();
    let mut appended = 0u64;
    while started.elapsed() < Duration::from_secs(seconds) {
        let batch: Vec<JournalEntry> = (next..next + batch_size).map(entry).collect();
        let append_started = Instant::now();
        journal.append(&batch).unwrap();
        histogram
            .record(append_started.elapsed().as_micros().max(1) as u64)
            .unwrap();
        journal.between_batches().unwrap();
        next += batch_size;
        appended += batch_size;
    }
    (appended as f64 / started.elapsed().as_secs_f64(), histogram)
}

fn report(backend: &str, batch_size: u64, (rate, histogram): (f64, Histogram<u64>)) {
    println!(
        "{backend:>10}  batch {batch_size:>5}  {rate:>10.0} commands/s  append p50 {:>6} µs  p99 {:>6} µs",
        histogram.value_at_quantile(0.5),
        histogram.value_at_quantile(0.99)
    );
}

fn main() {
    let seconds: u64 = std::env::var("DEXD_BENCH_SECONDS")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(3);
    let batch_sizes: Vec<u64> = std::env::var("DEXD_BENCH_BATCHES")
        .unwrap_or_else(|_| "1,16,128,1024".into())
        .split(',')
        .map(|size| size.trim().parse().expect("a batch size"))
        .collect();
    let server = PostgresServer::start();
    for (index, &batch_size) in batch_sizes.iter().enumerate() {
        let data_dir = tempfile::tempdir().unwrap();
        let (mut sqlite, _projector, _reader) = dexd_store::open(data_dir.path(), 1, Duration::from_secs(5)).unwrap();
        report("sqlite", batch_size, run(&mut sqlite, batch_size, seconds));

        let chain_id = index as u64 + 1;
        let mut client = postgres::connect(&server.url()).unwrap();
        let held = lease::take(&mut client, chain_id, "bench", 600_000).unwrap().unwrap();
        let mut journal = PostgresJournal::open(postgres::Connection::open(&server.url()).unwrap(), chain_id).unwrap();
        journal.lead_under(Some(held.epoch));
        report("postgres", batch_size, run(&mut journal, batch_size, seconds));
    }
}
