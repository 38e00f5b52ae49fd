//! One chain's stream hub: a task of its own that takes the chain's publications (journaled
//! batches, in journal order, and the writer's answers to snapshot reads) and its subscribers'
//! requests, and pushes each subscription's messages into its connection's outbox.
//!
//! Gapless by construction: a subscription's snapshot is taken at one journal position and the
//! updates after it follow from the publications after that position. A book or balances
//! snapshot is read by the writer itself between two batches and comes through the
//! publications in order; an orders snapshot is the history projector's open orders at its
//! mark, brought to the hub's position with the recent batches the hub keeps. Publications that
//! queue up while the hub works are rendered together (one book update per pair and depth, one
//! trades message per pair...), so that a burst costs a message per subscriber, not one per
//! command. The hub never waits for a connection: a full outbox ends that connection.
//!
//! It does not parse client messages ([`super::protocol`] does) nor touch sockets
//! ([`super::connection`] does).

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dexd_core::{
    Address, AssetIndex, Balance, Candle, CandleInterval, Event, LevelView, OrderRecord, OrderStatus, PairIndex, Trade,
    Transfer,
};
use serde_json::{json, Map, Value};
use tokio::sync::mpsc;

use super::book::{changes, checksum, LevelChange};
use super::outbox::Outbox;
use super::protocol::{self, ChannelKey, SubscribeRequest};
use crate::api::error::ApiError;
use crate::api::render;
use crate::venue::publication::{BookView, Publication, Publications, PublishedBatch, StreamRead, StreamReadAnswer};
use crate::venue::{Chain, Venue};
use dexd_store::{Authorization, StoredOrder};

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
    /// Waiting for the writer's snapshot read with this token.
    AwaitingRead(u64),
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
}

/// The subscribers of one pair's book at one depth, and the view they all have.
struct BookGroup {
    members: Vec<usize>,
    /// Subscriptions waiting for their snapshot, which join `members` with it.
    awaiting: Vec<usize>,
    /// The book sequence and levels last delivered, once the group has its first snapshot.
    view: Option<(u64, Vec<LevelView>, Vec<LevelView>)>,
}

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

struct Hub {
    venue: Arc<Venue>,
    chain: Arc<Chain>,
    publications: Publications,
    subscriptions: slab::Slab<Subscription>,
    by_key: HashMap<(u64, ChannelKey), usize>,
    books: HashMap<(PairIndex, usize), BookGroup>,
    trades: HashMap<PairIndex, Vec<usize>>,
    candles: HashMap<(PairIndex, CandleInterval), Vec<usize>>,
    orders: HashMap<Address, Vec<usize>>,
    balances: HashMap<Address, Vec<usize>>,
    /// The signatures of the open orders of accounts with a live orders subscription.
    signatures: HashMap<Address, HashMap<u64, Authorization>>,
    reads: HashMap<u64, usize>,
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
        trades: HashMap::new(),
        candles: HashMap::new(),
        orders: HashMap::new(),
        balances: HashMap::new(),
        signatures: HashMap::new(),
        reads: HashMap::new(),
        recent: VecDeque::new(),
        recent_commands: 0,
        recent_from: 0,
        position,
        live_subscriptions,
    };
    tokio::spawn(hub.run(inbox));
    Some(requests)
}

