//! Recovery time: a journal of 10,000,000 commands that rebuilds into 1,000,000 resting orders
//! (after 1,000,000 trades and 3,000,000 orders placed and cancelled) is written, then the start
//! of the venue is timed three ways: replaying the whole journal; from a snapshot at the
//! journal's end; and from that snapshot with 100,000 more commands after it.
//!
//! `cargo bench -p dexd --bench recovery`. `DEXD_RECOVERY_SCALE=0.1` runs a tenth of it.
//! `DEXD_RECOVERY_DATA_DIR=DIR` keeps the data in DIR; a second run on the same DIR only times
//! one start from its snapshot and tail, in a fresh process (to profile the start alone; run it
//! several times for several figures).
//! The history is marked as already projected, as it is after a clean run: the measurement is
//! the rebuild of the engine and of the open orders, which every start does.

// The recovery benchmark builds its own journal with the workload's builders; the random
// placement stream is the other benchmarks'.
#[allow(dead_code)]
mod workload;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use dexd_core::{Address, Amount, AssetIndex, Command, Direction, Engine, EngineConfig, OrderId, TransferRequest};
use dexd_store::JournalEntry;
use dexd_venue::config::Config;
use dexd_venue::Venue;

/// The allocator the `dexd` binary uses, so that the benchmark measures what the service runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CHUNK: usize = 20_000;
const SELLERS: u64 = 5_000;

fn order(number: u64, account: Address, direction: Direction, ticks: u64, lots: u64) -> Command {
    let mut id = [0u8; 32];
    id[..8].copy_from_slice(&number.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    id[24..].copy_from_slice(&number.to_be_bytes());
    workload::limit_order(OrderId::from_bytes(id), account, direction, ticks, lots)
}

fn seller(number: u64) -> Address {
    let mut bytes = [0x51u8; 20];
    bytes[12..].copy_from_slice(&(number % SELLERS).to_be_bytes());
    Address::from_bytes(bytes)
}

/// The journal's commands, in order, generated as they are written (10 million do not fit in
/// memory at once comfortably).
struct Commands {
    resting: u64,
    churn: u64,
    trades: u64,
    position: u64,
    next_order: u64,
    buyer: Address,
}

impl Commands {
    fn total(&self) -> u64 {
        SELLERS + 1 + self.resting + self.churn * 2 + self.trades * 2
    }

    fn next(&mut self) -> Option<Command> {
        let position = self.position;
        self.position += 1;
        let deposit = |account, asset| {
            Command::Deposit(TransferRequest {
                transfer_id: [1; 32],
                account,
                asset: AssetIndex(asset),
                amount: Amount::from_units(10u128.pow(30)),
            })
        };
        if position < SELLERS {
            return Some(deposit(seller(position), 0));
        }
        if position == SELLERS {
            return Some(deposit(self.buyer, 1));
        }
        let mut step = position - SELLERS - 1;
        let mut new_order = |account, direction, ticks, lots| {
            self.next_order += 1;
            order(self.next_order, account, direction, ticks, lots)
        };
        // The resting book: sells from 250,000 ticks up.
        if step < self.resting {
            return Some(new_order(seller(step), Direction::Sell, 250_000 + step % 5_000, 20));
        }
        step -= self.resting;
        // Churn: a buy that rests below the asks, then its cancel.
        if step < self.churn * 2 {
            return Some(if step.is_multiple_of(2) {
                new_order(self.buyer, Direction::Buy, 200_000 + step % 1_000, 10)
            } else {
                Command::CancelOrder {
                    account: self.buyer,
                    order_id: order(self.next_order, self.buyer, Direction::Buy, 1, 1).order_id(),
                    pair: None,
                }
            });
        }
        step -= self.churn * 2;
        // Trades: a sell below the book, then a buy that takes it whole.
        if step < self.trades * 2 {
            return Some(if step.is_multiple_of(2) {
                new_order(seller(step), Direction::Sell, 240_000, 10)
            } else {
                new_order(self.buyer, Direction::Buy, 240_000, 10)
            });
        }
        None
    }
}

trait OrderIdOf {
    fn order_id(&self) -> OrderId;
}

impl OrderIdOf for Command {
    fn order_id(&self) -> OrderId {
        match self {
            Command::PlaceOrder(order) => order.order_id,
            _ => unreachable!("only orders have ids here"),
        }
    }
}

/// Writes `commands` after what the journal holds; returns the last sequence.
fn write(data_dir: &Path, engine: &mut Engine, commands: &mut dyn Iterator<Item = Command>, mut sequence: u64) -> u64 {
    let (mut journal, _projector, _reader) = dexd_store::open(data_dir, 1, Duration::from_secs(5)).unwrap();
    let mut events = Vec::new();
    loop {
        let chunk: Vec<Command> = commands.take(CHUNK).collect();
        if chunk.is_empty() {
            break;
        }
        let entries: Vec<JournalEntry> = chunk
            .into_iter()
            .map(|command| {
                sequence += 1;
                events.clear();
                let authorization = match &command {
                    Command::PlaceOrder(order) => Some(workload::venue_authorization(
                        order.order_id,
                        1_700_000_000_000 + sequence,
                    )),
                    _ => None,
                };
                let encoded = dexd_store::codec::encode_command(&command);
                engine
                    .execute(command, 1_700_000_000_000 + sequence, &mut events)
                    .expect("the generated journal is valid");
                JournalEntry {
                    sequence,
                    time_ms: 1_700_000_000_000 + sequence,
                    command: encoded,
                    authorization,
                }
            })
            .collect();
        journal.append(&entries).unwrap();
    }
    // The history is marked as written, as after a clean stop: recovery is the replay alone.
    let database = rusqlite::Connection::open(dexd_store::history_path(data_dir, 1)).unwrap();
    database
        .execute(
            "UPDATE meta SET value = ?1 WHERE key = 'projected_sequence'",
            [sequence.to_string()],
        )
        .unwrap();
    sequence
}

fn config(every_commands: u64) -> Config {
    let mut config = Config::embedded_default();
    config.chains.retain(|chain| chain.chain_id == 1);
    config.snapshots.every_commands = every_commands;
    config.snapshots.check_interval_ms = 20;
    config
}

/// Starts the venue, reports how long it took, and stops it.
fn timed_start(label: &str, data_dir: &Path, every_commands: u64) {
    let started = Instant::now();
    let venue = Venue::start(config(every_commands), data_dir).unwrap();
    let elapsed = started.elapsed();
    let chain = venue.chain(1).unwrap();
    let resting = chain.read_engine(|engine| engine.resting_order_count());
    let from = chain.snapshots.newest_sequence.load(Ordering::Acquire);
    println!(
        "{label}: {:.2} s ({} commands journaled, replayed from {from}, {resting} resting orders)",
        elapsed.as_secs_f64(),
        chain.journaled_sequence()
    );
    close(venue);
}

fn close(venue: Venue) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(venue.close());
}

