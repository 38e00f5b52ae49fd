//! The engine's whole state as plain data ([`EngineState`]), and the engine rebuilt from it: what
//! a snapshot holds. The books keep their time priority (orders listed best price first, oldest
//! first within a level, re-inserted in that order) and their sequence numbers; accounts keep
//! their slots; candles, positions, nonces, custody, agents and switches come back as they were. Indexes that
//! follow from the rest (order locations, open-order counts, client order ids) are rebuilt.
//!
//! Pure data in, pure data out: encoding it to bytes and checking it is the caller's business.

use super::{Engine, EngineConfig, PairState};
use crate::agents::{AgentGrant, AgentRegistry};
use crate::configuration::ChainConfiguration;
use crate::custody::{Custody, CustodyState};
use crate::ledger::{Balance, Ledger};
use crate::liabilities::LiabilityToken;
use crate::market_data::{Candle, CandleSeries, Position};
use crate::money::{Address, Amount, AssetIndex, PairIndex, Price};
use crate::nonces::{LiveBatch, LiveClaim, Nonce, NonceRegistry};
use crate::order::{OrderRecord, OrderStatus};
use crate::pair::PairSpecError;
use crate::subaccounts::{SubaccountRegistry, SubaccountsState};
use crate::triggers::MetRange;
use crate::twaps::{TwapRegistry, TwapsState};

/// One pair's state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairSnapshot {
    /// The book's sequence number.
    pub book_sequence: u64,
    /// The price of the last trade.
    pub last_price: Option<Price>,
    /// The open orders: the resting ones, bids then asks, each best price first, oldest first
    /// in a level; then the untriggered ones, oldest first.
    pub orders: Vec<OrderRecord>,
    /// The candle series of each interval, oldest first.
    pub candles: [Vec<Candle>; 8],
}

/// The whole state of one chain's engine.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineState {
    /// The sequence the next order gets.
    pub next_order_sequence: u64,
    /// The id the next trade gets.
    pub next_trade_id: u64,
    /// The time of the last applied command.
    pub last_time_ms: u64,
    /// The journal position of the last applied command.
    pub journal_sequence: u64,
    /// Every account in slot order, with its balance in each asset.
    pub accounts: Vec<(Address, Vec<Balance>)>,
    /// Deposits minus withdrawals of each asset.
    pub net_deposits: Vec<Amount>,
    /// Each pair's book, candles and last price.
    pub pairs: Vec<PairSnapshot>,
    /// Positions of the accounts that traded: (slot, one per pair).
    pub positions: Vec<(u32, Vec<Position>)>,
    /// Live nonces: (expiry, account, nonce, signer).
    pub nonces: Vec<LiveClaim>,
    /// The live nonces a batch signed once claimed, with its orders applied, by account and
    /// nonce.
    pub batch_nonces: Vec<(Address, Nonce, LiveBatch)>,
    /// Custody.
    pub custody: CustodyState,
    /// Approved agents: (account, grant), by account then agent.
    pub agents: Vec<(Address, AgentGrant)>,
    /// Armed dead man's switches: (account, trigger time), by account.
    pub switches: Vec<(Address, u64)>,
    /// The known subaccounts and the remembered transfers between them.
    pub subaccounts: SubaccountsState,
    /// The running TWAPs and each account's recently finished ones.
    pub twaps: TwapsState,
    /// The pairs the operator halted, in order.
    pub halted_pairs: Vec<PairIndex>,
    /// The met ranges whose triggers wait to fire, by pair then oldest first
    /// ([`crate::configuration::RULE_MET_TRIGGERS_QUEUED`]).
    pub met_pending: Vec<(PairIndex, MetRange)>,
    /// The chain's configuration as last journaled (`None` before the journal's first
    /// `Configure`, or for a journal that predates them): a state that carries one is restored
    /// under it.
    pub configuration: Option<ChainConfiguration>,
}

