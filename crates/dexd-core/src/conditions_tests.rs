//! Scenario tests of conditional orders: triggers firing in the matching that meets them (and
//! the cascade), one-cancels-other groups and their shared lock, expiry, and the hostile inputs
//! each refuses with nothing changed. Every command runs through `execute_checked`, so every
//! invariant (the groups' shares included) is checked after each.

use crate::engine::{Command, Engine, EngineLimits};
use crate::events::{Event, Rejection};
use crate::money::{Amount, OrderId, Quantity};
use crate::order::{
    CancelReason, Direction, NewOrder, OrderRecord, OrderStatus, TimeInForce, Trigger, TriggerCondition,
};
use crate::testing::{amend, decimal, scenario_config, Venue, ALICE, BOB, CAROL, ETH, ETH_UNIT, PAIR, USDC, USDC_UNIT};

/// ETH/USDC in ledger custody where Alice, Bob and Carol hold 100 ETH and 1,000,000 USDC each.
fn market() -> Venue {
    let mut market = Venue::new(
        scenario_config(EngineLimits {
            max_open_orders_per_account: 20_000,
            ..EngineLimits::default()
        }),
        1_000_000,
    );
    for account in [ALICE, BOB, CAROL] {
        market.deposit(account, ETH, 100 * ETH_UNIT);
        market.deposit(account, USDC, 1_000_000 * USDC_UNIT);
    }
    market
}

/// What the trigger tests ask of a venue beyond placing orders.
trait Triggers {
    /// A trigger at `price` (a decimal).
    fn trigger(&self, price: &str, condition: TriggerCondition) -> Option<Trigger>;
    /// Prints a trade at `price` between Carol (resting) and Bob.
    fn print(&mut self, price: &str) -> Vec<Event>;
    /// The order's record while it is open.
    fn open(&self, order: &NewOrder) -> Option<OrderRecord>;
}

impl Triggers for Venue {
    fn trigger(&self, price: &str, condition: TriggerCondition) -> Option<Trigger> {
        let spec = self.engine.pair_spec(PAIR).unwrap();
        Some(Trigger {
            price: spec.price_from_decimal(decimal(price)).unwrap(),
            condition,
        })
    }

    fn print(&mut self, price: &str) -> Vec<Event> {
        let resting = self.order(CAROL, Direction::Sell, Some(price), "0.01");
        self.place(resting).unwrap();
        let taking = self.order(BOB, Direction::Buy, Some(price), "0.01");
        self.place(taking).unwrap()
    }

    fn open(&self, order: &NewOrder) -> Option<OrderRecord> {
        self.engine.open_order(&order.order_id).cloned()
    }
}

fn updates_of(events: &[Event], order_id: OrderId) -> Vec<OrderRecord> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::OrderUpdated(record) if record.terms.order_id == order_id => Some(record.clone()),
            _ => None,
        })
        .collect()
}

fn fired_order(events: &[Event]) -> Vec<OrderId> {
    let mut seen = Vec::new();
    for event in events {
        if let Event::TradeExecuted(trade) = event {
            if !seen.contains(&trade.taker_order_id) {
                seen.push(trade.taker_order_id);
            }
        }
    }
    seen
}

#[test]
fn a_stop_waits_locked_and_fires_in_the_matching_that_prints_its_price() {
    let mut market = market();
    market.print("2500");
    let before = market.engine.balance(&ALICE, ETH);
    let mut stop = market.order(ALICE, Direction::Sell, None, "1");
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    let events = market.place(stop.clone()).unwrap();
    let waiting = &updates_of(&events, stop.order_id)[0];
    assert_eq!(waiting.status, OrderStatus::Untriggered);
    assert_eq!(waiting.locked, Amount::from_units(ETH_UNIT));
    assert_eq!(
        market.engine.balance(&ALICE, ETH).locked,
        before.locked.checked_add(Amount::from_units(ETH_UNIT)).unwrap()
    );
    assert_eq!(market.engine.open_order_count(&ALICE), 1);
    // A bid for it to sell into, above the trigger: nothing fires at 2450.
    let bid = market.order(BOB, Direction::Buy, Some("2390"), "2");
    market.place(bid.clone()).unwrap();
    market.print("2450");
    assert_eq!(market.open(&stop).unwrap().status, OrderStatus::Untriggered);
    // A trade at 2400 meets it: it sells into Bob's bid in the same command.
    let events = market.print("2400");
    let updates = updates_of(&events, stop.order_id);
    let last = updates.last().unwrap();
    assert_eq!(last.status, OrderStatus::Filled);
    assert_eq!(last.filled, Quantity::from_lots(10_000));
    assert!(market.open(&stop).is_none());
    assert_eq!(
        market.engine.open_order(&bid.order_id).unwrap().filled,
        Quantity::from_lots(10_000)
    );
}

