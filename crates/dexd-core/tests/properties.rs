//! Property tests: random command streams through the engine, checked after every step against
//! the engine's own invariants and against a naive reference matcher written here from the
//! contract's rules, so that a wrong fill, a wrong fee or a lost unit shows up as a failure.
//! Two of the traders are subaccounts of two others, and transfers move funds between them:
//! conservation and the reference's totals hold across them too.

/// The engine's shared fixtures (`dexd_core::testing`), included: a crate's benchmarks and
/// integration tests cannot turn on its own `testing` feature.
#[allow(dead_code)]
#[path = "../src/testing.rs"]
mod testing;

use std::collections::HashMap;

use dexd_core::{
    Address, Amount, AssetIndex, Command, Direction, Engine, EngineConfig, EngineLimits, Event, NewOrder, OrderId,
    OrderType, Price, Quantity, Rejection, SubaccountTransferRequest, TimeInForce, TransferRequest,
};
use proptest::prelude::*;

use testing::{Market, BASE, FEE_ACCOUNT as FEES, PAIR, QUOTE};

const TRADERS: usize = 6;
/// The traders that are subaccounts: (index, owner's index, number).
const SUBACCOUNTS: [(usize, usize, u32); 2] = [(4, 0, 1), (5, 1, 1_000)];
/// Base units per lot and quote units per tick × lot, as the pair below makes them.
const STEP_UNITS: u128 = 100;
const QUOTE_UNITS_PER_TICK_LOT: u128 = 100;
const MAKER_FEE_PPM: u128 = 1_000;
const TAKER_FEE_PPM: u128 = 2_500;

fn trader(index: usize) -> Address {
    match SUBACCOUNTS.iter().find(|(sub, _, _)| *sub == index) {
        Some((_, owner, number)) => dexd_core::subaccount_address(&testing::account(*owner as u64), *number),
        None => testing::account(index as u64),
    }
}

/// The transfer of `units` of `asset` between a subaccount trader (`which`) and its owner,
/// to the subaccount or from it.
fn subaccount_transfer(number: usize, which: usize, to_subaccount: bool, asset: u16, units: u128) -> Command {
    let (_, owner, sub_number) = SUBACCOUNTS[which % SUBACCOUNTS.len()];
    let (from_number, to_number) = if to_subaccount {
        (0, sub_number)
    } else {
        (sub_number, 0)
    };
    Command::TransferBetweenSubaccounts(SubaccountTransferRequest {
        owner: testing::account(owner as u64),
        from_number,
        to_number,
        asset: AssetIndex(asset),
        amount: Amount::from_units(units),
        client_transfer_id: format!("t-{number}"),
    })
}

fn new_engine() -> Engine {
    Engine::new(engine_config()).unwrap()
}

fn engine_config() -> EngineConfig {
    Market {
        fees_ppm: [MAKER_FEE_PPM as u32, TAKER_FEE_PPM as u32],
        limits: EngineLimits {
            max_open_orders_per_account: 30,
            ..EngineLimits::default()
        },
        ..Market::whole_units()
    }
    .config()
}

#[derive(Clone, Debug)]
enum Operation {
    Deposit {
        trader: usize,
        asset: u16,
        units: u128,
    },
    Withdraw {
        trader: usize,
        asset: u16,
        units: u128,
    },
    Place {
        trader: usize,
        buy: bool,
        kind: u8,
        post_only: bool,
        price: u64,
        lots: u64,
    },
    Cancel {
        trader: usize,
        pick: usize,
    },
    /// Between a subaccount trader and its owner.
    Transfer {
        which: usize,
        to_subaccount: bool,
        asset: u16,
        units: u128,
    },
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        2 => (0..TRADERS, 0..2u16, 1..200_000u128).prop_map(|(trader, asset, units)| Operation::Deposit { trader, asset, units }),
        1 => (0..TRADERS, 0..2u16, 1..50_000u128).prop_map(|(trader, asset, units)| Operation::Withdraw { trader, asset, units }),
        8 => (0..TRADERS, any::<bool>(), 0..4u8, prop::bool::weighted(0.15), 95..=105u64, 1..=12u64).prop_map(
            |(trader, buy, kind, post_only, price, lots)| Operation::Place { trader, buy, kind, post_only, price, lots }
        ),
        3 => (0..TRADERS, any::<usize>()).prop_map(|(trader, pick)| Operation::Cancel { trader, pick }),
        2 => (0..SUBACCOUNTS.len(), any::<bool>(), 0..2u16, 1..100_000u128).prop_map(
            |(which, to_subaccount, asset, units)| Operation::Transfer { which, to_subaccount, asset, units }
        ),
    ]
}

