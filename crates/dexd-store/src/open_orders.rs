//! The open orders of a chain's history, kept in memory by the projector. An order's row is
//! written to the history database once, when it closes (filled or cancelled), instead of at
//! placement and again at every fill or cancel: those rewrites of earlier rows, spread over the
//! table, were most of the projector's cost. Open orders, and an open order by id, are read from
//! here; closed orders from the database.
//!
//! This mirrors the order records the projector has been handed, at the projector's mark; it
//! decides nothing and is not the engine's book. It is not kept on disk: at start it is rebuilt
//! from a snapshot and the journal after it, with the engine. Its size is bounded by the chain's
//! limit on resting orders.

use std::collections::hash_map::Entry;
use std::collections::{BTreeMap, HashMap};

use dexd_core::{Address, Event, OrderId, OrderRecord, PairIndex};

use super::database::StoreError;
use super::records::{Authorization, Page, PageRequest, StoredOrder};

/// The open orders of one chain, by id and by account.
#[derive(Default)]
pub struct OpenOrders {
    /// Every open order. Boxed, so that growing the map moves pointers rather than whole orders.
    by_id: HashMap<[u8; 32], Box<StoredOrder>>,
    /// Each account's open orders: sequence (time order) to id. An account with none has no
    /// entry. Only two indexes: every caller holds the order's record, so its id is at hand.
    by_account: HashMap<[u8; 20], BTreeMap<u64, OrderId>>,
    /// The journal sequence these open orders are the state of.
    mark: u64,
}

impl OpenOrders {
    /// An open order by id.
    pub fn by_id(&self, order_id: &OrderId) -> Option<&StoredOrder> {
        self.by_id.get(order_id.as_bytes()).map(|order| &**order)
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
        self.by_id.len()
    }

    /// Whether no order is open.
    pub fn is_empty(&self) -> bool {
        self.by_id.is_empty()
    }

