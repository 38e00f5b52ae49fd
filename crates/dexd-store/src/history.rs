//! The history of a chain (`chain-<id>-history.sqlite3`): its schema, created whole and never
//! migrated, and whether an existing one can be trusted at start or must be deleted and rebuilt
//! from the journal (another journal, another schema version, or written in an earlier boot of
//! the machine and not closed cleanly).
//!
//! It writes no rows: the [`super::projector::Projector`] does, and the
//! [`super::reader::StoreReader`] reads them.

use std::path::Path;
use std::time::Duration;

use rusqlite::Connection;

use super::database::{check_chain_id, meta_value, open_connection, user_version, StoreError};
use super::records::UnindexedOrderIds;

/// The page cache of the projector's connection, in KiB: it must hold the pages a transaction of
/// [`super::MAX_PROJECTION_BATCH`] commands changes, or SQLite writes them out to the WAL in the middle
/// of the transaction and reads them back (BENCHMARKS.md, "The projector alone").
pub const PROJECTOR_CACHE_KIBIBYTES: i64 = 256 * 1024;

/// The history's schema version. The history is derived from the journal, so a history of
/// another version is never migrated: it is deleted and rebuilt from the journal (see
/// [`why_history_is_stale`]). Version 2 recorded the boot of the machine and the clean close;
/// version 3 keys the indexes of orders by integers; from version 4 the table of orders holds
/// closed orders only, each written once, and open orders are kept in memory
/// ([`super::open_orders`]); version 5 indexes closed orders by id in sorted runs
/// ([`ORDER_ID_INDEX_RUN`]); version 6 keeps each transfer once, in its latest state (vault
/// transfers change status), keyed by account, kind and id; version 7 indexes each trade under
/// its two accounts (`account_trades`, for `/order/accountTrades`); version 8 keeps the
/// liability roots the vault committed (`liability_roots`, by epoch); version 9 keeps where each
/// root stands (challengeable, vetoed, final) beside it; version 11 keeps every pair's candles
/// of one minute, one hour and one day from its first trade (`candles`) and indexes trades by
/// time, so that the whole market history pages by time; version 12 keeps the order hashes of a
/// batch signed once in one `batches` row that its closed orders name, where each order's row
/// held them all (642 bytes an order in a batch of 20: three fifths of a batch-fed history).
pub(super) const HISTORY_SCHEMA_VERSION: usize = 12;

/// The `kind` of a transfer between subaccounts in the transfers table (deposits and
/// withdrawals are `TransferKind`'s 0 and 1): kept under the owner and under each subaccount
/// it touched, its id the transfer's number in the last 8 of 32 bytes. Histories from before
/// subaccounts hold no such row, and neither do their journals, so the schema's version stands.
pub(crate) const SUBACCOUNT_TRANSFER_KIND: u8 = 2;

/// The history's schema, created whole in a new file. Closed orders are written once, in the
/// order they close, so rows append (their placement sequence is a column: keyed by it, rows of
/// orders that rested a while were inserted into the middle of the table, page by page). The id
/// index (`order_ids`, written in sorted runs) and the account index hold the first 8 bytes of
/// the (random) id and of the address as an integer ([`leading_key`]): integers compare faster
/// than blobs and the index stays dense; a read compares the whole value in the row.
pub(super) const HISTORY_SCHEMA: &str = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE orders (
         number INTEGER PRIMARY KEY, sequence INTEGER NOT NULL, order_id BLOB NOT NULL, account BLOB NOT NULL,
         pair INTEGER NOT NULL, status INTEGER NOT NULL, created_ms INTEGER NOT NULL, record BLOB NOT NULL,
         nonce BLOB NOT NULL, expiry_ms INTEGER NOT NULL, signature BLOB NOT NULL, account_key INTEGER NOT NULL,
         batch_number INTEGER, batch_index INTEGER);
     CREATE TABLE batches (number INTEGER PRIMARY KEY, order_hashes BLOB NOT NULL);
     CREATE TABLE order_ids (order_key INTEGER NOT NULL, number INTEGER NOT NULL, PRIMARY KEY (order_key, number))
         WITHOUT ROWID;
     CREATE INDEX orders_by_account ON orders (account_key, status, sequence);
     CREATE TABLE trades (trade_id INTEGER PRIMARY KEY, pair INTEGER NOT NULL, time_ms INTEGER NOT NULL, record BLOB NOT NULL);
     CREATE INDEX trades_by_pair ON trades (pair, trade_id);
     CREATE INDEX trades_by_pair_and_time ON trades (pair, time_ms);
     CREATE TABLE candles (
         pair INTEGER NOT NULL, interval INTEGER NOT NULL, open_time_ms INTEGER NOT NULL, record BLOB NOT NULL,
         PRIMARY KEY (pair, interval, open_time_ms)) WITHOUT ROWID;
     CREATE TABLE account_trades (
         account BLOB NOT NULL, trade_id INTEGER NOT NULL, pair INTEGER NOT NULL, time_ms INTEGER NOT NULL,
         PRIMARY KEY (account, trade_id)) WITHOUT ROWID;
     CREATE TABLE transfers (
         number INTEGER PRIMARY KEY AUTOINCREMENT, account BLOB NOT NULL, kind INTEGER NOT NULL,
         time_ms INTEGER NOT NULL, record BLOB NOT NULL, transfer_id BLOB NOT NULL);
     CREATE INDEX transfers_by_account ON transfers (account, kind, number);
     CREATE UNIQUE INDEX transfers_by_id ON transfers (account, kind, transfer_id);
     CREATE TABLE liability_roots (
         epoch INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, record BLOB NOT NULL, standing INTEGER NOT NULL);";