#[test]
fn a_trigger_already_met_or_malformed_is_refused_and_changes_nothing() {
    let mut market = market();
    // With no trade yet, no trigger is met.
    let mut early = market.order(ALICE, Direction::Sell, Some("2000"), "1");
    early.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    market.place(early).unwrap();
    market.print("2500");
    let mut met = market.order(ALICE, Direction::Sell, None, "1");
    met.conditions_mut().trigger = market.trigger("2500", TriggerCondition::Below);
    assert_eq!(market.place(met), Err(Rejection::TriggerAlreadyMet));
    let mut above_met = market.order(ALICE, Direction::Buy, Some("2600"), "1");
    above_met.conditions_mut().trigger = market.trigger("2499.99", TriggerCondition::Above);
    assert_eq!(market.place(above_met), Err(Rejection::TriggerAlreadyMet));
    let mut market_buy = market.order(ALICE, Direction::Buy, None, "1");
    market_buy.conditions_mut().trigger = market.trigger("2600", TriggerCondition::Above);
    assert!(matches!(market.place(market_buy), Err(Rejection::InvalidOrder(_))));
    let mut post_only = market.order(ALICE, Direction::Sell, Some("2300"), "1");
    post_only.post_only = true;
    post_only.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    assert!(matches!(market.place(post_only), Err(Rejection::InvalidOrder(_))));
    let mut too_much = market.order(ALICE, Direction::Sell, None, "1000");
    too_much.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    assert_eq!(market.place(too_much), Err(Rejection::InsufficientBalance));
}

#[test]
fn a_cascade_fires_in_trigger_price_order_and_never_twice() {
    let mut market = market();
    market.print("2500");
    // Bids at 2390, 2380, 2370 for the stops to sell into.
    for price in ["2390", "2380", "2370"] {
        let bid = market.order(BOB, Direction::Buy, Some(price), "1");
        market.place(bid).unwrap();
    }
    // Three stops: 2395 fires on a trade at 2395; its sale prints at 2390, which meets 2390;
    // that one prints at 2390 and 2380, which meets 2385. Placed out of price order.
    let mut stops = Vec::new();
    for trigger in ["2385", "2395", "2390"] {
        let mut stop = market.order(ALICE, Direction::Sell, None, "1");
        stop.conditions_mut().trigger = market.trigger(trigger, TriggerCondition::Below);
        market.place(stop.clone()).unwrap();
        stops.push(stop.order_id);
    }
    let events = market.print("2395");
    let takers = fired_order(&events);
    // The print itself, then 2395, 2390, 2385.
    assert_eq!(takers[1..], [stops[1], stops[2], stops[0]]);
    assert_eq!(market.engine.untriggered_order_count(), 0);
}

#[test]
fn a_trigger_placed_after_a_trade_is_not_fired_by_it() {
    let mut market = market();
    market.print("2500");
    let mut stop = market.order(ALICE, Direction::Sell, Some("2300"), "1");
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    market.place(stop.clone()).unwrap();
    market.print("2401");
    assert_eq!(market.open(&stop).unwrap().status, OrderStatus::Untriggered);
}

#[test]
fn a_fired_fill_or_kill_that_cannot_fill_is_cancelled_as_unfilled_and_unlocked() {
    let mut market = market();
    market.print("2500");
    let mut stop = market.order(ALICE, Direction::Sell, Some("2300"), "5");
    stop.time_in_force = TimeInForce::FillOrKill;
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    market.place(stop.clone()).unwrap();
    let events = market.print("2400");
    let last = updates_of(&events, stop.order_id).pop().unwrap();
    assert_eq!(last.status, OrderStatus::Cancelled);
    assert_eq!(last.cancel_reason, Some(CancelReason::UnfilledRemainder));
    assert_eq!(market.engine.balance(&ALICE, ETH).locked, Amount::ZERO);
}

