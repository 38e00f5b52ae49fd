//! One WebSocket connection of `GET /ws`: its reader (client messages, parsed and checked,
//! subscriptions forwarded to the chains' hubs), its writer (the outbox to the socket), pings,
//! and every limit a connection has: messages per second, message size, subscriptions, the
//! pong and idle timeouts. A graceful stop closes it with 1001.
//!
//! It renders no market data itself; the hubs do.

use std::collections::HashSet;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::extract::ws::{CloseFrame, Message, Utf8Bytes, WebSocket};
use futures_util::{SinkExt, StreamExt};
use tokio::sync::mpsc;

use super::orders::{OrderRequest, StreamOrders};
use crate::api::error::ApiError;
use crate::api::streams::hub::HubRequest;
use crate::api::streams::outbox::{Outbound, Outbox};
use crate::api::streams::protocol::{self, ChannelKey, ClientMessage, SubscribeRequest};
use crate::api::streams::Streams;
use dexd_venue::Venue;

/// Subscriptions one connection may hold.
pub const MAX_SUBSCRIPTIONS_PER_CONNECTION: usize = 64;
/// Client messages one connection may send per second (a burst of as many); more closes it.
pub const MAX_INBOUND_MESSAGES_PER_SECOND: u32 = 50;
/// The largest client message, in bytes; a larger one closes the connection (1009).
pub const MAX_INBOUND_MESSAGE_BYTES: usize = 64 * 1024;
/// Queued messages written to the socket together at most.
pub const MAX_FRAMES_PER_WRITE: usize = 64;
/// The write buffer of a connection: frames gather in it until the flush.
pub const WRITE_BUFFER_BYTES: usize = 64 * 1024;
/// The read buffer of a connection (client messages are small).
pub const READ_BUFFER_BYTES: usize = 4 * 1024;
/// How often the server pings.
pub const PING_INTERVAL_MS: u64 = 20_000;
/// How long a pong may take before the connection is closed.
pub const PONG_TIMEOUT_MS: u64 = 20_000;
/// How long a connection without subscriptions may stay silent before it is closed.
pub const IDLE_TIMEOUT_MS: u64 = 60_000;
/// How long a connection the server ended keeps reading and dropping what its client still
/// sends, waiting for the client's close: closing a socket with unread input resets it, and a
/// reset destroys what the client had not read yet (the `SLOW_CONSUMER` error, the close).
pub const CLOSE_LINGER_MS: u64 = 10_000;
/// How long one message may take to be written before the connection counts as stuck.
pub const WRITE_TIMEOUT_MS: u64 = 10_000;

static NEXT_CONNECTION: AtomicU64 = AtomicU64::new(1);

/// Serves one upgraded connection until it ends.
pub async fn serve(socket: WebSocket, app: Arc<crate::api::state::AppState>, peer: IpAddr) {
    let (venue, streams) = (Arc::clone(&app.venue), Arc::clone(&app.streams));
    let connection_id = NEXT_CONNECTION.fetch_add(1, Ordering::Relaxed);
    let (max_messages, max_bytes) = streams.queue_limits;
    let (outbox, queue) = Outbox::new(
        connection_id,
        max_messages,
        max_bytes,
        Arc::clone(&streams.queued_total),
    );
    let outbox = Arc::new(outbox);
    let (sink, inbound) = socket.split();
    let (writer_alive, writer_done) = tokio::sync::oneshot::channel::<()>();
    let writer = tokio::spawn(write(
        sink,
        queue,
        Arc::clone(&outbox),
        streams.shutdown_signal(),
        writer_alive,
    ));
    let orders = StreamOrders::start(app, Arc::clone(&outbox), peer);
    let chains = read(inbound, &venue, &streams, &outbox, &orders, writer_done).await;
    for chain_id in chains {
        streams.send(chain_id, HubRequest::Disconnected { connection_id });
    }
    // The reader ended: let the writer send what it has (a close, an error), then end.
    if !outbox.is_slow() {
        outbox.push_control(Outbound::Close(1000, "bye"));
    }
    let _ = tokio::time::timeout(Duration::from_millis(WRITE_TIMEOUT_MS), writer).await;
    streams.connection_closed(peer);
}

