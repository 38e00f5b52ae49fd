//! What one account's cancel and fill cost as it holds more open orders: a market maker with
//! 10, 100, 1,000 and 10,000 resting orders (the open-order limit raised, as venues do for
//! makers). Each measured step keeps the count: `cancel_and_replace` cancels the maker's oldest
//! order and rests a new one; `fill_and_replace` has a taker take one of the maker's orders whole
//! (an immediate-or-cancel buy at the best ask) and the maker rest a new one. Both should cost
//! the same at every size. `cancel_and_replace_many_makers/<n>` is the same book of n orders
//! held by makers of 10 orders each (one maker at 10): what a cancel costs beyond it in one
//! account is the account's, what both cost beyond the 10-order figure is the book's (at
//! 10,000: 10,000 levels, a slab and an index by id that no longer fit the caches). Run with
//! `cargo bench -p dexd-core --bench open_orders`.

/// The engine's shared fixtures (`dexd_core::testing`), included: a crate's benchmarks cannot
/// turn on its own `testing` feature.
#[allow(dead_code)]
#[path = "../src/testing.rs"]
mod testing;

use std::collections::VecDeque;

use criterion::{BenchmarkId, Criterion};
use dexd_core::{Command, Direction, Engine, Event, NewOrder, OrderId, TimeInForce};
use testing::{account, order, Market};

const SIZES: [u64; 4] = [10, 100, 1_000, 10_000];
const MAKER: u64 = 1;
const TAKER: u64 = 2;
/// The first of the many makers' accounts (the one maker and the taker are below it).
const FIRST_OF_MANY_MAKERS: u64 = 1_000;
/// How many orders each of the many makers holds.
const ORDERS_PER_MANY_MAKER: u64 = 10;
/// The maker's asks sit from this price up, one tick apart.
const FIRST_ASK_TICKS: u64 = 200_000;

/// An engine where the maker rests `count` asks of one lot, one a tick, and the ids in the order
/// they were placed.
fn maker_with(count: u64) -> (Engine, VecDeque<OrderId>, u64) {
    let (engine, open, next) = makers_with(count, 1);
    (engine, open.into_iter().map(|(order_id, _)| order_id).collect(), next)
}

/// The maker's account, or with several makers the account of the `number`th order's.
fn maker_of(number: u64, makers: u64) -> u64 {
    if makers == 1 {
        MAKER
    } else {
        FIRST_OF_MANY_MAKERS + number % makers
    }
}

/// An engine where `makers` accounts rest `count` asks of one lot between them, one a tick, and
/// the ids (with their maker's number) in the order they were placed.
fn makers_with(count: u64, makers: u64) -> (Engine, VecDeque<(OrderId, u64)>, u64) {
    let traders = [MAKER, TAKER]
        .into_iter()
        .chain((0..makers).map(|number| maker_of(number, makers)))
        .map(account);
    let mut engine = Market::eth_usdc()
        .with_open_order_limit(20_000)
        .funded_engine(traders, 10u128.pow(30));
    let mut events = Vec::new();
    let mut open = VecDeque::new();
    for number in 0..count {
        let maker = maker_of(number + 1, makers);
        let ask = order(
            number + 1,
            account(maker),
            Direction::Sell,
            Some(FIRST_ASK_TICKS + number),
            1,
        );
        open.push_back((ask.order_id, maker));
        engine.execute(Command::PlaceOrder(ask), 1, &mut events).unwrap();
    }
    (engine, open, count + 1)
}

/// A new ask of the maker at `price_ticks`.
fn new_ask(number: u64, price_ticks: u64) -> NewOrder {
    order(number, account(MAKER), Direction::Sell, Some(price_ticks), 1)
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args().sample_size(20);
    let mut group = criterion.benchmark_group("one_account_open_orders");
    for count in SIZES {
        group.bench_with_input(
            BenchmarkId::new("cancel_and_replace", count),
            &count,
            |bencher, &count| {
                let (mut engine, mut open, mut next) = maker_with(count);
                let mut events = Vec::new();
                bencher.iter(|| {
                    events.clear();
                    let oldest = open.pop_front().expect("the maker holds orders");
                    engine
                        .execute(
                            Command::CancelOrder {
                                account: account(MAKER),
                                order_id: oldest,
                                pair: None,
                            },
                            2,
                            &mut events,
                        )
                        .unwrap();
                    let ask = new_ask(next, FIRST_ASK_TICKS + count + next);
                    next += 1;
                    open.push_back(ask.order_id);
                    engine.execute(Command::PlaceOrder(ask), 2, &mut events).unwrap();
                });
            },
        );
        group.bench_with_input(
            BenchmarkId::new("fill_and_replace", count),
            &count,
            |bencher, &count| {
                let (mut engine, _, mut next) = maker_with(count);
                let mut events = Vec::new();
                // The taker's orders are numbered apart from the maker's.
                let mut taker_number = 1u64 << 40;
                // The asks rise a tick an order and every new one rests above the rest, so the best
                // ask is the next in line.
                let mut best_ask_ticks = FIRST_ASK_TICKS;
                bencher.iter(|| {
                    events.clear();
                    let lift = NewOrder {
                        time_in_force: TimeInForce::ImmediateOrCancel,
                        ..order(taker_number, account(TAKER), Direction::Buy, Some(best_ask_ticks), 1)
                    };
                    let replacement_ticks = best_ask_ticks + count;
                    best_ask_ticks += 1;
                    taker_number += 1;
                    engine.execute(Command::PlaceOrder(lift), 2, &mut events).unwrap();
                    assert!(
                        events.iter().any(|event| matches!(event, Event::TradeExecuted(_))),
                        "the taker fills one of the maker's asks"
                    );
                    let ask = new_ask(next, replacement_ticks);
                    next += 1;
                    engine.execute(Command::PlaceOrder(ask), 2, &mut events).unwrap();
                });
            },
        );
    }
    group.finish();
    // The same books held by many makers of 10 orders each: what the one maker's cancel costs
    // beyond this, at each size, is the account's; what both cost beyond the 10-order book is
    // the book's and the caches'.
    let mut group = criterion.benchmark_group("many_makers_same_book");
    for count in SIZES {
        let makers = (count / ORDERS_PER_MANY_MAKER).max(1);
        group.bench_with_input(
            BenchmarkId::new("cancel_and_replace_many_makers", count),
            &count,
            |bencher, &count| {
                let (mut engine, mut open, mut next) = makers_with(count, makers);
                let mut events = Vec::new();
                bencher.iter(|| {
                    events.clear();
                    let (oldest, maker) = open.pop_front().expect("the makers hold orders");
                    engine
                        .execute(
                            Command::CancelOrder {
                                account: account(maker),
                                order_id: oldest,
                                pair: None,
                            },
                            2,
                            &mut events,
                        )
                        .unwrap();
                    let ask = order(
                        next,
                        account(maker),
                        Direction::Sell,
                        Some(FIRST_ASK_TICKS + count + next),
                        1,
                    );
                    next += 1;
                    open.push_back((ask.order_id, maker));
                    engine.execute(Command::PlaceOrder(ask), 2, &mut events).unwrap();
                });
            },
        );
    }
    group.finish();
    criterion.final_summary();
}
