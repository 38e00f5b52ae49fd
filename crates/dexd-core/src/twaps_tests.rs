//! Scenario tests of TWAP orders (contract version 5): slices placed when due and only then,
//! each the remainder over the slices left and never more than three planned slices, at the
//! limit or within 3 % of the best price; a cancel that stops them; the bounds and limits
//! refused whole; and a TWAP that survives a snapshot and a replay.

use crate::engine::{Command, Engine, EngineLimits};
use crate::events::{Event, Rejection};
use crate::money::{Address, Quantity};
use crate::order::{Direction, OrderRecord, OrderStatus, TimeInForce};
use crate::testing::{scenario_config, Venue, ALICE, BOB, CAROL, ETH, ETH_UNIT, PAIR, USDC, USDC_UNIT};
use crate::twaps::{NewTwap, TwapRecord, TwapRejection, TwapStatus, MAX_RUNNING_TWAPS_PER_ACCOUNT_AND_PAIR};

const START_MS: u64 = 1_000_000;
const INTERVAL_MS: u64 = 30_000;

fn venue() -> Venue {
    let mut venue = Venue::new(scenario_config(EngineLimits::default()), START_MS - 100);
    for account in [ALICE, BOB] {
        venue.deposit(account, ETH, 10 * ETH_UNIT);
        venue.deposit(account, USDC, 100_000 * USDC_UNIT);
    }
    venue
}

/// Alice buys `amount` ETH over ten slices of 30 s.
fn buy(venue: &Venue, amount: &str, limit: Option<&str>) -> NewTwap {
    let spec = venue.engine.pair_spec(PAIR).unwrap();
    NewTwap {
        account: ALICE,
        pair: PAIR,
        direction: Direction::Buy,
        quantity: spec.quantity_from_decimal(crate::testing::decimal(amount)).unwrap(),
        duration_ms: 10 * INTERVAL_MS,
        interval_ms: INTERVAL_MS,
        limit_price: limit.map(|price| spec.price_from_decimal(crate::testing::decimal(price)).unwrap()),
        client_twap_id: None,
    }
}

fn lots(venue: &Venue, amount: &str) -> Quantity {
    let spec = venue.engine.pair_spec(PAIR).unwrap();
    spec.quantity_from_decimal(crate::testing::decimal(amount)).unwrap()
}

fn started(events: &[Event]) -> TwapRecord {
    twap_of(events).expect("the command reports its TWAP")
}

fn twap_of(events: &[Event]) -> Option<TwapRecord> {
    events.iter().rev().find_map(|event| match event {
        Event::TwapUpdated(twap) => Some(twap.clone()),
        _ => None,
    })
}

fn slice_orders(events: &[Event]) -> Vec<OrderRecord> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::OrderUpdated(order) if order.terms.conditions().twap_id.is_some() => Some(order.clone()),
            _ => None,
        })
        .collect()
}

/// Runs slice `slice` of `twap` at its due time (plus `late_ms`).
fn run_slice(venue: &mut Venue, twap: &TwapRecord, slice: u32, late_ms: u64) -> Result<Vec<Event>, Rejection> {
    venue.time_ms = venue.time_ms.max(twap.slice_due_at_ms(slice) + late_ms - 1);
    venue.run(Command::RunTwapSlice {
        twap_id: twap.twap_id,
        slice,
    })
}

fn start_at(venue: &mut Venue, terms: NewTwap) -> TwapRecord {
    venue.time_ms = START_MS - 1;
    started(&venue.run(Command::StartTwap(terms)).unwrap())
}

#[test]
fn each_slice_buys_its_share_as_an_immediate_order_and_the_twap_completes() {
    let mut venue = venue();
    venue.rest(BOB, Direction::Sell, "2000", "5");
    let terms = buy(&venue, "1", None);
    let twap = start_at(&mut venue, terms);
    assert_eq!(
        (twap.twap_id, twap.status, twap.started_at_ms),
        (1, TwapStatus::Running, START_MS)
    );
    assert_eq!(venue.engine.due_twap_slices(START_MS, 10), vec![(1, 0)]);
    let mut fees = 0;
    for slice in 0..10 {
        let events = run_slice(&mut venue, &twap, slice, 0).unwrap();
        let orders = slice_orders(&events);
        assert_eq!(orders.len(), 1, "slice {slice} places one order");
        let order = &orders[0];
        assert_eq!(order.terms.time_in_force, TimeInForce::ImmediateOrCancel);
        assert_eq!(order.terms.conditions().twap_id, Some(twap.twap_id));
        assert_eq!(order.terms.order_id, twap.slice_order_id(slice));
        assert_eq!((order.status, order.filled), (OrderStatus::Filled, lots(&venue, "0.1")));
        fees += order.fee.units();
        let now = started(&events);
        assert_eq!(now.slices_run, slice + 1);
        let expected = if slice == 9 {
            TwapStatus::Completed
        } else {
            TwapStatus::Running
        };
        assert_eq!(now.status, expected);
    }
    let done = venue.engine.twap(twap.twap_id).unwrap();
    assert_eq!(done.filled, lots(&venue, "1"));
    assert_eq!(done.cost.units(), 2_000 * USDC_UNIT);
    assert_eq!(venue.engine.running_twap_count(), 0);
    assert!(venue.engine.due_twap_slices(u64::MAX / 2, 10).is_empty());
    assert_eq!(
        venue.engine.balance(&ALICE, ETH).available.units(),
        11 * ETH_UNIT - fees,
        "Alice holds the ETH bought, less the taker fee"
    );
}

