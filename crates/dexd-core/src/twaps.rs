//! TWAP orders (contract version 5): a parent order the venue slices over time, and the
//! registry of a chain's running and recently finished ones.
//!
//! A TWAP trades `quantity` over `duration_ms` in `duration_ms / interval_ms` slices; slice `k`
//! is due at `started_at_ms + k × interval_ms`. Each slice is an immediate-or-cancel order for
//! the remaining quantity divided by the slices left, rounded up to a lot, never more than
//! [`TWAP_CATCH_UP_MULTIPLE`] times the planned slice: after slices were missed (no liquidity
//! within the limit, a balance too small, a leader down for a while) the later ones catch up,
//! within that bound. A slice's limit is the TWAP's `limit_price`, or without one, at most
//! [`TWAP_MARKET_SLIPPAGE_BASIS_POINTS`] through the best opposite price when it runs.
//!
//! This module holds the data, the bounds and the arithmetic of a slice. It places nothing: the
//! engine (`engine::twaps`) runs a slice when the venue's timer journals one, so replay and a
//! follower taking over reproduce every slice. Funds are not reserved for a TWAP: each slice is
//! checked against the balance when it runs, as any order is.

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use rustc_hash::FxHashMap;
use sha3::{Digest, Keccak256};

use crate::money::{Address, Amount, OrderId, PairIndex, Price, Quantity};
use crate::order::Direction;
use crate::state_hash::StateHasher;

/// The shortest TWAP, in ms (5 minutes).
pub const MIN_TWAP_DURATION_MS: u64 = 300_000;
/// The longest TWAP, in ms (24 hours).
pub const MAX_TWAP_DURATION_MS: u64 = 86_400_000;
/// The shortest time between two slices, in ms.
pub const MIN_TWAP_INTERVAL_MS: u64 = 30_000;
/// The longest time between two slices, in ms (1 hour).
pub const MAX_TWAP_INTERVAL_MS: u64 = 3_600_000;
/// A slice is never more than this many times the planned slice (`quantity / slices`).
pub const TWAP_CATCH_UP_MULTIPLE: u64 = 3;
/// Without a limit price, a slice trades at most this far through the best opposite price, in
/// hundredths of a percent (3 %).
pub const TWAP_MARKET_SLIPPAGE_BASIS_POINTS: u64 = 300;
/// The most running TWAPs of one account on one pair.
pub const MAX_RUNNING_TWAPS_PER_ACCOUNT_AND_PAIR: usize = 5;
/// The most running TWAPs on one chain: each costs the venue's timer a look every slice.
pub const MAX_RUNNING_TWAPS: usize = 10_000;
/// How many finished (completed or cancelled) TWAPs of each account are kept for `GET
/// /order/twaps`; an older one is forgotten when a newer one finishes.
pub const MAX_FINISHED_TWAPS_KEPT_PER_ACCOUNT: usize = 20;
/// The longest `clientTwapId`, in characters (`A-Z a-z 0-9 . _ : -`).
pub const MAX_CLIENT_TWAP_ID_CHARACTERS: usize = 64;

/// Whether `id` is a valid `clientTwapId`: 1 to [`MAX_CLIENT_TWAP_ID_CHARACTERS`] of
/// `A-Z a-z 0-9 . _ : -`.
pub fn is_valid_client_twap_id(id: &str) -> bool {
    crate::subaccounts::is_valid_client_transfer_id(id) && id.len() <= MAX_CLIENT_TWAP_ID_CHARACTERS
}

