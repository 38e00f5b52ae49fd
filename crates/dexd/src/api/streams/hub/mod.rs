//! One chain's stream hub: a task of its own that takes the chain's publications (journaled
//! batches, in journal order, and the writer's answers to snapshot reads) and its subscribers'
//! requests, and pushes each subscription's messages into its connection's outbox.
//!
//! Gapless by construction: a subscription's snapshot is taken at one journal position and the
//! updates after it follow from the publications after that position. A book or balances
//! snapshot is read from the hub's own copy of the engine, which follows the journal entries
//! published (the writer hands over a copy once, between two batches, through the publications
//! in order), so that no subscription asks anything of the writer; an orders snapshot is the
//! history projector's open orders at its mark, brought to the hub's position with the recent
//! batches the hub keeps. Publications that
//! queue up while the hub works are rendered together (one book update per pair and depth, one
//! trades message per pair...), so that a burst costs a message per subscriber, not one per
//! command. The hub never waits for a connection: a full outbox ends that connection.
//!
//! It does not parse client messages ([`super::protocol`] does) nor touch sockets
//! ([`super::connection`] does).

mod delivery;
mod registry;
mod snapshots;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dexd_core::{
    Address, AssetIndex, Balance, Candle, CandleInterval, Engine, Event, LevelView, OrderRecord, PairIndex, Trade,
    Transfer,
};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::book::{changes, checksum, LevelChange};
use super::outbox::Outbox;
use super::protocol::{self, ChannelKey, SubscribeRequest};
use crate::api::error::ApiError;
use crate::api::render;
use dexd_store::{Authorization, StoredOrder};
use dexd_venue::publication::{
    book_view, BookView, Publication, Publications, PublishedBatch, StreamRead, StreamReadAnswer,
};
use dexd_venue::{Chain, Venue};

/// Recent journaled commands the hub keeps to bring an orders snapshot, taken from the
/// history's open orders at its projector's mark, up to the hub's own position.
pub const MAX_RECENT_COMMANDS: usize = 65_536;
/// Publications rendered together at most, when they queue up.
pub const MAX_PUBLICATIONS_PER_ROUND: usize = 256;
/// How long a subscription may wait for its snapshot before it is refused (503).
pub const SNAPSHOT_TIMEOUT_MS: u64 = 5_000;
/// Requests (subscribe, unsubscribe, disconnect) that may wait for a hub.
pub const MAX_QUEUED_HUB_REQUESTS: usize = 65_536;

/// A request to a hub.
#[derive(Debug)]
pub enum HubRequest {
    /// Subscribe; the hub acknowledges it and sends the snapshot.
    Subscribe {
        /// Where to deliver.
        outbox: Arc<Outbox>,
        /// What.
        request: SubscribeRequest,
    },
    /// Unsubscribe (the connection checked that it was subscribed).
    Unsubscribe {
        /// Whose.
        connection_id: u64,
        /// What.
        key: ChannelKey,
        /// The client's id of the unsubscribe, to acknowledge it.
        id_json: String,
        /// Where to acknowledge.
        outbox: Arc<Outbox>,
    },
    /// The connection closed: every subscription it had ends.
    Disconnected {
        /// Whose.
        connection_id: u64,
    },
}

/// How a subscription stands.
enum State {
    /// Waiting for the hub's copy of the engine (the writer's copy is on its way).
    AwaitingEngineCopy,
    /// Waiting for the projector's open orders to be within the recent commands.
    AwaitingOrders,
    /// Receiving updates.
    Live,
}

struct Subscription {
    outbox: Arc<Outbox>,
    key: ChannelKey,
    depth: usize,
    id_json: String,
    state: State,
    since: Instant,
    /// A depth subscription's snapshot sequence: its group's views up to it are in the snapshot
    /// already, so none of them is sent to it (a depth sequence only grows).
    snapshot_sequence: Option<u64>,
}

