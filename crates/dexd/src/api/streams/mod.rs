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
    connections_per_ip: Mutex<Connections>,
    max_connections_per_ip: usize,
    max_connections: usize,
    /// Each connection's outbox bounds: messages and bytes.
    pub queue_limits: (usize, usize),
    /// The bytes waiting in all outboxes, against `[limits] stream_queue_bytes_total`.
    pub queued_total: Arc<outbox::QueuedTotal>,
    shutdown: watch::Sender<bool>,
}

/// An IPv6 network's (a /48's) clients hold at most this many times a client's stream
/// connections together: one organisation's addresses cannot take every slot of the server.
pub const STREAM_CONNECTIONS_PER_NETWORK_MULTIPLE: usize = 10;

/// The open connections by client (an IPv4 address, an IPv6 /56) and by IPv6 network (a /48).
#[derive(Default)]
struct Connections {
    by_client: HashMap<IpAddr, usize>,
    by_network: HashMap<IpAddr, usize>,
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
            connections_per_ip: Mutex::new(Connections::default()),
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
        let network = crate::api::rate_limit::client_wider_network(ip);
        let ip = crate::api::rate_limit::client_network(ip);
        let mut connections = self.connections_per_ip.lock();
        let total: usize = connections.by_client.values().sum();
        if total >= self.max_connections {
            return Err(Refusal::TooMany);
        }
        if connections.by_client.get(&ip).copied().unwrap_or(0) >= self.max_connections_per_ip {
            return Err(Refusal::TooManyFromAddress);
        }
        if let Some(network) = network {
            let in_network = connections.by_network.entry(network).or_insert(0);
            if *in_network >= self.max_connections_per_ip * STREAM_CONNECTIONS_PER_NETWORK_MULTIPLE {
                return Err(Refusal::TooManyFromAddress);
            }
            *in_network += 1;
        }
        *connections.by_client.entry(ip).or_insert(0) += 1;
        Ok(())
    }

    /// A connection from `ip` ended.
    pub fn connection_closed(&self, ip: IpAddr) {
        let network = crate::api::rate_limit::client_wider_network(ip);
        let ip = crate::api::rate_limit::client_network(ip);
        let mut connections = self.connections_per_ip.lock();
        let Connections { by_client, by_network } = &mut *connections;
        for (map, key) in [(by_client, Some(ip)), (by_network, network)] {
            let Some(key) = key else { continue };
            if let Some(count) = map.get_mut(&key) {
                *count -= 1;
                if *count == 0 {
                    map.remove(&key);
                }
            }
        }
    }

    /// Open stream connections.
    pub fn open_connections(&self) -> usize {
        self.connections_per_ip.lock().by_client.values().sum()
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

#[cfg(test)]
mod tests {
    use super::*;

    fn streams(per_client: usize, total: usize) -> Streams {
        Streams {
            hubs: HashMap::new(),
            subscriptions: HashMap::new(),
            connections_per_ip: Mutex::new(Connections::default()),
            max_connections_per_ip: per_client,
            max_connections: total,
            queue_limits: (1, 1),
            queued_total: Arc::new(outbox::QueuedTotal::new(1)),
            shutdown: watch::channel(false).0,
        }
    }

    #[test]
    fn an_ipv6_client_is_its_slash_56_and_a_slash_48_holds_ten_clients_worth() {
        let streams = streams(2, 1_000);
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        // Two from one /56, whichever /64s they come from; a third is refused.
        streams.admit(ip("2001:db8:0:100::1")).unwrap();
        streams.admit(ip("2001:db8:0:1ff::9")).unwrap();
        assert_eq!(streams.admit(ip("2001:db8:0:1aa::1")), Err(Refusal::TooManyFromAddress));
        // The /48 holds twenty across its /56s, then refuses even a fresh /56.
        for client in 2..=10u32 {
            for _ in 0..2 {
                streams.admit(ip(&format!("2001:db8:0:{client:x}00::1"))).unwrap();
            }
        }
        assert_eq!(
            streams.admit(ip("2001:db8:0:ff00::1")),
            Err(Refusal::TooManyFromAddress)
        );
        assert!(streams.admit(ip("2001:db8:1::1")).is_ok(), "another /48");
        // A closed connection gives its slot back to both counts.
        streams.connection_closed(ip("2001:db8:0:100::1"));
        assert!(streams.admit(ip("2001:db8:0:ff00::1")).is_ok());
        assert_eq!(streams.open_connections(), 21);
    }
}
