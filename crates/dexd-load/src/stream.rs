//! The stream workload (`--workload stream`): many WebSocket connections subscribed to the book
//! and trades of one pair while orders are placed; the delivery latency of trades from the
//! placement's acknowledgment (as the generator received it) to their arrival on a
//! subscription, and what the subscribers cost the server (placement throughput, memory per
//! connection).
//!
//! Every connection reads everything it is sent; one in [`MEASURING_EVERY`] also matches the
//! trades it receives to the acknowledgments, so that the generator's own CPU stays small.

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Instant;

use futures_util::{SinkExt, StreamExt};
use hdrhistogram::Histogram;
use tokio_tungstenite::tungstenite::Message;

/// One connection in this many measures latency.
pub const MEASURING_EVERY: usize = 10;
/// Acknowledgments remembered at most; past this the log starts over.
const MAX_REMEMBERED_ACKS: usize = 1_000_000;

/// When each placement that traded was acknowledged, by order id.
#[derive(Debug, Default)]
pub struct AckLog(std::sync::Mutex<HashMap<String, Instant>>);

impl AckLog {
    /// Records the acknowledgment of a placement whose answer is `body`, if it made trades.
    pub fn record(&self, body: &[u8]) {
        let Ok(text) = std::str::from_utf8(body) else { return };
        if !text.contains("\"tradeId\"") {
            return;
        }
        let Some(start) = text.find("\"orderId\":\"").map(|position| position + 11) else {
            return;
        };
        let Some(order_id) = text.get(start..start + 66) else {
            return;
        };
        let mut acks = self.0.lock().expect("not poisoned");
        if acks.len() >= MAX_REMEMBERED_ACKS {
            acks.clear();
        }
        acks.insert(order_id.to_string(), Instant::now());
    }

    fn acknowledged(&self, order_id: &str) -> Option<Instant> {
        self.0.lock().expect("not poisoned").get(order_id).copied()
    }
}

/// What the subscribers saw.
#[derive(Debug)]
pub struct StreamReport {
    /// Connections subscribed.
    pub connections: usize,
    /// Messages received in all.
    pub messages: u64,
    /// Bytes received in all.
    pub bytes: u64,
    /// Trades matched to their acknowledgment.
    pub samples: u64,
    /// Trades that arrived before the generator had their placement's answer.
    pub before_ack: u64,
    /// Latency from acknowledgment to receipt, µs: p50, p90, p99, p99.9, max.
    pub latency_us: [u64; 5],
    /// Connections closed by the server (a slow consumer, for one).
    pub closed: u64,
}

struct Shared {
    acks: Arc<AckLog>,
    stop: AtomicBool,
    messages: AtomicU64,
    bytes: AtomicU64,
    closed: AtomicU64,
}

/// Subscribers running until [`Subscribers::finish`].
pub struct Subscribers {
    shared: Arc<Shared>,
    tasks: Vec<tokio::task::JoinHandle<(Histogram<u64>, u64)>>,
}

/// What each stream connection watches of ETH/USDC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum WatchedBook {
    /// The book at depth 25, every change, and the trades (whose delivery latency is measured).
    Book,
    /// The top 10 levels of each side whole, at most once per this many ms, and nothing else:
    /// what a depth channel costs on its own.
    Depth { interval_ms: u16 },
}

impl WatchedBook {
    /// The subscribe message with the tag `id` on `chain_id`.
    fn subscribe(self, id: usize, chain_id: u64) -> String {
        let common = format!("\"op\":\"subscribe\",\"id\":{id},\"chainId\":\"{chain_id}\",\"pair\":\"ETH/USDC\"");
        match self {
            WatchedBook::Book => format!("{{{common},\"channel\":\"book\",\"depth\":25}}"),
            WatchedBook::Depth { interval_ms } => {
                format!("{{{common},\"channel\":\"depth\",\"levels\":10,\"intervalMs\":{interval_ms}}}")
            }
        }
    }
}

