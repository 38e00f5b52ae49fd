//! Where a chain's journal is kept, chosen by the configuration: the embedded SQLite journal in
//! the data directory (the default, for one node), or PostgreSQL, which several nodes share and
//! where the node must hold the chain's lease to append. Either way the history, which is
//! derived data, stays in the node's own data directory, rebuilt from the journal when missing.
//!
//! This module opens stores and says whether the node leads each chain ([`Leadership`]); it does
//! not run them (the venue's writer does, following the journal while another node leads).

use std::path::Path;
use std::time::{Duration, Instant};

use super::database::StoreError;
use super::journal::JournalReader;
use super::journal_interface::{Journal, JournalRead};
use super::postgres::{self, lease, LeaseKeeper, PostgresJournal};
use super::snapshots::{place_snapshot_file, SnapshotError};
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
    /// The URL this node announces in the cluster's directory; `None`: the address it listens
    /// on.
    pub advertised_url: Option<String>,
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
                .field("advertised_url", &backend.advertised_url)
                .finish(),
        }
    }
}

/// A chain's store, opened: its journal for the writer, its history, and whether and how the
/// node may lead the chain.
pub struct OpenedStore {
    /// The journal, for the writer; it appends nothing until the node leads.
    pub journal: Box<dyn Journal>,
    /// The history's writer.
    pub projector: Projector,
    /// The history's readers.
    pub reader: StoreReader,
    /// Whether the node leads the chain, and the way to become its leader.
    pub leadership: Leadership,
}

/// Whether this node leads a chain: always, on the embedded journal; on PostgreSQL while it
/// holds the chain's lease, which it takes when free.
pub enum Leadership {
    /// The journal is this node's alone.
    Always,
    /// The journal is shared: the lease decides.
    Lease(Box<LeaseCandidate>),
}

/// A node's claim on a chain's lease: the connection it takes the lease on, and once taken the
/// thread that keeps it.
pub struct LeaseCandidate {
    connection: postgres::Connection,
    url: String,
    node_id: String,
    lease_ms: u64,
    chain_id: u64,
    keeper: Option<LeaseKeeper>,
    /// When the node last asked for the lease, to ask at most every third of a lease.
    last_attempt: Option<Instant>,
    /// Called when a lease this node held is lost (wakes the writer).
    on_lost: std::sync::Arc<dyn Fn() + Send + Sync>,
}

impl Leadership {
    /// Whether the node leads the chain now, as far as it knows.
    pub fn is_leading(&self) -> bool {
        match self {
            Leadership::Always => true,
            Leadership::Lease(candidate) => candidate.keeper.as_ref().is_some_and(LeaseKeeper::is_leading),
        }
    }

    /// Sets what runs when a lease this node holds is lost (the writer's wake-up).
    pub fn on_lost(&mut self, on_lost: std::sync::Arc<dyn Fn() + Send + Sync>) {
        if let Leadership::Lease(candidate) = self {
            candidate.on_lost = on_lost;
        }
    }

    /// Takes the chain's lease if it is free and the last attempt was a third of a lease ago;
    /// returns the new epoch when this node has just become the leader. The caller catches up
    /// with the journal and then appends under the epoch.
    pub fn try_to_lead(&mut self) -> Result<Option<u64>, StoreError> {
        let Leadership::Lease(candidate) = self else {
            return Ok(None);
        };
        if candidate.keeper.as_ref().is_some_and(LeaseKeeper::is_leading) {
            return Ok(None);
        }
        let period = Duration::from_millis(candidate.lease_ms / 3);
        if candidate.last_attempt.is_some_and(|attempt| attempt.elapsed() < period) {
            return Ok(None);
        }
        candidate.last_attempt = Some(Instant::now());
        // A keeper whose lease was lost is dropped first: it has nothing left to give up.
        candidate.keeper = None;
        if !candidate.may_take_now()? {
            return Ok(None);
        }
        let Some(held) = lease::take(
            candidate.connection.client()?,
            candidate.chain_id,
            &candidate.node_id,
            candidate.lease_ms,
        )?
        else {
            return Ok(None);
        };
        let keeper_connection = postgres::Connection::open(&candidate.url)?;
        let epoch = held.epoch;
        candidate.keeper = Some(LeaseKeeper::start(
            keeper_connection,
            held,
            candidate.lease_ms,
            std::sync::Arc::clone(&candidate.on_lost),
        ));
        Ok(Some(epoch))
    }
}

