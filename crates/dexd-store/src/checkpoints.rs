//! When the SQLite journal's WAL is copied into its database file: every
//! [`JOURNAL_CHECKPOINT_INTERVAL_COMMANDS`], in two steps so that the writer is not held up by
//! the bulk of it. A checkpointer thread, with its own connection, copies the WAL into the file
//! and syncs it while the writer goes on committing; then the writer, between batches, copies
//! what was appended meanwhile, after which the WAL starts over. (A checkpoint only from another
//! thread never catches up with a busy writer, and the WAL then grows without end.) A failure is
//! retried at the next interval, the WAL growing meanwhile.
//!
//! The checkpointer's connection is a [`JournalCheckpointer`]. This module does not append or
//! read the journal; [`crate::StoreWriter`] runs it between
//! batches.

use std::sync::mpsc::{sync_channel, Receiver, SyncSender, TryRecvError, TrySendError};
use std::time::Instant;

use rusqlite::Connection;

use super::database::StoreError;

/// How many journaled commands pass between two checkpoints of the journal, which the writer
/// finishes between batches after answering one: each checkpoint writes the journal's new pages
/// to its file and syncs it, so running it after every batch would double the syncs, and the
/// writer's part holds every write while it runs: fewer, larger checkpoints keep those pauses
/// out of most placements' latency (BENCHMARKS.md, "Over HTTP"). The cost: the WAL file grows
/// between checkpoints (it is reused, not regrown, after each).
pub const JOURNAL_CHECKPOINT_INTERVAL_COMMANDS: usize = 32_768;

/// The state of a journal's checkpoints.
pub(crate) struct CheckpointSchedule {
    chain_id: u64,
    /// The journal sequence the last checkpoint reached.
    checkpointed_through: u64,
    /// Asks the checkpointer thread to copy the bulk of the WAL; `None` without a thread, and
    /// then the writer does the whole checkpoint itself.
    requests: Option<SyncSender<()>>,
    /// The thread's answer once it has copied.
    copied: Option<Receiver<()>>,
    /// Whether the thread has been asked and has not answered yet.
    in_progress: bool,
}

/// What the writer does now.
pub(crate) enum CheckpointStep {
    /// Nothing: not due, or the thread is still copying.
    Nothing,
    /// The writer's part: copy what is left in the WAL (through `journaled_through`).
    Finish,
}

impl CheckpointSchedule {
    /// A schedule whose bulk copies run on a thread of their own with `checkpointer`.
    pub(crate) fn with_thread(chain_id: u64, journaled_through: u64, checkpointer: JournalCheckpointer) -> Self {
        let (requests, requested) = sync_channel::<()>(1);
        let (copied_sender, copied) = sync_channel::<()>(1);
        std::thread::Builder::new()
            .name(format!("checkpointer-{chain_id}"))
            .spawn(move || {
                while requested.recv().is_ok() {
                    if let Err(error) = checkpointer.checkpoint() {
                        tracing::warn!(chain_id, %error, "checkpointing the journal failed");
                    }
                    if copied_sender.send(()).is_err() {
                        break;
                    }
                }
            })
            .expect("the checkpointer thread starts");
        CheckpointSchedule {
            chain_id,
            checkpointed_through: journaled_through,
            requests: Some(requests),
            copied: Some(copied),
            in_progress: false,
        }
    }

    /// What to do between batches, the journal having reached `journaled_through`.
    pub(crate) fn step(&mut self, journaled_through: u64) -> CheckpointStep {
        if self.in_progress {
            return match self.copied.as_ref().map(Receiver::try_recv) {
                Some(Err(TryRecvError::Empty)) => CheckpointStep::Nothing,
                _ => CheckpointStep::Finish,
            };
        }
        if journaled_through.saturating_sub(self.checkpointed_through) < JOURNAL_CHECKPOINT_INTERVAL_COMMANDS as u64 {
            return CheckpointStep::Nothing;
        }
        match self.requests.as_ref().map(|requests| requests.try_send(())) {
            Some(Ok(())) => {
                self.in_progress = true;
                CheckpointStep::Nothing
            }
            Some(Err(TrySendError::Full(()))) => CheckpointStep::Nothing,
            // Without its thread, the writer does the whole checkpoint itself.
            Some(Err(TrySendError::Disconnected(()))) | None => CheckpointStep::Finish,
        }
    }

    /// Records the writer's part of a checkpoint, started at `started`, and its outcome.
    pub(crate) fn finished(&mut self, journaled_through: u64, started: Instant, outcome: Result<(), StoreError>) {
        self.in_progress = false;
        match outcome {
            Ok(()) => {
                self.checkpointed_through = journaled_through;
                let checkpoint_us = started.elapsed().as_micros() as u64;
                tracing::debug!(chain_id = self.chain_id, checkpoint_us, "journal checkpointed");
            }
            Err(error) => tracing::warn!(chain_id = self.chain_id, %error, "checkpointing the journal failed"),
        }
    }
}

/// Copies the WAL into the database file as far as it can without waiting for anyone.
pub(crate) fn checkpoint_passive(connection: &Connection) -> Result<(), StoreError> {
    let (busy, wal_frames, checkpointed_frames): (i64, i64, i64) =
        connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
    if busy != 0 || wal_frames != checkpointed_frames {
        tracing::debug!(
            wal_frames,
            checkpointed_frames,
            "the journal checkpoint did not complete"
        );
    }
    Ok(())
}

/// A connection to a chain's journal that only checkpoints it, on a thread of its own: it copies
/// the bulk of the WAL into the database file and syncs it while the writer goes on committing. The writer then finishes with a short checkpoint of what
/// was appended meanwhile (`StoreWriter::checkpoint`), after which the WAL starts over: a
/// checkpoint that never catches up with a busy writer lets the WAL grow without end.
pub struct JournalCheckpointer {
    pub(crate) connection: Connection,
}

impl JournalCheckpointer {
    /// Copies what the WAL holds now into the database file and syncs it.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        checkpoint_passive(&self.connection)
    }
}
