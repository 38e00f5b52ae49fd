//! The projector of a chain: writes the history tables (closed orders, trades, transfers) from
//! the journaled batches, in large transactions, with the mark of how far it got; keeps the open
//! orders in memory ([`super::open_orders`]); indexes closed orders by id in sorted runs.
//!
//! It runs on the chain's projector thread, after the journal commit; it never decides anything
//! and never touches the journal.

use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::Arc;

use dexd_core::{Event, OrderRecord, OrderStatus};
use parking_lot::RwLock;
use rusqlite::{params, Connection, TransactionBehavior};

use super::database::{leading_key, to_sql_integer, StoreError};
use super::history::{projected_sequence, SUBACCOUNT_TRANSFER_KIND};
use super::open_orders::OpenOrders;
use super::records::{Authorization, Projection, StoredOrder, UnindexedOrderIds};
use crate::codec;

/// The most commands written to the history in one transaction, by the projector and by the
/// replay at start. A larger transaction writes an index page that several commands change
/// once (BENCHMARKS.md, "Durable path", has the figures). The cost: when the projector is saturated, a history read may wait for one such transaction
/// (under a second); at the rates HTTP reaches, the projector's backlog never holds this many
/// commands.
pub const MAX_PROJECTION_BATCH: usize = 65_536;
/// How many closed orders wait, found by id from memory, before their id index entries are
/// written in one sorted run. The id is random, so entries written one by one land on a page
/// each once the index outgrows a transaction; in runs, a page takes many at once (BENCHMARKS.md,
/// "Durable path", measures what the index costs). Memory: 40 bytes or so per waiting order.
pub const ORDER_ID_INDEX_RUN: usize = 131_072;

/// The writer of a chain's history, owned by the chain's projector thread.
pub struct Projector {
    pub(super) connection: Connection,
    /// The open orders, which have no row until they close; shared with the readers.
    pub(super) open_orders: Arc<RwLock<OpenOrders>>,
    /// Closed orders not yet in the id index; shared with the readers.
    pub(super) unindexed_ids: Arc<RwLock<UnindexedOrderIds>>,
    /// How many closed orders wait before their id index entries are written
    /// ([`ORDER_ID_INDEX_RUN`]; smaller in tests).
    pub(super) id_index_run: usize,
}
/// An order's last state within one projected batch, and whether the batch placed it.
struct OrderWrite<'batch> {
    record: &'batch OrderRecord,
    placed_with: Option<&'batch Authorization>,
}
impl Projector {
    /// Puts the whole history on disk and marks it closed cleanly, so that it is trusted after a
    /// restart of the machine. Called once, when the chain stops; nothing is written after.
    pub fn close_cleanly(self) -> Result<(), StoreError> {
        self.connection.pragma_update(None, "synchronous", "FULL")?;
        self.connection
            .query_row("PRAGMA wal_checkpoint(TRUNCATE)", [], |_| Ok(()))?;
        // Earlier checkpoints wrote the database file without a sync, and a checkpoint with
        // nothing left to copy does not sync it: sync it here, whatever the checkpoint did.
        if let Some(path) = self.connection.path().map(PathBuf::from) {
            std::fs::File::open(&path)
                .and_then(|file| file.sync_all())
                .map_err(|error| StoreError::Inconsistent(format!("cannot sync {}: {error}", path.display())))?;
        }
        self.connection
            .execute("UPDATE meta SET value = '1' WHERE key = 'closed_cleanly'", [])?;
        Ok(())
    }

    /// The journal sequence the history holds every command up to.
    pub fn projected_sequence(&self) -> Result<u64, StoreError> {
        projected_sequence(&self.connection)
    }