/// Opens (creating or rebuilding when needed) the history of the journal `journal_id`.
pub(super) fn open_history(
    path: &Path,
    chain_id: u64,
    journal_id: &str,
    busy_timeout: Duration,
) -> Result<Connection, StoreError> {
    let open_or_create = || -> Result<Connection, StoreError> {
        let mut connection = open_connection(path, busy_timeout)?;
        if user_version(&connection)? == 0 {
            create_history(&mut connection, chain_id, journal_id)?;
        }
        check_chain_id(&connection, chain_id)?;
        Ok(connection)
    };
    let mut connection = open_or_create()?;
    let boot_id = current_boot_id();
    if let Some(reason) = why_history_is_stale(&connection, journal_id, boot_id.as_deref())? {
        tracing::warn!(
            chain_id,
            history = %path.display(),
            "{reason}; deleting the history to rebuild it from the journal"
        );
        drop(connection);
        for suffix in ["", "-wal", "-shm"] {
            let mut file = path.as_os_str().to_owned();
            file.push(suffix);
            match std::fs::remove_file(&file) {
                Ok(()) => {}
                Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                Err(error) => {
                    return Err(StoreError::Inconsistent(format!(
                        "cannot delete the stale history {}: {error}",
                        path.display()
                    )))
                }
            }
        }
        connection = open_or_create()?;
    }
    // This boot claims the history before its first unsynced write, and the claim itself is
    // synced: after a power cut, the history is known to be untrustworthy.
    let claim = connection.transaction()?;
    claim.execute(
        "UPDATE meta SET value = ?1 WHERE key = 'boot_id'",
        [boot_id.as_deref().unwrap_or("")],
    )?;
    claim.execute("UPDATE meta SET value = '0' WHERE key = 'closed_cleanly'", [])?;
    claim.commit()?;
    // The projector's commits and checkpoints never wait for the disk. The journal is the
    // durable record; the projector's mark, committed with the rows, says what to rebuild after
    // a crash of the process (the operating system still has every write). Syncs of the history
    // would make the journal's syncs wait behind them on the same disk.
    connection.pragma_update(None, "synchronous", "OFF")?;
    connection.pragma_update(None, "cache_size", -PROJECTOR_CACHE_KIBIBYTES)?;
    Ok(connection)
}

/// Creates the history's tables and `meta` rows in a new file, with nothing projected yet.
pub(super) fn create_history(connection: &mut Connection, chain_id: u64, journal_id: &str) -> Result<(), StoreError> {
    let transaction = connection.transaction()?;
    transaction.execute_batch(HISTORY_SCHEMA)?;
    let chain_id = chain_id.to_string();
    let initial_meta = [
        ("chain_id", chain_id.as_str()),
        ("journal_id", journal_id),
        ("projected_sequence", "0"),
        ("ids_indexed_through", "0"),
        ("boot_id", ""),
        ("closed_cleanly", "1"),
    ];
    for (key, value) in initial_meta {
        transaction.execute("INSERT INTO meta (key, value) VALUES (?1, ?2)", [key, value])?;
    }
    transaction.pragma_update(None, "user_version", HISTORY_SCHEMA_VERSION)?;
    transaction.commit()?;
    Ok(())
}

/// Why an existing history cannot be trusted, if it cannot: of another schema version, built
/// from another journal, or written, without syncs, during an earlier boot of the machine and
/// not closed cleanly, so that an operating system crash or power cut may have lost or torn some
/// of its pages.
pub(super) fn why_history_is_stale(
    connection: &Connection,
    journal_id: &str,
    boot_id: Option<&str>,
) -> Result<Option<String>, StoreError> {
    let version = user_version(connection)?;
    if version != HISTORY_SCHEMA_VERSION {
        return Ok(Some(format!(
            "the history has schema version {version}, and this dexd writes version {HISTORY_SCHEMA_VERSION}"
        )));
    }
    if meta_value(connection, "journal_id")? != journal_id {
        return Ok(Some("the history was built from another journal".to_owned()));
    }
    let stored_boot_id = meta_value(connection, "boot_id")?;
    let written_in_this_boot = boot_id.is_some_and(|boot_id| stored_boot_id == boot_id);
    if !written_in_this_boot && meta_value(connection, "closed_cleanly")? != "1" {
        return Ok(Some(
            "the machine has restarted since the history was last written, and it was not closed cleanly".to_owned(),
        ));
    }
    Ok(None)
}

/// The identity of the running boot of the machine (Linux), or `None` where there is none to
/// read, in which case a history not closed cleanly is always rebuilt.
pub(super) fn current_boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
}
/// The closed orders a history holds past its last id index run.
pub(super) fn unindexed_order_ids(history: &Connection) -> Result<UnindexedOrderIds, StoreError> {
    let indexed_through: i64 = meta_value(history, "ids_indexed_through")?
        .parse()
        .map_err(|_| StoreError::Inconsistent("bad ids_indexed_through".into()))?;
    let mut statement = history.prepare("SELECT order_id, number FROM orders WHERE number > ?1")?;
    let mut rows = statement.query([indexed_through])?;
    let mut unindexed = UnindexedOrderIds::new();
    while let Some(row) = rows.next()? {
        let order_id: [u8; 32] = row
            .get::<_, Vec<u8>>(0)?
            .try_into()
            .map_err(|_| StoreError::Inconsistent("bad order id".into()))?;
        unindexed.insert(order_id, row.get(1)?);
    }
    Ok(unindexed)
}
/// How far the history tables have been written.
pub(super) fn projected_sequence(connection: &Connection) -> Result<u64, StoreError> {
    meta_value(connection, "projected_sequence")?
        .parse()
        .map_err(|_| StoreError::Inconsistent("bad projected_sequence".into()))
}
