//! Conditional orders (contract version 4): trigger orders waiting for a trade to meet their
//! trigger, one-cancels-other groups that share one lock, and expiry.
//!
//! A trigger order locks what it would pay from the start and waits in its pair's
//! [`TriggerBook`](crate::triggers::TriggerBook). Every matching that prints trades then fires the
//! triggers those trades met, in the book's order, each entering the book as a taker in the same
//! command: its own trades may meet more, which fire after the ones already met (a cascade ends
//! because every firing takes an order out for good).
//!
//! A one-cancels-other group holds one or two open orders of one account, pair and direction, at
//! most one of which can rest in the book (a GTC limit); the other waits for a trigger. They
//! share one lock of the larger amount: the order that can fill from the book (the resting one,
//! or of two waiting ones the older) holds its whole lock, the other only what its own needs
//! beyond that ([`Engine::oco_share`]). When one fills or fires, the other is cancelled; when one
//! is cancelled, the other takes back its whole lock (what the cancelled one released covers it).
//!
//! Expiry: the venue's timer journals [`Command::ExpireOrder`](super::Command::ExpireOrder) for
//! each due order; here it is checked and applied. No clock is read here.

use super::matching::{paid_asset, required_lock};
use super::Engine;
use crate::events::{Event, Rejection};
use crate::ledger::AccountSlot;
use crate::money::{Amount, OrderId, PairIndex, Price, Quantity};
use crate::order::{
    CancelReason, Direction, NewOrder, OrderRecord, OrderStatus, OrderType, TimeInForce, MAX_EXPIRY_AHEAD_MS,
    MIN_EXPIRY_AHEAD_MS,
};
use crate::pair::PairSpec;

/// The most triggers one command may fire (a cascade included): a bound on one command's work
/// and events. Under [`crate::configuration::RULE_MET_TRIGGERS_QUEUED`] it bounds the entries
/// of the price indexes one command examines, and triggers met beyond it wait in the pair's
/// queue of met ranges for the next command (see [`Engine::pairs_with_met_triggers_waiting`]);
/// without the rule they go back to waiting until the next trade meets them again.
pub const MAX_TRIGGERS_FIRED_PER_COMMAND: usize = 10_000;

impl Engine {
    /// The checks a new order's conditions need (a trigger not met yet, an expiry ahead, a
    /// group it may join), before anything changes.
    pub(super) fn check_conditions(&self, order: &NewOrder, now_ms: u64) -> Result<(), Rejection> {
        let conditions = order.conditions();
        if let Some(trigger) = conditions.trigger {
            if order.post_only {
                return Err(Rejection::InvalidOrder("a trigger order cannot be post-only"));
            }
            if order.order_type == OrderType::Market && order.direction == Direction::Buy {
                return Err(Rejection::InvalidOrder(
                    "a market buy cannot lock what it will pay before it fires; use a limit buy trigger",
                ));
            }
            let last_price = self.pairs[usize::from(order.pair.0)].last_price;
            if last_price.is_some_and(|price| trigger.is_met_by(price)) {
                return Err(Rejection::TriggerAlreadyMet);
            }
        }
        if let Some(expires_at_ms) = conditions.expires_at_ms {
            if expires_at_ms < now_ms.saturating_add(MIN_EXPIRY_AHEAD_MS) {
                return Err(Rejection::ExpiryTooSoon);
            }
            if expires_at_ms > now_ms.saturating_add(MAX_EXPIRY_AHEAD_MS) {
                return Err(Rejection::ExpiryTooFar);
            }
        }
        if let Some(group) = &conditions.oco_group {
            let waits = conditions.trigger.is_some();
            let rests = order.order_type == OrderType::Limit && order.time_in_force == TimeInForce::GoodTillCancelled;
            if !waits && !rests {
                return Err(Rejection::OcoGroupInvalid(
                    "an order of a group must rest (a GTC limit) or wait for a trigger",
                ));
            }
            let members = self
                .oco_groups
                .get(&(order.account, group.clone()))
                .map_or(&[][..], Vec::as_slice);
            match members {
                [] => {}
                [member] => {
                    let other = self.open_order(member).expect("invariant: a group's members are open");
                    if other.terms.pair != order.pair || other.terms.direction != order.direction {
                        return Err(Rejection::OcoGroupInvalid(
                            "both orders of a group are on one pair and one side",
                        ));
                    }
                    if !other.filled.is_zero() {
                        return Err(Rejection::OcoGroupInvalid("the group's order has filled already"));
                    }
                    if !waits && other.terms.conditions().trigger.is_none() {
                        return Err(Rejection::OcoGroupInvalid(
                            "at most one order of a group rests in the book; the other waits for a trigger",
                        ));
                    }
                }
                _ => return Err(Rejection::OcoGroupInvalid("the group has two open orders already")),
            }
        }
        Ok(())
    }

