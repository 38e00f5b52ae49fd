//! Property tests of conditional orders: random books with trigger orders, one-cancels-other
//! groups and expiries, checked after every command against the engine's invariants (which
//! include "no untriggered order's trigger is met by the last price": every met trigger fired,
//! and a group's shared lock is exactly its shares), then replayed from the accepted commands and
//! restored from a state, each to the same events and state hash.

/// The engine's shared fixtures (`dexd_core::testing`), included: a crate's benchmarks and
/// integration tests cannot turn on its own `testing` feature.
#[allow(dead_code)]
#[path = "../src/testing.rs"]
mod testing;

use dexd_core::{
    Address, AssetIndex, Command, Direction, Engine, EngineConfig, EngineLimits, Event, NewOrder, OrderId, Price,
    TimeInForce, Trigger, TriggerCondition,
};
use proptest::prelude::*;

use testing::{Market, PAIR};

const TRADERS: usize = 3;
const START_MS: u64 = 1_000_000;

fn trader(index: usize) -> Address {
    testing::account(index as u64)
}

fn engine_config() -> EngineConfig {
    Market {
        limits: EngineLimits {
            max_open_orders_per_account: 40,
            ..EngineLimits::default()
        },
        ..Market::whole_units()
    }
    .config()
}

#[derive(Clone, Debug)]
enum Operation {
    /// A limit order, or a market order when `price` is 0.
    Place {
        trader: usize,
        buy: bool,
        price: u64,
        lots: u64,
        immediate: bool,
    },
    /// A trigger order: a limit at `price`, or a market sell when `price` is 0.
    Trigger {
        trader: usize,
        buy: bool,
        price: u64,
        trigger: u64,
        above: bool,
        lots: u64,
        group: Option<u8>,
        expires_in_s: Option<u64>,
    },
    /// A GTC limit in a group.
    Grouped {
        trader: usize,
        buy: bool,
        price: u64,
        lots: u64,
        group: u8,
    },
    Cancel {
        trader: usize,
        pick: usize,
    },
    /// Time passes and every due expiry is journaled.
    Wait {
        seconds: u64,
    },
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        4 => (0..TRADERS, any::<bool>(), prop_oneof![Just(0u64), 90..110u64], 1..8u64, any::<bool>())
            .prop_map(|(trader, buy, price, lots, immediate)| Operation::Place { trader, buy, price, lots, immediate }),
        3 => (0..TRADERS, any::<bool>(), prop_oneof![Just(0u64), 85..115u64], 85..115u64, any::<bool>(), 1..6u64,
              proptest::option::of(0..3u8), proptest::option::of(5..30u64))
            .prop_map(|(trader, buy, price, trigger, above, lots, group, expires_in_s)| Operation::Trigger {
                trader, buy, price, trigger, above, lots, group, expires_in_s,
            }),
        1 => (0..TRADERS, any::<bool>(), 90..110u64, 1..6u64, 0..3u8)
            .prop_map(|(trader, buy, price, lots, group)| Operation::Grouped { trader, buy, price, lots, group }),
        1 => (0..TRADERS, any::<usize>()).prop_map(|(trader, pick)| Operation::Cancel { trader, pick }),
        1 => (1..20u64).prop_map(|seconds| Operation::Wait { seconds }),
    ]
}

struct Harness {
    engine: Engine,
    time_ms: u64,
    next_id: u64,
    placed: Vec<(Address, OrderId)>,
    accepted: Vec<(Command, u64)>,
    events: Vec<Event>,
}

impl Harness {
    fn new() -> Harness {
        let mut harness = Harness {
            engine: Engine::new(engine_config()).unwrap(),
            time_ms: START_MS,
            next_id: 0,
            placed: Vec::new(),
            accepted: Vec::new(),
            events: Vec::new(),
        };
        for index in 0..TRADERS {
            for asset in 0..2 {
                harness.run(testing::deposit(trader(index), AssetIndex(asset), 100_000));
            }
        }
        harness
    }

