//! The snapshotter of a chain: a thread that writes a snapshot of the chain's state once the
//! journal has grown by `[snapshots] every_commands` since the last one.
//!
//! It never touches the running engine, so writes do not stop for it at all: it loads the
//! newest snapshot into an engine of its own, replays the journal after it through a read-only
//! connection up to a sequence the history has also reached (a start needs the history at least
//! as far as the snapshot it uses), and writes the result (`store::snapshots`). The cost is a
//! second copy of the chain's state in memory while it runs, and one core's time for the replay
//! (about 3 s per million commands here). It does not decide which snapshot a start uses
//! (`Chain::start` does) and never deletes from the journal.

use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dexd_core::EngineConfig;
use tokio::sync::watch;

use crate::config::Snapshots;
use dexd_store::backend::JournalBackend;
use dexd_store::snapshots::{
    build_state, list_snapshots, load_snapshot, remove_older_snapshots, snapshot_payload, write_snapshot,
    LoadedSnapshot, SnapshotError, SnapshotIdentity,
};
use dexd_store::{empty_engine, replay_through, JournalRead, Projector, Replayed, StoreError};

/// What the chain's snapshots have done, for `/metrics` and the logs.
#[derive(Debug, Default)]
pub struct SnapshotStatus {
    /// The journal sequence of the newest snapshot (0 when there is none).
    pub newest_sequence: AtomicU64,
    /// When the newest snapshot was written, in ms since the epoch (0 when there is none).
    pub newest_written_unix_ms: AtomicU64,
    /// Snapshots written since the start.
    pub written_total: AtomicU64,
    /// Snapshots that failed since the start.
    pub failed_total: AtomicU64,
    /// How long the last snapshot took, in ms (replay, encoding and writing).
    pub last_duration_ms: AtomicU64,
}

impl SnapshotStatus {
    /// Records a snapshot on disk (written now, or found at start with its file's time).
    pub fn record(&self, sequence: u64, written_unix_ms: u64) {
        self.newest_sequence.store(sequence, Ordering::Release);
        self.newest_written_unix_ms.store(written_unix_ms, Ordering::Release);
    }
}

/// Everything the snapshotter thread needs.
pub(super) struct SnapshotterSetup {
    pub chain_id: u64,
    pub data_dir: PathBuf,
    /// Where the journal is read from.
    pub journal_backend: JournalBackend,
    pub directory: PathBuf,
    pub identity: SnapshotIdentity,
    pub engine_config: EngineConfig,
    pub policy: Snapshots,
    pub journaled: Arc<AtomicU64>,
    pub projected: watch::Receiver<u64>,
    pub status: Arc<SnapshotStatus>,
}

/// A running snapshotter; [`Snapshotter::stop`] abandons a snapshot in progress and joins it.
pub(super) struct Snapshotter {
    stopping: Arc<AtomicBool>,
    wake: std::sync::mpsc::Sender<()>,
    thread: std::thread::JoinHandle<()>,
}

impl Snapshotter {
    /// Starts the thread, unless snapshots are turned off.
    pub fn start(setup: SnapshotterSetup) -> Option<Snapshotter> {
        if setup.policy.every_commands == 0 {
            return None;
        }
        let stopping = Arc::new(AtomicBool::new(false));
        let (wake, woken) = std::sync::mpsc::channel();
        let thread_stopping = Arc::clone(&stopping);
        let thread = std::thread::Builder::new()
            .name(format!("snapshots-{}", setup.chain_id))
            .spawn(move || run(setup, &thread_stopping, &woken))
            .expect("the snapshot thread starts");
        Some(Snapshotter { stopping, wake, thread })
    }

    /// Stops the thread: a snapshot in progress is abandoned between journal chunks (its
    /// partial file, if any, is deleted at the next start).
    pub fn stop(self) {
        self.stopping.store(true, Ordering::Release);
        let _ = self.wake.send(());
        if self.thread.join().is_err() {
            tracing::error!("the snapshot thread panicked");
        }
    }
}

fn run(setup: SnapshotterSetup, stopping: &AtomicBool, woken: &std::sync::mpsc::Receiver<()>) {
    let interval = Duration::from_millis(setup.policy.check_interval_ms);
    let keep_going = || !stopping.load(Ordering::Acquire);
    // The sequence the next snapshot is measured from: the newest one, or the last attempt.
    let mut measured_from = setup.status.newest_sequence.load(Ordering::Acquire);
    let mut journal: Option<Box<dyn JournalRead>> = None;
    loop {
        match woken.recv_timeout(interval) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => return,
        }
        if !keep_going() {
            return;
        }
        let target = setup.journaled.load(Ordering::Acquire).min(*setup.projected.borrow());
        if target < measured_from.saturating_add(setup.policy.every_commands) {
            continue;
        }
        // A failure is retried after as many commands again, not at every check: a snapshot
        // replays up to a million commands, and a full disk would make each attempt fail.
        measured_from = target;
        if journal.is_none() {
            match setup.journal_backend.open_reader(&setup.data_dir, setup.chain_id) {
                Ok(opened) => journal = Some(opened),
                Err(error) => {
                    tracing::warn!(chain_id = setup.chain_id, %error, "cannot open the journal to snapshot it");
                    setup.status.failed_total.fetch_add(1, Ordering::Relaxed);
                    continue;
                }
            }
        }
        let journal_reader = journal.as_deref_mut().expect("opened above");
        let started = Instant::now();
        match take_snapshot(&setup, journal_reader, target, &keep_going) {
            Ok(bytes) => {
                let duration_ms = started.elapsed().as_millis() as u64;
                setup.status.record(target, dexd_store::now_ms());
                setup.status.written_total.fetch_add(1, Ordering::Relaxed);
                setup.status.last_duration_ms.store(duration_ms, Ordering::Relaxed);
                tracing::info!(
                    chain_id = setup.chain_id,
                    sequence = target,
                    bytes,
                    duration_ms,
                    "snapshot written"
                );
            }
            Err(SnapshotError::Stopped) => return,
            Err(error) => {
                setup.status.failed_total.fetch_add(1, Ordering::Relaxed);
                tracing::warn!(chain_id = setup.chain_id, sequence = target, %error, "the snapshot failed; the journal is whole and is the record");
            }
        }
    }
}

