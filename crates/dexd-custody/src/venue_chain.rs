//! What custody needs of one chain of the venue: to read its state and to journal commands.
//!
//! The venue (the `dexd` crate) implements [`VenueChain`] for each of its chains, so custody
//! reaches the venue only through these two calls: never its writer's queue, its locks or its
//! HTTP layer. Every fact custody learns from the chain enters as a command through
//! [`VenueChain::enqueue`], so that a replay of the journal reproduces it.

use std::future::Future;
use std::pin::Pin;
use std::time::{Duration, Instant};

use dexd_core::{Command, Engine};
use dexd_store::{Events, WriteError};

/// A queued command's outcome: its events once they are journaled, or why it was not applied.
pub type Outcome = Pin<Box<dyn Future<Output = Result<Events, WriteError>> + Send>>;

/// A liability tree being built (or found built).
pub type TreeFuture = Pin<Box<dyn Future<Output = crate::liabilities::TreeResult> + Send>>;

/// The term of a node's leadership of a chain: on the embedded journal always 0 (the node is
/// the chain's only writer); on PostgreSQL the epoch of the lease the node holds, which goes up
/// each time the lease changes hands.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LeaderEpoch(pub u64);

tokio::task_local! {
    /// The leadership a custody task's poll acts under (see [`act_as_leader`]).
    static ACTING_UNDER: LeaderEpoch;
}

/// Runs one poll of a custody task (the watcher's, the payer's) as the chain's leader: `None`,
/// without running it, when this node does not lead the chain. Every command the poll journals
/// carries the epoch read here, and the writer refuses it once the node leads no longer, or
/// leads under a later epoch: what a poll decided under one leadership is never journaled under
/// another. (A transaction the poll sent before losing the lease may still be mined; the vault
/// refuses to pay a withdrawal twice, and the next leader confirms what it finds paid.)
pub async fn act_as_leader<F: Future>(chain: &dyn VenueChain, poll: F) -> Option<F::Output> {
    let epoch = chain.leader_epoch()?;
    Some(ACTING_UNDER.scope(epoch, poll).await)
}

/// The leadership the current custody poll acts under, if it runs in [`act_as_leader`].
pub(crate) fn acting_under() -> Option<LeaderEpoch> {
    ACTING_UNDER.try_with(|epoch| *epoch).ok()
}

/// Where a state of the engine stands against the journal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct StatePosition {
    /// How many times the engine was rebuilt from the journal after an append failed: the
    /// sequences of the lost batch are used again after a rebuild, so they compare only within
    /// one rebuild.
    pub rebuilds: u64,
    /// The last journal sequence applied to the state (of a read) or journaled (of the journal).
    pub sequence: u64,
}

impl StatePosition {
    /// Whether everything of the state `read` saw is in the journal this position describes.
    pub fn holds(self, read: StatePosition) -> bool {
        self.rebuilds == read.rebuilds && self.sequence >= read.sequence
    }
}

/// A chain of the venue, as custody sees it.
pub trait VenueChain: Send + Sync {
    /// Runs `read` on the chain's engine (under a short read lock; it must not block), and
    /// says where the state it read stands. The engine changes before its batch is journaled
    /// (the writer applies, then appends), so a read may see what is not durable yet.
    fn read_engine(&self, read: &mut dyn FnMut(&Engine)) -> StatePosition;

    /// Where the journal stands: what has been durably appended.
    fn durable_position(&self) -> StatePosition;

    /// The epoch under which this node leads the chain; `None` while another node leads it (a
    /// cluster's follower), when custody sends nothing and journals nothing.
    fn leader_epoch(&self) -> Option<LeaderEpoch>;

    /// Puts a command in the chain's write queue now, without waiting: commands enqueued one
    /// after the other are applied in that order (the watcher relies on it to credit a backlog of
    /// deposits in the vault's order). Refused at once when the queue is full. With `under`,
    /// the writer applies it only while the node leads under that epoch
    /// ([`WriteError::NotLeader`] otherwise).
    fn enqueue(&self, command: Command, under: Option<LeaderEpoch>) -> Result<Outcome, WriteError>;

    /// The liability tree at `journal_sequence` (durable: at most the journal's end), built
    /// off the writer's path from the journal, or kept from an earlier ask.
    fn liability_tree(&self, journal_sequence: u64) -> TreeFuture;

    /// Tells the venue's clock a block time custody read (ms since the Unix epoch): every
    /// command journaled after this call is stamped at or after it, so that a chain event is
    /// never journaled earlier than its block.
    fn note_chain_time_ms(&self, block_time_ms: u64);
}

/// Enqueues a command (see [`VenueChain::enqueue`]) under the leadership the current custody
/// poll acts under, if any.
pub fn enqueue(chain: &dyn VenueChain, command: Command) -> Result<Outcome, WriteError> {
    chain.enqueue(command, acting_under())
}

/// Reads the chain's engine and returns what `read` made of it.
pub fn read_engine<R>(chain: &dyn VenueChain, read: impl FnOnce(&Engine) -> R) -> R {
    let mut read = Some(read);
    let mut result = None;
    chain.read_engine(&mut |engine| {
        if let Some(read) = read.take() {
            result = Some(read(engine));
        }
    });
    result.expect("invariant: a venue chain runs the read it is given")
}

/// How often [`read_durable_engine`] looks whether the journal has caught up with its read.
const DURABLE_POLL_MS: u64 = 2;

/// Reads the chain's engine like [`read_engine`], and returns what `read` made of it once the
/// journal holds all of that state: what is acted on outside the venue (a payment) must never
/// come from a change that a failed append takes back. `None` when the journal does not get
/// there within `wait`, or never will (the append failed and the engine was rebuilt): the caller
/// reads again later.
pub async fn read_durable_engine<R>(
    chain: &dyn VenueChain,
    read: impl FnOnce(&Engine) -> R,
    wait: Duration,
) -> Option<R> {
    let mut read = Some(read);
    let mut result = None;
    let position = chain.read_engine(&mut |engine| {
        if let Some(read) = read.take() {
            result = Some(read(engine));
        }
    });
    let deadline = Instant::now() + wait;
    loop {
        let durable = chain.durable_position();
        if durable.holds(position) {
            return result;
        }
        if durable.rebuilds != position.rebuilds || Instant::now() >= deadline {
            return None;
        }
        tokio::time::sleep(Duration::from_millis(DURABLE_POLL_MS)).await;
    }
}

/// Journals a command and waits for its outcome.
pub async fn submit(chain: &dyn VenueChain, command: Command) -> Result<Events, WriteError> {
    enqueue(chain, command)?.await
}

#[cfg(test)]
mod tests {
    use super::StatePosition;

    #[test]
    fn a_read_is_durable_only_within_the_same_rebuild_and_up_to_the_journal() {
        let journal = StatePosition {
            rebuilds: 1,
            sequence: 10,
        };
        let at = |rebuilds, sequence| StatePosition { rebuilds, sequence };
        assert!(journal.holds(at(1, 10)));
        assert!(journal.holds(at(1, 3)));
        assert!(!journal.holds(at(1, 11)), "applied, not yet journaled");
        assert!(
            !journal.holds(at(0, 5)),
            "read before a rebuild: its sequences were used again"
        );
    }
}
