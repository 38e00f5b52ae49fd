//! Scenario tests of what makes the engine a replayable record: the same commands give the same
//! state, time only moves on, a signed command applies once, the published state hash holds, and
//! a maker's lists of resting orders stay true by every road out of a book.

use crate::engine::{Command, Engine, EngineLimits};
use crate::engine_tests::{alice_withdraws_usdc, engine, engine_with_limits, usdc, venue, Placing};
use crate::events::{Event, Rejection};
use crate::money::{Address, OrderId};
use crate::order::{CancelReason, Direction, NewOrder, TimeInForce};
use crate::testing::{Venue, ALICE, BOB, ETH, ETH_UNIT, PAIR, USDC, USDC_UNIT};
use crate::transfer::TransferRequest;

#[test]
fn the_same_commands_at_the_same_times_give_the_same_state() {
    let build = || {
        let mut venue = venue();
        venue.deposit(ALICE, ETH, 5 * ETH_UNIT);
        venue.deposit(BOB, USDC, 5_000 * USDC_UNIT);
        venue.limit(ALICE, Direction::Sell, "100", "2");
        venue.limit(BOB, Direction::Buy, "101", "1");
        venue.limit(BOB, Direction::Buy, "99", "1");
        venue.engine.state_hash()
    };
    assert_eq!(build(), build());
}

#[test]
fn time_never_runs_backwards_inside_the_engine() {
    let mut engine = engine();
    let mut events = Vec::new();
    let deposit = |id| {
        Command::Deposit(TransferRequest {
            transfer_id: [id; 32],
            account: ALICE,
            asset: USDC,
            amount: usdc(1),
        })
    };
    engine.execute(deposit(1), 5_000, &mut events).unwrap();
    engine.execute(deposit(2), 4_000, &mut events).unwrap();
    let times: Vec<u64> = events
        .iter()
        .filter_map(|event| match event {
            Event::TransferApplied(transfer) => Some(transfer.timestamp_ms),
            _ => None,
        })
        .collect();
    assert_eq!(times, vec![5_000, 5_000]);
}

#[test]
fn a_signed_command_uses_its_nonce_once_and_a_refused_one_leaves_it_free() {
    let mut venue = venue();
    venue.deposit(ALICE, USDC, 100 * USDC_UNIT);
    let claim = |expiry_ms| crate::NonceClaim {
        nonce: crate::Nonce::from_bytes([9; 32]),
        expiry_ms,
        batch: None,
        venue_signed: false,
    };
    let run_signed = |venue: &mut Venue, command, claim| {
        venue.time_ms += 1;
        let before = venue.engine.state_hash();
        let mut events = Vec::new();
        let result = venue
            .engine
            .execute_signed(command, Some(claim), venue.time_ms, &mut events);
        if result.is_err() {
            assert_eq!(before, venue.engine.state_hash(), "a rejection changes nothing");
        }
        result
    };
    let later = venue.time_ms + 60_000;
    // Refused for want of funds: the nonce stays free.
    assert_eq!(
        run_signed(&mut venue, alice_withdraws_usdc(1_000 * USDC_UNIT), claim(later)),
        Err(Rejection::InsufficientBalance)
    );
    run_signed(&mut venue, alice_withdraws_usdc(USDC_UNIT), claim(later)).unwrap();
    assert_eq!(
        run_signed(&mut venue, alice_withdraws_usdc(USDC_UNIT), claim(later)),
        Err(Rejection::Nonce(crate::NonceRejection::Reused))
    );
    let now = venue.time_ms;
    assert_eq!(
        run_signed(&mut venue, alice_withdraws_usdc(USDC_UNIT), claim(now)),
        Err(Rejection::Nonce(crate::NonceRejection::Expired))
    );
    assert_eq!(venue.balance(ALICE, USDC).available, usdc(99 * USDC_UNIT));
}

