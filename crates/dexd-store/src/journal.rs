//! The journal of a chain (`chain-<id>.sqlite3`): every accepted command with the time it ran at
//! and the signature that authorised it, appended in one synced transaction per batch, from
//! which the engine is rebuilt exactly by replay; its migrations, and its checkpoints.
//!
//! Only the journal is on the path to an acknowledgment. It does not write the history (the
//! replay hands what the history lacks to the [`Projector`]).

use std::path::PathBuf;
use std::time::Duration;

use dexd_core::{Engine, EngineConfig};
use rusqlite::{params, Connection, OptionalExtension, TransactionBehavior};

use super::checkpoints::{checkpoint_passive, CheckpointSchedule, CheckpointStep, JournalCheckpointer};
use super::database::{meta_value, open_connection, to_sql_integer, StoreError};
use super::journal_interface::{self, ApplyCommand, CommandRange, Journal, JournalRead, JournaledCommand, Replayed};
use super::projector::Projector;
use super::records::JournalEntry;
use crate::codec;

/// The journal's schema, one migration per version; `PRAGMA user_version` records how many have
/// run. Versions 1 to 4 kept the history tables in the same file.
pub(super) const JOURNAL_MIGRATIONS: &[&str] = &[
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
/// The journal of a chain's store, owned by the chain's writer thread.
pub struct StoreWriter {
    pub(super) connection: Connection,
    /// The last sequence appended (or found at [`StoreWriter::checkpoint_in_background`]).
    pub(super) journaled_through: u64,
    /// When the WAL is copied into the file; `None` until
    /// [`StoreWriter::checkpoint_in_background`], and then only explicit checkpoints run.
    pub(super) checkpoints: Option<CheckpointSchedule>,
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

    /// From now on, checkpoints the journal between batches every
    /// [`crate::JOURNAL_CHECKPOINT_INTERVAL_COMMANDS`], the bulk of each on a thread of its own
    /// (see [`crate::checkpoints`]).
    pub fn checkpoint_in_background(&mut self, chain_id: u64) -> Result<(), StoreError> {
        self.journaled_through = self.last_sequence()?;
        let checkpointer = self.checkpointer()?;
        self.checkpoints = Some(CheckpointSchedule::with_thread(
            chain_id,
            self.journaled_through,
            checkpointer,
        ));
        Ok(())
    }

    /// Appends a batch to the journal in one transaction; when this returns `Ok`, the batch is
    /// on disk.
    pub fn append(&mut self, batch: &[JournalEntry]) -> Result<(), StoreError> {
        // Faults for the tests above this crate: a stall (a slow disk), then a failed append.
        fail::fail_point!("journal-append-stall");
        fail::fail_point!("journal-append", |_| Err(StoreError::Inconsistent(
            "an injected journal fault".into()
        )));
        let transaction = self
            .connection
            .transaction_with_behavior(TransactionBehavior::Immediate)?;
        {
            let mut insert = transaction.prepare_cached(
                "INSERT INTO commands (sequence, time_ms, command, authorization) VALUES (?1, ?2, ?3, ?4)",
            )?;
            // A batch's hashes are written once per append (`codec::BatchHolders`).
            let mut holders = codec::BatchHolders::default();
            for entry in batch {
                let holder = holders.holder_for(entry.sequence, &entry.authorization);
                insert.execute(params![
                    to_sql_integer(entry.sequence),
                    to_sql_integer(entry.time_ms),
                    entry.command,
                    codec::encode_authorization_referring(&entry.authorization, holder)
                ])?;
            }
        }
        transaction.commit()?;
        if let Some(last) = batch.last() {
            self.journaled_through = last.sequence;
        }
        Ok(())
    }

    /// Rebuilds the engine by replaying the journal at the recorded times. With a `history`, the
    /// commands it does not hold yet are written to it on the way, in batches of
    /// `MAX_PROJECTION_BATCH`, so memory does not grow with what is missing.
    pub fn replay(&mut self, config: &EngineConfig, history: Option<&mut Projector>) -> Result<Replayed, StoreError> {
        journal_interface::replay(self, config, history)
    }

    /// Like [`StoreWriter::replay`], from an engine in the state of command `after` (restored
    /// from a snapshot): only the journal after it is replayed. The history must hold at least
    /// the commands up to `after`, with the open orders of `after` already in its memory.
    pub fn replay_after(
        &mut self,
        engine: Engine,
        after: u64,
        history: Option<&mut Projector>,
    ) -> Result<Replayed, StoreError> {
        journal_interface::replay_after(self, engine, after, history)
    }

    /// The journal's identity (a random hex string given when it was created).
    pub fn journal_id(&self) -> Result<String, StoreError> {
        meta_value(&self.connection, "journal_id")
    }

    /// The sequence of the last journaled command (0 when empty).
    pub fn last_sequence(&self) -> Result<u64, StoreError> {
        last_sequence(&self.connection)
    }

    /// Binds the journal to what holds its money (`custody`: the custody mode, and on a vault
    /// chain the chain id and the vault's address), or checks the binding it already has. A
    /// journal without one (made before bindings existed) takes `custody` now. A journal made
    /// for other custody is refused with both in the message: its balances are owed by another
    /// vault, or were never backed by one.
    pub fn bind_custody(&self, custody: &str) -> Result<(), StoreError> {
        let bound: Option<String> = self
            .connection
            .query_row("SELECT value FROM meta WHERE key = 'custody'", [], |row| row.get(0))
            .optional()?;
        match bound {
            Some(bound) if bound == custody => Ok(()),
            Some(bound) => Err(StoreError::Inconsistent(format!(
                "this data directory's journal belongs to {bound}, and the configuration names {custody}: start \
                 with the data directory of this custody, or the configuration of that one"
            ))),
            None => {
                self.connection
                    .execute("INSERT INTO meta (key, value) VALUES ('custody', ?1)", [custody])?;
                Ok(())
            }
        }
    }
}

impl JournalRead for StoreWriter {
    fn last_sequence(&mut self) -> Result<u64, StoreError> {
        StoreWriter::last_sequence(self)
    }

    fn journal_id(&mut self) -> Result<String, StoreError> {
        StoreWriter::journal_id(self)
    }

    fn for_each_command(&mut self, range: CommandRange, apply: ApplyCommand) -> Result<u64, StoreError> {
        for_each_command(&self.connection, range, apply)
    }
}

impl Journal for StoreWriter {
    fn append(&mut self, batch: &[JournalEntry]) -> Result<(), StoreError> {
        StoreWriter::append(self, batch)
    }

    fn bind_custody(&mut self, custody: &str) -> Result<(), StoreError> {
        StoreWriter::bind_custody(self, custody)
    }
    fn file_configuration(&mut self) -> Result<Option<String>, StoreError> {
        Ok(self
            .connection
            .query_row("SELECT value FROM meta WHERE key = 'file_configuration'", [], |row| {
                row.get(0)
            })
            .optional()?)
    }
    fn remember_file_configuration(&mut self, fingerprint: &str) -> Result<(), StoreError> {
        self.connection.execute(
            "INSERT INTO meta (key, value) VALUES ('file_configuration', ?1) \
             ON CONFLICT (key) DO UPDATE SET value = excluded.value",
            [fingerprint],
        )?;
        Ok(())
    }
    fn between_batches(&mut self) -> Result<(), StoreError> {
        let journaled_through = self.journaled_through;
        let Some(schedule) = self.checkpoints.as_mut() else {
            return Ok(());
        };
        if let CheckpointStep::Finish = schedule.step(journaled_through) {
            let started = std::time::Instant::now();
            let outcome = checkpoint_passive(&self.connection);
            if let Some(schedule) = self.checkpoints.as_mut() {
                schedule.finished(journaled_through, started, outcome);
            }
        }
        Ok(())
    }
}

/// How many commands a replay reads in one read transaction. Reading the journal in chunks
/// keeps a long replay beside a running writer from pinning the WAL (a checkpoint cannot go past
/// a reader), and bounds the memory of one read.
pub const REPLAY_READ_CHUNK_COMMANDS: u64 = 65_536;

/// The sequence of the last journaled command (0 when empty).
pub(super) fn last_sequence(connection: &Connection) -> Result<u64, StoreError> {
    Ok(
        connection.query_row("SELECT COALESCE(MAX(sequence), 0) FROM commands", [], |row| {
            row.get::<_, i64>(0)
        })? as u64,
    )
}

/// Calls `apply` with every journaled command after `after`, up to `through` included, in
/// order, reading [`REPLAY_READ_CHUNK_COMMANDS`] at a time; stops early when `keep_going` says
/// so between chunks. Refuses a journal with a gap. Returns the last sequence read.
pub(super) fn for_each_command(
    connection: &Connection,
    range: CommandRange,
    apply: ApplyCommand,
) -> Result<u64, StoreError> {
    let CommandRange {
        after,
        through,
        keep_going,
    } = range;
    let mut statement = connection.prepare_cached(
        "SELECT sequence, time_ms, command, authorization FROM commands
         WHERE sequence > ?1 AND sequence <= ?2 ORDER BY sequence LIMIT ?3",
    )?;
    let mut holder_row = connection.prepare_cached("SELECT authorization FROM commands WHERE sequence = ?1")?;
    let mut batches_seen = codec::BatchHashesSeen::default();
    let mut last_sequence = after;
    loop {
        let mut rows = statement.query(params![
            to_sql_integer(last_sequence),
            to_sql_integer(through),
            to_sql_integer(REPLAY_READ_CHUNK_COMMANDS)
        ])?;
        let mut read = 0;
        while let Some(row) = rows.next()? {
            let sequence = row.get::<_, i64>(0)? as u64;
            if sequence != last_sequence + 1 {
                return Err(StoreError::Inconsistent(format!(
                    "the journal jumps from {last_sequence} to {sequence}"
                )));
            }
            let time_ms = row.get::<_, i64>(1)? as u64;
            let command = codec::decode_command(row.get_ref(2)?.as_blob().map_err(rusqlite::Error::from)?)?;
            let authorization = batches_seen.read(sequence, row.get(3)?, |holder| {
                holder_row
                    .query_row([to_sql_integer(holder)], |row| row.get::<_, Option<Vec<u8>>>(0))
                    .optional()
                    .map(Option::flatten)
                    .map_err(StoreError::from)
            })?;
            last_sequence = sequence;
            read += 1;
            apply(JournaledCommand {
                sequence,
                time_ms,
                command,
                authorization,
            })?;
        }
        if read < REPLAY_READ_CHUNK_COMMANDS || last_sequence >= through || !keep_going() {
            return Ok(last_sequence);
        }
    }
}

/// A read-only connection to a chain's journal, for a replay beside the running writer (the
/// snapshots are built with one).
pub struct JournalReader {
    connection: Connection,
}

impl JournalReader {
    /// Opens the journal of `chain_id` in `data_dir` read-only.
    pub fn open(data_dir: &std::path::Path, chain_id: u64) -> Result<JournalReader, StoreError> {
        let connection = Connection::open_with_flags(
            super::database_path(data_dir, chain_id),
            rusqlite::OpenFlags::SQLITE_OPEN_READ_ONLY | rusqlite::OpenFlags::SQLITE_OPEN_NO_MUTEX,
        )?;
        connection.busy_timeout(Duration::from_secs(5))?;
        Ok(JournalReader { connection })
    }

    /// The journal's identity.
    pub fn journal_id(&self) -> Result<String, StoreError> {
        meta_value(&self.connection, "journal_id")
    }
}

impl JournalRead for JournalReader {
    fn last_sequence(&mut self) -> Result<u64, StoreError> {
        last_sequence(&self.connection)
    }

    fn journal_id(&mut self) -> Result<String, StoreError> {
        JournalReader::journal_id(self)
    }

    fn for_each_command(&mut self, range: CommandRange, apply: ApplyCommand) -> Result<u64, StoreError> {
        for_each_command(&self.connection, range, apply)
    }
}