/// Why a state could not be restored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RestoreError {
    /// The configuration's pairs are invalid.
    Pairs(PairSpecError),
    /// The state contradicts the configuration or itself.
    Inconsistent(String),
}

impl std::fmt::Display for RestoreError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RestoreError::Pairs(error) => write!(formatter, "{error}"),
            RestoreError::Inconsistent(message) => formatter.write_str(message),
        }
    }
}

impl std::error::Error for RestoreError {}

impl Engine {
    /// The whole state as plain data.
    pub fn state(&self) -> EngineState {
        EngineState {
            next_order_sequence: self.next_order_sequence,
            next_trade_id: self.next_trade_id,
            last_time_ms: self.last_time_ms,
            journal_sequence: self.journal_sequence,
            accounts: self
                .ledger
                .accounts_in_slot_order()
                .map(|(address, balances)| (*address, balances.to_vec()))
                .collect(),
            net_deposits: self.ledger.all_net_deposits().to_vec(),
            pairs: self
                .pairs
                .iter()
                .map(|state| PairSnapshot {
                    book_sequence: state.book.sequence(),
                    last_price: state.last_price,
                    orders: state
                        .book
                        .orders_in_priority()
                        .into_iter()
                        .chain(state.triggers.orders_by_sequence())
                        .cloned()
                        .collect(),
                    candles: state.candles.series(),
                })
                .collect(),
            positions: self
                .positions
                .iter()
                .enumerate()
                .filter(|(_, positions)| !positions.is_empty())
                .map(|(slot, positions)| (u32::try_from(slot).expect("slots fit u32"), positions.clone()))
                .collect(),
            nonces: self.nonces.iter_in_order().collect(),
            batch_nonces: self.nonces.batches_in_order(),
            custody: self.custody.state(),
            agents: self
                .agents
                .all()
                .map(|(account, grant)| (*account, grant.clone()))
                .collect(),
            switches: self
                .switches
                .all()
                .map(|(account, trigger)| (*account, *trigger))
                .collect(),
            subaccounts: self.subaccounts.state(),
            twaps: self.twaps.state(),
            halted_pairs: self.halted_pairs(),
            met_pending: self.met_pending(),
            configuration: self.configuration(),
        }
    }

    /// The engine of `config` in `state`. Refuses a state that does not fit the configuration
    /// (other assets or pairs) or whose orders or accounts contradict each other; a restored
    /// engine that passes this is checked further by its caller (its state hash). A state that
    /// carries its journaled configuration is restored under that one, and `config` is not
    /// used: `config` is for a state of a journal that predates configurations.
    pub fn from_state(config: EngineConfig, state: &EngineState) -> Result<Engine, RestoreError> {
        Engine::from_state_and_orders(config, state, |pair| state.pairs[pair].orders.iter().cloned().map(Ok))
    }