#[derive(Clone, Debug)]
struct ReferenceOrder {
    order_id: OrderId,
    account: Address,
    direction: Direction,
    price: u64,
    remaining: u64,
    sequence: u64,
}

/// The obviously correct matcher: a flat list, searched in full for the best order each time.
#[derive(Default)]
struct Reference {
    resting: Vec<ReferenceOrder>,
    totals: HashMap<(Address, AssetIndex), u128>,
    sequence: u64,
}

struct ReferenceOutcome {
    fills: Vec<(OrderId, u64, u64)>,
    self_cancels: Vec<OrderId>,
    filled: u64,
    cost: u128,
}

impl Reference {
    /// The fills an order would make, without changing anything.
    fn dry_run(&self, account: Address, direction: Direction, limit: Option<u64>, lots: u64) -> ReferenceOutcome {
        let mut candidates: Vec<&ReferenceOrder> = self
            .resting
            .iter()
            .filter(|order| order.direction != direction)
            .filter(|order| match (limit, direction) {
                (None, _) => true,
                (Some(limit), Direction::Buy) => order.price <= limit,
                (Some(limit), Direction::Sell) => order.price >= limit,
            })
            .collect();
        candidates.sort_by_key(|order| {
            let price_rank = match direction {
                Direction::Buy => order.price as i128,
                Direction::Sell => -(order.price as i128),
            };
            (price_rank, order.sequence)
        });
        let mut outcome = ReferenceOutcome {
            fills: Vec::new(),
            self_cancels: Vec::new(),
            filled: 0,
            cost: 0,
        };
        for order in candidates {
            if outcome.filled == lots {
                break;
            }
            if order.account == account {
                outcome.self_cancels.push(order.order_id);
                continue;
            }
            let quantity = order.remaining.min(lots - outcome.filled);
            outcome.fills.push((order.order_id, order.price, quantity));
            outcome.filled += quantity;
            outcome.cost += u128::from(order.price) * u128::from(quantity) * QUOTE_UNITS_PER_TICK_LOT;
        }
        outcome
    }

    fn credit(&mut self, account: Address, asset: AssetIndex, units: u128) {
        *self.totals.entry((account, asset)).or_default() += units;
    }

    fn debit(&mut self, account: Address, asset: AssetIndex, units: u128) {
        let total = self.totals.entry((account, asset)).or_default();
        *total = total.checked_sub(units).expect("reference total never goes negative");
    }

    fn apply_fills(&mut self, taker: Address, direction: Direction, outcome: &ReferenceOutcome) {
        self.resting
            .retain(|order| !outcome.self_cancels.contains(&order.order_id));
        for (maker_id, price, quantity) in &outcome.fills {
            let maker = self
                .resting
                .iter_mut()
                .find(|order| order.order_id == *maker_id)
                .unwrap();
            maker.remaining -= quantity;
            let maker_account = maker.account;
            let base = u128::from(*quantity) * STEP_UNITS;
            let cost = u128::from(*price) * u128::from(*quantity) * QUOTE_UNITS_PER_TICK_LOT;
            let (buyer, seller, buyer_rate, seller_rate) = match direction {
                Direction::Buy => (taker, maker_account, TAKER_FEE_PPM, MAKER_FEE_PPM),
                Direction::Sell => (maker_account, taker, MAKER_FEE_PPM, TAKER_FEE_PPM),
            };
            let buyer_fee = base * buyer_rate / 1_000_000;
            let seller_fee = cost * seller_rate / 1_000_000;
            self.debit(seller, BASE, base);
            self.credit(buyer, BASE, base - buyer_fee);
            self.credit(FEES, BASE, buyer_fee);
            self.debit(buyer, QUOTE, cost);
            self.credit(seller, QUOTE, cost - seller_fee);
            self.credit(FEES, QUOTE, seller_fee);
        }
        self.resting.retain(|order| order.remaining > 0);
    }
}

struct Harness {
    /// The operations run so far (each transfer gets its own id from it).
    steps: usize,
    engine: Engine,
    reference: Reference,
    placed: Vec<OrderId>,
    time_ms: u64,
}

