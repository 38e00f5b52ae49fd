//! The commands market makers use beyond one order at a time: cancel all, amend (cancel and
//! replace in one step), the dead man's switch firing, and commands sent by an agent for an
//! account; with the queries of agents and switches. Placing and cancelling one order is in
//! `matching`; the dispatch of every command in the parent module.

use super::Engine;
use crate::agents::AgentGrant;
use crate::events::{Event, Rejection};
use crate::money::{Address, OrderId, PairIndex};
use crate::order::{Amend, CancelReason, OrderStatus};
use crate::switches::CancelAllAfterSwitches;

use super::matching::paid_asset;
use super::Command;

impl Engine {
    /// Cancels every open order of `account` (on `pair` only, when given), oldest first, for
    /// `reason`.
    pub(super) fn cancel_all(
        &mut self,
        (account, pair): (Address, Option<PairIndex>),
        reason: CancelReason,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        if let Some(pair) = pair {
            if usize::from(pair.0) >= self.pairs.len() {
                return Err(Rejection::UnknownPair);
            }
        }
        let Some(slot) = self.ledger.slot(&account) else {
            return Ok(());
        };
        let mut orders: Vec<(u64, OrderId)> = self
            .open_order_records_of(slot)
            .filter(|record| pair.is_none_or(|pair| record.terms.pair == pair))
            .map(|record| (record.sequence, record.terms.order_id))
            .collect();
        // The index's order depends on how it was built (a snapshot's restore differs from a
        // live run); the orders' own sequence does not, so replay gives the same events.
        orders.sort_unstable();
        self.touched_balances.clear();
        for (_, order_id) in orders {
            self.cancel_open_order(order_id, reason, now_ms, events);
        }
        self.push_balance_events(events);
        Ok(())
    }

    /// Cancels `order_id` and places `replacement` in one step. The replacement is checked as
    /// if the old order were already gone (its lock released, its client order id free, its
    /// place in the limits given up); if it is refused, all of that is put back and nothing
    /// changed. What the client did not sign is bound to the old order: the trigger always, the
    /// price when it was kept (`keeps_price`), and the amount when it was the remaining one
    /// (`amount_from_remaining`), so that a journaled amend cannot carry terms nobody asked for.
    pub(super) fn amend_order(&mut self, amend: Amend, now_ms: u64, events: &mut Vec<Event>) -> Result<(), Rejection> {
        let waiting = self.check_amend(&amend)?;
        let Amend {
            account,
            order_id,
            replacement,
            ..
        } = amend;
        let old = self.open_order(&order_id).expect("checked: the order is open");
        let pair = old.terms.pair;
        let pair_position = usize::from(pair.0);
        let location = self.order_locations.get(&order_id).map(|(_, key)| *key);
        let slot = match location {
            Some(key) => self.pairs[pair_position].book.account_slot(key),
            None => self.pairs[pair_position]
                .triggers
                .slot(&order_id)
                .expect("the order waits"),
        };
        let spec = self.pairs[pair_position].spec.clone();
        let old_paid = paid_asset(&spec, old.terms.direction);
        let old_locked = old.locked;
        let old_client_order_id = old.terms.client_order_id.clone();
        // Give up what the old order holds, reversibly, and check the replacement against that.
        self.ledger.unlock(slot, old_paid, old_locked);
        if let Some(client_order_id) = &old_client_order_id {
            if let Some(ids) = self.client_order_ids.get_mut(&account) {
                ids.remove(client_order_id);
            }
        }
        let prepared = if waiting {
            self.prepare_waiting(&spec, &replacement, 1)
        } else {
            self.prepare_placement(&spec, &replacement, 1)
        };
        let (taker_slot, required) = match prepared {
            Ok(prepared) => prepared,
            Err(rejection) => {
                self.ledger
                    .lock(slot, old_paid, old_locked)
                    .expect("invariant: what was just unlocked can be locked again");
                if let Some(client_order_id) = old_client_order_id {
                    self.client_order_ids
                        .entry(account)
                        .or_default()
                        .insert(client_order_id, order_id);
                }
                return Err(rejection);
            }
        };
        // Every check has passed: the old order leaves its book (its lock is released already),
        // then the replacement applies as a placement does.
        self.touched_balances.clear();
        let cancelled = self.remove_amended(&spec, (order_id, pair_position, location), slot, now_ms);
        events.push(Event::OrderUpdated(cancelled));
        self.touch_balance(slot, old_paid);
        if waiting {
            self.apply_waiting(&spec, replacement, taker_slot, required, now_ms, events);
        } else {
            let printed = self.apply_placement(&spec, replacement, taker_slot, required, None, now_ms, events);
            self.fire_met_triggers(pair, printed, now_ms, events);
        }
        self.push_balance_events(events);
        Ok(())
    }

