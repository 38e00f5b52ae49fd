//! The embedded store: two SQLite databases per chain, in the data directory.
//!
//! The journal (`chain-<id>.sqlite3`) holds every accepted command with the time it ran at and
//! the signature that authorised it, from which the engine is rebuilt exactly by replay. The
//! history (`chain-<id>-history.sqlite3`) holds the tables behind the list endpoints (orders
//! with their signatures, trades, transfers), indexed for paging newest first.
//!
//! Only the journal is on the path to an acknowledgment: a batch of commands is appended in one
//! transaction that is on disk (WAL, `synchronous = FULL`) before any of them is answered. The
//! history is written after, in larger batches, by the [`Projector`], which records in the same
//! transaction how far it got; what it had not written before a crash is rebuilt from the journal
//! at start. The two live in separate files so that the projector's long transactions never hold
//! the write lock a journal commit needs: SQLite allows one writer per database. The history is
//! derived data: built from another journal (its `journal_id` differs), it is deleted and rebuilt.
//! It is written without syncs, so that it never makes the journal's syncs wait; a crash of the
//! process loses nothing of it (the operating system has the writes), and one that was open
//! when the machine went down, rather than closed cleanly, is rebuilt from the journal.
//! This module does not decide anything and does not know HTTP.

use std::path::{Path, PathBuf};
use std::time::Duration;

use dexd_core::{
    Address, Command, Engine, EngineConfig, Event, Nonce, NonceClaim, OrderId, OrderRecord, OrderStatus, PairIndex,
    Trade, Transfer, TransferKind,
};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use crate::codec::{self, CodecError};
use crate::open_orders::OpenOrders;

/// The most commands written to the history in one transaction, by the projector and by the
/// replay at start. A larger transaction writes an index page that several commands change
/// once: the durable bench at 1,024 submitters went from 83–85 k to 86–89 k commands/s when
/// this rose from 16,384 (measured while fills still rewrote order rows, before schema 4). The
/// cost: when the projector is saturated, a history read may wait for one such transaction
/// (under a second); at the rates HTTP reaches, the projector's backlog never holds this many
/// commands.
pub const MAX_PROJECTION_BATCH: usize = 65_536;
/// How many closed orders wait, found by id from memory, before their id index entries are
/// written in one sorted run. The id is random, so entries written one by one land on a page
/// each once the index outgrows a transaction; in runs, a page takes many at once. (The durable
/// bench with no id index at all, as a measure of its cost: 110–111 k against 89–94 k commands
/// per second at 1,024 submitters.) Memory: 40 bytes or so per waiting order.
pub const ORDER_ID_INDEX_RUN: usize = 131_072;
/// The most records one page may hold.
pub const MAX_PAGE_LIMIT: usize = 1_000;
/// The database page size, in bytes. (16 KiB pages made the projector bench 13 % faster but
/// the durable bench no faster, and cost more per random page an update or a read touches.)
pub const STORE_PAGE_BYTES: i64 = 4096;
/// The page cache of each connection, in KiB.
pub const STORE_CACHE_KIBIBYTES: i64 = 64 * 1024;
/// The page cache of the projector's connection, in KiB: it must hold the pages a transaction of
/// [`MAX_PROJECTION_BATCH`] commands changes, or SQLite writes them out to the WAL in the middle
/// of the transaction and reads them back (the projector bench at 65,536 commands per
/// transaction: 68 k commands/s with 64 MiB, 118 k with this).
pub const PROJECTOR_CACHE_KIBIBYTES: i64 = 256 * 1024;
/// WAL pages between automatic checkpoints of the history (4 MiB). The history is not synced,
/// so a checkpoint only copies pages into its file (with no checkpoint at all the durable bench
/// is no faster); a larger WAL spreads the same writes over more of the page cache for the
/// kernel to write back.
pub const WAL_AUTOCHECKPOINT_PAGES: i64 = 1_024;
/// Read connections kept open per chain; a busier moment opens and closes extra ones.
pub const MAX_IDLE_READ_CONNECTIONS: usize = 8;

/// The journal's schema, one migration per version; `PRAGMA user_version` records how many have
/// run. Versions 1 to 4 kept the history tables in the same file.
const JOURNAL_MIGRATIONS: &[&str] = &[
    "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE commands (sequence INTEGER PRIMARY KEY, time_ms INTEGER NOT NULL, command BLOB NOT NULL);
     CREATE TABLE orders (
         order_id BLOB PRIMARY KEY, account BLOB NOT NULL, pair INTEGER NOT NULL, status INTEGER NOT NULL,
         sequence INTEGER NOT NULL, created_ms INTEGER NOT NULL, record BLOB NOT NULL,
         salt BLOB NOT NULL, signature BLOB NOT NULL);
     CREATE INDEX orders_by_account ON orders (account, status, sequence);
     CREATE TABLE trades (trade_id INTEGER PRIMARY KEY, pair INTEGER NOT NULL, time_ms INTEGER NOT NULL, record BLOB NOT NULL);
     CREATE INDEX trades_by_pair ON trades (pair, trade_id);
     CREATE TABLE transfers (
         number INTEGER PRIMARY KEY AUTOINCREMENT, account BLOB NOT NULL, kind INTEGER NOT NULL,
         time_ms INTEGER NOT NULL, record BLOB NOT NULL);
     CREATE INDEX transfers_by_account ON transfers (account, kind, number);",
    "ALTER TABLE commands ADD COLUMN authorization BLOB;
     INSERT INTO meta (key, value) VALUES ('projected_sequence', (SELECT COALESCE(MAX(sequence), 0) FROM commands));",
    // Orders are signed over a 256-bit nonce and an expiry; the old 128-bit salts become nonces.
    "ALTER TABLE orders RENAME COLUMN salt TO nonce;
     ALTER TABLE orders ADD COLUMN expiry_ms INTEGER NOT NULL DEFAULT 0;",
    // Order rows keyed by their engine sequence, so that new rows append and fills update by
    // rowid; the id index keeps only the first 8 bytes of the (random) id, so it stays dense.
    "CREATE TABLE orders_by_sequence (
         sequence INTEGER PRIMARY KEY, order_id BLOB NOT NULL, account BLOB NOT NULL, pair INTEGER NOT NULL,
         status INTEGER NOT NULL, created_ms INTEGER NOT NULL, record BLOB NOT NULL,
         nonce BLOB NOT NULL, expiry_ms INTEGER NOT NULL, signature BLOB NOT NULL);
     INSERT INTO orders_by_sequence
         SELECT sequence, order_id, account, pair, status, created_ms, record, nonce, expiry_ms, signature FROM orders;
     DROP TABLE orders;
     ALTER TABLE orders_by_sequence RENAME TO orders;
     CREATE INDEX orders_by_id_prefix ON orders (substr(order_id, 1, 8));
     CREATE INDEX orders_by_account ON orders (account, status, sequence);",
    // The history moves to its own database, rebuilt there from the journal at the next start;
    // the journal gets an identity, so that a history can tell which journal it was built from.
    "DROP TABLE orders;
     DROP TABLE trades;
     DROP TABLE transfers;
     DELETE FROM meta WHERE key = 'projected_sequence';
     INSERT INTO meta (key, value) VALUES ('journal_id', lower(hex(randomblob(16))));",
];

/// The history's schema version. The history is derived from the journal, so a history of
/// another version is never migrated: it is deleted and rebuilt from the journal (see
/// [`why_history_is_stale`]). Version 2 recorded the boot of the machine and the clean close;
/// version 3 keys the indexes of orders by integers; from version 4 the table of orders holds
/// closed orders only, each written once, and open orders are kept in memory
/// ([`crate::open_orders`]); version 5 indexes closed orders by id in sorted runs
/// ([`ORDER_ID_INDEX_RUN`]).
const HISTORY_SCHEMA_VERSION: usize = 5;

