//! How an order enters and leaves the open orders: its book and its account's list of resting
//! orders ([`Engine::rest_in_book`], [`Engine::take_from_book`]), the counts the open-order
//! limits read, and what is kept beside an open order (its subaccount owner's count, its client
//! order id, its expiry, its group) as it opens and closes. When an order opens or closes is
//! matching's and the conditions' to decide (`matching.rs`, `conditions.rs`); this keeps the
//! places in agreement.

use super::matching::{paid_asset, required_lock};
use super::Engine;
use crate::book::SlotKey;
use crate::ledger::AccountSlot;
use crate::money::Address;
use crate::order::{OrderRecord, OrderStatus};
use crate::pair::PairSpec;

impl Engine {
    /// The open orders of the account at `slot`: its resting orders, read from their books
    /// where its list places them, then its waiting ones. In the lists' order, which depends on
    /// how they were built: a caller that acts on several sorts them.
    pub(super) fn open_order_records_of(&self, slot: AccountSlot) -> impl Iterator<Item = &OrderRecord> + '_ {
        let orders = self.open_orders.get(slot.index());
        let resting = orders
            .into_iter()
            .flat_map(|orders| orders.resting.iter())
            .map(|(pair, key)| self.pairs[usize::from(pair.0)].book.get(*key));
        let waiting = orders
            .into_iter()
            .flat_map(|orders| orders.waiting.iter())
            .map(|order_id| self.open_order(order_id).expect("invariant: a listed order is open"));
        resting.chain(waiting)
    }

    pub(super) fn open_orders_of(&self, slot: AccountSlot) -> u32 {
        self.open_orders.get(slot.index()).map_or(0, |orders| {
            u32::try_from(orders.len()).expect("open orders per account fit u32")
        })
    }

    /// Whether the owner of `account` (a subaccount's, or the account itself) holds its limit of
    /// open orders over itself and all its subaccounts, `leaving` of them about to close.
    pub(super) fn owner_at_open_order_limit(&self, account: &Address, leaving: u32) -> bool {
        if self.subaccounts.count() == 0 {
            // No subaccount on the chain: every account's own limit is the lower.
            return false;
        }
        let owner = self.subaccounts.leaf_account(account);
        let in_subaccounts = self.subaccounts.open_orders_of_subaccounts(&owner);
        if in_subaccounts == 0 && owner == *account {
            // No subaccount of its trades: the account's own limit is the lower.
            return false;
        }
        let limit = self
            .limits
            .max_open_orders_per_account
            .saturating_mul(crate::subaccounts::OWNER_OPEN_ORDERS_MULTIPLE);
        let total = self.open_order_count(&owner).saturating_add(in_subaccounts);
        total.saturating_sub(leaving) >= limit
    }

    /// Puts an order in its pair's book, in its account's list of resting orders (the book
    /// keeps its place there) and in the index of resting orders by id.
    pub(super) fn rest_in_book(&mut self, record: OrderRecord, slot: AccountSlot) {
        let pair = record.terms.pair;
        let order_id = record.terms.order_id;
        let pair_position = usize::from(pair.0);
        let key = self.pairs[pair_position].book.vacant_key();
        let owner_position = self.open_orders.insert_resting(slot, (pair, key));
        let inserted = self.pairs[pair_position].book.insert(record, slot, owner_position);
        assert_eq!(inserted, key, "invariant: a book inserts at its vacant key");
        self.order_locations.insert(order_id, (pair, key));
    }

    /// Takes the order at `key` out of the book of the pair at `pair_position`, out of its
    /// account's list of resting orders and out of the index by id; returns it and its account.
    pub(super) fn take_from_book(&mut self, pair_position: usize, key: SlotKey) -> (OrderRecord, AccountSlot) {
        let book = &mut self.pairs[pair_position].book;
        let slot = book.account_slot(key);
        let owner_position = book.owner_position(key);
        let record = book.remove(key);
        let at = (record.terms.pair, key);
        if let Some((moved_pair, moved_key)) = self.open_orders.remove_resting(slot, owner_position, at) {
            self.pairs[usize::from(moved_pair.0)]
                .book
                .set_owner_position(moved_key, owner_position);
        }
        self.order_locations.remove(&record.terms.order_id);
        (record, slot)
    }

    /// Counts an order in: its subaccount's owner's count, its account's list of waiting orders
    /// (a resting order is listed by [`Engine::rest_in_book`]), its client order id, its expiry
    /// and its group.
    pub(super) fn register_open_order(&mut self, record: &OrderRecord, slot: AccountSlot) {
        self.subaccounts.order_opened(&record.terms.account);
        if record.status == OrderStatus::Untriggered {
            self.open_orders.insert_waiting(slot, record.terms.order_id);
        }
        if let Some(client_order_id) = &record.terms.client_order_id {
            self.client_order_ids
                .entry(record.terms.account)
                .or_default()
                .insert(client_order_id.clone(), record.terms.order_id);
        }
        let conditions = record.terms.conditions();
        if let Some(expires_at_ms) = conditions.expires_at_ms {
            self.expiries.insert((expires_at_ms, record.terms.order_id));
        }
        if let Some(group) = &conditions.oco_group {
            // A fired trigger order is no longer its group's: its partner was cancelled.
            if record.status == OrderStatus::Untriggered || conditions.trigger.is_none() {
                let members = self
                    .oco_groups
                    .entry((record.terms.account, group.clone()))
                    .or_default();
                members.push(record.terms.order_id);
                assert!(members.len() <= 2, "invariant: a group holds at most two open orders");
            }
        }
    }

    /// An order left the open orders (closed, or fired out of its trigger book): out of its
    /// account's list, the client order ids, the expiries and its group; a partner that stays
    /// takes back its whole lock (what this order's lock covered was released with it).
    /// `waiting`: it left the trigger book (else a book).
    pub(super) fn forget_open_order(
        &mut self,
        spec: &PairSpec,
        record: &OrderRecord,
        slot: AccountSlot,
        waiting: bool,
    ) {
        let order_id = record.terms.order_id;
        if waiting {
            let listed = self.open_orders.remove_waiting(slot, &order_id);
            assert!(listed, "invariant: a waiting order is in its account's open orders");
        }
        self.subaccounts.order_closed(&record.terms.account);
        if let Some(client_order_id) = &record.terms.client_order_id {
            let account = record.terms.account;
            if let Some(ids) = self.client_order_ids.get_mut(&account) {
                ids.remove(client_order_id);
                if ids.is_empty() {
                    self.client_order_ids.remove(&account);
                }
            }
        }
        if let Some(expires_at_ms) = record.terms.conditions().expires_at_ms {
            self.expiries.remove(&(expires_at_ms, order_id));
        }
        let Some(group) = record.terms.conditions().oco_group.clone() else {
            return;
        };
        let group = (record.terms.account, group);
        let Some(members) = self.oco_groups.get_mut(&group) else {
            return;
        };
        let Some(position) = members.iter().position(|member| *member == order_id) else {
            return;
        };
        members.remove(position);
        let Some(partner) = members.first().copied() else {
            self.oco_groups.remove(&group);
            return;
        };
        let pair_position = usize::from(record.terms.pair.0);
        let Some(waiting) = self.pairs[pair_position].triggers.get(&partner) else {
            return;
        };
        let whole = required_lock(spec, waiting);
        let more = whole
            .checked_sub(waiting.locked)
            .expect("invariant: a share is at most the whole lock");
        let paid = paid_asset(spec, waiting.terms.direction);
        self.ledger
            .lock(slot, paid, more)
            .expect("invariant: the lock a partner gave up covers the other's whole lock");
        self.pairs[pair_position]
            .triggers
            .get_mut(&partner)
            .expect("checked above")
            .locked = whole;
    }
}