    /// The other open order of `order_id`'s group, when `order_id` is a member and has one (an
    /// order that fired left its group, and a later order may have taken the name).
    pub(super) fn oco_partner(&self, terms: &NewOrder) -> Option<OrderId> {
        let order_id = &terms.order_id;
        let group = terms.conditions().oco_group.clone()?;
        let members = self.oco_groups.get(&(terms.account, group))?;
        if !members.contains(order_id) {
            return None;
        }
        members.iter().copied().find(|member| member != order_id)
    }

    /// What an untriggered order of a group locks, beside its partner: its whole lock less what
    /// the partner's lock covers when the partner holds the shared lock (it rests in the book,
    /// or waits and is older); its whole lock otherwise.
    pub(super) fn oco_share(&self, spec: &PairSpec, record: &OrderRecord) -> Amount {
        let whole = required_lock(spec, record);
        let partner = self
            .oco_partner(&record.terms)
            .and_then(|partner| self.open_order(&partner));
        match partner {
            Some(partner) if partner.status == OrderStatus::Open || partner.sequence < record.sequence => {
                whole.saturating_sub(required_lock(spec, partner))
            }
            _ => whole,
        }
    }

    /// Checks a trigger order and locks its share; changes nothing else, and nothing at all
    /// when it refuses. `replaced` open orders of the account are about to be cancelled.
    pub(super) fn prepare_waiting(
        &mut self,
        spec: &PairSpec,
        order: &NewOrder,
        replaced: u32,
    ) -> Result<(AccountSlot, Amount), Rejection> {
        self.check_terms(spec, order)?;
        let open = self.open_order_count(&order.account).saturating_sub(replaced);
        if open >= self.limits.max_open_orders_per_account || self.owner_at_open_order_limit(&order.account, replaced) {
            return Err(Rejection::TooManyOpenOrders);
        }
        if self.held_order_count().saturating_sub(replaced as usize) >= self.limits.max_resting_orders {
            return Err(Rejection::BookFull);
        }
        let whole = match (order.direction, order.price) {
            (Direction::Buy, Some(price)) => spec.cost(price, order.quantity).ok_or(Rejection::AmountTooLarge)?,
            (Direction::Buy, None) => return Err(Rejection::InvalidOrder("a market buy trigger locks nothing")),
            (Direction::Sell, _) => spec.base_amount(order.quantity),
        };
        // A lone member of the group holds its whole lock, which covers this one's up to its size.
        let covered = self
            .oco_groups
            .get(&(order.account, order.conditions().oco_group.clone().unwrap_or_default()))
            .and_then(|members| members.first())
            .and_then(|member| self.open_order(member))
            .map_or(Amount::ZERO, |member| member.locked);
        let share = whole.saturating_sub(covered);
        let slot = self.ledger.slot(&order.account).ok_or(Rejection::InsufficientBalance)?;
        self.ledger
            .lock(slot, paid_asset(spec, order.direction), share)
            .map_err(Rejection::from)?;
        Ok((slot, share))
    }