impl Harness {
    fn new() -> Harness {
        Harness {
            steps: 0,
            engine: new_engine(),
            reference: Reference::default(),
            placed: Vec::new(),
            time_ms: 1,
        }
    }

    fn step(&mut self, operation: &Operation) -> Result<(), TestCaseError> {
        self.time_ms += 7;
        self.steps += 1;
        match operation {
            Operation::Transfer {
                which,
                to_subaccount,
                asset,
                units,
            } => {
                let (sub, owner, _) = SUBACCOUNTS[which % SUBACCOUNTS.len()];
                let (from, to) = if *to_subaccount {
                    (trader(owner), trader(sub))
                } else {
                    (trader(sub), trader(owner))
                };
                let available = self.engine.balance(&from, AssetIndex(*asset)).available.units();
                let command = subaccount_transfer(self.steps, *which, *to_subaccount, *asset, *units);
                let mut events = Vec::new();
                match self.engine.execute(command, self.time_ms, &mut events) {
                    Ok(()) => {
                        self.reference.debit(from, AssetIndex(*asset), *units);
                        self.reference.credit(to, AssetIndex(*asset), *units);
                    }
                    Err(Rejection::InsufficientBalance) => prop_assert!(available < *units),
                    Err(other) => return Err(fail(format!("transfer refused: {other:?}"))),
                }
            }
            Operation::Deposit {
                trader: index,
                asset,
                units,
            } => {
                let command = Command::Deposit(transfer(trader(*index), *asset, *units));
                let mut events = Vec::new();
                self.engine
                    .execute(command, self.time_ms, &mut events)
                    .map_err(|rejection| fail(format!("{rejection:?}")))?;
                self.reference.credit(trader(*index), AssetIndex(*asset), *units);
            }
            Operation::Withdraw {
                trader: index,
                asset,
                units,
            } => {
                let account = trader(*index);
                let available = self.engine.balance(&account, AssetIndex(*asset)).available.units();
                let command = Command::Withdraw(transfer(account, *asset, *units));
                let mut events = Vec::new();
                match self.engine.execute(command, self.time_ms, &mut events) {
                    Ok(()) => self.reference.debit(account, AssetIndex(*asset), *units),
                    Err(Rejection::InsufficientBalance) => prop_assert!(available < *units),
                    Err(other) => return Err(fail(format!("withdrawal refused: {other:?}"))),
                }
            }
            Operation::Place {
                trader: index,
                buy,
                kind,
                post_only,
                price,
                lots,
            } => {
                self.place(trader(*index), *buy, *kind, *post_only, *price, *lots)?;
            }
            Operation::Cancel { trader: index, pick } => {
                if self.placed.is_empty() {
                    return Ok(());
                }
                let order_id = self.placed[pick % self.placed.len()];
                let account = trader(*index);
                let resting = self
                    .reference
                    .resting
                    .iter()
                    .find(|order| order.order_id == order_id)
                    .cloned();
                let mut events = Vec::new();
                match (
                    self.engine.execute(
                        Command::CancelOrder {
                            account,
                            order_id,
                            pair: None,
                        },
                        self.time_ms,
                        &mut events,
                    ),
                    resting,
                ) {
                    (Ok(()), Some(order)) if order.account == account => {
                        self.reference.resting.retain(|order| order.order_id != order_id)
                    }
                    (Err(Rejection::NotOwner), Some(order)) if order.account != account => {}
                    (Err(Rejection::OrderNotFound), None) => {}
                    (result, resting) => return Err(fail(format!("cancel gave {result:?} for {resting:?}"))),
                }
            }
        }
        self.check()
    }