/// Writes the outbox to the socket until a close, a stop, a slow client or a stuck write.
async fn write(
    mut sink: futures_util::stream::SplitSink<WebSocket, Message>,
    mut queue: mpsc::Receiver<Outbound>,
    outbox: Arc<Outbox>,
    mut shutdown: tokio::sync::watch::Receiver<bool>,
    // Dropped when the writer ends, which ends the reader too.
    _alive: tokio::sync::oneshot::Sender<()>,
) {
    let write_timeout = Duration::from_millis(WRITE_TIMEOUT_MS);
    loop {
        let outbound = tokio::select! {
            biased;
            () = outbox.slow_signal.notified() => {
                tell_slow(&mut sink).await;
                return;
            }
            _ = shutdown.changed() => {
                let _ = tokio::time::timeout(write_timeout, sink.send(close(1001, "the server is shutting down"))).await;
                return;
            }
            outbound = queue.recv() => match outbound {
                Some(outbound) => outbound,
                None => return,
            },
        };
        // What else is queued goes out with it: many frames, one flush (one write to the
        // socket) instead of one each.
        let mut next = Some(outbound);
        let mut fed = 0;
        let mut last = false;
        while let Some(outbound) = next.take() {
            let message = match outbound {
                Outbound::Text(text) => {
                    outbox.written(text.as_str().len());
                    Message::Text(text)
                }
                Outbound::Ping => Message::Ping(Vec::new().into()),
                Outbound::Close(code, reason) => {
                    last = true;
                    close(code, reason)
                }
            };
            match await_write(sink.feed(message), &outbox).await {
                Written::Done => {}
                Written::Failed => return,
                Written::FoundSlow => {
                    // The error's send flushes the frame fed before it.
                    tell_slow(&mut sink).await;
                    return;
                }
            }
            fed += 1;
            if !last && fed < MAX_FRAMES_PER_WRITE {
                next = queue.try_recv().ok();
            }
        }
        match await_write(sink.flush(), &outbox).await {
            Written::Done if !last => {}
            Written::FoundSlow => {
                tell_slow(&mut sink).await;
                return;
            }
            _ => return,
        }
    }
}

/// How a write to the socket ended.
enum Written {
    Done,
    /// It failed, or took [`WRITE_TIMEOUT_MS`].
    Failed,
    /// It was done after the connection was found slow while it waited.
    FoundSlow,
}

/// Awaits one write, for at most [`WRITE_TIMEOUT_MS`] counted again from the moment the
/// connection is found slow: a client that stopped reading has jammed the socket before its
/// queue overflows, and without the fresh window the write in flight would time out before the
/// client came back to read, and the client would never learn why it was cut off.
async fn await_write<E>(write: impl std::future::Future<Output = Result<(), E>>, outbox: &Outbox) -> Written {
    let write_timeout = Duration::from_millis(WRITE_TIMEOUT_MS);
    tokio::pin!(write);
    tokio::select! {
        biased;
        written = tokio::time::timeout(write_timeout, &mut write) => match written {
            Ok(Ok(())) => Written::Done,
            _ => Written::Failed,
        },
        () = outbox.slow_signal.notified() => match tokio::time::timeout(write_timeout, write).await {
            Ok(Ok(())) => Written::FoundSlow,
            _ => Written::Failed,
        },
    }
}

/// Tells a client that fell behind `SLOW_CONSUMER`, then closes (each write bounded).
async fn tell_slow(sink: &mut futures_util::stream::SplitSink<WebSocket, Message>) {
    let write_timeout = Duration::from_millis(WRITE_TIMEOUT_MS);
    let error = ApiError::new(
        axum::http::StatusCode::SERVICE_UNAVAILABLE,
        "SLOW_CONSUMER",
        "this connection fell behind its messages and is closed; connect again and resubscribe",
    );
    let text = protocol::error("null", &error, None);
    let _ = tokio::time::timeout(write_timeout, sink.send(Message::Text(text.into()))).await;
    let _ = tokio::time::timeout(write_timeout, sink.send(close(1008, "slow consumer"))).await;
}

fn close(code: u16, reason: &'static str) -> Message {
    Message::Close(Some(CloseFrame {
        code,
        reason: Utf8Bytes::from_static(reason),
    }))
}