/// The history's schema, created whole in a new file. Closed orders are written once, in the
/// order they close, so rows append (their placement sequence is a column: keyed by it, rows of
/// orders that rested a while were inserted into the middle of the table, page by page). The id
/// index (`order_ids`, written in sorted runs) and the account index hold the first 8 bytes of
/// the (random) id and of the address as an integer ([`leading_key`]): integers compare faster
/// than blobs and the index stays dense (the projector bench: about 8 % more commands per second
/// than with the blob prefix and the address); a read compares the whole value in the row.
const HISTORY_SCHEMA: &str = "CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
     CREATE TABLE orders (
         number INTEGER PRIMARY KEY, sequence INTEGER NOT NULL, order_id BLOB NOT NULL, account BLOB NOT NULL,
         pair INTEGER NOT NULL, status INTEGER NOT NULL, created_ms INTEGER NOT NULL, record BLOB NOT NULL,
         nonce BLOB NOT NULL, expiry_ms INTEGER NOT NULL, signature BLOB NOT NULL, account_key INTEGER NOT NULL);
     CREATE TABLE order_ids (order_key INTEGER NOT NULL, number INTEGER NOT NULL, PRIMARY KEY (order_key, number))
         WITHOUT ROWID;
     CREATE INDEX orders_by_account ON orders (account_key, status, sequence);
     CREATE TABLE trades (trade_id INTEGER PRIMARY KEY, pair INTEGER NOT NULL, time_ms INTEGER NOT NULL, record BLOB NOT NULL);
     CREATE INDEX trades_by_pair ON trades (pair, trade_id);
     CREATE TABLE transfers (
         number INTEGER PRIMARY KEY AUTOINCREMENT, account BLOB NOT NULL, kind INTEGER NOT NULL,
         time_ms INTEGER NOT NULL, record BLOB NOT NULL);
     CREATE INDEX transfers_by_account ON transfers (account, kind, number);";

/// Why the store could not do what was asked.
#[derive(Debug)]
pub enum StoreError {
    /// SQLite refused (disk full, read-only, locked, damaged...).
    Database(rusqlite::Error),
    /// A stored value could not be decoded.
    Codec(CodecError),
    /// The store does not belong to this chain, or its journal does not replay.
    Inconsistent(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Database(error) => write!(formatter, "database: {error}"),
            StoreError::Codec(error) => write!(formatter, "{error}"),
            StoreError::Inconsistent(message) => formatter.write_str(message),
        }
    }
}

impl std::error::Error for StoreError {}

impl From<rusqlite::Error> for StoreError {
    fn from(error: rusqlite::Error) -> StoreError {
        StoreError::Database(error)
    }
}

impl From<CodecError> for StoreError {
    fn from(error: CodecError) -> StoreError {
        StoreError::Codec(error)
    }
}

/// An order with its signature.
#[derive(Debug, Clone)]
pub struct StoredOrder {
    /// The order's latest state.
    pub record: OrderRecord,
    /// The nonce of the signed EIP-712 message.
    pub nonce: [u8; 32],
    /// The expiry of the signed message, in ms since the epoch.
    pub expiry_ms: u64,
    /// The 65-byte EIP-712 signature.
    pub signature: [u8; 65],
}

/// The signature that authorised a command, journaled with it: always for a new order (whoever
/// signed it), and for every command a client signed itself, whose nonce must be claimed again
/// on replay.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Authorization {
    /// The new order this signature placed, if the command places one.
    pub order_id: Option<OrderId>,
    /// The signed message's nonce.
    pub nonce: [u8; 32],
    /// The signed message's expiry, in ms since the epoch.
    pub expiry_ms: u64,
    /// The 65-byte signature.
    pub signature: [u8; 65],
    /// Whether the client signed (its nonce is claimed) or the venue signed with the key.
    pub client_signed: bool,
}