/// What an account asks for when it starts a TWAP.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewTwap {
    /// Whose (a subaccount's address when it trades in one).
    pub account: Address,
    /// On which pair.
    pub pair: PairIndex,
    /// Buy or sell.
    pub direction: Direction,
    /// How much base in all, in lots.
    pub quantity: Quantity,
    /// How long, in ms: [`MIN_TWAP_DURATION_MS`] to [`MAX_TWAP_DURATION_MS`].
    pub duration_ms: u64,
    /// The time between slices, in ms: [`MIN_TWAP_INTERVAL_MS`] to [`MAX_TWAP_INTERVAL_MS`],
    /// dividing `duration_ms`.
    pub interval_ms: u64,
    /// No slice buys above (sells below) this; `None`: at most
    /// [`TWAP_MARKET_SLIPPAGE_BASIS_POINTS`] through the best price.
    pub limit_price: Option<Price>,
    /// The account's own id of the TWAP, unique among its kept TWAPs.
    pub client_twap_id: Option<String>,
}

impl NewTwap {
    /// How many slices the TWAP plans.
    pub fn slice_count(&self) -> u32 {
        u32::try_from(self.duration_ms / self.interval_ms.max(1)).unwrap_or(u32::MAX)
    }

    /// The planned slice: the quantity over the slices, rounded up to a lot.
    pub fn planned_slice_rounded_up(&self) -> Quantity {
        Quantity::from_lots(self.quantity.lots().div_ceil(u64::from(self.slice_count().max(1))))
    }

    /// The bounds of the contract, checked; `Err` names what is wrong.
    pub fn check_bounds(&self) -> Result<(), &'static str> {
        if !(MIN_TWAP_DURATION_MS..=MAX_TWAP_DURATION_MS).contains(&self.duration_ms) {
            return Err("durationMs must be 300000 to 86400000");
        }
        if !(MIN_TWAP_INTERVAL_MS..=MAX_TWAP_INTERVAL_MS).contains(&self.interval_ms) {
            return Err("intervalMs must be 30000 to 3600000");
        }
        if !self.duration_ms.is_multiple_of(self.interval_ms) {
            return Err("intervalMs must divide durationMs");
        }
        if self.quantity.is_zero() {
            return Err("the amount must be positive");
        }
        if self
            .client_twap_id
            .as_deref()
            .is_some_and(|id| !is_valid_client_twap_id(id))
        {
            return Err("clientTwapId must be 1 to 64 of A-Z a-z 0-9 . _ : -");
        }
        Ok(())
    }
}

/// Where a TWAP is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TwapStatus {
    /// Slices are still to come.
    Running = 0,
    /// Its last slice ran, or it filled whole.
    Completed = 1,
    /// Its account cancelled it.
    Cancelled = 2,
}

/// A TWAP as the engine keeps it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TwapRecord {
    /// The chain's number of the TWAP, from 1.
    pub twap_id: u64,
    /// What was asked.
    pub terms: NewTwap,
    /// When it started, in ms since the epoch: slice `k` is due `k × interval_ms` later.
    pub started_at_ms: u64,
    /// Running, completed or cancelled.
    pub status: TwapStatus,
    /// The base its slices filled, in lots.
    pub filled: Quantity,
    /// The quote value of those fills, in quote units.
    pub cost: Amount,
    /// How many slices ran (placed an order or found nothing to trade).
    pub slices_run: u32,
    /// The lowest slice number that may still run (every lower one ran or was passed over).
    pub next_slice: u32,
    /// When it last changed, in ms since the epoch.
    pub updated_at_ms: u64,
}

impl TwapRecord {
    /// The base still to trade.
    pub fn remaining(&self) -> Quantity {
        self.terms
            .quantity
            .checked_sub(self.filled)
            .expect("invariant: a TWAP never fills more than its quantity")
    }

    /// When slice `slice` is due, in ms since the epoch.
    pub fn slice_due_at_ms(&self, slice: u32) -> u64 {
        self.started_at_ms
            .saturating_add(u64::from(slice).saturating_mul(self.terms.interval_ms))
    }

    /// The slice due now: the latest whose time has come (those before it and not run are
    /// passed over; what they would have traded falls to the later ones), or `None` when none
    /// is due (or the TWAP is not running).
    pub fn slice_due(&self, now_ms: u64) -> Option<u32> {
        if self.status != TwapStatus::Running || now_ms < self.slice_due_at_ms(self.next_slice) {
            return None;
        }
        let elapsed_slices = (now_ms - self.started_at_ms) / self.terms.interval_ms;
        let last = self.terms.slice_count().saturating_sub(1);
        Some(u32::try_from(elapsed_slices).unwrap_or(u32::MAX).min(last))
    }

