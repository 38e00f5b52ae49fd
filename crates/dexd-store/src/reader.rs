//! The reading side of a chain's store, shared by the request handlers: orders (open ones from
//! memory, closed ones by index), trades and transfers, paged newest first, on a small pool of
//! read connections to the history.
//!
//! It never writes, and it does not wait for the projector: the venue's read barrier does.

use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dexd_core::{
    Address, OrderId, OrderStatus, PairIndex, RecordedRoot, RootStanding, SubaccountTransfer, Trade, Transfer,
    TransferKind,
};
use parking_lot::{Mutex, RwLock};
use rusqlite::{params, Connection, OptionalExtension};

use super::database::{leading_key, open_connection, to_sql_integer, StoreError};
use super::history::SUBACCOUNT_TRANSFER_KIND;
use super::open_orders::OpenOrders;
use super::records::{Page, PageRequest, StoredOrder, UnindexedOrderIds};
use crate::codec;

/// The most records one page may hold.
pub const MAX_PAGE_LIMIT: usize = 1_000;
/// Read connections kept open per chain; a busier moment opens and closes extra ones.
pub const MAX_IDLE_READ_CONNECTIONS: usize = 8;

/// The reading side of a chain's store, shared by the request handlers.
pub struct StoreReader {
    pub(super) path: PathBuf,
    pub(super) busy_timeout: Duration,
    pub(super) idle: Mutex<Vec<Connection>>,
    pub(super) open_orders: Arc<RwLock<OpenOrders>>,
    pub(super) unindexed_ids: Arc<RwLock<UnindexedOrderIds>>,
}
impl StoreReader {
    fn with_connection<T>(&self, read: impl FnOnce(&Connection) -> Result<T, StoreError>) -> Result<T, StoreError> {
        let pooled = self.idle.lock().pop();
        let connection = match pooled {
            Some(connection) => connection,
            None => open_connection(&self.path, self.busy_timeout)?,
        };
        let result = read(&connection);
        let mut idle = self.idle.lock();
        if idle.len() < MAX_IDLE_READ_CONNECTIONS {
            idle.push(connection);
        }
        result
    }

    /// An order by id: an open one from memory, a closed one from the database.
    pub fn order(&self, order_id: &OrderId) -> Result<Option<StoredOrder>, StoreError> {
        if let Some(open) = self.open_orders.read().by_id(order_id) {
            return Ok(Some(open.clone()));
        }
        let unindexed_number = self.unindexed_ids.read().get(order_id.as_bytes()).copied();
        self.with_connection(|connection| {
            let columns = match unindexed_number {
                Some(number) => connection
                    .query_row(
                        "SELECT record, nonce, expiry_ms, signature, batch_index, batches.order_hashes FROM orders
                         LEFT JOIN batches ON batches.number = orders.batch_number WHERE orders.number = ?1",
                        [number],
                        StoredOrderColumns::read,
                    )
                    .optional()?,
                None => connection
                    .query_row(
                        "SELECT record, nonce, expiry_ms, signature, batch_index, batches.order_hashes FROM orders
                         LEFT JOIN batches ON batches.number = orders.batch_number
                         WHERE orders.number IN (SELECT number FROM order_ids WHERE order_key = ?1) AND order_id = ?2",
                        params![leading_key(order_id.as_bytes()), order_id.as_bytes()],
                        StoredOrderColumns::read,
                    )
                    .optional()?,
            };
            columns.map(|columns| columns.decode()).transpose()
        })
    }

