//! The venue's timers: on the node that leads a chain, they journal the command that fires each
//! dead man's switch whose time has come ([`Command::FireCancelAllAfter`]) and that cancels
//! each open order whose `expiresAt` has come ([`Command::ExpireOrder`]), and that runs each
//! TWAP slice whose time has come ([`Command::RunTwapSlice`]), and that fires the met triggers a
//! command left waiting beyond its bound ([`Command::FireMetTriggers`]), so that the firing is a journaled
//! fact that a replay or a follower applies exactly as the leader did. A follower that takes
//! over reads the same engine, so it runs the slices due from then on (a missed one is caught up
//! by the next, within the TWAP's bound).
//!
//! They decide nothing: the engine refuses a firing that is not due, whose switch was set again
//! or whose order closed meanwhile, so a late or repeated poll (or a stale leader's) changes
//! nothing.

use std::sync::Arc;
use std::time::Duration;

use dexd_core::Command;

use super::{Chain, Venue};

/// How often each chain's due switches and expiries are looked for: a switch fires (an order
/// expires) at most this late, unless more are due at once than the writer applies in that time.
pub const SWITCH_POLL_INTERVAL_MS: u64 = 100;
/// The most switches fired (or orders expired) in one round; while rounds come back full, the next round follows at
/// once (not at the next poll), so a crowd of due switches is worked off at the writer's pace
/// rather than this many per poll.
pub const MAX_SWITCHES_FIRED_PER_POLL: usize = 256;

/// The timers of every chain; they stop when this is dropped.
pub struct SwitchTimers {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl SwitchTimers {
    /// Starts one timer per chain of the venue.
    pub fn start(venue: &Venue) -> SwitchTimers {
        let tasks = venue
            .config
            .chains
            .iter()
            .filter_map(|chain| venue.chain(chain.chain_id))
            .map(|chain| tokio::spawn(run(chain)))
            .collect();
        SwitchTimers { tasks }
    }
}

impl SwitchTimers {
    /// Stops every timer (a firing queued already is journaled or not, whole).
    pub fn stop(&self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

impl Drop for SwitchTimers {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn run(chain: Arc<Chain>) {
    let mut interval = tokio::time::interval(Duration::from_millis(SWITCH_POLL_INTERVAL_MS));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        while chain.is_leading() && fire_due_round(&chain).await == MAX_SWITCHES_FIRED_PER_POLL {}
        while chain.is_leading() && expire_due_round(&chain).await == MAX_SWITCHES_FIRED_PER_POLL {}
        while chain.is_leading() && twap_slice_round(&chain).await == MAX_SWITCHES_FIRED_PER_POLL {}
        while chain.is_leading() && met_triggers_round(&chain).await {}
    }
}

/// Fires, for each pair with met triggers waiting, as many as one command fires, and waits for
/// the outcomes; returns whether any pair still has some waiting (then the next round follows at
/// once, so a crowd of met triggers is worked off at the writer's pace).
async fn met_triggers_round(chain: &Chain) -> bool {
    let pairs = chain.read_engine(|engine| engine.pairs_with_met_triggers_waiting());
    if pairs.is_empty() {
        return false;
    }
    let mut queued = Vec::with_capacity(pairs.len());
    for pair in pairs {
        match chain.enqueue(Command::FireMetTriggers { pair }, None, None) {
            Ok(write) => queued.push((pair, write)),
            Err(_) => return false,
        }
    }
    let mut applied = false;
    for (pair, write) in queued {
        match write.outcome().await {
            Ok(_) => applied = true,
            Err(error) => tracing::debug!(
                chain_id = chain.chain_id,
                pair = pair.0,
                ?error,
                "met triggers did not fire (a command fired them first, or not leading)"
            ),
        }
    }
    applied
        && !chain
            .read_engine(|engine| engine.pairs_with_met_triggers_waiting())
            .is_empty()
}

/// Fires up to [`MAX_SWITCHES_FIRED_PER_POLL`] due switches, oldest trigger first, and waits for
/// their outcomes; returns how many were due.
async fn fire_due_round(chain: &Chain) -> usize {
    let due = chain.read_engine(|engine| engine.switches().due(chain.clock.now_ms(), MAX_SWITCHES_FIRED_PER_POLL));
    let count = due.len();
    let mut queued = Vec::with_capacity(count);
    for (account, trigger_at_ms) in due {
        match chain.enqueue(Command::FireCancelAllAfter { account, trigger_at_ms }, None, None) {
            Ok(write) => queued.push((account, write)),
            // A full queue or a lost leadership: the next poll tries again (what was queued
            // fires or is refused on its own).
            Err(_) => return 0,
        }
    }
    for (account, write) in queued {
        match write.outcome().await {
            Ok(events) => tracing::info!(
                chain_id = chain.chain_id,
                %account,
                cancelled = events.len(),
                "a dead man's switch fired"
            ),
            Err(error) => tracing::debug!(
                chain_id = chain.chain_id,
                %account,
                ?error,
                "a dead man's switch did not fire (set again, or not leading)"
            ),
        }
    }
    count
}

/// Cancels up to [`MAX_SWITCHES_FIRED_PER_POLL`] open orders whose expiry has come, earliest
/// first, and waits for their outcomes; returns how many were due.
async fn expire_due_round(chain: &Chain) -> usize {
    let due = chain.read_engine(|engine| engine.due_expiries(chain.clock.now_ms(), MAX_SWITCHES_FIRED_PER_POLL));
    let count = due.len();
    let mut queued = Vec::with_capacity(count);
    for order_id in due {
        match chain.enqueue(Command::ExpireOrder { order_id }, None, None) {
            Ok(write) => queued.push((order_id, write)),
            Err(_) => return 0,
        }
    }
    for (order_id, write) in queued {
        if let Err(error) = write.outcome().await {
            tracing::debug!(
                chain_id = chain.chain_id,
                %order_id,
                ?error,
                "an expiry did not apply (the order closed first, or not leading)"
            );
        }
    }
    count
}

/// Runs up to [`MAX_SWITCHES_FIRED_PER_POLL`] due TWAP slices, the oldest due first, and waits
/// for their outcomes; returns how many were due.
async fn twap_slice_round(chain: &Chain) -> usize {
    let due = chain.read_engine(|engine| engine.due_twap_slices(chain.clock.now_ms(), MAX_SWITCHES_FIRED_PER_POLL));
    let count = due.len();
    let mut queued = Vec::with_capacity(count);
    for (twap_id, slice) in due {
        match chain.enqueue(Command::RunTwapSlice { twap_id, slice }, None, None) {
            Ok(write) => queued.push((twap_id, slice, write)),
            Err(_) => return 0,
        }
    }
    for (twap_id, slice, write) in queued {
        if let Err(error) = write.outcome().await {
            tracing::debug!(
                chain_id = chain.chain_id,
                twap_id,
                slice,
                ?error,
                "a TWAP slice did not run (the TWAP ended first, or not leading)"
            );
        }
    }
    count
}
