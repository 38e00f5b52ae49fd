//! The state hashes the public journal carries: the engine's state hash after every journal
//! position that is a multiple of [`STATE_HASH_INTERVAL`], so that an auditor's replay checks
//! itself as it goes and finds where it parts from the venue's.
//!
//! A keeper thread per chain, at the lowest scheduling priority, follows the journal (what is
//! durable in it, read through its own connection) on an engine of its own and records each
//! hash, in memory and in `audit/chain-<id>.state-hashes` under the data directory (40-byte
//! records: position, hash), from which a restart goes on. The file is derived data: one that
//! does not match the journal (another journal, a damaged tail) is started again. The writer
//! never waits for it; the journal endpoint serves a command at a multiple only once its hash is
//! known. The cost is one more copy of the chain's state in memory and one replay of every
//! command on a spare core.

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dexd_core::{Engine, EngineConfig};
use dexd_store::backend::JournalBackend;
use dexd_store::{replay_through, JournalRead, StoreError};

use super::snapshotter::{recover, SnapshotPlace};
/// A state hash is kept (and published) after every position that is a multiple of this.
pub const STATE_HASH_INTERVAL: u64 = 10_000;

/// The bytes of one record of the file: the position (big-endian u64) and the hash.
const RECORD_BYTES: usize = 8 + 32;
/// How long the keeper waits when it has hashed everything the journal holds.
const IDLE_POLL_MS: u64 = 200;
/// How long it waits after a failure (the journal unreadable) before it tries again.
const RETRY_AFTER_FAILURE_MS: u64 = 1_000;
/// The nice value of the keeper's thread: the lowest priority, as a liability tree's.
const KEEPER_THREAD_NICE: i32 = 19;

/// The state hashes of one chain known so far: one per multiple of [`STATE_HASH_INTERVAL`],
/// from the first, without gaps (about 32 bytes per 10,000 commands).
#[derive(Debug, Default)]
pub struct StateHashes {
    hashes: parking_lot::RwLock<Vec<[u8; 32]>>,
}

impl StateHashes {
    /// The state hash after `sequence`, if it is a multiple of the interval and hashed already.
    pub fn at(&self, sequence: u64) -> Option<[u8; 32]> {
        if sequence == 0 || !sequence.is_multiple_of(STATE_HASH_INTERVAL) {
            return None;
        }
        let index = usize::try_from(sequence / STATE_HASH_INTERVAL - 1).ok()?;
        self.hashes.read().get(index).copied()
    }

    /// The last position hashed (0 before the first).
    pub fn hashed_through(&self) -> u64 {
        self.hashes.read().len() as u64 * STATE_HASH_INTERVAL
    }

    fn push(&self, hash: [u8; 32]) {
        self.hashes.write().push(hash);
    }

    fn replace(&self, hashes: Vec<[u8; 32]>) {
        *self.hashes.write() = hashes;
    }
}

/// Everything the keeper needs.
pub(super) struct StateHashSetup {
    pub chain_id: u64,
    pub data_dir: PathBuf,
    pub journal_backend: JournalBackend,
    pub snapshots: SnapshotPlace,
    pub engine_config: EngineConfig,
    pub hashes: Arc<StateHashes>,
}

/// The running keeper; [`StateHashKeeper::stop`] stops and joins it.
pub(super) struct StateHashKeeper {
    stopping: Arc<AtomicBool>,
    thread: std::thread::JoinHandle<()>,
}

impl StateHashKeeper {
    /// Starts the keeper's thread.
    pub fn start(setup: StateHashSetup) -> StateHashKeeper {
        let stopping = Arc::new(AtomicBool::new(false));
        let thread_stopping = Arc::clone(&stopping);
        let thread = std::thread::Builder::new()
            .name(format!("state-hashes-{}", setup.chain_id))
            .spawn(move || {
                lower_this_threads_priority();
                run(&setup, &thread_stopping);
            })
            .expect("the state hash thread starts");
        StateHashKeeper { stopping, thread }
    }

    /// Stops the keeper between two reads of the journal, and joins it.
    pub fn stop(self) {
        self.stopping.store(true, Ordering::Release);
        if self.thread.join().is_err() {
            tracing::error!("the state hash thread panicked");
        }
    }
}

fn lower_this_threads_priority() {
    let thread = rustix::thread::gettid();
    if let Err(error) = rustix::process::setpriority_process(Some(thread), KEEPER_THREAD_NICE) {
        tracing::debug!(%error, "the state hash thread keeps its priority");
    }
}

/// Where a chain's state hashes are kept.
pub fn state_hash_path(data_dir: &Path, chain_id: u64) -> PathBuf {
    data_dir.join("audit").join(format!("chain-{chain_id}.state-hashes"))
}

