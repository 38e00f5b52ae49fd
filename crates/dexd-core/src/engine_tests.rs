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
fn engine_with_limits(limits: EngineLimits) -> Engine {
    Engine::new(scenario_config(limits)).unwrap()
}

fn engine() -> Engine {
    engine_with_limits(EngineLimits::default())
}

/// A venue on [`engine`] where nobody holds anything yet.
fn venue() -> Venue {
    Venue::new(scenario_config(EngineLimits::default()), 1_000)
}

/// Placing as these tests read it: the outcome of one placement.
trait Placing {
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
struct Placed {
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
fn alice_withdraws_usdc(units: u128) -> Command {
    Command::Withdraw(TransferRequest {
        transfer_id: [1; 32],
        account: ALICE,
        asset: USDC,
        amount: Amount::from_units(units),
    })
}

fn usdc(units: u128) -> Amount {
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
