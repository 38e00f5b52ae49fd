//! A connection's outgoing queue, bounded in messages and in bytes: the hubs push into it
//! without ever waiting; a connection whose queue is full is marked slow, gets nothing more,
//! and its task tells the client `SLOW_CONSUMER` and closes it. Nothing is ever skipped
//! silently: a subscription either receives every message, or ends with its connection.
//!
//! Every queue also draws on one budget of bytes for all connections ([`QueuedTotal`]), so that
//! the server's memory for streams is bounded whatever the number of connections: a push that
//! would pass it ends that connection like a full queue of its own.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use axum::extract::ws::Utf8Bytes;
use tokio::sync::{mpsc, Notify};

// The defaults of the three stream queue limits (`[limits] stream_queue_*`) are the venue
// configuration's: `MAX_QUEUED_MESSAGES_PER_CONNECTION`, `MAX_QUEUED_BYTES_PER_CONNECTION` and
// `MAX_QUEUED_BYTES_TOTAL` in `dexd_venue::config`.

/// The bytes waiting in every connection's queue, against their limit.
#[derive(Debug)]
pub struct QueuedTotal {
    bytes: AtomicUsize,
    max_bytes: usize,
    /// Connections told `SLOW_CONSUMER` since the start, for `/metrics`.
    slow_connections: std::sync::atomic::AtomicU64,
}

impl QueuedTotal {
    /// A budget of `max_bytes` for all queues.
    pub fn new(max_bytes: usize) -> QueuedTotal {
        QueuedTotal {
            bytes: AtomicUsize::new(0),
            max_bytes,
            slow_connections: std::sync::atomic::AtomicU64::new(0),
        }
    }

    /// How many connections fell behind and were told `SLOW_CONSUMER` since the start.
    pub fn slow_connections(&self) -> u64 {
        self.slow_connections.load(Ordering::Relaxed)
    }

    /// Bytes waiting in all queues now.
    pub fn bytes(&self) -> usize {
        self.bytes.load(Ordering::Acquire)
    }

    /// Takes `length` bytes from the budget; false (taking nothing) when it would pass it.
    fn take(&self, length: usize) -> bool {
        let queued = self.bytes.fetch_add(length, Ordering::AcqRel) + length;
        if queued > self.max_bytes {
            self.bytes.fetch_sub(length, Ordering::AcqRel);
            return false;
        }
        true
    }

    fn give_back(&self, length: usize) {
        self.bytes.fetch_sub(length, Ordering::AcqRel);
    }
}

/// What a connection's task writes to its socket.
#[derive(Debug)]
pub enum Outbound {
    /// A JSON text message; its bytes may be shared with other connections' queues (one frame
    /// rendered for every subscriber with the same `id`).
    Text(Utf8Bytes),
    /// A WebSocket ping.
    Ping,
    /// A close frame with its code and reason; the connection ends after it.
    Close(u16, &'static str),
}

/// The hubs' and the connection's handle on the queue.
#[derive(Debug)]
pub struct Outbox {
    /// The connection's number, unique in the process.
    pub connection_id: u64,
    sender: mpsc::Sender<Outbound>,
    queued_bytes: AtomicUsize,
    max_queued_bytes: usize,
    total: std::sync::Arc<QueuedTotal>,
    slow: AtomicBool,
    /// Wakes the connection's writer when it turned slow.
    pub slow_signal: Notify,
}

impl Outbox {
    /// A new queue for connection `connection_id` of at most `max_messages` and
    /// `max_bytes`, drawing on `total`, and its receiving end.
    pub fn new(
        connection_id: u64,
        max_messages: usize,
        max_bytes: usize,
        total: std::sync::Arc<QueuedTotal>,
    ) -> (Outbox, mpsc::Receiver<Outbound>) {
        let (sender, receiver) = mpsc::channel(max_messages);
        (
            Outbox {
                connection_id,
                sender,
                queued_bytes: AtomicUsize::new(0),
                max_queued_bytes: max_bytes,
                total,
                slow: AtomicBool::new(false),
                slow_signal: Notify::new(),
            },
            receiver,
        )
    }

    /// Queues a message without waiting. False when the connection is (or just turned) slow:
    /// the message, and every later one, is not delivered, and the connection will close.
    pub fn push(&self, text: impl Into<Utf8Bytes>) -> bool {
        if self.slow.load(Ordering::Acquire) {
            return false;
        }
        let text: Utf8Bytes = text.into();
        let length = text.as_str().len();
        if !self.total.take(length) {
            self.mark_slow();
            return false;
        }
        let queued = self.queued_bytes.fetch_add(length, Ordering::AcqRel) + length;
        if queued > self.max_queued_bytes || self.sender.try_send(Outbound::Text(text)).is_err() {
            self.queued_bytes.fetch_sub(length, Ordering::AcqRel);
            self.total.give_back(length);
            self.mark_slow();
            return false;
        }
        true
    }

