//! A stream client for the tests, on tokio-tungstenite (a WebSocket library the project did not
//! write): JSON in, JSON out, and a client-side book that checks every update as a trading
//! client would (its previousSequence chain and its checksum, computed here with crc32fast).

use std::collections::BTreeMap;
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde_json::Value;
use tokio_tungstenite::tungstenite::Message;

pub type Socket = tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// A connected client.
pub struct StreamClient {
    pub socket: Socket,
    /// A pause after each message sent, to stay within the server's messages per second.
    pub pace: Option<Duration>,
}

impl StreamClient {
    /// Connects to `/ws` of the server at `base_url` (`http://host:port`).
    pub async fn connect(base_url: &str) -> StreamClient {
        let url = format!("{}/ws", base_url.replacen("http://", "ws://", 1));
        let (socket, _) = tokio_tungstenite::connect_async(url)
            .await
            .expect("the upgrade succeeds");
        StreamClient { socket, pace: None }
    }

    /// Connects with a small receive buffer, so that a client that stops reading holds up the
    /// server after little data.
    pub async fn connect_with_small_buffer(base_url: &str) -> StreamClient {
        let authority = base_url.trim_start_matches("http://");
        let socket = tokio::net::TcpSocket::new_v4().unwrap();
        socket.set_recv_buffer_size(4096).unwrap();
        let stream = socket.connect(authority.parse().unwrap()).await.unwrap();
        let (socket, _) = tokio_tungstenite::client_async(
            format!("ws://{authority}/ws"),
            tokio_tungstenite::MaybeTlsStream::Plain(stream),
        )
        .await
        .expect("the upgrade succeeds");
        StreamClient { socket, pace: None }
    }

    pub async fn send(&mut self, message: Value) {
        self.send_raw(Message::Text(message.to_string().into())).await;
    }

    pub async fn send_raw(&mut self, message: Message) {
        self.socket.send(message).await.unwrap();
        if let Some(pause) = self.pace {
            tokio::time::sleep(pause).await;
        }
    }

    /// The next JSON message, within `timeout` (pings are answered by the library).
    pub async fn next_within(&mut self, timeout: Duration) -> Option<Value> {
        loop {
            let message = tokio::time::timeout(timeout, self.socket.next()).await.ok()??;
            match message.ok()? {
                Message::Text(text) => {
                    return Some(serde_json::from_str(text.as_str()).expect("every message is JSON"))
                }
                Message::Close(_) => return None,
                _ => continue,
            }
        }
    }

    /// The next JSON message; panics after 10 s.
    pub async fn next(&mut self) -> Value {
        self.next_within(Duration::from_secs(10))
            .await
            .expect("a message arrives")
    }

    /// Sends a message and returns the answer (the next message).
    pub async fn ask(&mut self, message: Value) -> Value {
        self.send(message).await;
        self.next().await
    }
}

/// One side of a client-side book: price text → (amount text, orders).
pub type Side = BTreeMap<String, (String, u64)>;

/// Levels as `(price, amount, orders)`, best first.
pub type Levels = Vec<(String, String, u64)>;

/// A book rebuilt from a subscription's snapshot and updates, checked at every step.
#[derive(Debug, Default, Clone)]
pub struct ClientBook {
    pub bids: Side,
    pub asks: Side,
    pub sequence: u64,
    pub depth: usize,
    pub updates: usize,
}

fn decimal_key(text: &str) -> f64 {
    text.parse().unwrap()
}

impl ClientBook {
    /// Bids best first (highest), asks best first (lowest), each `(price, amount, orders)`.
    pub fn levels(&self) -> (Levels, Levels) {
        let mut bids: Vec<_> = self.bids.iter().map(|(p, (a, o))| (p.clone(), a.clone(), *o)).collect();
        bids.sort_by(|a, b| decimal_key(&b.0).partial_cmp(&decimal_key(&a.0)).unwrap());
        let mut asks: Vec<_> = self.asks.iter().map(|(p, (a, o))| (p.clone(), a.clone(), *o)).collect();
        asks.sort_by(|a, b| decimal_key(&a.0).partial_cmp(&decimal_key(&b.0)).unwrap());
        (bids, asks)
    }

    /// The contract's checksum of this book.
    pub fn checksum(&self) -> u32 {
        let (bids, asks) = self.levels();
        let text: Vec<String> = bids
            .iter()
            .take(25)
            .chain(asks.iter().take(25))
            .map(|(price, amount, _)| format!("{price}:{amount}"))
            .collect();
        crc32fast::hash(text.join("|").as_bytes())
    }

    fn apply_levels(side: &mut Side, levels: &Value) {
        for level in levels.as_array().expect("levels are an array") {
            let price = level["price"].as_str().unwrap().to_string();
            let amount = level["amount"].as_str().unwrap().to_string();
            if amount == "0" {
                assert!(
                    side.remove(&price).is_some(),
                    "an update removed level {price} the client did not have"
                );
            } else {
                side.insert(price, (amount, level["orders"].as_u64().unwrap()));
            }
        }
    }

    /// Applies a book message (snapshot or update); panics on a gap, a wrong checksum or a
    /// crossed book.
    pub fn apply(&mut self, message: &Value) {
        assert_eq!(message["channel"], "book", "{message}");
        match message["event"].as_str() {
            Some("snapshot") => {
                self.bids.clear();
                self.asks.clear();
                Self::apply_levels(&mut self.bids, &message["bids"]);
                Self::apply_levels(&mut self.asks, &message["asks"]);
            }
            Some("update") => {
                assert_eq!(
                    message["previousSequence"].as_u64(),
                    Some(self.sequence),
                    "a gap: the update does not follow the last message: {message}"
                );
                Self::apply_levels(&mut self.bids, &message["bids"]);
                Self::apply_levels(&mut self.asks, &message["asks"]);
                self.updates += 1;
            }
            other => panic!("unexpected book event {other:?}: {message}"),
        }
        self.sequence = message["sequence"].as_u64().unwrap();
        assert_eq!(
            message["checksum"].as_u64(),
            Some(u64::from(self.checksum())),
            "the checksum does not match the rebuilt book after {message}"
        );
        let (bids, asks) = self.levels();
        if let (Some(bid), Some(ask)) = (bids.first(), asks.first()) {
            assert!(
                decimal_key(&bid.0) < decimal_key(&ask.0),
                "a crossed book: {bid:?} {ask:?}"
            );
        }
        assert!(
            bids.len() <= self.depth && asks.len() <= self.depth,
            "more levels than the depth"
        );
    }
}
