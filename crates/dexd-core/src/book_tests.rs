//! The order book against a naive model: random inserts, cancels and fills, after each of which
//! the book's structure holds, its kept best prices are the model's, and every level it shows
//! is the model's, in order.

use std::collections::BTreeMap;

use proptest::prelude::*;

use crate::book::{LevelView, OrderBook, SlotKey};
use crate::ledger::AccountSlot;
use crate::money::{Amount, Price, Quantity};
use crate::order::{Direction, OrderRecord, OrderStatus};
use crate::testing::{account, order};

/// What the model keeps of a resting order: side, price, remaining lots, and its place in time.
#[derive(Clone, Copy, Debug)]
struct Resting {
    direction: Direction,
    price_ticks: u64,
    remaining_lots: u64,
    sequence: u64,
}

#[derive(Clone, Debug)]
enum Step {
    Insert { buy: bool, price_ticks: u64, lots: u64 },
    Remove { pick: usize },
    Fill { pick: usize, lots: u64 },
}

fn step() -> impl Strategy<Value = Step> {
    // Prices from a narrow band, so that levels are shared, emptied and reopened; bids below
    // asks, so that the book never crosses.
    prop_oneof![
        4 => (any::<bool>(), 0u64..12, 1u64..5).prop_map(|(buy, offset, lots)| Step::Insert {
            buy,
            price_ticks: if buy { 100 + offset } else { 200 + offset },
            lots,
        }),
        2 => any::<usize>().prop_map(|pick| Step::Remove { pick }),
        2 => (any::<usize>(), 1u64..5).prop_map(|(pick, lots)| Step::Fill { pick, lots }),
    ]
}

fn record(sequence: u64, direction: Direction, price_ticks: u64, lots: u64) -> OrderRecord {
    OrderRecord {
        terms: order(sequence, account(1), direction, Some(price_ticks), lots),
        filled: Quantity::ZERO,
        cost: Amount::ZERO,
        fee: Amount::ZERO,
        status: OrderStatus::Open,
        cancel_reason: None,
        locked: Amount::ZERO,
        created_at_ms: 0,
        updated_at_ms: 0,
        sequence,
    }
}

/// The model's levels of a side, best first.
fn model_levels(resting: &BTreeMap<SlotKey, Resting>, direction: Direction) -> Vec<LevelView> {
    let mut by_price: BTreeMap<u64, (u128, u32)> = BTreeMap::new();
    for order in resting.values().filter(|order| order.direction == direction) {
        let level = by_price.entry(order.price_ticks).or_default();
        level.0 += u128::from(order.remaining_lots);
        level.1 += 1;
    }
    let views = by_price.into_iter().map(|(price_ticks, (quantity, orders))| LevelView {
        price: Price::from_ticks(price_ticks).expect("positive"),
        quantity,
        orders,
    });
    match direction {
        Direction::Buy => views.rev().collect(),
        Direction::Sell => views.collect(),
    }
}

proptest! {
    #[test]
    fn the_book_matches_a_naive_model_after_every_step(steps in prop::collection::vec(step(), 1..200)) {
        let mut book = OrderBook::new();
        let mut resting: BTreeMap<SlotKey, Resting> = BTreeMap::new();
        let mut next_sequence = 1u64;
        for step in steps {
            match step {
                Step::Insert { buy, price_ticks, lots } => {
                    let direction = if buy { Direction::Buy } else { Direction::Sell };
                    let sequence = next_sequence;
                    next_sequence += 1;
                    let key = book.insert(record(sequence, direction, price_ticks, lots), AccountSlot::from_index(0), 0);
                    let model = Resting { direction, price_ticks, remaining_lots: lots, sequence };
                    prop_assert!(resting.insert(key, model).is_none(), "a key handed out twice");
                }
                Step::Remove { pick } if !resting.is_empty() => {
                    let key = *resting.keys().nth(pick % resting.len()).expect("picked");
                    let model = resting.remove(&key).expect("resting");
                    let removed = book.remove(key);
                    prop_assert_eq!(removed.sequence, model.sequence);
                    prop_assert_eq!(removed.remaining().lots(), model.remaining_lots);
                }
                Step::Fill { pick, lots } if !resting.is_empty() => {
                    let key = *resting.keys().nth(pick % resting.len()).expect("picked");
                    let model = resting.get_mut(&key).expect("resting");
                    // A fill never takes an order whole here: a whole fill leaves the book by
                    // `remove`, as the engine does it.
                    if lots < model.remaining_lots {
                        model.remaining_lots -= lots;
                        book.fill(key, Quantity::from_lots(lots), |_| {});
                    }
                }
                Step::Remove { .. } | Step::Fill { .. } => {}
            }
            prop_assert_eq!(book.check_structure(), Ok(()));
            prop_assert_eq!(book.order_count(), resting.len());
            for direction in [Direction::Buy, Direction::Sell] {
                let levels = model_levels(&resting, direction);
                prop_assert_eq!(book.best_level(direction), levels.first().copied());
                prop_assert_eq!(book.best_price(direction), levels.first().map(|level| level.price));
                prop_assert_eq!(&book.levels(direction, usize::MAX), &levels);
                for level in &levels {
                    prop_assert_eq!(book.level_at(direction, level.price), Some(*level));
                }
                let mut visited = Vec::new();
                book.visit_in_priority(direction, |key, record, _| {
                    visited.push((key, record.sequence));
                    true
                });
                let mut expected: Vec<(SlotKey, u64, u64)> = resting
                    .iter()
                    .filter(|(_, order)| order.direction == direction)
                    .map(|(key, order)| (*key, order.price_ticks, order.sequence))
                    .collect();
                expected.sort_by_key(|(_, price_ticks, sequence)| match direction {
                    Direction::Buy => (u64::MAX - price_ticks, *sequence),
                    Direction::Sell => (*price_ticks, *sequence),
                });
                let expected: Vec<(SlotKey, u64)> = expected.into_iter().map(|(key, _, sequence)| (key, sequence)).collect();
                prop_assert_eq!(visited, expected);
            }
        }
    }
}
