//! What the engine answers without changing anything: balances, books, candles, positions,
//! open orders, tradable amounts, counts and the rules of pairs. The API, the streams and custody
//! read through these; none of them writes.

use super::*;

impl Engine {
    /// When the account's dead man's switch fires, if it is armed.
    pub fn cancel_all_after_trigger(&self, account: &Address) -> Option<u64> {
        self.switches.trigger_of(account)
    }

    /// The checked rules of a pair.
    pub fn pair_spec(&self, pair: PairIndex) -> Option<&PairSpec> {
        self.pairs.get(usize::from(pair.0)).map(|state| &state.spec)
    }

    /// How many pairs the chain has.
    pub fn pair_count(&self) -> usize {
        self.pairs.len()
    }

    /// How many assets the chain has.
    pub fn asset_count(&self) -> usize {
        self.assets.len()
    }

    /// The account that collects fees.
    pub fn fee_account(&self) -> Address {
        self.fee_account
    }

    /// The chain's limits.
    pub fn limits(&self) -> EngineLimits {
        self.limits
    }

    /// An account's balance in an asset (zero when never seen).
    pub fn balance(&self, account: &Address, asset: AssetIndex) -> Balance {
        self.ledger.balance(account, asset)
    }

    /// Deposits minus withdrawals of an asset: what every account holds together, the fee
    /// account included.
    pub fn net_deposits(&self, asset: AssetIndex) -> Amount {
        self.ledger.net_deposits(asset)
    }

    /// The chain's custody state: its mode, the vault's deposits as credited, the transfers in
    /// flight.
    pub fn custody(&self) -> &Custody {
        &self.custody
    }

    /// Every entry of the liability tree at this state: each (account, asset) with a non-zero
    /// balance or flow through the vault, in account then asset order.
    pub fn liability_entries(&self) -> Vec<LiabilityEntry> {
        self.custody
            .liabilities()
            .entries(&self.ledger, |account| self.subaccounts.leaf_account(account))
    }

    /// The journal position of the last command applied (0 before any).
    pub fn journal_sequence(&self) -> u64 {
        self.journal_sequence
    }

    /// How many accounts the chain holds.
    pub fn account_count(&self) -> usize {
        self.ledger.account_count()
    }

    /// The best levels of one side of a pair's book and the book's sequence number.
    pub fn book_levels(&self, pair: PairIndex, direction: Direction, depth: usize) -> Option<(Vec<LevelView>, u64)> {
        let state = self.pairs.get(usize::from(pair.0))?;
        Some((state.book.levels(direction, depth), state.book.sequence()))
    }

    /// The best bid and the best ask of a pair, each with what rests there: read without
    /// allocating (what a market-data reader or a quoting bot polls). `None` for an unknown pair.
    pub fn best_levels(&self, pair: PairIndex) -> Option<(Option<LevelView>, Option<LevelView>)> {
        let book = &self.pairs.get(usize::from(pair.0))?.book;
        Some((book.best_level(Direction::Buy), book.best_level(Direction::Sell)))
    }

    /// What rests on one side of a pair's book at `price` (`None`: nothing, or no such pair).
    pub fn depth_at_price(&self, pair: PairIndex, direction: Direction, price: Price) -> Option<LevelView> {
        self.pairs.get(usize::from(pair.0))?.book.level_at(direction, price)
    }

    /// The price of a pair's last trade.
    pub fn last_price(&self, pair: PairIndex) -> Option<Price> {
        self.pairs.get(usize::from(pair.0))?.last_price
    }

    /// A pair's candles that open within `[start_ms, end_ms]`, oldest first, the newest `limit`.
    pub fn candles(
        &self,
        pair: PairIndex,
        interval: CandleInterval,
        start_ms: u64,
        end_ms: u64,
        limit: usize,
    ) -> Vec<Candle> {
        self.pairs
            .get(usize::from(pair.0))
            .map(|state| state.candles.candles(interval, start_ms, end_ms, limit))
            .unwrap_or_default()
    }

    /// An account's position on a pair.
    pub fn position(&self, account: &Address, pair: PairIndex) -> Position {
        self.ledger
            .slot(account)
            .and_then(|slot| self.positions.get(slot.index()))
            .and_then(|positions| positions.get(usize::from(pair.0)))
            .copied()
            .unwrap_or_default()
    }

    /// An open order by id: resting in a book, or waiting for its trigger.
    pub fn open_order(&self, order_id: &OrderId) -> Option<&OrderRecord> {
        match self.order_locations.get(order_id) {
            Some((pair, slot)) => Some(self.pairs[usize::from(pair.0)].book.get(*slot)),
            None => {
                let pair = self.waiting_orders.get(order_id)?;
                self.pairs[usize::from(pair.0)].triggers.get(order_id)
            }
        }
    }

    /// How many orders wait for their trigger on all pairs.
    pub fn untriggered_order_count(&self) -> usize {
        self.waiting_orders.len()
    }

    /// How many open orders an account has.
    pub fn open_order_count(&self, account: &Address) -> u32 {
        self.ledger.slot(account).map_or(0, |slot| self.open_orders_of(slot))
    }

    /// How many resting orders all books hold.
    pub fn resting_order_count(&self) -> usize {
        self.order_locations.len()
    }

    /// What an account can trade on a pair now. The buy side walks the resting sell orders of
    /// other accounts (an account never trades with itself) with the available quote.
    pub fn tradable_amounts(&self, account: &Address, pair: PairIndex) -> Option<TradableAmounts> {
        let state = self.pairs.get(usize::from(pair.0))?;
        let spec = &state.spec;
        let budget = self.ledger.balance(account, spec.quote()).available;
        let mut remaining_budget = budget;
        let mut buy_quantity = Quantity::ZERO;
        state.book.visit_in_priority(Direction::Sell, |_, record, _| {
            if record.terms.account == *account {
                return true;
            }
            let price = record.terms.price.expect("invariant: resting orders have prices");
            let affordable = spec.affordable_quantity_rounded_down(price, remaining_budget);
            let take = affordable.min(record.remaining());
            let cost = spec.cost(price, take).expect("invariant: a resting order's cost fits");
            remaining_budget = remaining_budget
                .checked_sub(cost)
                .expect("affordable quantity is within budget");
            buy_quantity = buy_quantity.checked_add(take).unwrap_or(buy_quantity);
            take == record.remaining()
        });
        Some(TradableAmounts {
            buy_quantity,
            buy_cost: budget,
            sell_amount: self.ledger.balance(account, spec.base()).available,
        })
    }

    /// The pairs the operator halted, in order.
    pub fn halted_pairs(&self) -> Vec<PairIndex> {
        self.pairs
            .iter()
            .enumerate()
            .filter(|(_, state)| state.halted)
            .map(|(index, _)| PairIndex(u16::try_from(index).expect("pairs fit u16")))
            .collect()
    }

    /// The met ranges whose triggers wait to fire, by pair then oldest first.
    pub fn met_pending(&self) -> Vec<(PairIndex, crate::triggers::MetRange)> {
        self.pairs
            .iter()
            .enumerate()
            .flat_map(|(index, state)| {
                let pair = PairIndex(u16::try_from(index).expect("pairs fit u16"));
                state.met_pending.iter().map(move |range| (pair, *range))
            })
            .collect()
    }

    /// Whether the operator halted `pair`.
    pub fn is_pair_halted(&self, pair: PairIndex) -> bool {
        self.pairs.get(usize::from(pair.0)).is_some_and(|state| state.halted)
    }
}