    /// Writes a batch's history rows and the new mark in one transaction, then updates the open
    /// orders in memory.
    ///
    /// An order touched several times in the batch (placed, then filled in parts) is settled
    /// once, in its last state: kept in memory while open, written as one row when it closes.
    /// Rows are written in order of the order's sequence.
    pub fn project(&mut self, batch: &[Projection]) -> Result<(), StoreError> {
        let Some(last) = batch.last() else {
            return Ok(());
        };
        let (opened, closed) = self.settle_orders(batch)?;
        let run_due = self.unindexed_ids.read().len() >= self.id_index_run;
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        let numbers = {
            insert_history_events(&transaction, batch)?;
            if run_due {
                write_id_index_run(&transaction, &self.unindexed_ids.read())?;
            }
            let numbers = insert_closed_orders(&transaction, &closed)?;
            transaction.execute(
                "UPDATE meta SET value = ?1 WHERE key = 'projected_sequence'",
                [last.sequence.to_string()],
            )?;
            numbers
        };
        transaction.commit()?;
        // A reader looks for an order among the open ones, then the unindexed ones, then in the
        // database: a closed order joins the unindexed ones before it leaves the open ones, and
        // an indexed run leaves memory only once its entries are committed.
        {
            let mut unindexed_ids = self.unindexed_ids.write();
            if run_due {
                unindexed_ids.clear();
            }
            for (order, number) in closed.iter().zip(numbers) {
                unindexed_ids.insert(*order.record.terms.order_id.as_bytes(), number);
            }
        }
        self.update_open_orders(last.sequence, opened, &closed);
        Ok(())
    }

    /// Sets how many closed orders wait before their id index entries are written, so that a
    /// test sees several runs.
    #[cfg(test)]
    pub(super) fn set_id_index_run(&mut self, closed_orders: usize) {
        self.id_index_run = closed_orders;
    }

    /// Updates the open orders in memory from a command the history already holds (at start,
    /// up to the mark), writing nothing.
    pub fn remember(
        &mut self,
        sequence: u64,
        events: &[Event],
        authorization: Option<Authorization>,
    ) -> Result<(), StoreError> {
        self.open_orders.write().apply(sequence, events, authorization)
    }

    /// Replaces the open orders in memory by those of a snapshot, marked at its sequence.
    pub fn restore_open_orders(&mut self, open_orders: OpenOrders) {
        *self.open_orders.write() = open_orders;
    }

    /// The last state of every order the batch touched, with its signature, split into those
    /// still open and those that closed, each in order of sequence.
    fn settle_orders(&self, batch: &[Projection]) -> Result<(Vec<StoredOrder>, Vec<StoredOrder>), StoreError> {
        let mut orders: std::collections::BTreeMap<u64, OrderWrite<'_>> = std::collections::BTreeMap::new();
        for entry in batch {
            for event in entry.events.iter() {
                if let Event::OrderUpdated(record) = event {
                    let placed_here = entry
                        .authorization
                        .as_ref()
                        .filter(|authorization| authorization.order_id == Some(record.terms.order_id));
                    let write = orders.entry(record.sequence).or_insert(OrderWrite {
                        record,
                        placed_with: None,
                    });
                    write.record = record;
                    write.placed_with = write.placed_with.or(placed_here);
                }
            }
        }
        let open_orders = self.open_orders.read();
        let (mut opened, mut closed) = (Vec::new(), Vec::new());
        for (sequence, write) in orders {
            let (nonce, expiry_ms, signature, batch) =
                match (write.placed_with, open_orders.by_id(&write.record.terms.order_id)) {
                    (Some(authorization), _) => (
                        authorization.nonce,
                        authorization.expiry_ms,
                        authorization.signature,
                        authorization.batch.clone(),
                    ),
                    (None, Some(known)) => (known.nonce, known.expiry_ms, known.signature, known.batch.clone()),
                    // A TWAP's slice is the engine's, placed by a journaled slice command: it
                    // carries no signature of its own (the TWAP's signed terms authorize it),
                    // and, being immediate-or-cancel, it closes in the command that placed it.
                    (None, None) if write.record.terms.conditions().twap_id.is_some() => ([0; 32], 0, [0; 65], None),
                    (None, None) => {
                        return Err(StoreError::Inconsistent(format!(
                            "order {sequence} changed, but neither its placement nor its open state is known"
                        )))
                    }
                };
            let order = StoredOrder {
                record: write.record.clone(),
                nonce,
                expiry_ms,
                signature,
                batch,
            };
            match order.record.status {
                OrderStatus::Open | OrderStatus::Untriggered => opened.push(order),
                OrderStatus::Filled | OrderStatus::Cancelled => closed.push(order),
            }
        }
        Ok((opened, closed))
    }

