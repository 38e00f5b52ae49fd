//! The open orders of a chain's history, kept in memory by the projector. An order's row is
//! written to the history database once, when it closes (filled or cancelled), instead of at
//! placement and again at every fill or cancel: those rewrites of earlier rows, spread over the
//! table, were most of the projector's cost. Open orders, and an open order by id, are read from
//! here; closed orders from the database.
//!
//! This mirrors the order records the projector has been handed, at the projector's mark; it
//! decides nothing and is not the engine's book. It is not kept on disk: at start it is rebuilt
//! from the journal with the engine. Its size is bounded by the chain's limit on resting orders.

use std::collections::{BTreeSet, HashMap};

use dexd_core::{Address, Event, OrderId, OrderRecord, OrderStatus, PairIndex};

use super::database::StoreError;
use super::records::{Authorization, Page, PageRequest, StoredOrder};

/// The open orders of one chain, by sequence, by id and by account.
#[derive(Default)]
pub struct OpenOrders {
    /// Boxed, so that growing the map moves pointers rather than whole orders (at start, a
    /// million open orders are rebuilt into it).
    by_sequence: HashMap<u64, Box<StoredOrder>>,
    by_id: HashMap<[u8; 32], u64>,
    /// Each account's open orders by sequence; an account with none has no entry.
    by_account: HashMap<[u8; 20], BTreeSet<u64>>,
    /// The journal sequence these open orders are the state of.
    mark: u64,
}

impl OpenOrders {
    /// An open order by id.
    pub fn by_id(&self, order_id: &OrderId) -> Option<&StoredOrder> {
        self.by_id
            .get(order_id.as_bytes())
            .and_then(|sequence| self.by_sequence(*sequence))
    }

    /// An open order by its sequence.
    pub fn by_sequence(&self, sequence: u64) -> Option<&StoredOrder> {
        self.by_sequence.get(&sequence).map(|order| &**order)
    }

    /// The journal sequence these open orders are the state of.
    pub fn mark(&self) -> u64 {
        self.mark
    }

    /// Records that these open orders are now the state as of `sequence`.
    pub fn set_mark(&mut self, sequence: u64) {
        self.mark = self.mark.max(sequence);
    }

    /// An account's open orders, oldest first.
    pub fn of_account_all(&self, account: &Address) -> Vec<StoredOrder> {
        self.account_orders(account).cloned().collect()
    }

    /// How many orders are open.
    pub fn len(&self) -> usize {
        self.by_sequence.len()
    }

    /// Whether no order is open.
    pub fn is_empty(&self) -> bool {
        self.by_sequence.is_empty()
    }

    /// Makes room for `additional` more open orders (a snapshot's, at start).
    pub fn reserve(&mut self, additional: usize) {
        self.by_sequence.reserve(additional);
        self.by_id.reserve(additional);
    }

    /// Applies the order events of one journaled command (with the signature journaled with it,
    /// which a new order that stays open keeps), and moves the mark to its sequence.
    pub fn apply(
        &mut self,
        sequence: u64,
        events: &[Event],
        authorization: Option<Authorization>,
    ) -> Result<(), StoreError> {
        self.set_mark(sequence);
        for event in events {
            let Event::OrderUpdated(record) = event else {
                continue;
            };
            if record.status != OrderStatus::Open {
                self.remove(record.sequence);
            } else if !self.update_record(record) {
                let placed = authorization
                    .filter(|authorization| authorization.order_id == Some(record.terms.order_id))
                    .ok_or_else(|| {
                        StoreError::Inconsistent(format!(
                            "order {} is open but its placement is unknown",
                            record.sequence
                        ))
                    })?;
                self.upsert(StoredOrder {
                    record: record.clone(),
                    nonce: placed.nonce,
                    expiry_ms: placed.expiry_ms,
                    signature: placed.signature,
                });
            }
        }
        Ok(())
    }

    /// Records a new open order, or the new state of a known one.
    pub fn upsert(&mut self, order: StoredOrder) {
        let sequence = order.record.sequence;
        if let Some(known) = self.by_sequence.get_mut(&sequence) {
            **known = order;
            return;
        }
        self.by_id.insert(*order.record.terms.order_id.as_bytes(), sequence);
        self.by_account
            .entry(*order.record.terms.account.as_bytes())
            .or_default()
            .insert(sequence);
        self.by_sequence.insert(sequence, Box::new(order));
    }

    /// Replaces the record of a known open order (a partial fill); false if it is not known.
    pub fn update_record(&mut self, record: &OrderRecord) -> bool {
        match self.by_sequence.get_mut(&record.sequence) {
            Some(known) => {
                known.record = record.clone();
                true
            }
            None => false,
        }
    }

    /// Forgets an order that closed; returns what was kept of it.
    pub fn remove(&mut self, sequence: u64) -> Option<StoredOrder> {
        let order = *self.by_sequence.remove(&sequence)?;
        self.by_id.remove(order.record.terms.order_id.as_bytes());
        let account = order.record.terms.account.as_bytes();
        if let Some(sequences) = self.by_account.get_mut(account) {
            sequences.remove(&sequence);
            if sequences.is_empty() {
                self.by_account.remove(account);
            }
        }
        Some(order)
    }