    /// [`Engine::from_state`], with each pair's resting orders taken from
    /// `orders_of_pair(pair index)` instead of `state`'s lists (which are ignored): for a
    /// caller that holds them encoded and decodes them straight into the books. An `Err` among
    /// them refuses the restore.
    pub fn from_state_and_orders<Orders>(
        config: EngineConfig,
        state: &EngineState,
        mut orders_of_pair: impl FnMut(usize) -> Orders,
    ) -> Result<Engine, RestoreError>
    where
        Orders: Iterator<Item = Result<OrderRecord, String>>,
    {
        let inconsistent = |message: String| RestoreError::Inconsistent(message);
        let config = match &state.configuration {
            Some(configuration) => {
                configuration
                    .check()
                    .map_err(|error| inconsistent(format!("the state's configuration: {error}")))?;
                configuration.engine.clone()
            }
            None => config,
        };
        let mut engine = Engine::new(config.clone()).map_err(RestoreError::Pairs)?;
        if state.pairs.len() != engine.pairs.len() {
            return Err(inconsistent(format!(
                "the state has {} pairs, the configuration {}",
                state.pairs.len(),
                engine.pairs.len()
            )));
        }
        let asset_count = config.assets.len();
        engine.ledger = Ledger::restore(
            asset_count,
            config.limits.max_accounts,
            state.accounts.clone(),
            state.net_deposits.clone(),
        )
        .map_err(inconsistent)?;
        engine.fee_slot = engine
            .ledger
            .slot(&config.fee_account)
            .ok_or_else(|| inconsistent("the fee account is missing".into()))?;
        engine.next_order_sequence = state.next_order_sequence;
        engine.next_trade_id = state.next_trade_id;
        engine.last_time_ms = state.last_time_ms;
        engine.journal_sequence = state.journal_sequence;
        engine.custody = Custody::restore(
            config.custody,
            asset_count,
            config.limits.max_pending_transfers,
            state.custody.clone(),
        )
        .map_err(inconsistent)?;
        engine.agents = AgentRegistry::restore(state.agents.iter().cloned()).map_err(inconsistent)?;
        for (account, trigger_at_ms) in &state.switches {
            engine.switches.set(*account, Some(*trigger_at_ms));
        }
        engine.subaccounts = SubaccountRegistry::restore(state.subaccounts.clone()).map_err(inconsistent)?;
        // After the subaccounts: a claim for a subaccount is counted under its owner.
        let rules = config.limits.rules;
        let subaccounts = &engine.subaccounts;
        engine.nonces = NonceRegistry::restore(
            (config.limits.max_live_nonces, config.limits.max_live_nonces_per_account),
            state.nonces.clone(),
            state.batch_nonces.iter().copied(),
            |account, signer| super::nonce_holder(rules, subaccounts, account, signer),
        );
        engine.twaps = TwapRegistry::restore(state.twaps.clone()).map_err(inconsistent)?;
        for pair in &state.halted_pairs {
            engine
                .pairs
                .get_mut(usize::from(pair.0))
                .ok_or_else(|| inconsistent(format!("halted pair {} is not configured", pair.0)))?
                .halted = true;
        }
        for (pair, range) in &state.met_pending {
            engine
                .pairs
                .get_mut(usize::from(pair.0))
                .ok_or_else(|| inconsistent(format!("met triggers wait on pair {}, not configured", pair.0)))?
                .met_pending
                .push_back(*range);
        }
        engine.restore_positions(&state.positions)?;
        for (index, snapshot) in state.pairs.iter().enumerate() {
            engine.restore_book(index, orders_of_pair(index))?;
            let state: &mut PairState = &mut engine.pairs[index];
            state.book.restore_sequence(snapshot.book_sequence);
            state.last_price = snapshot.last_price;
            state.candles = CandleSeries::restore(snapshot.candles.clone());
            if state.book.is_crossed() {
                return Err(inconsistent(format!("the book of pair {index} is crossed")));
            }
            if state.book.check_structure().is_err() {
                return Err(inconsistent(format!("the book of pair {index} is malformed")));
            }
        }
        engine.description = state
            .configuration
            .as_ref()
            .map(|configuration| configuration.description.clone());
        Ok(engine)
    }

    /// Each account's positions, by ledger slot.
    fn restore_positions(&mut self, positions: &[(u32, Vec<Position>)]) -> Result<(), RestoreError> {
        let pair_count = self.pairs.len();
        for (slot, positions) in positions {
            let (slot, index) = (*slot, *slot as usize);
            if index >= self.ledger.account_count() || positions.len() != pair_count {
                return Err(RestoreError::Inconsistent(format!(
                    "positions of slot {slot} do not fit"
                )));
            }
            if self.positions.len() <= index {
                self.positions.resize_with(index + 1, Vec::new);
            }
            self.positions[index] = positions.clone();
        }
        Ok(())
    }