    /// Queues a control frame (a ping, a close) without waiting; a full queue marks the
    /// connection slow.
    pub fn push_control(&self, outbound: Outbound) {
        if self.sender.try_send(outbound).is_err() {
            self.mark_slow();
        }
    }

    /// Whether the connection fell behind.
    pub fn is_slow(&self) -> bool {
        self.slow.load(Ordering::Acquire)
    }

    fn mark_slow(&self) {
        if !self.slow.swap(true, Ordering::AcqRel) {
            self.total.slow_connections.fetch_add(1, Ordering::Relaxed);
            tracing::info!(
                connection = self.connection_id,
                queued_bytes = self.queued_bytes(),
                "a stream client fell behind; it is told SLOW_CONSUMER and disconnected"
            );
            self.slow_signal.notify_one();
        }
    }

    /// The writer took a message of `length` bytes off the queue.
    pub fn written(&self, length: usize) {
        self.queued_bytes.fetch_sub(length, Ordering::AcqRel);
        self.total.give_back(length);
    }

    /// Bytes waiting now.
    pub fn queued_bytes(&self) -> usize {
        self.queued_bytes.load(Ordering::Acquire)
    }
}

impl Drop for Outbox {
    /// What was never written goes back to the budget with the connection.
    fn drop(&mut self) {
        self.total.give_back(*self.queued_bytes.get_mut());
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use dexd_venue::config::{MAX_QUEUED_BYTES_PER_CONNECTION, MAX_QUEUED_MESSAGES_PER_CONNECTION};

    fn unlimited() -> Arc<QueuedTotal> {
        Arc::new(QueuedTotal::new(usize::MAX))
    }

    #[test]
    fn a_full_queue_marks_the_connection_slow_and_takes_nothing_more() {
        let (outbox, mut receiver) = Outbox::new(
            1,
            MAX_QUEUED_MESSAGES_PER_CONNECTION,
            MAX_QUEUED_BYTES_PER_CONNECTION,
            unlimited(),
        );
        assert!(outbox.push("a".repeat(100)));
        assert_eq!(outbox.queued_bytes(), 100);
        // Over the byte limit: refused, slow from now on, even for a small message.
        assert!(!outbox.push("b".repeat(MAX_QUEUED_BYTES_PER_CONNECTION)));
        assert!(outbox.is_slow());
        assert!(!outbox.push("c".to_string()));
        let Some(Outbound::Text(first)) = receiver.try_recv().ok() else {
            panic!("the first message is queued")
        };
        outbox.written(first.len());
        assert_eq!(outbox.queued_bytes(), 0);
        assert!(receiver.try_recv().is_err(), "nothing after the first was queued");
        let (outbox, _receiver) = Outbox::new(
            2,
            MAX_QUEUED_MESSAGES_PER_CONNECTION,
            MAX_QUEUED_BYTES_PER_CONNECTION,
            unlimited(),
        );
        for _ in 0..MAX_QUEUED_MESSAGES_PER_CONNECTION {
            assert!(outbox.push("x".to_string()));
        }
        assert!(!outbox.push("x".to_string()), "the message count is bounded too");
        assert!(outbox.is_slow());
    }

    #[test]
    fn all_queues_together_are_bounded_and_a_closed_connection_gives_its_bytes_back() {
        let total = Arc::new(QueuedTotal::new(1_000));
        let (first, _first_queue) = Outbox::new(1, 100, 800, Arc::clone(&total));
        let (second, _second_queue) = Outbox::new(2, 100, 800, Arc::clone(&total));
        assert!(first.push("a".repeat(600)));
        assert!(second.push("b".repeat(300)));
        assert_eq!(total.bytes(), 900);
        // Within its own limit, past the total: that connection is ended, the other goes on.
        assert!(!second.push("c".repeat(200)));
        assert!(second.is_slow() && !first.is_slow());
        assert_eq!(total.bytes(), 900);
        first.written(600);
        assert_eq!(total.bytes(), 300);
        drop(second);
        assert_eq!(total.bytes(), 0, "the closed connection's unwritten bytes came back");
        assert!(first.push("d".repeat(800)));
    }
}
