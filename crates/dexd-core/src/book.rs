//! One pair's limit order book: resting orders in price-time priority.
//!
//! Orders live in a slab; each price level is a FIFO list threaded through the slab, and the
//! levels of each side sit in a `BTreeMap` keyed by price. Insert, remove and the best price are
//! O(log levels); cancelling an order in the middle of a level is O(1) once it is found. The book
//! does not know balances, fees or matching rules: [`crate::engine`] does.

use std::collections::BTreeMap;

use slab::Slab;

use crate::ledger::AccountSlot;
use crate::money::{Price, Quantity};
use crate::order::{Direction, OrderRecord};

/// A handle to a resting order inside its book.
pub type SlotKey = usize;

const NO_SLOT: SlotKey = usize::MAX;

/// One price level as seen from outside: aggregated quantity and order count.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LevelView {
    /// The level's price.
    pub price: Price,
    /// The unfilled quantity of all orders at that price.
    pub quantity: u128,
    /// How many orders rest at that price.
    pub orders: u32,
}

#[derive(Clone, Debug)]
struct Level {
    head: SlotKey,
    tail: SlotKey,
    quantity_lots: u128,
    order_count: u32,
}

#[derive(Clone, Debug)]
struct Node {
    record: OrderRecord,
    account_slot: AccountSlot,
    /// The order's place in its account's list of resting orders, which the engine keeps here
    /// so that taking the order out of that list needs no search (`engine::open_orders`).
    owner_position: u32,
    previous: SlotKey,
    next: SlotKey,
}

/// The resting orders of one pair.
#[derive(Clone, Debug, Default)]
pub struct OrderBook {
    nodes: Slab<Node>,
    bids: BTreeMap<Price, Level>,
    asks: BTreeMap<Price, Level>,
    sequence: u64,
}

impl OrderBook {
    /// An empty book.
    pub fn new() -> OrderBook {
        OrderBook::default()
    }

    /// How many orders rest in the book.
    pub fn order_count(&self) -> usize {
        self.nodes.len()
    }

    /// A number that changes whenever the book does.
    pub fn sequence(&self) -> u64 {
        self.sequence
    }

    /// Sets the book's sequence, when the book is restored from a snapshot (inserting its
    /// orders moved it).
    pub fn restore_sequence(&mut self, sequence: u64) {
        self.sequence = sequence;
    }

    /// Makes room for `additional` more orders (a snapshot's, at start), so that the slab is
    /// allocated once rather than grown by doubling.
    pub fn reserve(&mut self, additional: usize) {
        self.nodes.reserve(additional);
    }

    /// The key the next inserted order will get.
    pub fn vacant_key(&self) -> SlotKey {
        self.nodes.vacant_key()
    }

    /// Adds a limit order at the back of its price level; `owner_position` is its place in its
    /// account's list of resting orders. Its price must be set.
    pub fn insert(&mut self, record: OrderRecord, account_slot: AccountSlot, owner_position: u32) -> SlotKey {
        let price = record.terms.price.expect("invariant: only limit orders rest");
        let direction = record.terms.direction;
        let remaining = u128::from(record.remaining().lots());
        let key = self.nodes.insert(Node {
            record,
            account_slot,
            owner_position,
            previous: NO_SLOT,
            next: NO_SLOT,
        });
        let level = self.side_mut(direction).entry(price).or_insert(Level {
            head: NO_SLOT,
            tail: NO_SLOT,
            quantity_lots: 0,
            order_count: 0,
        });
        let old_tail = level.tail;
        level.tail = key;
        if old_tail == NO_SLOT {
            level.head = key;
        }
        level.quantity_lots += remaining;
        level.order_count += 1;
        if old_tail != NO_SLOT {
            self.nodes[old_tail].next = key;
            self.nodes[key].previous = old_tail;
        }
        self.sequence += 1;
        key
    }

