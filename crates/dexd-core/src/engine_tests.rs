//! Scenario tests of the engine's rules, one small story each.

use crate::engine::{Command, Engine, EngineLimits};
use crate::events::{Event, Rejection};
use crate::ledger::Balance;
use crate::money::{Address, Amount, AssetIndex, OrderId, Price, Quantity};
use crate::order::{CancelReason, Direction, NewOrder, OrderRecord, OrderStatus, TimeInForce};
use crate::testing::{
    scenario_config, Venue, ALICE, BOB, CAROL, ETH, ETH_UNIT, FEE_ACCOUNT as FEES, PAIR, USDC, USDC_UNIT,
};
use crate::transfer::TransferRequest;

/// The ETH/USDC market of `testing`, in ledger custody.
pub(crate) fn engine_with_limits(limits: EngineLimits) -> Engine {
    Engine::new(scenario_config(limits)).unwrap()
}

pub(crate) fn engine() -> Engine {
    engine_with_limits(EngineLimits::default())
}

/// A venue on [`engine`] where nobody holds anything yet.
pub(crate) fn venue() -> Venue {
    Venue::new(scenario_config(EngineLimits::default()), 1_000)
}

/// Placing as these tests read it: the outcome of one placement.
pub(crate) trait Placing {
    fn placed(&mut self, order: NewOrder) -> Result<Placed, Rejection>;
    fn limit(&mut self, account: Address, direction: Direction, price: &str, amount: &str) -> Placed;
    fn balance(&self, account: Address, asset: AssetIndex) -> Balance;
}

impl Placing for Venue {
    fn placed(&mut self, order: NewOrder) -> Result<Placed, Rejection> {
        let order_id = order.order_id;
        let events = self.place(order)?;
        Ok(Placed::from_events(order_id, events))
    }

    fn limit(&mut self, account: Address, direction: Direction, price: &str, amount: &str) -> Placed {
        let order = self.order(account, direction, Some(price), amount);
        self.placed(order).unwrap()
    }

    fn balance(&self, account: Address, asset: AssetIndex) -> Balance {
        self.engine.balance(&account, asset)
    }
}

/// The outcome of a placement, read from its events.
pub(crate) struct Placed {
    order: OrderRecord,
    trades: Vec<(OrderId, u64, u64)>,
    others: Vec<OrderRecord>,
}

impl Placed {
    fn from_events(order_id: OrderId, events: Vec<Event>) -> Placed {
        let mut order = None;
        let mut trades = Vec::new();
        let mut others = Vec::new();
        for event in events {
            match event {
                Event::OrderUpdated(record) if record.terms.order_id == order_id => order = Some(record),
                Event::OrderUpdated(record) => others.push(record),
                Event::TradeExecuted(trade) => {
                    trades.push((trade.maker_order_id, trade.price.ticks(), trade.quantity.lots()))
                }
                _ => {}
            }
        }
        Placed {
            order: order.expect("the placed order is reported"),
            trades,
            others,
        }
    }
}

/// Alice asks to withdraw `units` of USDC.
pub(crate) fn alice_withdraws_usdc(units: u128) -> Command {
    Command::Withdraw(TransferRequest {
        transfer_id: [1; 32],
        account: ALICE,
        asset: USDC,
        amount: Amount::from_units(units),
    })
}

pub(crate) fn usdc(units: u128) -> Amount {
    Amount::from_units(units)
}

#[test]
fn a_resting_buy_locks_price_times_amount_of_quote() {
    let mut venue = venue();
    venue.deposit(ALICE, USDC, 10_000 * USDC_UNIT);
    let placed = venue.limit(ALICE, Direction::Buy, "2500.5", "1.5");
    assert_eq!(placed.order.status, OrderStatus::Open);
    assert_eq!(placed.order.locked, usdc(3_750_750_000));
    assert_eq!(
        venue.balance(ALICE, USDC),
        Balance {
            available: usdc(10_000 * USDC_UNIT - 3_750_750_000),
            locked: usdc(3_750_750_000)
        }
    );
}