    /// The quantity of slice `slice`: the remaining quantity over the slices left (this one
    /// included), rounded up to a lot, at most [`TWAP_CATCH_UP_MULTIPLE`] planned slices and
    /// at most what remains.
    pub fn slice_quantity(&self, slice: u32) -> Quantity {
        let slices_left = u64::from(self.terms.slice_count().saturating_sub(slice).max(1));
        let remaining = self.remaining().lots();
        let cap = self
            .terms
            .planned_slice_rounded_up()
            .lots()
            .saturating_mul(TWAP_CATCH_UP_MULTIPLE);
        Quantity::from_lots(remaining.div_ceil(slices_left).min(cap).min(remaining))
    }

    /// The id of slice `slice`'s order: keccak-256 of a domain tag, the TWAP's number and the
    /// slice's, so that it is the same in every replay and cannot be any signed order's (those
    /// are EIP-712 digests, which begin otherwise).
    pub fn slice_order_id(&self, slice: u32) -> OrderId {
        let mut hasher = Keccak256::new();
        hasher.update(b"dexd.twap-slice");
        hasher.update(self.twap_id.to_be_bytes());
        hasher.update(slice.to_be_bytes());
        OrderId::from_bytes(hasher.finalize().into())
    }
}

/// A slice's limit price without a TWAP limit: `best` moved
/// [`TWAP_MARKET_SLIPPAGE_BASIS_POINTS`] against the taker, rounded towards `best` to a whole
/// tick (so that it is never further than the bound).
pub fn market_slice_price(direction: Direction, best: Price) -> Option<Price> {
    let ticks = u128::from(best.ticks());
    let moved = match direction {
        Direction::Buy => ticks * u128::from(10_000 + TWAP_MARKET_SLIPPAGE_BASIS_POINTS) / 10_000,
        Direction::Sell => (ticks * u128::from(10_000 - TWAP_MARKET_SLIPPAGE_BASIS_POINTS)).div_ceil(10_000),
    };
    Price::from_ticks(u64::try_from(moved).ok()?)
}

/// Why a TWAP command is refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TwapRejection {
    /// Terms out of the contract's bounds.
    Invalid(&'static str),
    /// The account runs [`MAX_RUNNING_TWAPS_PER_ACCOUNT_AND_PAIR`] on the pair, or the chain
    /// runs [`MAX_RUNNING_TWAPS`].
    TooMany,
    /// The account used this `clientTwapId` for a TWAP it still has.
    ClientIdReused,
    /// No running TWAP of the account has that id.
    NotFound,
    /// The TWAP finished already.
    NotRunning,
    /// The slice is not the one due (run already, passed over, or not yet due).
    SliceNotDue,
}

/// A chain's TWAPs as plain data (a snapshot's).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct TwapsState {
    /// Every kept TWAP, running or finished, by id.
    pub twaps: Vec<TwapRecord>,
    /// The id the next TWAP gets (0 read as 1).
    pub next_twap_id: u64,
}

/// The running TWAPs of a chain and each account's recently finished ones.
#[derive(Clone, Debug, Default)]
pub struct TwapRegistry {
    /// Every kept TWAP by id.
    twaps: BTreeMap<u64, TwapRecord>,
    /// The running ones' ids, by account and pair.
    running_by_account_pair: FxHashMap<(Address, PairIndex), Vec<u64>>,
    /// Each account's finished TWAPs, oldest first (at most
    /// [`MAX_FINISHED_TWAPS_KEPT_PER_ACCOUNT`]).
    finished_by_account: FxHashMap<Address, VecDeque<u64>>,
    /// The running ones by when their next slice is due, then id: what the timer reads.
    schedule: BTreeSet<(u64, u64)>,
    running_count: usize,
    next_twap_id: u64,
}

