//! Live streams over WebSocket (`GET /ws`, `docs/streams.md`): channels `book`, `trades`,
//! `candles`, `orders` and `balances`, each a snapshot (where the channel has one) and then the
//! updates after it, none left out, only what is durable.
//!
//! - `protocol`: client messages read and checked like REST parameters; server messages.
//! - `hub`: one task per chain, between the chain's publications and the subscriptions.
//! - `outbox`: a connection's bounded queue; a slow client is told and closed.
//! - `book`: book changes and the checksum.
//!
//! A client's connection (its socket, and orders sent over it) is `api::stream_connections`'s,
//! above this module: the streams know no handler and no `AppState`. This module owns the connection limits per client address and the graceful stop of every
//! connection; the chains' writers know nothing of it.

pub(crate) mod book;
pub(crate) mod hub;
pub(crate) mod outbox;
pub(crate) mod protocol;

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{mpsc, watch};

use self::hub::HubRequest;
use dexd_venue::Venue;

/// The venue's streams: a hub per chain, the open connections per client address, the stop.
pub struct Streams {
    hubs: HashMap<u64, mpsc::Sender<HubRequest>>,
    /// Each chain's live subscriptions, kept by its hub.
    subscriptions: HashMap<u64, Arc<std::sync::atomic::AtomicUsize>>,
    connections_per_ip: Mutex<HashMap<IpAddr, usize>>,
    max_connections_per_ip: usize,
    max_connections: usize,
    /// Each connection's outbox bounds: messages and bytes.
    pub queue_limits: (usize, usize),
    /// The bytes waiting in all outboxes, against `[limits] stream_queue_bytes_total`.
    pub queued_total: Arc<outbox::QueuedTotal>,
    shutdown: watch::Sender<bool>,
}

/// Why a connection was not admitted.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// The client's address holds its limit of connections.
    TooManyFromAddress,
    /// The server holds its limit of stream connections.
    TooMany,
}

impl Streams {
    /// Starts a hub for every chain of the venue (on the current runtime).
    pub fn start(venue: &Arc<Venue>) -> Streams {
        let (mut hubs, mut subscriptions) = (HashMap::new(), HashMap::new());
        for chain_config in &venue.config.chains {
            let chain = venue.chain(chain_config.chain_id).expect("every configured chain runs");
            let live = Arc::new(std::sync::atomic::AtomicUsize::new(0));
            if let Some(requests) = hub::start(Arc::clone(venue), chain, Arc::clone(&live)) {
                hubs.insert(chain_config.chain_id, requests);
                subscriptions.insert(chain_config.chain_id, live);
            }
        }
        let (shutdown, _) = watch::channel(false);
        Streams {
            hubs,
            subscriptions,
            connections_per_ip: Mutex::new(HashMap::new()),
            max_connections_per_ip: venue.config.limits.max_stream_connections_per_ip,
            max_connections: venue.config.limits.max_stream_connections,
            queue_limits: (
                venue.config.limits.stream_queue_messages_per_connection,
                venue.config.limits.stream_queue_bytes_per_connection,
            ),
            queued_total: Arc::new(outbox::QueuedTotal::new(venue.config.limits.stream_queue_bytes_total)),
            shutdown,
        }
    }

    /// Admits a connection from `ip`, counting it until [`Streams::connection_closed`].
    pub fn admit(&self, ip: IpAddr) -> Result<(), Refusal> {
        let ip = crate::api::rate_limit::client_network(ip);
        let mut connections = self.connections_per_ip.lock();
        let total: usize = connections.values().sum();
        if total >= self.max_connections {
            return Err(Refusal::TooMany);
        }
        let from_address = connections.entry(ip).or_insert(0);
        if *from_address >= self.max_connections_per_ip {
            return Err(Refusal::TooManyFromAddress);
        }
        *from_address += 1;
        Ok(())
    }

    /// A connection from `ip` ended.
    pub fn connection_closed(&self, ip: IpAddr) {
        let ip = crate::api::rate_limit::client_network(ip);
        let mut connections = self.connections_per_ip.lock();
        if let Some(count) = connections.get_mut(&ip) {
            *count -= 1;
            if *count == 0 {
                connections.remove(&ip);
            }
        }
    }

    /// Open stream connections.
    pub fn open_connections(&self) -> usize {
        self.connections_per_ip.lock().values().sum()
    }

    /// Live subscriptions on a chain (as of its hub's last request).
    pub fn subscriptions(&self, chain_id: u64) -> usize {
        self.subscriptions
            .get(&chain_id)
            .map_or(0, |live| live.load(std::sync::atomic::Ordering::Relaxed))
    }

    /// Sends a request to a chain's hub without waiting; false when its queue is full.
    pub fn try_send(&self, chain_id: u64, request: HubRequest) -> bool {
        self.hubs
            .get(&chain_id)
            .is_some_and(|hub| hub.try_send(request).is_ok())
    }

    /// Sends a request that must arrive (an unsubscribe, a disconnect): when the hub's queue
    /// is full it waits for room in a task of its own.
    pub fn send(&self, chain_id: u64, request: HubRequest) {
        let Some(hub) = self.hubs.get(&chain_id) else {
            return;
        };
        if let Err(mpsc::error::TrySendError::Full(request)) = hub.try_send(request) {
            let hub = hub.clone();
            tokio::spawn(async move {
                let _ = hub.send(request).await;
            });
        }
    }

    /// Changes to `true` when the server stops.
    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    /// Tells every connection that the server stops; each closes with 1001.
    pub fn shut_down(&self) {
        let _ = self.shutdown.send(true);
    }
}