/// Where a chain's snapshots are, and what a snapshot must match to be used.
#[derive(Clone)]
pub(crate) struct SnapshotPlace {
    pub(crate) directory: std::path::PathBuf,
    pub(crate) identity: SnapshotIdentity,
}

/// Rebuilds a chain's engine: from the newest snapshot at or before `usable_through` that loads
/// (none when `use_snapshots` is off), then the journal after it; or from the whole journal.
/// With `history`, the projector gets the snapshot's open orders and whatever of the replay it
/// had not written. The one way a chain's state comes back, at start and after a failed write.
/// The journal is replayed up to `replay_to` (`u64::MAX`: to its end). Returns the replay and
/// the snapshot's sequence, if one was used.
pub(super) fn recover(
    journal: &mut dyn JournalRead,
    snapshots: &SnapshotPlace,
    engine_config: &EngineConfig,
    (usable_through, replay_to): (u64, u64),
    use_snapshots: bool,
    history: Option<&mut Projector>,
) -> Result<(Replayed, Option<u64>), StoreError> {
    let SnapshotPlace { directory, identity } = snapshots;
    let snapshot = if use_snapshots {
        newest_usable_snapshot(directory, identity, engine_config, usable_through.min(replay_to))
    } else {
        None
    };
    match snapshot {
        Some(snapshot) => {
            let sequence = snapshot.sequence;
            let mut history = history;
            if let Some(projector) = history.as_mut() {
                projector.restore_open_orders(snapshot.open_orders);
            }
            Ok((
                replay_through(journal, snapshot.engine, sequence, replay_to, history)?,
                Some(sequence),
            ))
        }
        None => Ok((
            replay_through(journal, empty_engine(engine_config)?, 0, replay_to, history)?,
            None,
        )),
    }
}

/// The newest snapshot at or before `through` that loads, or none.
fn newest_usable_snapshot(
    setup_directory: &std::path::Path,
    identity: &SnapshotIdentity,
    engine_config: &EngineConfig,
    through: u64,
) -> Option<LoadedSnapshot> {
    let files = match list_snapshots(setup_directory) {
        Ok(files) => files,
        Err(error) => {
            tracing::warn!(chain_id = identity.chain_id, %error, "cannot list the snapshots");
            return None;
        }
    };
    for file in files {
        if file.sequence > through {
            tracing::warn!(
                chain_id = identity.chain_id,
                path = %file.path.display(),
                through,
                "snapshot skipped: it is ahead of the journal or the history"
            );
            continue;
        }
        match load_snapshot(&file, identity, engine_config) {
            Ok(loaded) => return Some(loaded),
            Err(error) => tracing::warn!(
                chain_id = identity.chain_id,
                path = %file.path.display(),
                %error,
                "snapshot skipped; falling back to an older one or to the journal"
            ),
        }
    }
    None
}

/// Builds and writes the snapshot of `target`; returns its size in bytes.
fn take_snapshot(
    setup: &SnapshotterSetup,
    journal: &mut dyn JournalRead,
    target: u64,
    keep_going: &dyn Fn() -> bool,
) -> Result<usize, SnapshotError> {
    let base = newest_usable_snapshot(&setup.directory, &setup.identity, &setup.engine_config, target);
    let (engine, open_orders) = build_state(journal, &setup.engine_config, base, target, keep_going)?;
    if !keep_going() {
        return Err(SnapshotError::Stopped);
    }
    let (payload, state_hash) = snapshot_payload(&engine, &open_orders)?;
    drop((engine, open_orders));
    if !keep_going() {
        return Err(SnapshotError::Stopped);
    }
    let file = write_snapshot(&setup.directory, &setup.identity, target, state_hash, &payload)?;
    remove_older_snapshots(&setup.directory, setup.policy.keep)?;
    // On PostgreSQL the other nodes may start from it too; the local file stands either way.
    match setup
        .journal_backend
        .share_snapshot(setup.chain_id, (target, &file.path), setup.policy.keep)
    {
        Ok(true) => tracing::info!(
            chain_id = setup.chain_id,
            sequence = target,
            "snapshot shared in PostgreSQL"
        ),
        Ok(false) => {}
        Err(error) => tracing::warn!(chain_id = setup.chain_id, sequence = target, %error, "cannot share the snapshot"),
    }
    Ok(payload.len())
}