#[test]
fn an_oco_pair_shares_one_lock_and_a_fill_cancels_the_stop() {
    let mut market = market();
    market.print("2500");
    let mut take_profit = market.order(ALICE, Direction::Sell, Some("2600"), "2");
    take_profit.conditions_mut().oco_group = Some("exit-1".into());
    let mut stop = market.order(ALICE, Direction::Sell, None, "3");
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    stop.conditions_mut().oco_group = Some("exit-1".into());
    market.place(stop.clone()).unwrap();
    market.place(take_profit.clone()).unwrap();
    // One lock of the larger amount: 3 ETH, not 5.
    assert_eq!(
        market.engine.balance(&ALICE, ETH).locked,
        Amount::from_units(3 * ETH_UNIT)
    );
    assert_eq!(
        market.open(&take_profit).unwrap().locked,
        Amount::from_units(2 * ETH_UNIT)
    );
    assert_eq!(market.open(&stop).unwrap().locked, Amount::from_units(ETH_UNIT));
    // A third order in the group, or one of another side, is refused.
    let mut third = market.order(ALICE, Direction::Sell, None, "1");
    third.conditions_mut().trigger = market.trigger("2300", TriggerCondition::Below);
    third.conditions_mut().oco_group = Some("exit-1".into());
    assert!(matches!(market.place(third), Err(Rejection::OcoGroupInvalid(_))));
    // Bob lifts part of the take-profit: the stop is cancelled for the group.
    let lift = market.order(BOB, Direction::Buy, Some("2600"), "0.5");
    let events = market.place(lift).unwrap();
    let stop_after = updates_of(&events, stop.order_id).pop().unwrap();
    assert_eq!(stop_after.cancel_reason, Some(CancelReason::OneCancelsOther));
    assert_eq!(
        market.engine.balance(&ALICE, ETH).locked,
        Amount::from_units(15 * ETH_UNIT / 10)
    );
}

#[test]
fn an_oco_stop_that_fires_cancels_the_take_profit_and_a_cancel_gives_the_lock_back() {
    let mut market = market();
    market.print("2500");
    let mut take_profit = market.order(ALICE, Direction::Sell, Some("2600"), "3");
    take_profit.conditions_mut().oco_group = Some("exit-2".into());
    let mut stop = market.order(ALICE, Direction::Sell, None, "2");
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    stop.conditions_mut().oco_group = Some("exit-2".into());
    market.place(take_profit.clone()).unwrap();
    market.place(stop.clone()).unwrap();
    assert_eq!(market.open(&stop).unwrap().locked, Amount::ZERO);
    let bid = market.order(BOB, Direction::Buy, Some("2300"), "5");
    market.place(bid).unwrap();
    let events = market.print("2400");
    let cancelled = updates_of(&events, take_profit.order_id).pop().unwrap();
    assert_eq!(cancelled.cancel_reason, Some(CancelReason::OneCancelsOther));
    assert_eq!(
        updates_of(&events, stop.order_id).pop().unwrap().status,
        OrderStatus::Filled
    );
    assert_eq!(market.engine.balance(&ALICE, ETH).locked, Amount::ZERO);

    // A group whose resting order is cancelled by its owner: the stop takes its whole lock back.
    let mut take_profit = market.order(ALICE, Direction::Sell, Some("2600"), "3");
    take_profit.conditions_mut().oco_group = Some("exit-3".into());
    let mut stop = market.order(ALICE, Direction::Sell, None, "2");
    stop.conditions_mut().trigger = market.trigger("2000", TriggerCondition::Below);
    stop.conditions_mut().oco_group = Some("exit-3".into());
    market.place(take_profit.clone()).unwrap();
    market.place(stop.clone()).unwrap();
    market
        .run(Command::CancelOrder {
            account: ALICE,
            order_id: take_profit.order_id,
            pair: Some(PAIR),
        })
        .unwrap();
    assert_eq!(market.open(&stop).unwrap().locked, Amount::from_units(2 * ETH_UNIT));
}

