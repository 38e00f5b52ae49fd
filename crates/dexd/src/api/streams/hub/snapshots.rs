//! Snapshots at one journal position, the hub's: books and balances from the hub's copy of the
//! engine, which follows the journal entries the hub takes in (the writer gives a copy once, at
//! the start and after an overflow), and the orders snapshot brought from the projector's open
//! orders at its mark up to the hub's position with the recent batches. It decides when a
//! subscription goes live; the messages after that are [`super::delivery`]'s.

use super::*;

impl Hub {
    /// Asks the writer for a copy of its engine, unless one is on its way.
    pub(super) fn request_engine_copy(&mut self) {
        if self.follower_read.is_some() {
            return;
        }
        match self.chain.request_stream_read(StreamRead::EngineCopy) {
            Ok(token) => self.follower_read = Some(token),
            // The writer's queue is full: asked again at the next tick.
            Err(_) => tracing::debug!("the writer is too busy for an engine copy now"),
        }
    }

    /// The writer's copy of its engine came, as of `journaled_through`: the hub's copy follows
    /// the journal from there, and the subscriptions that waited for it get their snapshots.
    pub(super) fn answer(&mut self, token: u64, journaled_through: u64, answer: StreamReadAnswer) {
        if self.follower_read != Some(token) {
            return;
        }
        self.follower_read = None;
        let StreamReadAnswer::EngineCopy(engine) = answer;
        self.follower = Some(Follower {
            engine: *engine,
            position: journaled_through,
        });
        self.retry_waiting_subscriptions();
    }

    /// Applies a journaled batch's entries to the hub's copy of the engine; a copy that cannot
    /// follow (a gap, a refusal) is dropped and another one asked for.
    pub(super) fn follow(&mut self, batch: &PublishedBatch) {
        let Some(follower) = self.follower.as_mut() else {
            return;
        };
        let mut events = Vec::new();
        for entry in &batch.journal {
            if entry.sequence <= follower.position {
                continue;
            }
            let followed = if entry.sequence == follower.position + 1 {
                dexd_store::follow_journal_entry(&mut follower.engine, entry, &mut events)
                    .map_err(|error| error.to_string())
            } else {
                Err(format!(
                    "the journal jumps from {} to {}",
                    follower.position, entry.sequence
                ))
            };
            if let Err(error) = followed {
                tracing::error!(%error, "the streams' copy of the engine cannot follow the journal; it is taken again");
                self.follower = None;
                self.request_engine_copy();
                return;
            }
            follower.position = entry.sequence;
        }
    }

    /// The hub's copy of the engine, when it stands at the hub's position.
    fn engine_at_position(&self) -> Option<&Engine> {
        self.follower
            .as_ref()
            .filter(|follower| follower.position == self.position)
            .map(|follower| &follower.engine)
    }

    /// Gives a book or balances subscription its snapshot from the hub's copy of the engine, or
    /// leaves it waiting for the copy.
    pub(super) fn snapshot_from_engine(&mut self, index: usize) {
        let Some(engine) = self.engine_at_position() else {
            self.subscriptions[index].state = State::AwaitingEngineCopy;
            self.request_engine_copy();
            return;
        };
        match self.subscriptions[index].key {
            ChannelKey::Book { pair, .. } => {
                let depth = self.subscriptions[index].depth;
                let Some(view) = book_view(engine, pair, depth) else {
                    return;
                };
                self.book_snapshot(index, view);
            }
            ChannelKey::Bbo { pair, .. } => {
                let Some(view) = book_view(engine, pair, 1) else {
                    return;
                };
                self.bbo_snapshot(index, view);
            }
            ChannelKey::Depth { pair, levels, .. } => {
                let Some(view) = book_view(engine, pair, usize::from(levels)) else {
                    return;
                };
                self.depth_snapshot(index, view);
            }
            ChannelKey::Balances { account, .. } => {
                let balances: Vec<Balance> = (0..engine.asset_count())
                    .map(|asset| engine.balance(&account, AssetIndex(asset as u16)))
                    .collect();
                self.balances_snapshot(index, &balances);
            }
            _ => {}
        }
    }