/// Reads client messages until the connection ends; returns the chains it subscribed on.
async fn read(
    mut inbound: futures_util::stream::SplitStream<WebSocket>,
    venue: &Venue,
    streams: &Streams,
    outbox: &Arc<Outbox>,
    orders: &StreamOrders,
    mut writer_done: tokio::sync::oneshot::Receiver<()>,
) -> HashSet<u64> {
    let mut held = Held::default();
    let mut budget = MessageBudget::new();
    let mut ping = tokio::time::interval(Duration::from_millis(PING_INTERVAL_MS));
    ping.tick().await;
    let mut heartbeat = Heartbeat {
        last_heard: Instant::now(),
        pong_due: None,
    };
    let mut shutdown = streams.shutdown_signal();
    loop {
        let message = tokio::select! {
            message = inbound.next() => message,
            _ = ping.tick() => {
                match heartbeat.tick(held.subscriptions.is_empty()) {
                    Some(close) => {
                        outbox.push_control(close);
                        return held.chains;
                    }
                    None => outbox.push_control(Outbound::Ping),
                }
                continue;
            }
            _ = shutdown.changed() => return held.chains,
            _ = &mut writer_done => {
                linger(&mut inbound, &mut shutdown).await;
                return held.chains;
            }
        };
        let message = match message {
            Some(Ok(message)) => message,
            Some(Err(error)) => {
                // Oversized messages end here as well as broken sockets.
                if error.to_string().to_lowercase().contains("too long") || error.to_string().contains("size") {
                    outbox.push_control(Outbound::Close(1009, "message too large"));
                }
                return held.chains;
            }
            None => return held.chains,
        };
        heartbeat.last_heard = Instant::now();
        match message {
            Message::Pong(_) => {
                heartbeat.pong_due = None;
                continue;
            }
            Message::Ping(_) => continue,
            Message::Close(_) => return held.chains,
            _ => {}
        }
        if !budget.take() {
            outbox.push_control(Outbound::Close(1008, "too many messages"));
            return held.chains;
        }
        match message {
            Message::Text(text) => held.answer(venue, streams, outbox, orders, text.as_str()),
            _ => {
                let error = ApiError::new(
                    axum::http::StatusCode::BAD_REQUEST,
                    "MALFORMED_BODY",
                    "messages are JSON text frames; binary frames are not read",
                );
                outbox.push(protocol::error("null", &error, None));
            }
        }
    }
}

/// After the server ended the connection (a slow consumer, a write that failed): reads and
/// drops what the client still sends until it closes too, at most [`CLOSE_LINGER_MS`], so that
/// closing the socket does not reset it and destroy the error and the close before the client
/// has read them.
async fn linger(
    inbound: &mut futures_util::stream::SplitStream<WebSocket>,
    shutdown: &mut tokio::sync::watch::Receiver<bool>,
) {
    let draining = async { while let Some(Ok(_)) = inbound.next().await {} };
    tokio::select! {
        _ = tokio::time::timeout(Duration::from_millis(CLOSE_LINGER_MS), draining) => {}
        _ = shutdown.changed() => {}
    }
}

/// When the connection last heard from its client, and when the answer to the last ping is due.
struct Heartbeat {
    last_heard: Instant,
    pong_due: Option<Instant>,
}

impl Heartbeat {
    /// At a ping tick: the close to send when the client missed its pong or sat idle with no
    /// subscription, else `None` (a ping goes out, its pong due within [`PONG_TIMEOUT_MS`]).
    fn tick(&mut self, no_subscriptions: bool) -> Option<Outbound> {
        if self.pong_due.is_some_and(|due| Instant::now() > due) {
            return Some(Outbound::Close(1001, "no pong"));
        }
        if no_subscriptions && self.last_heard.elapsed() > Duration::from_millis(IDLE_TIMEOUT_MS) {
            return Some(Outbound::Close(1000, "idle"));
        }
        if self.pong_due.is_none() {
            self.pong_due = Some(Instant::now() + Duration::from_millis(PONG_TIMEOUT_MS));
        }
        None
    }
}

/// What a connection holds: its subscriptions, and the chains they are on (whose hubs hear of
/// the connection's end).
#[derive(Default)]
struct Held {
    subscriptions: HashSet<ChannelKey>,
    chains: HashSet<u64>,
}

