//! The running venue: one [`Chain`] per configured chain, each with a single writer thread.
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
//! projectors after what they were handed, and marks the histories closed cleanly. This module
//! knows nothing of HTTP or JSON.

use std::collections::HashMap;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use dexd_core::{Command, Engine, EngineConfig, Rejection};
use parking_lot::RwLock;
use tokio::sync::{mpsc, oneshot, watch};

use crate::codec;
use crate::config::{ChainConfig, Config};
use crate::store::{
    self, Authorization, Events, JournalEntry, Projection, Projector, StoreError, StoreReader, StoreWriter,
};

/// How many queued commands the writer takes into one journal transaction.
pub const MAX_WRITE_BATCH: usize = 1_024;
/// How many journaled batches may wait for the projector; past this the writer waits, so the
/// write queue fills and new writes are refused (503) rather than history falling far behind.
pub const MAX_PROJECTION_BACKLOG_BATCHES: usize = 64;
/// How many commands the projector writes in one transaction (the store's limit).
pub use crate::store::MAX_PROJECTION_BATCH;
/// A projector batch smaller than this waits [`PROJECTION_COALESCE_WAIT_MS`] for more.
pub const PROJECTION_COALESCE_BELOW_COMMANDS: usize = 256;
/// How long a small projector batch waits for more.
pub const PROJECTION_COALESCE_WAIT_MS: u64 = 5;
/// How many journaled commands pass between two checkpoints of the journal, which the writer
/// finishes between batches after answering one: each checkpoint writes the journal's new pages
/// to its file and syncs it, so running it after every batch would double the syncs, and the
/// writer's part holds every write for 10–12 ms at 4,500 orders/s. At 8,192 that came every
/// 1.8 s and was most of the slowest percent of placements (server-side p99 8.7–10.0 ms against
/// 7.2–7.6 ms at 32,768). The cost: the WAL file grows to about 55 MB at that rate between
/// checkpoints (it is reused, not regrown, after each).
pub const JOURNAL_CHECKPOINT_INTERVAL_COMMANDS: usize = 32_768;
/// How long a history read waits for the projector before it is answered 503.
pub const HISTORY_WAIT_TIMEOUT_MS: u64 = 5_000;

/// Why a state change was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The engine refused it.
    Rejected(Rejection),
    /// The chain's write queue is full; nothing was applied.
    QueueFull,
    /// The store could not make the change durable (full or read-only disk, locked database,
    /// or the writer is gone); nothing was applied.
    NotDurable,
    /// The history did not catch up with the acknowledged changes in time.
    HistoryBehind,
}

struct WriteRequest {
    command: Command,
    authorization: Option<Authorization>,
    reply: oneshot::Sender<Result<Events, WriteError>>,
}

/// What the writer's queue carries: writes, and at the end the request to stop.
// Nearly every message is a write; boxing it to shrink the rare `Close` would cost an allocation
// per write.
#[allow(clippy::large_enum_variant)]
enum WriterMessage {
    Write(WriteRequest),
    /// Stop the chain: answer nothing queued after this, let the projector finish, close the
    /// history cleanly, then reply.
    Close(oneshot::Sender<()>),
}

/// One chain's venue.
pub struct Chain {
    /// The chain's configuration.
    pub config: ChainConfig,
    /// The chain's EIP-712 domain (its separator computed once).
    pub signing_domain: crate::crypto::SigningDomain,
    store: StoreReader,
    engine: Arc<RwLock<Engine>>,
    writer: mpsc::Sender<WriterMessage>,
    /// The journal sequence of the last acknowledged command.
    journaled: Arc<AtomicU64>,
    /// The journal sequence the history tables have reached.
    projected: watch::Receiver<u64>,
}

