//! The hub's registry of subscriptions: subscribing (the acknowledgment, then the snapshot it
//! needs), unsubscribing and a connection's end, and which pairs' books and candles the writer
//! must publish views of. It renders nothing beyond acknowledgments and refusals.

use super::*;

impl Hub {
    /// A subscription: acknowledged first (nothing more if the outbox is full), then in its
    /// channel's group.
    pub(super) fn subscribe(&mut self, outbox: Arc<Outbox>, request: SubscribeRequest) {
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
            snapshot_sequence: None,
        });
        self.by_key.insert((connection_id, key), index);
        self.join_group(index, key, request.depth);
    }

    /// Puts a new subscription in its channel's group and starts it: its snapshot, or the wait
    /// for one.
    fn join_group(&mut self, index: usize, key: ChannelKey, depth: usize) {
        match key {
            ChannelKey::Book { pair, .. } => {
                self.books
                    .entry((pair, depth))
                    .or_insert(BookGroup {
                        members: Vec::new(),
                        awaiting: Vec::new(),
                        view: None,
                    })
                    .awaiting
                    .push(index);
                self.update_book_interest(pair);
                self.snapshot_from_engine(index);
            }
            ChannelKey::Bbo { pair, .. } => {
                self.bbo
                    .entry(pair)
                    .or_insert(BboGroup {
                        members: Vec::new(),
                        top: None,
                    })
                    .members
                    .push(index);
                self.update_book_interest(pair);
                self.snapshot_from_engine(index);
            }
            ChannelKey::Depth {
                pair,
                levels,
                interval_ms,
                ..
            } => {
                self.depth
                    .entry((pair, levels, interval_ms))
                    .or_insert(DepthGroup {
                        members: Vec::new(),
                        interval: Duration::from_millis(u64::from(interval_ms)),
                        sent: None,
                        pending: None,
                        sent_at: None,
                    })
                    .members
                    .push(index);
                self.update_book_interest(pair);
                self.snapshot_from_engine(index);
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
                self.snapshot_from_engine(index);
            }
        }
    }

    /// Ends a subscription with a 503-like error (it was acknowledged, but cannot start).
    pub(super) fn refuse(&mut self, index: usize, message: &str) {
        let subscription = &self.subscriptions[index];
        let error = ApiError::unavailable(message);
        subscription.outbox.push(protocol::error(
            &subscription.id_json,
            &error,
            Some(self.parameters(&subscription.key)),
        ));
        self.remove(index);
    }

    pub(super) fn parameters(&self, key: &ChannelKey) -> Map<String, Value> {
        key.parameters(&self.venue)
    }

    pub(super) fn remove(&mut self, index: usize) {
        if !self.subscriptions.contains(index) {
            return;
        }
        let subscription = self.subscriptions.remove(index);
        self.by_key
            .remove(&(subscription.outbox.connection_id, subscription.key));
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
            ChannelKey::Bbo { pair, .. } => {
                if let Some(group) = self.bbo.get_mut(&pair) {
                    drop_member(&mut group.members);
                    if group.members.is_empty() {
                        self.bbo.remove(&pair);
                    }
                }
                self.update_book_interest(pair);
            }
            ChannelKey::Depth {
                pair,
                levels,
                interval_ms,
                ..
            } => {
                if let Some(group) = self.depth.get_mut(&(pair, levels, interval_ms)) {
                    drop_member(&mut group.members);
                    if group.members.is_empty() {
                        self.depth.remove(&(pair, levels, interval_ms));
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

    pub(super) fn update_book_interest(&self, pair: PairIndex) {
        let depth = self
            .books
            .keys()
            .filter(|(group_pair, _)| *group_pair == pair)
            .map(|(_, depth)| *depth)
            .max()
            .unwrap_or(0);
        // A best bid and ask needs the top level of each side, a depth view its levels.
        let depth = if self.bbo.contains_key(&pair) {
            depth.max(1)
        } else {
            depth
        };
        let depth = self
            .depth
            .keys()
            .filter(|(depth_pair, _, _)| *depth_pair == pair)
            .map(|(_, levels, _)| usize::from(*levels))
            .fold(depth, usize::max);
        self.publications.interest.set_book_depth(pair, depth);
    }

    pub(super) fn update_candle_interest(&self, pair: PairIndex) {
        let intervals: Vec<CandleInterval> = self
            .candles
            .keys()
            .filter(|(candle_pair, _)| *candle_pair == pair)
            .map(|(_, interval)| *interval)
            .collect();
        self.publications.interest.set_candle_intervals(pair, &intervals);
    }
}
