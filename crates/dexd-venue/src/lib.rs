//! dexd-venue: the running venue. One [`Chain`] per configured chain, each with a single writer
//! thread; the configuration ([`config`]) and the metrics ([`telemetry`]) it runs with.
//!
//! State changes go through a bounded queue to the chain's writer, which owns every mutation of
//! the engine. It takes whatever has queued (up to [`MAX_WRITE_BATCH`], without waiting for
//! more), applies it to the engine, appends the batch to the journal in one transaction, and
//! only then answers: group commit. If the append fails, the batch is answered 503 and the engine
//! is rebuilt from the journal, so nothing of it stays in memory.
//!
//! The writer hands each journaled batch's events to the chain's projector thread, which writes
//! the history tables in larger batches. A history read first waits until the projector has
//! caught up with every command acknowledged before the read began, so a client always reads
//! its own writes. Reads of books and market data take a short read lock on the engine; no read
//! queues behind writes. [`Venue::close`] stops the writers after what they have queued, and the
//! projectors after what they were handed, and marks the histories closed cleanly. This
//! crate knows nothing of HTTP or JSON: the `dexd` crate serves it.

mod batch_nonce;
pub mod config;
mod custody_link;
pub mod liabilities;
pub mod markets;
mod projector;
pub mod publication;
pub mod snapshotter;
mod start;
pub mod state_hashes;
pub mod switches;
pub mod telemetry;
pub mod venue_clock;
mod writer;

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dexd_core::{Command, Engine};
use parking_lot::RwLock;
use tokio::sync::{mpsc, oneshot, watch};

use self::projector::run_projector;
use self::snapshotter::{recover, SnapshotPlace, SnapshotStatus, Snapshotter, SnapshotterSetup};
use self::writer::{EnginePosition, WriteRequest, WriterMessage, WriterMetrics, WriterState};
use crate::config::{ChainConfig, Config};
use crate::telemetry::Telemetry;
use dexd_store::snapshots::{
    configuration_fingerprint, remove_partial_snapshots, snapshot_directory, SnapshotIdentity,
};
use dexd_store::{Authorization, Events, Journal, Projector, Replayed, StoreError, StoreReader, WriteError};

pub use self::custody_link::vault_chain_setups;
pub use self::projector::{
    MAX_PROJECTION_BACKLOG_BATCHES, PROJECTION_COALESCE_BELOW_COMMANDS, PROJECTION_COALESCE_MAX_WAIT_MS,
    PROJECTION_COALESCE_WAIT_MS,
};
pub use self::writer::{ReconfigurationChange, ReconfigurationError, MAX_WRITE_BATCH};
pub use dexd_store::JOURNAL_CHECKPOINT_INTERVAL_COMMANDS;
/// How many commands the projector writes in one transaction (the store's limit).
pub use dexd_store::MAX_PROJECTION_BATCH;
/// How long a history read waits for the projector before it is answered 503.
pub const HISTORY_WAIT_TIMEOUT_MS: u64 = 5_000;

/// One chain's venue.
pub struct Chain {
    /// The chain id.
    pub chain_id: u64,
    /// The chain's EIP-712 domain (its separator computed once; it never changes).
    pub signing_domain: dexd_crypto::SigningDomain,
    /// The chain's assets and pairs, the messages signed over them and the journal's
    /// configuration: swapped by the writer when a journaled configuration changes them.
    markets: Arc<markets::MarketsCell>,
    store: StoreReader,
    engine: Arc<RwLock<Engine>>,
    writer: mpsc::Sender<WriterMessage>,
    /// The journal sequence of the last acknowledged command.
    journaled: Arc<AtomicU64>,
    /// Where the engine's state stands (what it has applied, and its rebuilds), which the
    /// writer changes under the engine's write lock.
    engine_position: Arc<EnginePosition>,
    /// The journal sequence the history tables have reached.
    projected: watch::Receiver<u64>,
    /// The streams' end of the publications, until the streams take it.
    publications: parking_lot::Mutex<Option<publication::Publications>>,
    /// Tokens of stream reads.
    next_read_token: AtomicU64,
    /// What the chain's snapshots have done.
    pub snapshots: Arc<SnapshotStatus>,
    /// The time the writer stamps on commands, held at or past the chain's newest block time.
    pub clock: Arc<venue_clock::VenueClock>,
    /// The snapshot thread, until the chain stops.
    snapshotter: parking_lot::Mutex<Option<Snapshotter>>,
    /// The state hashes of the public journal, known so far.
    pub state_hashes: Arc<state_hashes::StateHashes>,
    /// Their keeper's thread, until the chain stops.
    state_hash_keeper: parking_lot::Mutex<Option<state_hashes::StateHashKeeper>>,
    /// The epoch under which this node's writer acts as the chain's leader
    /// ([`writer::NOT_LEADING`] while it follows): always 0 on the embedded journal; on
    /// PostgreSQL the epoch of the lease it holds.
    leader_epoch: Arc<AtomicU64>,
    /// The chain's liability trees, built off the writer's path.
    liability_trees: Arc<liabilities::LiabilityTrees>,
}