/// Opens `connections` connections to `target`'s `/ws`, each subscribed to `watched` of ETH/USDC
/// on `chain_id`; returns once every one has its book snapshot. Each connection tags its
/// subscriptions with its own index, or all with 0 when `shared_id` (the server then frames a
/// message once for all of them).
pub async fn open_subscribers(
    target: &str,
    chain_id: u64,
    connections: usize,
    watched: WatchedBook,
    shared_id: bool,
    acks: Arc<AckLog>,
) -> Result<Subscribers, String> {
    let url = format!("{}/ws", target.replacen("http://", "ws://", 1));
    let shared = Arc::new(Shared {
        acks,
        stop: AtomicBool::new(false),
        messages: AtomicU64::new(0),
        bytes: AtomicU64::new(0),
        closed: AtomicU64::new(0),
    });
    let mut tasks = Vec::with_capacity(connections);
    let mut ready = Vec::with_capacity(connections);
    for index in 0..connections {
        let (mut socket, _) = tokio_tungstenite::connect_async(&url)
            .await
            .map_err(|error| format!("connection {index}: {error}"))?;
        let id = if shared_id { 0 } else { index };
        let trades = format!(
            "{{\"op\":\"subscribe\",\"id\":{id},\"channel\":\"trades\",\"chainId\":\"{chain_id}\",\"pair\":\"ETH/USDC\"}}"
        );
        let subscriptions = match watched {
            WatchedBook::Book => vec![watched.subscribe(id, chain_id), trades],
            WatchedBook::Depth { .. } => vec![watched.subscribe(id, chain_id)],
        };
        for subscribe in subscriptions {
            socket
                .send(Message::Text(subscribe.into()))
                .await
                .map_err(|error| error.to_string())?;
        }
        let (snapshot_seen, snapshot) = tokio::sync::oneshot::channel();
        ready.push(snapshot);
        tasks.push(tokio::spawn(read(
            socket,
            Arc::clone(&shared),
            index % MEASURING_EVERY == 0,
            snapshot_seen,
        )));
    }
    for snapshot in ready {
        let _ = snapshot.await;
    }
    Ok(Subscribers { shared, tasks })
}

type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

async fn read(
    mut socket: Socket,
    shared: Arc<Shared>,
    measuring: bool,
    snapshot_seen: tokio::sync::oneshot::Sender<()>,
) -> (Histogram<u64>, u64) {
    let mut histogram = Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).expect("bounds are valid");
    let mut before_ack = 0;
    let mut snapshot_seen = Some(snapshot_seen);
    while !shared.stop.load(Ordering::Relaxed) {
        let message = match tokio::time::timeout(std::time::Duration::from_millis(200), socket.next()).await {
            Err(_) => continue,
            Ok(Some(Ok(message))) => message,
            Ok(_) => {
                shared.closed.fetch_add(1, Ordering::Relaxed);
                break;
            }
        };
        let Message::Text(text) = message else { continue };
        let received = Instant::now();
        shared.messages.fetch_add(1, Ordering::Relaxed);
        shared.bytes.fetch_add(text.len() as u64, Ordering::Relaxed);
        let text = text.as_str();
        if snapshot_seen.is_some() && text.starts_with("{\"event\":\"snapshot\"") {
            if let Some(seen) = snapshot_seen.take() {
                let _ = seen.send(());
            }
        }
        if !measuring || !text.contains("\"channel\":\"trades\"") {
            continue;
        }
        for piece in text.split("\"takerOrderId\":\"").skip(1) {
            let Some(order_id) = piece.get(..66) else { continue };
            match shared.acks.acknowledged(order_id) {
                Some(acknowledged) => {
                    let latency = received
                        .saturating_duration_since(acknowledged)
                        .as_micros()
                        .clamp(1, 120_000_000) as u64;
                    histogram.record(latency).expect("within bounds");
                }
                None => before_ack += 1,
            }
        }
    }
    let _ = socket.close(None).await;
    (histogram, before_ack)
}

impl Subscribers {
    /// Stops every subscriber and reports what they saw.
    /// Messages received so far, by every connection.
    pub fn messages(&self) -> u64 {
        self.shared.messages.load(Ordering::Relaxed)
    }

    pub async fn finish(self) -> StreamReport {
        self.shared.stop.store(true, Ordering::Relaxed);
        let mut histogram = Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).expect("bounds are valid");
        let mut before_ack = 0;
        let connections = self.tasks.len();
        for task in self.tasks {
            if let Ok((connection_histogram, connection_before_ack)) = task.await {
                histogram.add(&connection_histogram).expect("same bounds");
                before_ack += connection_before_ack;
            }
        }
        StreamReport {
            connections,
            messages: self.shared.messages.load(Ordering::Relaxed),
            bytes: self.shared.bytes.load(Ordering::Relaxed),
            samples: histogram.len(),
            before_ack,
            latency_us: [
                histogram.value_at_quantile(0.5),
                histogram.value_at_quantile(0.9),
                histogram.value_at_quantile(0.99),
                histogram.value_at_quantile(0.999),
                histogram.max(),
            ],
            closed: self.shared.closed.load(Ordering::Relaxed),
        }
    }
}

/// The resident memory of a process, in bytes (Linux).
/// The CPU time process `pid` has used in all (user and system), in seconds, from
/// `/proc/PID/stat` (in ticks of USER_HZ, 100 a second on Linux).
pub fn cpu_seconds(pid: u32) -> Option<f64> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    // The fields after the command's closing parenthesis: state is the first, utime the 12th.
    let fields: Vec<&str> = stat.rsplit_once(')')?.1.split_whitespace().collect();
    let user: u64 = fields.get(11)?.parse().ok()?;
    let system: u64 = fields.get(12)?.parse().ok()?;
    Some((user + system) as f64 / 100.0)
}

pub fn resident_bytes(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with("VmRSS:"))?;
    let kibibytes: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kibibytes * 1024)
}
