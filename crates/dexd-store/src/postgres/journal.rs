//! [`PostgresJournal`]: a chain's journal in PostgreSQL, shared by every node of a cluster.
//!
//! Every append is one statement, so one transaction: it inserts the whole batch from arrays
//! (`unnest`) only if, as it runs, the chain's lease still carries the appender's epoch (the
//! lease row is locked `FOR SHARE`, so a takeover waits for the append, and an append after a
//! takeover sees the new epoch) and the journal still ends just before the batch. Otherwise it
//! inserts nothing, and the appender learns why ([`StoreError::Fenced`]). Durability is the
//! database's: a commit returns once PostgreSQL has it on disk, and on the synchronous standby
//! where one is configured.
//!
//! It does not take or renew the lease ([`super::lease`] does); it appends under the epoch it
//! was given.

use postgres::Statement;

use super::{from_bigint, postgres_error, to_bigint, Connection, StoreError};
use crate::codec;
use crate::journal::REPLAY_READ_CHUNK_COMMANDS;
use crate::journal_interface::{ApplyCommand, CommandRange, Journal, JournalRead, JournaledCommand};
use crate::records::JournalEntry;

/// Appends a batch under an epoch, after an expected last sequence; see the module's comment.
const APPEND: &str = "WITH lease AS (
         SELECT 1 FROM dexd_leases WHERE chain_id = $1 AND epoch = $2 FOR SHARE),
     journal_end AS (
         SELECT COALESCE(MAX(sequence), 0) AS sequence FROM dexd_journal WHERE chain_id = $1)
     INSERT INTO dexd_journal (chain_id, sequence, epoch, time_ms, command, authorization_record)
     SELECT $1, entry.sequence, $2, entry.time_ms, entry.command, entry.authorization_record
     FROM unnest($3::BIGINT[], $4::BIGINT[], $5::BYTEA[], $6::BYTEA[])
         AS entry (sequence, time_ms, command, authorization_record)
     WHERE EXISTS (SELECT 1 FROM lease) AND (SELECT sequence FROM journal_end) = $7";

const READ: &str = "SELECT sequence, time_ms, command, authorization_record FROM dexd_journal
     WHERE chain_id = $1 AND sequence > $2 AND sequence <= $3 ORDER BY sequence LIMIT $4";

/// One row's authorization: the row that holds the hashes of a batch a read starts inside.
const READ_AUTHORIZATION: &str = "SELECT authorization_record FROM dexd_journal WHERE chain_id = $1 AND sequence = $2";

/// A chain's journal in PostgreSQL, appending under one leader's epoch.
pub struct PostgresJournal {
    connection: Connection,
    chain_id: i64,
    /// The epoch appends are made under; `None` until the node leads the chain.
    epoch: Option<u64>,
    /// The append and the read, prepared on the connection of that generation.
    prepared: Option<Prepared>,
}

/// Statements prepared on one connection.
struct Prepared {
    generation: u64,
    append: Statement,
    read: Statement,
}

impl PostgresJournal {
    /// Opens (creating when needed) the journal of `chain_id` on `connection`. It appends
    /// nothing until given an epoch ([`Journal::lead_under`]).
    pub fn open(mut connection: Connection, chain_id: u64) -> Result<PostgresJournal, StoreError> {
        let chain = to_bigint(chain_id);
        connection
            .client()?
            .execute(
                "INSERT INTO dexd_chains (chain_id, journal_id)
                 VALUES ($1, replace(gen_random_uuid()::text, '-', '')) ON CONFLICT (chain_id) DO NOTHING",
                &[&chain],
            )
            .map_err(postgres_error)?;
        Ok(PostgresJournal {
            connection,
            chain_id: chain,
            epoch: None,
            prepared: None,
        })
    }