#[test]
fn a_crossing_sell_fills_at_the_makers_price_with_fees_from_what_each_receives() {
    let mut venue = venue();
    venue.deposit(ALICE, USDC, 10_000 * USDC_UNIT);
    venue.deposit(BOB, ETH, 2 * ETH_UNIT);
    let bid = venue.limit(ALICE, Direction::Buy, "2500", "1");
    let sell = venue.limit(BOB, Direction::Sell, "2400", "1");
    assert_eq!(sell.trades, vec![(bid.order.terms.order_id, 250_000, 10_000)]);
    assert_eq!(sell.order.status, OrderStatus::Filled);
    assert_eq!(sell.order.cost, usdc(2_500 * USDC_UNIT));
    // Bob is the taker and receives quote: 0.2 % of 2,500 USDC.
    assert_eq!(sell.order.fee, usdc(5 * USDC_UNIT));
    // Alice is the maker and receives base: 0.1 % of 1 ETH.
    assert_eq!(sell.others[0].fee, Amount::from_units(ETH_UNIT / 1_000));
    assert_eq!(sell.others[0].status, OrderStatus::Filled);
    assert_eq!(
        venue.balance(ALICE, ETH).available,
        Amount::from_units(ETH_UNIT - ETH_UNIT / 1_000)
    );
    assert_eq!(
        venue.balance(ALICE, USDC),
        Balance {
            available: usdc(7_500 * USDC_UNIT),
            locked: Amount::ZERO
        }
    );
    assert_eq!(venue.balance(BOB, USDC).available, usdc(2_495 * USDC_UNIT));
    assert_eq!(venue.balance(BOB, ETH).available, Amount::from_units(ETH_UNIT));
    assert_eq!(venue.balance(FEES, USDC).available, usdc(5 * USDC_UNIT));
    assert_eq!(venue.balance(FEES, ETH).available, Amount::from_units(ETH_UNIT / 1_000));
    assert_eq!(venue.engine.last_price(PAIR), Price::from_ticks(250_000));
}

/// The best levels and the depth at a price agree with the book's levels (read without
/// allocating, for market-data readers).
#[test]
fn the_best_levels_and_the_depth_at_a_price_read_the_book() {
    let mut venue = venue();
    assert_eq!(venue.engine.best_levels(PAIR), Some((None, None)));
    venue.deposit(ALICE, ETH, 10 * ETH_UNIT);
    venue.deposit(BOB, USDC, 100_000 * USDC_UNIT);
    venue.limit(ALICE, Direction::Sell, "101", "1");
    venue.limit(ALICE, Direction::Sell, "101", "2");
    venue.limit(ALICE, Direction::Sell, "102", "1");
    venue.limit(BOB, Direction::Buy, "99", "1");
    let (bid, ask) = venue.engine.best_levels(PAIR).unwrap();
    let (asks, _) = venue.engine.book_levels(PAIR, Direction::Sell, 1).unwrap();
    let (bids, _) = venue.engine.book_levels(PAIR, Direction::Buy, 1).unwrap();
    assert_eq!((bid, ask), (Some(bids[0]), Some(asks[0])));
    assert_eq!((ask.unwrap().quantity, ask.unwrap().orders), (30_000, 2));
    let spec = venue.engine.pair_spec(PAIR).unwrap();
    let at_102 = spec.price_from_decimal(crate::testing::decimal("102")).unwrap();
    let at_100 = spec.price_from_decimal(crate::testing::decimal("100")).unwrap();
    assert_eq!(
        venue
            .engine
            .depth_at_price(PAIR, Direction::Sell, at_102)
            .map(|level| level.quantity),
        Some(10_000)
    );
    assert_eq!(venue.engine.depth_at_price(PAIR, Direction::Sell, at_100), None);
    assert_eq!(venue.engine.best_levels(crate::money::PairIndex(9)), None);
}

#[test]
fn better_prices_fill_first_then_older_orders() {
    let mut venue = venue();
    venue.deposit(ALICE, ETH, 10 * ETH_UNIT);
    venue.deposit(CAROL, ETH, 10 * ETH_UNIT);
    venue.deposit(BOB, USDC, 100_000 * USDC_UNIT);
    let first_at_101 = venue.limit(ALICE, Direction::Sell, "101", "1");
    let second_at_101 = venue.limit(CAROL, Direction::Sell, "101", "1");
    let at_100 = venue.limit(CAROL, Direction::Sell, "100", "1");
    let buy = venue.limit(BOB, Direction::Buy, "101", "2.5");
    let ids: Vec<OrderId> = buy.trades.iter().map(|trade| trade.0).collect();
    assert_eq!(
        ids,
        vec![
            at_100.order.terms.order_id,
            first_at_101.order.terms.order_id,
            second_at_101.order.terms.order_id
        ]
    );
    assert_eq!(
        buy.trades.iter().map(|trade| trade.2).collect::<Vec<_>>(),
        vec![10_000, 10_000, 5_000]
    );
    assert_eq!(buy.order.status, OrderStatus::Filled);
    assert_eq!(buy.order.cost, usdc(100 * USDC_UNIT + 101 * USDC_UNIT + 50_500_000));
    // The partly filled maker stays open with its remainder, first in line.
    let (levels, _) = venue.engine.book_levels(PAIR, Direction::Sell, 10).unwrap();
    assert_eq!(levels.len(), 1);
    assert_eq!(levels[0].quantity, 5_000);
    let maker = venue.engine.open_order(&second_at_101.order.terms.order_id).unwrap();
    assert_eq!(maker.filled, Quantity::from_lots(5_000));
    assert_eq!(maker.locked, Amount::from_units(ETH_UNIT / 2));
}

