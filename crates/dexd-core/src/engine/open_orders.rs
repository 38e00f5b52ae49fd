//! Each account's open orders, by ledger slot: the ids of those resting in a book and of those
//! waiting for their trigger, apart (so that trading, which adds and removes resting orders,
//! never walks the waiting ones). A short list is searched (a few dozen ids, cheaper than any
//! index); once an account holds [`INDEX_FROM_ORDERS`] open orders, every order's place in its
//! list is kept, so that taking one out (a cancel, a fill, a firing) costs the same whether a
//! market maker holds a hundred or ten thousand. The index is dropped again below
//! [`UNINDEX_BELOW_ORDERS`], far enough under that an account near the line does not index and
//! drop on every order.
//!
//! Plain storage: which orders are open is the engine's to decide; this keeps the lists and
//! their positions in agreement, and nothing else.

use rustc_hash::FxHashMap;

use crate::ledger::AccountSlot;
use crate::money::OrderId;

/// How many open orders an account holds when its orders' places start being kept.
pub const INDEX_FROM_ORDERS: usize = 64;
/// Below how many open orders an indexed account's places are dropped again.
pub const UNINDEX_BELOW_ORDERS: usize = 16;

/// One account's open orders: resting and waiting, each list in the order its entries were
/// last moved (an order taken out is replaced by the list's last, as `swap_remove` does).
#[derive(Clone, Debug, Default)]
pub(super) struct OpenOrderIds {
    pub(super) resting: Vec<OrderId>,
    pub(super) waiting: Vec<OrderId>,
    /// Whether every order's place is in [`OpenOrderIndex::positions`].
    indexed: bool,
}

impl OpenOrderIds {
    pub(super) fn len(&self) -> usize {
        self.resting.len() + self.waiting.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub(super) fn iter(&self) -> impl Iterator<Item = &OrderId> {
        self.resting.iter().chain(&self.waiting)
    }

    fn list(&mut self, waiting: bool) -> &mut Vec<OrderId> {
        if waiting {
            &mut self.waiting
        } else {
            &mut self.resting
        }
    }
}

/// Every account's open orders, with the places of the orders of accounts that hold many.
#[derive(Clone, Debug, Default)]
pub(super) struct OpenOrderIndex {
    by_slot: Vec<OpenOrderIds>,
    /// The index of each open order of an indexed account in its resting or waiting list.
    positions: FxHashMap<OrderId, u32>,
}

fn position_u32(position: usize) -> u32 {
    u32::try_from(position).expect("open orders per account fit u32")
}

impl OpenOrderIndex {
    /// The open orders of the account at `slot`, if it ever had one.
    pub(super) fn get(&self, slot: usize) -> Option<&OpenOrderIds> {
        self.by_slot.get(slot)
    }

    /// Every account's lists, by slot.
    pub(super) fn iter(&self) -> impl Iterator<Item = &OpenOrderIds> {
        self.by_slot.iter()
    }

    /// Adds an open order at the end of its account's list.
    pub(super) fn insert(&mut self, slot: AccountSlot, order_id: OrderId, waiting: bool) {
        let index = slot.index();
        if self.by_slot.len() <= index {
            self.by_slot.resize_with(index + 1, Default::default);
        }
        let orders = &mut self.by_slot[index];
        let list = orders.list(waiting);
        let position = position_u32(list.len());
        list.push(order_id);
        if orders.indexed {
            let previous = self.positions.insert(order_id, position);
            assert!(previous.is_none(), "invariant: an order is listed open once");
        } else if orders.len() >= INDEX_FROM_ORDERS {
            // Many orders now: keep every one's place from here on.
            orders.indexed = true;
            for list in [&orders.resting, &orders.waiting] {
                for (position, order_id) in list.iter().enumerate() {
                    let previous = self.positions.insert(*order_id, position_u32(position));
                    assert!(previous.is_none(), "invariant: an order is listed open once");
                }
            }
        }
    }

