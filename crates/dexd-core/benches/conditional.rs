//! What conditional orders cost the engine (issue: conditional orders).
//!
//! 1. A mixed stream (half resting limits, 30 % crossing IOCs, 20 % cancels) on a book of 10,000
//!    resting orders, with and without 100,000 untriggered orders whose triggers the stream never
//!    reaches: the goal is within 10 %. Every matching that trades asks the trigger book what it
//!    met, so this is the cost of that question on a full trigger book.
//! 2. One command whose trade fires 1,000 stop-loss sells at once, each selling into the bids
//!    below (a cascade of 1,000 takers in one command).
//!
//! `cargo bench -p dexd-core --bench conditional`

/// The engine's shared fixtures (`dexd_core::testing`), included: a crate's benchmarks and
/// integration tests cannot turn on its own `testing` feature.
#[allow(dead_code)]
#[path = "../src/testing.rs"]
mod testing;

use criterion::{BatchSize, Criterion, Throughput};
use dexd_core::{
    AssetIndex, Command, Direction, Engine, EngineLimits, NewOrder, OrderId, Price, TimeInForce, Trigger,
    TriggerCondition,
};
use testing::{account, deposit, Market, SplitMix};

const ACCOUNTS: u64 = 1_000;
const RESTING_ORDERS: u64 = 10_000;
const UNTRIGGERED_ORDERS: u64 = 100_000;
const MEASURED_COMMANDS: usize = 50_000;
const MID_PRICE_TICKS: u64 = 250_000;
const FIRED_AT_ONCE: u64 = 1_000;

fn new_engine() -> Engine {
    let mut engine = Market {
        limits: EngineLimits {
            max_open_orders_per_account: 1_000,
            ..EngineLimits::default()
        },
        ..Market::eth_usdc()
    }
    .engine();
    let mut events = Vec::new();
    for trader in 0..ACCOUNTS {
        for asset in 0..2u16 {
            let command = deposit(account(trader), AssetIndex(asset), 10u128.pow(30));
            engine.execute(command, 0, &mut events).unwrap();
        }
    }
    engine
}

fn order(number: u64, trader: u64, direction: Direction, price_ticks: Option<u64>, lots: u64) -> NewOrder {
    testing::order(number, account(trader), direction, price_ticks, lots)
}

fn side(random: &mut SplitMix) -> Direction {
    if random.below(2) == 0 {
        Direction::Buy
    } else {
        Direction::Sell
    }
}

fn resting(random: &mut SplitMix, number: u64, direction: Direction) -> Command {
    let offset = 1 + random.below(50);
    let price = match direction {
        Direction::Buy => MID_PRICE_TICKS - offset,
        Direction::Sell => MID_PRICE_TICKS + offset,
    };
    Command::PlaceOrder(order(
        number,
        random.below(ACCOUNTS),
        direction,
        Some(price),
        1 + random.below(20),
    ))
}

/// The book of `RESTING_ORDERS` and, when asked, `UNTRIGGERED_ORDERS` trigger orders far from the
/// price (stops 20 % below, take-profits 20 % above), and the measured stream.
fn prepare(with_untriggered: bool) -> (Engine, Vec<Command>) {
    let mut engine = new_engine();
    let mut events = Vec::new();
    let mut random = SplitMix(7);
    let mut number = 0u64;
    // A first trade sets the last price, so that every trigger is judged not met.
    for direction in [Direction::Sell, Direction::Buy] {
        number += 1;
        let command = Command::PlaceOrder(order(number, number, direction, Some(MID_PRICE_TICKS), 1));
        engine.execute(command, 0, &mut events).unwrap();
    }
    for _ in 0..RESTING_ORDERS {
        number += 1;
        let direction = side(&mut random);
        engine
            .execute(resting(&mut random, number, direction), 0, &mut events)
            .unwrap();
    }
    let mut trigger_number = 1u64 << 40;
    if with_untriggered {
        for index in 0..UNTRIGGERED_ORDERS {
            trigger_number += 1;
            let stop = index % 2 == 0;
            let distance = MID_PRICE_TICKS / 5 + random.below(1_000);
            let (trigger, condition) = if stop {
                (MID_PRICE_TICKS - distance, TriggerCondition::Below)
            } else {
                (MID_PRICE_TICKS + distance, TriggerCondition::Above)
            };
            let mut terms = order(
                trigger_number,
                index % ACCOUNTS,
                Direction::Sell,
                None,
                1 + random.below(20),
            );
            terms.conditions_mut().trigger = Some(Trigger {
                price: Price::from_ticks(trigger).unwrap(),
                condition,
            });
            engine.execute(Command::PlaceOrder(terms), 0, &mut events).unwrap();
        }
        assert_eq!(engine.untriggered_order_count() as u64, UNTRIGGERED_ORDERS);
    }
    // The stream is generated on the book without triggers, so both books get the same one.
    let mut live = if with_untriggered {
        prepare(false).0
    } else {
        engine.clone()
    };
    let mut stream = Vec::with_capacity(MEASURED_COMMANDS);
    let mut open: Vec<OrderId> = Vec::new();
    let mut stream_random = SplitMix(42);
    let mut stream_number = 1u64 << 50;
    while stream.len() < MEASURED_COMMANDS {
        let roll = stream_random.below(100);
        stream_number += 1;
        let command = if roll < 50 {
            let direction = side(&mut stream_random);
            resting(&mut stream_random, stream_number, direction)
        } else if roll < 80 {
            let direction = side(&mut stream_random);
            let price = match direction {
                Direction::Buy => MID_PRICE_TICKS + 60,
                Direction::Sell => MID_PRICE_TICKS - 60,
            };
            let mut terms = order(
                stream_number,
                stream_random.below(ACCOUNTS),
                direction,
                Some(price),
                1 + stream_random.below(30),
            );
            terms.time_in_force = TimeInForce::ImmediateOrCancel;
            Command::PlaceOrder(terms)
        } else {
            let Some(order_id) = open.pop() else { continue };
            let Some(owner) = live.open_order(&order_id).map(|record| record.terms.account) else {
                continue;
            };
            Command::CancelOrder {
                account: owner,
                order_id,
                pair: None,
            }
        };
        events.clear();
        if live.execute(command.clone(), 0, &mut events).is_ok() {
            if let Command::PlaceOrder(terms) = &command {
                if live.open_order(&terms.order_id).is_some() {
                    open.push(terms.order_id);
                }
            }
        }
        stream.push(command);
    }
    (engine, stream)
}

