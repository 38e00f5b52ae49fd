//! The journal alone: durable appends of batches of commands, the embedded SQLite journal
//! against the PostgreSQL journal (a real server from Debian's packages, started here in a
//! temporary folder with its default durability: `fsync` and `synchronous_commit` on). One
//! appender, as a chain's writer is; each batch is one transaction, acknowledged once durable.
//!
//! Beside the journal's own append (one `INSERT ... SELECT FROM unnest(...)` that checks the
//! epoch and the journal's end), two alternatives are measured on PostgreSQL: the same fence
//! checked in a transaction followed by a binary `COPY` of the batch, and the journal's append on
//! a primary whose commits wait for a synchronous standby (both on this machine).
//!
//! `cargo bench -p dexd --bench journal` prints commands/s and the latency of one append for
//! each backend and batch size. `DEXD_BENCH_SECONDS` sets the length of each run (default 3),
//! `DEXD_BENCH_BATCHES` the batch sizes (default 1,16,128,1024).

use std::time::{Duration, Instant};

use dexd_store::postgres::test_server::PostgresServer;
use dexd_store::postgres::{self, lease, PostgresJournal};
use dexd_store::{Authorization, Journal, JournalEntry, JournalRead};
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
            batch: None,
            claims_batch_nonce: false,
            approved_at_block: None,
        }),
    }
}

fn run(journal: &mut dyn Journal, batch_size: u64, seconds: u64) -> (f64, Histogram<u64>) {
    let first = journal.last_sequence().unwrap() + 1;
    run_appends(first, batch_size, seconds, &mut |batch| {
        journal.append(batch).unwrap();
        journal.between_batches().unwrap();
    })
}

/// Appends batches of `batch_size` from sequence `first` with `append` for `seconds`.
fn run_appends(
    first: u64,
    batch_size: u64,
    seconds: u64,
    append: &mut dyn FnMut(&[JournalEntry]),
) -> (f64, Histogram<u64>) {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 60_000_000, 3).unwrap();
    let mut next = first;
    let started = Instant::now();
    let mut appended = 0u64;
    while started.elapsed() < Duration::from_secs(seconds) {
        let batch: Vec<JournalEntry> = (next..next + batch_size).map(entry).collect();
        let append_started = Instant::now();
        append(&batch);
        histogram
            .record(append_started.elapsed().as_micros().max(1) as u64)
            .unwrap();
        next += batch_size;
        appended += batch_size;
    }
    (appended as f64 / started.elapsed().as_secs_f64(), histogram)
}

/// The alternative to the journal's one-statement append: in one transaction, the lease row
/// locked and its epoch checked, the journal's end checked, then the batch sent by binary
/// `COPY`.
fn append_by_copy(client: &mut ::postgres::Client, chain_id: u64, epoch: u64, batch: &[JournalEntry]) {
    use ::postgres::binary_copy::BinaryCopyInWriter;
    use ::postgres::types::Type;
    let chain = chain_id as i64;
    let mut transaction = client.transaction().unwrap();
    let leased: i64 = transaction
        .query_one("SELECT epoch FROM dexd_leases WHERE chain_id = $1 FOR SHARE", &[&chain])
        .unwrap()
        .get(0);
    assert_eq!(leased, epoch as i64, "fenced");
    let end: i64 = transaction
        .query_one(
            "SELECT COALESCE(MAX(sequence), 0) FROM dexd_journal WHERE chain_id = $1",
            &[&chain],
        )
        .unwrap()
        .get(0);
    assert_eq!(end as u64 + 1, batch[0].sequence, "the journal's end");
    let sink = transaction
        .copy_in(
            "COPY dexd_journal (chain_id, sequence, epoch, time_ms, command, authorization_record) FROM STDIN BINARY",
        )
        .unwrap();
    let types = [Type::INT8, Type::INT8, Type::INT8, Type::INT8, Type::BYTEA, Type::BYTEA];
    let mut writer = BinaryCopyInWriter::new(sink, &types);
    for entry in batch {
        let authorization = dexd_store::codec::encode_authorization(&entry.authorization);
        writer
            .write(&[
                &chain as &(dyn ::postgres::types::ToSql + Sync),
                &(entry.sequence as i64),
                &(epoch as i64),
                &(entry.time_ms as i64),
                &entry.command,
                &authorization,
            ])
            .unwrap();
    }
    writer.finish().unwrap();
    transaction.commit().unwrap();
}

/// The journal of `chain_id` on the server at `url`, leading it.
fn leading_journal(url: &str, chain_id: u64) -> (PostgresJournal, u64) {
    let mut client = postgres::connect(url).unwrap();
    let held = lease::take(&mut client, chain_id, "bench", 600_000).unwrap().unwrap();
    let mut journal = PostgresJournal::open(postgres::Connection::open(url).unwrap(), chain_id).unwrap();
    journal.lead_under(Some(held.epoch));
    (journal, held.epoch)
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
    let primary = PostgresServer::start_primary();
    let _standby = PostgresServer::start_standby_of(&primary);
    for (index, &batch_size) in batch_sizes.iter().enumerate() {
        let data_dir = tempfile::tempdir().unwrap();
        let (mut sqlite, _projector, _reader) = dexd_store::open(data_dir.path(), 1, Duration::from_secs(5)).unwrap();
        report("sqlite", batch_size, run(&mut sqlite, batch_size, seconds));

        let chain_id = index as u64 + 1;
        let (mut journal, _) = leading_journal(&server.url(), chain_id);
        report("postgres", batch_size, run(&mut journal, batch_size, seconds));

        // The same fence, then COPY, on a chain of its own.
        let copy_chain = 100 + chain_id;
        let (mut copy_journal, epoch) = leading_journal(&server.url(), copy_chain);
        let first = copy_journal.last_sequence().unwrap() + 1;
        let mut client = postgres::connect(&server.url()).unwrap();
        report(
            "copy",
            batch_size,
            run_appends(first, batch_size, seconds, &mut |batch| {
                append_by_copy(&mut client, copy_chain, epoch, batch)
            }),
        );

        let (mut standby_journal, _) = leading_journal(&primary.url(), chain_id);
        report("+standby", batch_size, run(&mut standby_journal, batch_size, seconds));
    }
}
