//! Each account's open orders, by ledger slot: the ids of those resting in a book and of those
//! waiting for their trigger, apart (so that trading, which adds and removes resting orders,
//! never walks the waiting ones), with every order's place in its list so that taking one out
//! (a cancel, a fill, a firing) costs the same whether the account holds ten or ten thousand.
//!
//! Plain storage: which orders are open is the engine's to decide; this keeps the lists and
//! their positions in agreement, and nothing else.

use rustc_hash::FxHashMap;

use crate::ledger::AccountSlot;
use crate::money::OrderId;

/// One account's open orders: resting and waiting, each list in the order its entries were
/// last moved (an order taken out is replaced by the list's last, as `swap_remove` does).
#[derive(Clone, Debug, Default)]
pub(super) struct OpenOrderIds {
    pub(super) resting: Vec<OrderId>,
    pub(super) waiting: Vec<OrderId>,
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

/// Every account's open orders, with each order's position in its account's list.
#[derive(Clone, Debug, Default)]
pub(super) struct OpenOrderIndex {
    by_slot: Vec<OpenOrderIds>,
    /// Each open order's index in its account's resting or waiting list.
    positions: FxHashMap<OrderId, u32>,
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
        let list = self.by_slot[index].list(waiting);
        let position = u32::try_from(list.len()).expect("open orders per account fit u32");
        list.push(order_id);
        let previous = self.positions.insert(order_id, position);
        assert!(previous.is_none(), "invariant: an order is listed open once");
    }

    /// Takes an order out of its account's list (the list's last takes its place); whether it
    /// was there.
    pub(super) fn remove(&mut self, slot: AccountSlot, order_id: &OrderId, waiting: bool) -> bool {
        let Some(orders) = self.by_slot.get_mut(slot.index()) else {
            return false;
        };
        let list = orders.list(waiting);
        let Some(&position) = self.positions.get(order_id) else {
            return false;
        };
        let position = position as usize;
        if list.get(position) != Some(order_id) {
            return false;
        }
        self.positions.remove(order_id);
        list.swap_remove(position);
        if let Some(moved) = list.get(position) {
            let moved_position = u32::try_from(position).expect("open orders per account fit u32");
            *self
                .positions
                .get_mut(moved)
                .expect("invariant: every listed order has a position") = moved_position;
        }
        true
    }

    /// Whether every listed order's position is its place in its list, and no other is known.
    pub(super) fn check_positions(&self) -> Result<(), String> {
        let mut listed = 0usize;
        for orders in &self.by_slot {
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