/// The subscribers of one pair's book at one depth, and the view they all have.
struct BookGroup {
    members: Vec<usize>,
    /// Subscriptions waiting for their snapshot, which join `members` with it.
    awaiting: Vec<usize>,
    /// The book sequence and levels last delivered, once the group has its first snapshot.
    view: Option<(u64, Vec<LevelView>, Vec<LevelView>)>,
}

/// The subscribers of one pair's best bid and ask, and the top they were last sent: the book
/// sequence, the best bid, the best ask.
struct BboGroup {
    members: Vec<usize>,
    top: Option<(u64, Option<LevelView>, Option<LevelView>)>,
}

/// The subscribers of one pair's top `levels` at one pace, the view they were last sent, and
/// the newest view when it differs from that one (sent at the next tick due).
struct DepthGroup {
    members: Vec<usize>,
    interval: Duration,
    sent: Option<DepthView>,
    pending: Option<DepthView>,
    sent_at: Option<Instant>,
}

/// A book sequence and the levels of each side within a depth.
type DepthView = (u64, Vec<LevelView>, Vec<LevelView>);

/// How often the hub looks for depth views that are due.
pub const DEPTH_TICK_MS: u64 = 50;

/// What a round of publications changed, for the subscribed pairs and accounts only.
#[derive(Default)]
struct Round {
    books: HashMap<PairIndex, BookView>,
    trades: HashMap<PairIndex, Vec<Trade>>,
    candles: HashMap<(PairIndex, CandleInterval), BTreeMap<u64, Candle>>,
    orders: HashMap<Address, BTreeMap<u64, OrderRecord>>,
    balances: HashMap<Address, BTreeMap<AssetIndex, Balance>>,
    transfers: HashMap<Address, Vec<Transfer>>,
}

/// A copy of the chain's engine and the journal position it stands at.
struct Follower {
    engine: Engine,
    position: u64,
}

struct Hub {
    venue: Arc<Venue>,
    chain: Arc<Chain>,
    publications: Publications,
    subscriptions: slab::Slab<Subscription>,
    by_key: HashMap<(u64, ChannelKey), usize>,
    books: HashMap<(PairIndex, usize), BookGroup>,
    bbo: HashMap<PairIndex, BboGroup>,
    depth: HashMap<(PairIndex, u16, u16), DepthGroup>,
    trades: HashMap<PairIndex, Vec<usize>>,
    candles: HashMap<(PairIndex, CandleInterval), Vec<usize>>,
    orders: HashMap<Address, Vec<usize>>,
    balances: HashMap<Address, Vec<usize>>,
    /// The signatures of the open orders of accounts with a live orders subscription.
    signatures: HashMap<Address, HashMap<u64, Authorization>>,
    /// The hub's copy of the engine, following the journal, once the writer has given one.
    follower: Option<Follower>,
    /// The token of the writer's copy asked for and not yet come.
    follower_read: Option<u64>,
    recent: VecDeque<Arc<PublishedBatch>>,
    recent_commands: usize,
    /// The first journal sequence the recent batches cover without a gap (none yet: 0).
    recent_from: u64,
    /// The last journal sequence the hub has taken in.
    position: u64,
    /// How many subscriptions are live, for `/metrics`.
    live_subscriptions: Arc<std::sync::atomic::AtomicUsize>,
}