#[test]
fn a_taker_buy_filling_below_its_limit_releases_the_difference() {
    let mut venue = venue();
    venue.deposit(ALICE, ETH, ETH_UNIT);
    venue.deposit(BOB, USDC, 1_000 * USDC_UNIT);
    venue.limit(ALICE, Direction::Sell, "90", "1");
    let buy = venue.limit(BOB, Direction::Buy, "100", "2");
    assert_eq!(buy.order.status, OrderStatus::Open);
    assert_eq!(buy.order.filled, Quantity::from_lots(10_000));
    // One ETH bought at 90, one ETH resting at 100.
    assert_eq!(buy.order.locked, usdc(100 * USDC_UNIT));
    assert_eq!(
        venue.balance(BOB, USDC),
        Balance {
            available: usdc(810 * USDC_UNIT),
            locked: usdc(100 * USDC_UNIT)
        }
    );
}

#[test]
fn ioc_cancels_its_remainder_and_releases_its_lock() {
    let mut venue = venue();
    venue.deposit(ALICE, ETH, ETH_UNIT);
    venue.deposit(BOB, USDC, 1_000 * USDC_UNIT);
    venue.limit(ALICE, Direction::Sell, "100", "1");
    let mut order = venue.order(BOB, Direction::Buy, Some("100"), "3");
    order.time_in_force = TimeInForce::ImmediateOrCancel;
    let placed = venue.placed(order).unwrap();
    assert_eq!(placed.order.status, OrderStatus::Cancelled);
    assert_eq!(placed.order.cancel_reason, Some(CancelReason::UnfilledRemainder));
    assert_eq!(placed.order.filled, Quantity::from_lots(10_000));
    assert_eq!(
        venue.balance(BOB, USDC),
        Balance {
            available: usdc(900 * USDC_UNIT),
            locked: Amount::ZERO
        }
    );
    assert!(venue.engine.book_levels(PAIR, Direction::Buy, 10).unwrap().0.is_empty());
}

#[test]
fn fok_fills_whole_or_is_rejected_without_change() {
    let mut venue = venue();
    venue.deposit(ALICE, ETH, 2 * ETH_UNIT);
    venue.deposit(BOB, USDC, 1_000 * USDC_UNIT);
    venue.limit(ALICE, Direction::Sell, "100", "1");
    venue.limit(ALICE, Direction::Sell, "102", "1");
    let mut too_much = venue.order(BOB, Direction::Buy, Some("101"), "1.5");
    too_much.time_in_force = TimeInForce::FillOrKill;
    assert_eq!(venue.placed(too_much).err(), Some(Rejection::FillOrKillNotFillable));
    let mut fillable = venue.order(BOB, Direction::Buy, Some("102"), "1.5");
    fillable.time_in_force = TimeInForce::FillOrKill;
    let placed = venue.placed(fillable).unwrap();
    assert_eq!(placed.order.status, OrderStatus::Filled);
    assert_eq!(placed.trades.len(), 2);
}

#[test]
fn post_only_is_rejected_when_it_would_take_and_rests_otherwise() {
    let mut venue = venue();
    venue.deposit(ALICE, ETH, ETH_UNIT);
    venue.deposit(BOB, USDC, 1_000 * USDC_UNIT);
    venue.limit(ALICE, Direction::Sell, "100", "1");
    let mut taking = venue.order(BOB, Direction::Buy, Some("100"), "1");
    taking.post_only = true;
    assert_eq!(venue.placed(taking).err(), Some(Rejection::PostOnlyWouldTake));
    let mut making = venue.order(BOB, Direction::Buy, Some("99.99"), "1");
    making.post_only = true;
    assert_eq!(venue.placed(making).unwrap().order.status, OrderStatus::Open);
}