impl Chain {
    fn start(config: ChainConfig, full_config: &Config, data_dir: &Path) -> Result<Chain, StoreError> {
        let busy_timeout = Duration::from_millis(full_config.limits.write_lock_timeout_ms);
        let (store_writer, mut projector, store_reader) = store::open(data_dir, config.chain_id, busy_timeout)?;
        let engine_config = config.engine_config(&full_config.limits);
        let started = Instant::now();
        // What the projector had not written before the stop is written now, before serving.
        let replayed = store_writer.replay(&engine_config, Some(&mut projector))?;
        tracing::info!(
            chain_id = config.chain_id,
            journaled_commands = replayed.last_sequence,
            reprojected_commands = replayed.reprojected_commands,
            resting_orders = replayed.engine.resting_order_count(),
            replay_ms = started.elapsed().as_millis() as u64,
            "chain state rebuilt from the journal"
        );
        let engine = Arc::new(RwLock::new(replayed.engine));
        let journaled = Arc::new(AtomicU64::new(replayed.last_sequence));
        let (projected_sender, projected) = watch::channel(replayed.last_sequence);
        let (projection_sender, projection_queue) = std::sync::mpsc::sync_channel(MAX_PROJECTION_BACKLOG_BATCHES);
        let (writer, queue) = mpsc::channel(full_config.limits.write_queue_capacity);
        let chain_id = config.chain_id;
        let projector_thread = std::thread::Builder::new()
            .name(format!("projector-{chain_id}"))
            .spawn(move || run_projector(chain_id, projection_queue, projector, projected_sender))
            .expect("the projector thread starts");
        let (checkpoint_requests, checkpoints_copied) = start_journal_checkpointer(chain_id, &store_writer)?;
        let writer_state = WriterState {
            chain_id,
            engine: Arc::clone(&engine),
            store: store_writer,
            engine_config,
            next_sequence: replayed.last_sequence + 1,
            journaled: Arc::clone(&journaled),
            projection: projection_sender,
            checkpointed_through: replayed.last_sequence,
            checkpoint_requests,
            checkpoints_copied,
            checkpoint_in_progress: false,
        };
        std::thread::Builder::new()
            .name(format!("writer-{chain_id}"))
            .spawn(move || run_writer(queue, writer_state, projector_thread))
            .expect("the writer thread starts");
        Ok(Chain {
            signing_domain: crate::crypto::SigningDomain::new(config.chain_id, config.venue_contract),
            config,
            store: store_reader,
            engine,
            writer,
            journaled,
            projected,
        })
    }

