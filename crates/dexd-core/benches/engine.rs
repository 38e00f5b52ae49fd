//! The engine alone on a realistic command mix, beside the `lobster` order-book crate on the
//! same stream.
//!
//! The mix: after about 1,000 resting orders are placed near the touch, 50 % of commands are
//! limit orders that rest, 30 % are IOC limit orders that cross and fill, 20 % cancel a random
//! open order. Run with `cargo bench -p dexd-core --bench engine`. Besides criterion's
//! throughput figures it prints per-command latency percentiles (hdrhistogram) for dexd.
//!
//! `dexd_with_100k_subaccounts` runs the same stream on the same book with 100,000 subaccounts
//! in the state (100 owners with 1,000 funded subaccounts each, contract version 5): their
//! ledger slots, the registry and its reverse index must not slow the traders down.
//! `dexd_with_1000_twaps` runs it with 1,000 running TWAPs in the state (5 per trader, contract
//! version 5), and the report times a round of 1,000 due slices, each an immediate-or-cancel
//! order against the book.
//!
//! The comparison is not like for like in dexd's disfavour: lobster keeps only the book, while
//! dexd also moves balances and locks, takes fees, folds candles and positions, and emits full
//! order records per change.

/// The engine's shared fixtures (`dexd_core::testing`), included: a crate's benchmarks and
/// integration tests cannot turn on its own `testing` feature.
#[allow(dead_code)]
#[path = "../src/testing.rs"]
mod testing;

use std::time::Instant;

use criterion::{BatchSize, Criterion, Throughput};
use dexd_core::{
    Address, Amount, AssetIndex, Command, Direction, Engine, NewOrder, NewTwap, OrderId, PairIndex, Price, Quantity,
    SubaccountTransferRequest, TimeInForce,
};
use hdrhistogram::Histogram;
use testing::{account, deposit, order, order_id, Market, SplitMix};

const ACCOUNTS: u64 = 200;
const WARM_UP_ORDERS: u64 = 1_000;
const MEASURED_COMMANDS: usize = 200_000;
const MID_PRICE_TICKS: u64 = 100_000;
/// Owners of subaccounts in the second run, each with every subaccount (1 to 1,000) funded.
const SUBACCOUNT_OWNERS: u64 = 100;

/// `warm` with 100,000 funded subaccounts beside its traders: each owner deposits, then moves
/// funds to each of its 1,000 subaccounts.
fn with_subaccounts(warm: &Engine) -> Engine {
    let mut engine = warm.clone();
    let mut events = Vec::new();
    for owner_number in 0..SUBACCOUNT_OWNERS {
        let owner = account(1_000_000 + owner_number);
        engine
            .execute(deposit(owner, AssetIndex(1), 10u128.pow(24)), 0, &mut events)
            .unwrap();
        for number in 1..=dexd_core::MAX_SUBACCOUNT_NUMBER {
            events.clear();
            let transfer = Command::TransferBetweenSubaccounts(SubaccountTransferRequest {
                owner,
                from_number: 0,
                to_number: number,
                asset: AssetIndex(1),
                amount: Amount::from_units(10u128.pow(18)),
                client_transfer_id: format!("fund-{number}"),
            });
            engine.execute(transfer, 0, &mut events).unwrap();
        }
    }
    engine
}

/// Running TWAPs in the third run: the most each trader may run on the pair, for every trader.
const TWAPS_PER_TRADER: u64 = 5;
/// A TWAP's slices come this often; they run a day.
const TWAP_INTERVAL_MS: u64 = 30_000;

/// `warm` with 1,000 running TWAPs, started at time 0 (their first slice is due at once, and
/// left undone by the trading stream, whose commands all run at time 0).
fn with_twaps(warm: &Engine) -> Engine {
    let mut engine = warm.clone();
    let mut events = Vec::new();
    for trader in 0..ACCOUNTS {
        for number in 0..TWAPS_PER_TRADER {
            events.clear();
            let twap = Command::StartTwap(NewTwap {
                account: account(trader),
                pair: PairIndex(0),
                direction: if number % 2 == 0 {
                    Direction::Buy
                } else {
                    Direction::Sell
                },
                quantity: Quantity::from_lots(2_880 * (1 + number)),
                duration_ms: 86_400_000,
                interval_ms: TWAP_INTERVAL_MS,
                limit_price: None,
                client_twap_id: None,
            });
            engine.execute(twap, 0, &mut events).unwrap();
        }
    }
    assert_eq!(engine.running_twap_count() as u64, ACCOUNTS * TWAPS_PER_TRADER);
    engine
}