impl TwapRegistry {
    /// Whether the chain has, and has had, no TWAP.
    pub fn is_empty(&self) -> bool {
        self.twaps.is_empty() && self.next_twap_id <= 1
    }

    /// How many are running.
    pub fn running_count(&self) -> usize {
        self.running_count
    }

    /// A kept TWAP.
    pub fn get(&self, twap_id: u64) -> Option<&TwapRecord> {
        self.twaps.get(&twap_id)
    }

    /// The kept TWAP of `account` with `client_twap_id`.
    pub fn by_client_id<'a>(&'a self, account: &'a Address, client_twap_id: &str) -> Option<&'a TwapRecord> {
        self.of_account(account)
            .find(|twap| twap.terms.client_twap_id.as_deref() == Some(client_twap_id))
    }

    /// The kept TWAPs of `account`, running first, then newest first.
    pub fn of_account<'a>(&'a self, account: &'a Address) -> impl Iterator<Item = &'a TwapRecord> + 'a {
        let running = self
            .running_by_account_pair
            .iter()
            .filter(move |((owner, _), _)| owner == account)
            .flat_map(|(_, ids)| ids.iter().copied());
        let mut running: Vec<u64> = running.collect();
        running.sort_unstable_by(|a, b| b.cmp(a));
        let finished = self
            .finished_by_account
            .get(account)
            .into_iter()
            .flat_map(|ids| ids.iter().rev().copied());
        running
            .into_iter()
            .chain(finished)
            .filter_map(move |twap_id| self.twaps.get(&twap_id))
    }

    /// The running TWAPs with a slice due at `now_ms`, at most `limit`, the earliest due first:
    /// `(twap_id, slice)`, what the venue's timer journals.
    pub fn due(&self, now_ms: u64, limit: usize) -> Vec<(u64, u32)> {
        self.schedule
            .range(..=(now_ms, u64::MAX))
            .filter_map(|(_, twap_id)| {
                let twap = self.twaps.get(twap_id)?;
                twap.slice_due(now_ms).map(|slice| (*twap_id, slice))
            })
            .take(limit)
            .collect()
    }

    /// Checks that `terms` may start now: bounds, the running limits and the client id.
    pub fn check_start(&self, terms: &NewTwap) -> Result<(), TwapRejection> {
        terms.check_bounds().map_err(TwapRejection::Invalid)?;
        let running_here = self
            .running_by_account_pair
            .get(&(terms.account, terms.pair))
            .map_or(0, Vec::len);
        if running_here >= MAX_RUNNING_TWAPS_PER_ACCOUNT_AND_PAIR || self.running_count >= MAX_RUNNING_TWAPS {
            return Err(TwapRejection::TooMany);
        }
        if let Some(client_twap_id) = &terms.client_twap_id {
            if self.by_client_id(&terms.account, client_twap_id).is_some() {
                return Err(TwapRejection::ClientIdReused);
            }
        }
        Ok(())
    }

    /// Starts a TWAP [`TwapRegistry::check_start`] accepted; returns it.
    pub fn start(&mut self, terms: NewTwap, now_ms: u64) -> TwapRecord {
        let twap_id = self.next_twap_id.max(1);
        self.next_twap_id = twap_id + 1;
        let record = TwapRecord {
            twap_id,
            terms,
            started_at_ms: now_ms,
            status: TwapStatus::Running,
            filled: Quantity::ZERO,
            cost: Amount::ZERO,
            slices_run: 0,
            next_slice: 0,
            updated_at_ms: now_ms,
        };
        self.insert(record.clone());
        record
    }

    /// The running TWAP `twap_id` of `account` (any account's when `None`).
    pub fn running(&self, account: Option<&Address>, twap_id: u64) -> Result<&TwapRecord, TwapRejection> {
        match self.twaps.get(&twap_id) {
            Some(twap) if account.is_none_or(|account| twap.terms.account == *account) => match twap.status {
                TwapStatus::Running => Ok(twap),
                _ => Err(TwapRejection::NotRunning),
            },
            _ => Err(TwapRejection::NotFound),
        }
    }

    /// Records that slice `slice` of the running TWAP `twap_id` ran at `now_ms` and filled
    /// `filled` for `cost`; returns the TWAP as it now is (still running: the caller finishes
    /// it when it is done).
    pub fn record_slice(
        &mut self,
        twap_id: u64,
        slice: u32,
        (filled, cost): (Quantity, Amount),
        now_ms: u64,
    ) -> &TwapRecord {
        let twap = self
            .twaps
            .get_mut(&twap_id)
            .expect("invariant: a slice runs for a kept TWAP");
        assert!(
            twap.status == TwapStatus::Running && slice >= twap.next_slice,
            "invariant: a slice runs once, for a running TWAP"
        );
        self.schedule.remove(&(twap.slice_due_at_ms(twap.next_slice), twap_id));
        twap.filled = twap
            .filled
            .checked_add(filled)
            .filter(|total| *total <= twap.terms.quantity)
            .expect("invariant: a slice never fills more than the TWAP's remainder");
        twap.cost = twap.cost.checked_add(cost).expect("a TWAP's cost fits");
        twap.slices_run += 1;
        twap.next_slice = slice + 1;
        twap.updated_at_ms = now_ms;
        self.schedule.insert((twap.slice_due_at_ms(twap.next_slice), twap_id));
        twap
    }

    /// Whether a running TWAP has no slice left to run, or nothing left to trade.
    pub fn is_done(twap: &TwapRecord) -> bool {
        twap.next_slice >= twap.terms.slice_count() || twap.remaining().is_zero()
    }

    /// Records that the running TWAP `twap_id` ended with `status`; the account's oldest
    /// finished one is forgotten beyond [`MAX_FINISHED_TWAPS_KEPT_PER_ACCOUNT`].
    pub fn finish(&mut self, twap_id: u64, status: TwapStatus, now_ms: u64) {
        let twap = self
            .twaps
            .get_mut(&twap_id)
            .expect("invariant: a TWAP finished is kept");
        assert_eq!(
            twap.status,
            TwapStatus::Running,
            "invariant: only a running TWAP finishes"
        );
        self.schedule.remove(&(twap.slice_due_at_ms(twap.next_slice), twap_id));
        twap.status = status;
        twap.updated_at_ms = now_ms;
        let key = (twap.terms.account, twap.terms.pair);
        let account = twap.terms.account;
        let running = self
            .running_by_account_pair
            .get_mut(&key)
            .expect("invariant: a running TWAP is indexed");
        running.retain(|id| *id != twap_id);
        if running.is_empty() {
            self.running_by_account_pair.remove(&key);
        }
        self.running_count -= 1;
        let finished = self.finished_by_account.entry(account).or_default();
        finished.push_back(twap_id);
        while finished.len() > MAX_FINISHED_TWAPS_KEPT_PER_ACCOUNT {
            if let Some(forgotten) = finished.pop_front() {
                self.twaps.remove(&forgotten);
            }
        }
    }

    fn insert(&mut self, record: TwapRecord) {
        let twap_id = record.twap_id;
        match record.status {
            TwapStatus::Running => {
                self.running_by_account_pair
                    .entry((record.terms.account, record.terms.pair))
                    .or_default()
                    .push(twap_id);
                self.schedule
                    .insert((record.slice_due_at_ms(record.next_slice), twap_id));
                self.running_count += 1;
            }
            TwapStatus::Completed | TwapStatus::Cancelled => {
                self.finished_by_account
                    .entry(record.terms.account)
                    .or_default()
                    .push_back(twap_id);
            }
        }
        self.twaps.insert(twap_id, record);
    }

    /// The registry as plain data. Finished TWAPs are listed in the order they finished within
    /// an account (by `updated_at_ms`, then id), which is how they are restored.
    pub fn state(&self) -> TwapsState {
        let mut twaps: Vec<TwapRecord> = self.twaps.values().cloned().collect();
        twaps.sort_by_key(|twap| (twap.status != TwapStatus::Running, twap.updated_at_ms, twap.twap_id));
        TwapsState {
            twaps,
            next_twap_id: self.next_twap_id,
        }
    }

    /// The registry rebuilt from [`TwapRegistry::state`].
    pub fn restore(state: TwapsState) -> Result<TwapRegistry, String> {
        let mut registry = TwapRegistry {
            next_twap_id: state.next_twap_id,
            ..TwapRegistry::default()
        };
        for twap in state.twaps {
            if twap.twap_id == 0
                || twap.twap_id >= state.next_twap_id.max(1)
                || registry.twaps.contains_key(&twap.twap_id)
            {
                return Err(format!("TWAP {} is out of order", twap.twap_id));
            }
            if twap.terms.check_bounds().is_err() || twap.filled > twap.terms.quantity {
                return Err(format!("TWAP {} has impossible terms", twap.twap_id));
            }
            registry.insert(twap);
        }
        if registry
            .finished_by_account
            .values()
            .any(|finished| finished.len() > MAX_FINISHED_TWAPS_KEPT_PER_ACCOUNT)
        {
            return Err("an account keeps too many finished TWAPs".to_string());
        }
        Ok(registry)
    }

    /// Feeds the registry to the state hash.
    pub(crate) fn hash_into(&self, hasher: &mut StateHasher) {
        let state = self.state();
        hasher.update((state.twaps.len() as u64).to_be_bytes());
        for twap in &state.twaps {
            let terms = &twap.terms;
            hasher.update(twap.twap_id.to_be_bytes());
            hasher.update(terms.account.as_bytes());
            hasher.update(terms.pair.0.to_be_bytes());
            hasher.update([terms.direction as u8, twap.status as u8]);
            hasher.update(terms.quantity.lots().to_be_bytes());
            hasher.update(terms.duration_ms.to_be_bytes());
            hasher.update(terms.interval_ms.to_be_bytes());
            hasher.update(terms.limit_price.map_or(0, Price::ticks).to_be_bytes());
            hasher.update_with_length(terms.client_twap_id.as_deref().unwrap_or("").as_bytes());
            hasher.update(twap.started_at_ms.to_be_bytes());
            hasher.update(twap.filled.lots().to_be_bytes());
            hasher.update(twap.cost.units().to_be_bytes());
            hasher.update(twap.slices_run.to_be_bytes());
            hasher.update(twap.next_slice.to_be_bytes());
            hasher.update(twap.updated_at_ms.to_be_bytes());
        }
        hasher.update(state.next_twap_id.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ACCOUNT: Address = Address::from_bytes([9; 20]);

    fn terms(quantity_lots: u64, duration_ms: u64, interval_ms: u64) -> NewTwap {
        NewTwap {
            account: ACCOUNT,
            pair: PairIndex(0),
            direction: Direction::Buy,
            quantity: Quantity::from_lots(quantity_lots),
            duration_ms,
            interval_ms,
            limit_price: None,
            client_twap_id: None,
        }
    }

    #[test]
    fn the_bounds_of_the_contract_are_inclusive_and_the_interval_divides_the_duration() {
        assert!(terms(10, 300_000, 30_000).check_bounds().is_ok());
        assert!(terms(10, 86_400_000, 3_600_000).check_bounds().is_ok());
        assert!(terms(10, 299_999, 30_000).check_bounds().is_err());
        assert!(terms(10, 86_400_001, 30_000).check_bounds().is_err());
        assert!(terms(10, 300_000, 29_999).check_bounds().is_err());
        assert!(terms(10, 7_200_000, 3_600_001).check_bounds().is_err());
        assert!(terms(10, 310_000, 60_000).check_bounds().is_err());
        assert!(terms(0, 300_000, 30_000).check_bounds().is_err());
    }

    #[test]
    fn slices_split_the_remainder_and_catch_up_at_most_three_planned_slices() {
        let mut registry = TwapRegistry::default();
        let twap = registry.start(terms(100, 300_000, 30_000), 1_000);
        assert_eq!(twap.terms.slice_count(), 10);
        assert_eq!(twap.slice_quantity(0), Quantity::from_lots(10));
        assert_eq!(twap.slice_due(999), None);
        assert_eq!(twap.slice_due(1_000), Some(0));
        // Nothing filled after five slices' time: the sixth catches up, within three planned.
        assert_eq!(twap.slice_due(1_000 + 5 * 30_000 + 7), Some(5));
        assert_eq!(twap.slice_quantity(5), Quantity::from_lots(20));
        assert_eq!(twap.slice_quantity(9), Quantity::from_lots(30));
        // Long past the end, the last slice is the one due.
        assert_eq!(twap.slice_due(10_000_000), Some(9));
    }

    #[test]
    fn a_slice_never_exceeds_what_remains() {
        let mut registry = TwapRegistry::default();
        let mut twap = registry.start(terms(7, 300_000, 30_000), 0);
        twap.filled = Quantity::from_lots(6);
        assert_eq!(twap.slice_quantity(9), Quantity::from_lots(1));
        twap.filled = Quantity::from_lots(7);
        assert_eq!(twap.slice_quantity(3), Quantity::ZERO);
    }

    #[test]
    fn the_market_slice_price_stays_inside_three_percent() {
        let best = Price::from_ticks(1_000).unwrap();
        assert_eq!(market_slice_price(Direction::Buy, best), Price::from_ticks(1_030));
        assert_eq!(market_slice_price(Direction::Sell, best), Price::from_ticks(970));
        let odd = Price::from_ticks(333).unwrap();
        // 342.99 rounds down for a buy, 323.01 up for a sell: never past the bound.
        assert_eq!(market_slice_price(Direction::Buy, odd), Price::from_ticks(342));
        assert_eq!(market_slice_price(Direction::Sell, odd), Price::from_ticks(324));
    }

    #[test]
    fn five_run_per_account_and_pair_and_finished_ones_are_kept_twenty_deep() {
        let mut registry = TwapRegistry::default();
        let ids: Vec<u64> = (0..5)
            .map(|_| registry.start(terms(10, 300_000, 30_000), 0).twap_id)
            .collect();
        assert_eq!(
            registry.check_start(&terms(10, 300_000, 30_000)),
            Err(TwapRejection::TooMany)
        );
        let mut other_pair = terms(10, 300_000, 30_000);
        other_pair.pair = PairIndex(1);
        assert_eq!(registry.check_start(&other_pair), Ok(()));
        registry.finish(ids[0], TwapStatus::Cancelled, 5);
        assert_eq!(registry.check_start(&terms(10, 300_000, 30_000)), Ok(()));
        for round in 0..30 {
            let twap = registry.start(terms(10, 300_000, 30_000), round);
            registry.finish(twap.twap_id, TwapStatus::Completed, round + 10);
        }
        assert_eq!(
            registry.of_account(&ACCOUNT).count(),
            4 + MAX_FINISHED_TWAPS_KEPT_PER_ACCOUNT
        );
        assert!(registry.get(ids[0]).is_none(), "the oldest finished one is forgotten");
        let restored = TwapRegistry::restore(registry.state()).unwrap();
        assert_eq!(restored.state(), registry.state());
        assert_eq!(restored.running_count(), 4);
    }

    #[test]
    fn a_client_id_is_the_accounts_own_while_its_twap_is_kept() {
        let mut registry = TwapRegistry::default();
        let mut named = terms(10, 300_000, 30_000);
        named.client_twap_id = Some("slow-buy".into());
        registry.start(named.clone(), 0);
        assert_eq!(registry.check_start(&named), Err(TwapRejection::ClientIdReused));
        let mut elsewhere = named.clone();
        elsewhere.account = Address::from_bytes([8; 20]);
        assert_eq!(registry.check_start(&elsewhere), Ok(()));
    }
}
