//! The SQLite settings and small helpers every file of the store shares: how a connection is
//! opened (WAL, `synchronous = FULL`, page and cache sizes), the `meta` table, schema versions,
//! the chain id a database belongs to, and the store's error type.
//!
//! It knows no table but `meta` and decides nothing about what is stored.

use std::path::{Path, PathBuf};
use std::time::Duration;

use rusqlite::{Connection, OptionalExtension};

use crate::codec::CodecError;

/// The database page size, in bytes: larger pages cost more per random page an update or a read
/// touches, and did not make the durable path faster (BENCHMARKS.md).
pub const STORE_PAGE_BYTES: i64 = 4096;
/// The page cache of each connection, in KiB.
pub const STORE_CACHE_KIBIBYTES: i64 = 64 * 1024;
/// WAL pages between automatic checkpoints of the history (4 MiB). The history is not synced,
/// so a checkpoint only copies pages into its file; a larger WAL spreads the same writes over more of the page cache for the
/// kernel to write back.
pub const WAL_AUTOCHECKPOINT_PAGES: i64 = 1_024;

/// Why the store could not do what was asked.
#[derive(Debug)]
pub enum StoreError {
    /// SQLite refused (disk full, read-only, locked, damaged...).
    Database(rusqlite::Error),
    /// A stored value could not be decoded.
    Codec(CodecError),
    /// The store does not belong to this chain, or its journal does not replay.
    Inconsistent(String),
    /// PostgreSQL could not be reached or refused (the message never carries its URL).
    Postgres(String),
    /// A shared journal refused an append from a writer that no longer leads its chain (another
    /// node's epoch holds the lease, or the journal moved on): nothing of the batch was written.
    Fenced(String),
}

impl std::fmt::Display for StoreError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StoreError::Database(error) => write!(formatter, "database: {error}"),
            StoreError::Codec(error) => write!(formatter, "{error}"),
            StoreError::Inconsistent(message) => formatter.write_str(message),
            StoreError::Postgres(message) => write!(formatter, "PostgreSQL: {message}"),
            StoreError::Fenced(message) => write!(formatter, "not the leader: {message}"),
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
/// Where a chain's journal lives.
pub fn database_path(data_dir: &Path, chain_id: u64) -> PathBuf {
    data_dir.join(format!("chain-{chain_id}.sqlite3"))
}

/// Where a chain's history lives.
pub fn history_path(data_dir: &Path, chain_id: u64) -> PathBuf {
    data_dir.join(format!("chain-{chain_id}-history.sqlite3"))
}
pub(super) fn open_connection(path: &Path, busy_timeout: Duration) -> Result<Connection, StoreError> {
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
pub(super) fn migrate(connection: &mut Connection, migrations: &[&str], chain_id: u64) -> Result<(), StoreError> {
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
pub(super) fn user_version(connection: &Connection) -> Result<usize, StoreError> {
    Ok(connection.pragma_query_value(None, "user_version", |row| row.get(0))?)
}

/// Refuses a database that belongs to another chain.
pub(super) fn check_chain_id(connection: &Connection, chain_id: u64) -> Result<(), StoreError> {
    let stored = meta_value(connection, "chain_id")?;
    if stored != chain_id.to_string() {
        return Err(StoreError::Inconsistent(format!(
            "the store belongs to chain {stored}, not {chain_id}"
        )));
    }
    Ok(())
}

pub(super) fn meta_value(connection: &Connection, key: &str) -> Result<String, StoreError> {
    connection
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| row.get(0))
        .optional()?
        .ok_or_else(|| StoreError::Inconsistent(format!("the store has no {key}")))
}
/// The first 8 bytes of an order id or an address as an integer: the key of the history's order
/// indexes. Two values may share it, so a read also compares the whole value.
pub(super) fn leading_key(bytes: &[u8]) -> i64 {
    let mut leading = [0u8; 8];
    let length = bytes.len().min(leading.len());
    leading[..length].copy_from_slice(&bytes[..length]);
    i64::from_be_bytes(leading)
}
pub(super) fn to_sql_integer(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}
