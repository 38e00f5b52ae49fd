//! How a command that moves orders runs: an order placed (its terms checked, its match planned
//! without changing anything, then the fills applied whole, the remainder rested or closed)
//! and an order cancelled, with the locks and the balance events they touch. Where an open
//! order is kept as it opens and closes is `open_order_places.rs`'s; the dispatch of every
//! command and the queries are in the parent module.

use super::{Engine, PlannedFill};
use crate::events::{Event, Rejection, Trade};
use crate::ledger::AccountSlot;
use crate::market_data::Position;
use crate::money::{Address, Amount, AssetIndex, OrderId, PairIndex, Price, Quantity};
use crate::order::{CancelReason, Direction, NewOrder, OrderRecord, OrderStatus, OrderType, TimeInForce};
use crate::pair::PairSpec;

impl Engine {
    pub(super) fn place_order(
        &mut self,
        order: NewOrder,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        let spec = self
            .pairs
            .get(usize::from(order.pair.0))
            .ok_or(Rejection::UnknownPair)?
            .spec
            .clone();
        self.check_conditions(&order, now_ms)?;
        if order.conditions().trigger.is_some() {
            let (slot, share) = self.prepare_waiting(&spec, &order, 0)?;
            self.touched_balances.clear();
            self.apply_waiting(&spec, order, slot, share, now_ms, events);
            self.push_balance_events(events);
            return Ok(());
        }
        // A GTC limit joining a group whose other order waits shares that order's lock: what
        // this one's lock covers is taken off the other's first (and put back on a refusal).
        let borrowed = self.borrow_partner_lock(&spec, &order);
        let (taker_slot, required) = match self.prepare_placement(&spec, &order, 0) {
            Ok(prepared) => prepared,
            Err(rejection) => {
                if let Some((partner, slot, amount)) = borrowed {
                    self.return_partner_lock(&spec, order.pair, (partner, slot, amount));
                }
                return Err(rejection);
            }
        };
        // Every check has passed: from here on the command applies whole.
        self.touched_balances.clear();
        let pair = order.pair;
        let grouped = order.conditions().oco_group.is_some();
        let printed = self.apply_placement(&spec, order, taker_slot, required, None, now_ms, events);
        if grouped && printed.is_some() {
            if let Some(partner) = borrowed.map(|(partner, _, _)| partner) {
                if self.waiting_orders.contains_key(&partner) {
                    self.cancel_open_order(partner, CancelReason::OneCancelsOther, now_ms, events);
                }
            }
        }
        self.fire_met_triggers(pair, printed, now_ms, events);
        self.push_balance_events(events);
        Ok(())
    }

    /// Takes off the waiting partner's share what `order`'s whole lock covers (see
    /// `conditions`); returns the partner, its account's slot and the amount.
    fn borrow_partner_lock(&mut self, spec: &PairSpec, order: &NewOrder) -> Option<(OrderId, AccountSlot, Amount)> {
        let group = order.conditions().oco_group.as_ref()?;
        let partner = *self.oco_groups.get(&(order.account, group.clone()))?.first()?;
        let price = order.price?;
        let whole = match order.direction {
            Direction::Buy => spec.cost(price, order.quantity)?,
            Direction::Sell => spec.base_amount(order.quantity),
        };
        let pair_position = usize::from(order.pair.0);
        let triggers = &mut self.pairs[pair_position].triggers;
        let slot = triggers.slot(&partner)?;
        let record = triggers.get_mut(&partner)?;
        let amount = record.locked.min(whole);
        record.locked = record.locked.checked_sub(amount).expect("at most the lock");
        self.ledger.unlock(slot, paid_asset(spec, order.direction), amount);
        self.touch_balance(slot, paid_asset(spec, order.direction));
        Some((partner, slot, amount))
    }

    /// Puts back what [`Engine::borrow_partner_lock`] took.
    fn return_partner_lock(
        &mut self,
        spec: &PairSpec,
        pair: PairIndex,
        (partner, slot, amount): (OrderId, AccountSlot, Amount),
    ) {
        let record = self.pairs[usize::from(pair.0)]
            .triggers
            .get_mut(&partner)
            .expect("the partner still waits");
        record.locked = record.locked.checked_add(amount).expect("back to what it was");
        let direction = record.terms.direction;
        self.ledger
            .lock(slot, paid_asset(spec, direction), amount)
            .expect("invariant: what was just unlocked can be locked again");
    }