#[test]
fn hostile_groups_are_refused_with_nothing_changed() {
    let mut market = market();
    market.print("2500");
    let mut first = market.order(ALICE, Direction::Sell, Some("2600"), "1");
    first.conditions_mut().oco_group = Some("g".into());
    market.place(first).unwrap();
    // Another account's order naming the group makes a group of its own: a name is the
    // account's, so nobody can take another's first (or join it).
    let mut other_account = market.order(BOB, Direction::Sell, None, "1");
    other_account.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    other_account.conditions_mut().oco_group = Some("g".into());
    market.place(other_account.clone()).expect("Bob's own group g");
    market
        .run(Command::CancelOrder {
            account: BOB,
            order_id: other_account.order_id,
            pair: Some(PAIR),
        })
        .unwrap();
    // The other side.
    let mut other_side = market.order(ALICE, Direction::Buy, Some("2400"), "1");
    other_side.conditions_mut().trigger = market.trigger("2450", TriggerCondition::Below);
    other_side.conditions_mut().oco_group = Some("g".into());
    assert!(matches!(market.place(other_side), Err(Rejection::OcoGroupInvalid(_))));
    // Two resting orders.
    let mut second_limit = market.order(ALICE, Direction::Sell, Some("2700"), "1");
    second_limit.conditions_mut().oco_group = Some("g".into());
    assert!(matches!(market.place(second_limit), Err(Rejection::OcoGroupInvalid(_))));
    // An order that neither rests nor waits.
    let mut immediate = market.order(ALICE, Direction::Sell, Some("2700"), "1");
    immediate.time_in_force = TimeInForce::ImmediateOrCancel;
    immediate.conditions_mut().oco_group = Some("h".into());
    assert!(matches!(market.place(immediate), Err(Rejection::OcoGroupInvalid(_))));
}

#[test]
fn an_order_expires_once_by_a_journaled_command_and_not_before() {
    let mut market = market();
    let now = market.time_ms;
    let mut too_soon = market.order(ALICE, Direction::Sell, Some("2600"), "1");
    too_soon.conditions_mut().expires_at_ms = Some(now + 4_000);
    assert_eq!(market.place(too_soon), Err(Rejection::ExpiryTooSoon));
    let mut past = market.order(ALICE, Direction::Sell, Some("2600"), "1");
    past.conditions_mut().expires_at_ms = Some(now - 1);
    assert_eq!(market.place(past), Err(Rejection::ExpiryTooSoon));
    let mut far = market.order(ALICE, Direction::Sell, Some("2600"), "1");
    far.conditions_mut().expires_at_ms = Some(now + 400 * 86_400_000);
    assert_eq!(market.place(far), Err(Rejection::ExpiryTooFar));
    let mut expiring = market.order(ALICE, Direction::Sell, Some("2600"), "1");
    let expires_at_ms = now + 10_000;
    expiring.conditions_mut().expires_at_ms = Some(expires_at_ms);
    market.place(expiring.clone()).unwrap();
    assert_eq!(market.engine.due_expiries(expires_at_ms - 1, 10), vec![]);
    let early = Command::ExpireOrder {
        order_id: expiring.order_id,
    };
    assert_eq!(market.run(early.clone()), Err(Rejection::ExpiryNotDue));
    assert_eq!(market.engine.due_expiries(expires_at_ms, 10), vec![expiring.order_id]);
    market.time_ms = expires_at_ms;
    let events = market.run(early.clone()).unwrap();
    let expired = updates_of(&events, expiring.order_id).pop().unwrap();
    assert_eq!(expired.cancel_reason, Some(CancelReason::Expired));
    assert_eq!(market.engine.balance(&ALICE, ETH).locked, Amount::ZERO);
    assert_eq!(market.run(early), Err(Rejection::ExpiryNotDue));
    assert!(market.engine.due_expiries(u64::MAX, 10).is_empty());
}

#[test]
fn an_untriggered_order_is_cancelled_by_cancel_all_and_amended_keeping_its_trigger() {
    let mut market = market();
    market.print("2500");
    let mut stop = market.order(ALICE, Direction::Sell, Some("2300"), "1");
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    market.place(stop.clone()).unwrap();
    let mut replacement = market.order(ALICE, Direction::Sell, Some("2350"), "2");
    replacement.conditions = stop.conditions.clone();
    let events = market.run(amend(stop.order_id, replacement.clone())).unwrap();
    assert_eq!(updates_of(&events, stop.order_id)[0].status, OrderStatus::Cancelled);
    let amended = market.open(&replacement).unwrap();
    assert_eq!(amended.status, OrderStatus::Untriggered);
    assert_eq!(amended.locked, Amount::from_units(2 * ETH_UNIT));
    let events = market
        .run(Command::CancelAll {
            account: ALICE,
            pair: None,
        })
        .unwrap();
    assert_eq!(
        updates_of(&events, replacement.order_id)[0].cancel_reason,
        Some(CancelReason::Requested)
    );
    assert_eq!(market.engine.balance(&ALICE, ETH).locked, Amount::ZERO);
}

