//! The records behind the list endpoints: every order with its signature, every trade, every
//! deposit and withdrawal, folded from the engine's events, and paged newest first.
//!
//! This version keeps them in memory; the durability issue moves them into the embedded store.
//! It does not decide anything: it only remembers what the engine reported.

use std::collections::HashMap;

use dexd_core::{Address, Event, OrderId, OrderRecord, OrderStatus, PairIndex, Trade, Transfer, TransferKind};

/// The most records one page may hold.
pub const MAX_PAGE_LIMIT: usize = 1_000;

/// An order with what the service signed.
#[derive(Debug, Clone)]
pub struct StoredOrder {
    /// The order's latest state.
    pub record: OrderRecord,
    /// The salt of the signed EIP-712 message.
    pub salt: u128,
    /// The 65-byte EIP-712 signature.
    pub signature: [u8; 65],
}

/// What the service signed for a new order, recorded with it.
#[derive(Debug, Clone, Copy)]
pub struct OrderAuthorization {
    /// The order.
    pub order_id: OrderId,
    /// The salt of the signed message.
    pub salt: u128,
    /// The signature.
    pub signature: [u8; 65],
}

/// Which records a page wants.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest {
    /// At most this many records.
    pub limit: usize,
    /// Only records older than this cursor (from the previous page's `next_cursor`).
    pub cursor: Option<u64>,
    /// Only records at or after this time.
    pub start_ms: u64,
    /// Only records at or before this time.
    pub end_ms: u64,
}

/// One page, newest first.
#[derive(Debug, Clone)]
pub struct Page<T> {
    /// The records.
    pub items: Vec<T>,
    /// The cursor of the next page, when more records remain.
    pub next_cursor: Option<u64>,
}

/// Every record of one chain.
#[derive(Debug, Default)]
pub struct History {
    orders: HashMap<OrderId, StoredOrder>,
    orders_by_account: HashMap<Address, Vec<OrderId>>,
    trades_by_pair: HashMap<PairIndex, Vec<Trade>>,
    transfers_by_account: HashMap<Address, Vec<(u64, Transfer)>>,
    transfer_count: u64,
}

impl History {
    /// Folds one command's events in. `authorization` comes with a new order.
    pub fn apply(&mut self, events: &[Event], authorization: Option<OrderAuthorization>) {
        for event in events {
            match event {
                Event::OrderUpdated(record) => self.record_order(record, authorization),
                Event::TradeExecuted(trade) => self.trades_by_pair.entry(trade.pair).or_default().push(trade.clone()),
                Event::TransferApplied(transfer) => {
                    self.transfer_count += 1;
                    let entry = (self.transfer_count, transfer.clone());
                    self.transfers_by_account
                        .entry(transfer.account)
                        .or_default()
                        .push(entry);
                }
                Event::BalanceUpdated { .. } => {}
            }
        }
    }

    fn record_order(&mut self, record: &OrderRecord, authorization: Option<OrderAuthorization>) {
        let order_id = record.terms.order_id;
        if let Some(stored) = self.orders.get_mut(&order_id) {
            stored.record = record.clone();
            return;
        }
        let Some(authorization) = authorization.filter(|authorization| authorization.order_id == order_id) else {
            return;
        };
        self.orders_by_account
            .entry(record.terms.account)
            .or_default()
            .push(order_id);
        self.orders.insert(
            order_id,
            StoredOrder {
                record: record.clone(),
                salt: authorization.salt,
                signature: authorization.signature,
            },
        );
    }

    /// An order by id.
    pub fn order(&self, order_id: &OrderId) -> Option<&StoredOrder> {
        self.orders.get(order_id)
    }

    /// An account's orders with a status, optionally on one pair, newest first. The cursor is
    /// the order's sequence number.
    pub fn orders(
        &self,
        account: &Address,
        status: OrderStatus,
        pair: Option<PairIndex>,
        request: PageRequest,
    ) -> Page<StoredOrder> {
        let ids = self
            .orders_by_account
            .get(account)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let matching = ids.iter().rev().filter_map(|id| self.orders.get(id)).filter(|stored| {
            let record = &stored.record;
            record.status == status
                && pair.is_none_or(|pair| record.terms.pair == pair)
                && record.created_at_ms >= request.start_ms
                && record.created_at_ms <= request.end_ms
                && request.cursor.is_none_or(|cursor| record.sequence < cursor)
        });
        page(matching.cloned(), request.limit, |stored| stored.record.sequence)
    }

    /// An account's open orders on one pair, oldest first.
    pub fn open_orders_on_pair(&self, account: &Address, pair: PairIndex) -> Vec<StoredOrder> {
        let ids = self
            .orders_by_account
            .get(account)
            .map(Vec::as_slice)
            .unwrap_or_default();
        ids.iter()
            .filter_map(|id| self.orders.get(id))
            .filter(|stored| stored.record.status == OrderStatus::Open && stored.record.terms.pair == pair)
            .cloned()
            .collect()
    }

    /// A pair's trades, newest first. The cursor is the trade id.
    pub fn trades(&self, pair: PairIndex, request: PageRequest) -> Page<Trade> {
        let trades = self.trades_by_pair.get(&pair).map(Vec::as_slice).unwrap_or_default();
        let matching = trades.iter().rev().filter(|trade| {
            trade.timestamp_ms >= request.start_ms
                && trade.timestamp_ms <= request.end_ms
                && request.cursor.is_none_or(|cursor| trade.trade_id < cursor)
        });
        page(matching.cloned(), request.limit, |trade| trade.trade_id)
    }

    /// An account's deposits or withdrawals, newest first. The cursor is a chain-wide transfer
    /// sequence number.
    pub fn transfers(&self, account: &Address, kind: TransferKind, request: PageRequest) -> Page<Transfer> {
        let transfers = self
            .transfers_by_account
            .get(account)
            .map(Vec::as_slice)
            .unwrap_or_default();
        let matching = transfers.iter().rev().filter(|(number, transfer)| {
            transfer.kind == kind
                && transfer.timestamp_ms >= request.start_ms
                && transfer.timestamp_ms <= request.end_ms
                && request.cursor.is_none_or(|cursor| *number < cursor)
        });
        let numbered = page(matching.cloned(), request.limit, |(number, _)| *number);
        Page {
            items: numbered.items.into_iter().map(|(_, transfer)| transfer).collect(),
            next_cursor: numbered.next_cursor,
        }
    }
}

fn page<T>(matching: impl Iterator<Item = T>, limit: usize, key: impl Fn(&T) -> u64) -> Page<T> {
    let mut items: Vec<T> = matching.take(limit + 1).collect();
    let next_cursor = if items.len() > limit {
        items.truncate(limit);
        items.last().map(&key)
    } else {
        None
    };
    Page { items, next_cursor }
}
