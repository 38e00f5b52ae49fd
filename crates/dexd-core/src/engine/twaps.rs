//! TWAP orders in the engine (contract version 5): a TWAP started, cancelled, and each slice run
//! when the venue's timer journals it ([`Command::RunTwapSlice`](super::Command)), as an
//! immediate-or-cancel order placed through the same path as any other. What a slice trades
//! and at what limit is `crate::twaps`'s arithmetic; this module applies it. It reads no clock:
//! a slice is run only when the command's time makes it due.

use super::Engine;
use crate::events::{Event, Rejection};
use crate::money::{Address, Amount, Quantity};
use crate::order::{Direction, NewOrder, OrderConditions, OrderType, TimeInForce};
use crate::twaps::{market_slice_price, NewTwap, TwapRecord, TwapRegistry, TwapRejection, TwapStatus};

impl Engine {
    /// Starts a TWAP whose terms are in bounds, for an account that holds something, under the
    /// running limits.
    pub(super) fn start_twap(&mut self, terms: NewTwap, now_ms: u64, events: &mut Vec<Event>) -> Result<(), Rejection> {
        let spec = &self
            .pairs
            .get(usize::from(terms.pair.0))
            .ok_or(Rejection::UnknownPair)?
            .spec;
        // A TWAP is held until it ends: only an account with something on the chain may hold one.
        if self.ledger.slot(&terms.account).is_none() {
            return Err(Rejection::UnknownAccount);
        }
        self.twaps.check_start(&terms).map_err(Rejection::Twap)?;
        if terms.planned_slice_rounded_up() < spec.min_quantity() {
            return Err(Rejection::Twap(TwapRejection::Invalid(
                "each slice would be below the pair's minimum amount: a larger amount or fewer slices",
            )));
        }
        let record = self.twaps.start(terms, now_ms);
        events.push(Event::TwapUpdated(record));
        Ok(())
    }

    /// Cancels a running TWAP of `account`: no slice runs after it (none rests, being
    /// immediate-or-cancel).
    pub(super) fn cancel_twap(
        &mut self,
        account: Address,
        twap_id: u64,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.twaps.running(Some(&account), twap_id).map_err(Rejection::Twap)?;
        self.twaps.finish(twap_id, TwapStatus::Cancelled, now_ms);
        events.push(Event::TwapUpdated(self.twap_record(twap_id)));
        Ok(())
    }

    /// Runs slice `slice` of a running TWAP, refused unless it is the slice due at `now_ms`. The
    /// slice's order may find nothing to trade, or be refused (a balance too small, a frozen
    /// vault): the slice still ran, and what it did not trade falls to the later ones.
    pub(super) fn run_twap_slice(
        &mut self,
        twap_id: u64,
        slice: u32,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        let twap = self.twaps.running(None, twap_id).map_err(Rejection::Twap)?;
        if twap.slice_due(now_ms) != Some(slice) {
            return Err(Rejection::Twap(TwapRejection::SliceNotDue));
        }
        let twap = twap.clone();
        let traded = self.place_twap_slice(&twap, slice, now_ms, events);
        if TwapRegistry::is_done(self.twaps.record_slice(twap_id, slice, traded, now_ms)) {
            self.twaps.finish(twap_id, TwapStatus::Completed, now_ms);
        }
        events.push(Event::TwapUpdated(self.twap_record(twap_id)));
        Ok(())
    }

    /// Places slice `slice`'s order; returns what it filled and its quote value (nothing when
    /// it was not placed).
    fn place_twap_slice(
        &mut self,
        twap: &TwapRecord,
        slice: u32,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> (Quantity, Amount) {
        let nothing = (Quantity::ZERO, Amount::ZERO);
        let quantity = twap.slice_quantity(slice);
        let terms = &twap.terms;
        if quantity.is_zero() || self.custody.is_frozen() {
            return nothing;
        }
        let price = match terms.limit_price {
            Some(limit) => limit,
            None => {
                let opposite = match terms.direction {
                    Direction::Buy => Direction::Sell,
                    Direction::Sell => Direction::Buy,
                };
                let best = self.pairs[usize::from(terms.pair.0)].book.best_price(opposite);
                match best.and_then(|best| market_slice_price(terms.direction, best)) {
                    Some(price) => price,
                    None => return nothing,
                }
            }
        };
        let order_id = twap.slice_order_id(slice);
        let order = NewOrder {
            order_id,
            client_order_id: None,
            account: terms.account,
            pair: terms.pair,
            order_type: OrderType::Limit,
            direction: terms.direction,
            time_in_force: TimeInForce::ImmediateOrCancel,
            post_only: false,
            price: Some(price),
            quantity,
            conditions: OrderConditions {
                twap_id: Some(twap.twap_id),
                ..OrderConditions::default()
            }
            .boxed(),
        };
        let first_event = events.len();
        match self.place_order(order, now_ms, events) {
            Ok(()) => events[first_event..]
                .iter()
                .find_map(|event| match event {
                    Event::OrderUpdated(record) if record.terms.order_id == order_id => {
                        Some((record.filled, record.cost))
                    }
                    _ => None,
                })
                .expect("invariant: a placed slice reports its order"),
            Err(_) => {
                events.truncate(first_event);
                nothing
            }
        }
    }

    fn twap_record(&self, twap_id: u64) -> TwapRecord {
        self.twaps
            .get(twap_id)
            .cloned()
            .expect("invariant: a TWAP just changed is kept")
    }

    /// The kept TWAPs of `account`: running first, then the finished ones newest first.
    pub fn twaps_of(&self, account: &Address) -> Vec<TwapRecord> {
        self.twaps.of_account(account).cloned().collect()
    }

    /// A kept TWAP by id.
    pub fn twap(&self, twap_id: u64) -> Option<&TwapRecord> {
        self.twaps.get(twap_id)
    }

    /// The kept TWAP of `account` with `client_twap_id`.
    pub fn twap_by_client_id<'a>(&'a self, account: &'a Address, client_twap_id: &str) -> Option<&'a TwapRecord> {
        self.twaps.by_client_id(account, client_twap_id)
    }

    /// The running TWAPs' slices due at `now_ms`, at most `limit`: `(twap_id, slice)`, what the
    /// venue's timer journals as [`Command::RunTwapSlice`](super::Command).
    pub fn due_twap_slices(&self, now_ms: u64, limit: usize) -> Vec<(u64, u32)> {
        self.twaps.due(now_ms, limit)
    }

    /// How many TWAPs are running on the chain.
    pub fn running_twap_count(&self) -> usize {
        self.twaps.running_count()
    }
}
