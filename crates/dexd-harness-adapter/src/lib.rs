//! dexd's engine behind the C ABI of the matching-engine-benchmark harness
//! (`api/matching_engine_api.h` of flash1-dev/matching-engine-benchmark), so that anyone can
//! run dexd-core beside the other engines that harness measures, on the same workload and the
//! same byte-identical oracle: `scripts/bench-peers` builds it and runs the harness.
//!
//! Every message goes through dexd-core's own `Engine::execute` with a venue's whole work:
//! balances locked and moved, fees taken, candles and positions folded, full order records as
//! events. The harness knows no accounts, so buys come from one funded account and sells from
//! another (one account per side, its open-order limit raised as a venue raises a market
//! maker's); the pair takes one harness tick as its price step and one unit as its amount
//! step. A modify is a cancel and a placement under the same id, as the harness defines it
//! (queue priority lost). The reports are read from the engine's events and handed to the
//! harness's queue in bursts (256 by default; `DEXD_PUBLICATION_BURST_REPORTS`), the rest in
//! `engine_flush`, inside the harness's timed window: see [`Transport`].
//!
//! What it does not do: anything of the venue around the engine (no journal, no signatures, no
//! HTTP). The harness drives every call from one thread, so the state is one thread's.
//! `examples/replay.rs` replays a harness workload file through [`Adapter`] on one thread with
//! no transport, the steadier figure to profile.

use std::cell::RefCell;
use std::os::raw::c_void;

use dexd_core::testing::{account, Market};
use dexd_core::{
    AssetIndex, Command, Direction, Engine, EngineLimits, Event, NewOrder, OrderId, OrderStatus, PairIndex, Price,
    Quantity, TimeInForce,
};

mod abi;

pub use abi::{
    publication_burst_reports, CancelMessage, ModifyMessage, NewOrderMessage, Report, Transport,
    MAX_PUBLICATION_BURST_REPORTS, PUBLICATION_BURST_REPORTS, PUBLICATION_BURST_VARIABLE,
};
use abi::{ME_CANCEL_ACK, ME_CANCEL_REJECT, ME_MODIFY_ACK, ME_MODIFY_REJECT, ME_ORDER_ACK, ME_TRADE};

/// The one pair.
const PAIR: PairIndex = PairIndex(0);
/// What each side's account holds of each asset: more than any workload spends.
const FUNDS_UNITS: u128 = 10u128.pow(30);
/// The open orders one side's account may hold: the whole workload could rest.
const MAX_OPEN_ORDERS: u32 = 50_000_000;

/// The engine and what it needs between calls.
pub struct Adapter {
    engine: Engine,
    /// The buying and the selling account (derived once: an address is a digest).
    accounts: [dexd_core::Address; 2],
    events: Vec<Event>,
    /// The time each command runs at: the message's sequence number, so time only moves on.
    time_ms: u64,
}

impl Default for Adapter {
    fn default() -> Adapter {
        Adapter::new()
    }
}

/// The account a side's orders come from, by its number.
fn side_account(direction: Direction) -> dexd_core::Address {
    account(u64::from(side(direction)) + 1)
}

/// A harness order id as dexd's: the engine hashes an id's last eight bytes.
fn order_id(id: u64) -> OrderId {
    let mut bytes = [0u8; 32];
    bytes[24..].copy_from_slice(&id.to_be_bytes());
    OrderId::from_bytes(bytes)
}

/// dexd's order id back as the harness's.
fn harness_id(order_id: &OrderId) -> u64 {
    let bytes = order_id.as_bytes();
    u64::from_be_bytes(bytes[24..].try_into().expect("eight bytes"))
}

fn direction(side: u8) -> Direction {
    if side == 0 {
        Direction::Buy
    } else {
        Direction::Sell
    }
}

fn side(direction: Direction) -> u8 {
    match direction {
        Direction::Buy => 0,
        Direction::Sell => 1,
    }
}

/// A harness price as dexd's: a price is positive, and the workload's are.
fn price(ticks: i64) -> Price {
    u64::try_from(ticks)
        .ok()
        .and_then(Price::from_ticks)
        .expect("the workload's prices are positive")
}

impl Adapter {
    /// An engine with both sides' accounts funded and their open-order limit raised.
    pub fn new() -> Adapter {
        let limits = EngineLimits {
            max_open_orders_per_account: MAX_OPEN_ORDERS,
            max_resting_orders: usize::try_from(MAX_OPEN_ORDERS).expect("fits") * 2,
            ..EngineLimits::default()
        };
        let mut engine = Market {
            limits,
            ..Market::whole_units()
        }
        .engine();
        let mut events = Vec::new();
        for direction in [Direction::Buy, Direction::Sell] {
            for asset in [AssetIndex(0), AssetIndex(1)] {
                engine
                    .execute(
                        dexd_core::testing::deposit(side_account(direction), asset, FUNDS_UNITS),
                        0,
                        &mut events,
                    )
                    .expect("a ledger deposit applies");
            }
        }
        Adapter {
            engine,
            accounts: [side_account(Direction::Buy), side_account(Direction::Sell)],
            events: Vec::with_capacity(1_024),
            time_ms: 1,
        }
    }