    /// The open orders of pair `index` into its book and its trigger book, with their accounts'
    /// open-order lists, their locations, client order ids, expiries and groups.
    fn restore_book(
        &mut self,
        index: usize,
        orders: impl Iterator<Item = Result<OrderRecord, String>>,
    ) -> Result<(), RestoreError> {
        let inconsistent = |message: String| RestoreError::Inconsistent(message);
        let pair = PairIndex(u16::try_from(index).expect("pair count fits u16"));
        // Sized once, with room to grow: a million orders grown into by doubling would be
        // moved several times, and a book filled exactly to its capacity would be moved
        // whole by the first order placed after the restore. Room not yet used costs
        // address space, not memory.
        let restoring = orders.size_hint().0;
        self.pairs[index].book.reserve(restoring + restoring / 4);
        self.order_locations.reserve(restoring);
        for record in orders {
            let record = record.map_err(|error| inconsistent(format!("a resting order of pair {index}: {error}")))?;
            let order_id = record.terms.order_id;
            let waits = record.status == OrderStatus::Untriggered && record.terms.conditions().trigger.is_some();
            let rests = record.status == OrderStatus::Open && record.terms.price.is_some();
            if record.terms.pair != pair || !(waits || rests) {
                return Err(inconsistent(format!("order {order_id} cannot be open in pair {index}")));
            }
            let slot = self
                .ledger
                .slot(&record.terms.account)
                .ok_or_else(|| inconsistent(format!("order {order_id} of an unknown account")))?;
            if self.order_locations.contains_key(&order_id) || self.waiting_orders.contains_key(&order_id) {
                return Err(inconsistent(format!("order {order_id} is open twice")));
            }
            if let Some(group) = &record.terms.conditions().oco_group {
                let key = (record.terms.account, group.clone());
                if self.oco_groups.get(&key).is_some_and(|members| members.len() >= 2) {
                    return Err(inconsistent(format!("order {order_id} would be a group's third")));
                }
            }
            self.register_open_order(&record, slot);
            if waits {
                self.waiting_orders.insert(order_id, pair);
                self.pairs[index].triggers.insert(record, slot);
            } else {
                self.rest_in_book(record, slot);
            }
        }
        Ok(())
    }
}

impl EngineState {
    /// The state of a journal whose configuration gains `configuration`'s new assets and pairs:
    /// every account and position gets a zero entry for each, each new pair an empty book, and
    /// a vault deposit of a token that becomes an asset, which the ledger could not credit,
    /// is counted under the asset (still uncredited: its amount is owed through the exit's
    /// formula, as before). Refuses a configuration with fewer assets or pairs than the state.
    pub fn widened(mut self, configuration: &ChainConfiguration) -> Result<EngineState, RestoreError> {
        let asset_count = configuration.engine.assets.len();
        let pair_count = configuration.engine.pairs.len();
        if asset_count < self.net_deposits.len() || pair_count < self.pairs.len() {
            return Err(RestoreError::Inconsistent(
                "a configuration cannot remove assets or pairs".into(),
            ));
        }
        for (_, balances) in &mut self.accounts {
            balances.resize(asset_count, Balance::default());
        }
        self.net_deposits.resize(asset_count, Amount::ZERO);
        for (_, positions) in &mut self.positions {
            positions.resize(pair_count, Position::default());
        }
        while self.pairs.len() < pair_count {
            self.pairs.push(PairSnapshot {
                book_sequence: 0,
                last_price: None,
                orders: Vec::new(),
                candles: Default::default(),
            });
        }
        let asset_of_token = |token: &Address| {
            configuration
                .description
                .assets
                .iter()
                .position(|asset| asset.token.as_ref() == Some(token))
                .map(|index| AssetIndex(u16::try_from(index).expect("assets fit u16")))
        };
        let uncredited = &mut self.custody.liabilities.uncredited;
        for (_, token) in uncredited.iter_mut() {
            if let LiabilityToken::Unlisted(address) = token {
                if let Some(asset) = asset_of_token(address) {
                    *token = LiabilityToken::Asset(asset);
                }
            }
        }
        uncredited.sort_unstable();
        uncredited.dedup();
        self.configuration = Some(configuration.clone());
        Ok(self)
    }
}