/// Times one round of every TWAP's due slice, as the venue's timer journals them.
fn twap_round_report(engine: &Engine) {
    let mut engine = engine.clone();
    let mut events = Vec::with_capacity(64);
    let due = engine.due_twap_slices(0, usize::MAX);
    let started = Instant::now();
    for (twap_id, slice) in &due {
        events.clear();
        engine
            .execute(
                Command::RunTwapSlice {
                    twap_id: *twap_id,
                    slice: *slice,
                },
                0,
                &mut events,
            )
            .unwrap();
    }
    let elapsed = started.elapsed();
    engine.check_invariants().expect("invariants hold after the slices");
    println!(
        "a round of {} TWAP slices: {:.1} µs each, {:.1} ms in all; {} resting orders left",
        due.len(),
        elapsed.as_secs_f64() * 1e6 / due.len() as f64,
        elapsed.as_secs_f64() * 1e3,
        engine.resting_order_count()
    );
}

fn new_engine() -> Engine {
    Market::eth_usdc().engine()
}

fn limit_order(
    number: u64,
    trader: u64,
    direction: Direction,
    price_ticks: u64,
    lots: u64,
    time_in_force: TimeInForce,
) -> Command {
    Command::PlaceOrder(NewOrder {
        time_in_force,
        ..order(number, account(trader), direction, Some(price_ticks), lots)
    })
}

/// Funds every account and rests the warm-up orders; returns the engine and the measured
/// stream, which is generated against a live copy so that cancels name orders that are open.
fn prepare() -> (Engine, Vec<Command>) {
    let mut engine = new_engine();
    let mut events = Vec::new();
    for trader in 0..ACCOUNTS {
        for asset in 0..2u16 {
            let command = deposit(account(trader), AssetIndex(asset), 10u128.pow(30));
            engine.execute(command, 0, &mut events).unwrap();
        }
    }
    let mut random = SplitMix(42);
    let mut number = 0u64;
    for _ in 0..WARM_UP_ORDERS {
        number += 1;
        let direction = if number.is_multiple_of(2) {
            Direction::Buy
        } else {
            Direction::Sell
        };
        engine
            .execute(resting_order(&mut random, number, direction), 0, &mut events)
            .unwrap();
    }
    let warm = engine.clone();
    let mut stream = Vec::with_capacity(MEASURED_COMMANDS);
    let mut open: Vec<(OrderId, Address)> = (1..=number).map(|n| (order_id(n), account(0))).collect();
    while stream.len() < MEASURED_COMMANDS {
        let roll = random.below(100);
        let command = if roll < 50 {
            number += 1;
            let direction = if random.below(2) == 0 {
                Direction::Buy
            } else {
                Direction::Sell
            };
            resting_order(&mut random, number, direction)
        } else if roll < 80 {
            number += 1;
            let direction = if random.below(2) == 0 {
                Direction::Buy
            } else {
                Direction::Sell
            };
            // Crossing orders reach every resting level; their size grows when the book is
            // above its target, which holds it near WARM_UP_ORDERS without changing the mix.
            let price = match direction {
                Direction::Buy => MID_PRICE_TICKS + 60,
                Direction::Sell => MID_PRICE_TICKS - 60,
            };
            let size_bound = if engine.resting_order_count() as u64 > WARM_UP_ORDERS {
                90
            } else {
                30
            };
            limit_order(
                number,
                random.below(ACCOUNTS),
                direction,
                price,
                1 + random.below(size_bound),
                TimeInForce::ImmediateOrCancel,
            )
        } else {
            let Some(id) = pick_open_order(&engine, &mut open, &mut random) else {
                continue;
            };
            let owner = engine.open_order(&id).unwrap().terms.account;
            Command::CancelOrder {
                account: owner,
                order_id: id,
                pair: None,
            }
        };
        events.clear();
        if engine.execute(command.clone(), 0, &mut events).is_ok() {
            if let Command::PlaceOrder(order) = &command {
                if engine.open_order(&order.order_id).is_some() {
                    open.push((order.order_id, order.account));
                }
            }
        }
        stream.push(command);
    }
    (warm, stream)
}

/// A random open order, forgetting the filled ones it meets on the way.
fn pick_open_order(engine: &Engine, open: &mut Vec<(OrderId, Address)>, random: &mut SplitMix) -> Option<OrderId> {
    while !open.is_empty() {
        let index = random.below(open.len() as u64) as usize;
        let (id, _) = open.swap_remove(index);
        if engine.open_order(&id).is_some() {
            return Some(id);
        }
    }
    None
}