impl Authorization {
    /// The nonce claim a client-signed command makes.
    pub fn claim(&self) -> Option<NonceClaim> {
        self.client_signed.then(|| NonceClaim {
            nonce: Nonce::from_bytes(self.nonce),
            expiry_ms: self.expiry_ms,
        })
    }
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

/// One accepted command, as the journal keeps it.
pub struct JournalEntry {
    /// Its place in the chain's journal, from 1, without gaps.
    pub sequence: u64,
    /// The time the engine ran it at.
    pub time_ms: u64,
    /// The encoded command.
    pub command: Vec<u8>,
    /// The signature of a new order.
    pub authorization: Option<Authorization>,
}

/// The events of one command, shared by its reply and its projection.
pub type Events = std::sync::Arc<Vec<Event>>;

/// What one journaled command did, for the history tables.
pub struct Projection {
    /// The command's journal sequence.
    pub sequence: u64,
    /// Its events.
    pub events: Events,
    /// The signature of a new order.
    pub authorization: Option<Authorization>,
}

/// The engine rebuilt from the journal, with what the history tables still lack.
pub struct Replayed {
    /// The rebuilt engine.
    pub engine: Engine,
    /// The journal's last sequence (0 when empty).
    pub last_sequence: u64,
    /// How many commands were written to the history on the way.
    pub reprojected_commands: usize,
}

/// Where a chain's journal lives.
pub fn database_path(data_dir: &Path, chain_id: u64) -> PathBuf {
    data_dir.join(format!("chain-{chain_id}.sqlite3"))
}

/// Where a chain's history lives.
pub fn history_path(data_dir: &Path, chain_id: u64) -> PathBuf {
    data_dir.join(format!("chain-{chain_id}-history.sqlite3"))
}

fn open_connection(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
    let connection = Connection::open(path)?;
    connection.busy_timeout(busy_timeout)?;
    // Takes effect only when the file is created.
    connection.pragma_update(None, "page_size", STORE_PAGE_BYTES)?;
    connection.pragma_update(None, "journal_mode", "WAL")?;
    // FULL: every commit waits for the WAL to reach the disk, so an acknowledged change survives
    // a crash or a power cut. The projector lowers this on its own connection.
    connection.pragma_update(None, "synchronous", "FULL")?;
    connection.pragma_update(None, "cache_size", -STORE_CACHE_KIBIBYTES)?;
    connection.pragma_update(None, "wal_autocheckpoint", WAL_AUTOCHECKPOINT_PAGES)?;
    Ok(connection)
}

/// Runs the journal migrations a database lacks; a new database also gets its chain id. Refuses
/// a database of another chain or of a newer schema.
fn migrate(connection: &mut Connection, migrations: &[&str], chain_id: u64) -> Result<(), StoreError> {
    let version = user_version(connection)?;
    if version > migrations.len() {
        return Err(StoreError::Inconsistent(format!(
            "the store has schema version {version}, newer than this dexd knows ({})",
            migrations.len()
        )));
    }
    for (index, migration) in migrations.iter().enumerate().skip(version) {
        let transaction = connection.transaction()?;
        transaction.execute_batch(migration)?;
        transaction.pragma_update(None, "user_version", index + 1)?;
        if index == 0 {
            transaction.execute(
                "INSERT INTO meta (key, value) VALUES ('chain_id', ?1)",
                [chain_id.to_string()],
            )?;
        }
        transaction.commit()?;
    }
    check_chain_id(connection, chain_id)
}

/// The schema version a database records (0 for a new file).
fn user_version(connection: &Connection) -> Result<usize, StoreError> {
    Ok(connection.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Refuses a database that belongs to another chain.
fn check_chain_id(connection: &Connection, chain_id: u64) -> Result<(), StoreError> {
    let stored = meta_value(connection, "chain_id")?;
    if stored != chain_id.to_string() {
        return Err(StoreError::Inconsistent(format!(
            "the store belongs to chain {stored}, not {chain_id}"
        )));
    }
    Ok(())
}

fn meta_value(connection: &Connection, key: &str) -> Result<String, StoreError> {
    connection
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| row.get(0))
        .optional()?
        .ok_or_else(|| StoreError::Inconsistent(format!("the store has no {key}")))
}

/// Opens (creating or rebuilding when needed) the history of the journal `journal_id`.
fn open_history(
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
    // made the journal's syncs wait on ext4 (p99 over HTTP at 1,000 orders/s: 12–15 ms with
    // them, 3–8 ms without).
    connection.pragma_update(None, "synchronous", "OFF")?;
    connection.pragma_update(None, "cache_size", -PROJECTOR_CACHE_KIBIBYTES)?;
    Ok(connection)
}

/// Creates the history's tables and `meta` rows in a new file, with nothing projected yet.
fn create_history(connection: &mut Connection, chain_id: u64, journal_id: &str) -> Result<(), StoreError> {
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
fn why_history_is_stale(
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
fn current_boot_id() -> Option<String> {
    std::fs::read_to_string("/proc/sys/kernel/random/boot_id")
        .ok()
        .map(|text| text.trim().to_owned())
        .filter(|text| !text.is_empty())
}

/// Copies the WAL into the database file as far as it can without waiting for anyone.
fn checkpoint_passive(connection: &Connection) -> Result<(), StoreError> {
    let (busy, wal_frames, checkpointed_frames): (i64, i64, i64) =
        connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |row| {
            Ok((row.get(0)?, row.get(1)?, row.get(2)?))
        })?;
    if busy != 0 || wal_frames != checkpointed_frames {
        tracing::debug!(
            wal_frames,
            checkpointed_frames,
            "the journal checkpoint did not complete"
        );
    }
    Ok(())
}

/// A connection to a chain's journal that only checkpoints it, on a thread of its own: it copies
/// the bulk of the WAL into the database file and syncs it (about 10 ms per 8,192 commands here, once every 32,768)
/// while the writer goes on committing. The writer then finishes with a short checkpoint of what
/// was appended meanwhile ([`StoreWriter::checkpoint`]), after which the WAL starts over: a
/// checkpoint that never catches up with a busy writer lets the WAL grow without end.
pub struct JournalCheckpointer {
    connection: Connection,
}

impl JournalCheckpointer {
    /// Copies what the WAL holds now into the database file and syncs it.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        checkpoint_passive(&self.connection)
    }
}

/// The journal of a chain's store, owned by the chain's writer thread.
pub struct StoreWriter {
    connection: Connection,
}

/// The writer of a chain's history, owned by the chain's projector thread.
pub struct Projector {
    connection: Connection,
    /// The open orders, which have no row until they close; shared with the readers.
    open_orders: Arc<RwLock<OpenOrders>>,
    /// Closed orders not yet in the id index; shared with the readers.
    unindexed_ids: Arc<RwLock<UnindexedOrderIds>>,
    /// How many closed orders wait before their id index entries are written
    /// ([`ORDER_ID_INDEX_RUN`]; smaller in tests).
    id_index_run: usize,
}

/// The row number of each closed order not yet in the id index, by order id.
type UnindexedOrderIds = std::collections::HashMap<[u8; 32], i64>;

/// The reading side of a chain's store, shared by the request handlers.
pub struct StoreReader {
    path: PathBuf,
    busy_timeout: Duration,
    idle: Mutex<Vec<Connection>>,
    open_orders: Arc<RwLock<OpenOrders>>,
    unindexed_ids: Arc<RwLock<UnindexedOrderIds>>,
}

/// Opens (creating and migrating when needed) a chain's journal and history.
pub fn open(
    data_dir: &Path,
    chain_id: u64,
    busy_timeout: Duration,
) -> Result<(StoreWriter, Projector, StoreReader), StoreError> {
    let journal_path = database_path(data_dir, chain_id);
    let mut connection = open_connection(&journal_path, busy_timeout)?;
    migrate(&mut connection, JOURNAL_MIGRATIONS, chain_id)?;
    // The writer checkpoints the journal itself, between batches (`StoreWriter::checkpoint`),
    // never inside a commit.
    connection.pragma_update(None, "wal_autocheckpoint", 0)?;
    let journal_id = meta_value(&connection, "journal_id")?;
    let path = history_path(data_dir, chain_id);
    let history_connection = open_history(&path, chain_id, &journal_id, busy_timeout)?;
    let open_orders = Arc::new(RwLock::new(OpenOrders::default()));
    let unindexed_ids = Arc::new(RwLock::new(unindexed_order_ids(&history_connection)?));
    let reader = StoreReader {
        path,
        busy_timeout,
        idle: Mutex::new(Vec::new()),
        open_orders: Arc::clone(&open_orders),
        unindexed_ids: Arc::clone(&unindexed_ids),
    };
    Ok((
        StoreWriter { connection },
        Projector {
            connection: history_connection,
            open_orders,
            unindexed_ids,
            id_index_run: ORDER_ID_INDEX_RUN,
        },
        reader,
    ))
}

/// The closed orders a history holds past its last id index run.
fn unindexed_order_ids(history: &Connection) -> Result<UnindexedOrderIds, StoreError> {
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

/// The first 8 bytes of an order id or an address as an integer: the key of the history's order
/// indexes. Two values may share it, so a read also compares the whole value.
fn leading_key(bytes: &[u8]) -> i64 {
    let mut leading = [0u8; 8];
    let length = bytes.len().min(leading.len());
    leading[..length].copy_from_slice(&bytes[..length]);
    i64::from_be_bytes(leading)
}

fn to_sql_integer(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

/// The journal's encoding of an [`Authorization`]: a version byte (2), a flags byte (1: client
/// signed, 2: places an order), the order id if any, the nonce, the expiry and the signature.
/// Schema version 2 stored `order id ‖ 128-bit salt ‖ signature` (113 bytes), read as a venue
/// signature with the salt as nonce and no expiry.
const AUTHORIZATION_ENCODING_VERSION: u8 = 2;
const LEGACY_AUTHORIZATION_BYTES: usize = 32 + 16 + 65;

fn encode_authorization(authorization: &Option<Authorization>) -> Option<Vec<u8>> {
    authorization.map(|authorization| {
        let mut bytes = Vec::with_capacity(2 + 32 + 32 + 8 + 65);
        bytes.push(AUTHORIZATION_ENCODING_VERSION);
        bytes.push(u8::from(authorization.client_signed) | (u8::from(authorization.order_id.is_some()) << 1));
        if let Some(order_id) = authorization.order_id {
            bytes.extend_from_slice(order_id.as_bytes());
        }
        bytes.extend_from_slice(&authorization.nonce);
        bytes.extend_from_slice(&authorization.expiry_ms.to_be_bytes());
        bytes.extend_from_slice(&authorization.signature);
        bytes
    })
}

fn decode_authorization(bytes: Option<Vec<u8>>) -> Result<Option<Authorization>, StoreError> {
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    let bad = || StoreError::Inconsistent("bad stored authorization".into());
    if bytes.len() == LEGACY_AUTHORIZATION_BYTES {
        let mut nonce = [0u8; 32];
        nonce[16..].copy_from_slice(&bytes[32..48]);
        return Ok(Some(Authorization {
            order_id: Some(OrderId::from_bytes(bytes[..32].try_into().expect("32 bytes"))),
            nonce,
            expiry_ms: 0,
            signature: bytes[48..].try_into().expect("65 bytes"),
            client_signed: false,
        }));
    }
    let (&[version, flags], rest) = bytes.split_first_chunk::<2>().ok_or_else(bad)?;
    if version != AUTHORIZATION_ENCODING_VERSION || flags > 3 {
        return Err(bad());
    }
    let (order_id, rest) = if flags & 2 != 0 {
        let (order_id, rest) = rest.split_first_chunk::<32>().ok_or_else(bad)?;
        (Some(OrderId::from_bytes(*order_id)), rest)
    } else {
        (None, rest)
    };
    let (nonce, rest) = rest.split_first_chunk::<32>().ok_or_else(bad)?;
    let (expiry, rest) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
    let signature: [u8; 65] = rest.try_into().map_err(|_| bad())?;
    Ok(Some(Authorization {
        order_id,
        nonce: *nonce,
        expiry_ms: u64::from_be_bytes(*expiry),
        signature,
        client_signed: flags & 1 != 0,
    }))
}

impl StoreWriter {
    /// Copies what the journal's WAL holds into its database file. Run by the writer between
    /// batches, it always completes, as no other connection writes the journal, so the next
    /// append starts the WAL over instead of growing it. (A checkpoint from another thread
    /// never catches up with a busy writer, and the WAL then grows without end.) After a
    /// [`JournalCheckpointer`] has copied the bulk, this copies only what came since.
    pub fn checkpoint(&self) -> Result<(), StoreError> {
        checkpoint_passive(&self.connection)
    }

    /// A second connection to this journal, for a [`JournalCheckpointer`] on another thread.
    pub fn checkpointer(&self) -> Result<JournalCheckpointer, StoreError> {
        let path = self
            .connection
            .path()
            .map(PathBuf::from)
            .ok_or_else(|| StoreError::Inconsistent("the journal has no file".to_string()))?;
        // A passive checkpoint never waits on a lock, so the busy timeout only covers opening.
        let connection = open_connection(&path, Duration::from_secs(1))?;
        connection.pragma_update(None, "wal_autocheckpoint", 0)?;
        Ok(JournalCheckpointer { connection })
    }

    /// Appends a batch to the journal in one transaction; when this returns `Ok`, the batch is
    /// on disk.
    pub fn append(&mut self, batch: &[JournalEntry]) -> Result<(), StoreError> {
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut insert = transaction.prepare_cached(
                "INSERT INTO commands (sequence, time_ms, command, authorization) VALUES (?1, ?2, ?3, ?4)",
            )?;
            for entry in batch {
                insert.execute(params![
                    to_sql_integer(entry.sequence),
                    to_sql_integer(entry.time_ms),
                    entry.command,
                    encode_authorization(&entry.authorization)
                ])?;
            }
        }
        transaction.commit()?;
        Ok(())
    }

    /// Rebuilds the engine by replaying the journal at the recorded times. With a `history`, the
    /// commands it does not hold yet are written to it on the way, in batches of
    /// [`MAX_PROJECTION_BATCH`], so memory does not grow with what is missing.
    pub fn replay(&self, config: &EngineConfig, history: Option<&mut Projector>) -> Result<Replayed, StoreError> {
        replay(&self.connection, config, history)
    }
}

/// Replays a journal into a fresh engine. Every journaled command was accepted once, so a
/// rejection here means the journal and the engine disagree, and the store is refused.
fn replay(
    connection: &Connection,
    config: &EngineConfig,
    mut history: Option<&mut Projector>,
) -> Result<Replayed, StoreError> {
    let mut engine = Engine::new(config.clone())
        .map_err(|error| StoreError::Inconsistent(format!("the configuration's pairs are invalid: {error}")))?;
    let projected = match history.as_deref() {
        Some(projector) => projector.projected_sequence()?,
        None => u64::MAX,
    };
    let mut statement =
        connection.prepare("SELECT sequence, time_ms, command, authorization FROM commands ORDER BY sequence")?;
    let mut rows = statement.query([])?;
    let mut last_sequence = 0;
    let mut unprojected = Vec::new();
    let mut reprojected_commands = 0;
    let mut events = Vec::new();
    while let Some(row) = rows.next()? {
        let sequence = row.get::<_, i64>(0)? as u64;
        let time_ms = row.get::<_, i64>(1)? as u64;
        let command: Command = codec::decode_command(row.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?)?;
        if sequence != last_sequence + 1 {
            return Err(StoreError::Inconsistent(format!(
                "the journal jumps from {last_sequence} to {sequence}"
            )));
        }
        last_sequence = sequence;
        events.clear();
        let authorization = decode_authorization(row.get(3)?)?;
        let claim = authorization.as_ref().and_then(Authorization::claim);
        engine
            .execute_signed(command, claim, time_ms, &mut events)
            .map_err(|rejection| {
                StoreError::Inconsistent(format!(
                    "journaled command {sequence} is refused on replay ({rejection:?}); was the configuration changed?"
                ))
            })?;
        let Some(projector) = history.as_deref_mut() else {
            continue;
        };
        if sequence <= projected {
            // The history holds this command's rows; only the open orders in memory need it.
            projector.remember(&events, authorization)?;
        } else {
            unprojected.push(Projection {
                sequence,
                events: Arc::new(std::mem::take(&mut events)),
                authorization,
            });
            if unprojected.len() == MAX_PROJECTION_BATCH {
                projector.project(&unprojected)?;
                reprojected_commands += unprojected.len();
                unprojected.clear();
            }
        }
    }
    if let Some(projector) = history {
        if projected > last_sequence {
            return Err(StoreError::Inconsistent(format!(
                "the history has reached command {projected} but the journal ends at {last_sequence}: \
                 acknowledged commands are missing from the journal"
            )));
        }
        projector.project(&unprojected)?;
        reprojected_commands += unprojected.len();
    }
    Ok(Replayed {
        engine,
        last_sequence,
        reprojected_commands,
    })
}

/// How far the history tables have been written.
fn projected_sequence(connection: &Connection) -> Result<u64, StoreError> {
    meta_value(connection, "projected_sequence")?
        .parse()
        .map_err(|_| StoreError::Inconsistent("bad projected_sequence".into()))
}

/// An order's last state within one projected batch, and whether the batch placed it.
struct OrderWrite<'batch> {
    record: &'batch OrderRecord,
    placed_with: Option<Authorization>,
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
            let mut insert_trade = transaction
                .prepare_cached("INSERT INTO trades (trade_id, pair, time_ms, record) VALUES (?1, ?2, ?3, ?4)")?;
            let mut insert_transfer = transaction
                .prepare_cached("INSERT INTO transfers (account, kind, time_ms, record) VALUES (?1, ?2, ?3, ?4)")?;
            for event in batch.iter().flat_map(|entry| entry.events.iter()) {
                match event {
                    Event::TradeExecuted(trade) => {
                        insert_trade.execute(params![
                            to_sql_integer(trade.trade_id),
                            trade.pair.0,
                            to_sql_integer(trade.timestamp_ms),
                            codec::encode_trade(trade)
                        ])?;
                    }
                    Event::TransferApplied(transfer) => {
                        insert_transfer.execute(params![
                            transfer.account.as_bytes(),
                            transfer.kind as u8,
                            to_sql_integer(transfer.timestamp_ms),
                            codec::encode_transfer(transfer)
                        ])?;
                    }
                    Event::OrderUpdated(_) | Event::BalanceUpdated { .. } => {}
                }
            }
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
        self.update_open_orders(opened, &closed);
        Ok(())
    }

    /// Sets how many closed orders wait before their id index entries are written, so that a
    /// test sees several runs.
    #[cfg(test)]
    fn set_id_index_run(&mut self, closed_orders: usize) {
        self.id_index_run = closed_orders;
    }

    /// Updates the open orders in memory from a command the history already holds (at start,
    /// up to the mark), writing nothing.
    pub fn remember(&mut self, events: &[Event], authorization: Option<Authorization>) -> Result<(), StoreError> {
        let mut open_orders = self.open_orders.write();
        for event in events {
            let Event::OrderUpdated(record) = event else {
                continue;
            };
            if record.status != OrderStatus::Open {
                open_orders.remove(record.sequence);
            } else if !open_orders.update_record(record) {
                let placed = authorization
                    .filter(|authorization| authorization.order_id == Some(record.terms.order_id))
                    .ok_or_else(|| {
                        StoreError::Inconsistent(format!(
                            "order {} is open but its placement is unknown",
                            record.sequence
                        ))
                    })?;
                open_orders.upsert(StoredOrder {
                    record: record.clone(),
                    nonce: placed.nonce,
                    expiry_ms: placed.expiry_ms,
                    signature: placed.signature,
                });
            }
        }
        Ok(())
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
            let (nonce, expiry_ms, signature) = match (write.placed_with, open_orders.by_sequence(sequence)) {
                (Some(authorization), _) => (authorization.nonce, authorization.expiry_ms, authorization.signature),
                (None, Some(known)) => (known.nonce, known.expiry_ms, known.signature),
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
            };
            match order.record.status {
                OrderStatus::Open => opened.push(order),
                OrderStatus::Filled | OrderStatus::Cancelled => closed.push(order),
            }
        }
        Ok((opened, closed))
    }