    /// The client, connected again if the connection was lost, with the statements prepared
    /// on it.
    fn session(&mut self) -> Result<(&mut postgres::Client, &Prepared), StoreError> {
        self.connection.client()?;
        let generation = self.connection.generation();
        if self
            .prepared
            .as_ref()
            .is_none_or(|prepared| prepared.generation != generation)
        {
            let client = self.connection.client()?;
            self.prepared = Some(Prepared {
                generation,
                append: client.prepare(APPEND).map_err(postgres_error)?,
                read: client.prepare(READ).map_err(postgres_error)?,
            });
        }
        let client = self.connection.client()?;
        Ok((client, self.prepared.as_ref().expect("invariant: prepared just above")))
    }

    /// The epoch appends are made under, if any.
    pub fn epoch(&self) -> Option<u64> {
        self.epoch
    }

    /// Why an append inserted nothing: another epoch leads, or the journal has moved on.
    fn refusal(&mut self, epoch: u64, expected_end: u64) -> StoreError {
        let lease = match self.connection.client().and_then(|client| {
            client
                .query_opt(
                    "SELECT holder, epoch FROM dexd_leases WHERE chain_id = $1",
                    &[&self.chain_id],
                )
                .map_err(postgres_error)
        }) {
            Ok(lease) => lease,
            Err(error) => {
                return StoreError::Postgres(format!("an append was refused and its reason cannot be read: {error}"))
            }
        };
        let chain = self.chain_id;
        match lease {
            None => StoreError::Fenced(format!("chain {chain} has no leader")),
            Some(row) if row.get::<_, i64>(1) != to_bigint(epoch) => StoreError::Fenced(format!(
                "chain {chain} is led by {} under epoch {}, not under this node's epoch {epoch}",
                row.get::<_, String>(0),
                row.get::<_, i64>(1)
            )),
            Some(_) => match self.last_sequence() {
                Ok(end) => StoreError::Fenced(format!(
                    "chain {chain}'s journal ends at {end}, where this writer expected {expected_end}"
                )),
                Err(error) => error,
            },
        }
    }
}

impl Journal for PostgresJournal {
    fn lead_under(&mut self, epoch: Option<u64>) {
        self.epoch = epoch;
    }

    fn append(&mut self, batch: &[JournalEntry]) -> Result<(), StoreError> {
        let Some(first) = batch.first() else {
            return Ok(());
        };
        let Some(epoch) = self.epoch else {
            return Err(StoreError::Fenced(format!(
                "this node does not lead chain {}",
                self.chain_id
            )));
        };
        let expected_end = first.sequence - 1;
        let mut sequences = Vec::with_capacity(batch.len());
        let mut times_ms = Vec::with_capacity(batch.len());
        let mut commands = Vec::with_capacity(batch.len());
        let mut authorizations = Vec::with_capacity(batch.len());
        // A batch's hashes are written once per append (`codec::BatchHolders`).
        let mut holders = codec::BatchHolders::default();
        for (offset, entry) in batch.iter().enumerate() {
            assert_eq!(
                entry.sequence,
                first.sequence + offset as u64,
                "a journal batch is contiguous"
            );
            sequences.push(to_bigint(entry.sequence));
            times_ms.push(to_bigint(entry.time_ms));
            commands.push(entry.command.as_slice());
            let holder = holders.holder_for(entry.sequence, &entry.authorization);
            authorizations.push(codec::encode_authorization_referring(&entry.authorization, holder));
        }
        let chain_id = self.chain_id;
        let (client, prepared) = self.session()?;
        let inserted = client
            .execute(
                &prepared.append,
                &[
                    &chain_id,
                    &to_bigint(epoch),
                    &sequences,
                    &times_ms,
                    &commands,
                    &authorizations,
                    &to_bigint(expected_end),
                ],
            )
            .map_err(postgres_error)?;
        match inserted {
            0 => Err(self.refusal(epoch, expected_end)),
            count if count == batch.len() as u64 => Ok(()),
            count => Err(StoreError::Inconsistent(format!(
                "an append of {} commands inserted {count}",
                batch.len()
            ))),
        }
    }