impl Hub {
    async fn run(mut self, mut inbox: mpsc::Receiver<HubRequest>) {
        let mut waiting = tokio::time::interval(Duration::from_millis(20));
        waiting.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Skip);
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
                    self.answer(token, answer);
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
                            .filter(|authorization| authorization.order_id == Some(record.terms.order_id))
                        {
                            self.signatures
                                .entry(record.terms.account)
                                .or_default()
                                .insert(record.sequence, authorization);
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

    fn subscribe(&mut self, outbox: Arc<Outbox>, request: SubscribeRequest) {
        let key = request.key;
        let mut fields = key.parameters(&self.venue);
        if let ChannelKey::Book { .. } = key {
            fields.insert("depth".into(), json!(request.depth));
        }
        let acknowledged = outbox.push(protocol::message("subscribed", &request.id_json, fields));
        if !acknowledged {
            return;
        }
        let connection_id = outbox.connection_id;
        let index = self.subscriptions.insert(Subscription {
            outbox,
            key,
            depth: request.depth,
            id_json: request.id_json,
            state: State::Live,
            since: Instant::now(),
        });
        self.by_key.insert((connection_id, key), index);
        match key {
            ChannelKey::Book { pair, .. } => {
                self.books
                    .entry((pair, request.depth))
                    .or_insert(BookGroup {
                        members: Vec::new(),
                        awaiting: Vec::new(),
                        view: None,
                    })
                    .awaiting
                    .push(index);
                self.update_book_interest(pair);
                self.request_read(
                    index,
                    StreamRead::Book {
                        pair,
                        depth: request.depth,
                    },
                );
            }
            ChannelKey::Trades { pair, .. } => self.trades.entry(pair).or_default().push(index),
            ChannelKey::Candles { pair, interval, .. } => {
                self.candles.entry((pair, interval)).or_default().push(index);
                self.update_candle_interest(pair);
            }
            ChannelKey::Orders { .. } => {
                self.subscriptions[index].state = State::AwaitingOrders;
                self.try_orders_snapshot(index);
            }
            ChannelKey::Balances { account, .. } => {
                self.balances.entry(account).or_default().push(index);
                self.request_read(index, StreamRead::Balances { account });
            }
        }
    }

    fn request_read(&mut self, index: usize, read: StreamRead) {
        match self.chain.request_stream_read(read) {
            Ok(token) => {
                self.reads.insert(token, index);
                self.subscriptions[index].state = State::AwaitingRead(token);
            }
            Err(_) => self.refuse(
                index,
                "the chain is too busy to take a snapshot now; subscribe again shortly",
            ),
        }
    }

    /// Ends a subscription with a 503-like error (it was acknowledged, but cannot start).
    fn refuse(&mut self, index: usize, message: &str) {
        let subscription = &self.subscriptions[index];
        let error = ApiError::unavailable(message);
        subscription.outbox.push(protocol::error(
            &subscription.id_json,
            &error,
            Some(self.parameters(&subscription.key)),
        ));
        self.remove(index);
    }

    fn parameters(&self, key: &ChannelKey) -> Map<String, Value> {
        key.parameters(&self.venue)
    }

    fn remove(&mut self, index: usize) {
        if !self.subscriptions.contains(index) {
            return;
        }
        let subscription = self.subscriptions.remove(index);
        self.by_key
            .remove(&(subscription.outbox.connection_id, subscription.key));
        if let State::AwaitingRead(token) = subscription.state {
            self.reads.remove(&token);
        }
        let drop_member = |members: &mut Vec<usize>| members.retain(|member| *member != index);
        match subscription.key {
            ChannelKey::Book { pair, .. } => {
                if let Some(group) = self.books.get_mut(&(pair, subscription.depth)) {
                    drop_member(&mut group.members);
                    drop_member(&mut group.awaiting);
                    if group.members.is_empty() && group.awaiting.is_empty() {
                        self.books.remove(&(pair, subscription.depth));
                    }
                }
                self.update_book_interest(pair);
            }
            ChannelKey::Trades { pair, .. } => {
                if let Some(members) = self.trades.get_mut(&pair) {
                    drop_member(members);
                    if members.is_empty() {
                        self.trades.remove(&pair);
                    }
                }
            }
            ChannelKey::Candles { pair, interval, .. } => {
                if let Some(members) = self.candles.get_mut(&(pair, interval)) {
                    drop_member(members);
                    if members.is_empty() {
                        self.candles.remove(&(pair, interval));
                    }
                }
                self.update_candle_interest(pair);
            }
            ChannelKey::Orders { account, .. } => {
                if let Some(members) = self.orders.get_mut(&account) {
                    drop_member(members);
                    if members.is_empty() {
                        self.orders.remove(&account);
                        self.signatures.remove(&account);
                    }
                }
            }
            ChannelKey::Balances { account, .. } => {
                if let Some(members) = self.balances.get_mut(&account) {
                    drop_member(members);
                    if members.is_empty() {
                        self.balances.remove(&account);
                    }
                }
            }
        }
    }

    fn update_book_interest(&self, pair: PairIndex) {
        let depth = self
            .books
            .keys()
            .filter(|(group_pair, _)| *group_pair == pair)
            .map(|(_, depth)| *depth)
            .max()
            .unwrap_or(0);
        self.publications.interest.set_book_depth(pair, depth);
    }

    fn update_candle_interest(&self, pair: PairIndex) {
        let intervals: Vec<CandleInterval> = self
            .candles
            .keys()
            .filter(|(candle_pair, _)| *candle_pair == pair)
            .map(|(_, interval)| *interval)
            .collect();
        self.publications.interest.set_candle_intervals(pair, &intervals);
    }

    /// A snapshot read came back: the subscription gets its snapshot and goes live.
    fn answer(&mut self, token: u64, answer: StreamReadAnswer) {
        let Some(index) = self.reads.remove(&token) else {
            return;
        };
        self.subscriptions[index].state = State::Live;
        match answer {
            StreamReadAnswer::Book(view) => {
                let depth = self.subscriptions[index].depth;
                let Some(group) = self.books.get_mut(&(view.pair, depth)) else {
                    return;
                };
                let bids: Vec<LevelView> = view.bids.iter().take(depth).copied().collect();
                let asks: Vec<LevelView> = view.asks.iter().take(depth).copied().collect();
                // Every batch since the group's first snapshot brought the pair's view, so the
                // group's view is the book at this position too; were it not, the members
                // already there would get wrong updates, which is a fault worth a loud log.
                if let Some((sequence, known_bids, known_asks)) = &group.view {
                    if (*sequence, known_bids, known_asks) != (view.sequence, &bids, &asks) {
                        tracing::error!(
                            pair = view.pair.0,
                            group_sequence = sequence,
                            snapshot_sequence = view.sequence,
                            "a book group's view differs from a snapshot at the same position"
                        );
                    }
                }
                group.view = Some((view.sequence, bids.clone(), asks.clone()));
                group.awaiting.retain(|waiting| *waiting != index);
                group.members.push(index);
                let message = self.book_message(index, "snapshot", view.sequence, None, &bids, &asks, view.pair);
                self.subscriptions[index].outbox.push(message);
            }
            StreamReadAnswer::Balances(balances) => {
                let subscription = &self.subscriptions[index];
                let chain = &self.chain.config;
                let balances: Vec<Value> = balances
                    .iter()
                    .enumerate()
                    .map(|(asset, balance)| render::balance(chain, AssetIndex(asset as u16), *balance))
                    .collect();
                let mut fields = self.parameters(&subscription.key);
                fields.insert("balances".into(), Value::Array(balances));
                subscription
                    .outbox
                    .push(protocol::message("snapshot", &subscription.id_json, fields));
            }
        }
    }

    /// Renders one book message of a subscription: a snapshot (all levels) or an update (the
    /// changed levels), with the checksum of the top levels.
    #[allow(clippy::too_many_arguments)]
    fn book_message(
        &self,
        index: usize,
        event: &str,
        sequence: u64,
        previous: Option<u64>,
        bids: &[LevelView],
        asks: &[LevelView],
        pair: PairIndex,
    ) -> String {
        let subscription = &self.subscriptions[index];
        let rest = self.book_fields(&subscription.key, sequence, previous, bids, asks, pair, None);
        protocol::frame(
            &format!("{{\"event\":\"{event}\",\"id\":"),
            &subscription.id_json,
            &rest,
        )
    }

    /// The fields of a book message after the id, as a JSON object's text. With `changes`, the
    /// levels are those changes (a level that left has amount "0"); the checksum is of `bids`
    /// and `asks` (the whole view after the change).
    #[allow(clippy::too_many_arguments)]
    fn book_fields(
        &self,
        key: &ChannelKey,
        sequence: u64,
        previous: Option<u64>,
        bids: &[LevelView],
        asks: &[LevelView],
        pair: PairIndex,
        changes: Option<(&[LevelChange], &[LevelChange])>,
    ) -> String {
        let chain = &self.chain.config;
        let spec = &chain.pair_config(pair).spec;
        let amount =
            |quantity: u128| render::asset_amount(chain, spec.base(), quantity.saturating_mul(spec.step_units()));
        let level = |level: &LevelView| json!({"price": spec.format_price(level.price), "amount": amount(level.quantity), "orders": level.orders});
        let change = |change: &LevelChange| match change.level {
            Some((quantity, orders)) => {
                json!({"price": spec.format_price(change.price), "amount": amount(quantity), "orders": orders})
            }
            None => json!({"price": spec.format_price(change.price), "amount": "0", "orders": 0}),
        };
        let mut fields = self.parameters(key);
        match changes {
            None => {
                fields.insert("bids".into(), Value::Array(bids.iter().map(level).collect()));
                fields.insert("asks".into(), Value::Array(asks.iter().map(level).collect()));
            }
            Some((bid_changes, ask_changes)) => {
                fields.insert("bids".into(), Value::Array(bid_changes.iter().map(change).collect()));
                fields.insert("asks".into(), Value::Array(ask_changes.iter().map(change).collect()));
            }
        }
        fields.insert("sequence".into(), json!(sequence));
        if let Some(previous) = previous {
            fields.insert("previousSequence".into(), json!(previous));
        }
        let sum = checksum(bids, asks, |level| {
            (spec.format_price(level.price), amount(level.quantity))
        });
        fields.insert("checksum".into(), json!(sum));
        Value::Object(fields).to_string()
    }

    /// Delivers what a round changed to the live subscriptions.
    fn deliver(&mut self, round: Round) {
        for (pair, view) in round.books {
            let depths: Vec<usize> = self
                .books
                .keys()
                .filter(|(group_pair, _)| *group_pair == pair)
                .map(|(_, depth)| *depth)
                .collect();
            for depth in depths {
                self.deliver_book(pair, depth, &view);
            }
        }
        for (pair, trades) in round.trades {
            let Some(members) = self.trades.get(&pair) else {
                continue;
            };
            let Some(first) = members.first() else { continue };
            let chain = &self.chain.config;
            let mut fields = self.parameters(&self.subscriptions[*first].key);
            let rendered: Vec<Value> = trades
                .iter()
                .map(|trade| serde_json::to_value(render::trade(chain, trade)).expect("a trade serializes"))
                .collect();
            fields.insert("trades".into(), Value::Array(rendered));
            self.push_to(members.clone(), "update", &Value::Object(fields).to_string());
        }
        for ((pair, interval), candles) in round.candles {
            let Some(members) = self.candles.get(&(pair, interval)) else {
                continue;
            };
            let Some(first) = members.first() else { continue };
            let parameters = self.parameters(&self.subscriptions[*first].key);
            let members = members.clone();
            for candle in candles.values() {
                let mut fields = parameters.clone();
                fields.insert("candle".into(), render::candle(&self.chain.config, pair, candle));
                self.push_to(members.clone(), "update", &Value::Object(fields).to_string());
            }
        }
        for (account, orders) in round.orders {
            let Some(members) = self.orders.get(&account).cloned() else {
                continue;
            };
            let Some(first) = members.first() else { continue };
            let signatures = self.signatures.entry(account).or_default();
            let mut rendered = Vec::new();
            for record in orders.into_values() {
                let Some(authorization) = signatures.get(&record.sequence).copied() else {
                    tracing::error!(
                        order = record.sequence,
                        "a streamed order has no known signature; left out"
                    );
                    continue;
                };
                if record.status != OrderStatus::Open {
                    signatures.remove(&record.sequence);
                }
                let stored = stored_order(record, authorization);
                rendered.push(
                    serde_json::to_value(render::order(&self.chain.config, &stored)).expect("an order serializes"),
                );
            }
            let mut fields = self.parameters(&self.subscriptions[*first].key);
            fields.insert("orders".into(), Value::Array(rendered));
            self.push_to(members, "update", &Value::Object(fields).to_string());
        }
        let mut accounts: Vec<Address> = round.balances.keys().copied().collect();
        for account in round.transfers.keys() {
            if !accounts.contains(account) {
                accounts.push(*account);
            }
        }
        for account in accounts {
            let Some(members) = self.balances.get(&account).cloned() else {
                continue;
            };
            let live: Vec<usize> = members
                .into_iter()
                .filter(|index| matches!(self.subscriptions[*index].state, State::Live))
                .collect();
            let Some(first) = live.first() else { continue };
            let chain = &self.chain.config;
            let balances: Vec<Value> = round
                .balances
                .get(&account)
                .into_iter()
                .flatten()
                .map(|(asset, balance)| render::balance(chain, *asset, *balance))
                .collect();
            let transfers: Vec<Value> = round
                .transfers
                .get(&account)
                .into_iter()
                .flatten()
                .map(|transfer| render::transfer(chain, transfer))
                .collect();
            let mut fields = self.parameters(&self.subscriptions[*first].key);
            fields.insert("balances".into(), Value::Array(balances));
            fields.insert("transfers".into(), Value::Array(transfers));
            self.push_to(live, "update", &Value::Object(fields).to_string());
        }
    }

    fn deliver_book(&mut self, pair: PairIndex, depth: usize, view: &BookView) {
        let Some(group) = self.books.get(&(pair, depth)) else {
            return;
        };
        let Some((previous_sequence, old_bids, old_asks)) = &group.view else {
            return;
        };
        let bids: Vec<LevelView> = view.bids.iter().take(depth).copied().collect();
        let asks: Vec<LevelView> = view.asks.iter().take(depth).copied().collect();
        let bid_changes = changes(old_bids, &bids, true);
        let ask_changes = changes(old_asks, &asks, false);
        let previous_sequence = *previous_sequence;
        let members = group.members.clone();
        // Every change of the book's sequence is sent, with the levels that changed within the
        // depth (maybe none), so that previousSequence always is the sequence of the message
        // before, for members old and new alike.
        if view.sequence != previous_sequence {
            if let Some(first) = members.first() {
                let key = self.subscriptions[*first].key;
                let rest = self.book_fields(
                    &key,
                    view.sequence,
                    Some(previous_sequence),
                    &bids,
                    &asks,
                    pair,
                    Some((&bid_changes, &ask_changes)),
                );
                self.push_to(members, "update", &rest);
            }
        }
        if let Some(group) = self.books.get_mut(&(pair, depth)) {
            group.view = Some((view.sequence, bids, asks));
        }
    }

    /// Pushes one message (its fields after the id: `rest`) to each subscription, with its id.
    fn push_to(&mut self, members: Vec<usize>, event: &str, rest: &str) {
        let prefix = format!("{{\"event\":\"{event}\",\"id\":");
        for index in members {
            let Some(subscription) = self.subscriptions.get(index) else {
                continue;
            };
            if !matches!(subscription.state, State::Live) {
                continue;
            }
            subscription
                .outbox
                .push(protocol::frame(&prefix, &subscription.id_json, rest));
        }
    }

    /// Orders snapshots wait until the history's open orders are within the hub's recent
    /// commands; any subscription that waited too long is refused.
    fn retry_waiting_subscriptions(&mut self) {
        let waiting: Vec<usize> = self
            .subscriptions
            .iter()
            .filter(|(_, subscription)| !matches!(subscription.state, State::Live))
            .map(|(index, _)| index)
            .collect();
        for index in waiting {
            if matches!(self.subscriptions[index].state, State::AwaitingOrders) {
                self.try_orders_snapshot(index);
            }
            if let Some(subscription) = self.subscriptions.get(index) {
                if !matches!(subscription.state, State::Live)
                    && subscription.since.elapsed() > Duration::from_millis(SNAPSHOT_TIMEOUT_MS)
                {
                    self.refuse(index, "the snapshot could not be taken in time; subscribe again");
                }
            }
        }
    }

    /// The history's open orders of the account at its mark, brought to the hub's position
    /// with the recent commands; the subscription goes live with them as its snapshot.
    fn try_orders_snapshot(&mut self, index: usize) {
        let ChannelKey::Orders { account, .. } = self.subscriptions[index].key else {
            return;
        };
        let (open, mark) = self.chain.open_orders_at_mark(&account);
        let covered = mark + 1 >= self.recent_from || (self.recent.is_empty() && mark == self.position);
        if mark > self.position || !covered {
            return;
        }
        let mut orders: BTreeMap<u64, StoredOrder> =
            open.into_iter().map(|order| (order.record.sequence, order)).collect();
        for batch in &self.recent {
            for command in batch.commands.iter().filter(|command| command.sequence > mark) {
                for event in command.events.iter() {
                    let Event::OrderUpdated(record) = event else { continue };
                    if record.terms.account != account {
                        continue;
                    }
                    if record.status != OrderStatus::Open {
                        orders.remove(&record.sequence);
                    } else if let Some(known) = orders.get_mut(&record.sequence) {
                        known.record = record.clone();
                    } else if let Some(authorization) = command
                        .authorization
                        .filter(|authorization| authorization.order_id == Some(record.terms.order_id))
                    {
                        orders.insert(record.sequence, stored_order(record.clone(), authorization));
                    }
                }
            }
        }
        let signatures = self.signatures.entry(account).or_default();
        for order in orders.values() {
            signatures.insert(
                order.record.sequence,
                Authorization {
                    order_id: Some(order.record.terms.order_id),
                    nonce: order.nonce,
                    expiry_ms: order.expiry_ms,
                    signature: order.signature,
                    client_signed: false,
                },
            );
        }
        self.orders.entry(account).or_default().push(index);
        let subscription = &mut self.subscriptions[index];
        subscription.state = State::Live;
        let rendered: Vec<Value> = orders
            .values()
            .map(|order| serde_json::to_value(render::order(&self.chain.config, order)).expect("an order serializes"))
            .collect();
        let mut fields = subscription.key.parameters(&self.venue);
        fields.insert("orders".into(), Value::Array(rendered));
        subscription
            .outbox
            .push(protocol::message("snapshot", &subscription.id_json, fields));
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
        self.publications.overflowed.store(false, Ordering::Release);
    }
}

fn stored_order(record: OrderRecord, authorization: Authorization) -> StoredOrder {
    StoredOrder {
        record,
        nonce: authorization.nonce,
        expiry_ms: authorization.expiry_ms,
        signature: authorization.signature,
    }
}
