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
    while let Ok(batch) = queue.recv() {
        let (batch, _waits) = gather(&queue, batch);
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

/// Gathers what queues behind `batch` into one transaction's worth, in order. Under a stream of
/// small batches, short waits gather them, so that a transaction's fixed cost (commit, WAL frames
/// of the touched pages, checkpoints) spreads over more commands: the projector's CPU was about
/// a fifth of a single order's (BENCHMARKS.md, "The history's transactions under a busy
/// stream"). A batch of [`PROJECTION_COALESCE_BELOW_COMMANDS`] or more is written at once; a
/// smaller one waits [`PROJECTION_COALESCE_WAIT_MS`], and again while each wait brings more, for
/// [`PROJECTION_COALESCE_MAX_WAIT_MS`] in all, so a history read waits at most that much longer
/// for its own writes under load, and one wait under a trickle. Returns the batch and how many
/// waits it took.
fn gather(queue: &std::sync::mpsc::Receiver<Vec<Projection>>, mut batch: Vec<Projection>) -> (Vec<Projection>, u64) {
    let mut waits = 0;
    while batch.len() < PROJECTION_COALESCE_BELOW_COMMANDS
        && waits * PROJECTION_COALESCE_WAIT_MS < PROJECTION_COALESCE_MAX_WAIT_MS
    {
        std::thread::sleep(Duration::from_millis(PROJECTION_COALESCE_WAIT_MS));
        waits += 1;
        let before = batch.len();
        drain_queued(queue, &mut batch);
        if batch.len() == before {
            break;
        }
    }
    drain_queued(queue, &mut batch);
    (batch, waits)
}

/// Moves what has queued into `batch`, up to [`MAX_PROJECTION_BATCH`] commands (a queued batch
/// is never split: the last may take it past that by its own length).
fn drain_queued(queue: &std::sync::mpsc::Receiver<Vec<Projection>>, batch: &mut Vec<Projection>) {
    while batch.len() < MAX_PROJECTION_BATCH {
        match queue.try_recv() {
            Ok(more) => batch.extend(more),
            Err(_) => break,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn commands(sequences: std::ops::Range<u64>) -> Vec<Projection> {
        sequences
            .map(|sequence| Projection {
                sequence,
                events: std::sync::Arc::new(Vec::new()),
                authorization: None,
            })
            .collect()
    }

    fn sequences(batch: &[Projection]) -> Vec<u64> {
        batch.iter().map(|projection| projection.sequence).collect()
    }

    #[test]
    fn a_trickle_is_written_after_one_wait() {
        let (sender, queue) = std::sync::mpsc::channel();
        let (batch, waits) = gather(&queue, commands(1..2));
        assert_eq!((sequences(&batch), waits), (vec![1], 1));
        drop(sender);
    }

    #[test]
    fn a_large_batch_is_written_at_once_with_what_queued_behind_it() {
        let (sender, queue) = std::sync::mpsc::channel();
        let first = commands(1..(PROJECTION_COALESCE_BELOW_COMMANDS as u64 + 1));
        let next = PROJECTION_COALESCE_BELOW_COMMANDS as u64 + 1;
        sender.send(commands(next..next + 3)).expect("queued");
        let (batch, waits) = gather(&queue, first);
        assert_eq!(waits, 0);
        assert_eq!(sequences(&batch), (1..next + 3).collect::<Vec<_>>());
    }

    #[test]
    fn a_busy_stream_keeps_gathering_in_order_and_stops_at_the_longest_wait() {
        let (sender, queue) = std::sync::mpsc::channel();
        // A sender that keeps a small batch queued before every wait can end: the gathering
        // stops at the longest wait, with every command in order and none lost or doubled.
        sender.send(commands(2..3)).expect("queued");
        let feeder = std::thread::spawn(move || {
            let mut next = 3;
            let started = std::time::Instant::now();
            while started.elapsed() < Duration::from_millis(PROJECTION_COALESCE_MAX_WAIT_MS * 4) {
                if sender.send(commands(next..next + 1)).is_err() {
                    return;
                }
                next += 1;
                std::thread::sleep(Duration::from_millis(1));
            }
        });
        let (batch, waits) = gather(&queue, commands(1..2));
        drop(queue);
        feeder.join().expect("the feeder ends");
        let count = batch.len() as u64;
        assert_eq!(sequences(&batch), (1..=count).collect::<Vec<_>>());
        assert!(count > 1, "a busy stream gathers more than its first batch");
        assert!(
            waits <= PROJECTION_COALESCE_MAX_WAIT_MS / PROJECTION_COALESCE_WAIT_MS,
            "{waits} waits"
        );
    }

    #[test]
    fn what_queued_is_taken_up_to_the_largest_transaction() {
        let (sender, queue) = std::sync::mpsc::channel();
        for start in (1..=(MAX_PROJECTION_BATCH as u64 + 64)).step_by(64) {
            sender.send(commands(start..start + 64)).expect("queued");
        }
        let mut batch = Vec::new();
        drain_queued(&queue, &mut batch);
        assert_eq!(batch.len(), MAX_PROJECTION_BATCH);
        assert_eq!(sequences(&batch), (1..=MAX_PROJECTION_BATCH as u64).collect::<Vec<_>>());
        let rest = queue.try_recv().expect("the rest stays queued");
        assert_eq!(
            rest.first().map(|projection| projection.sequence),
            Some(MAX_PROJECTION_BATCH as u64 + 1)
        );
    }
}