    /// Puts a trigger order [`Engine::prepare_waiting`] accepted into its pair's trigger book.
    pub(super) fn apply_waiting(
        &mut self,
        spec: &PairSpec,
        order: NewOrder,
        slot: AccountSlot,
        share: Amount,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        self.touch_balance(slot, paid_asset(spec, order.direction));
        let sequence = self.next_order_sequence;
        self.next_order_sequence += 1;
        let pair = order.pair;
        let record = OrderRecord {
            terms: order,
            filled: Quantity::ZERO,
            cost: Amount::ZERO,
            fee: Amount::ZERO,
            status: OrderStatus::Untriggered,
            cancel_reason: None,
            locked: share,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            sequence,
        };
        self.register_open_order(&record, slot);
        events.push(Event::OrderUpdated(record.clone()));
        self.waiting_orders.insert(record.terms.order_id, pair);
        self.pairs[usize::from(pair.0)].triggers.insert(record, slot);
    }

    /// Fires the triggers that the trades a matching printed (from `first_price` to
    /// `last_price`) met, and those their own trades meet in turn; under
    /// [`crate::configuration::RULE_MET_TRIGGERS_QUEUED`] those still waiting from earlier
    /// matchings first.
    pub(super) fn fire_met_triggers(
        &mut self,
        pair: PairIndex,
        printed: Option<(Price, Price)>,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        if self.config.limits.rules & crate::configuration::RULE_MET_TRIGGERS_QUEUED != 0 {
            if let Some((first_price, last_price)) = printed {
                self.remember_met_range(pair, first_price, last_price);
            }
            self.fire_queued_met_triggers(pair, now_ms, events);
            return;
        }
        let Some((first_price, last_price)) = printed else {
            return;
        };
        let pair_position = usize::from(pair.0);
        if self.pairs[pair_position].triggers.is_empty() {
            return;
        }
        let mut due: std::collections::VecDeque<OrderId> = self.pairs[pair_position]
            .triggers
            .take_met(first_price, last_price)
            .into();
        let mut fired = 0usize;
        while let Some(order_id) = due.pop_front() {
            // Cancelled as a fired order's partner: nothing to fire.
            if !self.waiting_orders.contains_key(&order_id) {
                continue;
            }
            if fired == MAX_TRIGGERS_FIRED_PER_COMMAND {
                // Beyond the command's bound: back to waiting, for the next trade to meet.
                self.pairs[pair_position].triggers.put_back(&order_id);
                continue;
            }
            fired += 1;
            if let Some((first_price, last_price)) = self.fire_trigger(pair, order_id, now_ms, events) {
                due.extend(self.pairs[pair_position].triggers.take_met(first_price, last_price));
            }
        }
    }

    /// Queues a matching's met range behind those still waiting (none when the pair has no
    /// trigger: nothing can be met).
    fn remember_met_range(&mut self, pair: PairIndex, first_price: Price, last_price: Price) {
        let mark = self.next_order_sequence;
        let state = &mut self.pairs[usize::from(pair.0)];
        if state.triggers.is_empty() {
            return;
        }
        let range = crate::triggers::MetRange::new(first_price, last_price, mark);
        match state.met_pending.back_mut() {
            // The same prices as a range not walked yet (a crowd of triggers firing into one
            // level): the later mark meets all the earlier one does, and the two fire as one
            // matching's, by trigger price, then by time.
            Some(back)
                if back.cursor.is_none()
                    && !back.on_second_side
                    && (back.first_price, back.last_price) == (first_price, last_price) =>
            {
                back.sequence_mark = mark;
            }
            _ => state.met_pending.push_back(range),
        }
    }