#[test]
fn a_venue_signed_command_is_applied_once_and_only_within_its_window() {
    let window_ms = crate::MAX_VENUE_SIGNED_WINDOW_MS;
    let venue_claim = |nonce: u8, expiry_ms| crate::NonceClaim {
        nonce: crate::Nonce::from_bytes([nonce; 32]),
        expiry_ms,
        batch: None,
        venue_signed: true,
    };
    let run = |venue: &mut Venue, claim| {
        let before = venue.engine.state_hash();
        let mut events = Vec::new();
        let result =
            venue
                .engine
                .execute_signed(alice_withdraws_usdc(USDC_UNIT), Some(claim), venue.time_ms, &mut events);
        if result.is_err() {
            assert_eq!(before, venue.engine.state_hash(), "a rejection changes nothing");
        }
        result
    };
    let mut venue = venue();
    venue.deposit(ALICE, USDC, 100 * USDC_UNIT);
    venue.time_ms = 1_000_000;
    let now = venue.time_ms;
    run(&mut venue, venue_claim(1, now + 2_500)).unwrap();
    // The same line again, at once or as long as its expiry is in the window: its nonce. The
    // venue's published signature sent as a client's request: its nonce too.
    assert_eq!(
        run(&mut venue, venue_claim(1, now + 2_500)),
        Err(Rejection::Nonce(crate::NonceRejection::Reused))
    );
    let as_clients = crate::NonceClaim {
        venue_signed: false,
        ..venue_claim(1, now + 2_500)
    };
    assert_eq!(
        run(&mut venue, as_clients),
        Err(Rejection::Nonce(crate::NonceRejection::Reused))
    );
    venue.time_ms = now + 2_500 + window_ms - 1;
    assert_eq!(
        run(&mut venue, venue_claim(1, now + 2_500)),
        Err(Rejection::Nonce(crate::NonceRejection::Reused))
    );
    // Later than that: the window, whatever its nonce.
    venue.time_ms = now + 2_500 + window_ms;
    assert_eq!(
        run(&mut venue, venue_claim(1, now + 2_500)),
        Err(Rejection::Nonce(crate::NonceRejection::Expired))
    );
    // An expiry further ahead than the window (a client's signature relabelled as the venue's).
    let now = venue.time_ms;
    assert_eq!(
        run(&mut venue, venue_claim(2, now + window_ms + 1)),
        Err(Rejection::Nonce(crate::NonceRejection::ExpiryTooFar {
            max_lifetime_ms: 2 * window_ms
        }))
    );
    run(&mut venue, venue_claim(2, now + window_ms)).unwrap();
    assert_eq!(venue.balance(ALICE, USDC).available, usdc(98 * USDC_UNIT));

    // A journal from before the rule (a window of 0): venue-signed commands claimed nothing.
    let mut venue = self::venue();
    venue.engine = engine_with_limits(EngineLimits {
        venue_signed_window_ms: 0,
        ..EngineLimits::default()
    });
    venue.deposit(ALICE, USDC, 100 * USDC_UNIT);
    run(&mut venue, venue_claim(1, 0)).unwrap();
    run(&mut venue, venue_claim(1, 0)).unwrap();
    assert_eq!(venue.balance(ALICE, USDC).available, usdc(98 * USDC_UNIT));
}

/// The state hash of a fixed story, as the public journal publishes it: balances, a book with
/// time priority, a trade's candle and positions, a waiting trigger order. Auditors compare
/// these hashes with their replay's, so a change of what the hash covers or of its order breaks
/// every published journal: this pins it (the value was computed before the state hash was
/// split into named parts, and after).
#[test]
fn the_state_hash_of_a_fixed_story_is_the_published_one() {
    let mut venue = venue();
    venue.deposit(ALICE, USDC, 10_000 * USDC_UNIT);
    venue.deposit(BOB, ETH, 5 * ETH_UNIT);
    // The story's order ids are 1, 2, 3 and 4 in every byte, as when it was published.
    let mut number = 0u8;
    let mut story_order = |venue: &mut Venue, account, direction, price, amount| {
        number += 1;
        NewOrder {
            order_id: OrderId::from_bytes([number; 32]),
            ..venue.order(account, direction, Some(price), amount)
        }
    };
    for (account, direction, price, amount) in [
        (ALICE, Direction::Buy, "2000", "1"),
        (ALICE, Direction::Buy, "1990", "0.5"),
        (BOB, Direction::Sell, "2000", "0.25"),
    ] {
        let order = story_order(&mut venue, account, direction, price, amount);
        venue.placed(order).unwrap();
    }
    let mut stop = story_order(&mut venue, BOB, Direction::Sell, "1900", "0.1");
    stop.conditions = Some(Box::new(crate::order::OrderConditions {
        trigger: Some(crate::order::Trigger {
            price: venue
                .engine
                .pair_spec(PAIR)
                .unwrap()
                .price_from_decimal(crate::testing::decimal("1950"))
                .unwrap(),
            condition: crate::order::TriggerCondition::Below,
        }),
        ..Default::default()
    }));
    venue.placed(stop).unwrap();
    let hash: String = venue
        .engine
        .state_hash()
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect();
    assert_eq!(hash, "f994f2321ea78e84624788cdb6a60a65971cc32ec5bbfb99f190936f948944e7");
}