    fn place(
        &mut self,
        account: Address,
        buy: bool,
        kind: u8,
        post_only: bool,
        price: u64,
        lots: u64,
    ) -> Result<(), TestCaseError> {
        let direction = if buy { Direction::Buy } else { Direction::Sell };
        let (order_type, time_in_force) = match kind {
            0 => (OrderType::Limit, TimeInForce::GoodTillCancelled),
            1 => (OrderType::Limit, TimeInForce::ImmediateOrCancel),
            2 => (OrderType::Limit, TimeInForce::FillOrKill),
            _ => (OrderType::Market, TimeInForce::ImmediateOrCancel),
        };
        let limit = (order_type == OrderType::Limit).then_some(price);
        let post_only = post_only && order_type == OrderType::Limit;
        let order_id = OrderId::from_bytes(order_id_bytes(self.placed.len() as u64 + 1));
        let order = NewOrder {
            order_id,
            client_order_id: None,
            account,
            pair: PAIR,
            order_type,
            direction,
            time_in_force,
            post_only,
            price: limit.map(|ticks| Price::from_ticks(ticks).unwrap()),
            quantity: Quantity::from_lots(lots),
            conditions: Default::default(),
        };
        let expected = self.reference.dry_run(account, direction, limit, lots);
        let crosses_any = self
            .reference
            .dry_run(Address::from_bytes([0; 20]), direction, limit, u64::MAX)
            .filled
            > 0;
        let paid = if buy { QUOTE } else { BASE };
        let available = self.engine.balance(&account, paid).available.units();
        let mut events = Vec::new();
        let result = self
            .engine
            .execute(Command::PlaceOrder(order), self.time_ms, &mut events);
        self.placed.push(order_id);
        match result {
            Ok(()) => {
                prop_assert!(
                    !(post_only && crosses_any),
                    "a post-only order that crosses was accepted"
                );
                let trades: Vec<(OrderId, u64, u64)> = events
                    .iter()
                    .filter_map(|event| match event {
                        Event::TradeExecuted(trade) => {
                            Some((trade.maker_order_id, trade.price.ticks(), trade.quantity.lots()))
                        }
                        _ => None,
                    })
                    .collect();
                prop_assert_eq!(&trades, &expected.fills, "fills differ from the reference matcher");
                self.reference.apply_fills(account, direction, &expected);
                let remaining = lots - expected.filled;
                if order_type == OrderType::Limit && time_in_force == TimeInForce::GoodTillCancelled && remaining > 0 {
                    self.reference.sequence += 1;
                    self.reference.resting.push(ReferenceOrder {
                        order_id,
                        account,
                        direction,
                        price,
                        remaining,
                        sequence: self.reference.sequence,
                    });
                }
            }
            Err(Rejection::PostOnlyWouldTake) => prop_assert!(post_only && crosses_any),
            Err(Rejection::FillOrKillNotFillable) => prop_assert!(expected.filled < lots),
            Err(Rejection::NoLiquidity) => prop_assert!(order_type == OrderType::Market && expected.filled == 0),
            Err(Rejection::InsufficientBalance) => {
                let required = match (direction, limit) {
                    (Direction::Buy, Some(limit)) => u128::from(limit) * u128::from(lots) * QUOTE_UNITS_PER_TICK_LOT,
                    (Direction::Buy, None) => expected.cost,
                    (Direction::Sell, _) => u128::from(lots) * STEP_UNITS,
                };
                prop_assert!(available < required, "refused although {available} covers {required}");
            }
            Err(Rejection::TooManyOpenOrders) => {
                let open = self
                    .reference
                    .resting
                    .iter()
                    .filter(|order| order.account == account)
                    .count();
                prop_assert!(open >= 30 - expected.self_cancels.len().min(30));
            }
            Err(other) => return Err(fail(format!("unexpected rejection {other:?}"))),
        }
        Ok(())
    }

    fn check(&self) -> Result<(), TestCaseError> {
        self.engine.check_invariants().map_err(fail)?;
        prop_assert_eq!(self.engine.resting_order_count(), self.reference.resting.len());
        for order in &self.reference.resting {
            let record = self
                .engine
                .open_order(&order.order_id)
                .ok_or_else(|| fail("reference order missing"))?;
            prop_assert_eq!(record.remaining().lots(), order.remaining);
        }
        let mut accounts: Vec<Address> = (0..TRADERS).map(trader).collect();
        accounts.push(FEES);
        for account in accounts {
            for asset in [BASE, QUOTE] {
                let expected = self.reference.totals.get(&(account, asset)).copied().unwrap_or(0);
                prop_assert_eq!(self.engine.balance(&account, asset).total().units(), expected);
            }
        }
        Ok(())
    }
}

fn transfer(account: Address, asset: u16, units: u128) -> TransferRequest {
    TransferRequest {
        transfer_id: [7; 32],
        account,
        asset: AssetIndex(asset),
        amount: Amount::from_units(units),
    }
}