    /// The open orders of a snapshot, marked at its sequence, from its `count` orders. The map
    /// of orders (each boxed as it is made, into a map sized once) is built here while a second
    /// thread builds the index by account from the keys handed to it in batches: a start
    /// restores a million of them. Refused, with the reason, if an order is an error or two
    /// share an id or a sequence (a damaged snapshot).
    pub fn restored(
        count: usize,
        orders: impl Iterator<Item = Result<StoredOrder, String>>,
        mark: u64,
    ) -> Result<OpenOrders, String> {
        std::thread::scope(|scope| {
            let (batches, received) = std::sync::mpsc::sync_channel::<Vec<AccountKey>>(KEY_BATCHES_IN_FLIGHT);
            let indexing = scope.spawn(move || index_by_account(received.into_iter().flatten()));
            let mut by_id = HashMap::with_capacity(count);
            let mut batch = Vec::with_capacity(KEY_BATCH_ORDERS);
            let mut outcome = Ok(());
            for order in orders {
                let order = match order {
                    Ok(order) => order,
                    Err(error) => {
                        outcome = Err(error);
                        break;
                    }
                };
                let terms = &order.record.terms;
                batch.push((terms.account, order.record.sequence, terms.order_id));
                if by_id.insert(*terms.order_id.as_bytes(), Box::new(order)).is_some() {
                    outcome = Err("two open orders share an id".to_owned());
                    break;
                }
                // A send fails only if the index thread stopped at an error, reported below.
                if batch.len() == KEY_BATCH_ORDERS
                    && batches
                        .send(std::mem::replace(&mut batch, Vec::with_capacity(KEY_BATCH_ORDERS)))
                        .is_err()
                {
                    break;
                }
            }
            let _ = batches.send(batch);
            drop(batches);
            let by_account = indexing
                .join()
                .unwrap_or_else(|_| Err("the index by account panicked".to_owned()));
            outcome?;
            Ok(OpenOrders {
                by_id,
                by_account: by_account?,
                mark,
            })
        })
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
            if !record.status.is_open() {
                self.remove(record);
            } else if !self.update_record(record) {
                let placed = authorization
                    .as_ref()
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
                    batch: placed.batch.clone(),
                });
            }
        }
        Ok(())
    }

    /// Records a new open order, or the new state of a known one.
    pub fn upsert(&mut self, order: StoredOrder) {
        let terms = &order.record.terms;
        let (order_id, account, sequence) = (terms.order_id, *terms.account.as_bytes(), order.record.sequence);
        match self.by_id.entry(*order_id.as_bytes()) {
            Entry::Occupied(mut known) => **known.get_mut() = order,
            Entry::Vacant(vacant) => {
                let earlier = self.by_account.entry(account).or_default().insert(sequence, order_id);
                assert!(
                    earlier.is_none(),
                    "invariant: an order not open has no entry by account"
                );
                vacant.insert(Box::new(order));
            }
        }
    }

    /// Replaces the record of a known open order (a partial fill); false if it is not known.
    pub fn update_record(&mut self, record: &OrderRecord) -> bool {
        match self.by_id.get_mut(record.terms.order_id.as_bytes()) {
            Some(known) => {
                known.record = record.clone();
                true
            }
            None => false,
        }
    }

    /// Forgets an order that closed; returns what was kept of it.
    pub fn remove(&mut self, record: &OrderRecord) -> Option<StoredOrder> {
        let order = *self.by_id.remove(record.terms.order_id.as_bytes())?;
        let account = order.record.terms.account.as_bytes();
        if let Some(of_account) = self.by_account.get_mut(account) {
            of_account.remove(&order.record.sequence);
            if of_account.is_empty() {
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
            .flat_map(|of_account| of_account.range(..below).rev())
            .filter_map(|(_, order_id)| self.by_id(order_id))
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
            .flat_map(|of_account| of_account.values())
            .filter_map(|order_id| self.by_id(order_id))
    }
}

/// An open order's keys for the index by account: account, sequence, id.
type AccountKey = (Address, u64, OrderId);

/// Orders whose keys [`OpenOrders::restored`] hands to its index thread at once.
const KEY_BATCH_ORDERS: usize = 4_096;
/// Batches of keys that may wait for the index thread (about 1 MB of keys).
const KEY_BATCHES_IN_FLIGHT: usize = 4;

/// The index by account of a snapshot's open orders, each account's built at once from its
/// sorted orders; refused if two orders share a sequence.
fn index_by_account(
    keys: impl Iterator<Item = AccountKey>,
) -> Result<HashMap<[u8; 20], BTreeMap<u64, OrderId>>, String> {
    let mut grouped: HashMap<[u8; 20], Vec<(u64, OrderId)>> = HashMap::new();
    for (account, sequence, order_id) in keys {
        grouped
            .entry(*account.as_bytes())
            .or_default()
            .push((sequence, order_id));
    }
    let mut by_account = HashMap::with_capacity(grouped.len());
    for (account, mut orders) in grouped {
        orders.sort_unstable_by_key(|(sequence, _)| *sequence);
        if orders.windows(2).any(|pair| pair[0].0 == pair[1].0) {
            return Err("two open orders share a sequence".to_owned());
        }
        by_account.insert(account, orders.into_iter().collect());
    }
    Ok(by_account)
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
                    conditions: Default::default(),
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
            batch: None,
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

        let bob_order_id = open_order(bob, 6, 0).record.terms.order_id;
        let mut filled = open.by_id(&bob_order_id).unwrap().record.clone();
        filled.filled = Quantity::from_lots(4);
        assert!(open.update_record(&filled));
        assert_eq!(
            open.by_id(&filled.terms.order_id).unwrap().record.filled,
            Quantity::from_lots(4)
        );
        assert!(open.remove(&filled).is_some());
        assert!(open.by_id(&filled.terms.order_id).is_none());
        assert!(open.of_account(&bob, None, request(None, 10)).items.is_empty());
        assert!(
            !open.by_account.contains_key(bob.as_bytes()),
            "an account with no open order has no entry"
        );
        assert_eq!(open.len(), 5);
    }

    #[test]
    fn a_snapshot_whose_orders_share_an_id_or_a_sequence_is_refused() {
        let alice = Address::from_bytes([0xa1; 20]);
        let restore = |orders: Vec<StoredOrder>| OpenOrders::restored(orders.len(), orders.into_iter().map(Ok), 9);
        let restored = restore(vec![open_order(alice, 2, 1), open_order(alice, 1, 0)]).unwrap();
        assert_eq!((restored.len(), restored.mark()), (2, 9));
        assert_eq!(sequences(&restored.of_account_all(&alice)), vec![1, 2]);
        let mut same_id = open_order(alice, 3, 0);
        same_id.record.terms.order_id = open_order(alice, 1, 0).record.terms.order_id;
        assert_eq!(
            restore(vec![open_order(alice, 1, 0), same_id]).err().as_deref(),
            Some("two open orders share an id")
        );
        let mut same_sequence = open_order(alice, 4, 0);
        same_sequence.record.sequence = 1;
        assert_eq!(
            restore(vec![open_order(alice, 1, 0), same_sequence]).err().as_deref(),
            Some("two open orders share a sequence")
        );
    }
}