    fn update_open_orders(&self, sequence: u64, opened: Vec<StoredOrder>, closed: &[StoredOrder]) {
        let mut open_orders = self.open_orders.write();
        open_orders.set_mark(sequence);
        for order in closed {
            open_orders.remove(&order.record);
        }
        for order in opened {
            open_orders.upsert(order);
        }
    }
}
/// Writes the id index entries of the unindexed closed orders, sorted by key, and records how
/// far the index reaches.
fn write_id_index_run(
    transaction: &rusqlite::Transaction<'_>,
    unindexed: &UnindexedOrderIds,
) -> Result<(), StoreError> {
    let mut entries: Vec<(i64, i64)> = unindexed
        .iter()
        .map(|(order_id, number)| (leading_key(order_id), *number))
        .collect();
    entries.sort_unstable();
    let mut insert = transaction.prepare_cached("INSERT INTO order_ids (order_key, number) VALUES (?1, ?2)")?;
    for (order_key, number) in &entries {
        insert.execute([order_key, number])?;
    }
    let indexed_through = entries.iter().map(|(_, number)| *number).max().unwrap_or(0);
    transaction.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'ids_indexed_through'",
        [indexed_through.to_string()],
    )?;
    Ok(())
}
/// Inserts the orders that closed, each once, in its last state; returns their row numbers.
fn insert_closed_orders(
    transaction: &rusqlite::Transaction<'_>,
    closed: &[StoredOrder],
) -> Result<Vec<i64>, StoreError> {
    let mut insert_order = transaction.prepare_cached(
        "INSERT INTO orders (order_id, account, pair, status, sequence, created_ms, record, nonce, expiry_ms, signature,
                             account_key, batch_number, batch_index)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12, ?13)",
    )?;
    let mut insert_batch = transaction.prepare_cached("INSERT INTO batches (order_hashes) VALUES (?1)")?;
    // A batch's orders share its signature and its hashes: the hashes are written once for the
    // orders of a batch that close in one transaction, and each names that row. A batch whose
    // orders close in several transactions gets a row in each (equal ones): what is kept per
    // batch is bounded by its orders, and nothing is looked up across transactions.
    let mut batch_rows: HashMap<[u8; 65], (&[[u8; 32]], i64)> = HashMap::new();
    let mut numbers = Vec::with_capacity(closed.len());
    for order in closed {
        let record = &order.record;
        let batch = match &order.batch {
            None => None,
            Some(place) => {
                let number = match batch_rows.get(&order.signature) {
                    Some((hashes, number)) if *hashes == &*place.order_hashes => *number,
                    _ => {
                        insert_batch.execute([codec::encode_batch_order_hashes(&place.order_hashes)])?;
                        let number = transaction.last_insert_rowid();
                        batch_rows.insert(order.signature, (&place.order_hashes, number));
                        number
                    }
                };
                Some((number, place.index))
            }
        };
        insert_order.execute(params![
            record.terms.order_id.as_bytes(),
            record.terms.account.as_bytes(),
            record.terms.pair.0,
            record.status as u8,
            to_sql_integer(record.sequence),
            to_sql_integer(record.created_at_ms),
            codec::encode_order(record),
            &order.nonce[..],
            to_sql_integer(order.expiry_ms),
            &order.signature[..],
            leading_key(record.terms.account.as_bytes()),
            batch.map(|(number, _)| number),
            batch.map(|(_, index)| index),
        ])?;
        numbers.push(transaction.last_insert_rowid());
    }
    Ok(numbers)
}

