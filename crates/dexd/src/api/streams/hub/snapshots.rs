//! Snapshots at one journal position: the writer's answers to book and balances reads, and the
//! orders snapshot brought from the projector's open orders at its mark up to the hub's
//! position with the recent batches. It decides when a subscription goes live; the messages
//! after that are [`super::delivery`]'s.

use super::*;

impl Hub {
    /// A snapshot read came back: the subscription gets its snapshot and goes live.
    pub(super) fn answer(&mut self, token: u64, answer: StreamReadAnswer) {
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

    /// Orders snapshots wait until the history's open orders are within the hub's recent
    /// commands; any subscription that waited too long is refused.
    pub(super) fn retry_waiting_subscriptions(&mut self) {
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
}

pub(super) fn stored_order(record: OrderRecord, authorization: Authorization) -> StoredOrder {
    StoredOrder {
        record,
        nonce: authorization.nonce,
        expiry_ms: authorization.expiry_ms,
        signature: authorization.signature,
    }
}
