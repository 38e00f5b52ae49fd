//! A chain's projector thread: writes the history tables from the journaled batches the writer
//! hands it, gathering small batches into larger transactions, and reports how far it got (the
//! read barrier of history reads waits on that).
//!
//! It never touches the journal or the engine.

use std::time::Duration;

use tokio::sync::watch;

use dexd_store::{Projection, Projector, MAX_PROJECTION_BATCH};

/// How many journaled batches may wait for the projector; past this the writer waits, so the
/// write queue fills and new writes are refused (503) rather than history falling far behind.
pub const MAX_PROJECTION_BACKLOG_BATCHES: usize = 64;
/// A projector batch smaller than this waits [`PROJECTION_COALESCE_WAIT_MS`] for more.
pub const PROJECTION_COALESCE_BELOW_COMMANDS: usize = 256;
/// How long a small projector batch waits for more, each time.
pub const PROJECTION_COALESCE_WAIT_MS: u64 = 5;
/// How long in all a small batch keeps waiting while more keeps coming: a stream of commands
/// that is busy but below [`PROJECTION_COALESCE_BELOW_COMMANDS`] a wait (single orders at
/// 10,000 a second bring 50) gathers into transactions up to this old; a trickle, where a
/// wait brings nothing, is written after one wait.
pub const PROJECTION_COALESCE_MAX_WAIT_MS: u64 = 25;

/// Writes the history tables from the journaled batches, merging what has queued into one
/// transaction. A failed write is retried: the history only ever moves forward, in order.
pub(crate) fn run_projector(
    chain_id: u64,
    queue: std::sync::mpsc::Receiver<Vec<Projection>>,
    mut projector: Projector,
    projected: watch::Sender<u64>,
) {
    while let Ok(mut batch) = queue.recv() {
        // Under a stream of small batches, short waits gather them into one transaction, whose
        // fixed cost (commit, WAL frames of the touched pages, checkpoints) then spreads over
        // more commands: the projector's CPU is about a fifth of a single order's (BENCHMARKS.md).
        // A history read waits at most PROJECTION_COALESCE_MAX_WAIT_MS longer for its own
        // writes, and under a trickle PROJECTION_COALESCE_WAIT_MS.
        let mut waited_ms = 0;
        while batch.len() < PROJECTION_COALESCE_BELOW_COMMANDS && waited_ms < PROJECTION_COALESCE_MAX_WAIT_MS {
            std::thread::sleep(Duration::from_millis(PROJECTION_COALESCE_WAIT_MS));
            waited_ms += PROJECTION_COALESCE_WAIT_MS;
            let before = batch.len();
            drain_queued(&queue, &mut batch);
            if batch.len() == before {
                break;
            }
        }
        drain_queued(&queue, &mut batch);
        while let Err(error) = projector.project(&batch) {
            tracing::error!(chain_id, %error, "writing the history failed; retrying");
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Some(last) = batch.last() {
            projected.send_replace(last.sequence);
        }
    }
    // The writer is gone and every batch it journaled is written: the history is complete.
    match projector.close_cleanly() {
        Ok(()) => tracing::info!(chain_id, "the history is on disk and closed cleanly"),
        Err(error) => {
            tracing::warn!(chain_id, %error, "closing the history cleanly failed; it is rebuilt after a restart of the machine")
        }
    }
}

/// Moves what has queued into `batch`, up to [`MAX_PROJECTION_BATCH`] commands.
fn drain_queued(queue: &std::sync::mpsc::Receiver<Vec<Projection>>, batch: &mut Vec<Projection>) {
    while batch.len() < MAX_PROJECTION_BATCH {
        match queue.try_recv() {
            Ok(more) => batch.extend(more),
            Err(_) => break,
        }
    }
}
