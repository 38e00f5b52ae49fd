//! Where a chain's journal is kept, chosen by the configuration: the embedded SQLite journal in
//! the data directory (the default, for one node), or PostgreSQL, which several nodes share and
//! where the node must hold the chain's lease to append. Either way the history, which is
//! derived data, stays in the node's own data directory, rebuilt from the journal when missing.
//!
//! This module opens stores; it does not run them (the venue does) and does not decide which
//! node should lead which chain beyond taking a free lease.

use std::path::Path;
use std::time::{Duration, Instant};

use super::database::StoreError;
use super::journal::JournalReader;
use super::journal_interface::{Journal, JournalRead};
use super::postgres::{self, lease, LeaseKeeper, PostgresJournal};
use super::{open, open_history_of, Projector, StoreReader};

/// Where the journals are.
#[derive(Clone, PartialEq, Eq)]
pub enum JournalBackend {
    /// The embedded SQLite journal, `chain-<id>.sqlite3` in the data directory.
    Sqlite,
    /// PostgreSQL, shared by the nodes of a cluster.
    Postgres(PostgresBackend),
}

/// The PostgreSQL journal's settings.
#[derive(Clone, PartialEq, Eq)]
pub struct PostgresBackend {
    /// The connection URL (it may carry a password: never logged or shown).
    pub url: String,
    /// This node's name in the leases.
    pub node_id: String,
    /// How long a lease lasts unrenewed.
    pub lease_ms: u64,
}

impl std::fmt::Debug for JournalBackend {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            JournalBackend::Sqlite => formatter.write_str("Sqlite"),
            JournalBackend::Postgres(backend) => formatter
                .debug_struct("Postgres")
                .field("url", &"<redacted>")
                .field("node_id", &backend.node_id)
                .field("lease_ms", &backend.lease_ms)
                .finish(),
        }
    }
}

/// A chain's store, opened: its journal for the writer, its history, and on PostgreSQL the
/// thread that keeps the chain's lease.
pub struct OpenedStore {
    /// The journal, for the writer.
    pub journal: Box<dyn Journal>,
    /// The history's writer.
    pub projector: Projector,
    /// The history's readers.
    pub reader: StoreReader,
    /// On PostgreSQL, the lease this node leads the chain under.
    pub lease: Option<LeaseKeeper>,
}

/// How often a node waiting for a chain's lease tries again, and how often it says so.
const LEASE_WAIT_POLL: Duration = Duration::from_millis(200);
const LEASE_WAIT_LOG_INTERVAL: Duration = Duration::from_secs(10);

impl JournalBackend {
    /// Opens a chain's store. On PostgreSQL this waits until the chain's lease is free (its
    /// holder gone for a lease's length) and takes it under a new epoch.
    pub fn open_store(
        &self,
        data_dir: &Path,
        chain_id: u64,
        busy_timeout: Duration,
    ) -> Result<OpenedStore, StoreError> {
        match self {
            JournalBackend::Sqlite => {
                let (mut writer, projector, reader) = open(data_dir, chain_id, busy_timeout)?;
                writer.checkpoint_in_background(chain_id)?;
                Ok(OpenedStore {
                    journal: Box::new(writer),
                    projector,
                    reader,
                    lease: None,
                })
            }
            JournalBackend::Postgres(backend) => {
                let mut client = postgres::connect(&backend.url)?;
                let held = wait_for_lease(&mut client, backend, chain_id)?;
                let keeper = LeaseKeeper::start(postgres::connect(&backend.url)?, held.clone(), backend.lease_ms);
                let mut journal = PostgresJournal::open(client, chain_id)?;
                journal.append_under(held.epoch);
                let journal_id = journal.journal_id()?;
                let (projector, reader) = open_history_of(data_dir, chain_id, &journal_id, busy_timeout)?;
                tracing::info!(chain_id, epoch = held.epoch, node = %backend.node_id, "leading the chain");
                Ok(OpenedStore {
                    journal: Box::new(journal),
                    projector,
                    reader,
                    lease: Some(keeper),
                })
            }
        }
    }

    /// A reader of a chain's journal of its own, beside the writer (a snapshot's build).
    pub fn open_reader(&self, data_dir: &Path, chain_id: u64) -> Result<Box<dyn JournalRead>, StoreError> {
        match self {
            JournalBackend::Sqlite => Ok(Box::new(JournalReader::open(data_dir, chain_id)?)),
            JournalBackend::Postgres(backend) => Ok(Box::new(PostgresJournal::open(
                postgres::connect(&backend.url)?,
                chain_id,
            )?)),
        }
    }
}

fn wait_for_lease(
    client: &mut ::postgres::Client,
    backend: &PostgresBackend,
    chain_id: u64,
) -> Result<lease::Lease, StoreError> {
    let mut said_at: Option<Instant> = None;
    loop {
        if let Some(held) = lease::take(client, chain_id, &backend.node_id, backend.lease_ms)? {
            return Ok(held);
        }
        if said_at.is_none_or(|said_at| said_at.elapsed() >= LEASE_WAIT_LOG_INTERVAL) {
            let holder = lease::holder(client, chain_id)?;
            tracing::info!(chain_id, ?holder, "waiting for the chain's lease, held by another node");
            said_at = Some(Instant::now());
        }
        std::thread::sleep(LEASE_WAIT_POLL);
    }
}