fn run(setup: &StateHashSetup, stopping: &AtomicBool) {
    let keep_going = || !stopping.load(Ordering::Acquire);
    while keep_going() {
        match keep(setup, &keep_going) {
            Ok(()) => return,
            Err(error) => {
                tracing::warn!(chain_id = setup.chain_id, %error, "the state hashes stopped; trying again");
                sleep_unless_stopping(RETRY_AFTER_FAILURE_MS, &keep_going);
            }
        }
    }
}

fn sleep_unless_stopping(duration_ms: u64, keep_going: &dyn Fn() -> bool) {
    let mut slept_ms = 0;
    while slept_ms < duration_ms && keep_going() {
        std::thread::sleep(Duration::from_millis(50));
        slept_ms += 50;
    }
}

/// Restores the keeper's engine from its file and follows the journal until stopped.
fn keep(setup: &StateHashSetup, keep_going: &dyn Fn() -> bool) -> Result<(), StoreError> {
    let path = state_hash_path(&setup.data_dir, setup.chain_id);
    let io = |error: std::io::Error| StoreError::Inconsistent(format!("the state hash file: {error}"));
    std::fs::create_dir_all(path.parent().expect("a file in a directory")).map_err(io)?;
    let mut journal = setup.journal_backend.open_reader(&setup.data_dir, setup.chain_id)?;
    let recorded = read_records(&path).map_err(io)?;
    let (mut engine, recorded) = match restore(setup, journal.as_mut(), &recorded)? {
        Some(engine) => (engine, recorded),
        None => {
            tracing::warn!(
                chain_id = setup.chain_id,
                "the state hash file does not match the journal; hashing again from the start"
            );
            (
                restore(setup, journal.as_mut(), &[])?.expect("an empty engine always restores"),
                Vec::new(),
            )
        }
    };
    rewrite_records(&path, &recorded).map_err(io)?;
    setup.hashes.replace(recorded);
    let mut file = std::fs::OpenOptions::new().append(true).open(&path).map_err(io)?;
    while keep_going() {
        let position = engine.journal_sequence();
        let next = (position / STATE_HASH_INTERVAL + 1) * STATE_HASH_INTERVAL;
        let replayed = replay_through(journal.as_mut(), engine, position, next, None)?;
        engine = replayed.engine;
        if engine.journal_sequence() == next {
            let hash = engine.state_hash();
            let mut record = [0u8; RECORD_BYTES];
            record[..8].copy_from_slice(&next.to_be_bytes());
            record[8..].copy_from_slice(&hash);
            file.write_all(&record).map_err(io)?;
            setup.hashes.push(hash);
        } else {
            sleep_unless_stopping(IDLE_POLL_MS, keep_going);
        }
    }
    Ok(())
}

/// The engine at the last recorded position, if its state hash is the recorded one (`None`:
/// the file is not this journal's).
fn restore(
    setup: &StateHashSetup,
    journal: &mut dyn JournalRead,
    recorded: &[[u8; 32]],
) -> Result<Option<Engine>, StoreError> {
    let position = recorded.len() as u64 * STATE_HASH_INTERVAL;
    let (replayed, _) = recover(
        journal,
        &setup.snapshots,
        &setup.engine_config,
        (position, position),
        true,
        None,
    )?;
    let engine = replayed.engine;
    if engine.journal_sequence() != position {
        return Ok(None);
    }
    if let Some(last) = recorded.last() {
        if engine.state_hash() != *last {
            return Ok(None);
        }
    }
    Ok(Some(engine))
}

/// The file's hashes, in order, up to the first record out of place (a torn tail).
fn read_records(path: &Path) -> std::io::Result<Vec<[u8; 32]>> {
    let mut bytes = Vec::new();
    match std::fs::File::open(path) {
        Ok(mut file) => {
            file.read_to_end(&mut bytes)?;
        }
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
        Err(error) => return Err(error),
    }
    let mut hashes = Vec::new();
    for record in bytes.chunks_exact(RECORD_BYTES) {
        let sequence = u64::from_be_bytes(record[..8].try_into().expect("8 bytes"));
        if sequence != (hashes.len() as u64 + 1) * STATE_HASH_INTERVAL {
            break;
        }
        hashes.push(record[8..].try_into().expect("32 bytes"));
    }
    Ok(hashes)
}

/// Writes the file anew with `hashes` (through a temporary file renamed over it).
fn rewrite_records(path: &Path, hashes: &[[u8; 32]]) -> std::io::Result<()> {
    let partial = path.with_extension("state-hashes-partial");
    let mut bytes = Vec::with_capacity(hashes.len() * RECORD_BYTES);
    for (index, hash) in hashes.iter().enumerate() {
        bytes.extend_from_slice(&((index as u64 + 1) * STATE_HASH_INTERVAL).to_be_bytes());
        bytes.extend_from_slice(hash);
    }
    std::fs::write(&partial, &bytes)?;
    std::fs::rename(&partial, path)
}
