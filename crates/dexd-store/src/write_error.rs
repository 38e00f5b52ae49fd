//! Why a state change was not applied: the one error every writer of a chain answers with.
//!
//! The API turns it into the contract's error bodies (422 for a refusal, 503 for the rest);
//! custody retries what was not durable. It carries nothing of the request.

use dexd_core::Rejection;

/// Why a state change was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The engine refused it.
    Rejected(Rejection),
    /// The chain's write queue is full; nothing was applied.
    QueueFull,
    /// The store could not make the change durable (full or read-only disk, locked database,
    /// or the writer is gone); nothing was applied.
    NotDurable,
    /// The history did not catch up with the acknowledged changes in time.
    HistoryBehind,
    /// This node does not lead the chain (its journal is shared and another node holds the
    /// chain's lease, or none does for the moment); nothing was applied.
    NotLeader,
}
