//! The untriggered orders of one pair: trigger orders waiting for a trade to meet their trigger,
//! held apart from the book (they are not liquidity) and indexed by trigger price so that the
//! orders a trade meets are found without a scan.
//!
//! Plain storage: which orders fire, in which order, and what firing does (the order enters the
//! book as a taker) is the engine's ([`crate::engine`]). The order in which one matching's met
//! triggers are handed out is fixed here, and documented in `docs/conditional-orders.md`.
//!
//! Under [`crate::configuration::RULE_MET_TRIGGERS_QUEUED`] a matching's met triggers are not
//! taken out all at once: the matching is remembered as a [`MetRange`] and its triggers are taken
//! a bounded number at a time ([`TriggerBook::take_met_within`]), so that no command does work
//! proportional to the number of triggers a price move meets.

use std::cmp::Reverse;
use std::collections::BTreeSet;
use std::ops::Bound;

use rustc_hash::FxHashMap;

use crate::ledger::AccountSlot;
use crate::money::{OrderId, Price};
use crate::order::{OrderRecord, TriggerCondition};

/// One pair's untriggered orders.
#[derive(Clone, Debug, Default)]
pub struct TriggerBook {
    /// Every untriggered order with its account's ledger slot.
    orders: FxHashMap<OrderId, (OrderRecord, AccountSlot)>,
    /// `above` triggers, lowest price first, then oldest.
    above: BTreeSet<(Price, u64, OrderId)>,
    /// `below` triggers, highest price first, then oldest.
    below: BTreeSet<(Reverse<Price>, u64, OrderId)>,
}

/// An untriggered order's place in the price index of its trigger's condition.
#[derive(Clone, Copy)]
enum IndexEntry {
    Above((Price, u64, OrderId)),
    Below((Reverse<Price>, u64, OrderId)),
}

impl IndexEntry {
    fn of(record: &OrderRecord) -> IndexEntry {
        let trigger = record
            .terms
            .conditions()
            .trigger
            .expect("invariant: an untriggered order has a trigger");
        let order_id = record.terms.order_id;
        match trigger.condition {
            TriggerCondition::Above => IndexEntry::Above((trigger.price, record.sequence, order_id)),
            TriggerCondition::Below => IndexEntry::Below((Reverse(trigger.price), record.sequence, order_id)),
        }
    }
}

/// A matching whose met triggers are not all taken out yet (under
/// [`crate::configuration::RULE_MET_TRIGGERS_QUEUED`]): the prices it printed, the orders it can
/// meet (those older than it), and how far its walk over the two price indexes has come.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct MetRange {
    /// The matching's first trade's price.
    pub first_price: Price,
    /// Its last trade's price.
    pub last_price: Price,
    /// The sequence the next order got when the matching printed: an order at or after it was
    /// placed (or amended) later, and this matching did not meet it.
    pub sequence_mark: u64,
    /// Whether the walk is on the second side (the one the price moved towards).
    pub on_second_side: bool,
    /// The last entry the walk examined on its side: `(trigger price, sequence, order)`; `None`
    /// before the side's first.
    pub cursor: Option<(Price, u64, OrderId)>,
}

impl MetRange {
    /// A matching that printed from `first_price` to `last_price` when the next order's sequence
    /// was `sequence_mark`, not walked yet.
    pub fn new(first_price: Price, last_price: Price, sequence_mark: u64) -> MetRange {
        MetRange {
            first_price,
            last_price,
            sequence_mark,
            on_second_side: false,
            cursor: None,
        }
    }

    /// Whether the walk's side is the `above` index: the price left first the side it moved
    /// away from (a rise meets `below` triggers at its first trade), then walks the other.
    fn walks_above(&self) -> bool {
        let rising = self.last_price >= self.first_price;
        rising == self.on_second_side
    }
}

/// What one bounded walk of a [`MetRange`] took.
#[derive(Debug, Default)]
pub struct MetTaken {
    /// The met orders taken out of the price indexes, in the order they fire.
    pub orders: Vec<OrderId>,
    /// How many index entries the walk examined (taken, or placed after the matching).
    pub examined: usize,
    /// Whether the range is walked to its end.
    pub finished: bool,
}

impl TriggerBook {
    /// Adds an untriggered order (its terms carry a trigger).
    pub fn insert(&mut self, record: OrderRecord, slot: AccountSlot) {
        self.index(IndexEntry::of(&record));
        let previous = self.orders.insert(record.terms.order_id, (record, slot));
        assert!(previous.is_none(), "invariant: an order waits once");
    }

    /// An untriggered order.
    pub fn get(&self, order_id: &OrderId) -> Option<&OrderRecord> {
        self.orders.get(order_id).map(|(record, _)| record)
    }

    /// An untriggered order, to change its lock (a one-cancels-other group's share).
    pub(crate) fn get_mut(&mut self, order_id: &OrderId) -> Option<&mut OrderRecord> {
        self.orders.get_mut(order_id).map(|(record, _)| record)
    }