impl LeaseCandidate {
    /// Whether this node should ask for the lease now: always for a lease never taken (the
    /// first node to ask leads); for a lease that has ended, at once if this node is the chain's
    /// preferred leader (or none is known), otherwise only once it has been free for a whole
    /// lease, in which time the preferred node would have taken it. This spreads the chains
    /// over the nodes; the lease itself is the fence.
    fn may_take_now(&mut self) -> Result<bool, StoreError> {
        let client = self.connection.client()?;
        let Some(holder) = lease::holder(client, self.chain_id)? else {
            return Ok(true);
        };
        if holder.remaining_ms > 0 {
            // Held: only its own holder (restarted) takes it back, under a new epoch.
            return Ok(holder.holder == self.node_id);
        }
        if holder.ended_for_ms >= self.lease_ms {
            return Ok(true);
        }
        let preferred = postgres::directory::preferred_leader(client, self.chain_id, self.lease_ms)?;
        Ok(preferred.is_none_or(|preferred| preferred == self.node_id))
    }
}

impl JournalBackend {
    /// Opens a chain's store. On PostgreSQL the node does not lead yet: its writer asks for the
    /// lease ([`Leadership::try_to_lead`]) and follows the journal until it has it.
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
                    leadership: Leadership::Always,
                })
            }
            JournalBackend::Postgres(backend) => {
                let mut journal = PostgresJournal::open(postgres::Connection::open(&backend.url)?, chain_id)?;
                let journal_id = journal.journal_id()?;
                let (projector, reader) = open_history_of(data_dir, chain_id, &journal_id, busy_timeout)?;
                let candidate = LeaseCandidate {
                    connection: postgres::Connection::open(&backend.url)?,
                    url: backend.url.clone(),
                    node_id: backend.node_id.clone(),
                    lease_ms: backend.lease_ms,
                    chain_id,
                    keeper: None,
                    last_attempt: None,
                    on_lost: std::sync::Arc::new(|| {}),
                };
                Ok(OpenedStore {
                    journal: Box::new(journal),
                    projector,
                    reader,
                    leadership: Leadership::Lease(Box::new(candidate)),
                })
            }
        }
    }

    /// Shares the snapshot file of `sequence` at `path` with the other nodes, keeping the newest
    /// `keep` of the chain: on PostgreSQL when the file is at most
    /// [`postgres::snapshot_store::MAX_SHARED_SNAPSHOT_BYTES`]; returns whether it was shared.
    pub fn share_snapshot(
        &self,
        chain_id: u64,
        (sequence, path): (u64, &Path),
        keep: usize,
    ) -> Result<bool, SnapshotError> {
        let JournalBackend::Postgres(backend) = self else {
            return Ok(false);
        };
        let file = std::fs::read(path)?;
        if file.len() > postgres::snapshot_store::MAX_SHARED_SNAPSHOT_BYTES {
            return Ok(false);
        }
        let mut client = postgres::connect(&backend.url)?;
        postgres::snapshot_store::share(&mut client, chain_id, sequence, &file, keep)?;
        Ok(true)
    }

    /// Puts into `directory` the newest snapshot another node shared of `chain_id` whose
    /// sequence is above `newer_than` and at most `through`; returns its sequence. Nothing on
    /// the embedded journal.
    pub fn fetch_shared_snapshot(
        &self,
        chain_id: u64,
        directory: &Path,
        (newer_than, through): (u64, u64),
    ) -> Result<Option<u64>, SnapshotError> {
        let JournalBackend::Postgres(backend) = self else {
            return Ok(None);
        };
        let mut client = postgres::connect(&backend.url)?;
        let Some((sequence, file)) = postgres::snapshot_store::newest(&mut client, chain_id, (newer_than, through))?
        else {
            return Ok(None);
        };
        place_snapshot_file(directory, sequence, &file)?;
        Ok(Some(sequence))
    }

    /// A reader of a chain's journal of its own, beside the writer (a snapshot's build).
    pub fn open_reader(&self, data_dir: &Path, chain_id: u64) -> Result<Box<dyn JournalRead>, StoreError> {
        match self {
            JournalBackend::Sqlite => Ok(Box::new(JournalReader::open(data_dir, chain_id)?)),
            JournalBackend::Postgres(backend) => Ok(Box::new(PostgresJournal::open(
                postgres::Connection::open(&backend.url)?,
                chain_id,
            )?)),
        }
    }
}
