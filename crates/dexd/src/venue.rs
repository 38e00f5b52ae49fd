//! The running venue: one [`Chain`] per configured chain, each with a single writer thread.
//!
//! State changes go through a bounded queue to the chain's writer, which owns every mutation of
//! the engine. It takes whatever has queued (up to [`MAX_WRITE_BATCH`], without waiting for
//! more), applies it to the engine, writes the batch to the store in one transaction, and only
//! then answers: group commit. If the write fails, the batch is answered 503 and the engine is
//! rebuilt from the store, so nothing of it stays in memory. Reads take a short read lock on the
//! engine, or go to the store; they never queue behind writes. This module knows nothing of
//! HTTP or JSON.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use dexd_core::{Command, Engine, EngineConfig, Event, Rejection};
use parking_lot::RwLock;
use tokio::sync::{mpsc, oneshot};

use crate::codec;
use crate::config::{ChainConfig, Config};
use crate::store::{self, CommittedCommand, OrderAuthorization, StoreError, StoreReader, StoreWriter};

/// How many queued commands the writer takes into one transaction.
pub const MAX_WRITE_BATCH: usize = 256;

/// Why a state change was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The engine refused it.
    Rejected(Rejection),
    /// The queue is full, the store could not make it durable, or the writer is gone; nothing
    /// was applied.
    Unavailable,
}

struct WriteRequest {
    command: Command,
    authorization: Option<OrderAuthorization>,
    reply: oneshot::Sender<Result<Vec<Event>, WriteError>>,
}

/// One chain's venue.
pub struct Chain {
    /// The chain's configuration.
    pub config: ChainConfig,
    /// The chain's history, read by the handlers.
    pub store: StoreReader,
    engine: Arc<RwLock<Engine>>,
    writer: mpsc::Sender<WriteRequest>,
}

impl Chain {
    fn start(config: ChainConfig, full_config: &Config, data_dir: &Path) -> Result<Chain, StoreError> {
        let busy_timeout = Duration::from_millis(full_config.limits.write_lock_timeout_ms);
        let (store_writer, store_reader) = store::open(data_dir, config.chain_id, busy_timeout)?;
        let engine_config = config.engine_config(&full_config.limits);
        let started = Instant::now();
        let engine = store_writer.replay(&engine_config)?;
        tracing::info!(
            chain_id = config.chain_id,
            resting_orders = engine.resting_order_count(),
            replay_ms = started.elapsed().as_millis() as u64,
            "chain state rebuilt from the store"
        );
        let engine = Arc::new(RwLock::new(engine));
        let (writer, queue) = mpsc::channel(full_config.limits.write_queue_capacity);
        let writer_engine = Arc::clone(&engine);
        let chain_id = config.chain_id;
        std::thread::Builder::new()
            .name(format!("writer-{chain_id}"))
            .spawn(move || run_writer(chain_id, queue, writer_engine, store_writer, engine_config))
            .expect("the writer thread starts");
        Ok(Chain {
            config,
            store: store_reader,
            engine,
            writer,
        })
    }

    /// Applies a command through the writer; returns its events once they are on disk.
    pub async fn submit(
        &self,
        command: Command,
        authorization: Option<OrderAuthorization>,
    ) -> Result<Vec<Event>, WriteError> {
        let (reply, answer) = oneshot::channel();
        self.writer
            .try_send(WriteRequest {
                command,
                authorization,
                reply,
            })
            .map_err(|_| WriteError::Unavailable)?;
        answer.await.unwrap_or(Err(WriteError::Unavailable))
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

type Reply = (
    oneshot::Sender<Result<Vec<Event>, WriteError>>,
    Result<Vec<Event>, WriteError>,
);

fn run_writer(
    chain_id: u64,
    mut queue: mpsc::Receiver<WriteRequest>,
    engine: Arc<RwLock<Engine>>,
    mut store: StoreWriter,
    engine_config: EngineConfig,
) {
    let mut batch = Vec::with_capacity(MAX_WRITE_BATCH);
    while let Some(first) = queue.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_WRITE_BATCH {
            match queue.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let (committed, mut replies) = apply_batch(&engine, batch.drain(..));
        if !committed.is_empty() {
            if let Err(error) = store.commit(&committed) {
                tracing::error!(chain_id, %error, "writing a batch failed; answering 503 and rebuilding from the store");
                for (_, result) in &mut replies {
                    if result.is_ok() {
                        *result = Err(WriteError::Unavailable);
                    }
                }
                rebuild(chain_id, &engine, &store, &engine_config);
            }
        }
        // A client that went away no longer waits for its answer; that is not an error.
        for (reply, result) in replies {
            let _ = reply.send(result);
        }
    }
}

/// Applies a batch to the engine under one write lock; returns what to store and what to answer.
fn apply_batch(
    engine: &RwLock<Engine>,
    requests: impl Iterator<Item = WriteRequest>,
) -> (Vec<CommittedCommand>, Vec<Reply>) {
    let mut committed = Vec::new();
    let mut replies = Vec::new();
    let mut engine = engine.write();
    for request in requests {
        let time_ms = now_ms();
        let encoded = codec::encode_command(&request.command);
        let mut events = Vec::new();
        match engine.execute(request.command, time_ms, &mut events) {
            Ok(()) => {
                committed.push(CommittedCommand {
                    time_ms,
                    command: encoded,
                    events: events.clone(),
                    authorization: request.authorization,
                });
                replies.push((request.reply, Ok(events)));
            }
            Err(rejection) => replies.push((request.reply, Err(WriteError::Rejected(rejection)))),
        }
    }
    (committed, replies)
}

/// Puts the engine back to what the store holds, after a batch could not be written. Until that
/// succeeds the chain's writes keep failing, which is the safe side.
fn rebuild(chain_id: u64, engine: &RwLock<Engine>, store: &StoreWriter, engine_config: &EngineConfig) {
    loop {
        match store.replay(engine_config) {
            Ok(rebuilt) => {
                *engine.write() = rebuilt;
                tracing::info!(chain_id, "chain state rebuilt from the store after a failed write");
                return;
            }
            Err(error) => {
                tracing::error!(chain_id, %error, "rebuilding from the store failed; retrying in one second");
                std::thread::sleep(Duration::from_secs(1));
            }
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
        Ok(Venue { config, chains })
    }

    /// The chain with this id.
    pub fn chain(&self, chain_id: u64) -> Option<Arc<Chain>> {
        self.chains.get(&chain_id).cloned()
    }
}