#[test]
fn a_slice_runs_only_when_due_and_once() {
    let mut venue = venue();
    venue.rest(BOB, Direction::Sell, "2000", "5");
    let terms = buy(&venue, "1", None);
    let twap = start_at(&mut venue, terms);
    // Not yet due.
    venue.time_ms = START_MS + INTERVAL_MS - 10;
    let early = Command::RunTwapSlice {
        twap_id: twap.twap_id,
        slice: 1,
    };
    assert_eq!(venue.run(early), Err(Rejection::Twap(TwapRejection::SliceNotDue)));
    // Late, but before the next one is due: still slice 0.
    run_slice(&mut venue, &twap, 0, INTERVAL_MS - 5).unwrap();
    run_slice(&mut venue, &twap, 1, 0).unwrap();
    // Run already, and passed over.
    assert_eq!(
        run_slice(&mut venue, &twap, 1, 0),
        Err(Rejection::Twap(TwapRejection::SliceNotDue))
    );
    assert_eq!(
        run_slice(&mut venue, &twap, 0, 0),
        Err(Rejection::Twap(TwapRejection::SliceNotDue))
    );
    let unknown = Command::RunTwapSlice { twap_id: 99, slice: 0 };
    assert_eq!(venue.run(unknown), Err(Rejection::Twap(TwapRejection::NotFound)));
}

#[test]
fn missed_slices_are_caught_up_at_most_three_planned_slices_at_a_time() {
    let mut venue = venue();
    venue.rest(BOB, Direction::Sell, "2000", "5");
    let terms = buy(&venue, "1", None);
    let twap = start_at(&mut venue, terms);
    // The leader was down for the first six slices: the seventh is due, with four left.
    let events = run_slice(&mut venue, &twap, 6, 100).unwrap();
    assert_eq!(
        slice_orders(&events)[0].filled,
        lots(&venue, "0.25"),
        "1 ETH over 4 slices left"
    );
    // Down again until the end: the last slice takes at most three planned slices (0.3).
    let events = run_slice(&mut venue, &twap, 9, 10 * INTERVAL_MS).unwrap();
    assert_eq!(slice_orders(&events)[0].filled, lots(&venue, "0.3"));
    let done = started(&events);
    assert_eq!((done.status, done.slices_run), (TwapStatus::Completed, 2));
    assert_eq!(
        done.filled,
        lots(&venue, "0.55"),
        "what the cap held back is not traded"
    );
}

#[test]
fn a_slice_never_buys_above_the_limit_nor_past_three_percent_of_the_best_ask() {
    let mut venue = venue();
    venue.rest(BOB, Direction::Sell, "2000", "0.05");
    venue.rest(BOB, Direction::Sell, "2050", "4");
    venue.rest(BOB, Direction::Sell, "2070", "4");
    let terms = buy(&venue, "1", Some("2010"));
    let limited = start_at(&mut venue, terms);
    let events = run_slice(&mut venue, &limited, 0, 0).unwrap();
    let order = &slice_orders(&events)[0];
    assert_eq!(order.filled, lots(&venue, "0.05"), "only what the limit reaches");
    assert_eq!(order.cancel_reason, Some(crate::order::CancelReason::UnfilledRemainder));
    // No ask at or under 2010 is left: the next slice fills nothing, and the TWAP goes on.
    let events = run_slice(&mut venue, &limited, 1, 0).unwrap();
    let order = &slice_orders(&events)[0];
    assert_eq!((order.status, order.filled), (OrderStatus::Cancelled, Quantity::ZERO));
    assert_eq!(started(&events).status, TwapStatus::Running);

    // Without a limit: the best ask is 2050, so up to 2111.50; the 2070 asks are within.
    let mut market = buy(&venue, "20", None);
    market.account = ALICE;
    let unlimited = started(&venue.run(Command::StartTwap(market)).unwrap());
    let events = run_slice(&mut venue, &unlimited, 0, 0).unwrap();
    let order = &slice_orders(&events)[0];
    assert_eq!(order.filled, lots(&venue, "2"));
    assert_eq!(
        order.terms.price,
        venue
            .engine
            .pair_spec(PAIR)
            .unwrap()
            .price_from_decimal(crate::testing::decimal("2111.5"))
            .ok()
    );
}