    /// An account's orders with a status, optionally on one pair, newest first. The cursor is
    /// the order's sequence number.
    pub fn orders(
        &self,
        account: &Address,
        status: OrderStatus,
        pair: Option<PairIndex>,
        request: PageRequest,
    ) -> Result<Page<StoredOrder>, StoreError> {
        // Open and untriggered orders are both open, served from memory together.
        if status.is_open() {
            return Ok(self.open_orders.read().of_account(account, pair, request));
        }
        let window = SqlWindow::of(&request);
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, nonce, expiry_ms, signature, batch_index, batches.order_hashes, sequence FROM orders
                 LEFT JOIN batches ON batches.number = orders.batch_number
                 WHERE account_key = ?8 AND account = ?1 AND status = ?2 AND (?3 IS NULL OR pair = ?3)
                   AND created_ms >= ?4 AND created_ms <= ?5 AND sequence < ?6
                 ORDER BY sequence DESC LIMIT ?7",
            )?;
            let rows = statement.query_map(
                params![
                    account.as_bytes(),
                    status as u8,
                    pair.map(|pair| pair.0),
                    window.start_ms,
                    window.end_ms,
                    window.before,
                    window.fetch,
                    leading_key(account.as_bytes()),
                ],
                |row| Ok((StoredOrderColumns::read(row)?, row.get::<_, i64>(6)?)),
            )?;
            let mut items = Vec::new();
            for row in rows {
                let (columns, sequence) = row?;
                items.push((columns.decode()?, sequence as u64));
            }
            Ok(page(items, request.limit))
        })
    }

    /// An account's open orders, oldest first, with the journal sequence they are the state of
    /// (the projector's mark, which may be behind or ahead of a reader's own position).
    pub fn open_orders_at_mark(&self, account: &Address) -> (Vec<StoredOrder>, u64) {
        let open_orders = self.open_orders.read();
        (open_orders.of_account_all(account), open_orders.mark())
    }

    /// An account's open orders on one pair, oldest first (at most its open-order limit).
    pub fn open_orders_on_pair(&self, account: &Address, pair: PairIndex) -> Vec<StoredOrder> {
        self.open_orders.read().of_account_on_pair(account, pair)
    }

    /// A pair's trades, newest first. The cursor is the trade id.
    pub fn trades(&self, pair: PairIndex, request: PageRequest) -> Result<Page<Trade>, StoreError> {
        let window = SqlWindow::of(&request);
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, trade_id FROM trades
                 WHERE pair = ?1 AND time_ms >= ?2 AND time_ms <= ?3 AND trade_id < ?4
                 ORDER BY trade_id DESC LIMIT ?5",
            )?;
            trade_page(
                &mut statement,
                params![pair.0, window.start_ms, window.end_ms, window.before, window.fetch],
                request.limit,
            )
        })
    }

    /// A page of a pair's candles of `interval`, from the pair's first trade on
    /// ([`crate::CandleQuery`] says which).
    pub fn candles(
        &self,
        pair: PairIndex,
        interval: dexd_core::CandleInterval,
        query: crate::CandleQuery,
    ) -> Result<crate::CandlePage, StoreError> {
        self.with_connection(|connection| super::candles::read_candles(connection, pair, interval, query))
    }

    /// Up to `limit` of a pair's trades within `[start_ms, end_ms]` (a range of trade times)
    /// after trade `after_trade_id`, oldest first: the whole history a page at a time.
    pub fn trades_from(
        &self,
        pair: PairIndex,
        (start_ms, end_ms): (u64, u64),
        after_trade_id: u64,
        limit: usize,
    ) -> Result<Vec<Trade>, StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record FROM trades
                 WHERE pair = ?1 AND trade_id > ?2 AND time_ms >= ?3 AND time_ms <= ?4
                 ORDER BY trade_id ASC LIMIT ?5",
            )?;
            let rows = statement.query_map(
                params![
                    pair.0,
                    to_sql_integer(after_trade_id),
                    to_sql_integer(start_ms),
                    to_sql_integer(end_ms),
                    to_sql_integer(limit as u64)
                ],
                |row| row.get::<_, Vec<u8>>(0),
            )?;
            let mut trades = Vec::new();
            for row in rows {
                trades.push(codec::decode_trade(&row?)?);
            }
            Ok(trades)
        })
    }

    /// An account's own trades (as maker or taker), optionally on one pair, newest first. The
    /// cursor is the trade id.
    pub fn account_trades(
        &self,
        account: &Address,
        pair: Option<PairIndex>,
        request: PageRequest,
    ) -> Result<Page<Trade>, StoreError> {
        let window = SqlWindow::of(&request);
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT trades.record, account_trades.trade_id FROM account_trades
                 JOIN trades ON trades.trade_id = account_trades.trade_id
                 WHERE account_trades.account = ?1 AND (?2 IS NULL OR account_trades.pair = ?2)
                   AND account_trades.time_ms >= ?3 AND account_trades.time_ms <= ?4 AND account_trades.trade_id < ?5
                 ORDER BY account_trades.trade_id DESC LIMIT ?6",
            )?;
            trade_page(
                &mut statement,
                params![
                    account.as_bytes(),
                    pair.map(|pair| pair.0),
                    window.start_ms,
                    window.end_ms,
                    window.before,
                    window.fetch
                ],
                request.limit,
            )
        })
    }

    /// The liability roots the vault committed, newest first, each with where it stands. The
    /// cursor is the epoch.
    pub fn liability_roots(&self, request: PageRequest) -> Result<Page<RecordedRoot>, StoreError> {
        let window = SqlWindow::of(&request);
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, epoch, standing FROM liability_roots
                 WHERE time_ms >= ?1 AND time_ms <= ?2 AND epoch < ?3
                 ORDER BY epoch DESC LIMIT ?4",
            )?;
            let rows = statement.query_map(
                params![window.start_ms, window.end_ms, window.before, window.fetch],
                |row| Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, i64>(1)?, row.get::<_, u8>(2)?)),
            )?;
            let mut items = Vec::new();
            for row in rows {
                let (record, epoch, standing) = row?;
                items.push((recorded_root(&record, standing)?, epoch as u64));
            }
            Ok(page(items, request.limit))
        })
    }

    /// The liability roots from epoch `from` on, oldest first, at most `limit`, and the epoch
    /// of the next one when there are more.
    pub fn liability_roots_from(
        &self,
        from: u64,
        limit: usize,
    ) -> Result<(Vec<RecordedRoot>, Option<u64>), StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, standing, epoch FROM liability_roots WHERE epoch >= ?1 ORDER BY epoch ASC LIMIT ?2",
            )?;
            let fetch = i64::try_from(limit.saturating_add(1)).unwrap_or(i64::MAX);
            let rows = statement.query_map(params![to_sql_integer(from), fetch], |row| {
                Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, u8>(1)?, row.get::<_, i64>(2)?))
            })?;
            let mut roots = Vec::new();
            let mut next = None;
            for row in rows {
                let (record, standing, epoch) = row?;
                if roots.len() == limit {
                    next = Some(epoch as u64);
                    break;
                }
                roots.push(recorded_root(&record, standing)?);
            }
            Ok((roots, next))
        })
    }

    /// The liability root of one epoch, if the vault committed it and the history holds it.
    pub fn liability_root(&self, epoch: u64) -> Result<Option<RecordedRoot>, StoreError> {
        self.with_connection(|connection| {
            let mut statement =
                connection.prepare_cached("SELECT record, standing FROM liability_roots WHERE epoch = ?1")?;
            let mut rows = statement.query([to_sql_integer(epoch)])?;
            match rows.next()? {
                Some(row) => Ok(Some(recorded_root(&row.get::<_, Vec<u8>>(0)?, row.get(1)?)?)),
                None => Ok(None),
            }
        })
    }

    /// Whether the account has a deposit or withdrawal with this id, in any status.
    pub fn has_transfer(
        &self,
        account: &Address,
        kind: TransferKind,
        transfer_id: &[u8; 32],
    ) -> Result<bool, StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT EXISTS (SELECT 1 FROM transfers WHERE account = ?1 AND kind = ?2 AND transfer_id = ?3)",
            )?;
            Ok(
                statement.query_row(params![account.as_bytes(), kind as u8, &transfer_id[..]], |row| {
                    row.get::<_, bool>(0)
                })?,
            )
        })
    }

    /// An account's deposits or withdrawals, newest first. The cursor is a chain-wide transfer
    /// number.
    pub fn transfers(
        &self,
        account: &Address,
        kind: TransferKind,
        request: PageRequest,
    ) -> Result<Page<Transfer>, StoreError> {
        self.transfer_rows(account, kind as u8, request, codec::decode_transfer)
    }

    /// The transfers between subaccounts that an owner made (under the owner's address), or
    /// that moved funds from or to one subaccount (under its address), newest first. The cursor
    /// is a chain-wide transfer number.
    pub fn subaccount_transfers(
        &self,
        account: &Address,
        request: PageRequest,
    ) -> Result<Page<SubaccountTransfer>, StoreError> {
        self.transfer_rows(
            account,
            SUBACCOUNT_TRANSFER_KIND,
            request,
            codec::decode_subaccount_transfer,
        )
    }

    /// The rows of one kind of the transfers table under `account`, newest first.
    fn transfer_rows<T>(
        &self,
        account: &Address,
        kind: u8,
        request: PageRequest,
        decode: fn(&[u8]) -> Result<T, codec::CodecError>,
    ) -> Result<Page<T>, StoreError> {
        let window = SqlWindow::of(&request);
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, number FROM transfers
                 WHERE account = ?1 AND kind = ?2 AND time_ms >= ?3 AND time_ms <= ?4 AND number < ?5
                 ORDER BY number DESC LIMIT ?6",
            )?;
            let rows = statement.query_map(
                params![
                    account.as_bytes(),
                    kind,
                    window.start_ms,
                    window.end_ms,
                    window.before,
                    window.fetch
                ],
                |row| Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, i64>(1)?)),
            )?;
            let mut items = Vec::new();
            for row in rows {
                let (record, number) = row?;
                items.push((decode(&record)?, number as u64));
            }
            Ok(page(items, request.limit))
        })
    }
}
/// The columns `record, nonce, expiry_ms, signature, batch_index` of an order row and its
/// batch's `order_hashes`, as read.
struct StoredOrderColumns {
    record: Vec<u8>,
    nonce: Vec<u8>,
    expiry_ms: i64,
    signature: Vec<u8>,
    batch_index: Option<u8>,
    batch_order_hashes: Option<Vec<u8>>,
}