    /// The ledger slot of an untriggered order's account.
    pub fn slot(&self, order_id: &OrderId) -> Option<AccountSlot> {
        self.orders.get(order_id).map(|(_, slot)| *slot)
    }

    /// Takes an order out (to fire it or cancel it), due or not.
    pub fn remove(&mut self, order_id: &OrderId) -> Option<(OrderRecord, AccountSlot)> {
        let (record, slot) = self.orders.remove(order_id)?;
        match IndexEntry::of(&record) {
            IndexEntry::Above(entry) => self.above.remove(&entry),
            IndexEntry::Below(entry) => self.below.remove(&entry),
        };
        Some((record, slot))
    }

    /// Takes out of the price indexes the orders that a matching that printed trades from
    /// `first_price` to `last_price` meets, and returns them in the order they fire: the
    /// triggers on the side the price left first (met by the first trade), then those on the side
    /// it moved towards in the order its prices reached them; within one trigger price, the oldest
    /// first. They stay in the book, due: firing takes each out ([`TriggerBook::remove`]), and
    /// one not fired goes back with [`TriggerBook::put_back`] before the command ends. Taken out
    /// once, an order is never met twice in a cascade.
    pub fn take_met(&mut self, first_price: Price, last_price: Price) -> Vec<OrderId> {
        let (low, high) = (first_price.min(last_price), first_price.max(last_price));
        let mut above = Vec::new();
        while let Some(entry) = self.above.first().copied().filter(|(price, _, _)| *price <= high) {
            self.above.remove(&entry);
            above.push(entry.2);
        }
        let mut below = Vec::new();
        while let Some(entry) = self
            .below
            .first()
            .copied()
            .filter(|(Reverse(price), _, _)| *price >= low)
        {
            self.below.remove(&entry);
            below.push(entry.2);
        }
        if last_price >= first_price {
            below.extend(above);
            below
        } else {
            above.extend(below);
            above
        }
    }

    /// Takes out of the price indexes, in the order [`TriggerBook::take_met`] gives, the next
    /// orders `range` met, examining at most `budget` entries; moves the range's cursor on.
    /// Entries placed after the matching (`sequence_mark` or later) are examined and passed.
    pub fn take_met_within(&mut self, range: &mut MetRange, budget: usize) -> MetTaken {
        let (low, high) = (
            range.first_price.min(range.last_price),
            range.first_price.max(range.last_price),
        );
        let mut taken = MetTaken::default();
        while taken.examined < budget {
            let next = if range.walks_above() {
                let start = range.cursor.map_or(Bound::Unbounded, Bound::Excluded);
                self.above
                    .range((start, Bound::Unbounded))
                    .next()
                    .copied()
                    .filter(|(price, _, _)| *price <= high)
            } else {
                let start = range.cursor.map_or(Bound::Unbounded, |(price, sequence, order_id)| {
                    Bound::Excluded((Reverse(price), sequence, order_id))
                });
                self.below
                    .range((start, Bound::Unbounded))
                    .next()
                    .copied()
                    .filter(|(Reverse(price), _, _)| *price >= low)
                    .map(|(Reverse(price), sequence, order_id)| (price, sequence, order_id))
            };
            match next {
                Some((price, sequence, order_id)) => {
                    taken.examined += 1;
                    range.cursor = Some((price, sequence, order_id));
                    if sequence < range.sequence_mark {
                        if range.walks_above() {
                            self.above.remove(&(price, sequence, order_id));
                        } else {
                            self.below.remove(&(Reverse(price), sequence, order_id));
                        }
                        taken.orders.push(order_id);
                    }
                }
                None if range.on_second_side => {
                    taken.finished = true;
                    break;
                }
                None => {
                    range.on_second_side = true;
                    range.cursor = None;
                }
            }
        }
        taken
    }

    /// Puts a due order that did not fire back into its price index.
    pub fn put_back(&mut self, order_id: &OrderId) {
        if let Some((record, _)) = self.orders.get(order_id) {
            self.index(IndexEntry::of(record));
        }
    }

    /// Puts an entry into its price index.
    fn index(&mut self, entry: IndexEntry) {
        match entry {
            IndexEntry::Above(entry) => self.above.insert(entry),
            IndexEntry::Below(entry) => self.below.insert(entry),
        };
    }

    /// Every untriggered order, oldest first: what a snapshot and the state hash list.
    pub fn orders_by_sequence(&self) -> Vec<&OrderRecord> {
        let mut orders: Vec<&OrderRecord> = self.orders.values().map(|(record, _)| record).collect();
        orders.sort_unstable_by_key(|record| record.sequence);
        orders
    }

    /// How many orders wait.
    pub fn len(&self) -> usize {
        self.orders.len()
    }

    /// Whether none waits.
    pub fn is_empty(&self) -> bool {
        self.orders.is_empty()
    }

    /// Whether the indexes agree with the orders.
    pub fn check_structure(&self) -> Result<(), String> {
        if self.above.len() + self.below.len() != self.orders.len() {
            return Err("the trigger indexes disagree with the untriggered orders".into());
        }
        Ok(())
    }
}