    /// Takes an order out of its account's list (the list's last takes its place); whether it
    /// was there.
    pub(super) fn remove(&mut self, slot: AccountSlot, order_id: &OrderId, waiting: bool) -> bool {
        let Some(orders) = self.by_slot.get_mut(slot.index()) else {
            return false;
        };
        let indexed = orders.indexed;
        let list = orders.list(waiting);
        let position = if indexed {
            match self.positions.get(order_id) {
                Some(&position) if list.get(position as usize) == Some(order_id) => position as usize,
                _ => return false,
            }
        } else {
            match list.iter().position(|open_id| open_id == order_id) {
                Some(position) => position,
                None => return false,
            }
        };
        list.swap_remove(position);
        if indexed {
            self.positions.remove(order_id);
            if let Some(moved) = list.get(position) {
                *self
                    .positions
                    .get_mut(moved)
                    .expect("invariant: every listed order of an indexed account has a position") =
                    position_u32(position);
            }
            if orders.len() < UNINDEX_BELOW_ORDERS {
                orders.indexed = false;
                for list in [&orders.resting, &orders.waiting] {
                    for order_id in list {
                        self.positions.remove(order_id);
                    }
                }
            }
        }
        true
    }

    /// Whether every listed order of an indexed account has its place in its list as its
    /// position, and no other order has one.
    pub(super) fn check_positions(&self) -> Result<(), String> {
        let mut listed = 0usize;
        for orders in self.by_slot.iter().filter(|orders| orders.indexed) {
            for list in [&orders.resting, &orders.waiting] {
                for (position, order_id) in list.iter().enumerate() {
                    listed += 1;
                    if self.positions.get(order_id).map(|at| *at as usize) != Some(position) {
                        return Err(format!("open order {order_id} is not indexed at its place"));
                    }
                }
            }
        }
        if listed != self.positions.len() {
            return Err("the open-order positions hold orders no list does".to_string());
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn id(number: u64) -> OrderId {
        let mut bytes = [0u8; 32];
        bytes[24..].copy_from_slice(&number.to_be_bytes());
        OrderId::from_bytes(bytes)
    }

    /// An account's orders grow past the line and shrink below it again, taken out in a scattered
    /// order: the lists always hold exactly the open orders, the places always agree, and the
    /// index is kept only while the account holds many.
    #[test]
    fn places_are_kept_past_the_line_and_dropped_below_it() {
        let slot = AccountSlot::from_index(3);
        let mut index = OpenOrderIndex::default();
        let mut open: Vec<(u64, bool)> = Vec::new();
        for number in 0..200u64 {
            let waiting = number % 7 == 0;
            index.insert(slot, id(number), waiting);
            open.push((number, waiting));
            index.check_positions().unwrap();
        }
        assert!(index.get(3).unwrap().indexed);
        assert_eq!(index.positions.len(), 200);
        // Out of place, by a stride through what is open.
        let mut cursor = 0usize;
        while !open.is_empty() {
            cursor = (cursor + 37) % open.len();
            let (number, waiting) = open.swap_remove(cursor);
            assert!(!index.remove(slot, &id(number), !waiting), "not in the other list");
            assert!(index.remove(slot, &id(number), waiting));
            assert!(!index.remove(slot, &id(number), waiting), "taken out once");
            index.check_positions().unwrap();
            let orders = index.get(3).unwrap();
            assert_eq!(orders.len(), open.len());
            let mut listed: Vec<OrderId> = orders.iter().copied().collect();
            let mut expected: Vec<OrderId> = open.iter().map(|(number, _)| id(*number)).collect();
            listed.sort();
            expected.sort();
            assert_eq!(listed, expected);
            if open.len() < UNINDEX_BELOW_ORDERS {
                assert!(!orders.indexed && index.positions.is_empty());
            }
        }
        // Back over the line: indexed again.
        for number in 1_000..1_000 + INDEX_FROM_ORDERS as u64 {
            index.insert(slot, id(number), false);
        }
        assert!(index.get(3).unwrap().indexed);
        index.check_positions().unwrap();
    }
}
