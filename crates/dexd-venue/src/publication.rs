//! What a chain's writer publishes for the live streams, and only after the journal commit that
//! made it durable: each journaled batch's commands with their events and their journal entries,
//! and the views of the books and candles it changed that the streams asked for.
//!
//! The streams keep their own copy of the engine, which follows the journal entries published,
//! and take their snapshots from it: the writer is asked for one thing only, a copy of its engine
//! between two batches, once when the streams start and again after an overflow. That copy comes
//! through the publications in the same order as the batches, so the streams know exactly which
//! batches it includes.
//!
//! The writer never waits for the streams: the publication queue is bounded, and a batch that
//! finds it full is dropped and the queue marked overflowed, which the streams answer by
//! closing every subscription (clients resubscribe and get new snapshots). No subscription ever
//! sees a gap. This module knows nothing of WebSockets or JSON.

use std::sync::atomic::{AtomicBool, AtomicU16, AtomicUsize, Ordering};
use std::sync::Arc;

use dexd_core::{Candle, CandleInterval, Engine, Event, LevelView, PairIndex};

use dexd_store::{JournalEntry, Projection};

/// Publications that may wait for the streams before the writer drops one and marks the queue
/// overflowed.
pub const MAX_PUBLICATION_BACKLOG: usize = 4_096;
/// The deepest book view the writer publishes.
pub const MAX_PUBLISHED_BOOK_DEPTH: usize = 1_000;
/// The most candles of one interval published after one batch (a batch spans few periods).
pub const MAX_PUBLISHED_CANDLES: usize = 16;

/// One pair's book as of a journal position: its sequence (the REST book's numbering) and the
/// best levels of each side, best first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BookView {
    /// Which pair.
    pub pair: PairIndex,
    /// The book's sequence number.
    pub sequence: u64,
    /// Bids, best first.
    pub bids: Vec<LevelView>,
    /// Asks, best first.
    pub asks: Vec<LevelView>,
}

/// A pair's candles of one interval that a batch's trades changed, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandleView {
    /// Which pair.
    pub pair: PairIndex,
    /// Which interval.
    pub interval: CandleInterval,
    /// The candles from the period of the batch's first trade on.
    pub candles: Vec<Candle>,
}

/// A journaled batch, for the streams.
#[derive(Debug)]
pub struct PublishedBatch {
    /// Its commands in journal order, with their events and placements' signatures.
    pub commands: Vec<Projection>,
    /// Its journal entries, as appended: what a copy of the engine follows.
    pub journal: Vec<JournalEntry>,
    /// The books it changed, for the pairs whose book is watched.
    pub books: Vec<BookView>,
    /// The candles it changed, for the pairs and intervals that are watched.
    pub candles: Vec<CandleView>,
}

/// A read the streams ask of the writer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StreamRead {
    /// A copy of the engine, for the streams' copy that follows the journal.
    EngineCopy,
}

/// The writer's answer to a [`StreamRead`].
pub enum StreamReadAnswer {
    /// The engine as of the answer's position.
    EngineCopy(Box<Engine>),
}

impl std::fmt::Debug for StreamReadAnswer {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StreamReadAnswer::EngineCopy(_) => formatter.write_str("EngineCopy"),
        }
    }
}

/// What comes out of the publication queue, in journal order.
#[derive(Debug)]
pub enum Publication {
    /// A journaled batch.
    Batch(Arc<PublishedBatch>),
    /// The answer to a read, as of the last batch published before it.
    Answer {
        /// The streams' token of the read.
        token: u64,
        /// The last journal sequence the answer includes.
        journaled_through: u64,
        /// The answer.
        answer: StreamReadAnswer,
    },
}

/// What the streams watch, per pair, so the writer publishes only the views someone reads.
#[derive(Debug)]
pub struct StreamInterest {
    book_depth: Vec<AtomicUsize>,
    candle_intervals: Vec<AtomicU16>,
}

impl StreamInterest {
    /// Nothing watched, for `pair_count` pairs: a chain's are room for as many as it may ever
    /// list ([`dexd_core::MAX_PAIRS_PER_CHAIN`]), so a pair listed at run time is watched like
    /// the others.
    pub fn new(pair_count: usize) -> StreamInterest {
        StreamInterest {
            book_depth: (0..pair_count).map(|_| AtomicUsize::new(0)).collect(),
            candle_intervals: (0..pair_count).map(|_| AtomicU16::new(0)).collect(),
        }
    }

    /// Sets how deep a pair's book is watched (0: not at all).
    pub fn set_book_depth(&self, pair: PairIndex, depth: usize) {
        if let Some(slot) = self.book_depth.get(usize::from(pair.0)) {
            slot.store(depth.min(MAX_PUBLISHED_BOOK_DEPTH), Ordering::Release);
        }
    }

    /// Sets which candle intervals of a pair are watched.
    pub fn set_candle_intervals(&self, pair: PairIndex, intervals: &[CandleInterval]) {
        if let Some(slot) = self.candle_intervals.get(usize::from(pair.0)) {
            let bits = intervals
                .iter()
                .fold(0u16, |bits, interval| bits | interval_bit(*interval));
            slot.store(bits, Ordering::Release);
        }
    }

    fn book_depth(&self, pair: PairIndex) -> usize {
        self.book_depth
            .get(usize::from(pair.0))
            .map_or(0, |slot| slot.load(Ordering::Acquire))
    }