#[test]
fn an_amend_cannot_move_the_trigger_it_keeps() {
    let mut market = market();
    market.print("2500");
    let mut stop = market.order(ALICE, Direction::Sell, Some("2300"), "1");
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    market.place(stop.clone()).unwrap();
    let mut replacement = market.order(ALICE, Direction::Sell, Some("2300"), "1");
    replacement.conditions = stop.conditions.clone();
    replacement.conditions_mut().trigger = market.trigger("2450", TriggerCondition::Below);
    assert!(matches!(
        market.run(amend(stop.order_id, replacement)),
        Err(Rejection::InvalidOrder(_))
    ));
    assert_eq!(market.open(&stop).unwrap().status, OrderStatus::Untriggered);
}

#[test]
fn a_state_with_conditional_orders_restores_to_the_same_hash() {
    let mut market = market();
    market.print("2500");
    let mut take_profit = market.order(ALICE, Direction::Sell, Some("2600"), "3");
    take_profit.conditions_mut().oco_group = Some("exit".into());
    take_profit.conditions_mut().expires_at_ms = Some(market.time_ms + 60_000);
    let mut stop = market.order(ALICE, Direction::Sell, None, "2");
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    stop.conditions_mut().oco_group = Some("exit".into());
    market.place(take_profit).unwrap();
    market.place(stop).unwrap();
    let state = market.engine.state();
    let restored = Engine::from_state(scenario_config(EngineLimits::default()), &state).unwrap();
    assert_eq!(restored.state_hash(), market.engine.state_hash());
    restored.check_invariants().unwrap();
    assert_eq!(restored.due_expiries(u64::MAX, 10).len(), 1);
}

/// Regression (found by `conditional_properties`): an order that fired left its group; a later
/// order that takes the group's name is not its partner, and the fired order's fill cancels
/// nothing (it cancelled a resting order that the filling taker's plan was about to fill).
#[test]
fn a_fired_order_that_fills_does_not_cancel_a_later_order_of_its_groups_name() {
    let mut market = market();
    market.print("2500");
    let mut stop = market.order(ALICE, Direction::Sell, Some("2450"), "1");
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    stop.conditions_mut().oco_group = Some("reused".into());
    market.place(stop.clone()).unwrap();
    market.print("2400");
    assert_eq!(market.open(&stop).unwrap().status, OrderStatus::Open);
    let mut later = market.order(ALICE, Direction::Sell, Some("2460"), "1");
    later.conditions_mut().oco_group = Some("reused".into());
    market.place(later.clone()).unwrap();
    let sweep = market.order(BOB, Direction::Buy, Some("2460"), "2");
    let events = market.place(sweep).unwrap();
    assert_eq!(
        updates_of(&events, stop.order_id).pop().unwrap().status,
        OrderStatus::Filled
    );
    assert_eq!(
        updates_of(&events, later.order_id).pop().unwrap().status,
        OrderStatus::Filled
    );
}

/// Regression: a fired order took a new sequence, and the stores and streams, which know an
/// order by its sequence, lost it. It keeps its sequence and rests behind the orders already at
/// its price when it fires.
#[test]
fn a_fired_order_that_rests_keeps_its_sequence_and_queues_behind_earlier_orders() {
    let mut market = market();
    market.print("2500");
    let mut stop = market.order(ALICE, Direction::Sell, Some("2390"), "1");
    stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
    let events = market.place(stop.clone()).unwrap();
    let sequence = updates_of(&events, stop.order_id)[0].sequence;
    let earlier = market.order(CAROL, Direction::Sell, Some("2390"), "1");
    market.place(earlier.clone()).unwrap();
    let events = market.print("2400");
    let rested = updates_of(&events, stop.order_id).pop().unwrap();
    assert_eq!((rested.status, rested.sequence), (OrderStatus::Open, sequence));
    // (The print's buy at 2400 took 0.01 of Carol's 2390, the better price, which fired the stop.)
    let carol_filled = market.open(&earlier).unwrap().filled;
    let lift = market.order(BOB, Direction::Buy, Some("2390"), "0.5");
    let events = market.place(lift).unwrap();
    let carol_after = updates_of(&events, earlier.order_id).pop().unwrap().filled;
    assert_eq!(
        carol_after,
        carol_filled.checked_add(Quantity::from_lots(5_000)).unwrap()
    );
    assert!(updates_of(&events, stop.order_id).is_empty());
}