fn resting_order(random: &mut SplitMix, number: u64, direction: Direction) -> Command {
    let distance = 1 + random.below(50);
    let price = match direction {
        Direction::Buy => MID_PRICE_TICKS - distance,
        Direction::Sell => MID_PRICE_TICKS + distance,
    };
    limit_order(
        number,
        random.below(ACCOUNTS),
        direction,
        price,
        1 + random.below(40),
        TimeInForce::GoodTillCancelled,
    )
}

fn to_lobster(command: &Command) -> lobster::OrderType {
    let id = |order_id: &OrderId| u128::from(u64::from_be_bytes(order_id.as_bytes()[..8].try_into().unwrap()));
    match command {
        Command::PlaceOrder(order) => lobster::OrderType::Limit {
            id: id(&order.order_id),
            side: match order.direction {
                Direction::Buy => lobster::Side::Bid,
                Direction::Sell => lobster::Side::Ask,
            },
            qty: order.quantity.lots(),
            price: order.price.map_or(0, Price::ticks),
        },
        Command::CancelOrder { order_id, .. } => lobster::OrderType::Cancel { id: id(order_id) },
        _ => unreachable!("the measured stream has no transfers"),
    }
}

fn lobster_warm_book(engine: &Engine) -> lobster::OrderBook {
    let _ = engine;
    let mut book = lobster::OrderBook::new(1 << 20, 16, false);
    let mut random = SplitMix(42);
    for number in 1..=WARM_UP_ORDERS {
        let direction = if number % 2 == 0 {
            Direction::Buy
        } else {
            Direction::Sell
        };
        book.execute(to_lobster(&resting_order(&mut random, number, direction)));
    }
    book
}

fn latency_report(warm: &Engine, stream: &[Command]) {
    let mut engine = warm.clone();
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 10_000_000, 3).unwrap();
    let mut events = Vec::with_capacity(64);
    let started = Instant::now();
    for command in stream {
        events.clear();
        let command = command.clone();
        let before = Instant::now();
        let _ = engine.execute(command, 0, &mut events);
        histogram.record(before.elapsed().as_nanos().max(1) as u64).unwrap();
    }
    let elapsed = started.elapsed();
    engine
        .check_invariants()
        .expect("invariants hold after the benchmark stream");
    println!(
        "resting orders: {} before the stream, {} after",
        warm.resting_order_count(),
        engine.resting_order_count()
    );
    println!(
        "dexd engine latency over {} commands: p50 {} ns, p90 {} ns, p99 {} ns, p99.9 {} ns, max {} ns; {:.0} commands/s including timer overhead",
        stream.len(),
        histogram.value_at_quantile(0.50),
        histogram.value_at_quantile(0.90),
        histogram.value_at_quantile(0.99),
        histogram.value_at_quantile(0.999),
        histogram.max(),
        stream.len() as f64 / elapsed.as_secs_f64(),
    );
}

fn main() {
    let (warm, stream) = prepare();
    latency_report(&warm, &stream);
    let crowded = with_subaccounts(&warm);
    println!(
        "with {} subaccounts in the state:",
        crowded.account_count() - warm.account_count() - SUBACCOUNT_OWNERS as usize
    );
    latency_report(&crowded, &stream);
    let twapped = with_twaps(&warm);
    println!("with {} running TWAPs in the state:", twapped.running_twap_count());
    latency_report(&twapped, &stream);
    twap_round_report(&twapped);
    let lobster_stream: Vec<lobster::OrderType> = stream.iter().map(to_lobster).collect();
    let mut criterion = Criterion::default().configure_from_args().sample_size(20);
    let mut group = criterion.benchmark_group("engine_mixed_stream");
    group.throughput(Throughput::Elements(stream.len() as u64));
    group.bench_function("dexd", |bencher| {
        bencher.iter_batched(
            || (warm.clone(), stream.clone(), Vec::with_capacity(64)),
            |(engine, stream, mut events)| testing::run_stream(engine, stream, &mut events),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("dexd_with_100k_subaccounts", |bencher| {
        bencher.iter_batched(
            || (crowded.clone(), stream.clone(), Vec::with_capacity(64)),
            |(engine, stream, mut events)| testing::run_stream(engine, stream, &mut events),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("dexd_with_1000_twaps", |bencher| {
        bencher.iter_batched(
            || (twapped.clone(), stream.clone(), Vec::with_capacity(64)),
            |(engine, stream, mut events)| testing::run_stream(engine, stream, &mut events),
            BatchSize::LargeInput,
        )
    });
    group.bench_function("lobster", |bencher| {
        bencher.iter_batched(
            || (lobster_warm_book(&warm), lobster_stream.clone()),
            |(mut book, stream)| {
                for command in stream {
                    std::hint::black_box(book.execute(command));
                }
                book
            },
            BatchSize::LargeInput,
        )
    });
    group.finish();
    criterion.final_summary();
}