/// A book with `FIRED_AT_ONCE` stop-loss sells at one trigger price, bids enough below to take
/// them all, and the command whose trade meets them.
fn prepare_cascade() -> (Engine, Command) {
    let mut engine = new_engine();
    let mut events = Vec::new();
    let mut number = 0u64;
    for direction in [Direction::Sell, Direction::Buy] {
        number += 1;
        let command = Command::PlaceOrder(order(number, number, direction, Some(MID_PRICE_TICKS), 1));
        engine.execute(command, 0, &mut events).unwrap();
    }
    for level in 0..200u64 {
        number += 1;
        let bid = order(
            number,
            500 + level,
            Direction::Buy,
            Some(MID_PRICE_TICKS - 200 - level),
            50,
        );
        engine.execute(Command::PlaceOrder(bid), 0, &mut events).unwrap();
    }
    for index in 0..FIRED_AT_ONCE {
        number += 1;
        let mut stop = order(number, index % 400, Direction::Sell, None, 5);
        stop.conditions_mut().trigger = Some(Trigger {
            price: Price::from_ticks(MID_PRICE_TICKS - 100).unwrap(),
            condition: TriggerCondition::Below,
        });
        engine.execute(Command::PlaceOrder(stop), 0, &mut events).unwrap();
    }
    // A resting sell at the trigger price and the buy that prints it.
    number += 1;
    let ask = order(number, 900, Direction::Sell, Some(MID_PRICE_TICKS - 100), 1);
    engine.execute(Command::PlaceOrder(ask), 0, &mut events).unwrap();
    number += 1;
    let print = Command::PlaceOrder(order(number, 901, Direction::Buy, Some(MID_PRICE_TICKS - 100), 1));
    let mut check = engine.clone();
    events.clear();
    check.execute(print.clone(), 0, &mut events).unwrap();
    assert_eq!(check.untriggered_order_count(), 0, "the print fires every stop");
    (engine, print)
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args().sample_size(20);
    let mut group = criterion.benchmark_group("mixed_stream_on_10k_resting");
    for (name, with_untriggered) in [("without_untriggered", false), ("with_100k_untriggered", true)] {
        let (warm, stream) = prepare(with_untriggered);
        group.throughput(Throughput::Elements(stream.len() as u64));
        group.bench_function(name, |bencher| {
            bencher.iter_batched(
                || (warm.clone(), stream.clone(), Vec::with_capacity(64)),
                |(engine, stream, mut events)| testing::run_stream(engine, stream, &mut events),
                BatchSize::LargeInput,
            )
        });
    }
    group.finish();
    let (warm, print) = prepare_cascade();
    let mut group = criterion.benchmark_group("one_trade_fires_1000_stops");
    group.throughput(Throughput::Elements(FIRED_AT_ONCE));
    group.bench_function("fire", |bencher| {
        bencher.iter_batched(
            || (warm.clone(), print.clone(), Vec::with_capacity(8_192)),
            |(mut engine, print, mut events)| {
                engine.execute(print, 0, &mut events).unwrap();
                (engine, events)
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
    criterion.final_summary();
}