    /// Takes an order out of the book and returns it.
    pub fn remove(&mut self, key: SlotKey) -> OrderRecord {
        let node = self.nodes.remove(key);
        let price = node.record.terms.price.expect("invariant: only limit orders rest");
        let direction = node.record.terms.direction;
        if node.previous != NO_SLOT {
            self.nodes[node.previous].next = node.next;
        }
        if node.next != NO_SLOT {
            self.nodes[node.next].previous = node.previous;
        }
        let side = self.side_mut(direction);
        let level = side.get_mut(&price).expect("invariant: a resting order's level exists");
        if level.head == key {
            level.head = node.next;
        }
        if level.tail == key {
            level.tail = node.previous;
        }
        level.quantity_lots -= u128::from(node.record.remaining().lots());
        level.order_count -= 1;
        if level.order_count == 0 {
            side.remove(&price);
        }
        self.sequence += 1;
        node.record
    }

    /// The resting order behind a key.
    pub fn get(&self, key: SlotKey) -> &OrderRecord {
        &self.nodes[key].record
    }

    /// The ledger slot of the account of the resting order behind a key.
    pub fn account_slot(&self, key: SlotKey) -> AccountSlot {
        self.nodes[key].account_slot
    }

    /// The order behind a key, its account's slot and its place in that account's list, or
    /// `None` when no order rests there (for audits, which must not trust a key).
    pub fn checked_get(&self, key: SlotKey) -> Option<(&OrderRecord, AccountSlot, u32)> {
        self.nodes
            .get(key)
            .map(|node| (&node.record, node.account_slot, node.owner_position))
    }

    /// The place of the order behind a key in its account's list of resting orders.
    pub fn owner_position(&self, key: SlotKey) -> u32 {
        self.nodes[key].owner_position
    }

    /// Moves the order behind a key to another place in its account's list.
    pub fn set_owner_position(&mut self, key: SlotKey, owner_position: u32) {
        self.nodes[key].owner_position = owner_position;
    }

    /// Records a fill of `quantity` against a resting order, keeping the level's total right.
    /// `update` applies the rest of the fill (cost, fee, lock) to the record.
    pub fn fill(&mut self, key: SlotKey, quantity: Quantity, update: impl FnOnce(&mut OrderRecord)) {
        let record = &mut self.nodes[key].record;
        record.filled = record
            .filled
            .checked_add(quantity)
            .expect("invariant: fills never exceed the quantity");
        assert!(record.filled <= record.terms.quantity, "invariant: overfilled order");
        update(record);
        let price = record.terms.price.expect("invariant: only limit orders rest");
        let direction = record.terms.direction;
        let level = self
            .side_mut(direction)
            .get_mut(&price)
            .expect("invariant: a resting order's level exists");
        level.quantity_lots -= u128::from(quantity.lots());
        self.sequence += 1;
    }

    /// The best (highest bid or lowest ask) price of a side.
    pub fn best_price(&self, direction: Direction) -> Option<Price> {
        match direction {
            Direction::Buy => self.bids.keys().next_back().copied(),
            Direction::Sell => self.asks.keys().next().copied(),
        }
    }

    /// The best level of a side (highest bid or lowest ask), without allocating.
    pub fn best_level(&self, direction: Direction) -> Option<LevelView> {
        let level = match direction {
            Direction::Buy => self.bids.iter().next_back(),
            Direction::Sell => self.asks.iter().next(),
        };
        level.map(|(price, level)| LevelView {
            price: *price,
            quantity: level.quantity_lots,
            orders: level.order_count,
        })
    }

    /// The level of a side at `price`, if orders rest there, without allocating.
    pub fn level_at(&self, direction: Direction, price: Price) -> Option<LevelView> {
        let side = match direction {
            Direction::Buy => &self.bids,
            Direction::Sell => &self.asks,
        };
        side.get(&price).map(|level| LevelView {
            price,
            quantity: level.quantity_lots,
            orders: level.order_count,
        })
    }