fn order_id_bytes(number: u64) -> [u8; 32] {
    let mut bytes = [0u8; 32];
    bytes[24..].copy_from_slice(&number.to_be_bytes());
    bytes
}

/// The command an operation stands for, as the `number`th of a stream.
fn command_of(number: usize, operation: &Operation) -> Command {
    match operation {
        Operation::Deposit {
            trader: index,
            asset,
            units,
        } => Command::Deposit(transfer(trader(*index), *asset, *units)),
        Operation::Withdraw {
            trader: index,
            asset,
            units,
        } => Command::Withdraw(transfer(trader(*index), *asset, *units)),
        Operation::Place {
            trader: index,
            buy,
            price,
            lots,
            ..
        } => Command::PlaceOrder(NewOrder {
            order_id: OrderId::from_bytes(order_id_bytes(number as u64)),
            client_order_id: number.is_multiple_of(3).then(|| format!("client-{number}")),
            account: trader(*index),
            pair: PAIR,
            order_type: OrderType::Limit,
            direction: if *buy { Direction::Buy } else { Direction::Sell },
            time_in_force: TimeInForce::GoodTillCancelled,
            post_only: false,
            price: Price::from_ticks(*price),
            quantity: Quantity::from_lots(*lots),
            conditions: Default::default(),
        }),
        Operation::Cancel { trader: index, pick } => Command::CancelOrder {
            account: trader(*index),
            order_id: OrderId::from_bytes(order_id_bytes((*pick % (number + 1)) as u64)),
            pair: None,
        },
        Operation::Transfer {
            which,
            to_subaccount,
            asset,
            units,
        } => subaccount_transfer(number, *which, *to_subaccount, *asset, *units),
    }
}

fn fail(message: impl Into<String>) -> TestCaseError {
    TestCaseError::fail(message.into())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_command_streams_match_the_reference_and_keep_every_invariant(
        operations in prop::collection::vec(operation(), 1..250)
    ) {
        let mut harness = Harness::new();
        for operation in &operations {
            harness.step(operation)?;
        }
    }

    #[test]
    fn replaying_the_same_commands_gives_the_same_events_and_state(
        operations in prop::collection::vec(operation(), 1..150),
        time_steps in prop::collection::vec(0..100_000u64, 150),
    ) {
        let run = || {
            let mut harness = Harness::new();
            let mut times = time_steps.iter().cycle();
            let mut all_events = Vec::new();
            for (number, operation) in operations.iter().enumerate() {
                harness.time_ms += times.next().unwrap();
                let command = command_of(number, operation);
                let mut events = Vec::new();
                let result = harness.engine.execute(command, harness.time_ms, &mut events);
                all_events.push((result, events));
            }
            (all_events, harness.engine.state_hash())
        };
        let (first_events, first_hash) = run();
        let (second_events, second_hash) = run();
        prop_assert_eq!(first_events, second_events);
        prop_assert_eq!(first_hash, second_hash);
    }

    #[test]
    fn an_engine_restored_from_its_state_is_the_same_engine_and_behaves_the_same(
        operations in prop::collection::vec(operation(), 2..200),
        split in 0..200usize,
        time_steps in prop::collection::vec(0..100_000u64, 200),
    ) {
        let split = split % operations.len();
        let mut original = new_engine();
        let mut time_ms = 1_000u64;
        let mut times = time_steps.iter().cycle();
        for (number, operation) in operations[..split].iter().enumerate() {
            time_ms += times.next().unwrap();
            let mut events = Vec::new();
            let _ = original.execute(command_of(number, operation), time_ms, &mut events);
        }
        let mut restored = Engine::from_state(engine_config(), &original.state()).map_err(|error| fail(error.to_string()))?;
        prop_assert_eq!(restored.state_hash(), original.state_hash());
        restored.check_invariants().map_err(fail)?;
        prop_assert_eq!(restored.state(), original.state());
        for (number, operation) in operations.iter().enumerate().skip(split) {
            time_ms += times.next().unwrap();
            let (mut first, mut second) = (Vec::new(), Vec::new());
            let a = original.execute(command_of(number, operation), time_ms, &mut first);
            let b = restored.execute(command_of(number, operation), time_ms, &mut second);
            prop_assert_eq!(a, b);
            prop_assert_eq!(first, second);
        }
        prop_assert_eq!(restored.state_hash(), original.state_hash());
    }
}