    /// Walks the pair's met ranges oldest first and fires what they met, examining at most
    /// [`MAX_TRIGGERS_FIRED_PER_COMMAND`] entries of the price indexes; what is left waits for
    /// the next command that fires triggers on the pair.
    fn fire_queued_met_triggers(&mut self, pair: PairIndex, now_ms: u64, events: &mut Vec<Event>) {
        let pair_position = usize::from(pair.0);
        let mut budget = MAX_TRIGGERS_FIRED_PER_COMMAND;
        while budget > 0 {
            let state = &mut self.pairs[pair_position];
            let Some(range) = state.met_pending.front_mut() else {
                break;
            };
            let taken = state.triggers.take_met_within(range, budget);
            if taken.finished {
                state.met_pending.pop_front();
            }
            assert!(taken.examined <= budget, "invariant: a walk stays within its budget");
            budget -= taken.examined;
            for order_id in taken.orders {
                // Cancelled as a fired order's partner: nothing to fire.
                if !self.waiting_orders.contains_key(&order_id) {
                    continue;
                }
                if let Some((first_price, last_price)) = self.fire_trigger(pair, order_id, now_ms, events) {
                    self.remember_met_range(pair, first_price, last_price);
                }
            }
        }
    }

    /// [`Command::FireMetTriggers`](super::Command::FireMetTriggers): the pair's waiting met
    /// triggers, as many as one command fires.
    pub(super) fn fire_waiting_met_triggers(
        &mut self,
        pair: PairIndex,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        let state = self.pairs.get(usize::from(pair.0)).ok_or(Rejection::UnknownPair)?;
        if state.halted || state.met_pending.is_empty() {
            return Err(Rejection::NoMetTriggersWaiting);
        }
        self.touched_balances.clear();
        self.fire_queued_met_triggers(pair, now_ms, events);
        self.push_balance_events(events);
        Ok(())
    }

    /// The pairs whose met triggers wait to fire, what the venue's timer journals
    /// [`Command::FireMetTriggers`](super::Command::FireMetTriggers) for (none while the vault
    /// is frozen or for a halted pair).
    pub fn pairs_with_met_triggers_waiting(&self) -> Vec<PairIndex> {
        if self.custody.is_frozen() {
            return Vec::new();
        }
        self.pairs
            .iter()
            .enumerate()
            .filter(|(_, state)| !state.halted && !state.met_pending.is_empty())
            .map(|(position, _)| PairIndex(u16::try_from(position).expect("pairs fit u16")))
            .collect()
    }

