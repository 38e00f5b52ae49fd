//! The engine's busy paths allocate nothing once warm: a placement that rests, a cancel, a fill
//! and an amend, on a book whose levels already exist, with the caller's event buffer reused.
//! Counted by this test binary's own allocator, per thread (so that the test harness's other
//! threads do not count). What does allocate, by design, is growth: a new price level (a
//! `BTreeMap` node), a new account, a collection outgrowing what it held before; and an order's
//! own strings, which these orders do not carry (a client order id is copied into the order's
//! events and its account's index of ids, a one-cancels-other group's name likewise).

/// The engine's shared fixtures, included: a crate's tests cannot turn on its own `testing`
/// feature.
#[allow(dead_code)]
#[path = "../src/testing.rs"]
mod testing;

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;

use dexd_core::{Command, Direction, Engine, Event, NewOrder, OrderId, TimeInForce};
use testing::{account, amend, order, Market};

/// The system allocator, counting the allocations of the thread that asks.
struct CountingAllocator;

thread_local! {
    static ALLOCATIONS: Cell<u64> = const { Cell::new(0) };
}

fn count_one() {
    // `try_with`: a thread being torn down has no counter left, and allocates uncounted.
    let _ = ALLOCATIONS.try_with(|count| count.set(count.get() + 1));
}

// SAFETY: every call is passed to the system allocator unchanged; counting touches only a
// thread-local integer, which allocates nothing.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        count_one();
        System.alloc(layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        count_one();
        System.alloc_zeroed(layout)
    }

    unsafe fn realloc(&self, pointer: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        count_one();
        System.realloc(pointer, layout, new_size)
    }

    unsafe fn dealloc(&self, pointer: *mut u8, layout: Layout) {
        System.dealloc(pointer, layout);
    }
}

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

fn allocations() -> u64 {
    ALLOCATIONS.with(Cell::get)
}

const MAKER: u64 = 1;
const TAKER: u64 = 2;
/// The maker's asks rest on these levels, `ORDERS_PER_LEVEL` to a level, and its bids below.
const ASK_LEVELS: std::ops::Range<u64> = 1_000..1_010;
const BID_LEVELS: std::ops::Range<u64> = 900..910;
const ORDERS_PER_LEVEL: u64 = 4;

struct Warm {
    engine: Engine,
    events: Vec<Event>,
    next_number: u64,
    /// The maker's open asks, oldest first, with their prices.
    asks: std::collections::VecDeque<(OrderId, u64)>,
}

impl Warm {
    fn new() -> Warm {
        let engine = Market::whole_units()
            .with_open_order_limit(10_000)
            .funded_engine([account(MAKER), account(TAKER)], 10u128.pow(20));
        let events = Vec::with_capacity(1_024);
        let mut warm = Warm {
            engine,
            events,
            next_number: 1,
            asks: std::collections::VecDeque::new(),
        };
        for _ in 0..ORDERS_PER_LEVEL {
            for price_ticks in BID_LEVELS {
                warm.rest(Direction::Buy, price_ticks);
            }
            for price_ticks in ASK_LEVELS {
                warm.rest(Direction::Sell, price_ticks);
            }
        }
        warm
    }

    fn number(&mut self) -> u64 {
        self.next_number += 1;
        self.next_number
    }

    fn rest(&mut self, direction: Direction, price_ticks: u64) -> OrderId {
        let number = self.number();
        let placed = order(number, account(MAKER), direction, Some(price_ticks), 1);
        let order_id = placed.order_id;
        self.events.clear();
        self.engine
            .execute(Command::PlaceOrder(placed), 2, &mut self.events)
            .unwrap();
        if direction == Direction::Sell {
            self.asks.push_back((order_id, price_ticks));
        }
        order_id
    }

    /// One round of the busy paths, each leaving the book as it found it: the oldest ask
    /// cancelled and rested again at its price; the best ask lifted by the taker and rested
    /// again; an ask amended to a new id at its price.
    fn round(&mut self) {
        let (oldest, price_ticks) = self.asks.pop_front().expect("asks rest");
        self.events.clear();
        let cancel = Command::CancelOrder {
            account: account(MAKER),
            order_id: oldest,
            pair: None,
        };
        self.engine.execute(cancel, 3, &mut self.events).unwrap();
        self.rest(Direction::Sell, price_ticks);

        let best_ask_ticks = ASK_LEVELS.start;
        let number = self.number();
        let lift = NewOrder {
            time_in_force: TimeInForce::ImmediateOrCancel,
            ..order(number, account(TAKER), Direction::Buy, Some(best_ask_ticks), 1)
        };
        self.events.clear();
        self.engine
            .execute(Command::PlaceOrder(lift), 3, &mut self.events)
            .unwrap();
        let filled = self
            .events
            .iter()
            .find_map(|event| match event {
                Event::TradeExecuted(trade) => Some(trade.maker_order_id),
                _ => None,
            })
            .expect("the lift fills one ask");
        self.asks.retain(|(order_id, _)| *order_id != filled);
        self.rest(Direction::Sell, best_ask_ticks);

        let (amended, price_ticks) = self.asks.pop_front().expect("asks rest");
        let number = self.number();
        let replacement = order(number, account(MAKER), Direction::Sell, Some(price_ticks), 1);
        self.asks.push_back((replacement.order_id, price_ticks));
        self.events.clear();
        self.engine
            .execute(amend(amended, replacement), 3, &mut self.events)
            .unwrap();
    }
}

#[test]
fn placing_cancelling_filling_and_amending_on_existing_levels_allocate_nothing_once_warm() {
    let mut warm = Warm::new();
    // Warm: every collection reaches the size this traffic keeps it at, and the hash maps'
    // deleted entries reach their steady share.
    for _ in 0..2_000 {
        warm.round();
    }
    let before = allocations();
    for _ in 0..1_000 {
        warm.round();
    }
    let allocated = allocations() - before;
    warm.engine.check_invariants().unwrap();
    assert_eq!(
        allocated, 0,
        "1,000 rounds of a cancel, two placements that rest, a fill and an amend allocated {allocated} times"
    );
}

/// The count is real: a path that allocates is counted (a new price level each round).
#[test]
fn the_counter_sees_a_path_that_allocates() {
    let mut warm = Warm::new();
    let before = allocations();
    for offset in 0..100 {
        warm.rest(Direction::Sell, 5_000 + offset * 100);
    }
    assert!(allocations() > before, "a hundred new levels allocate");
}