fn main() {
    let scale: f64 = std::env::var("DEXD_RECOVERY_SCALE")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1.0);
    let temporary = tempfile::tempdir().unwrap();
    let kept = std::env::var_os("DEXD_RECOVERY_DATA_DIR").map(std::path::PathBuf::from);
    let data_dir_path = kept.clone().unwrap_or_else(|| temporary.path().to_path_buf());
    let complete_marker = data_dir_path.join("recovery-bench-complete");
    if complete_marker.exists() {
        // One start per process, as a restart is: a second start in the same process would
        // reuse the memory the allocator kept from the first, and look faster than it is.
        timed_start(
            "start from the kept snapshot and its tail",
            &data_dir_path,
            1_000_000_000,
        );
        return;
    }
    std::fs::create_dir_all(&data_dir_path).unwrap();
    let data_dir = DataDir(&data_dir_path);
    let engine_config: EngineConfig = config(0).chain(1).unwrap().engine_config(&config(0).limits);
    let mut commands = Commands {
        resting: (1_000_000.0 * scale) as u64,
        churn: (3_000_000.0 * scale) as u64,
        trades: (1_000_000.0 * scale) as u64 + (497_500.0 * scale) as u64,
        position: 0,
        next_order: 0,
        buyer: Address::from_bytes([0xb1; 20]),
    };
    let total = commands.total();
    let written = Instant::now();
    let mut engine = Engine::new(engine_config.clone()).unwrap();
    let last = write(
        data_dir.path(),
        &mut engine,
        &mut std::iter::from_fn(|| commands.next()),
        0,
    );
    println!(
        "journal written: {last} commands ({} resting orders) in {:.1} s",
        engine.resting_order_count(),
        written.elapsed().as_secs_f64()
    );
    assert_eq!(last, total);

    timed_start("start replaying the whole journal", data_dir.path(), 0);

    // A snapshot at the journal's end, written by the snapshotter as the service does.
    let venue = Venue::start(config(1), data_dir.path()).unwrap();
    let chain = venue.chain(1).unwrap();
    let building = Instant::now();
    while chain.snapshots.written_total.load(Ordering::Acquire) == 0 {
        assert!(
            building.elapsed() < Duration::from_secs(600),
            "no snapshot after 10 minutes"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let snapshot_bytes: u64 =
        dexd_store::snapshots::list_snapshots(&dexd_store::snapshots::snapshot_directory(data_dir.path(), 1))
            .unwrap()
            .iter()
            .map(|file| std::fs::metadata(&file.path).unwrap().len())
            .max()
            .unwrap_or(0);
    println!(
        "snapshot of command {} built and written beside the running chain in {:.1} s ({:.0} MB)",
        chain.snapshots.newest_sequence.load(Ordering::Acquire),
        chain.snapshots.last_duration_ms.load(Ordering::Acquire) as f64 / 1000.0,
        snapshot_bytes as f64 / 1e6
    );
    drop(chain);
    close(venue);

    timed_start(
        "start from a snapshot at the journal's end",
        data_dir.path(),
        1_000_000_000,
    );

    // 100,000 more commands after the snapshot: orders placed and cancelled.
    let tail = (100_000.0 * scale) as u64;
    let mut more = Commands {
        resting: 0,
        churn: tail / 2,
        trades: 0,
        position: SELLERS + 1,
        next_order: commands.next_order,
        buyer: Address::from_bytes([0xb1; 20]),
    };
    write(
        data_dir.path(),
        &mut engine,
        &mut std::iter::from_fn(|| more.next()),
        last,
    );
    timed_start(
        &format!("start from that snapshot and {tail} commands after it"),
        data_dir.path(),
        1_000_000_000,
    );
    if kept.is_some() {
        std::fs::write(&complete_marker, b"").unwrap();
    }
}

/// The data directory, named as `tempfile`'s is.
struct DataDir<'a>(&'a Path);

impl DataDir<'_> {
    fn path(&self) -> &Path {
        self.0
    }
}