    fn account_of(&self, direction: Direction) -> dexd_core::Address {
        self.accounts[usize::from(side(direction))]
    }

    fn tick(&mut self, sequence_number: u64) -> u64 {
        self.time_ms = self.time_ms.max(sequence_number);
        self.time_ms
    }

    /// Places an order and reports its trades (and, for an immediate-or-cancel remainder, its
    /// cancel) as the harness wants them, `ack` first.
    fn place(
        &mut self,
        (id, sequence_number): (u64, u64),
        (direction, price_ticks, quantity, immediate): (Direction, i64, u32, bool),
        ack: Option<Report>,
        emit: &mut impl FnMut(&Report),
    ) {
        let now_ms = self.tick(sequence_number);
        let order = NewOrder {
            time_in_force: if immediate {
                TimeInForce::ImmediateOrCancel
            } else {
                TimeInForce::GoodTillCancelled
            },
            ..dexd_core::testing::plain_order(
                order_id(id),
                self.account_of(direction),
                direction,
                Some(price(price_ticks)),
                Quantity::from_lots(u64::from(quantity)),
            )
        };
        self.events.clear();
        let placed = self
            .engine
            .execute(Command::PlaceOrder(order), now_ms, &mut self.events);
        assert!(placed.is_ok(), "a funded order on the pair is placed: {placed:?}");
        if let Some(ack) = ack {
            emit(&ack);
        }
        let mut residual = false;
        for event in &self.events {
            match event {
                Event::TradeExecuted(trade) => emit(&Report {
                    kind: ME_TRADE,
                    sequence_number,
                    price_ticks: i64::try_from(trade.price.ticks()).expect("a price fits i64"),
                    quantity: u32::try_from(trade.quantity.lots()).expect("a fill is at most an order"),
                    maker_order_id: harness_id(&trade.maker_order_id),
                    taker_order_id: id,
                    ..Report::default()
                }),
                Event::OrderUpdated(record)
                    if record.terms.order_id == order_id(id) && record.status == OrderStatus::Cancelled =>
                {
                    residual = true;
                }
                _ => {}
            }
        }
        if residual {
            emit(&Report {
                kind: ME_CANCEL_ACK,
                side: side(direction),
                sequence_number,
                order_id: id,
                price_ticks,
                ..Report::default()
            });
        }
    }

    /// `engine_on_new_order`.
    pub fn new_order(&mut self, message: &NewOrderMessage, emit: &mut impl FnMut(&Report)) {
        let direction = direction(message.side);
        let ack = Report {
            kind: ME_ORDER_ACK,
            side: message.side,
            sequence_number: message.sequence_number,
            order_id: message.order_id,
            price_ticks: message.price_ticks,
            quantity: message.quantity,
            ..Report::default()
        };
        self.place(
            (message.order_id, message.sequence_number),
            (direction, message.price_ticks, message.quantity, message.ioc != 0),
            Some(ack),
            emit,
        );
    }

    /// Cancels a resting order: its side and price, or `None` when it is not resting.
    fn cancel(&mut self, id: u64, sequence_number: u64) -> Option<(Direction, i64)> {
        let record = self.engine.open_order(&order_id(id))?;
        let (direction, price_ticks) = (record.terms.direction, record.terms.price?.ticks());
        let now_ms = self.tick(sequence_number);
        self.events.clear();
        self.engine
            .execute(
                Command::CancelOrder {
                    account: self.account_of(direction),
                    order_id: order_id(id),
                    pair: Some(PAIR),
                },
                now_ms,
                &mut self.events,
            )
            .ok()?;
        Some((direction, i64::try_from(price_ticks).expect("a price fits i64")))
    }

    /// `engine_on_cancel`.
    pub fn cancel_order(&mut self, message: &CancelMessage, emit: &mut impl FnMut(&Report)) {
        match self.cancel(message.order_id, message.sequence_number) {
            Some((direction, price_ticks)) => emit(&Report {
                kind: ME_CANCEL_ACK,
                side: side(direction),
                sequence_number: message.sequence_number,
                order_id: message.order_id,
                price_ticks,
                ..Report::default()
            }),
            None => emit(&Report {
                kind: ME_CANCEL_REJECT,
                sequence_number: message.sequence_number,
                order_id: message.order_id,
                ..Report::default()
            }),
        }
    }

    /// `engine_on_modify`: a cancel and a placement under the same id.
    pub fn modify_order(&mut self, message: &ModifyMessage, emit: &mut impl FnMut(&Report)) {
        let Some((direction, _)) = self.cancel(message.order_id, message.sequence_number) else {
            emit(&Report {
                kind: ME_MODIFY_REJECT,
                sequence_number: message.sequence_number,
                order_id: message.order_id,
                ..Report::default()
            });
            return;
        };
        let ack = Report {
            kind: ME_MODIFY_ACK,
            side: side(direction),
            sequence_number: message.sequence_number,
            order_id: message.order_id,
            price_ticks: message.new_price_ticks,
            quantity: message.new_quantity,
            ..Report::default()
        };
        self.place(
            (message.order_id, message.sequence_number),
            (direction, message.new_price_ticks, message.new_quantity, false),
            Some(ack),
            emit,
        );
    }