#[test]
fn a_slice_the_balance_cannot_pay_places_nothing_and_the_twap_goes_on() {
    let mut venue = venue();
    venue.deposit(CAROL, USDC, 100 * USDC_UNIT);
    venue.rest(BOB, Direction::Sell, "2000", "5");
    let mut terms = buy(&venue, "1", None);
    terms.account = CAROL;
    let twap = start_at(&mut venue, terms);
    let events = run_slice(&mut venue, &twap, 0, 0).unwrap();
    assert!(
        slice_orders(&events).is_empty(),
        "0.1 ETH costs 200 USDC; Carol has 100"
    );
    let now = started(&events);
    assert_eq!(
        (now.status, now.slices_run, now.filled),
        (TwapStatus::Running, 1, Quantity::ZERO)
    );
    assert_eq!(venue.engine.balance(&CAROL, USDC).available.units(), 100 * USDC_UNIT);
}

#[test]
fn a_cancelled_twap_runs_no_more_slices_and_only_its_account_cancels_it() {
    let mut venue = venue();
    venue.rest(BOB, Direction::Sell, "2000", "5");
    let terms = buy(&venue, "1", None);
    let twap = start_at(&mut venue, terms);
    run_slice(&mut venue, &twap, 0, 0).unwrap();
    let by_bob = Command::CancelTwap {
        account: BOB,
        twap_id: twap.twap_id,
    };
    assert_eq!(venue.run(by_bob), Err(Rejection::Twap(TwapRejection::NotFound)));
    let events = venue
        .run(Command::CancelTwap {
            account: ALICE,
            twap_id: twap.twap_id,
        })
        .unwrap();
    assert_eq!(started(&events).status, TwapStatus::Cancelled);
    assert!(venue.engine.due_twap_slices(u64::MAX / 2, 10).is_empty());
    assert_eq!(
        run_slice(&mut venue, &twap, 5, 0),
        Err(Rejection::Twap(TwapRejection::NotRunning))
    );
    let again = Command::CancelTwap {
        account: ALICE,
        twap_id: twap.twap_id,
    };
    assert_eq!(venue.run(again), Err(Rejection::Twap(TwapRejection::NotRunning)));
    assert_eq!(venue.engine.twaps_of(&ALICE)[0].filled, lots(&venue, "0.1"));
}

#[test]
fn bounds_limits_and_unknown_accounts_are_refused_whole() {
    let mut venue = venue();
    let mut short = buy(&venue, "1", None);
    short.duration_ms = 240_000;
    assert!(matches!(
        venue.run(Command::StartTwap(short)),
        Err(Rejection::Twap(TwapRejection::Invalid(_)))
    ));
    let tiny = buy(&venue, "0.001", None);
    assert!(
        matches!(
            venue.run(Command::StartTwap(tiny)),
            Err(Rejection::Twap(TwapRejection::Invalid(_)))
        ),
        "a slice of 0.0001 ETH is below the pair's minimum"
    );
    let mut stranger = buy(&venue, "1", None);
    stranger.account = Address::from_bytes([0x5e; 20]);
    assert_eq!(venue.run(Command::StartTwap(stranger)), Err(Rejection::UnknownAccount));
    for _ in 0..MAX_RUNNING_TWAPS_PER_ACCOUNT_AND_PAIR {
        venue.run(Command::StartTwap(buy(&venue, "1", None))).unwrap();
    }
    assert_eq!(
        venue.run(Command::StartTwap(buy(&venue, "1", None))),
        Err(Rejection::Twap(TwapRejection::TooMany))
    );
    let mut named = buy(&venue, "1", None);
    named.account = BOB;
    named.client_twap_id = Some("slow-1".into());
    venue.run(Command::StartTwap(named.clone())).unwrap();
    assert_eq!(
        venue.run(Command::StartTwap(named)),
        Err(Rejection::Twap(TwapRejection::ClientIdReused))
    );
}

#[test]
fn a_running_twap_survives_a_snapshot_and_a_replay_of_its_commands() {
    let mut venue = venue();
    venue.rest(BOB, Direction::Sell, "2000", "5");
    let first_hash = venue.engine.state_hash();
    let terms = buy(&venue, "1", None);
    let twap = start_at(&mut venue, terms);
    assert_ne!(venue.engine.state_hash(), first_hash, "a TWAP is part of the state");
    run_slice(&mut venue, &twap, 0, 0).unwrap();
    run_slice(&mut venue, &twap, 3, 7).unwrap();
    let restored = Engine::from_state(scenario_config(EngineLimits::default()), &venue.engine.state()).unwrap();
    assert_eq!(restored.state_hash(), venue.engine.state_hash());
    assert_eq!(
        restored.due_twap_slices(twap.slice_due_at_ms(4), 10),
        vec![(twap.twap_id, 4)]
    );
    let mut follower = venue_at(venue.time_ms);
    follower.engine = restored;
    run_slice(&mut follower, &twap, 4, 0).unwrap();
    run_slice(&mut venue, &twap, 4, 0).unwrap();
    assert_eq!(follower.engine.state_hash(), venue.engine.state_hash());
}

fn venue_at(time_ms: u64) -> Venue {
    let mut venue = Venue::new(scenario_config(EngineLimits::default()), 0);
    venue.time_ms = time_ms;
    venue
}