/// A venue of `rules` where `count` stops (each selling 0.001 at market) wait below 2,400 and a
/// bid of `bid_amount` at 2,000 takes what they sell.
fn crowd_of_stops(rules: u64, count: usize, bid_amount: &str) -> Venue {
    let mut market = Venue::new(
        scenario_config(EngineLimits {
            max_open_orders_per_account: 40_000,
            rules,
            ..EngineLimits::default()
        }),
        1_000_000,
    );
    for account in [ALICE, BOB, CAROL] {
        market.deposit(account, ETH, 100 * ETH_UNIT);
        market.deposit(account, USDC, 1_000_000 * USDC_UNIT);
    }
    market.print("2500");
    let bid = market.order(CAROL, Direction::Buy, Some("2000"), bid_amount);
    market.place(bid).unwrap();
    let mut events = Vec::new();
    for _ in 0..count {
        let mut stop = market.order(ALICE, Direction::Sell, None, "0.001");
        stop.conditions_mut().trigger = market.trigger("2400", TriggerCondition::Below);
        // Unchecked, for speed: the invariants are checked after the trades below.
        market
            .engine
            .execute(Command::PlaceOrder(stop), market.time_ms, &mut events)
            .unwrap();
    }
    market
}

/// One stop more than a command fires.
const ONE_BEYOND: usize = crate::engine::MAX_TRIGGERS_FIRED_PER_COMMAND + 1;

/// A journal from before the queue: one command fires at most `MAX_TRIGGERS_FIRED_PER_COMMAND`,
/// those met beyond it go back to waiting, and only the next trade that meets them fires them.
#[test]
fn before_the_queue_a_cascade_stops_at_its_bound_and_the_next_trade_fires_the_rest() {
    let mut market = crowd_of_stops(crate::configuration::RULE_EXPIRED_MAKERS_SKIPPED, ONE_BEYOND, "50");
    market.print("2400");
    assert_eq!(market.engine.untriggered_order_count(), 1);
    assert!(market.engine.pairs_with_met_triggers_waiting().is_empty());
    market.print("2400");
    assert_eq!(market.engine.untriggered_order_count(), 0);
}

/// Under the queue, the stop met beyond the bound waits in the pair's queue and fires in the
/// next command the timer journals, without another trade; a second such command is refused.
#[test]
fn a_met_stop_beyond_the_bound_fires_in_the_next_command_without_a_trade() {
    let mut market = crowd_of_stops(crate::configuration::CURRENT_RULES, ONE_BEYOND, "50");
    market.print("2400");
    assert_eq!(market.engine.untriggered_order_count(), 1);
    assert_eq!(market.engine.pairs_with_met_triggers_waiting(), vec![PAIR]);
    // The book's price is 2,000 now, far from 2,400: no trade will meet the stop again.
    let events = market.run(Command::FireMetTriggers { pair: PAIR }).unwrap();
    assert_eq!(market.engine.untriggered_order_count(), 0);
    let trades = events
        .iter()
        .filter(|event| matches!(event, Event::TradeExecuted(_)))
        .count();
    assert_eq!(trades, 1, "the last stop sold into the bid");
    assert!(market.engine.pairs_with_met_triggers_waiting().is_empty());
    assert_eq!(
        market.run(Command::FireMetTriggers { pair: PAIR }),
        Err(Rejection::NoMetTriggersWaiting)
    );
}

/// The queue is state: a snapshot taken while stops wait restores to the same hash, and the
/// restored engine fires them as the first does.
#[test]
fn waiting_met_stops_survive_a_snapshot() {
    let mut market = crowd_of_stops(crate::configuration::CURRENT_RULES, ONE_BEYOND, "50");
    market.print("2400");
    let restored = Engine::from_state(scenario_config(EngineLimits::default()), &market.engine.state()).unwrap();
    assert_eq!(restored.state_hash(), market.engine.state_hash());
    assert_eq!(restored.met_pending(), market.engine.met_pending());
    let mut twin = market.clone();
    twin.engine = restored;
    let first = market.run(Command::FireMetTriggers { pair: PAIR }).unwrap();
    let second = twin.run(Command::FireMetTriggers { pair: PAIR }).unwrap();
    assert_eq!(first, second);
    assert_eq!(twin.engine.state_hash(), market.engine.state_hash());
}

