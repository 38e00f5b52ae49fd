//! Each account's open orders, by ledger slot: where those resting in a book are and the ids of
//! those waiting for their trigger, apart (so that trading, which adds and removes resting
//! orders, never walks the waiting ones).
//!
//! A resting order is listed by its place in a book (its pair and its key there), and the book
//! keeps, in the order's node, the order's place in this list: taking one out (a cancel, a fill)
//! is a `swap_remove` and one write to the node of the order moved into the gap, with no search
//! and no map, whether a market maker holds ten orders or ten thousand. Waiting orders are few
//! and leave by id (a firing, a cancel): a short list is searched, and once an account holds
//! [`INDEX_FROM_ORDERS`] of them every one's place is kept in a map, dropped again below
//! [`UNINDEX_BELOW_ORDERS`].
//!
//! Plain storage: which orders are open is the engine's to decide, and the engine writes the
//! places this returns into the book; this keeps the lists and the waiting positions in
//! agreement, and nothing else.

use rustc_hash::FxHashMap;

use crate::book::SlotKey;
use crate::ledger::AccountSlot;
use crate::money::{OrderId, PairIndex};

/// How many waiting orders an account holds when their places start being kept.
pub const INDEX_FROM_ORDERS: usize = 64;
/// Below how many waiting orders an indexed account's places are dropped again.
pub const UNINDEX_BELOW_ORDERS: usize = 16;

/// Where a resting order is: its pair and its key in that pair's book.
pub(super) type RestingAt = (PairIndex, SlotKey);

/// One account's open orders: resting and waiting, each list in the order its entries were
/// last moved (an order taken out is replaced by the list's last, as `swap_remove` does).
#[derive(Clone, Debug, Default)]
pub(super) struct OpenOrderIds {
    pub(super) resting: Vec<RestingAt>,
    pub(super) waiting: Vec<OrderId>,
    /// Whether every waiting order's place is in [`OpenOrderIndex::waiting_positions`].
    waiting_indexed: bool,
}

impl OpenOrderIds {
    pub(super) fn len(&self) -> usize {
        self.resting.len() + self.waiting.len()
    }

    pub(super) fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Every account's open orders, with the places of the waiting orders of accounts that hold
/// many.
#[derive(Clone, Debug, Default)]
pub(super) struct OpenOrderIndex {
    by_slot: Vec<OpenOrderIds>,
    /// The index of each waiting order of an indexed account in its waiting list.
    waiting_positions: FxHashMap<OrderId, u32>,
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

    /// The lists of the account at `slot`, made when it has none yet. An associated function of
    /// the lists alone, so that the waiting positions can be written beside it.
    fn entry(by_slot: &mut Vec<OpenOrderIds>, slot: AccountSlot) -> &mut OpenOrderIds {
        let index = slot.index();
        if by_slot.len() <= index {
            by_slot.resize_with(index + 1, Default::default);
        }
        &mut by_slot[index]
    }

    /// Adds a resting order at the end of its account's list; returns its place there, which
    /// the book keeps with the order.
    pub(super) fn insert_resting(&mut self, slot: AccountSlot, at: RestingAt) -> u32 {
        let resting = &mut Self::entry(&mut self.by_slot, slot).resting;
        let position = position_u32(resting.len());
        resting.push(at);
        position
    }

    /// Takes the resting order `at`, listed at `position`, out of its account's list; returns
    /// the order moved into its place (whose place in the book must become `position`), if any.
    pub(super) fn remove_resting(&mut self, slot: AccountSlot, position: u32, at: RestingAt) -> Option<RestingAt> {
        let resting = &mut self
            .by_slot
            .get_mut(slot.index())
            .expect("invariant: a resting order's account has a list")
            .resting;
        let position = position as usize;
        assert!(
            resting.get(position) == Some(&at),
            "invariant: a resting order is listed at the place its book keeps"
        );
        resting.swap_remove(position);
        resting.get(position).copied()
    }

    /// Adds a waiting order at the end of its account's list.
    pub(super) fn insert_waiting(&mut self, slot: AccountSlot, order_id: OrderId) {
        let orders = Self::entry(&mut self.by_slot, slot);
        let position = position_u32(orders.waiting.len());
        orders.waiting.push(order_id);
        if orders.waiting_indexed {
            let previous = self.waiting_positions.insert(order_id, position);
            assert!(previous.is_none(), "invariant: an order is listed open once");
        } else if orders.waiting.len() >= INDEX_FROM_ORDERS {
            // Many orders now: keep every one's place from here on.
            orders.waiting_indexed = true;
            for (position, order_id) in orders.waiting.iter().enumerate() {
                let previous = self.waiting_positions.insert(*order_id, position_u32(position));
                assert!(previous.is_none(), "invariant: an order is listed open once");
            }
        }
    }