    /// Visits the resting orders of a side in priority order (best price first, then oldest
    /// first), until `visit` returns `false`.
    pub fn visit_in_priority<'book>(
        &'book self,
        direction: Direction,
        mut visit: impl FnMut(SlotKey, &'book OrderRecord, AccountSlot) -> bool,
    ) {
        let mut visit_level = |level: &'book Level| -> bool {
            let mut key = level.head;
            while key != NO_SLOT {
                let node = &self.nodes[key];
                if !visit(key, &node.record, node.account_slot) {
                    return false;
                }
                key = node.next;
            }
            true
        };
        match direction {
            Direction::Buy => {
                for level in self.bids.values().rev() {
                    if !visit_level(level) {
                        return;
                    }
                }
            }
            Direction::Sell => {
                for level in self.asks.values() {
                    if !visit_level(level) {
                        return;
                    }
                }
            }
        }
    }

    /// The aggregated levels of a side, best first, at most `depth` of them.
    pub fn levels(&self, direction: Direction, depth: usize) -> Vec<LevelView> {
        let view = |(price, level): (&Price, &Level)| LevelView {
            price: *price,
            quantity: level.quantity_lots,
            orders: level.order_count,
        };
        match direction {
            Direction::Buy => self.bids.iter().rev().take(depth).map(view).collect(),
            Direction::Sell => self.asks.iter().take(depth).map(view).collect(),
        }
    }

    /// Whether the best bid is at or above the best ask, which must never be true between
    /// commands.
    pub fn is_crossed(&self) -> bool {
        match (self.best_price(Direction::Buy), self.best_price(Direction::Sell)) {
            (Some(bid), Some(ask)) => bid >= ask,
            _ => false,
        }
    }

    /// Every resting order, in priority order per side (bids first).
    pub fn orders_in_priority(&self) -> Vec<&OrderRecord> {
        let mut orders = Vec::with_capacity(self.nodes.len());
        for direction in [Direction::Buy, Direction::Sell] {
            self.visit_in_priority(direction, |_, record, _| {
                orders.push(record);
                true
            });
        }
        orders
    }

    /// Checks the book's own structure: level totals and counts match their orders, every
    /// order sits on the side and level its terms say, time priority holds inside each level.
    pub fn check_structure(&self) -> Result<(), String> {
        let mut seen = 0usize;
        for (direction, side) in [(Direction::Buy, &self.bids), (Direction::Sell, &self.asks)] {
            for (price, level) in side {
                let mut key = level.head;
                let mut previous = NO_SLOT;
                let mut quantity = 0u128;
                let mut count = 0u32;
                let mut last_sequence = None;
                while key != NO_SLOT {
                    let node = &self.nodes[key];
                    if node.previous != previous {
                        return Err(format!("broken back link at {price:?}"));
                    }
                    if node.record.terms.price != Some(*price) || node.record.terms.direction != direction {
                        return Err(format!("order on the wrong level at {price:?}"));
                    }
                    // A fired trigger order keeps the sequence it was placed with and rests
                    // behind the orders placed since: time priority is checked among the
                    // others.
                    if node.record.terms.conditions().trigger.is_none() {
                        if last_sequence.is_some_and(|last| last >= node.record.sequence) {
                            return Err(format!("time priority broken at {price:?}"));
                        }
                        last_sequence = Some(node.record.sequence);
                    }
                    quantity += u128::from(node.record.remaining().lots());
                    count += 1;
                    previous = key;
                    key = node.next;
                }
                if level.tail != previous || quantity != level.quantity_lots || count != level.order_count || count == 0
                {
                    return Err(format!("level totals wrong at {price:?}"));
                }
                seen += count as usize;
            }
        }
        if seen != self.nodes.len() {
            return Err("orders in the slab that no level reaches".to_string());
        }
        if self.is_crossed() {
            return Err("book crossed".to_string());
        }
        Ok(())
    }

    fn side_mut(&mut self, direction: Direction) -> &mut BTreeMap<Price, Level> {
        match direction {
            Direction::Buy => &mut self.bids,
            Direction::Sell => &mut self.asks,
        }
    }
}
