//! One pair's limit order book: resting orders in price-time priority.
//!
//! Orders live in a slab and each price level in another; a level is a FIFO list threaded
//! through the orders' slab, and every order knows its level. The levels of each side are
//! ordered by a `BTreeMap` from price to level, which is searched only when a level is opened
//! (an order rests at a price where none rests) or closed (its last order leaves): a fill or a
//! cancel that leaves orders at the price goes from the order to its level directly. Each
//! side's best level is kept, so the best price is read without a search. The book does not
//! know balances, fees or matching rules: [`crate::engine`] does.

use std::collections::BTreeMap;

use slab::Slab;

use crate::ledger::AccountSlot;
use crate::money::{Price, Quantity};
use crate::order::{Direction, OrderRecord};

/// A handle to a resting order inside its book.
pub type SlotKey = usize;

const NO_SLOT: SlotKey = usize::MAX;

/// A handle to a price level inside its book's slab of levels.
type LevelKey = u32;

const NO_LEVEL: LevelKey = LevelKey::MAX;

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
    price: Price,
    head: SlotKey,
    tail: SlotKey,
    quantity_lots: u128,
    order_count: u32,
}

impl Level {
    fn view(&self) -> LevelView {
        LevelView {
            price: self.price,
            quantity: self.quantity_lots,
            orders: self.order_count,
        }
    }
}

#[derive(Clone, Debug)]
struct Node {
    record: OrderRecord,
    account_slot: AccountSlot,
    /// The order's place in its account's list of resting orders, which the engine keeps here
    /// so that taking the order out of that list needs no search (`engine::open_orders`).
    owner_position: u32,
    /// The order's price level, so that a fill or a cancel needs no search by price.
    level: LevelKey,
    previous: SlotKey,
    next: SlotKey,
}

/// One side's levels in price order, and its best level (`NO_LEVEL` when the side is empty).
#[derive(Clone, Debug)]
struct Side {
    by_price: BTreeMap<Price, LevelKey>,
    best: LevelKey,
}

impl Default for Side {
    fn default() -> Side {
        Side {
            by_price: BTreeMap::new(),
            best: NO_LEVEL,
        }
    }
}

/// The resting orders of one pair.
#[derive(Clone, Debug, Default)]
pub struct OrderBook {
    nodes: Slab<Node>,
    levels: Slab<Level>,
    bids: Side,
    asks: Side,
    sequence: u64,
}