/// Starts a chain's hub on the current runtime; returns where to send it requests. The hub
/// keeps `live_subscriptions` at its number of subscriptions.
pub fn start(
    venue: Arc<Venue>,
    chain: Arc<Chain>,
    live_subscriptions: Arc<std::sync::atomic::AtomicUsize>,
) -> Option<mpsc::Sender<HubRequest>> {
    let publications = chain.take_publications()?;
    publications.activate();
    let (requests, inbox) = mpsc::channel(MAX_QUEUED_HUB_REQUESTS);
    let position = chain.journaled_sequence();
    let hub = Hub {
        venue,
        chain,
        publications,
        subscriptions: slab::Slab::new(),
        by_key: HashMap::new(),
        books: HashMap::new(),
        bbo: HashMap::new(),
        depth: HashMap::new(),
        trades: HashMap::new(),
        candles: HashMap::new(),
        orders: HashMap::new(),
        balances: HashMap::new(),
        signatures: HashMap::new(),
        follower: None,
        follower_read: None,
        recent: VecDeque::new(),
        recent_commands: 0,
        recent_from: 0,
        position,
        live_subscriptions,
    };
    let mut hub = hub;
    hub.request_engine_copy();
    tokio::spawn(hub.run(inbox));
    Some(requests)
}

impl Hub {
    async fn run(mut self, mut inbox: mpsc::Receiver<HubRequest>) {
        let mut waiting = tokio::time::interval(Duration::from_millis(20));
        waiting.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        let mut depth_tick = tokio::time::interval(Duration::from_millis(DEPTH_TICK_MS));
        depth_tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
        loop {
            if self.publications.overflowed.load(Ordering::Acquire) {
                self.reset_after_overflow();
            }
            // Not biased: a steady flow of publications must not starve the subscribers'
            // requests.
            tokio::select! {
                publication = self.publications.receiver.recv() => {
                    let Some(publication) = publication else { break };
                    self.take_publications(publication);
                }
                request = inbox.recv() => {
                    let Some(request) = request else { break };
                    self.handle(request);
                    self.live_subscriptions.store(self.subscriptions.len(), Ordering::Relaxed);
                }
                _ = waiting.tick() => self.retry_waiting_subscriptions(),
                _ = depth_tick.tick() => self.deliver_due_depth(Instant::now()),
            }
        }
    }

    /// Takes in the publication and whatever else has queued (up to a round's worth), then
    /// delivers the round.
    fn take_publications(&mut self, first: Publication) {
        let mut round = Round::default();
        let mut next = Some(first);
        let mut taken = 0;
        while let Some(publication) = next.take() {
            taken += 1;
            match publication {
                Publication::Batch(batch) => self.take_batch(&mut round, batch),
                Publication::Answer {
                    token,
                    journaled_through,
                    answer,
                } => {
                    // A snapshot is as of the batches before it: deliver those first.
                    self.deliver(std::mem::take(&mut round));
                    self.position = self.position.max(journaled_through);
                    self.answer(token, journaled_through, answer);
                }
            }
            if taken < MAX_PUBLICATIONS_PER_ROUND {
                next = self.publications.receiver.try_recv().ok();
            }
        }
        self.deliver(round);
        self.retry_waiting_subscriptions();
    }