    fn update_open_orders(&self, opened: Vec<StoredOrder>, closed: &[StoredOrder]) {
        let mut open_orders = self.open_orders.write();
        for order in closed {
            open_orders.remove(order.record.sequence);
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
                             account_key)
         VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11)",
    )?;
    let mut numbers = Vec::with_capacity(closed.len());
    for order in closed {
        let record = &order.record;
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
        ])?;
        numbers.push(transaction.last_insert_rowid());
    }
    Ok(numbers)
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
                        "SELECT record, nonce, expiry_ms, signature FROM orders WHERE number = ?1",
                        [number],
                        StoredOrderColumns::read,
                    )
                    .optional()?,
                None => connection
                    .query_row(
                        "SELECT record, nonce, expiry_ms, signature FROM orders
                         WHERE number IN (SELECT number FROM order_ids WHERE order_key = ?1) AND order_id = ?2",
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
        if status == OrderStatus::Open {
            return Ok(self.open_orders.read().of_account(account, pair, request));
        }
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, nonce, expiry_ms, signature, sequence FROM orders
                 WHERE account_key = ?8 AND account = ?1 AND status = ?2 AND (?3 IS NULL OR pair = ?3)
                   AND created_ms >= ?4 AND created_ms <= ?5 AND sequence < ?6
                 ORDER BY sequence DESC LIMIT ?7",
            )?;
            let rows = statement.query_map(
                params![
                    account.as_bytes(),
                    status as u8,
                    pair.map(|pair| pair.0),
                    to_sql_integer(request.start_ms),
                    to_sql_integer(request.end_ms),
                    to_sql_integer(request.cursor.unwrap_or(u64::MAX)),
                    to_sql_integer(request.limit as u64 + 1),
                    leading_key(account.as_bytes()),
                ],
                |row| Ok((StoredOrderColumns::read(row)?, row.get::<_, i64>(4)?)),
            )?;
            let mut items = Vec::new();
            for row in rows {
                let (columns, sequence) = row?;
                items.push((columns.decode()?, sequence as u64));
            }
            Ok(page(items, request.limit))
        })
    }

    /// An account's open orders on one pair, oldest first (at most its open-order limit).
    pub fn open_orders_on_pair(&self, account: &Address, pair: PairIndex) -> Vec<StoredOrder> {
        self.open_orders.read().of_account_on_pair(account, pair)
    }

    /// A pair's trades, newest first. The cursor is the trade id.
    pub fn trades(&self, pair: PairIndex, request: PageRequest) -> Result<Page<Trade>, StoreError> {
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, trade_id FROM trades
                 WHERE pair = ?1 AND time_ms >= ?2 AND time_ms <= ?3 AND trade_id < ?4
                 ORDER BY trade_id DESC LIMIT ?5",
            )?;
            let rows = statement.query_map(
                params![
                    pair.0,
                    to_sql_integer(request.start_ms),
                    to_sql_integer(request.end_ms),
                    to_sql_integer(request.cursor.unwrap_or(u64::MAX)),
                    to_sql_integer(request.limit as u64 + 1)
                ],
                |row| Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, i64>(1)?)),
            )?;
            let mut items = Vec::new();
            for row in rows {
                let (record, trade_id) = row?;
                items.push((codec::decode_trade(&record)?, trade_id as u64));
            }
            Ok(page(items, request.limit))
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
        self.with_connection(|connection| {
            let mut statement = connection.prepare_cached(
                "SELECT record, number FROM transfers
                 WHERE account = ?1 AND kind = ?2 AND time_ms >= ?3 AND time_ms <= ?4 AND number < ?5
                 ORDER BY number DESC LIMIT ?6",
            )?;
            let rows = statement.query_map(
                params![
                    account.as_bytes(),
                    kind as u8,
                    to_sql_integer(request.start_ms),
                    to_sql_integer(request.end_ms),
                    to_sql_integer(request.cursor.unwrap_or(u64::MAX)),
                    to_sql_integer(request.limit as u64 + 1)
                ],
                |row| Ok((row.get::<_, Vec<u8>>(0)?, row.get::<_, i64>(1)?)),
            )?;
            let mut items = Vec::new();
            for row in rows {
                let (record, number) = row?;
                items.push((codec::decode_transfer(&record)?, number as u64));
            }
            Ok(page(items, request.limit))
        })
    }
}