/// A market maker's many resting orders leave in any order, by every road out of a book (a
/// cancel, a fill, an amend, a self-trade cancel, a cancel-all): after every command the
/// account's list names exactly its resting orders, each at the place its book node keeps
/// (`check_invariants`), and the count agrees with what a model of the open set says.
#[test]
fn a_makers_resting_orders_leave_in_any_order_and_the_lists_stay_true() {
    use crate::testing::{account, amend, execute_checked, order, Market, SplitMix};
    let (maker, taker) = (account(1), account(2));
    let mut engine = Market::whole_units()
        .with_open_order_limit(1_000)
        .funded_engine([maker, taker], 10u128.pow(20));
    // Asks from 1,000 up and bids below 900, a few to a level, so that links inside a level
    // are cut too.
    let mut open: Vec<OrderId> = Vec::new();
    let mut number = 0u64;
    let rest =
        |engine: &mut Engine, open: &mut Vec<OrderId>, number: u64, (direction, price_ticks): (Direction, u64)| {
            let placed = order(number, maker, direction, Some(price_ticks), 1);
            open.push(placed.order_id);
            execute_checked(engine, Command::PlaceOrder(placed), 2).unwrap();
        };
    for index in 0..300u64 {
        let side = if index % 2 == 0 {
            (Direction::Sell, 1_000 + index / 3)
        } else {
            (Direction::Buy, 900 - index / 3)
        };
        number += 1;
        rest(&mut engine, &mut open, number, side);
    }
    assert_eq!(engine.open_order_count(&maker), 300);
    // An immediate-or-cancel buy of one lot at the best ask.
    let buy_one_at_best_ask = |engine: &mut Engine, number: u64, buyer: Address| {
        let best_ask = engine.best_levels(PAIR).and_then(|(_, ask)| ask).expect("asks rest");
        let buy = NewOrder {
            time_in_force: TimeInForce::ImmediateOrCancel,
            ..order(number, buyer, Direction::Buy, Some(best_ask.price.ticks()), 1)
        };
        execute_checked(engine, Command::PlaceOrder(buy), 3).unwrap()
    };
    let mut random = SplitMix(55);
    let mut taker_number = 1u64 << 40;
    for step in 0..400u64 {
        // Asks taken by lifts and self-trade cancels come back, a few a step.
        if engine.best_levels(PAIR).and_then(|(_, ask)| ask).is_none() || step % 2 == 0 {
            number += 1;
            rest(
                &mut engine,
                &mut open,
                number,
                (Direction::Sell, 1_000 + random.below(200)),
            );
        }
        match step % 4 {
            // A cancel of any open order.
            0 => {
                let order_id = open.swap_remove(random.below(open.len() as u64) as usize);
                let cancel = Command::CancelOrder {
                    account: maker,
                    order_id,
                    pair: None,
                };
                execute_checked(&mut engine, cancel, 3).unwrap();
            }
            // The taker lifts the best ask whole.
            1 => {
                taker_number += 1;
                let events = buy_one_at_best_ask(&mut engine, taker_number, taker);
                let filled: Vec<OrderId> = events
                    .iter()
                    .filter_map(|event| match event {
                        Event::TradeExecuted(trade) => Some(trade.maker_order_id),
                        _ => None,
                    })
                    .collect();
                assert_eq!(filled.len(), 1, "one lot at the best ask fills one maker order");
                open.retain(|order_id| *order_id != filled[0]);
            }
            // An amend of any open order to a new place on its side.
            2 => {
                let position = random.below(open.len() as u64) as usize;
                let old = engine.open_order(&open[position]).expect("open").terms.clone();
                number += 1;
                let price_ticks = match old.direction {
                    Direction::Sell => 1_000 + random.below(200),
                    Direction::Buy => 800 + random.below(100),
                };
                let replacement = order(number, maker, old.direction, Some(price_ticks), 1);
                open[position] = replacement.order_id;
                execute_checked(&mut engine, amend(old.order_id, replacement), 3).unwrap();
            }
            // A maker's own buy at the best ask: its own asks there are cancelled, not traded.
            _ => {
                number += 1;
                let events = buy_one_at_best_ask(&mut engine, number, maker);
                for event in &events {
                    if let Event::OrderUpdated(record) = event {
                        if record.cancel_reason == Some(CancelReason::SelfTradePrevention) {
                            open.retain(|order_id| *order_id != record.terms.order_id);
                        }
                    }
                }
                assert!(!events.iter().any(|event| matches!(event, Event::TradeExecuted(_))));
            }
        }
        assert_eq!(engine.open_order_count(&maker), open.len() as u32, "step {step}");
    }
    let cancel_all = Command::CancelAll {
        account: maker,
        pair: Some(PAIR),
    };
    execute_checked(&mut engine, cancel_all, 4).unwrap();
    assert_eq!(engine.open_order_count(&maker), 0);
    assert_eq!(engine.resting_order_count(), 0);
}