    fn candle_intervals(&self, pair: PairIndex) -> u16 {
        self.candle_intervals
            .get(usize::from(pair.0))
            .map_or(0, |slot| slot.load(Ordering::Acquire))
    }
}

fn interval_bit(interval: CandleInterval) -> u16 {
    let position = CandleInterval::ALL
        .iter()
        .position(|known| *known == interval)
        .expect("every interval is in ALL");
    1 << position
}

/// The writer's end of the publication queue.
pub(crate) struct Publisher {
    sender: tokio::sync::mpsc::Sender<Publication>,
    interest: Arc<StreamInterest>,
    overflowed: Arc<AtomicBool>,
    /// Set once the streams have taken their end: until then nothing is published.
    active: Arc<AtomicBool>,
}

/// The streams' end of the publication queue.
pub struct Publications {
    /// The queue.
    pub receiver: tokio::sync::mpsc::Receiver<Publication>,
    /// What the streams watch; the writer reads it after every batch.
    pub interest: Arc<StreamInterest>,
    /// Set by the writer when it dropped a publication; the streams reset every subscription,
    /// then clear it.
    pub overflowed: Arc<AtomicBool>,
    active: Arc<AtomicBool>,
}

impl Publications {
    /// Starts the publications: from now on every journaled batch is published.
    pub fn activate(&self) {
        self.active.store(true, Ordering::Release);
    }
}

/// A new publication queue for a chain.
pub(crate) fn channel() -> (Publisher, Publications) {
    let (sender, receiver) = tokio::sync::mpsc::channel(MAX_PUBLICATION_BACKLOG);
    let interest = Arc::new(StreamInterest::new(dexd_core::MAX_PAIRS_PER_CHAIN));
    let overflowed = Arc::new(AtomicBool::new(false));
    let active = Arc::new(AtomicBool::new(false));
    (
        Publisher {
            sender,
            interest: Arc::clone(&interest),
            overflowed: Arc::clone(&overflowed),
            active: Arc::clone(&active),
        },
        Publications {
            receiver,
            interest,
            overflowed,
            active,
        },
    )
}

impl Publisher {
    /// Whether the streams have started.
    pub(crate) fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    /// Publishes without waiting; a full queue marks it overflowed and drops the publication
    /// (and every later one, until the streams have reset).
    fn send(&self, publication: Publication) {
        if self.overflowed.load(Ordering::Acquire) {
            return;
        }
        match self.sender.try_send(publication) {
            Ok(()) | Err(tokio::sync::mpsc::error::TrySendError::Closed(_)) => {}
            Err(tokio::sync::mpsc::error::TrySendError::Full(_)) => {
                tracing::warn!("the live streams fell behind the writer; every subscription is reset");
                self.overflowed.store(true, Ordering::Release);
            }
        }
    }

    /// Publishes a journaled batch with the views it changed.
    pub(crate) fn publish_batch(&self, engine: &Engine, commands: Vec<Projection>, journal: Vec<JournalEntry>) {
        let mut touched: Vec<PairIndex> = Vec::new();
        let mut first_trade_ms: Vec<(PairIndex, u64)> = Vec::new();
        for command in &commands {
            for event in command.events.iter() {
                match event {
                    Event::OrderUpdated(record) if !touched.contains(&record.terms.pair) => {
                        touched.push(record.terms.pair);
                    }
                    Event::TradeExecuted(trade) => {
                        if !touched.contains(&trade.pair) {
                            touched.push(trade.pair);
                        }
                        if !first_trade_ms.iter().any(|(pair, _)| *pair == trade.pair) {
                            first_trade_ms.push((trade.pair, trade.timestamp_ms));
                        }
                    }
                    _ => {}
                }
            }
        }
        let books = touched
            .iter()
            .filter_map(|pair| {
                let depth = self.interest.book_depth(*pair);
                (depth > 0).then(|| book_view(engine, *pair, depth)).flatten()
            })
            .collect();
        let mut candles = Vec::new();
        for (pair, first_ms) in first_trade_ms {
            let bits = self.interest.candle_intervals(pair);
            for interval in CandleInterval::ALL {
                if bits & interval_bit(interval) != 0 {
                    let start = interval.open_time_ms(first_ms);
                    candles.push(CandleView {
                        pair,
                        interval,
                        candles: engine.candles(pair, interval, start, u64::MAX, MAX_PUBLISHED_CANDLES),
                    });
                }
            }
        }
        self.send(Publication::Batch(Arc::new(PublishedBatch {
            commands,
            journal,
            books,
            candles,
        })));
    }

    /// Answers a read of the streams at the writer's current, journaled position.
    pub(crate) fn answer(&self, engine: &Engine, journaled_through: u64, token: u64, read: StreamRead) {
        let answer = match read {
            StreamRead::EngineCopy => StreamReadAnswer::EngineCopy(Box::new(engine.clone())),
        };
        self.send(Publication::Answer {
            token,
            journaled_through,
            answer,
        });
    }
}

/// A pair's book to `depth` levels a side (at most [`MAX_PUBLISHED_BOOK_DEPTH`]).
pub fn book_view(engine: &Engine, pair: PairIndex, depth: usize) -> Option<BookView> {
    let depth = depth.min(MAX_PUBLISHED_BOOK_DEPTH);
    let (bids, sequence) = engine.book_levels(pair, dexd_core::Direction::Buy, depth)?;
    let (asks, _) = engine.book_levels(pair, dexd_core::Direction::Sell, depth)?;
    Some(BookView {
        pair,
        sequence,
        bids,
        asks,
    })
}