    /// Every check of an amend that needs no change: the old order is open and the account's,
    /// the replacement keeps what it must (the unsigned terms bound to the old order), the old
    /// order is in no group, and a waiting order's trigger is not met already. Whether the old
    /// order waits for its trigger.
    fn check_amend(&self, amend: &Amend) -> Result<bool, Rejection> {
        let Amend {
            account,
            order_id,
            ref replacement,
            amount_from_remaining,
            keeps_price,
        } = *amend;
        let old = self.open_order(&order_id).ok_or(Rejection::OrderNotFound)?;
        let pair = old.terms.pair;
        if old.terms.account != account {
            return Err(Rejection::NotOwner);
        }
        if amount_from_remaining.is_some_and(|remaining| remaining != old.remaining()) {
            return Err(Rejection::OrderChanged);
        }
        let unsigned_terms_kept = amount_from_remaining.is_none_or(|remaining| replacement.quantity == remaining)
            && (!keeps_price || replacement.price == old.terms.price);
        if !unsigned_terms_kept {
            return Err(Rejection::InvalidOrder(
                "an amend's replacement keeps the old order's price when none was given, and takes its remaining \
                 amount when no amount was given",
            ));
        }
        let (old_conditions, new_conditions) = (old.terms.conditions(), replacement.conditions());
        let keeps_terms = replacement.account == account
            && replacement.pair == pair
            && replacement.direction == old.terms.direction
            && replacement.order_type == old.terms.order_type
            && replacement.time_in_force == old.terms.time_in_force
            && replacement.post_only == old.terms.post_only
            && replacement.client_order_id == old.terms.client_order_id
            && new_conditions.trigger == old_conditions.trigger
            && new_conditions.oco_group == old_conditions.oco_group
            && new_conditions.expires_at_ms == old_conditions.expires_at_ms;
        if !keeps_terms {
            return Err(Rejection::InvalidOrder(
                "an amended order keeps the old one's pair, direction, type, time in force, client order id, \
                 trigger, group and expiry",
            ));
        }
        let grouped = old_conditions
            .oco_group
            .as_ref()
            .and_then(|group| self.oco_groups.get(&(account, group.clone())))
            .is_some_and(|members| members.contains(&order_id));
        if grouped {
            return Err(Rejection::OcoGroupInvalid(
                "an order of a one-cancels-other group is not amended; cancel it and place another",
            ));
        }
        let waiting = old.status == OrderStatus::Untriggered;
        if waiting {
            let last_price = self.pairs[usize::from(pair.0)].last_price;
            let met = new_conditions
                .trigger
                .is_some_and(|trigger| last_price.is_some_and(|price| trigger.is_met_by(price)));
            if met {
                return Err(Rejection::TriggerAlreadyMet);
            }
        }
        Ok(waiting)
    }

    /// Takes the amended order out of its book or its trigger book, cancelled (its lock was
    /// released already).
    fn remove_amended(
        &mut self,
        spec: &crate::pair::PairSpec,
        (order_id, pair_position, location): (OrderId, usize, Option<crate::book::SlotKey>),
        slot: crate::ledger::AccountSlot,
        now_ms: u64,
    ) -> crate::order::OrderRecord {
        match location {
            Some(key) => {
                let (mut record, _) = self.take_from_book(pair_position, key);
                record.locked = crate::money::Amount::ZERO;
                self.close_resting_order(spec, record, slot, CancelReason::Requested, now_ms)
            }
            None => {
                let (mut record, _) = self.pairs[pair_position]
                    .triggers
                    .remove(&order_id)
                    .expect("the order waits");
                self.waiting_orders.remove(&order_id);
                record.locked = crate::money::Amount::ZERO;
                self.forget_open_order(spec, &record, slot, true);
                record.status = OrderStatus::Cancelled;
                record.cancel_reason = Some(CancelReason::Requested);
                record.updated_at_ms = now_ms;
                record
            }
        }
    }

    /// Fires the account's switch armed for `trigger_at_ms`, if it still is and its time came.
    pub(super) fn fire_cancel_all_after(
        &mut self,
        account: Address,
        trigger_at_ms: u64,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        if self.switches.trigger_of(&account) != Some(trigger_at_ms) || trigger_at_ms > now_ms {
            return Err(Rejection::SwitchNotDue);
        }
        self.switches.set(account, None);
        self.cancel_all((account, None), CancelReason::Switch, now_ms, events)
    }

    /// Runs a trading command an agent sent for an account, if the account approved the agent
    /// and the approval has not ended.
    pub(super) fn by_agent(
        &mut self,
        agent: Address,
        command: Command,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        let trades = matches!(
            command,
            Command::PlaceOrder(_)
                | Command::CancelOrder { .. }
                | Command::CancelAll { .. }
                | Command::AmendOrder(_)
                | Command::SetCancelAllAfter { .. }
                | Command::StartTwap(_)
                | Command::CancelTwap { .. }
        );
        let account = command.account().ok_or(Rejection::AgentNotAllowed)?;
        if !trades || !self.agent_allowed(&account, &agent, now_ms) {
            return Err(Rejection::AgentNotAllowed);
        }
        self.dispatch(command, now_ms, events)
    }

    /// The agents `account` approved that are valid at `now_ms`, by address.
    pub fn agents_of(&self, account: &Address, now_ms: u64) -> Vec<AgentGrant> {
        self.agents.of_account(account, now_ms)
    }

    /// Whether `agent` may trade for `account` at `now_ms`: an agent the account approved, or
    /// for a known subaccount, its owner or an agent the owner approved.
    pub fn agent_allowed(&self, account: &Address, agent: &Address, now_ms: u64) -> bool {
        match self.subaccounts.owner_of(account) {
            Some((owner, _)) => owner == *agent || self.agents.allows(&owner, agent, now_ms),
            None => self.agents.allows(account, agent, now_ms),
        }
    }

    /// The chain's armed dead man's switches.
    pub fn switches(&self) -> &CancelAllAfterSwitches {
        &self.switches
    }
}