impl StoredOrderColumns {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredOrderColumns> {
        Ok(StoredOrderColumns {
            record: row.get(0)?,
            nonce: row.get(1)?,
            expiry_ms: row.get(2)?,
            signature: row.get(3)?,
            batch_index: row.get(4)?,
            batch_order_hashes: row.get(5)?,
        })
    }

    fn decode(self) -> Result<StoredOrder, StoreError> {
        // Orders stored before schema version 3 carry a 128-bit salt, which is the same uint256.
        let mut nonce = [0u8; 32];
        match self.nonce.len() {
            32 | 16 => nonce[32 - self.nonce.len()..].copy_from_slice(&self.nonce),
            _ => return Err(StoreError::Inconsistent("bad nonce".into())),
        }
        let signature: [u8; 65] = self
            .signature
            .as_slice()
            .try_into()
            .map_err(|_| StoreError::Inconsistent("bad signature".into()))?;
        Ok(StoredOrder {
            record: codec::decode_order(&self.record)?,
            nonce,
            expiry_ms: self.expiry_ms as u64,
            signature,
            batch: match (self.batch_index, self.batch_order_hashes) {
                (Some(index), Some(order_hashes)) => Some(codec::decode_batch_place_in(index, &order_hashes)?),
                (None, None) => None,
                _ => {
                    return Err(StoreError::Inconsistent(
                        "an order names a batch the history lacks".into(),
                    ))
                }
            },
        })
    }
}
/// Cuts `limit + 1` fetched rows to a page; the extra row only says that more remain.
fn page<T>(mut items: Vec<(T, u64)>, limit: usize) -> Page<T> {
    let next_cursor = if items.len() > limit {
        items.truncate(limit);
        items.last().map(|(_, key)| *key)
    } else {
        None
    };
    Page {
        items: items.into_iter().map(|(item, _)| item).collect(),
        next_cursor,
    }
}