impl Chain {
    /// The chain's markets now: one consistent set, which a request keeps for its whole life
    /// (a pair listed meanwhile is in the next request's).
    pub fn markets(&self) -> Arc<markets::Markets> {
        self.markets.load()
    }

    /// Decides and journals a change of the chain's configuration on the writer (an operator's
    /// listing or fee change): `change` gets the journal's configuration and the time, and its
    /// result, with raises of fees announced after the chain's notice and checked against the
    /// journal's rules of change, is journaled; the markets follow once it is durable. Answers
    /// the journal position and the configuration journaled.
    pub async fn reconfigure(
        &self,
        change: Box<writer::ReconfigurationChange>,
    ) -> Result<(u64, dexd_core::ChainConfiguration), writer::ReconfigurationError> {
        let (reply, answer) = oneshot::channel();
        self.writer
            .try_send(WriterMessage::Reconfigure(writer::Reconfiguration { change, reply }))
            .map_err(|error| {
                writer::ReconfigurationError::Write(match error {
                    mpsc::error::TrySendError::Full(_) => WriteError::QueueFull,
                    mpsc::error::TrySendError::Closed(_) => WriteError::NotDurable,
                })
            })?;
        answer
            .await
            .unwrap_or(Err(writer::ReconfigurationError::Write(WriteError::NotDurable)))
    }

    /// The folder of the chain's files (its journal on the embedded store, its snapshots, tree
    /// and segment files).
    pub fn data_dir(&self) -> &Path {
        &self.liability_trees.data_dir
    }

    /// The journal's commands after `after`, at most `limit` of them, and the journal's last
    /// position: read through a connection of the request's own (blocking: call it off the
    /// async runtime), never through the writer's. For the public journal.
    pub fn read_journal(&self, after: u64, limit: u64) -> Result<(Vec<dexd_store::JournaledCommand>, u64), StoreError> {
        let trees = &self.liability_trees;
        let mut journal = trees.journal_backend.open_reader(&trees.data_dir, trees.chain_id)?;
        let end = journal.last_sequence()?;
        let mut commands = Vec::new();
        if after < end {
            journal.for_each_command(
                dexd_store::CommandRange {
                    through: after.saturating_add(limit).min(end),
                    ..dexd_store::CommandRange::after(after)
                },
                &mut |command| {
                    commands.push(command);
                    Ok(())
                },
            )?;
        }
        Ok((commands, end))
    }

    /// The chain's liability tree at a journal position (built off the writer's path, or kept).
    pub async fn liability_tree(&self, journal_sequence: u64) -> dexd_custody::liabilities::TreeResult {
        self.liability_trees.at(journal_sequence).await
    }

    /// The file of the chain's tree at a journal position with `root`, if it is kept: read off
    /// the async runtime, never rebuilt here.
    pub async fn liability_tree_file(&self, journal_sequence: u64, root: [u8; 32]) -> liabilities::TreeFileLookup {
        let trees = Arc::clone(&self.liability_trees);
        tokio::task::spawn_blocking(move || trees.open_file(journal_sequence, &root))
            .await
            .unwrap_or(liabilities::TreeFileLookup::NotKept)
    }