    fn bind_custody(&mut self, custody: &str) -> Result<(), StoreError> {
        let client = self.connection.client()?;
        client
            .execute(
                "UPDATE dexd_chains SET custody = $2 WHERE chain_id = $1 AND custody IS NULL",
                &[&self.chain_id, &custody],
            )
            .map_err(postgres_error)?;
        let row = client
            .query_one("SELECT custody FROM dexd_chains WHERE chain_id = $1", &[&self.chain_id])
            .map_err(postgres_error)?;
        let bound: String = row.get(0);
        if bound == custody {
            return Ok(());
        }
        Err(StoreError::Inconsistent(format!(
            "chain {}'s journal in PostgreSQL belongs to {bound}, and the configuration names {custody}: use the \
             database of this custody, or the configuration of that one",
            self.chain_id
        )))
    }

    fn file_configuration(&mut self) -> Result<Option<String>, StoreError> {
        let row = self
            .connection
            .client()?
            .query_one(
                "SELECT file_configuration FROM dexd_chains WHERE chain_id = $1",
                &[&self.chain_id],
            )
            .map_err(postgres_error)?;
        Ok(row.get(0))
    }

    fn remember_file_configuration(&mut self, fingerprint: &str) -> Result<(), StoreError> {
        self.connection
            .client()?
            .execute(
                "UPDATE dexd_chains SET file_configuration = $2 WHERE chain_id = $1",
                &[&self.chain_id, &fingerprint],
            )
            .map_err(postgres_error)?;
        Ok(())
    }
}

impl JournalRead for PostgresJournal {
    fn last_sequence(&mut self) -> Result<u64, StoreError> {
        let row = self
            .connection
            .client()?
            .query_one(
                "SELECT COALESCE(MAX(sequence), 0) FROM dexd_journal WHERE chain_id = $1",
                &[&self.chain_id],
            )
            .map_err(postgres_error)?;
        from_bigint(row.get(0))
    }

    fn journal_id(&mut self) -> Result<String, StoreError> {
        let row = self
            .connection
            .client()?
            .query_one(
                "SELECT journal_id FROM dexd_chains WHERE chain_id = $1",
                &[&self.chain_id],
            )
            .map_err(postgres_error)?;
        Ok(row.get(0))
    }

    fn for_each_command(&mut self, range: CommandRange, apply: ApplyCommand) -> Result<u64, StoreError> {
        let CommandRange {
            after,
            through,
            keep_going,
        } = range;
        let through = through.min(i64::MAX as u64);
        let mut batches_seen = codec::BatchHashesSeen::default();
        let mut last_sequence = after;
        loop {
            let chain_id = self.chain_id;
            let (client, prepared) = self.session()?;
            let rows = client
                .query(
                    &prepared.read,
                    &[
                        &chain_id,
                        &to_bigint(last_sequence),
                        &to_bigint(through),
                        &to_bigint(REPLAY_READ_CHUNK_COMMANDS),
                    ],
                )
                .map_err(postgres_error)?;
            let read = rows.len() as u64;
            for row in rows {
                let sequence = from_bigint(row.get(0))?;
                if sequence != last_sequence + 1 {
                    return Err(StoreError::Inconsistent(format!(
                        "the journal jumps from {last_sequence} to {sequence}"
                    )));
                }
                last_sequence = sequence;
                let authorization = batches_seen.read(sequence, row.get(3), |holder| {
                    client
                        .query_opt(READ_AUTHORIZATION, &[&chain_id, &to_bigint(holder)])
                        .map_err(postgres_error)
                        .map(|row| row.and_then(|row| row.get::<_, Option<Vec<u8>>>(0)))
                })?;
                apply(JournaledCommand {
                    sequence,
                    time_ms: from_bigint(row.get(1))?,
                    command: codec::decode_command(row.get::<_, &[u8]>(2))?,
                    authorization,
                })?;
            }
            if read < REPLAY_READ_CHUNK_COMMANDS || last_sequence >= through || !keep_going() {
                return Ok(last_sequence);
            }
        }
    }
}