    /// A best bid and ask subscription goes live with the top at the hub's position; its group
    /// takes that top, unless the publications already brought it one (then the same).
    fn bbo_snapshot(&mut self, index: usize, view: BookView) {
        self.subscriptions[index].state = State::Live;
        let top = (view.sequence, view.bids.first().copied(), view.asks.first().copied());
        let rest = self.bbo_fields(&self.subscriptions[index].key, view.pair, top);
        let subscription = &self.subscriptions[index];
        subscription.outbox.push(protocol::frame(
            "{\"event\":\"snapshot\",\"id\":",
            &subscription.id_json,
            &rest,
        ));
        if let Some(group) = self.bbo.get_mut(&view.pair) {
            group.top.get_or_insert(top);
        }
    }

    /// A depth subscription goes live with the top levels at the hub's position, as a snapshot;
    /// its group's next message comes at the group's pace.
    fn depth_snapshot(&mut self, index: usize, view: BookView) {
        self.subscriptions[index].state = State::Live;
        self.subscriptions[index].snapshot_sequence = Some(view.sequence);
        let key = self.subscriptions[index].key;
        let ChannelKey::Depth {
            pair,
            levels,
            interval_ms,
            ..
        } = key
        else {
            return;
        };
        let levels = usize::from(levels);
        let current: DepthView = (
            view.sequence,
            view.bids.iter().take(levels).copied().collect(),
            view.asks.iter().take(levels).copied().collect(),
        );
        let rest = self.depth_fields(&key, pair, &current);
        let subscription = &self.subscriptions[index];
        subscription.outbox.push(protocol::frame(
            "{\"event\":\"snapshot\",\"id\":",
            &subscription.id_json,
            &rest,
        ));
        if let Some(group) = self.depth.get_mut(&(pair, levels as u16, interval_ms)) {
            if group.sent.is_none() {
                group.sent = Some(current);
                group.sent_at = Some(Instant::now());
            }
        }
    }

    fn book_snapshot(&mut self, index: usize, view: BookView) {
        self.subscriptions[index].state = State::Live;
        let depth = self.subscriptions[index].depth;
        let Some(group) = self.books.get_mut(&(view.pair, depth)) else {
            return;
        };
        let bids: Vec<LevelView> = view.bids.iter().take(depth).copied().collect();
        let asks: Vec<LevelView> = view.asks.iter().take(depth).copied().collect();
        // Every batch since the group's first snapshot brought the pair's view, so the group's
        // view is the book at this position too; were it not, the members already there would
        // get wrong updates, which is a fault worth a loud log.
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

    fn balances_snapshot(&mut self, index: usize, balances: &[Balance]) {
        self.subscriptions[index].state = State::Live;
        let subscription = &self.subscriptions[index];
        let chain = &self.chain.markets().config;
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

    /// Orders snapshots wait until the history's open orders are within the hub's recent
    /// commands; any subscription that waited too long is refused.
    pub(super) fn retry_waiting_subscriptions(&mut self) {
        let waiting: Vec<usize> = self
            .subscriptions
            .iter()
            .filter(|(_, subscription)| !matches!(subscription.state, State::Live))
            .map(|(index, _)| index)
            .collect();
        if self.follower.is_none() {
            self.request_engine_copy();
        }
        for index in waiting {
            match self.subscriptions[index].state {
                State::AwaitingOrders => self.try_orders_snapshot(index),
                State::AwaitingEngineCopy if self.engine_at_position().is_some() => self.snapshot_from_engine(index),
                _ => {}
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
    pub(super) fn try_orders_snapshot(&mut self, index: usize) {
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
                    if !record.status.is_open() {
                        orders.remove(&record.sequence);
                    } else if let Some(known) = orders.get_mut(&record.sequence) {
                        known.record = record.clone();
                    } else if let Some(authorization) = command
                        .authorization
                        .clone()
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
                    batch: order.batch.clone(),
                    claims_batch_nonce: false,
                    approved_at_block: None,
                },
            );
        }
        self.orders.entry(account).or_default().push(index);
        let subscription = &mut self.subscriptions[index];
        subscription.state = State::Live;
        let rendered: Vec<Value> = orders
            .values()
            .map(|order| {
                serde_json::to_value(render::order(&self.chain.markets().config, order)).expect("an order serializes")
            })
            .collect();
        let mut fields = subscription.key.parameters(&self.venue);
        fields.insert("orders".into(), Value::Array(rendered));
        subscription
            .outbox
            .push(protocol::message("snapshot", &subscription.id_json, fields));
    }
}

pub(super) fn stored_order(record: OrderRecord, authorization: Authorization) -> StoredOrder {
    StoredOrder {
        record,
        nonce: authorization.nonce,
        expiry_ms: authorization.expiry_ms,
        signature: authorization.signature,
        batch: authorization.batch,
    }
}