/// Writes a batch's trades (under the trade and under each of its two accounts, and into the
/// kept candles), transfers
/// (their latest state in their first row) and liability roots (recorded, then settled) into the
/// open transaction. Orders are written apart: settled once per batch, in their last state.
fn insert_history_events(transaction: &rusqlite::Transaction<'_>, batch: &[Projection]) -> Result<(), StoreError> {
    let mut insert_trade =
        transaction.prepare_cached("INSERT INTO trades (trade_id, pair, time_ms, record) VALUES (?1, ?2, ?3, ?4)")?;
    // A trade under each of its two accounts (never the same one: an order never fills
    // against its own account).
    let mut insert_account_trade = transaction
        .prepare_cached("INSERT INTO account_trades (account, trade_id, pair, time_ms) VALUES (?1, ?2, ?3, ?4)")?;
    // A transfer keeps its first row (and its place in the account's list) as its status
    // changes; the row holds its latest state.
    let mut insert_transfer = transaction.prepare_cached(
        "INSERT INTO transfers (account, kind, time_ms, record, transfer_id) VALUES (?1, ?2, ?3, ?4, ?5)
         ON CONFLICT (account, kind, transfer_id) DO UPDATE SET record = excluded.record",
    )?;
    let mut insert_root = transaction
        .prepare_cached("INSERT INTO liability_roots (epoch, time_ms, record, standing) VALUES (?1, ?2, ?3, 0)")?;
    let mut settle_root = transaction.prepare_cached("UPDATE liability_roots SET standing = ?2 WHERE epoch = ?1")?;
    for event in batch.iter().flat_map(|entry| entry.events.iter()) {
        match event {
            Event::TradeExecuted(trade) => {
                insert_trade.execute(params![
                    to_sql_integer(trade.trade_id),
                    trade.pair.0,
                    to_sql_integer(trade.timestamp_ms),
                    codec::encode_trade(trade)
                ])?;
                for account in [&trade.maker_account, &trade.taker_account] {
                    insert_account_trade.execute(params![
                        account.as_bytes(),
                        to_sql_integer(trade.trade_id),
                        trade.pair.0,
                        to_sql_integer(trade.timestamp_ms)
                    ])?;
                }
            }
            Event::TransferApplied(transfer) => {
                insert_transfer.execute(params![
                    transfer.account.as_bytes(),
                    transfer.kind as u8,
                    to_sql_integer(transfer.timestamp_ms),
                    codec::encode_transfer(transfer),
                    &transfer.transfer_id[..]
                ])?;
            }
            Event::LiabilityRootRecorded(record) => {
                insert_root.execute(params![
                    to_sql_integer(record.epoch),
                    to_sql_integer(record.committed_at_ms),
                    codec::encode_root_record(record)
                ])?;
            }
            // The engine keeps each account's TWAPs (running and recently finished); their
            // slices are orders, projected as any other.
            Event::TwapUpdated(_) => {}
            Event::LiabilityRootSettled { epoch, standing } => {
                settle_root.execute(params![to_sql_integer(*epoch), *standing as u8])?;
            }
            Event::SubaccountTransferred(transfer) => {
                let mut transfer_id = [0u8; 32];
                transfer_id[24..].copy_from_slice(&transfer.transfer_id.to_be_bytes());
                let (from, to) = (transfer.from_address(), transfer.to_address());
                // Under the owner (its whole list), and under each subaccount it touched.
                let mut accounts = vec![transfer.request.owner];
                accounts.extend(
                    [from, to]
                        .into_iter()
                        .filter(|account| *account != transfer.request.owner),
                );
                let record = codec::encode_subaccount_transfer(transfer);
                for account in accounts {
                    insert_transfer.execute(params![
                        account.as_bytes(),
                        SUBACCOUNT_TRANSFER_KIND,
                        to_sql_integer(transfer.timestamp_ms),
                        &record,
                        &transfer_id[..]
                    ])?;
                }
            }
            Event::OrderUpdated(_) | Event::BalanceUpdated { .. } | Event::VaultFrozen(_) => {}
        }
    }
    let trades = batch
        .iter()
        .flat_map(|entry| entry.events.iter())
        .filter_map(|event| match event {
            Event::TradeExecuted(trade) => Some(trade),
            _ => None,
        });
    super::candles::project_candles(transaction, trades)?;
    Ok(())
}