    /// The best bid in ticks, or `i64::MIN`.
    pub fn best_bid(&self) -> i64 {
        self.engine
            .best_levels(PAIR)
            .and_then(|(bid, _)| bid)
            .map_or(i64::MIN, |level| i64::try_from(level.price.ticks()).expect("fits"))
    }

    /// The best ask in ticks, or `i64::MAX`.
    pub fn best_ask(&self) -> i64 {
        self.engine
            .best_levels(PAIR)
            .and_then(|(_, ask)| ask)
            .map_or(i64::MAX, |level| i64::try_from(level.price.ticks()).expect("fits"))
    }

    /// What rests at `price_ticks` on `side`.
    pub fn depth_at(&self, price_ticks: i64, side: u8) -> u64 {
        let Some(price) = u64::try_from(price_ticks).ok().and_then(Price::from_ticks) else {
            return 0;
        };
        self.engine
            .depth_at_price(PAIR, direction(side), price)
            .map_or(0, |level| u64::try_from(level.quantity).expect("fits"))
    }
}

thread_local! {
    /// The adapter and the harness's transport, on the one thread the harness drives.
    static STATE: RefCell<Option<(Adapter, Transport)>> = const { RefCell::new(None) };
}

fn with_state<T>(work: impl FnOnce(&mut Adapter, &mut dyn FnMut(&Report)) -> T) -> T {
    STATE.with(|state| {
        let mut state = state.borrow_mut();
        let (adapter, transport) = state.as_mut().expect("engine_init ran first");
        let mut emit = |report: &Report| transport.push(report);
        work(adapter, &mut emit)
    })
}

/// `engine_init`: a new engine; reports go to `report_sink` through `transport`.
///
/// # Safety
///
/// `transport` points to the harness's transport table, valid until `engine_shutdown`.
#[no_mangle]
pub unsafe extern "C" fn engine_init(_seed: u64, transport: *const c_void, report_sink: *mut c_void) {
    let burst_reports = publication_burst_reports(std::env::var(PUBLICATION_BURST_VARIABLE).ok().as_deref());
    let transport = Transport::new(transport, report_sink, burst_reports);
    STATE.with(|state| *state.borrow_mut() = Some((Adapter::new(), transport)));
}

/// `engine_shutdown`. Reports still held are not handed over here: the harness flushes before
/// it stops the clock, and its queue may be gone by the time it shuts the engine down.
#[no_mangle]
pub extern "C" fn engine_shutdown() {
    STATE.with(|state| *state.borrow_mut() = None);
}

/// `engine_on_new_order`.
///
/// # Safety
///
/// `order` points to a valid `new_order_t`.
#[no_mangle]
pub unsafe extern "C" fn engine_on_new_order(order: *const NewOrderMessage) {
    let order = &*order;
    with_state(|adapter, emit| adapter.new_order(order, &mut |report| emit(report)));
}

/// `engine_on_cancel`.
///
/// # Safety
///
/// `cancel` points to a valid `cancel_t`.
#[no_mangle]
pub unsafe extern "C" fn engine_on_cancel(cancel: *const CancelMessage) {
    let cancel = &*cancel;
    with_state(|adapter, emit| adapter.cancel_order(cancel, &mut |report| emit(report)));
}

/// `engine_on_modify`.
///
/// # Safety
///
/// `modify` points to a valid `modify_t`.
#[no_mangle]
pub unsafe extern "C" fn engine_on_modify(modify: *const ModifyMessage) {
    let modify = &*modify;
    with_state(|adapter, emit| adapter.modify_order(modify, &mut |report| emit(report)));
}

/// `engine_flush`: every call is applied before it returns; the reports still held are handed
/// to the harness's queue.
#[no_mangle]
pub extern "C" fn engine_flush() {
    STATE.with(|state| {
        if let Some((_, transport)) = state.borrow_mut().as_mut() {
            transport.publish();
        }
    });
}

/// `engine_query_best_bid`.
#[no_mangle]
pub extern "C" fn engine_query_best_bid() -> i64 {
    with_state(|adapter, _| adapter.best_bid())
}

/// `engine_query_best_ask`.
#[no_mangle]
pub extern "C" fn engine_query_best_ask() -> i64 {
    with_state(|adapter, _| adapter.best_ask())
}

/// `engine_query_depth_at`.
#[no_mangle]
pub extern "C" fn engine_query_depth_at(price_ticks: i64, side: u8) -> u64 {
    with_state(|adapter, _| adapter.depth_at(price_ticks, side))
}

#[cfg(test)]
mod tests;