/// A page of trades from a statement that selects `(record, trade_id)` rows, newest first and
/// one more than `limit` (the cursor is the trade id).
/// A page request as the SQL of a newest-first page takes it: the time window, the key to stay
/// below (the cursor, or no bound), and one more row than the limit so that `page` can tell
/// whether another page follows.
struct SqlWindow {
    start_ms: i64,
    end_ms: i64,
    before: i64,
    fetch: i64,
}

impl SqlWindow {
    fn of(request: &PageRequest) -> SqlWindow {
        SqlWindow {
            start_ms: to_sql_integer(request.start_ms),
            end_ms: to_sql_integer(request.end_ms),
            before: to_sql_integer(request.cursor.unwrap_or(u64::MAX)),
            fetch: to_sql_integer(request.limit as u64 + 1),
        }
    }
}

fn trade_page(
    statement: &mut rusqlite::CachedStatement<'_>,
    parameters: impl rusqlite::Params,
    limit: usize,
) -> Result<Page<Trade>, StoreError> {
    let rows = statement.query_map(parameters, |row| Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, i64>(1)?)))?;
    let mut items = Vec::new();
    for row in rows {
        let (record, trade_id) = row?;
        items.push((codec::decode_trade(&record)?, trade_id as u64));
    }
    Ok(page(items, limit))
}

/// A root's row: its record and where it stands.
fn recorded_root(record: &[u8], standing: u8) -> Result<RecordedRoot, StoreError> {
    let standing = match standing {
        0 => RootStanding::Challengeable,
        1 => RootStanding::Vetoed,
        2 => RootStanding::Final,
        _ => return Err(StoreError::Inconsistent(format!("a root's standing is {standing}"))),
    };
    Ok(RecordedRoot {
        record: codec::decode_root_record(record)?,
        standing,
    })
}
