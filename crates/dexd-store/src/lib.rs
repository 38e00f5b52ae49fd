//! dexd-store: the journal, the history and the snapshots of each chain, and their encoding.
//!
//! The embedded store keeps two SQLite databases per chain, in the data directory.
//!
//! The journal (`chain-<id>.sqlite3`, `journal.rs`) holds every accepted command with the time it
//! ran at and the signature that authorised it, from which the engine is rebuilt exactly by
//! replay. The history (`chain-<id>-history.sqlite3`, `history.rs`) holds the tables behind the
//! list endpoints (orders with their signatures, trades, transfers), indexed for paging newest
//! first; the [`Projector`] writes it and the [`StoreReader`] reads it.
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
//! Snapshots of a chain's state (`snapshots.rs`, files beside the databases) shorten the start:
//! it restores the newest one and replays only the journal after it.
//! The binary encoding of commands, records and snapshots is in [`codec`]; the wall clock that
//! stamps journaled commands is [`now_ms`]; why a write did not become durable is a
//! [`WriteError`]. This crate does not decide anything (the engine does) and does not know HTTP.

pub mod backend;
pub mod backup;
mod candles;
pub mod checkpoints;
mod clock;
pub mod codec;
mod database;
mod history;
mod journal;
mod journal_interface;
pub mod open_orders;
pub mod postgres;
mod projector;
mod reader;
mod records;
pub mod snapshots;
mod write_error;

#[cfg(test)]
mod batch_references_tests;
#[cfg(test)]
mod batches_tests;
#[cfg(test)]
mod checkpoints_tests;
#[cfg(test)]
mod test_config;
#[cfg(test)]
mod tests;

use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::{Mutex, RwLock};

pub use self::candles::{CandlePage, CandleQuery};
pub use self::checkpoints::JournalCheckpointer;
pub use self::checkpoints::JOURNAL_CHECKPOINT_INTERVAL_COMMANDS;
pub use self::database::{
    database_path, history_path, StoreError, STORE_CACHE_KIBIBYTES, STORE_PAGE_BYTES, WAL_AUTOCHECKPOINT_PAGES,
};
pub use self::history::PROJECTOR_CACHE_KIBIBYTES;
pub use self::journal::{JournalReader, StoreWriter, REPLAY_READ_CHUNK_COMMANDS};
pub use self::journal_interface::{
    empty_engine, follow_journal_entry, replay, replay_after, replay_through, ApplyCommand, CommandRange, Journal,
    JournalRead, JournaledCommand, Replayed,
};
pub use self::projector::{Projector, MAX_PROJECTION_BATCH, ORDER_ID_INDEX_RUN};
pub use self::reader::{StoreReader, MAX_IDLE_READ_CONNECTIONS, MAX_PAGE_LIMIT};
pub use self::records::{Authorization, BatchPlace, Events, JournalEntry, Page, PageRequest, Projection, StoredOrder};

pub use self::clock::now_ms;
pub use self::write_error::WriteError;

use self::database::{meta_value, migrate, open_connection};
use self::history::{open_history, unindexed_order_ids};
use self::journal::JOURNAL_MIGRATIONS;
use self::open_orders::OpenOrders;

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
    let (projector, reader) = open_history_of(data_dir, chain_id, &journal_id, busy_timeout)?;
    let writer = StoreWriter {
        connection,
        journaled_through: 0,
        checkpoints: None,
    };
    Ok((writer, projector, reader))
}

/// Opens (creating it if need be) a chain's journal alone, without a history: for a copy of
/// another venue's journal (an auditor's), which is appended to and replayed, never projected.
pub fn open_journal(data_dir: &Path, chain_id: u64, busy_timeout: Duration) -> Result<StoreWriter, StoreError> {
    std::fs::create_dir_all(data_dir)
        .map_err(|error| StoreError::Inconsistent(format!("cannot create {}: {error}", data_dir.display())))?;
    let mut connection = open_connection(&database_path(data_dir, chain_id), busy_timeout)?;
    migrate(&mut connection, JOURNAL_MIGRATIONS, chain_id)?;
    Ok(StoreWriter {
        connection,
        journaled_through: 0,
        checkpoints: None,
    })
}

/// Opens (creating when needed) a chain's history in the data directory, for the journal
/// `journal_id`: one built from another journal is deleted and rebuilt.
pub fn open_history_of(
    data_dir: &Path,
    chain_id: u64,
    journal_id: &str,
    busy_timeout: Duration,
) -> Result<(Projector, StoreReader), StoreError> {
    let path = history_path(data_dir, chain_id);
    let history_connection = open_history(&path, chain_id, journal_id, busy_timeout)?;
    let open_orders = Arc::new(RwLock::new(OpenOrders::default()));
    let unindexed_ids = Arc::new(RwLock::new(unindexed_order_ids(&history_connection)?));
    let reader = StoreReader {
        path,
        busy_timeout,
        idle: Mutex::new(Vec::new()),
        open_orders: Arc::clone(&open_orders),
        unindexed_ids: Arc::clone(&unindexed_ids),
    };
    let projector = Projector {
        connection: history_connection,
        open_orders,
        unindexed_ids,
        id_index_run: ORDER_ID_INDEX_RUN,
    };
    Ok((projector, reader))
}