/// A stop placed after the price left its level is not met by the matching that passed it
/// earlier, though that matching's range still waits: it fires only when a trade meets it.
#[test]
fn a_stop_placed_after_a_waiting_range_is_not_fired_by_it() {
    use crate::engine::MAX_TRIGGERS_FIRED_PER_COMMAND;
    // The bid takes exactly the first command's stops: those fired later find nothing to sell
    // into and are cancelled, printing nothing, so the price can go back up while stops wait.
    let mut market = crowd_of_stops(
        crate::configuration::CURRENT_RULES,
        3 * MAX_TRIGGERS_FIRED_PER_COMMAND + 1,
        "10",
    );
    market.print("2400");
    // The price back to 2,450 (Carol's ask rests, then is lifted): each of those two commands
    // fires as many as one command fires, and one stop still waits, with the range the first
    // command's trades at 2,000 met.
    market.print("2450");
    assert_eq!(market.engine.untriggered_order_count(), 1);
    assert_eq!(market.engine.pairs_with_met_triggers_waiting(), vec![PAIR]);
    let mut late = market.order(ALICE, Direction::Sell, None, "0.001");
    late.conditions_mut().trigger = market.trigger("2300", TriggerCondition::Below);
    market.place(late.clone()).unwrap();
    while market.run(Command::FireMetTriggers { pair: PAIR }).is_ok() {}
    assert_eq!(market.engine.untriggered_order_count(), 1, "the crowd's last fired");
    assert_eq!(
        market.open(&late).map(|record| record.status),
        Some(OrderStatus::Untriggered)
    );
}

/// An expired maker the venue's timer has not cancelled yet: under the rule it is cancelled by
/// the command that meets it and never filled; an engine of a journal from before the rule
/// (rules 0) fills it, as that journal's replay must.
fn taker_meets_an_expired_maker(rules: u64) -> (Vec<Event>, OrderId, Venue) {
    let mut market = Venue::new(
        scenario_config(EngineLimits {
            rules,
            ..EngineLimits::default()
        }),
        1_000_000,
    );
    for account in [ALICE, BOB] {
        market.deposit(account, ETH, 100 * ETH_UNIT);
        market.deposit(account, USDC, 1_000_000 * USDC_UNIT);
    }
    let mut maker = market.order(BOB, Direction::Sell, Some("2000"), "1");
    let expires_at_ms = market.time_ms + 10_000;
    maker.conditions_mut().expires_at_ms = Some(expires_at_ms);
    market.place(maker.clone()).unwrap();
    market.rest(BOB, Direction::Sell, "2001", "1");
    // Ten ms past the expiry, before any ExpireOrder: the taker arrives.
    market.time_ms = expires_at_ms + 9;
    let taker = NewOrder {
        time_in_force: TimeInForce::ImmediateOrCancel,
        ..market.order(ALICE, Direction::Buy, Some("2001"), "1")
    };
    let events = market.place(taker).unwrap();
    (events, maker.order_id, market)
}

#[test]
fn an_expired_maker_is_cancelled_by_the_taker_that_meets_it_never_filled() {
    let (events, maker, market) = taker_meets_an_expired_maker(crate::configuration::CURRENT_RULES);
    let maker_updates = updates_of(&events, maker);
    assert_eq!(maker_updates.len(), 1, "{events:?}");
    assert_eq!(
        (
            maker_updates[0].status,
            maker_updates[0].cancel_reason,
            maker_updates[0].filled
        ),
        (OrderStatus::Cancelled, Some(CancelReason::Expired), Quantity::ZERO)
    );
    let trades: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::TradeExecuted(trade) => Some(trade.price),
            _ => None,
        })
        .collect();
    assert_eq!(trades.len(), 1, "the taker walks on to the live order at 2001");
    assert!(market.engine.open_order(&maker).is_none());
    assert!(
        market.engine.due_expiries(u64::MAX, 10).is_empty(),
        "its expiry is forgotten"
    );
    let unlocked = market.engine.balance(&BOB, ETH);
    assert_eq!(unlocked.locked, Amount::ZERO, "the expired maker's lock is released");
}

#[test]
fn a_journal_from_before_the_rule_fills_an_expired_maker_as_it_did() {
    let (events, maker, _) = taker_meets_an_expired_maker(0);
    let maker_updates = updates_of(&events, maker);
    assert_eq!(maker_updates[0].status, OrderStatus::Filled, "{events:?}");
}