    /// Checks a new order, plans its match and locks what it pays; changes nothing but that
    /// lock, and nothing at all when it refuses. `replaced` open orders of the account are about
    /// to be cancelled (an amend's old order) and do not count against the limits.
    pub(super) fn prepare_placement(
        &mut self,
        spec: &PairSpec,
        order: &NewOrder,
        replaced: u32,
    ) -> Result<(AccountSlot, Amount), Rejection> {
        self.check_terms(spec, order)?;
        let taker_slot = self.ledger.slot(&order.account);
        self.plan_matching(order, taker_slot);
        let remaining = order
            .quantity
            .checked_sub(self.plan.filled)
            .expect("a plan never overfills");
        self.check_execution(order, taker_slot, remaining, replaced)?;
        let required = match (order.direction, order.price) {
            (Direction::Buy, Some(price)) => spec.cost(price, order.quantity).ok_or(Rejection::AmountTooLarge)?,
            (Direction::Buy, None) => self.plan.cost,
            (Direction::Sell, _) => spec.base_amount(order.quantity),
        };
        let paid = paid_asset(spec, order.direction);
        let taker_slot = taker_slot.ok_or(Rejection::InsufficientBalance)?;
        self.ledger.lock(taker_slot, paid, required).map_err(Rejection::from)?;
        Ok((taker_slot, required))
    }

