//! The venue's clock: the time the writer stamps on every journaled command.
//!
//! It is the wall clock, except that it is never behind the newest block time the chain's
//! custody has seen: a chain event (a deposit, a request made on chain, a payment, a root) is
//! journaled no earlier than the block it happened in, which the auditor checks. On a real chain
//! a block's time is at or behind the wall clock and this changes nothing; on a chain whose
//! blocks run ahead (a devnet that warps its time, a node's clock off by seconds) the venue's
//! clock follows the chain's. It never runs backwards. The timers that fire the engine's
//! expiries and switches read it too, so that one clock decides what is due.
//!
//! It does not read the chain: custody tells it the block times it has read.

use std::sync::atomic::{AtomicU64, Ordering};

/// The wall clock, held at or past the newest block time the chain's custody reported.
#[derive(Debug, Default)]
pub struct VenueClock {
    /// The newest block time reported, in ms since the Unix epoch (0 before any).
    chain_time_floor_ms: AtomicU64,
}

impl VenueClock {
    /// The venue's time in ms since the Unix epoch.
    pub fn now_ms(&self) -> u64 {
        dexd_store::now_ms().max(self.chain_time_floor_ms.load(Ordering::Acquire))
    }

    /// Holds the clock at or past `block_time_ms`, a block time custody read from the chain;
    /// an earlier time than one already reported changes nothing.
    pub fn note_chain_time_ms(&self, block_time_ms: u64) {
        self.chain_time_floor_ms.fetch_max(block_time_ms, Ordering::AcqRel);
    }
}

#[cfg(test)]
mod tests {
    use super::VenueClock;

    #[test]
    fn the_clock_follows_a_chain_ahead_of_the_wall_and_never_runs_back() {
        let clock = VenueClock::default();
        let wall = dexd_store::now_ms();
        assert!(clock.now_ms() >= wall);
        let ahead = wall + 3_600_000;
        clock.note_chain_time_ms(ahead);
        assert!(clock.now_ms() >= ahead);
        clock.note_chain_time_ms(wall);
        assert!(
            clock.now_ms() >= ahead,
            "an older block time does not pull the clock back"
        );
    }
}
