//! The PostgreSQL tables, one migration per version; `dexd_schema` records how many have run.
//!
//! - `dexd_chains`: each chain's journal identity, the custody its money is bound to, and the
//!   fingerprint of the configuration file's chain configuration as last journaled.
//! - `dexd_leases`: each chain's leader, its epoch and when its lease ends (database time).
//! - `dexd_journal`: every journaled command of every chain, keyed by (chain, sequence), with
//!   the epoch of the leader that appended it.
//! - `dexd_nodes`: each node's URL and when it last said it was alive (database time).
//! - `dexd_snapshots`: the newest snapshot files of each chain, shared by the nodes.

use super::{postgres_error, StoreError};

/// The advisory lock key under which migrations run ("dexd" in ASCII).
const MIGRATION_LOCK_KEY: i64 = 0x6465_7864;

/// The schema, one migration per version.
const MIGRATIONS: &[&str] = &[
    "CREATE TABLE dexd_chains (
         chain_id BIGINT PRIMARY KEY,
         journal_id TEXT NOT NULL,
         custody TEXT);
     CREATE TABLE dexd_leases (
         chain_id BIGINT PRIMARY KEY,
         holder TEXT NOT NULL,
         epoch BIGINT NOT NULL,
         expires_at TIMESTAMPTZ NOT NULL);
     CREATE TABLE dexd_journal (
         chain_id BIGINT NOT NULL,
         sequence BIGINT NOT NULL,
         epoch BIGINT NOT NULL,
         time_ms BIGINT NOT NULL,
         command BYTEA NOT NULL,
         authorization_record BYTEA,
         PRIMARY KEY (chain_id, sequence));",
    "CREATE TABLE dexd_nodes (
         node_id TEXT PRIMARY KEY,
         url TEXT NOT NULL,
         heartbeat_at TIMESTAMPTZ NOT NULL);",
    "CREATE TABLE dexd_snapshots (
         chain_id BIGINT NOT NULL,
         sequence BIGINT NOT NULL,
         file BYTEA NOT NULL,
         written_at TIMESTAMPTZ NOT NULL DEFAULT clock_timestamp(),
         PRIMARY KEY (chain_id, sequence));",
    "ALTER TABLE dexd_chains ADD COLUMN file_configuration TEXT;",
];

/// Runs the migrations the database lacks, in one transaction under an advisory lock.
pub fn migrate(client: &mut postgres::Client) -> Result<(), StoreError> {
    let mut transaction = client.transaction().map_err(postgres_error)?;
    transaction
        .execute("SELECT pg_advisory_xact_lock($1)", &[&MIGRATION_LOCK_KEY])
        .map_err(postgres_error)?;
    transaction
        .batch_execute("CREATE TABLE IF NOT EXISTS dexd_schema (version INTEGER NOT NULL)")
        .map_err(postgres_error)?;
    let version: Option<i32> = transaction
        .query_opt("SELECT version FROM dexd_schema", &[])
        .map_err(postgres_error)?
        .map(|row| row.get(0));
    let ran = match version {
        Some(version) => usize::try_from(version).unwrap_or(usize::MAX),
        None => {
            transaction
                .execute("INSERT INTO dexd_schema (version) VALUES (0)", &[])
                .map_err(postgres_error)?;
            0
        }
    };
    if ran > MIGRATIONS.len() {
        return Err(StoreError::Inconsistent(format!(
            "the PostgreSQL schema is at version {ran}, newer than this dexd knows ({}): run a newer dexd",
            MIGRATIONS.len()
        )));
    }
    for migration in &MIGRATIONS[ran..] {
        transaction.batch_execute(migration).map_err(postgres_error)?;
    }
    let version = i32::try_from(MIGRATIONS.len()).expect("a handful of migrations");
    transaction
        .execute("UPDATE dexd_schema SET version = $1", &[&version])
        .map_err(postgres_error)?;
    transaction.commit().map_err(postgres_error)
}