    /// Applies a placement [`Engine::prepare_placement`] accepted (its plan still current):
    /// the self-trade cancels, the fills, the remainder rested or closed. Balance events are the
    /// caller's to push.
    /// Returns the prices of its first and last trade, when it traded. `placed` is a fired
    /// trigger order's placement time and sequence, which it keeps (its sequence is its
    /// identity in the stores and streams; its priority in the book is when it rests there).
    #[allow(clippy::too_many_arguments)]
    pub(super) fn apply_placement(
        &mut self,
        spec: &PairSpec,
        order: NewOrder,
        taker_slot: AccountSlot,
        required: Amount,
        placed: Option<(u64, u64)>,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Option<(Price, Price)> {
        let pair_position = usize::from(order.pair.0);
        self.touch_balance(taker_slot, paid_asset(spec, order.direction));
        let (created_at_ms, sequence) = placed.unwrap_or_else(|| {
            let sequence = self.next_order_sequence;
            self.next_order_sequence += 1;
            (now_ms, sequence)
        });
        let mut taker = OrderRecord {
            terms: order,
            filled: Quantity::ZERO,
            cost: Amount::ZERO,
            fee: Amount::ZERO,
            status: OrderStatus::Open,
            cancel_reason: None,
            locked: required,
            created_at_ms,
            updated_at_ms: now_ms,
            sequence,
        };
        let plan = std::mem::take(&mut self.plan);
        let price_of = |engine: &Engine, fill: &PlannedFill| {
            engine.pairs[pair_position]
                .book
                .get(fill.key)
                .terms
                .price
                .expect("invariant: resting orders have prices")
        };
        let printed = match (plan.fills.first(), plan.fills.last()) {
            (Some(first), Some(last)) => Some((price_of(self, first), price_of(self, last))),
            _ => None,
        };
        for key in &plan.self_trade_cancels {
            let (record, _) = self.take_from_book(pair_position, *key);
            let cancelled =
                self.close_resting_order(spec, record, taker_slot, CancelReason::SelfTradePrevention, now_ms);
            events.push(Event::OrderUpdated(cancelled));
        }
        for (key, maker_slot) in &plan.expired_cancels {
            let (record, _) = self.take_from_book(pair_position, *key);
            let cancelled = self.close_resting_order(spec, record, *maker_slot, CancelReason::Expired, now_ms);
            events.push(Event::OrderUpdated(cancelled));
        }
        for fill in &plan.fills {
            self.apply_fill(spec, &mut taker, taker_slot, *fill, now_ms, events);
        }
        self.plan = plan;
        self.finish_taker(spec, taker, taker_slot, events);
        assert!(
            !self.pairs[pair_position].book.is_crossed(),
            "invariant: the book is never crossed"
        );
        printed
    }

    /// The checks that need no walk of the book.
    pub(super) fn check_terms(&self, spec: &PairSpec, order: &NewOrder) -> Result<(), Rejection> {
        if self
            .pairs
            .get(usize::from(order.pair.0))
            .is_some_and(|state| state.halted)
        {
            return Err(Rejection::PairHalted);
        }
        match (order.order_type, order.price) {
            (OrderType::Limit, None) => return Err(Rejection::InvalidOrder("a limit order needs a price")),
            (OrderType::Market, Some(_)) => return Err(Rejection::InvalidOrder("a market order takes no price")),
            _ => {}
        }
        if order.quantity.is_zero() {
            return Err(Rejection::InvalidOrder("the amount must be positive"));
        }
        if order.quantity < spec.min_quantity() {
            return Err(Rejection::BelowMinAmount);
        }
        if let Some(price) = order.price {
            let notional = spec.cost(price, order.quantity).ok_or(Rejection::AmountTooLarge)?;
            if notional < spec.min_notional() {
                return Err(Rejection::BelowMinNotional);
            }
        }
        // An id is the digest of what its account signed, nonce included, and a nonce is held
        // for its signature's life: an id cannot come twice. The books' own index is checked
        // anyway (it is small and hot); the untriggered orders' only for a trigger order, which
        // joins them. A miss in that larger map on every placement cost 8 to 20 % of the
        // placement rate with 100,000 orders waiting (BENCHMARKS.md); a book order that reused a
        // waiting order's id would make that order's firing refused (cancelled as unfilled),
        // never a second order under one id in a book.
        let waits = order.conditions().trigger.is_some();
        if self.order_locations.contains_key(&order.order_id)
            || (waits && self.waiting_orders.contains_key(&order.order_id))
        {
            return Err(Rejection::DuplicateOrderId);
        }
        if let Some(client_order_id) = &order.client_order_id {
            let taken = self
                .client_order_ids
                .get(&order.account)
                .is_some_and(|ids| ids.contains_key(client_order_id));
            if taken {
                return Err(Rejection::DuplicateClientOrderId);
            }
        }
        if order.post_only {
            let best_opposite = self.pairs[usize::from(order.pair.0)]
                .book
                .best_price(order.direction.opposite());
            let would_take = match (order.price, best_opposite) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(limit), Some(best)) => crosses(order.direction, limit, best),
            };
            if would_take {
                return Err(Rejection::PostOnlyWouldTake);
            }
        }
        Ok(())
    }

    /// The checks that need the planned walk: fill-or-kill, liquidity, limits of resting orders.
    fn check_execution(
        &self,
        order: &NewOrder,
        taker_slot: Option<AccountSlot>,
        remaining: Quantity,
        replaced: u32,
    ) -> Result<(), Rejection> {
        if order.time_in_force == TimeInForce::FillOrKill && !remaining.is_zero() {
            return Err(Rejection::FillOrKillNotFillable);
        }
        if order.order_type == OrderType::Market && self.plan.filled.is_zero() {
            return Err(Rejection::NoLiquidity);
        }
        let rests = order.order_type == OrderType::Limit
            && order.time_in_force == TimeInForce::GoodTillCancelled
            && !remaining.is_zero();
        if rests {
            let self_cancels = u32::try_from(self.plan.self_trade_cancels.len()).unwrap_or(u32::MAX);
            let open_after_cancels = taker_slot
                .map_or(0, |slot| self.open_orders_of(slot))
                .saturating_sub(self_cancels)
                .saturating_sub(replaced);
            if open_after_cancels >= self.limits.max_open_orders_per_account
                || self.owner_at_open_order_limit(&order.account, self_cancels.saturating_add(replaced))
            {
                return Err(Rejection::TooManyOpenOrders);
            }
            let resting_after_cancels = self.held_order_count().saturating_sub(replaced as usize);
            if resting_after_cancels >= self.limits.max_resting_orders {
                return Err(Rejection::BookFull);
            }
        }
        Ok(())
    }

    /// Walks the opposite side in priority order and decides, without changing anything, which
    /// resting orders the new order fills and which of its own account's orders it cancels.
    fn plan_matching(&mut self, order: &NewOrder, taker_slot: Option<AccountSlot>) {
        let mut plan = std::mem::take(&mut self.plan);
        plan.fills.clear();
        plan.self_trade_cancels.clear();
        plan.expired_cancels.clear();
        plan.filled = Quantity::ZERO;
        plan.cost = Amount::ZERO;
        let mut overflow = false;
        // An expired maker is dead at its expiry, whether or not the timer has journaled it.
        let expired_by = (self.config.limits.rules & crate::configuration::RULE_EXPIRED_MAKERS_SKIPPED != 0)
            .then_some(self.command_time_ms);
        let state = &self.pairs[usize::from(order.pair.0)];
        let spec = &state.spec;
        let mut remaining = order.quantity;
        state
            .book
            .visit_in_priority(order.direction.opposite(), |key, record, maker_slot| {
                let price = record.terms.price.expect("invariant: resting orders have prices");
                if let Some(limit) = order.price {
                    if !crosses(order.direction, limit, price) {
                        return false;
                    }
                }
                if let (Some(now_ms), Some(expires_at_ms)) = (expired_by, record.terms.conditions().expires_at_ms) {
                    if expires_at_ms <= now_ms {
                        plan.expired_cancels.push((key, maker_slot));
                        return true;
                    }
                }
                if Some(maker_slot) == taker_slot {
                    plan.self_trade_cancels.push(key);
                    return true;
                }
                let quantity = remaining.min(record.remaining());
                plan.fills.push(PlannedFill {
                    key,
                    maker_slot,
                    quantity,
                });
                let cost = spec
                    .cost(price, quantity)
                    .expect("invariant: a resting order's cost fits");
                match plan.cost.checked_add(cost) {
                    Some(total) => plan.cost = total,
                    None => overflow = true,
                }
                remaining = remaining.checked_sub(quantity).expect("fill within remaining");
                plan.filled = plan.filled.checked_add(quantity).expect("fills within the quantity");
                !remaining.is_zero() && !overflow
            });
        if overflow {
            // The walk's total cost does not fit; treat it as unfillable rather than wrap.
            plan.fills.clear();
            plan.filled = Quantity::ZERO;
            plan.cost = Amount::ZERO;
        }
        self.plan = plan;
    }

    /// Executes one planned fill: moves funds and fees, updates both orders, candles, positions.
    fn apply_fill(
        &mut self,
        spec: &PairSpec,
        taker: &mut OrderRecord,
        taker_slot: AccountSlot,
        fill: PlannedFill,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        let pair = taker.terms.pair;
        let pair_position = usize::from(pair.0);
        let maker = self.pairs[pair_position].book.get(fill.key);
        let price = maker.terms.price.expect("invariant: resting orders have prices");
        let maker_account = maker.terms.account;
        let maker_order_id = maker.terms.order_id;
        let cost = spec
            .cost(price, fill.quantity)
            .expect("invariant: a resting order's cost fits");
        let base_amount = spec.base_amount(fill.quantity);
        // The fees in force at the fill: an announced raise once its time has come.
        let (maker_fee_rate, taker_fee_rate) = spec.fees_at(now_ms);
        let (buyer, seller, buyer_fee_rate, seller_fee_rate) = match taker.terms.direction {
            Direction::Buy => (taker_slot, fill.maker_slot, taker_fee_rate, maker_fee_rate),
            Direction::Sell => (fill.maker_slot, taker_slot, maker_fee_rate, taker_fee_rate),
        };
        let buyer_fee = buyer_fee_rate.fee_rounded_down(base_amount);
        let seller_fee = seller_fee_rate.fee_rounded_down(cost);
        let base_after_fee = base_amount.checked_sub(buyer_fee).expect("fee at most 100 %");
        let quote_after_fee = cost.checked_sub(seller_fee).expect("fee at most 100 %");
        let fee_slot = self.fee_slot;
        self.ledger.transfer_locked(seller, buyer, spec.base(), base_after_fee);
        self.ledger.transfer_locked(seller, fee_slot, spec.base(), buyer_fee);
        self.ledger
            .transfer_locked(buyer, seller, spec.quote(), quote_after_fee);
        self.ledger.transfer_locked(buyer, fee_slot, spec.quote(), seller_fee);
        for account in [buyer, seller, fee_slot] {
            self.touch_balance(account, spec.base());
            self.touch_balance(account, spec.quote());
        }
        let (maker_fee, taker_fee, maker_spent, taker_spent) = match taker.terms.direction {
            Direction::Buy => (seller_fee, buyer_fee, base_amount, cost),
            Direction::Sell => (buyer_fee, seller_fee, cost, base_amount),
        };
        taker.filled = taker.filled.checked_add(fill.quantity).expect("fill within quantity");
        charge_fill(taker, cost, taker_fee, taker_spent, now_ms);
        let book = &mut self.pairs[pair_position].book;
        book.fill(fill.key, fill.quantity, |maker| {
            charge_fill(maker, cost, maker_fee, maker_spent, now_ms)
        });
        let trade = Trade {
            trade_id: self.next_trade_id,
            pair,
            price,
            quantity: fill.quantity,
            base_amount,
            cost,
            taker_direction: taker.terms.direction,
            maker_order_id,
            taker_order_id: taker.terms.order_id,
            maker_account,
            taker_account: taker.terms.account,
            maker_fee,
            taker_fee,
            timestamp_ms: now_ms,
        };
        self.next_trade_id += 1;
        self.record_market_data(&trade, buyer, seller);
        events.push(Event::TradeExecuted(trade));
        self.after_maker_filled(spec, (pair_position, &fill), now_ms, events);
    }

    /// The maker after its fill: its group's other order cancelled, and the maker closed when
    /// it has filled whole.
    #[inline]
    fn after_maker_filled(
        &mut self,
        spec: &PairSpec,
        (pair_position, fill): (usize, &PlannedFill),
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        let maker = self.pairs[pair_position].book.get(fill.key);
        if maker.terms.conditions().oco_group.is_some() {
            let maker = maker.clone();
            self.cancel_partner_on_fill(&maker, now_ms, events);
        }
        let maker = self.pairs[pair_position].book.get(fill.key);
        if maker.remaining().is_zero() {
            let (record, _) = self.take_from_book(pair_position, fill.key);
            let filled = self.close_resting_order(spec, record, fill.maker_slot, CancelReason::Requested, now_ms);
            events.push(Event::OrderUpdated(filled));
        } else {
            events.push(Event::OrderUpdated(maker.clone()));
        }
    }

    fn record_market_data(&mut self, trade: &Trade, buyer: AccountSlot, seller: AccountSlot) {
        let state = &mut self.pairs[usize::from(trade.pair.0)];
        state.last_price = Some(trade.price);
        state
            .candles
            .record_trade(trade.timestamp_ms, trade.price, trade.base_amount, trade.cost);
        let pair_count = self.pairs.len();
        for (slot, is_buy) in [(buyer, true), (seller, false)] {
            let index = slot.index();
            if self.positions.len() <= index {
                self.positions.resize_with(index + 1, Vec::new);
            }
            let positions = &mut self.positions[index];
            if positions.is_empty() {
                positions.resize(pair_count, Position::default());
            }
            positions[usize::from(trade.pair.0)].record_fill(is_buy, trade.base_amount.units(), trade.cost.units());
        }
    }

    /// Rests the taker's remainder or closes it, and releases what its lock no longer needs.
    fn finish_taker(
        &mut self,
        spec: &PairSpec,
        mut taker: OrderRecord,
        taker_slot: AccountSlot,
        events: &mut Vec<Event>,
    ) {
        let remaining = taker.remaining();
        let rests = taker.terms.order_type == OrderType::Limit
            && taker.terms.time_in_force == TimeInForce::GoodTillCancelled
            && !remaining.is_zero();
        let still_needed = if rests {
            required_lock(spec, &taker)
        } else {
            Amount::ZERO
        };
        let release = taker
            .locked
            .checked_sub(still_needed)
            .expect("invariant: the lock covers the remainder");
        self.ledger
            .unlock(taker_slot, paid_asset(spec, taker.terms.direction), release);
        taker.locked = still_needed;
        if rests {
            self.register_open_order(&taker, taker_slot);
            events.push(Event::OrderUpdated(taker.clone()));
            self.rest_in_book(taker, taker_slot);
        } else {
            if remaining.is_zero() {
                taker.status = OrderStatus::Filled;
            } else {
                taker.status = OrderStatus::Cancelled;
                taker.cancel_reason = Some(CancelReason::UnfilledRemainder);
            }
            events.push(Event::OrderUpdated(taker));
        }
    }

    /// Forgets an order taken out of its book ([`Engine::take_from_book`]): filled when
    /// nothing remains, else cancelled for `reason`; releases its lock and updates the indexes.
    pub(super) fn close_resting_order(
        &mut self,
        spec: &PairSpec,
        mut record: OrderRecord,
        slot: AccountSlot,
        reason: CancelReason,
        now_ms: u64,
    ) -> OrderRecord {
        let paid = paid_asset(spec, record.terms.direction);
        self.ledger.unlock(slot, paid, record.locked);
        self.touch_balance(slot, paid);
        record.locked = Amount::ZERO;
        record.updated_at_ms = now_ms;
        if record.remaining().is_zero() {
            record.status = OrderStatus::Filled;
        } else {
            record.status = OrderStatus::Cancelled;
            record.cancel_reason = Some(reason);
        }
        self.forget_open_order(spec, &record, slot, false);
        record
    }

    /// Cancels `account`'s open order `order_id`; when the request names a pair, an order on
    /// another pair is not found.
    pub(super) fn cancel_order(
        &mut self,
        (account, order_id, named_pair): (Address, OrderId, Option<PairIndex>),
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        // One lookup on the busy path: most cancelled orders rest.
        let location = self.order_locations.get(&order_id).copied();
        let (owner, pair) = match location {
            Some((pair, key)) => (self.pairs[usize::from(pair.0)].book.get(key).terms.account, pair),
            None => {
                let record = self.open_order(&order_id).ok_or(Rejection::OrderNotFound)?;
                (record.terms.account, record.terms.pair)
            }
        };
        if named_pair.is_some_and(|named| named != pair) {
            return Err(Rejection::OrderNotFound);
        }
        if owner != account {
            return Err(Rejection::NotOwner);
        }
        self.touched_balances.clear();
        match location {
            Some(location) => self.cancel_resting_order(location, CancelReason::Requested, now_ms, events),
            None => self.cancel_open_order(order_id, CancelReason::Requested, now_ms, events),
        }
        self.push_balance_events(events);
        Ok(())
    }

    /// Notes a balance the command changed, once. The list is short (a few entries per fill),
    /// so a scan is cheaper than sorting it at the end.
    pub(super) fn touch_balance(&mut self, slot: AccountSlot, asset: AssetIndex) {
        if !self.touched_balances.contains(&(slot, asset)) {
            self.touched_balances.push((slot, asset));
        }
    }

    pub(super) fn push_balance_events(&mut self, events: &mut Vec<Event>) {
        let ledger = &self.ledger;
        events.extend(
            self.touched_balances
                .drain(..)
                .map(|(slot, asset)| Event::BalanceUpdated {
                    account: ledger.address(slot),
                    asset,
                    balance: ledger.balance_at(slot, asset),
                }),
        );
    }
}