    /// The publications of the chain's journaled batches, for the live streams (once: whoever
    /// takes them owns them). Nothing is published before they are activated.
    pub fn take_publications(&self) -> Option<publication::Publications> {
        self.publications.lock().take()
    }

    /// Asks the writer for a read at an exact journal position; the answer comes out of the
    /// publications with the returned token, after the batches it includes. 503 when the
    /// writer's queue is full.
    /// How many reads the streams have asked of the writer since the start (each a copy of the
    /// engine: one at the start and one after each overflow).
    pub fn stream_reads_requested(&self) -> u64 {
        self.next_read_token.load(Ordering::Relaxed) - 1
    }

    pub fn request_stream_read(&self, read: publication::StreamRead) -> Result<u64, WriteError> {
        let token = self.next_read_token.fetch_add(1, Ordering::Relaxed);
        self.writer
            .try_send(WriterMessage::StreamRead { token, read })
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => WriteError::QueueFull,
                mpsc::error::TrySendError::Closed(_) => WriteError::NotDurable,
            })?;
        Ok(token)
    }

    /// The chain's history, once it holds every command acknowledged before this call (a client
    /// reads its own writes) and every command applied to the engine before it: a read of
    /// balances may show a batch that is being journaled, and a history read after it must not
    /// miss that batch (a credited deposit still listed as pending). 503 when the projector
    /// cannot catch up in time.
    pub async fn history(&self) -> Result<&StoreReader, WriteError> {
        let applied = self.engine_position.applied_sequence.load(Ordering::Acquire);
        let acknowledged = self.journaled.load(Ordering::Acquire);
        let target = applied.max(acknowledged);
        if *self.projected.borrow() >= target {
            return Ok(&self.store);
        }
        let mut projected = self.projected.clone();
        let caught_up = tokio::time::timeout(Duration::from_millis(HISTORY_WAIT_TIMEOUT_MS), async {
            projected.wait_for(|reached| *reached >= target).await.is_ok()
        })
        .await;
        match caught_up {
            Ok(true) => Ok(&self.store),
            // The applied batch may never be journaled (its append failed, and the engine was
            // rebuilt without it): what was acknowledged is then what must be there.
            _ if *self.projected.borrow() >= acknowledged => Ok(&self.store),
            _ => Err(WriteError::HistoryBehind),
        }
    }

    /// The chain's history as it is now, without waiting: for a read that already waited once
    /// ([`Chain::history`]) and goes on a page at a time.
    pub fn history_now(&self) -> &StoreReader {
        &self.store
    }

    /// Waits until this node's history (and so its engine) holds journal position `minimum`:
    /// `false` if it did not within `timeout`.
    pub async fn wait_for_position(&self, minimum: u64, timeout: Duration) -> bool {
        let mut projected = self.projected.clone();
        tokio::time::timeout(timeout, async move {
            projected.wait_for(|reached| *reached >= minimum).await.is_ok()
        })
        .await
        .unwrap_or(false)
    }

    /// Applies a command through the writer; returns its events once they are on disk.
    pub async fn submit(&self, command: Command, authorization: Option<Authorization>) -> Result<Events, WriteError> {
        self.enqueue(command, authorization, None)?.outcome().await
    }

    /// Like [`Chain::submit`], with the command's journal position (`X-Dexd-Sequence`).
    pub async fn submit_at(
        &self,
        command: Command,
        authorization: Option<Authorization>,
    ) -> Result<(u64, Events), WriteError> {
        self.enqueue(command, authorization, None)?.positioned_outcome().await
    }

    /// Submits commands that are applied one after the other, with no other command between
    /// them, and journaled in one transaction, so that they are all durable or none is (a batch
    /// of orders); waits for each one's outcome. 503 at once when the queue is full.
    pub async fn submit_group(
        &self,
        commands: Vec<(Command, Option<Authorization>)>,
    ) -> Result<Vec<Result<(u64, Events), WriteError>>, WriteError> {
        let mut requests = Vec::with_capacity(commands.len());
        let mut answers = Vec::with_capacity(commands.len());
        for (index, (command, authorization)) in commands.into_iter().enumerate() {
            let (reply, answer) = oneshot::channel();
            requests.push(WriteRequest {
                command,
                authorization,
                under_epoch: None,
                reply,
                starts_request: index == 0,
                at_ms: None,
            });
            answers.push(QueuedWrite(answer));
        }
        self.writer
            .try_send(WriterMessage::Group(requests))
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => WriteError::QueueFull,
                mpsc::error::TrySendError::Closed(_) => WriteError::NotDurable,
            })?;
        let mut outcomes = Vec::with_capacity(answers.len());
        for answer in answers {
            outcomes.push(answer.positioned_outcome().await);
        }
        Ok(outcomes)
    }

    /// Puts a command in the writer's queue now, without waiting for it: commands enqueued one
    /// after the other are applied in that order (the chain watcher relies on it to credit a
    /// backlog of deposits in the vault's order). 503 at once when the queue is full. With
    /// `under_epoch`, it is applied only while the node leads the chain under that epoch
    /// (custody's commands: see `dexd_custody::act_as_leader`).
    pub fn enqueue(
        &self,
        command: Command,
        authorization: Option<Authorization>,
        under_epoch: Option<u64>,
    ) -> Result<QueuedWrite, WriteError> {
        let (reply, answer) = oneshot::channel();
        self.writer
            .try_send(WriterMessage::Write(WriteRequest {
                command,
                authorization,
                under_epoch,
                reply,
                starts_request: true,
                at_ms: None,
            }))
            .map_err(|error| match error {
                mpsc::error::TrySendError::Full(_) => WriteError::QueueFull,
                mpsc::error::TrySendError::Closed(_) => WriteError::NotDurable,
            })?;
        Ok(QueuedWrite(answer))
    }

    /// Stops the chain's writer and projector, once what is queued before this call is
    /// answered and written; the history is put on disk and marked closed cleanly. Writes after
    /// this are answered 503.
    pub async fn close(&self) {
        let (reply, closed) = oneshot::channel();
        if self.writer.send(WriterMessage::Close(reply)).await.is_ok() {
            // An error means the writer is already gone, which is what was asked.
            let _ = closed.await;
        }
        let snapshotter = self.snapshotter.lock().take();
        if let Some(snapshotter) = snapshotter {
            // Joining waits for at most one chunk of the journal or one file write.
            let _ = tokio::task::spawn_blocking(move || snapshotter.stop()).await;
        }
        let keeper = self.state_hash_keeper.lock().take();
        if let Some(keeper) = keeper {
            let _ = tokio::task::spawn_blocking(move || keeper.stop()).await;
        }
    }

    /// Whether this node leads the chain: always on the embedded journal; on PostgreSQL while
    /// it holds the chain's lease. (The writer gives the lease up when the chain closes.)
    pub fn is_leading(&self) -> bool {
        self.leader_epoch().is_some()
    }

    /// The epoch under which this node leads the chain (0 on the embedded journal); `None`
    /// while another node leads it.
    pub fn leader_epoch(&self) -> Option<u64> {
        Some(self.leader_epoch.load(Ordering::Acquire)).filter(|epoch| *epoch != writer::NOT_LEADING)
    }

    /// An account's open orders as the history's projector holds them, with the journal
    /// sequence they are the state of (no read barrier: the live streams reconcile the position
    /// themselves).
    pub fn open_orders_at_mark(&self, account: &dexd_core::Address) -> (Vec<dexd_store::StoredOrder>, u64) {
        self.store.open_orders_at_mark(account)
    }

    /// The journal sequence of the last acknowledged command.
    pub fn journaled_sequence(&self) -> u64 {
        self.journaled.load(Ordering::Acquire)
    }

    /// Reads the engine under a short read lock.
    pub fn read_engine<R>(&self, read: impl FnOnce(&Engine) -> R) -> R {
        read(&self.engine.read())
    }

    /// Like [`Chain::read_engine`], with where the state read stands: the engine's rebuilds
    /// and the last sequence applied to it (which may not be journaled yet).
    pub fn read_engine_at<R>(&self, read: impl FnOnce(&Engine) -> R) -> (R, (u64, u64)) {
        let engine = self.engine.read();
        let position = (
            self.engine_position.rebuilds.load(Ordering::Acquire),
            self.engine_position.applied_sequence.load(Ordering::Acquire),
        );
        (read(&engine), position)
    }

    /// Where the journal stands: the engine's rebuilds and the last journaled sequence. The
    /// sequence is read first: a rebuild is counted before any append after it, so a sequence
    /// from after a rebuild is never paired with the count from before it.
    pub fn durable_position(&self) -> (u64, u64) {
        let sequence = self.journaled.load(Ordering::Acquire);
        (self.engine_position.rebuilds.load(Ordering::Acquire), sequence)
    }

    /// State changes waiting in the writer's queue.
    pub fn write_queue_depth(&self) -> usize {
        self.writer.max_capacity() - self.writer.capacity()
    }

    /// The journal sequence the history tables have reached.
    pub fn projected_sequence(&self) -> u64 {
        *self.projected.borrow()
    }

    /// The engine's state hash (for recovery checks).
    pub fn state_hash(&self) -> [u8; 32] {
        self.engine.read().state_hash()
    }
}

