//! What custody needs of one chain of the venue: to read its state and to journal commands.
//!
//! The venue (the `dexd` crate) implements [`VenueChain`] for each of its chains, so custody
//! reaches the venue only through these two calls: never its writer's queue, its locks or its
//! HTTP layer. Every fact custody learns from the chain enters as a command through
//! [`VenueChain::enqueue`], so that a replay of the journal reproduces it.

use std::future::Future;
use std::pin::Pin;

use dexd_core::{Command, Engine};
use dexd_store::{Events, WriteError};

/// A queued command's outcome: its events once they are journaled, or why it was not applied.
pub type Outcome = Pin<Box<dyn Future<Output = Result<Events, WriteError>> + Send>>;

/// A chain of the venue, as custody sees it.
pub trait VenueChain: Send + Sync {
    /// Runs `read` on the chain's engine (under a short read lock; it must not block).
    fn read_engine(&self, read: &mut dyn FnMut(&Engine));

    /// Puts a command in the chain's write queue now, without waiting: commands enqueued one
    /// after the other are applied in that order (the watcher relies on it to credit a backlog of
    /// deposits in the vault's order). Refused at once when the queue is full.
    fn enqueue(&self, command: Command) -> Result<Outcome, WriteError>;
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

/// Journals a command and waits for its outcome.
pub async fn submit(chain: &dyn VenueChain, command: Command) -> Result<Events, WriteError> {
    chain.enqueue(command)?.await
}