    fn run(&mut self, command: Command) -> bool {
        self.time_ms += 1;
        let before = self.engine.state_hash();
        let mut events = Vec::new();
        let accepted = self.engine.execute(command.clone(), self.time_ms, &mut events).is_ok();
        if accepted {
            self.accepted.push((command, self.time_ms));
            self.events.extend(events);
        } else {
            assert!(events.is_empty());
            assert_eq!(before, self.engine.state_hash(), "a refusal changes nothing");
        }
        self.engine.check_invariants().unwrap();
        // Every trigger the last price meets has fired (the bound on one command's firings is
        // far above these books).
        let last_price = self.engine.last_price(PAIR);
        for (_, order_id) in &self.placed {
            let Some(record) = self.engine.open_order(order_id) else {
                continue;
            };
            if record.status == dexd_core::OrderStatus::Untriggered {
                let trigger = record.terms.conditions().trigger.unwrap();
                assert!(
                    !last_price.is_some_and(|price| trigger.is_met_by(price)),
                    "a met trigger still waits"
                );
            }
        }
        accepted
    }

    fn order(&mut self, account: usize, buy: bool, price: u64, lots: u64) -> NewOrder {
        self.next_id += 1;
        let direction = if buy { Direction::Buy } else { Direction::Sell };
        testing::order(
            self.next_id,
            trader(account),
            direction,
            (price != 0).then_some(price),
            lots,
        )
    }

    fn place(&mut self, order: NewOrder) {
        let key = (order.account, order.order_id);
        if self.run(Command::PlaceOrder(order)) {
            self.placed.push(key);
        }
    }

    fn step(&mut self, operation: &Operation) {
        match *operation {
            Operation::Place {
                trader,
                buy,
                price,
                lots,
                immediate,
            } => {
                let mut order = self.order(trader, buy, price, lots);
                if immediate {
                    order.time_in_force = TimeInForce::ImmediateOrCancel;
                }
                self.place(order);
            }
            Operation::Trigger {
                trader,
                buy,
                price,
                trigger,
                above,
                lots,
                group,
                expires_in_s,
            } => {
                let mut order = self.order(trader, buy && price != 0, price, lots);
                order.conditions_mut().trigger = Some(Trigger {
                    price: Price::from_ticks(trigger).unwrap(),
                    condition: if above {
                        TriggerCondition::Above
                    } else {
                        TriggerCondition::Below
                    },
                });
                order.conditions_mut().oco_group = group.map(|group| format!("{trader}-{group}"));
                order.conditions_mut().expires_at_ms = expires_in_s.map(|seconds| self.time_ms + seconds * 1_000);
                self.place(order);
            }
            Operation::Grouped {
                trader,
                buy,
                price,
                lots,
                group,
            } => {
                let mut order = self.order(trader, buy, price, lots);
                order.conditions_mut().oco_group = Some(format!("{trader}-{group}"));
                self.place(order);
            }
            Operation::Cancel { trader: index, pick } => {
                let mine: Vec<OrderId> = self
                    .placed
                    .iter()
                    .filter(|(account, order_id)| {
                        *account == trader(index) && self.engine.open_order(order_id).is_some()
                    })
                    .map(|(_, order_id)| *order_id)
                    .collect();
                if let Some(order_id) = mine.get(pick % mine.len().max(1)) {
                    let command = Command::CancelOrder {
                        account: trader(index),
                        order_id: *order_id,
                        pair: Some(PAIR),
                    };
                    assert!(self.run(command), "an open order of its owner cancels");
                }
            }
            Operation::Wait { seconds } => {
                self.time_ms += seconds * 1_000;
                for order_id in self.engine.due_expiries(self.time_ms, 100) {
                    assert!(self.run(Command::ExpireOrder { order_id }), "a due expiry applies");
                }
                assert!(self.engine.due_expiries(self.time_ms, 100).is_empty());
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 96, ..ProptestConfig::default() })]

    #[test]
    fn random_conditional_books_keep_every_invariant_and_replay_to_the_same_state(
        operations in proptest::collection::vec(operation(), 1..120)
    ) {
        let mut harness = Harness::new();
        for operation in &operations {
            harness.step(operation);
        }
        let mut replayed = Engine::new(engine_config()).unwrap();
        let mut events = Vec::new();
        for (command, time_ms) in &harness.accepted {
            replayed.execute(command.clone(), *time_ms, &mut events).unwrap();
        }
        prop_assert_eq!(&events, &harness.events);
        prop_assert_eq!(replayed.state_hash(), harness.engine.state_hash());
        let restored = Engine::from_state(engine_config(), &harness.engine.state()).unwrap();
        prop_assert_eq!(restored.state_hash(), harness.engine.state_hash());
        restored.check_invariants().unwrap();
        prop_assert_eq!(restored.due_expiries(u64::MAX, 1_000), harness.engine.due_expiries(u64::MAX, 1_000));
    }
}