/// A command in the writer's queue; its outcome arrives once its batch is on disk (or refused).
pub struct QueuedWrite(oneshot::Receiver<Result<(u64, Events), WriteError>>);

impl QueuedWrite {
    /// The command's events once they are on disk, or why it was not applied.
    pub async fn outcome(self) -> Result<Events, WriteError> {
        self.positioned_outcome().await.map(|(_, events)| events)
    }

    /// Like [`QueuedWrite::outcome`], with the command's journal position.
    pub async fn positioned_outcome(self) -> Result<(u64, Events), WriteError> {
        self.0.await.unwrap_or(Err(WriteError::NotDurable))
    }
}

/// Every chain of the venue.
pub struct Venue {
    /// The configuration it runs.
    pub config: Config,
    chains: HashMap<u64, Arc<Chain>>,
    /// Where the venue's metrics are recorded.
    pub telemetry: Arc<Telemetry>,
}

impl Venue {
    /// Opens every chain's store in `data_dir` (creating it when new), rebuilds each engine from
    /// its log, and starts the writers. Its metrics go to a recorder nobody reads.
    pub fn start(config: Config, data_dir: &Path) -> Result<Venue, StoreError> {
        Venue::start_with_telemetry(config, data_dir, Telemetry::new())
    }

    /// Like [`Venue::start`], recording the chains' metrics in `telemetry`. The chains start
    /// side by side, one thread each.
    pub fn start_with_telemetry(
        config: Config,
        data_dir: &Path,
        telemetry: Arc<Telemetry>,
    ) -> Result<Venue, StoreError> {
        std::fs::create_dir_all(data_dir)
            .map_err(|error| StoreError::Inconsistent(format!("cannot create {}: {error}", data_dir.display())))?;
        let started: Vec<Result<Chain, StoreError>> = std::thread::scope(|scope| {
            let starts: Vec<_> = config
                .chains
                .iter()
                .map(|chain| {
                    let (config, telemetry) = (&config, &telemetry);
                    std::thread::Builder::new()
                        .name(format!("start-{}", chain.chain_id))
                        .spawn_scoped(scope, move || Chain::start(chain.clone(), config, data_dir, telemetry))
                        .expect("a start thread starts")
                })
                .collect();
            starts
                .into_iter()
                .map(|start| {
                    start
                        .join()
                        .unwrap_or_else(|_| Err(StoreError::Inconsistent("a chain's start panicked".into())))
                })
                .collect()
        });
        let mut chains = HashMap::new();
        for chain in started {
            let chain = chain?;
            chains.insert(chain.chain_id, Arc::new(chain));
        }
        Ok(Venue {
            config,
            chains,
            telemetry,
        })
    }

    /// Stops every chain (see [`Chain::close`]), once what each has queued is written.
    pub async fn close(&self) {
        for chain in self.chains.values() {
            chain.close().await;
        }
    }

    /// The chain with this id.
    pub fn chain(&self, chain_id: u64) -> Option<Arc<Chain>> {
        self.chains.get(&chain_id).cloned()
    }

    /// Every chain, in no particular order.
    pub fn chains(&self) -> impl Iterator<Item = &Arc<Chain>> {
        self.chains.values()
    }
}
