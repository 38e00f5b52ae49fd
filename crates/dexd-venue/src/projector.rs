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
/// How long a small projector batch waits for more.
pub const PROJECTION_COALESCE_WAIT_MS: u64 = 5;

/// Writes the history tables from the journaled batches, merging what has queued into one
/// transaction. A failed write is retried: the history only ever moves forward, in order.
pub(crate) fn run_projector(
    chain_id: u64,
    queue: std::sync::mpsc::Receiver<Vec<Projection>>,
    mut projector: Projector,
    projected: watch::Sender<u64>,
) {
    while let Ok(mut batch) = queue.recv() {
        // Under a trickle of small batches, a short wait gathers them into one transaction,
        // whose fixed cost (commit, WAL frames of the touched pages) then spreads over more
        // commands. A history read waits at most this much longer for its own writes.
        if batch.len() < PROJECTION_COALESCE_BELOW_COMMANDS {
            std::thread::sleep(Duration::from_millis(PROJECTION_COALESCE_WAIT_MS));
        }
        while batch.len() < MAX_PROJECTION_BATCH {
            match queue.try_recv() {
                Ok(more) => batch.extend(more),
                Err(_) => break,
            }
        }
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