    /// Takes a waiting order out of its account's list (the list's last takes its place);
    /// whether it was there.
    pub(super) fn remove_waiting(&mut self, slot: AccountSlot, order_id: &OrderId) -> bool {
        let Some(orders) = self.by_slot.get_mut(slot.index()) else {
            return false;
        };
        let indexed = orders.waiting_indexed;
        let list = &mut orders.waiting;
        let position = if indexed {
            match self.waiting_positions.get(order_id) {
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
            self.waiting_positions.remove(order_id);
            if let Some(moved) = list.get(position) {
                *self
                    .waiting_positions
                    .get_mut(moved)
                    .expect("invariant: every listed order of an indexed account has a position") =
                    position_u32(position);
            }
            if list.len() < UNINDEX_BELOW_ORDERS {
                orders.waiting_indexed = false;
                for order_id in list.iter() {
                    self.waiting_positions.remove(order_id);
                }
            }
        }
        true
    }

    /// Whether every listed waiting order of an indexed account has its place in its list as
    /// its position, and no other order has one. (The resting orders' places are checked
    /// against the books by the engine's audit.)
    pub(super) fn check_waiting_positions(&self) -> Result<(), String> {
        let mut listed = 0usize;
        for orders in self.by_slot.iter().filter(|orders| orders.waiting_indexed) {
            for (position, order_id) in orders.waiting.iter().enumerate() {
                listed += 1;
                if self.waiting_positions.get(order_id).map(|at| *at as usize) != Some(position) {
                    return Err(format!("waiting order {order_id} is not indexed at its place"));
                }
            }
        }
        if listed != self.waiting_positions.len() {
            return Err("the waiting-order positions hold orders no list does".to_string());
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

    /// An account's waiting orders grow past the line and shrink below it again, taken out in a
    /// scattered order: the list always holds exactly the waiting orders, the places always
    /// agree, and the index is kept only while the account holds many.
    #[test]
    fn waiting_places_are_kept_past_the_line_and_dropped_below_it() {
        let slot = AccountSlot::from_index(3);
        let mut index = OpenOrderIndex::default();
        let mut open: Vec<u64> = Vec::new();
        for number in 0..200u64 {
            index.insert_waiting(slot, id(number));
            open.push(number);
            index.check_waiting_positions().unwrap();
        }
        assert!(index.get(3).unwrap().waiting_indexed);
        assert_eq!(index.waiting_positions.len(), 200);
        // Out of place, by a stride through what is open.
        let mut cursor = 0usize;
        while !open.is_empty() {
            cursor = (cursor + 37) % open.len();
            let number = open.swap_remove(cursor);
            assert!(index.remove_waiting(slot, &id(number)));
            assert!(!index.remove_waiting(slot, &id(number)), "taken out once");
            index.check_waiting_positions().unwrap();
            let orders = index.get(3).unwrap();
            assert_eq!(orders.len(), open.len());
            let mut listed = orders.waiting.clone();
            let mut expected: Vec<OrderId> = open.iter().map(|number| id(*number)).collect();
            listed.sort();
            expected.sort();
            assert_eq!(listed, expected);
            if open.len() < UNINDEX_BELOW_ORDERS {
                assert!(!orders.waiting_indexed && index.waiting_positions.is_empty());
            }
        }
        // Back over the line: indexed again.
        for number in 1_000..1_000 + INDEX_FROM_ORDERS as u64 {
            index.insert_waiting(slot, id(number));
        }
        assert!(index.get(3).unwrap().waiting_indexed);
        index.check_waiting_positions().unwrap();
    }

    /// Resting orders taken out from anywhere in the list: each removal names the order moved
    /// into the gap, and a place that does not hold the order named is refused loudly.
    #[test]
    fn a_resting_order_taken_out_names_the_one_moved_into_its_place() {
        let slot = AccountSlot::from_index(0);
        let mut index = OpenOrderIndex::default();
        let at = |key: usize| (PairIndex(0), key);
        // The book's side of the bargain: each order's place, as the engine keeps it there.
        let mut places: Vec<Option<u32>> = Vec::new();
        for key in 0..10 {
            places.push(Some(index.insert_resting(slot, at(key))));
        }
        for key in [3usize, 9, 0, 5] {
            let position = places[key].take().expect("listed");
            if let Some((_, moved)) = index.remove_resting(slot, position, at(key)) {
                places[moved] = Some(position);
            }
            let resting = &index.get(0).unwrap().resting;
            for (position, (_, key)) in resting.iter().enumerate() {
                assert_eq!(places[*key], Some(position as u32));
            }
        }
        assert_eq!(index.get(0).unwrap().len(), 6);
        let wrong = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            let mut index = index.clone();
            index.remove_resting(slot, 0, at(42))
        }));
        assert!(
            wrong.is_err(),
            "a place that holds another order is an invariant broken"
        );
    }
}