#[test]
fn market_orders_walk_the_book_and_need_liquidity() {
    let mut venue = venue();
    venue.deposit(BOB, USDC, 1_000 * USDC_UNIT);
    let market = venue.order(BOB, Direction::Buy, None, "1");
    assert_eq!(venue.placed(market).err(), Some(Rejection::NoLiquidity));
    venue.deposit(ALICE, ETH, 2 * ETH_UNIT);
    venue.limit(ALICE, Direction::Sell, "100", "0.5");
    venue.limit(ALICE, Direction::Sell, "200", "0.5");
    let market = venue.order(BOB, Direction::Buy, None, "2");
    let placed = venue.placed(market).unwrap();
    assert_eq!(placed.order.filled, Quantity::from_lots(10_000));
    assert_eq!(placed.order.cost, usdc(150 * USDC_UNIT));
    assert_eq!(placed.order.status, OrderStatus::Cancelled);
    assert_eq!(
        venue.balance(BOB, USDC),
        Balance {
            available: usdc(850 * USDC_UNIT),
            locked: Amount::ZERO
        }
    );
    // A market buy whose walk costs more than the available quote is refused.
    venue.limit(ALICE, Direction::Sell, "2000", "1");
    let market = venue.order(BOB, Direction::Buy, None, "1");
    assert_eq!(venue.placed(market).err(), Some(Rejection::InsufficientBalance));
}

#[test]
fn an_incoming_order_cancels_its_own_resting_orders_instead_of_filling_them() {
    let mut venue = venue();
    venue.deposit(ALICE, ETH, 2 * ETH_UNIT);
    venue.deposit(ALICE, USDC, 1_000 * USDC_UNIT);
    venue.deposit(CAROL, ETH, ETH_UNIT);
    let own = venue.limit(ALICE, Direction::Sell, "100", "1");
    let other = venue.limit(CAROL, Direction::Sell, "100", "1");
    let buy = venue.limit(ALICE, Direction::Buy, "100", "1");
    assert_eq!(buy.trades, vec![(other.order.terms.order_id, 10_000, 10_000)]);
    assert_eq!(buy.others[0].terms.order_id, own.order.terms.order_id);
    assert_eq!(buy.others[0].status, OrderStatus::Cancelled);
    assert_eq!(buy.others[0].cancel_reason, Some(CancelReason::SelfTradePrevention));
    assert_eq!(venue.balance(ALICE, ETH).locked, Amount::ZERO);
    // An account alone on the other side finds no liquidity for a market order.
    venue.limit(ALICE, Direction::Sell, "100", "0.5");
    let market = venue.order(ALICE, Direction::Buy, None, "0.5");
    assert_eq!(venue.placed(market).err(), Some(Rejection::NoLiquidity));
}

#[test]
fn cancel_releases_the_lock_and_only_the_owner_may_cancel() {
    let mut venue = venue();
    venue.deposit(ALICE, USDC, 1_000 * USDC_UNIT);
    let bid = venue.limit(ALICE, Direction::Buy, "100", "1");
    let order_id = bid.order.terms.order_id;
    let cancel = |account| Command::CancelOrder {
        account,
        order_id,
        pair: None,
    };
    assert_eq!(venue.run(cancel(BOB)).err(), Some(Rejection::NotOwner));
    let events = venue.run(cancel(ALICE)).unwrap();
    assert!(matches!(&events[0], Event::OrderUpdated(record) if record.status == OrderStatus::Cancelled));
    assert_eq!(
        venue.balance(ALICE, USDC),
        Balance {
            available: usdc(1_000 * USDC_UNIT),
            locked: Amount::ZERO
        }
    );
    assert_eq!(venue.run(cancel(ALICE)).err(), Some(Rejection::OrderNotFound));
}

#[test]
fn orders_below_the_pair_minimums_are_rejected() {
    let mut venue = venue();
    venue.deposit(ALICE, USDC, 1_000 * USDC_UNIT);
    let tiny = venue.order(ALICE, Direction::Buy, Some("100"), "0.0009");
    assert_eq!(venue.placed(tiny).err(), Some(Rejection::BelowMinAmount));
    let cheap = venue.order(ALICE, Direction::Buy, Some("0.01"), "1");
    assert_eq!(venue.placed(cheap).err(), Some(Rejection::BelowMinNotional));
    let too_costly = venue.order(ALICE, Direction::Buy, Some("100"), "100");
    assert_eq!(venue.placed(too_costly).err(), Some(Rejection::InsufficientBalance));
}

#[test]
fn client_order_ids_are_unique_among_open_orders_only() {
    let mut venue = venue();
    venue.deposit(ALICE, USDC, 1_000 * USDC_UNIT);
    let mut first = venue.order(ALICE, Direction::Buy, Some("100"), "1");
    first.client_order_id = Some("bot-42".to_string());
    let first_id = first.order_id;
    venue.placed(first).unwrap();
    let mut second = venue.order(ALICE, Direction::Buy, Some("100"), "1");
    second.client_order_id = Some("bot-42".to_string());
    assert_eq!(
        venue.placed(second.clone()).err(),
        Some(Rejection::DuplicateClientOrderId)
    );
    venue
        .run(Command::CancelOrder {
            account: ALICE,
            order_id: first_id,
            pair: None,
        })
        .unwrap();
    assert_eq!(venue.placed(second).unwrap().order.status, OrderStatus::Open);
}