impl Held {
    /// Answers one client message.
    fn answer(&mut self, venue: &Venue, streams: &Streams, outbox: &Arc<Outbox>, orders: &StreamOrders, text: &str) {
        match protocol::parse(venue, text) {
            Err((id_json, error)) => {
                outbox.push(protocol::error(&id_json, &error, None));
            }
            Ok(ClientMessage::Ping { id_json }) => {
                outbox.push(protocol::message("pong", &id_json, serde_json::Map::new()));
            }
            Ok(ClientMessage::Subscribe(request)) => self.subscribe(venue, streams, outbox, request),
            Ok(ClientMessage::Unsubscribe { key, id_json }) => {
                self.unsubscribe(venue, streams, outbox, key, id_json);
            }
            Ok(ClientMessage::Order {
                id_json,
                action,
                fields,
            }) => orders.submit(
                OrderRequest {
                    id_json,
                    action,
                    fields,
                },
                outbox,
            ),
        }
    }

    fn subscribe(&mut self, venue: &Venue, streams: &Streams, outbox: &Arc<Outbox>, request: SubscribeRequest) {
        let key = request.key;
        let refuse = |error: ApiError, id_json: &str| {
            outbox.push(protocol::error(id_json, &error, Some(key.parameters(venue))));
        };
        if self.subscriptions.contains(&key) {
            let error = ApiError::new(
                axum::http::StatusCode::CONFLICT,
                "ALREADY_SUBSCRIBED",
                "this connection is already subscribed to this channel with these parameters",
            );
            return refuse(error, &request.id_json);
        }
        if self.subscriptions.len() >= MAX_SUBSCRIPTIONS_PER_CONNECTION {
            let error = ApiError::new(
                axum::http::StatusCode::UNPROCESSABLE_ENTITY,
                "TOO_MANY_SUBSCRIPTIONS",
                format!("a connection holds at most {MAX_SUBSCRIPTIONS_PER_CONNECTION} subscriptions"),
            );
            return refuse(error, &request.id_json);
        }
        let id_json = request.id_json.clone();
        let outbox_of_hub = Arc::clone(outbox);
        if streams.try_send(
            key.chain_id(),
            HubRequest::Subscribe {
                outbox: outbox_of_hub,
                request,
            },
        ) {
            self.subscriptions.insert(key);
            self.chains.insert(key.chain_id());
        } else {
            refuse(
                ApiError::unavailable("the stream is too busy to take a subscription now; retry shortly"),
                &id_json,
            );
        }
    }

    fn unsubscribe(
        &mut self,
        venue: &Venue,
        streams: &Streams,
        outbox: &Arc<Outbox>,
        key: ChannelKey,
        id_json: String,
    ) {
        if !self.subscriptions.remove(&key) {
            let error = ApiError::new(
                axum::http::StatusCode::NOT_FOUND,
                "NOT_SUBSCRIBED",
                "this connection has no subscription to this channel with these parameters",
            );
            outbox.push(protocol::error(&id_json, &error, Some(key.parameters(venue))));
            return;
        }
        streams.send(
            key.chain_id(),
            HubRequest::Unsubscribe {
                connection_id: outbox.connection_id,
                key,
                id_json,
                outbox: Arc::clone(outbox),
            },
        );
    }
}

/// A token bucket of client messages: [`MAX_INBOUND_MESSAGES_PER_SECOND`] a second, with a
/// burst of as many.
struct MessageBudget {
    tokens: f64,
    refilled: Instant,
}

impl MessageBudget {
    fn new() -> MessageBudget {
        MessageBudget {
            tokens: f64::from(MAX_INBOUND_MESSAGES_PER_SECOND),
            refilled: Instant::now(),
        }
    }

    fn take(&mut self) -> bool {
        let rate = f64::from(MAX_INBOUND_MESSAGES_PER_SECOND);
        let now = Instant::now();
        self.tokens = (self.tokens + now.duration_since(self.refilled).as_secs_f64() * rate).min(rate);
        self.refilled = now;
        if self.tokens >= 1.0 {
            self.tokens -= 1.0;
            true
        } else {
            false
        }
    }
}