    /// The chain's history, once it holds every command acknowledged before this call: a client
    /// reads its own writes. 503 when the projector cannot catch up in time.
    pub async fn history(&self) -> Result<&StoreReader, WriteError> {
        let target = self.journaled.load(Ordering::Acquire);
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
            _ => Err(WriteError::HistoryBehind),
        }
    }

    /// Applies a command through the writer; returns its events once they are on disk.
    pub async fn submit(&self, command: Command, authorization: Option<Authorization>) -> Result<Events, WriteError> {
        self.enqueue(command, authorization)?.outcome().await
    }

    /// Puts a command in the writer's queue now, without waiting for it: commands enqueued one
    /// after the other are applied in that order (the chain watcher relies on it to credit a
    /// backlog of deposits in the vault's order). 503 at once when the queue is full.
    pub fn enqueue(&self, command: Command, authorization: Option<Authorization>) -> Result<QueuedWrite, WriteError> {
        let (reply, answer) = oneshot::channel();
        self.writer
            .try_send(WriterMessage::Write(WriteRequest {
                command,
                authorization,
                reply,
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
    }

    /// Reads the engine under a short read lock.
    pub fn read_engine<R>(&self, read: impl FnOnce(&Engine) -> R) -> R {
        read(&self.engine.read())
    }

    /// The engine's state hash (for recovery checks).
    pub fn state_hash(&self) -> [u8; 32] {
        self.engine.read().state_hash()
    }
}

/// A command in the writer's queue; its outcome arrives once its batch is on disk (or refused).
pub struct QueuedWrite(oneshot::Receiver<Result<Events, WriteError>>);

impl QueuedWrite {
    /// The command's events once they are on disk, or why it was not applied.
    pub async fn outcome(self) -> Result<Events, WriteError> {
        self.0.await.unwrap_or(Err(WriteError::NotDurable))
    }
}

type Reply = (oneshot::Sender<Result<Events, WriteError>>, Result<Events, WriteError>);

struct WriterState {
    chain_id: u64,
    engine: Arc<RwLock<Engine>>,
    store: StoreWriter,
    engine_config: EngineConfig,
    next_sequence: u64,
    journaled: Arc<AtomicU64>,
    projection: std::sync::mpsc::SyncSender<Vec<Projection>>,
    /// The journal sequence the last checkpoint reached.
    checkpointed_through: u64,
    /// The journal checkpointer thread: asked to copy the bulk of the WAL, it answers when done.
    checkpoint_requests: std::sync::mpsc::SyncSender<()>,
    checkpoints_copied: std::sync::mpsc::Receiver<()>,
    /// Whether the checkpointer has been asked and has not answered yet.
    checkpoint_in_progress: bool,
}

fn run_writer(
    mut queue: mpsc::Receiver<WriterMessage>,
    mut state: WriterState,
    projector_thread: std::thread::JoinHandle<()>,
) {
    let mut batch = Vec::with_capacity(MAX_WRITE_BATCH);
    let mut close_reply = None;
    while close_reply.is_none() {
        match queue.blocking_recv() {
            Some(WriterMessage::Write(first)) => batch.push(first),
            Some(WriterMessage::Close(reply)) => close_reply = Some(reply),
            None => break,
        }
        while batch.len() < MAX_WRITE_BATCH && close_reply.is_none() {
            match queue.try_recv() {
                Ok(WriterMessage::Write(request)) => batch.push(request),
                Ok(WriterMessage::Close(reply)) => close_reply = Some(reply),
                Err(_) => break,
            }
        }
        write_batch(&mut state, &mut batch);
    }
    // Requests still queued are dropped unanswered with the queue: their clients get 503, and
    // none of them was applied.
    drop(queue);
    drop(state);
    if projector_thread.join().is_err() {
        tracing::error!("the projector thread panicked");
    }
    if let Some(reply) = close_reply {
        let _ = reply.send(());
    }
}

/// Applies, journals and answers one batch of writes; `batch` is left empty.
fn write_batch(state: &mut WriterState, batch: &mut Vec<WriteRequest>) {
    if batch.is_empty() {
        return;
    }
    let (journal, projections, mut replies) = apply_batch(state, batch.drain(..));
    if !journal.is_empty() {
        match state.store.append(&journal) {
            Ok(()) => {
                let last = journal.last().map_or(0, |entry| entry.sequence);
                state.journaled.store(last, Ordering::Release);
                // Blocks when the projector is far behind: the backlog is bounded.
                if state.projection.send(projections).is_err() {
                    tracing::error!(chain_id = state.chain_id, "the projector is gone");
                }
            }
            Err(error) => {
                tracing::error!(chain_id = state.chain_id, %error, "journaling a batch failed; answering 503 and rebuilding from the journal");
                for (_, result) in &mut replies {
                    if result.is_ok() {
                        *result = Err(WriteError::NotDurable);
                    }
                }
                rebuild(state);
            }
        }
    }
    // A client that went away no longer waits for its answer; that is not an error.
    for (reply, result) in replies {
        let _ = reply.send(result);
    }
    checkpoint_when_due(state);
}

/// Checkpoints the journal every [`JOURNAL_CHECKPOINT_INTERVAL_COMMANDS`], in two steps so that
/// the writer is not held up by the bulk of it: the checkpointer thread copies the WAL into the
/// database file and syncs it (about 10 ms here, during which the writer answered nothing when
/// it did this itself), then the writer, between batches, copies what was appended meanwhile,
/// so that the WAL starts over (1.3 ms at 2,000 orders/s; at 5,000/s the sync of those few
/// pages waits 7–10 ms on the busy disk). A failure is retried at the next interval, the WAL growing
/// meanwhile.
fn checkpoint_when_due(state: &mut WriterState) {
    let journaled_through = state.next_sequence - 1;
    if state.checkpoint_in_progress {
        match state.checkpoints_copied.try_recv() {
            Ok(()) | Err(std::sync::mpsc::TryRecvError::Disconnected) => finish_checkpoint(state),
            Err(std::sync::mpsc::TryRecvError::Empty) => {}
        }
        return;
    }
    if journaled_through.saturating_sub(state.checkpointed_through) < JOURNAL_CHECKPOINT_INTERVAL_COMMANDS as u64 {
        return;
    }
    match state.checkpoint_requests.try_send(()) {
        Ok(()) => state.checkpoint_in_progress = true,
        Err(std::sync::mpsc::TrySendError::Full(())) => {}
        // Without its thread, the writer does the whole checkpoint itself.
        Err(std::sync::mpsc::TrySendError::Disconnected(())) => finish_checkpoint(state),
    }
}

/// The writer's part of a checkpoint: what is left in the WAL, after which it starts over.
fn finish_checkpoint(state: &mut WriterState) {
    let journaled_through = state.next_sequence - 1;
    state.checkpoint_in_progress = false;
    let started = Instant::now();
    match state.store.checkpoint() {
        Ok(()) => {
            state.checkpointed_through = journaled_through;
            let checkpoint_us = started.elapsed().as_micros() as u64;
            tracing::debug!(chain_id = state.chain_id, checkpoint_us, "journal checkpointed");
        }
        Err(error) => tracing::warn!(chain_id = state.chain_id, %error, "checkpointing the journal failed"),
    }
}

/// Starts the thread that copies the bulk of the journal's WAL into its file when the writer
/// asks (see [`checkpoint_when_due`]); it ends when the writer does.
fn start_journal_checkpointer(
    chain_id: u64,
    store: &StoreWriter,
) -> Result<(std::sync::mpsc::SyncSender<()>, std::sync::mpsc::Receiver<()>), StoreError> {
    let checkpointer = store.checkpointer()?;
    let (requests, requested) = std::sync::mpsc::sync_channel::<()>(1);
    let (copied, checkpoints_copied) = std::sync::mpsc::sync_channel::<()>(1);
    std::thread::Builder::new()
        .name(format!("checkpointer-{chain_id}"))
        .spawn(move || {
            while requested.recv().is_ok() {
                if let Err(error) = checkpointer.checkpoint() {
                    tracing::warn!(chain_id, %error, "checkpointing the journal failed");
                }
                if copied.send(()).is_err() {
                    break;
                }
            }
        })
        .expect("the checkpointer thread starts");
    Ok((requests, checkpoints_copied))
}

/// Applies a batch to the engine under one write lock; returns what to journal, what to project
/// and what to answer.
fn apply_batch(
    state: &mut WriterState,
    requests: impl Iterator<Item = WriteRequest>,
) -> (Vec<JournalEntry>, Vec<Projection>, Vec<Reply>) {
    let mut journal = Vec::new();
    let mut projections = Vec::new();
    let mut replies = Vec::new();
    let mut engine = state.engine.write();
    for request in requests {
        let time_ms = now_ms();
        let encoded = codec::encode_command(&request.command);
        let mut events = Vec::new();
        let claim = request.authorization.as_ref().and_then(Authorization::claim);
        match engine.execute_signed(request.command, claim, time_ms, &mut events) {
            Ok(()) => {
                let sequence = state.next_sequence;
                state.next_sequence += 1;
                journal.push(JournalEntry {
                    sequence,
                    time_ms,
                    command: encoded,
                    authorization: request.authorization,
                });
                // One copy of the events serves the reply and the projector.
                let events = Arc::new(events);
                projections.push(Projection {
                    sequence,
                    events: Arc::clone(&events),
                    authorization: request.authorization,
                });
                replies.push((request.reply, Ok(events)));
            }
            Err(rejection) => replies.push((request.reply, Err(WriteError::Rejected(rejection)))),
        }
    }
    (journal, projections, replies)
}

/// Puts the engine back to what the journal holds, after a batch could not be appended. Until
/// that succeeds the chain's writes keep failing, which is the safe side.
fn rebuild(state: &mut WriterState) {
    loop {
        // The history is not this thread's business: the projector has every acknowledged batch.
        match state.store.replay(&state.engine_config, None) {
            Ok(replayed) => {
                *state.engine.write() = replayed.engine;
                state.next_sequence = replayed.last_sequence + 1;
                tracing::info!(
                    chain_id = state.chain_id,
                    "chain state rebuilt from the journal after a failed write"
                );
                return;
            }
            Err(error) => {
                tracing::error!(chain_id = state.chain_id, %error, "rebuilding from the journal failed; retrying in one second");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}

/// Writes the history tables from the journaled batches, merging what has queued into one
/// transaction. A failed write is retried: the history only ever moves forward, in order.
fn run_projector(
    chain_id: u64,
    queue: std::sync::mpsc::Receiver<Vec<Projection>>,
    mut projector: Projector,
    projected: watch::Sender<u64>,
) {
    while let Ok(mut batch) = queue.recv() {
        // Under a trickle of small batches, a short wait gathers them into one transaction,
        // whose fixed cost (commit, WAL frames of the touched pages) then spreads over more
        // commands. A history read waits at most this much longer for its own writes.
        if batch.len() < PROJECTION_COALESCE_BELOW_COMMANDS {
            std::thread::sleep(Duration::from_millis(PROJECTION_COALESCE_WAIT_MS));
        }
        while batch.len() < MAX_PROJECTION_BATCH {
            match queue.try_recv() {
                Ok(more) => batch.extend(more),
                Err(_) => break,
            }
        }
        while let Err(error) = projector.project(&batch) {
            tracing::error!(chain_id, %error, "writing the history failed; retrying");
            std::thread::sleep(Duration::from_millis(100));
        }
        if let Some(last) = batch.last() {
            projected.send_replace(last.sequence);
        }
    }
    // The writer is gone and every batch it journaled is written: the history is complete.
    match projector.close_cleanly() {
        Ok(()) => tracing::info!(chain_id, "the history is on disk and closed cleanly"),
        Err(error) => {
            tracing::warn!(chain_id, %error, "closing the history cleanly failed; it is rebuilt after a restart of the machine")
        }
    }
}

/// The wall clock in ms since the Unix epoch.
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}

/// Every chain of the venue.
pub struct Venue {
    /// The configuration it runs.
    pub config: Config,
    /// Addresses of keys seen recently.
    pub addresses: crate::crypto::AddressCache,
    /// Request budgets per client IP and per account.
    pub rate_limits: crate::rate_limit::RateLimits,
    chains: HashMap<u64, Arc<Chain>>,
}

impl Venue {
    /// Opens every chain's store in `data_dir` (creating it when new), rebuilds each engine from
    /// its log, and starts the writers.
    pub fn start(config: Config, data_dir: &Path) -> Result<Venue, StoreError> {
        std::fs::create_dir_all(data_dir)
            .map_err(|error| StoreError::Inconsistent(format!("cannot create {}: {error}", data_dir.display())))?;
        let mut chains = HashMap::new();
        for chain in &config.chains {
            chains.insert(
                chain.chain_id,
                Arc::new(Chain::start(chain.clone(), &config, data_dir)?),
            );
        }
        let rate_limits = crate::rate_limit::RateLimits::new(&config.limits);
        Ok(Venue {
            config,
            addresses: crate::crypto::AddressCache::default(),
            rate_limits,
            chains,
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
}