    fn take_batch(&mut self, round: &mut Round, batch: Arc<PublishedBatch>) {
        if let Some(last) = batch.commands.last() {
            let first = batch.commands[0].sequence;
            if self.recent.is_empty() || first != self.position + 1 {
                self.recent.clear();
                self.recent_commands = 0;
                self.recent_from = first;
            }
            self.position = last.sequence;
        }
        for view in &batch.books {
            round.books.insert(view.pair, view.clone());
        }
        for view in &batch.candles {
            if self.candles.contains_key(&(view.pair, view.interval)) {
                let candles = round.candles.entry((view.pair, view.interval)).or_default();
                for candle in &view.candles {
                    candles.insert(candle.open_time_ms, *candle);
                }
            }
        }
        for command in &batch.commands {
            for event in command.events.iter() {
                match event {
                    Event::TradeExecuted(trade) if self.trades.contains_key(&trade.pair) => {
                        round.trades.entry(trade.pair).or_default().push(trade.clone());
                    }
                    Event::OrderUpdated(record) if self.signatures.contains_key(&record.terms.account) => {
                        if let Some(authorization) = command
                            .authorization
                            .as_ref()
                            .filter(|authorization| authorization.order_id == Some(record.terms.order_id))
                        {
                            self.signatures
                                .entry(record.terms.account)
                                .or_default()
                                .insert(record.sequence, authorization.clone());
                        } else if record.terms.conditions().twap_id.is_some() {
                            // A TWAP's slice has no signature of its own (it renders as "").
                            self.signatures
                                .entry(record.terms.account)
                                .or_default()
                                .insert(record.sequence, unsigned_slice(record.terms.order_id));
                        }
                        round
                            .orders
                            .entry(record.terms.account)
                            .or_default()
                            .insert(record.sequence, record.clone());
                    }
                    Event::BalanceUpdated {
                        account,
                        asset,
                        balance,
                    } if self.balances.contains_key(account) => {
                        round.balances.entry(*account).or_default().insert(*asset, *balance);
                    }
                    Event::TransferApplied(transfer) if self.balances.contains_key(&transfer.account) => {
                        let transfers = round.transfers.entry(transfer.account).or_default();
                        transfers
                            .retain(|known| known.transfer_id != transfer.transfer_id || known.kind != transfer.kind);
                        transfers.push(transfer.clone());
                    }
                    _ => {}
                }
            }
        }
        self.follow(&batch);
        self.recent_commands += batch.commands.len();
        self.recent.push_back(batch);
        while self.recent_commands > MAX_RECENT_COMMANDS {
            let Some(oldest) = self.recent.pop_front() else { break };
            self.recent_commands -= oldest.commands.len();
            self.recent_from = self
                .recent
                .front()
                .and_then(|batch| batch.commands.first())
                .map_or(self.position + 1, |command| command.sequence);
        }
    }

    fn handle(&mut self, request: HubRequest) {
        match request {
            HubRequest::Subscribe { outbox, request } => self.subscribe(outbox, request),
            HubRequest::Unsubscribe {
                connection_id,
                key,
                id_json,
                outbox,
            } => {
                if let Some(index) = self.by_key.get(&(connection_id, key)).copied() {
                    self.remove(index);
                }
                let fields = key.parameters(&self.venue);
                outbox.push(protocol::message("unsubscribed", &id_json, fields));
            }
            HubRequest::Disconnected { connection_id } => {
                let indexes: Vec<usize> = self
                    .by_key
                    .iter()
                    .filter(|((connection, _), _)| *connection == connection_id)
                    .map(|(_, index)| *index)
                    .collect();
                for index in indexes {
                    self.remove(index);
                }
            }
        }
    }

    /// The writer dropped publications: every subscription ends with an error (the clients
    /// subscribe again and get new snapshots), and the hub starts over.
    fn reset_after_overflow(&mut self) {
        while self.publications.receiver.try_recv().is_ok() {}
        let error = ApiError::unavailable("the stream fell behind the venue; subscribe again");
        let indexes: Vec<usize> = self.subscriptions.iter().map(|(index, _)| index).collect();
        for index in indexes {
            let subscription = &self.subscriptions[index];
            subscription.outbox.push(protocol::error(
                &subscription.id_json,
                &error,
                Some(self.parameters(&subscription.key)),
            ));
            self.remove(index);
        }
        self.recent.clear();
        self.recent_commands = 0;
        self.recent_from = 0;
        // The copy missed the dropped batches: another is taken.
        self.follower = None;
        self.follower_read = None;
        self.publications.overflowed.store(false, Ordering::Release);
        self.request_engine_copy();
    }
}

/// What stands for a TWAP slice's signature: none (the TWAP's signed terms authorize it).
fn unsigned_slice(order_id: dexd_core::OrderId) -> Authorization {
    Authorization {
        order_id: Some(order_id),
        nonce: [0; 32],
        expiry_ms: 0,
        signature: [0; 65],
        client_signed: false,
        batch: None,
        claims_batch_nonce: false,
        approved_at_block: None,
    }
}
