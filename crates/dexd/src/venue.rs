//! The running venue: one [`Chain`] per configured chain, each with a single writer.
//!
//! State changes go through a bounded queue to the chain's writer thread, which owns every
//! mutation of the engine and the history; a full queue is refused at once (503), never waited
//! on. Reads take a short read lock on the engine or the history and never queue behind writes.
//! This module knows nothing of HTTP or JSON.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::{SystemTime, UNIX_EPOCH};

use dexd_core::{Command, Engine, Event, Rejection};
use parking_lot::RwLock;
use tokio::sync::{mpsc, oneshot};

use crate::config::{ChainConfig, Config};
use crate::history::{History, OrderAuthorization};

/// How many queued commands the writer takes in one batch.
pub const MAX_WRITE_BATCH: usize = 256;

/// Why a state change was not applied.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WriteError {
    /// The engine refused it.
    Rejected(Rejection),
    /// The writer's queue is full or the writer is gone; nothing was applied.
    Unavailable,
}

struct WriteRequest {
    command: Command,
    authorization: Option<OrderAuthorization>,
    reply: oneshot::Sender<Result<Vec<Event>, Rejection>>,
}

/// One chain's venue.
pub struct Chain {
    /// The chain's configuration.
    pub config: ChainConfig,
    engine: Arc<RwLock<Engine>>,
    history: Arc<RwLock<History>>,
    writer: mpsc::Sender<WriteRequest>,
}

impl Chain {
    fn start(config: ChainConfig, full_config: &Config) -> Chain {
        let engine =
            Engine::new(config.engine_config(&full_config.limits)).expect("pairs were checked with the configuration");
        let engine = Arc::new(RwLock::new(engine));
        let history = Arc::new(RwLock::new(History::default()));
        let (writer, queue) = mpsc::channel(full_config.limits.write_queue_capacity);
        let writer_engine = Arc::clone(&engine);
        let writer_history = Arc::clone(&history);
        std::thread::Builder::new()
            .name(format!("writer-{}", config.chain_id))
            .spawn(move || run_writer(queue, writer_engine, writer_history))
            .expect("the writer thread starts");
        Chain {
            config,
            engine,
            history,
            writer,
        }
    }

    /// Applies a command through the writer and returns its events.
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
        match answer.await {
            Ok(Ok(events)) => Ok(events),
            Ok(Err(rejection)) => Err(WriteError::Rejected(rejection)),
            Err(_) => Err(WriteError::Unavailable),
        }
    }

    /// Reads the engine under a short read lock.
    pub fn read_engine<R>(&self, read: impl FnOnce(&Engine) -> R) -> R {
        read(&self.engine.read())
    }

    /// Reads the history under a short read lock.
    pub fn read_history<R>(&self, read: impl FnOnce(&History) -> R) -> R {
        read(&self.history.read())
    }
}

fn run_writer(mut queue: mpsc::Receiver<WriteRequest>, engine: Arc<RwLock<Engine>>, history: Arc<RwLock<History>>) {
    let mut batch = Vec::with_capacity(MAX_WRITE_BATCH);
    while let Some(first) = queue.blocking_recv() {
        batch.push(first);
        while batch.len() < MAX_WRITE_BATCH {
            match queue.try_recv() {
                Ok(request) => batch.push(request),
                Err(_) => break,
            }
        }
        let mut replies = Vec::with_capacity(batch.len());
        for request in batch.drain(..) {
            let mut events = Vec::new();
            let result = engine.write().execute(request.command, now_ms(), &mut events);
            if result.is_ok() {
                history.write().apply(&events, request.authorization);
            }
            replies.push((request.reply, result.map(|()| events)));
        }
        // A client that went away no longer waits for its answer; that is not an error.
        for (reply, result) in replies {
            let _ = reply.send(result);
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
    /// Starts a writer for every chain.
    pub fn start(config: Config) -> Venue {
        let chains = config
            .chains
            .iter()
            .map(|chain| (chain.chain_id, Arc::new(Chain::start(chain.clone(), &config))))
            .collect();
        Venue { config, chains }
    }

    /// The chain with this id.
    pub fn chain(&self, chain_id: u64) -> Option<Arc<Chain>> {
        self.chains.get(&chain_id).cloned()
    }
}