    /// An account's open orders, optionally on one pair, newest first, paged by sequence like
    /// the closed orders in the database.
    pub fn of_account(&self, account: &Address, pair: Option<PairIndex>, request: PageRequest) -> Page<StoredOrder> {
        let below = request.cursor.unwrap_or(u64::MAX);
        let mut items: Vec<StoredOrder> = self
            .by_account
            .get(account.as_bytes())
            .into_iter()
            .flat_map(|sequences| sequences.range(..below).rev())
            .filter_map(|sequence| self.by_sequence(*sequence))
            .filter(|order| pair.is_none_or(|pair| order.record.terms.pair == pair))
            .filter(|order| (request.start_ms..=request.end_ms).contains(&order.record.created_at_ms))
            .take(request.limit.saturating_add(1))
            .cloned()
            .collect();
        let next_cursor = if items.len() > request.limit {
            items.truncate(request.limit);
            items.last().map(|order| order.record.sequence)
        } else {
            None
        };
        Page { items, next_cursor }
    }

    /// An account's open orders on one pair, oldest first.
    pub fn of_account_on_pair(&self, account: &Address, pair: PairIndex) -> Vec<StoredOrder> {
        self.account_orders(account)
            .filter(|order| order.record.terms.pair == pair)
            .cloned()
            .collect()
    }

    /// An account's open orders, oldest first.
    fn account_orders<'a>(&'a self, account: &Address) -> impl Iterator<Item = &'a StoredOrder> + 'a {
        self.by_account
            .get(account.as_bytes())
            .into_iter()
            .flatten()
            .filter_map(|sequence| self.by_sequence(*sequence))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use dexd_core::{Amount, Direction, NewOrder, OrderStatus, OrderType, Price, Quantity, TimeInForce};

    fn open_order(account: Address, sequence: u64, pair: u16) -> StoredOrder {
        let mut order_id = [0u8; 32];
        order_id[..8].copy_from_slice(&sequence.to_be_bytes());
        StoredOrder {
            record: OrderRecord {
                terms: NewOrder {
                    order_id: OrderId::from_bytes(order_id),
                    client_order_id: None,
                    account,
                    pair: PairIndex(pair),
                    order_type: OrderType::Limit,
                    direction: Direction::Buy,
                    time_in_force: TimeInForce::GoodTillCancelled,
                    post_only: false,
                    price: Price::from_ticks(100),
                    quantity: Quantity::from_lots(10),
                },
                filled: Quantity::from_lots(0),
                cost: Amount::from_units(0),
                fee: Amount::from_units(0),
                status: OrderStatus::Open,
                cancel_reason: None,
                locked: Amount::from_units(1_000),
                created_at_ms: sequence * 10,
                updated_at_ms: sequence * 10,
                sequence,
            },
            nonce: [0; 32],
            expiry_ms: 0,
            signature: [0; 65],
        }
    }

    fn sequences(orders: &[StoredOrder]) -> Vec<u64> {
        orders.iter().map(|order| order.record.sequence).collect()
    }

    #[test]
    fn an_account_pages_through_its_open_orders_newest_first_and_a_closed_one_is_forgotten() {
        let (alice, bob) = (Address::from_bytes([0xa1; 20]), Address::from_bytes([0xb2; 20]));
        let mut open = OpenOrders::default();
        for sequence in 1..=5 {
            open.upsert(open_order(alice, sequence, (sequence % 2) as u16));
        }
        open.upsert(open_order(bob, 6, 0));
        let request = |cursor, limit| PageRequest {
            limit,
            cursor,
            start_ms: 0,
            end_ms: u64::MAX,
        };
        let first = open.of_account(&alice, None, request(None, 2));
        assert_eq!(sequences(&first.items), vec![5, 4]);
        assert_eq!(first.next_cursor, Some(4));
        let second = open.of_account(&alice, None, request(first.next_cursor, 2));
        assert_eq!(sequences(&second.items), vec![3, 2]);
        let last = open.of_account(&alice, None, request(second.next_cursor, 2));
        assert_eq!((sequences(&last.items), last.next_cursor), (vec![1], None));
        assert_eq!(
            sequences(&open.of_account(&alice, Some(PairIndex(1)), request(None, 10)).items),
            vec![5, 3, 1]
        );
        assert_eq!(sequences(&open.of_account_on_pair(&alice, PairIndex(0))), vec![2, 4]);
        let in_time = PageRequest {
            start_ms: 20,
            end_ms: 30,
            ..request(None, 10)
        };
        assert_eq!(sequences(&open.of_account(&alice, None, in_time).items), vec![3, 2]);

        let mut filled = open.by_sequence(6).unwrap().record.clone();
        filled.filled = Quantity::from_lots(4);
        assert!(open.update_record(&filled));
        assert_eq!(
            open.by_id(&filled.terms.order_id).unwrap().record.filled,
            Quantity::from_lots(4)
        );
        assert!(open.remove(6).is_some());
        assert!(open.by_id(&filled.terms.order_id).is_none());
        assert!(open.of_account(&bob, None, request(None, 10)).items.is_empty());
        assert!(
            !open.by_account.contains_key(bob.as_bytes()),
            "an account with no open order has no entry"
        );
        assert_eq!(open.len(), 5);
    }
}