/// Whether `price` is better than `than` for a resting order of `direction`: a higher bid, a
/// lower ask.
fn is_better(direction: Direction, price: Price, than: Price) -> bool {
    match direction {
        Direction::Buy => price > than,
        Direction::Sell => price < than,
    }
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
        let level_key = self.open_level(direction, price);
        let level = &mut self.levels[level_key as usize];
        let old_tail = level.tail;
        let key = self.nodes.insert(Node {
            record,
            account_slot,
            owner_position,
            level: level_key,
            previous: old_tail,
            next: NO_SLOT,
        });
        level.tail = key;
        if old_tail == NO_SLOT {
            level.head = key;
        }
        level.quantity_lots += remaining;
        level.order_count += 1;
        if old_tail != NO_SLOT {
            self.nodes[old_tail].next = key;
        }
        self.sequence += 1;
        key
    }

    /// Takes an order out of the book and returns it.
    pub fn remove(&mut self, key: SlotKey) -> OrderRecord {
        let node = self.nodes.remove(key);
        if node.previous != NO_SLOT {
            self.nodes[node.previous].next = node.next;
        }
        if node.next != NO_SLOT {
            self.nodes[node.next].previous = node.previous;
        }
        let level = &mut self.levels[node.level as usize];
        if level.head == key {
            level.head = node.next;
        }
        if level.tail == key {
            level.tail = node.previous;
        }
        level.quantity_lots -= u128::from(node.record.remaining().lots());
        level.order_count -= 1;
        if level.order_count == 0 {
            self.close_level(node.record.terms.direction, node.level);
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
        let node = &mut self.nodes[key];
        let record = &mut node.record;
        record.filled = record
            .filled
            .checked_add(quantity)
            .expect("invariant: fills never exceed the quantity");
        assert!(record.filled <= record.terms.quantity, "invariant: overfilled order");
        update(record);
        self.levels[node.level as usize].quantity_lots -= u128::from(quantity.lots());
        self.sequence += 1;
    }

    /// The best (highest bid or lowest ask) price of a side.
    pub fn best_price(&self, direction: Direction) -> Option<Price> {
        let best = self.side(direction).best;
        (best != NO_LEVEL).then(|| self.levels[best as usize].price)
    }

    /// The best level of a side (highest bid or lowest ask), without allocating.
    pub fn best_level(&self, direction: Direction) -> Option<LevelView> {
        let best = self.side(direction).best;
        (best != NO_LEVEL).then(|| self.levels[best as usize].view())
    }

    /// The level of a side at `price`, if orders rest there, without allocating.
    pub fn level_at(&self, direction: Direction, price: Price) -> Option<LevelView> {
        self.side(direction)
            .by_price
            .get(&price)
            .map(|level| self.levels[*level as usize].view())
    }

    /// Visits the resting orders of a side in priority order (best price first, then oldest
    /// first), until `visit` returns `false`.
    pub fn visit_in_priority<'book>(
        &'book self,
        direction: Direction,
        mut visit: impl FnMut(SlotKey, &'book OrderRecord, AccountSlot) -> bool,
    ) {
        let mut visit_level = |level: LevelKey| -> bool {
            let mut key = self.levels[level as usize].head;
            while key != NO_SLOT {
                let node = &self.nodes[key];
                if !visit(key, &node.record, node.account_slot) {
                    return false;
                }
                key = node.next;
            }
            true
        };
        // The best level is kept: a taker that the best level fills (the common case) visits
        // no more of the side's map.
        let best = self.side(direction).best;
        if best == NO_LEVEL || !visit_level(best) {
            return;
        }
        match direction {
            Direction::Buy => {
                for level in self.bids.by_price.values().rev().skip(1) {
                    if !visit_level(*level) {
                        return;
                    }
                }
            }
            Direction::Sell => {
                for level in self.asks.by_price.values().skip(1) {
                    if !visit_level(*level) {
                        return;
                    }
                }
            }
        }
    }

    /// The aggregated levels of a side, best first, at most `depth` of them.
    pub fn levels(&self, direction: Direction, depth: usize) -> Vec<LevelView> {
        let view = |level: &LevelKey| self.levels[*level as usize].view();
        match direction {
            Direction::Buy => self.bids.by_price.values().rev().take(depth).map(view).collect(),
            Direction::Sell => self.asks.by_price.values().take(depth).map(view).collect(),
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
    /// order sits on the side and level its terms say and points at that level, time priority
    /// holds inside each level, each side's kept best level is its best, and no level is
    /// empty or unreachable.
    pub fn check_structure(&self) -> Result<(), String> {
        let mut seen = 0usize;
        let mut levels_seen = 0usize;
        for (direction, side) in [(Direction::Buy, &self.bids), (Direction::Sell, &self.asks)] {
            let best = match direction {
                Direction::Buy => side.by_price.values().next_back(),
                Direction::Sell => side.by_price.values().next(),
            };
            if best.copied().unwrap_or(NO_LEVEL) != side.best {
                return Err(format!("the kept best level of the {direction:?} side is not its best"));
            }
            for (price, level_key) in &side.by_price {
                let Some(level) = self.levels.get(*level_key as usize) else {
                    return Err(format!("a price maps to no level at {price:?}"));
                };
                if level.price != *price {
                    return Err(format!("level filed under another price at {price:?}"));
                }
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
                    if node.record.terms.price != Some(*price)
                        || node.record.terms.direction != direction
                        || node.level != *level_key
                    {
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
                levels_seen += 1;
            }
        }
        if seen != self.nodes.len() {
            return Err("orders in the slab that no level reaches".to_string());
        }
        if levels_seen != self.levels.len() {
            return Err("levels in the slab that no price reaches".to_string());
        }
        if self.is_crossed() {
            return Err("book crossed".to_string());
        }
        Ok(())
    }

    fn side(&self, direction: Direction) -> &Side {
        match direction {
            Direction::Buy => &self.bids,
            Direction::Sell => &self.asks,
        }
    }

    /// The level of `direction`'s side at `price`, opened (empty) if none rests there.
    fn open_level(&mut self, direction: Direction, price: Price) -> LevelKey {
        let side = match direction {
            Direction::Buy => &mut self.bids,
            Direction::Sell => &mut self.asks,
        };
        // The best level is where most orders rest: it is tried before the map.
        if side.best != NO_LEVEL && self.levels[side.best as usize].price == price {
            return side.best;
        }
        let levels = &mut self.levels;
        let level_key = *side.by_price.entry(price).or_insert_with(|| {
            let key = levels.insert(Level {
                price,
                head: NO_SLOT,
                tail: NO_SLOT,
                quantity_lots: 0,
                order_count: 0,
            });
            LevelKey::try_from(key).expect("invariant: fewer price levels than u32::MAX")
        });
        if side.best == NO_LEVEL || is_better(direction, price, levels[side.best as usize].price) {
            side.best = level_key;
        }
        level_key
    }

    /// Closes a level its last order left, and finds the side's next best when it was the best.
    fn close_level(&mut self, direction: Direction, level_key: LevelKey) {
        let level = self.levels.remove(level_key as usize);
        let side = match direction {
            Direction::Buy => &mut self.bids,
            Direction::Sell => &mut self.asks,
        };
        side.by_price.remove(&level.price);
        if side.best == level_key {
            let next_best = match direction {
                Direction::Buy => side.by_price.values().next_back(),
                Direction::Sell => side.by_price.values().next(),
            };
            side.best = next_best.copied().unwrap_or(NO_LEVEL);
        }
    }
}