    /// Fires one untriggered order: its partner is cancelled, then it enters the book as a
    /// taker, as its type says; one that cannot (a fill-or-kill that cannot fill, a market order
    /// with nothing to take) is cancelled as unfilled. Returns the prices its trades printed.
    fn fire_trigger(
        &mut self,
        pair: PairIndex,
        order_id: OrderId,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Option<(Price, Price)> {
        let pair_position = usize::from(pair.0);
        let spec = self.pairs[pair_position].spec.clone();
        let record = self.pairs[pair_position]
            .triggers
            .get(&order_id)
            .expect("a due order waits");
        if let Some(partner) = self.oco_partner(&record.terms) {
            self.cancel_open_order(partner, CancelReason::OneCancelsOther, now_ms, events);
        }
        let (record, slot) = self.pairs[pair_position]
            .triggers
            .remove(&order_id)
            .expect("a due order waits");
        self.waiting_orders.remove(&order_id);
        self.forget_open_order(&spec, &record, slot, true);
        let paid = paid_asset(&spec, record.terms.direction);
        self.ledger.unlock(slot, paid, record.locked);
        self.touch_balance(slot, paid);
        match self.prepare_placement(&spec, &record.terms, 0) {
            Ok((taker_slot, required)) => self.apply_placement(
                &spec,
                record.terms,
                taker_slot,
                required,
                Some((record.created_at_ms, record.sequence)),
                now_ms,
                events,
            ),
            Err(_) => {
                let mut cancelled = record;
                cancelled.locked = Amount::ZERO;
                cancelled.status = OrderStatus::Cancelled;
                cancelled.cancel_reason = Some(CancelReason::UnfilledRemainder);
                cancelled.updated_at_ms = now_ms;
                events.push(Event::OrderUpdated(cancelled));
                None
            }
        }
    }

    /// Cancels an open order (resting or untriggered) for `reason`; balance events are the
    /// caller's to push.
    pub(super) fn cancel_open_order(
        &mut self,
        order_id: OrderId,
        reason: CancelReason,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        match self.order_locations.get(&order_id).copied() {
            Some(location) => self.cancel_resting_order(location, reason, now_ms, events),
            None => self.cancel_waiting_order(order_id, reason, now_ms, events),
        }
    }

    /// Cancels the order resting at `location`; balance events are the caller's to push.
    pub(super) fn cancel_resting_order(
        &mut self,
        (pair, key): (PairIndex, crate::book::SlotKey),
        reason: CancelReason,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        let pair_position = usize::from(pair.0);
        let spec = self.pairs[pair_position].spec.clone();
        let (record, slot) = self.take_from_book(pair_position, key);
        let cancelled = self.close_resting_order(&spec, record, slot, reason, now_ms);
        events.push(Event::OrderUpdated(cancelled));
    }

    /// Cancels an untriggered order; balance events are the caller's to push.
    fn cancel_waiting_order(&mut self, order_id: OrderId, reason: CancelReason, now_ms: u64, events: &mut Vec<Event>) {
        let pair = self
            .waiting_orders
            .remove(&order_id)
            .expect("invariant: an open order rests or waits");
        let pair_position = usize::from(pair.0);
        let spec = self.pairs[pair_position].spec.clone();
        let (mut record, slot) = self.pairs[pair_position]
            .triggers
            .remove(&order_id)
            .expect("invariant: a waiting order is in its trigger book");
        let paid = paid_asset(&spec, record.terms.direction);
        self.ledger.unlock(slot, paid, record.locked);
        self.touch_balance(slot, paid);
        self.forget_open_order(&spec, &record, slot, true);
        record.locked = Amount::ZERO;
        record.status = OrderStatus::Cancelled;
        record.cancel_reason = Some(reason);
        record.updated_at_ms = now_ms;
        events.push(Event::OrderUpdated(record));
    }

    /// Cancels the untriggered partner of `order_id` (a group's order that just filled), if it
    /// has one; balance events are the caller's to push.
    pub(super) fn cancel_partner_on_fill(&mut self, record: &OrderRecord, now_ms: u64, events: &mut Vec<Event>) {
        if let Some(partner) = self.oco_partner(&record.terms) {
            self.cancel_open_order(partner, CancelReason::OneCancelsOther, now_ms, events);
        }
    }

    /// Applies `ExpireOrder`: cancels the order for its expiry, if it is open and its expiry has
    /// come.
    pub(super) fn expire_order(
        &mut self,
        order_id: OrderId,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        let due = self
            .open_order(&order_id)
            .and_then(|record| record.terms.conditions().expires_at_ms)
            .is_some_and(|expires_at_ms| expires_at_ms <= now_ms);
        if !due {
            return Err(Rejection::ExpiryNotDue);
        }
        self.touched_balances.clear();
        self.cancel_open_order(order_id, CancelReason::Expired, now_ms, events);
        self.push_balance_events(events);
        Ok(())
    }

    /// The open orders whose expiry has come at `now_ms`, earliest first, at most `limit`: what
    /// the venue's timer journals `ExpireOrder` for.
    pub fn due_expiries(&self, now_ms: u64, limit: usize) -> Vec<OrderId> {
        self.expiries
            .iter()
            .take_while(|(expires_at_ms, _)| *expires_at_ms <= now_ms)
            .take(limit)
            .map(|(_, order_id)| *order_id)
            .collect()
    }

    /// Every order the chain holds open: resting in a book or waiting for a trigger (what
    /// `max_resting_orders` bounds).
    pub(super) fn held_order_count(&self) -> usize {
        self.order_locations.len() + self.waiting_orders.len()
    }
}
