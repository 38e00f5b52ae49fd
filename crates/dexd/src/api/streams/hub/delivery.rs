//! Rendering and delivering a round of publications to the live subscriptions: one book update
//! per pair and depth (changed levels and the checksum), one trades, candles, orders or balances
//! message per subscription. It never waits for a connection: a full outbox ends that one.

use axum::extract::ws::Utf8Bytes;

use super::snapshots::stored_order;
use super::*;

impl Hub {
    /// Renders one book message of a subscription: a snapshot (all levels) or an update (the
    /// changed levels), with the checksum of the top levels.
    #[allow(clippy::too_many_arguments)]
    pub(super) fn book_message(
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
    pub(super) fn book_fields(
        &self,
        key: &ChannelKey,
        sequence: u64,
        previous: Option<u64>,
        bids: &[LevelView],
        asks: &[LevelView],
        pair: PairIndex,
        changes: Option<(&[LevelChange], &[LevelChange])>,
    ) -> String {
        let chain = &self.chain.markets().config;
        let level = |level: &LevelView| render::book_level(chain, pair, level.price, level.quantity, level.orders);
        let change = |change: &LevelChange| {
            let (quantity, orders) = change.level.unwrap_or((0, 0));
            render::book_level(chain, pair, change.price, quantity, orders)
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
        let sum = checksum(bids, asks, |level| render::book_level_text(chain, pair, level));
        fields.insert("checksum".into(), json!(sum));
        Value::Object(fields).to_string()
    }

    /// The fields of a best bid and ask message after the id: the subscription's parameters,
    /// `bid` and `ask` (`{"price", "amount"}`, or null for an empty side) and the book's
    /// `sequence`.
    pub(super) fn bbo_fields(
        &self,
        key: &ChannelKey,
        pair: PairIndex,
        (sequence, bid, ask): (u64, Option<LevelView>, Option<LevelView>),
    ) -> String {
        let chain = &self.chain.markets().config;
        let side = |level: Option<LevelView>| match level {
            None => Value::Null,
            Some(level) => {
                let mut rendered = render::book_level(chain, pair, level.price, level.quantity, level.orders);
                if let Value::Object(fields) = &mut rendered {
                    fields.remove("orders");
                }
                rendered
            }
        };
        let mut fields = self.parameters(key);
        fields.insert("bid".into(), side(bid));
        fields.insert("ask".into(), side(ask));
        fields.insert("sequence".into(), json!(sequence));
        Value::Object(fields).to_string()
    }

    /// One message to a pair's best bid and ask subscribers when either changed in this round.
    fn deliver_bbo(&mut self, pair: PairIndex, view: &BookView) {
        let Some(group) = self.bbo.get(&pair) else {
            return;
        };
        let top = (view.sequence, view.bids.first().copied(), view.asks.first().copied());
        let changed = group.top.is_some_and(|(_, bid, ask)| (bid, ask) != (top.1, top.2));
        if changed {
            if let Some(first) = group.members.first() {
                let members = group.members.clone();
                let rest = self.bbo_fields(&self.subscriptions[*first].key, pair, top);
                self.push_to(members, "update", &rest);
            }
        }
        if let Some(group) = self.bbo.get_mut(&pair) {
            group.top = Some(top);
        }
    }

    /// The fields of a depth message after the id: the subscription's parameters, the top
    /// levels of each side whole (`{"price", "amount", "orders"}`), the book's `sequence` and the
    /// `checksum` of those levels.
    pub(super) fn depth_fields(&self, key: &ChannelKey, pair: PairIndex, (sequence, bids, asks): &DepthView) -> String {
        let chain = &self.chain.markets().config;
        let level = |level: &LevelView| render::book_level(chain, pair, level.price, level.quantity, level.orders);
        let mut fields = self.parameters(key);
        fields.insert("bids".into(), Value::Array(bids.iter().map(level).collect()));
        fields.insert("asks".into(), Value::Array(asks.iter().map(level).collect()));
        fields.insert("sequence".into(), json!(sequence));
        let sum = checksum(bids, asks, |level| render::book_level_text(chain, pair, level));
        fields.insert("checksum".into(), json!(sum));
        Value::Object(fields).to_string()
    }

    /// Keeps each depth group of the pair up to date with the newest view: one whose top levels
    /// differ from what was last sent is due at the group's next tick.
    fn note_depth(&mut self, pair: PairIndex, view: &BookView) {
        for ((group_pair, levels, _), group) in self.depth.iter_mut() {
            if *group_pair != pair {
                continue;
            }
            let levels = usize::from(*levels);
            let bids: Vec<LevelView> = view.bids.iter().take(levels).copied().collect();
            let asks: Vec<LevelView> = view.asks.iter().take(levels).copied().collect();
            match &group.sent {
                // Not yet live: the snapshot will carry the view of its position.
                None => {}
                Some((_, sent_bids, sent_asks)) if *sent_bids == bids && *sent_asks == asks => {
                    group.pending = None;
                }
                Some(_) => group.pending = Some((view.sequence, bids, asks)),
            }
        }
    }

    /// Sends each depth group whose view changed and whose pace allows it now its newest view,
    /// whole; one rendering serves every member.
    pub(super) fn deliver_due_depth(&mut self, now: Instant) {
        let due: Vec<(PairIndex, u16, u16)> = self
            .depth
            .iter()
            .filter(|(_, group)| {
                group.pending.is_some() && group.sent_at.is_none_or(|sent_at| now >= sent_at + group.interval)
            })
            .map(|(key, _)| *key)
            .collect();
        for key in due {
            let Some(group) = self.depth.get_mut(&key) else {
                continue;
            };
            let Some(view) = group.pending.take() else {
                continue;
            };
            group.sent_at = Some(now);
            // A member that joined while this view waited has it in its snapshot already.
            let members: Vec<usize> = group
                .members
                .iter()
                .copied()
                .filter(|member| {
                    self.subscriptions.get(*member).is_some_and(|subscription| {
                        subscription.snapshot_sequence.is_none_or(|sequence| sequence < view.0)
                    })
                })
                .collect();
            if let Some(&first) = members.first() {
                let rest = self.depth_fields(&self.subscriptions[first].key, key.0, &view);
                self.push_to(members, "update", &rest);
            }
            if let Some(group) = self.depth.get_mut(&key) {
                group.sent = Some(view);
            }
        }
    }

    /// Delivers what a round changed to the live subscriptions.
    pub(super) fn deliver(&mut self, round: Round) {
        for (pair, view) in round.books {
            self.deliver_bbo(pair, &view);
            self.note_depth(pair, &view);
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
        self.deliver_trades(round.trades);
        self.deliver_candles(round.candles);
        self.deliver_orders(round.orders);
        self.deliver_balances(round.balances, round.transfers);
    }

    /// One message of a pair's new trades to each of its trades subscriptions.
    fn deliver_trades(&mut self, round_trades: HashMap<PairIndex, Vec<Trade>>) {
        for (pair, trades) in round_trades {
            let Some(members) = self.trades.get(&pair) else {
                continue;
            };
            let Some(first) = members.first() else { continue };
            let chain = &self.chain.markets().config;
            let mut fields = self.parameters(&self.subscriptions[*first].key);
            let rendered: Vec<Value> = trades
                .iter()
                .map(|trade| serde_json::to_value(render::trade(chain, trade)).expect("a trade serializes"))
                .collect();
            fields.insert("trades".into(), Value::Array(rendered));
            self.push_to(members.clone(), "update", &Value::Object(fields).to_string());
        }
    }

    /// One message per changed candle to each subscription of its pair and interval.
    fn deliver_candles(&mut self, round_candles: HashMap<(PairIndex, CandleInterval), BTreeMap<u64, Candle>>) {
        for ((pair, interval), candles) in round_candles {
            let Some(members) = self.candles.get(&(pair, interval)) else {
                continue;
            };
            let Some(first) = members.first() else { continue };
            let parameters = self.parameters(&self.subscriptions[*first].key);
            let members = members.clone();
            for candle in candles.values() {
                let mut fields = parameters.clone();
                fields.insert(
                    "candle".into(),
                    render::candle(&self.chain.markets().config, pair, candle),
                );
                self.push_to(members.clone(), "update", &Value::Object(fields).to_string());
            }
        }
    }

    /// One message of an account's changed orders to each of its orders subscriptions; the
    /// signature of an order that left the book is forgotten after it.
    fn deliver_orders(&mut self, round_orders: HashMap<Address, BTreeMap<u64, OrderRecord>>) {
        for (account, orders) in round_orders {
            let Some(members) = self.orders.get(&account).cloned() else {
                continue;
            };
            let Some(first) = members.first() else { continue };
            let signatures = self.signatures.entry(account).or_default();
            let mut rendered = Vec::new();
            for record in orders.into_values() {
                let Some(authorization) = signatures.get(&record.sequence).cloned() else {
                    tracing::error!(
                        order = record.sequence,
                        "a streamed order has no known signature; left out"
                    );
                    continue;
                };
                if !record.status.is_open() {
                    signatures.remove(&record.sequence);
                }
                let stored = stored_order(record, authorization);
                rendered.push(
                    serde_json::to_value(render::order(&self.chain.markets().config, &stored))
                        .expect("an order serializes"),
                );
            }
            let mut fields = self.parameters(&self.subscriptions[*first].key);
            fields.insert("orders".into(), Value::Array(rendered));
            self.push_to(members, "update", &Value::Object(fields).to_string());
        }
    }

    /// One message of an account's changed balances and transfers to each of its live
    /// balances subscriptions.
    fn deliver_balances(
        &mut self,
        round_balances: HashMap<Address, BTreeMap<AssetIndex, Balance>>,
        round_transfers: HashMap<Address, Vec<Transfer>>,
    ) {
        let mut accounts: Vec<Address> = round_balances.keys().copied().collect();
        for account in round_transfers.keys() {
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
            let chain = &self.chain.markets().config;
            let balances: Vec<Value> = round_balances
                .get(&account)
                .into_iter()
                .flatten()
                .map(|(asset, balance)| render::balance(chain, *asset, *balance))
                .collect();
            let transfers: Vec<Value> = round_transfers
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

    pub(super) fn deliver_book(&mut self, pair: PairIndex, depth: usize, view: &BookView) {
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

    /// Pushes one message (its fields after the id: `rest`) to each subscription, with its id:
    /// the frame is made once for each distinct `id` and the same bytes go to every subscription
    /// that gave it.
    pub(super) fn push_to(&mut self, members: Vec<usize>, event: &str, rest: &str) {
        let prefix = format!("{{\"event\":\"{event}\",\"id\":");
        let mut frames: HashMap<&str, Utf8Bytes> = HashMap::new();
        for index in members {
            let Some(subscription) = self.subscriptions.get(index) else {
                continue;
            };
            if !matches!(subscription.state, State::Live) {
                continue;
            }
            let frame = frames
                .entry(subscription.id_json.as_str())
                .or_insert_with(|| Utf8Bytes::from(protocol::frame(&prefix, &subscription.id_json, rest)))
                .clone();
            subscription.outbox.push(frame);
        }
    }
}