#[test]
fn the_open_order_limit_is_enforced() {
    let mut venue = venue();
    venue.engine = engine_with_limits(EngineLimits {
        max_open_orders_per_account: 2,
        ..EngineLimits::default()
    });
    venue.deposit(ALICE, USDC, 1_000 * USDC_UNIT);
    venue.limit(ALICE, Direction::Buy, "100", "1");
    venue.limit(ALICE, Direction::Buy, "101", "1");
    let third = venue.order(ALICE, Direction::Buy, Some("102"), "1");
    assert_eq!(venue.placed(third).err(), Some(Rejection::TooManyOpenOrders));
}

#[test]
fn withdrawals_need_available_funds_and_deposits_must_fit() {
    let mut venue = venue();
    venue.deposit(ALICE, USDC, 100 * USDC_UNIT);
    venue.limit(ALICE, Direction::Buy, "60", "1");
    assert_eq!(
        venue.run(alice_withdraws_usdc(41 * USDC_UNIT)).err(),
        Some(Rejection::InsufficientBalance)
    );
    venue.run(alice_withdraws_usdc(40 * USDC_UNIT)).unwrap();
    assert_eq!(venue.engine.net_deposits(USDC), usdc(60 * USDC_UNIT));
    let huge = Command::Deposit(TransferRequest {
        transfer_id: [2; 32],
        account: BOB,
        asset: USDC,
        amount: Amount::from_units(u128::MAX),
    });
    assert_eq!(venue.run(huge).err(), Some(Rejection::AmountTooLarge));
}

#[test]
fn eighteen_decimal_assets_work_over_their_realistic_range() {
    let mut venue = venue();
    // A billion ETH is more than will ever exist.
    venue.deposit(ALICE, ETH, 1_000_000_000 * ETH_UNIT);
    venue.deposit(BOB, USDC, 10u128.pow(15) * USDC_UNIT);
    venue.limit(ALICE, Direction::Sell, "250000", "100000000");
    let buy = venue.limit(BOB, Direction::Buy, "250000", "100000000");
    assert_eq!(buy.order.cost, usdc(25 * 10u128.pow(12) * USDC_UNIT));
    assert_eq!(buy.order.fee, Amount::from_units(100_000_000 * ETH_UNIT / 500));
}

#[test]
fn tradable_amounts_walk_the_asks_of_other_accounts() {
    let mut venue = venue();
    venue.deposit(ALICE, ETH, 3 * ETH_UNIT);
    venue.deposit(BOB, USDC, 250 * USDC_UNIT);
    venue.deposit(BOB, ETH, ETH_UNIT);
    venue.limit(ALICE, Direction::Sell, "100", "1");
    venue.limit(BOB, Direction::Sell, "120", "1");
    venue.limit(ALICE, Direction::Sell, "200", "2");
    let tradable = venue.engine.tradable_amounts(&BOB, PAIR).unwrap();
    // 100 USDC buys 1 ETH at 100; 150 USDC buys 0.75 ETH at 200; Bob's own ask is skipped.
    assert_eq!(tradable.buy_quantity, Quantity::from_lots(17_500));
    assert_eq!(tradable.buy_cost, usdc(250 * USDC_UNIT));
    assert_eq!(tradable.sell_amount, Amount::ZERO);
}

#[test]
fn positions_follow_fills_with_average_cost() {
    let mut venue = venue();
    venue.deposit(ALICE, ETH, 10 * ETH_UNIT);
    venue.deposit(BOB, USDC, 10_000 * USDC_UNIT);
    venue.limit(ALICE, Direction::Sell, "100", "1");
    venue.limit(BOB, Direction::Buy, "100", "1");
    venue.limit(ALICE, Direction::Sell, "200", "1");
    venue.limit(BOB, Direction::Buy, "200", "1");
    let bob = venue.engine.position(&BOB, PAIR);
    assert_eq!(bob.net_base, 2 * ETH_UNIT as i128);
    assert_eq!(bob.open_cost_quote, 300 * USDC_UNIT);
    let alice = venue.engine.position(&ALICE, PAIR);
    assert_eq!(alice.net_base, -2 * ETH_UNIT as i128);
    assert_eq!(alice.realized_pnl_quote, 0);
}