/// Records a fill's money on one side's order: the quote value traded, the fee paid, and the lock
/// released by what the order spent (the book records a maker's filled quantity, the caller a
/// taker's).
fn charge_fill(order: &mut OrderRecord, cost: Amount, fee: Amount, spent: Amount, now_ms: u64) {
    order.cost = order.cost.checked_add(cost).expect("an order's cost fits");
    order.fee = order.fee.checked_add(fee).expect("an order's fee fits");
    order.locked = order
        .locked
        .checked_sub(spent)
        .expect("invariant: an order's lock covers its fills");
    order.updated_at_ms = now_ms;
}

/// Whether an order of `direction` with limit `limit` trades against a resting price `resting`.
fn crosses(direction: Direction, limit: Price, resting: Price) -> bool {
    match direction {
        Direction::Buy => limit >= resting,
        Direction::Sell => limit <= resting,
    }
}

/// The asset an order pays: quote for a buy, base for a sell.
pub(super) fn paid_asset(spec: &PairSpec, direction: Direction) -> AssetIndex {
    match direction {
        Direction::Buy => spec.quote(),
        Direction::Sell => spec.base(),
    }
}

/// What a resting order must lock for its remainder: remainder × price of quote for a buy, the
/// remainder of base for a sell.
pub(super) fn required_lock(spec: &PairSpec, record: &OrderRecord) -> Amount {
    let remaining = record.remaining();
    match (record.terms.direction, record.terms.price) {
        (Direction::Buy, Some(price)) => spec.cost(price, remaining).expect("invariant: checked at placement"),
        (Direction::Buy, None) => Amount::ZERO,
        (Direction::Sell, _) => spec.base_amount(remaining),
    }
}