/// The columns `record, nonce, expiry_ms, signature` of an order row, as read.
struct StoredOrderColumns {
    record: Vec<u8>,
    nonce: Vec<u8>,
    expiry_ms: i64,
    signature: Vec<u8>,
}

impl StoredOrderColumns {
    fn read(row: &rusqlite::Row<'_>) -> rusqlite::Result<StoredOrderColumns> {
        Ok(StoredOrderColumns {
            record: row.get(0)?,
            nonce: row.get(1)?,
            expiry_ms: row.get(2)?,
            signature: row.get(3)?,
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_store_of_schema_version_2_migrates_and_its_orders_are_rebuilt_in_the_history() {
        let data_dir = tempfile::tempdir().unwrap();
        let path = database_path(data_dir.path(), 1);
        let config = crate::config::Config::embedded_default();
        let engine_config = config.chain(1).unwrap().engine_config(&config.limits);
        let account = Address::from_bytes([0xa1; 20]);
        let deposit = deposit(account, 1, 10u128.pow(12));
        let order = limit_order(account, OrderId::from_bytes([0x0d; 32]), dexd_core::Direction::Buy, 10);
        let record = {
            let mut engine = Engine::new(engine_config.clone()).unwrap();
            let mut events = Vec::new();
            engine.execute(deposit.clone(), 1, &mut events).unwrap();
            events.clear();
            engine.execute(order.clone(), 2, &mut events).unwrap();
            events
                .into_iter()
                .find_map(|event| match event {
                    Event::OrderUpdated(record) => Some(record),
                    _ => None,
                })
                .unwrap()
        };
        {
            // A database as dexd left it at schema version 2: a 16-byte salt, no expiry.
            // The journal holds the commands, the order's with the 113-byte authorization of
            // that version; the history tables share the file.
            let connection = Connection::open(&path).unwrap();
            for migration in &JOURNAL_MIGRATIONS[..2] {
                connection.execute_batch(migration).unwrap();
            }
            connection.pragma_update(None, "user_version", 2).unwrap();
            connection
                .execute("INSERT INTO meta (key, value) VALUES ('chain_id', '1')", [])
                .unwrap();
            let mut legacy_authorization = record.terms.order_id.as_bytes().to_vec();
            legacy_authorization.extend_from_slice(&42u128.to_be_bytes());
            legacy_authorization.extend_from_slice(&[0x1b; 65]);
            for (sequence, command, authorization) in [(1, &deposit, None), (2, &order, Some(legacy_authorization))] {
                connection
                    .execute(
                        "INSERT INTO commands (sequence, time_ms, command, authorization) VALUES (?1, ?1, ?2, ?3)",
                        params![sequence, codec::encode_command(command), authorization],
                    )
                    .unwrap();
            }
            connection
                .execute(
                    "INSERT INTO orders (order_id, account, pair, status, sequence, created_ms, record, salt, signature)
                     VALUES (?1, ?2, 0, ?3, ?4, 2, ?5, ?6, ?7)",
                    params![
                        record.terms.order_id.as_bytes(),
                        record.terms.account.as_bytes(),
                        record.status as u8,
                        to_sql_integer(record.sequence),
                        codec::encode_order(&record),
                        42u128.to_be_bytes(),
                        &[0x1bu8; 65][..],
                    ],
                )
                .unwrap();
        }
        let (writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        let replayed = writer.replay(&engine_config, Some(&mut projector)).unwrap();
        assert_eq!(replayed.reprojected_commands, 2);
        let stored = reader
            .order(&record.terms.order_id)
            .unwrap()
            .expect("the order survives the migration");
        assert_eq!(stored.record, record);
        assert_eq!(stored.nonce[31], 42);
        assert_eq!(stored.expiry_ms, 0);
        let page = reader
            .orders(
                &record.terms.account,
                OrderStatus::Open,
                None,
                PageRequest {
                    limit: 10,
                    cursor: None,
                    start_ms: 0,
                    end_ms: u64::MAX,
                },
            )
            .unwrap();
        assert_eq!(page.items.len(), 1);
        let journal = Connection::open(&path).unwrap();
        let version: usize = journal
            .pragma_query_value(None, "user_version", |row| row.get(0))
            .unwrap();
        assert_eq!(version, JOURNAL_MIGRATIONS.len());
        let history_tables_left: i64 = journal
            .query_row(
                "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('orders', 'trades', 'transfers')",
                [],
                |row| row.get(0),
            )
            .unwrap();
        assert_eq!(history_tables_left, 0, "the history left the journal's file");
    }

    /// A store with `count` journaled deposits of 1 to `count` units, all written to the history.
    fn store_with_deposits(data_dir: &Path, count: u64) -> EngineConfig {
        let config = crate::config::Config::embedded_default();
        let engine_config = config.chain(1).unwrap().engine_config(&config.limits);
        let (mut writer, mut projector, _reader) = open(data_dir, 1, Duration::from_secs(1)).unwrap();
        let entries: Vec<JournalEntry> = (1..=count)
            .map(|sequence| JournalEntry {
                sequence,
                time_ms: sequence,
                command: codec::encode_command(&deposit(Address::from_bytes([0xa1; 20]), 1, u128::from(sequence))),
                authorization: None,
            })
            .collect();
        writer.append(&entries).unwrap();
        let replayed = writer.replay(&engine_config, Some(&mut projector)).unwrap();
        assert_eq!(replayed.reprojected_commands as u64, count);
        engine_config
    }

    fn deposit_amounts(reader: &StoreReader) -> Vec<u128> {
        let request = PageRequest {
            limit: 100,
            cursor: None,
            start_ms: 0,
            end_ms: u64::MAX,
        };
        let page = reader
            .transfers(&Address::from_bytes([0xa1; 20]), TransferKind::Deposit, request)
            .unwrap();
        page.items.iter().map(|transfer| transfer.amount.units()).collect()
    }

    /// Opens the store of [`store_with_deposits`] (3 deposits) whose history was made stale,
    /// and checks that the history starts empty and is rebuilt from the journal, without the
    /// rows [`double_the_transfer_rows`] added; returns the projector for further checks.
    fn assert_the_history_is_rebuilt(data_dir: &Path, engine_config: &EngineConfig, gone: &str) -> Projector {
        let (writer, mut projector, reader) = open(data_dir, 1, Duration::from_secs(1)).unwrap();
        assert_eq!(projector.projected_sequence().unwrap(), 0);
        let replayed = writer.replay(engine_config, Some(&mut projector)).unwrap();
        assert_eq!(replayed.reprojected_commands, 3);
        assert_eq!(deposit_amounts(&reader), vec![3, 2, 1], "{gone}");
        projector
    }

    #[test]
    fn a_history_built_from_another_journal_is_deleted_and_rebuilt() {
        let data_dir = tempfile::tempdir().unwrap();
        let engine_config = store_with_deposits(data_dir.path(), 3);
        let history = Connection::open(history_path(data_dir.path(), 1)).unwrap();
        history
            .execute("UPDATE meta SET value = 'another journal' WHERE key = 'journal_id'", [])
            .unwrap();
        double_the_transfer_rows(&history);
        drop(history);
        assert_the_history_is_rebuilt(data_dir.path(), &engine_config, "the stale rows are gone");
    }

    #[test]
    fn a_history_of_an_older_schema_version_is_deleted_and_rebuilt() {
        let data_dir = tempfile::tempdir().unwrap();
        let engine_config = store_with_deposits(data_dir.path(), 3);
        let history = Connection::open(history_path(data_dir.path(), 1)).unwrap();
        history
            .pragma_update(None, "user_version", HISTORY_SCHEMA_VERSION - 1)
            .unwrap();
        double_the_transfer_rows(&history);
        drop(history);
        let projector = assert_the_history_is_rebuilt(data_dir.path(), &engine_config, "the stale rows are gone");
        assert_eq!(user_version(&projector.connection).unwrap(), HISTORY_SCHEMA_VERSION);
    }

    #[test]
    fn closed_orders_whose_ids_and_accounts_share_their_leading_bytes_are_told_apart() {
        let config = crate::config::Config::embedded_default();
        let mut engine = Engine::new(config.chain(1).unwrap().engine_config(&config.limits)).unwrap();
        let mut second_account = [0xa1; 20];
        second_account[8..].fill(0xb2);
        let accounts = [Address::from_bytes([0xa1; 20]), Address::from_bytes(second_account)];
        let mut second_order_id = [0x0d; 32];
        second_order_id[8..].fill(0x0e);
        let order_ids = [OrderId::from_bytes([0x0d; 32]), OrderId::from_bytes(second_order_id)];
        assert_eq!(leading_key(accounts[0].as_bytes()), leading_key(accounts[1].as_bytes()));
        assert_eq!(
            leading_key(order_ids[0].as_bytes()),
            leading_key(order_ids[1].as_bytes())
        );
        let mut projections = Vec::new();
        for (account, order_id) in accounts.iter().zip(order_ids) {
            let deposit = deposit(*account, 1, 10u128.pow(12));
            let order = limit_order(*account, order_id, dexd_core::Direction::Buy, 10);
            let authorization = venue_signed(order_id, 0x1b);
            let cancel = Command::CancelOrder {
                account: *account,
                order_id,
            };
            for (command, authorization) in [(deposit, None), (order, Some(authorization)), (cancel, None)] {
                let mut events = Vec::new();
                let sequence = projections.len() as u64 + 1;
                engine.execute(command, sequence, &mut events).unwrap();
                projections.push(Projection {
                    sequence,
                    events: std::sync::Arc::new(events),
                    authorization,
                });
            }
        }
        let data_dir = tempfile::tempdir().unwrap();
        let (_writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        projector.project(&projections).unwrap();
        let everything = PageRequest {
            limit: 10,
            cursor: None,
            start_ms: 0,
            end_ms: u64::MAX,
        };
        for (account, order_id) in accounts.iter().zip(order_ids) {
            let stored = reader.order(&order_id).unwrap().expect("the order is stored");
            assert_eq!(stored.record.terms.order_id, order_id);
            assert_eq!(stored.record.terms.account, *account);
            assert_eq!(stored.record.status, OrderStatus::Cancelled);
            assert_eq!(stored.signature, [0x1b; 65], "the placement's signature is kept");
            let listed = reader
                .orders(account, OrderStatus::Cancelled, None, everything)
                .unwrap();
            let listed_ids: Vec<OrderId> = listed.items.iter().map(|order| order.record.terms.order_id).collect();
            assert_eq!(listed_ids, vec![order_id]);
            assert!(reader.open_orders_on_pair(account, PairIndex(0)).is_empty());
        }
    }

    /// Runs `command` through `engine`, journals it and projects it, as the writer and the
    /// projector do.
    fn journal_and_project(
        engine: &mut Engine,
        writer: &mut StoreWriter,
        projector: &mut Projector,
        command: Command,
        authorization: Option<Authorization>,
    ) {
        let sequence = projector.projected_sequence().unwrap() + 1;
        let encoded = codec::encode_command(&command);
        let mut events = Vec::new();
        engine.execute(command, sequence, &mut events).unwrap();
        writer
            .append(&[JournalEntry {
                sequence,
                time_ms: sequence,
                command: encoded,
                authorization,
            }])
            .unwrap();
        projector
            .project(&[Projection {
                sequence,
                events: Arc::new(events),
                authorization,
            }])
            .unwrap();
    }

    /// A deposit of `units` of asset `asset` of the embedded default's first chain.
    fn deposit(account: Address, asset: u16, units: u128) -> Command {
        Command::Deposit(dexd_core::TransferRequest {
            transfer_id: [0; 32],
            account,
            asset: dexd_core::AssetIndex(asset),
            amount: dexd_core::Amount::from_units(units),
        })
    }

    /// A good-till-cancelled limit order on the first pair, at 100,000 ticks.
    fn limit_order(account: Address, order_id: OrderId, direction: dexd_core::Direction, lots: u64) -> Command {
        Command::PlaceOrder(dexd_core::NewOrder {
            order_id,
            client_order_id: None,
            account,
            pair: PairIndex(0),
            order_type: dexd_core::OrderType::Limit,
            direction,
            time_in_force: dexd_core::TimeInForce::GoodTillCancelled,
            post_only: false,
            price: dexd_core::Price::from_ticks(100_000),
            quantity: dexd_core::Quantity::from_lots(lots),
        })
    }

    /// The venue's signature of a placement, every byte of it `signature_byte`.
    fn venue_signed(order_id: OrderId, signature_byte: u8) -> Authorization {
        Authorization {
            order_id: Some(order_id),
            nonce: [0; 32],
            expiry_ms: 0,
            signature: [signature_byte; 65],
            client_signed: false,
        }
    }

    #[test]
    fn an_open_order_lives_in_memory_survives_a_restart_and_is_written_once_when_it_fills() {
        let config = crate::config::Config::embedded_default();
        let engine_config = config.chain(1).unwrap().engine_config(&config.limits);
        let mut engine = Engine::new(engine_config.clone()).unwrap();
        let data_dir = tempfile::tempdir().unwrap();
        let (mut writer, mut projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        let (maker, taker) = (Address::from_bytes([0xa1; 20]), Address::from_bytes([0xb2; 20]));
        let maker_order_id = OrderId::from_bytes([0x0d; 32]);
        // Each placement signed with every byte the first of its id, so a signature tells whose it is.
        let placement = |account: Address, order_id: OrderId, direction, lots| {
            (
                limit_order(account, order_id, direction, lots),
                Some(venue_signed(order_id, order_id.as_bytes()[0])),
            )
        };
        for (account, asset) in [(maker, 0), (taker, 1)] {
            let deposit = deposit(account, asset, 10u128.pow(30));
            journal_and_project(&mut engine, &mut writer, &mut projector, deposit, None);
        }
        let (sell, signed) = placement(maker, maker_order_id, dexd_core::Direction::Sell, 100);
        journal_and_project(&mut engine, &mut writer, &mut projector, sell, signed);
        let (buy, signed) = placement(taker, OrderId::from_bytes([0x0e; 32]), dexd_core::Direction::Buy, 40);
        journal_and_project(&mut engine, &mut writer, &mut projector, buy, signed);
        let history_rows = |data_dir: &Path| -> i64 {
            Connection::open(history_path(data_dir, 1))
                .unwrap()
                .query_row("SELECT COUNT(*) FROM orders", [], |row| row.get(0))
                .unwrap()
        };
        assert_eq!(history_rows(data_dir.path()), 1, "only the filled buy has a row");
        drop((writer, projector));

        // A restart: the history holds every command, so the open order comes back from the
        // journal into memory alone.
        let (mut writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        let replayed = writer.replay(&engine_config, Some(&mut projector)).unwrap();
        assert_eq!(replayed.reprojected_commands, 0);
        let everything = PageRequest {
            limit: 10,
            cursor: None,
            start_ms: 0,
            end_ms: u64::MAX,
        };
        let open = reader.orders(&maker, OrderStatus::Open, None, everything).unwrap();
        assert_eq!(open.items.len(), 1);
        assert_eq!(open.items[0].record.terms.order_id, maker_order_id);
        assert_eq!(open.items[0].record.filled, dexd_core::Quantity::from_lots(40));
        assert_eq!(open.items[0].signature, [0x0d; 65]);
        assert_eq!(reader.open_orders_on_pair(&maker, PairIndex(0)).len(), 1);

        let (buy, signed) = placement(taker, OrderId::from_bytes([0x0f; 32]), dexd_core::Direction::Buy, 60);
        journal_and_project(&mut engine, &mut writer, &mut projector, buy, signed);
        assert!(reader
            .orders(&maker, OrderStatus::Open, None, everything)
            .unwrap()
            .items
            .is_empty());
        let filled = reader
            .order(&maker_order_id)
            .unwrap()
            .expect("the filled order has its row");
        assert_eq!(filled.record.status, OrderStatus::Filled);
        assert_eq!(filled.signature, [0x0d; 65], "the placement's signature, from memory");
        assert_eq!(history_rows(data_dir.path()), 3);
    }

    #[test]
    fn closed_orders_are_found_by_id_before_and_after_their_index_run_and_after_a_restart() {
        let config = crate::config::Config::embedded_default();
        let engine_config = config.chain(1).unwrap().engine_config(&config.limits);
        let mut engine = Engine::new(engine_config.clone()).unwrap();
        let data_dir = tempfile::tempdir().unwrap();
        let (mut writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        projector.set_id_index_run(2);
        let account = Address::from_bytes([0xa1; 20]);
        let deposit = deposit(account, 1, 10u128.pow(30));
        journal_and_project(&mut engine, &mut writer, &mut projector, deposit, None);
        // Pairs of ids that share their first 8 bytes, so every lookup must compare whole ids.
        let order_ids: Vec<OrderId> = (0..5u8)
            .map(|index| {
                let mut id = [index / 2; 32];
                id[31] = index;
                OrderId::from_bytes(id)
            })
            .collect();
        for (closed_so_far, order_id) in order_ids.iter().enumerate() {
            let order = limit_order(account, *order_id, dexd_core::Direction::Buy, 10);
            let authorization = venue_signed(*order_id, 0x1b);
            journal_and_project(&mut engine, &mut writer, &mut projector, order, Some(authorization));
            let cancel = Command::CancelOrder {
                account,
                order_id: *order_id,
            };
            journal_and_project(&mut engine, &mut writer, &mut projector, cancel, None);
            for earlier in &order_ids[..=closed_so_far] {
                let stored = reader.order(earlier).unwrap().expect("a closed order is found by id");
                assert_eq!(stored.record.terms.order_id, *earlier);
                assert_eq!(stored.record.status, OrderStatus::Cancelled);
            }
        }
        let indexed: i64 = projector
            .connection
            .query_row("SELECT COUNT(*) FROM order_ids", [], |row| row.get(0))
            .unwrap();
        assert_eq!(indexed, 4, "two runs of two, the fifth order waits in memory");
        drop((writer, projector, reader));

        let (writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        writer.replay(&engine_config, Some(&mut projector)).unwrap();
        assert_eq!(
            reader.unindexed_ids.read().len(),
            1,
            "the order past the last run, from its row"
        );
        for order_id in &order_ids {
            let stored = reader.order(order_id).unwrap().expect("found after a restart");
            assert_eq!(stored.record.terms.order_id, *order_id);
        }
        assert!(reader.order(&OrderId::from_bytes([9; 32])).unwrap().is_none());
    }

    /// Copies every transfer row of a history once more: rows a rebuild would drop.
    fn double_the_transfer_rows(history: &Connection) {
        history
            .execute("INSERT INTO transfers (account, kind, time_ms, record) SELECT account, kind, time_ms, record FROM transfers", [])
            .unwrap();
    }

    /// Rewrites the history's record of its last boot and clean close, and doubles its deposit
    /// rows: rows a rebuild would drop, so that a test sees whether the history was kept.
    fn pretend_the_history_was(data_dir: &Path, boot_id: &str, closed_cleanly: &str) {
        let history = Connection::open(history_path(data_dir, 1)).unwrap();
        history
            .execute("UPDATE meta SET value = ?1 WHERE key = 'boot_id'", [boot_id])
            .unwrap();
        history
            .execute(
                "UPDATE meta SET value = ?1 WHERE key = 'closed_cleanly'",
                [closed_cleanly],
            )
            .unwrap();
        double_the_transfer_rows(&history);
    }

    #[test]
    fn a_history_written_before_a_restart_of_the_machine_and_not_closed_cleanly_is_rebuilt() {
        let data_dir = tempfile::tempdir().unwrap();
        let engine_config = store_with_deposits(data_dir.path(), 3);
        pretend_the_history_was(data_dir.path(), "an earlier boot", "0");
        assert_the_history_is_rebuilt(data_dir.path(), &engine_config, "the unsynced rows are gone");
    }

    #[test]
    fn a_history_closed_cleanly_is_kept_after_a_restart_of_the_machine() {
        let data_dir = tempfile::tempdir().unwrap();
        store_with_deposits(data_dir.path(), 3);
        let (_writer, projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        projector.close_cleanly().unwrap();
        let history = Connection::open(history_path(data_dir.path(), 1)).unwrap();
        assert_eq!(meta_value(&history, "closed_cleanly").unwrap(), "1");
        drop(history);
        pretend_the_history_was(data_dir.path(), "an earlier boot", "1");
        let (_writer, projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        assert_eq!(projector.projected_sequence().unwrap(), 3);
        assert_eq!(deposit_amounts(&reader), vec![3, 2, 1, 3, 2, 1], "the history was kept");
        let history = Connection::open(history_path(data_dir.path(), 1)).unwrap();
        assert_eq!(
            meta_value(&history, "closed_cleanly").unwrap(),
            "0",
            "an open history is not closed cleanly"
        );
        assert_eq!(
            meta_value(&history, "boot_id").unwrap(),
            current_boot_id().unwrap_or_default()
        );
    }

    #[test]
    fn a_history_not_closed_cleanly_in_this_boot_is_kept() {
        // The process crashed, the machine did not: the operating system has every write.
        let data_dir = tempfile::tempdir().unwrap();
        store_with_deposits(data_dir.path(), 3);
        let boot_id = current_boot_id().expect("this test runs where the boot has an identity");
        pretend_the_history_was(data_dir.path(), &boot_id, "0");
        let (_writer, projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        assert_eq!(projector.projected_sequence().unwrap(), 3);
        assert_eq!(deposit_amounts(&reader), vec![3, 2, 1, 3, 2, 1], "the history was kept");
    }

    #[test]
    fn a_history_ahead_of_its_journal_is_refused() {
        let data_dir = tempfile::tempdir().unwrap();
        let engine_config = store_with_deposits(data_dir.path(), 3);
        Connection::open(history_path(data_dir.path(), 1))
            .unwrap()
            .execute("UPDATE meta SET value = '5' WHERE key = 'projected_sequence'", [])
            .unwrap();
        let (writer, mut projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        let error = writer.replay(&engine_config, Some(&mut projector)).err().unwrap();
        assert!(
            error.to_string().contains("the journal ends at 3"),
            "unexpected error: {error}"
        );
    }

    /// 100 journal entries from `first` on, each with a 200-byte placeholder command.
    fn placeholder_entries(first: u64) -> Vec<JournalEntry> {
        (first..first + 100)
            .map(|sequence| JournalEntry {
                sequence,
                time_ms: sequence,
                command: vec![0; 200],
                authorization: None,
            })
            .collect()
    }

    fn file_bytes(path: &Path) -> u64 {
        std::fs::metadata(path).unwrap().len()
    }

    /// The journal's database file and its WAL.
    fn journal_files(data_dir: &Path) -> (PathBuf, PathBuf) {
        let journal = database_path(data_dir, 1);
        let wal = PathBuf::from(format!("{}-wal", journal.display()));
        (journal, wal)
    }

    #[test]
    fn a_checkpoint_moves_the_journal_into_its_file_and_the_wal_starts_over() {
        let data_dir = tempfile::tempdir().unwrap();
        let (mut writer, _projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        let (journal, wal) = journal_files(data_dir.path());
        // Five commits of 100 commands each, then the same again after the checkpoint.
        for first in (1..=500).step_by(100) {
            writer.append(&placeholder_entries(first)).unwrap();
        }
        let wal_bytes = file_bytes(&wal);
        let journal_bytes = file_bytes(&journal);
        writer.checkpoint().unwrap();
        assert!(
            file_bytes(&journal) > journal_bytes + 500 * 200,
            "the commands reached the file"
        );
        for first in (501..=1_000).step_by(100) {
            writer.append(&placeholder_entries(first)).unwrap();
        }
        assert_eq!(file_bytes(&wal), wal_bytes, "the WAL started over instead of growing");
    }

    #[test]
    fn the_checkpointer_moves_the_bulk_and_the_writer_finishes_so_the_wal_starts_over() {
        let data_dir = tempfile::tempdir().unwrap();
        let (mut writer, _projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        let checkpointer = writer.checkpointer().unwrap();
        let (journal, wal) = journal_files(data_dir.path());
        for first in (1..=500).step_by(100) {
            writer.append(&placeholder_entries(first)).unwrap();
        }
        let wal_bytes = file_bytes(&wal);
        let journal_bytes = file_bytes(&journal);
        checkpointer.checkpoint().unwrap();
        assert!(
            file_bytes(&journal) > journal_bytes + 500 * 200,
            "the checkpointer's own connection moved the commands into the file"
        );
        // Appended while the checkpointer worked: the writer's short checkpoint takes it.
        writer.append(&placeholder_entries(501)).unwrap();
        writer.checkpoint().unwrap();
        for first in (601..=1_000).step_by(100) {
            writer.append(&placeholder_entries(first)).unwrap();
        }
        assert_eq!(file_bytes(&wal), wal_bytes, "the WAL started over instead of growing");
    }

    #[test]
    fn authorizations_round_trip_and_legacy_ones_still_read() {
        for authorization in [
            Authorization {
                order_id: Some(OrderId::from_bytes([1; 32])),
                nonce: [2; 32],
                expiry_ms: 3,
                signature: [4; 65],
                client_signed: true,
            },
            Authorization {
                order_id: None,
                nonce: [5; 32],
                expiry_ms: u64::MAX,
                signature: [6; 65],
                client_signed: true,
            },
        ] {
            let encoded = encode_authorization(&Some(authorization));
            assert_eq!(decode_authorization(encoded).unwrap(), Some(authorization));
        }
        let mut legacy = vec![7u8; 32];
        legacy.extend_from_slice(&42u128.to_be_bytes());
        legacy.extend_from_slice(&[8; 65]);
        let decoded = decode_authorization(Some(legacy)).unwrap().unwrap();
        assert_eq!(decoded.order_id, Some(OrderId::from_bytes([7; 32])));
        assert_eq!(decoded.nonce[31], 42);
        assert!(!decoded.client_signed);
        assert!(decode_authorization(Some(vec![2, 9])).is_err());
    }
}
