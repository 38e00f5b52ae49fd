//! The engine of one chain: every book, every balance, and the rules that turn a command into
//! events.
//!
//! [`Engine::execute`] takes a [`Command`] and the time, and either applies it whole and appends
//! the resulting [`Event`]s, or returns a [`Rejection`] and changes nothing. All checks happen
//! before the first change, so a rejection never leaves half a command behind. The engine does no
//! IO, reads no clock and draws no random numbers: the same commands at the same times give the
//! same events and the same [`Engine::state_hash`], which is what makes replay possible.

mod state;
mod state_hash;

pub use self::state::{EngineState, PairSnapshot, RestoreError};

use rustc_hash::FxHashMap;

use crate::book::{LevelView, OrderBook, SlotKey};
use crate::custody::{
    ChainDeposit, ChainDepositSubmission, Custody, CustodyMode, Transfer, TransferRequest, VaultWithdrawal,
    WithdrawalKey,
};
use crate::ledger::{AccountSlot, Balance, Ledger, LedgerError};
use crate::market_data::{Candle, CandleInterval, CandleSeries, Position};
use crate::money::{Address, Amount, AssetIndex, OrderId, PairIndex, Price, Quantity};
use crate::nonces::{NonceClaim, NonceRegistry, NonceRejection};
use crate::order::{CancelReason, Direction, NewOrder, OrderRecord, OrderStatus, OrderType, TimeInForce};
use crate::pair::{AssetSpec, PairDefinition, PairSpec, PairSpecError};
pub(crate) use state_hash::StateHasher;

/// The documented limits of one chain's engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineLimits {
    /// Open orders one account may have on the chain.
    pub max_open_orders_per_account: u32,
    /// Resting orders the chain's books may hold in all.
    pub max_resting_orders: usize,
    /// Accounts the ledger may hold.
    pub max_accounts: usize,
    /// Nonces of client-signed requests the chain keeps at once (each until its request expires).
    pub max_live_nonces: usize,
    /// Pending deposits, and separately pending withdrawals, the chain keeps at once (vault
    /// custody).
    pub max_pending_transfers: usize,
}

impl Default for EngineLimits {
    fn default() -> EngineLimits {
        EngineLimits {
            max_open_orders_per_account: 500,
            max_resting_orders: 2_000_000,
            max_accounts: 10_000_000,
            max_live_nonces: 1_000_000,
            max_pending_transfers: 100_000,
        }
    }
}

/// Everything the engine of one chain is built from.
#[derive(Clone, Debug)]
pub struct EngineConfig {
    /// The chain's assets; an [`AssetIndex`] is a position in this list.
    pub assets: Vec<AssetSpec>,
    /// The chain's pairs; a [`PairIndex`] is a position in this list.
    pub pairs: Vec<PairDefinition>,
    /// Where fees go.
    pub fee_account: Address,
    /// Where the chain's balances are held.
    pub custody: CustodyMode,
    /// The chain's limits.
    pub limits: EngineLimits,
}

/// What the engine can be asked to do.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Command {
    /// Place an order.
    PlaceOrder(NewOrder),
    /// Cancel an open order of `account`.
    CancelOrder {
        /// Who asks.
        account: Address,
        /// Which order.
        order_id: OrderId,
    },
    /// Credit an account at once (ledger custody).
    Deposit(TransferRequest),
    /// Debit an account at once (ledger custody).
    Withdraw(TransferRequest),
    /// Record a deposit transaction the venue sent for an account, as pending (vault custody).
    SubmitChainDeposit(ChainDepositSubmission),
    /// Credit a confirmed `Deposited` event of the vault (vault custody).
    CreditChainDeposit(ChainDeposit),
    /// A deposit the venue sent reverted or can never be mined (vault custody).
    FailChainDeposit {
        /// The deposit transaction's hash.
        tx_hash: [u8; 32],
    },
    /// The chain is confirmed and scanned for deposits through this block (vault custody).
    RecordDepositScan {
        /// The block's number.
        block_number: u64,
        /// The block's hash.
        block_hash: [u8; 32],
    },
    /// Debit an account for a withdrawal the vault will pay (vault custody).
    RequestWithdrawal(VaultWithdrawal),
    /// A transaction paying these withdrawals was broadcast (vault custody).
    MarkWithdrawalsSent {
        /// The transaction's hash.
        tx_hash: [u8; 32],
        /// The withdrawals it pays.
        withdrawals: Vec<WithdrawalKey>,
    },
    /// These withdrawals were paid, with enough confirmations (vault custody).
    ConfirmWithdrawals {
        /// The transaction that paid them.
        tx_hash: [u8; 32],
        /// Its block.
        block_number: u64,
        /// The withdrawals it paid.
        withdrawals: Vec<WithdrawalKey>,
    },
    /// A withdrawal can never be paid; its amount is credited back (vault custody).
    FailWithdrawal(WithdrawalKey),
}

impl Command {
    /// The account that asked for the command, if an account did (the chain's facts are not
    /// asked for by anyone).
    pub fn account(&self) -> Option<Address> {
        match self {
            Command::PlaceOrder(order) => Some(order.account),
            Command::CancelOrder { account, .. } => Some(*account),
            Command::Deposit(request) | Command::Withdraw(request) => Some(request.account),
            Command::RequestWithdrawal(withdrawal) => Some(withdrawal.request.account),
            Command::SubmitChainDeposit(_)
            | Command::CreditChainDeposit(_)
            | Command::FailChainDeposit { .. }
            | Command::RecordDepositScan { .. }
            | Command::MarkWithdrawalsSent { .. }
            | Command::ConfirmWithdrawals { .. }
            | Command::FailWithdrawal(_) => None,
        }
    }
}

/// One execution between a resting (maker) order and an incoming (taker) order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Trade {
    /// The chain-wide trade sequence number, from 1.
    pub trade_id: u64,
    /// On which pair.
    pub pair: PairIndex,
    /// The maker's price.
    pub price: Price,
    /// How much base.
    pub quantity: Quantity,
    /// The base amount, in base units.
    pub base_amount: Amount,
    /// The quote amount, in quote units.
    pub cost: Amount,
    /// The incoming order's direction.
    pub taker_direction: Direction,
    /// The resting order.
    pub maker_order_id: OrderId,
    /// The incoming order.
    pub taker_order_id: OrderId,
    /// The resting order's account.
    pub maker_account: Address,
    /// The incoming order's account.
    pub taker_account: Address,
    /// The maker's fee, in the asset the maker receives.
    pub maker_fee: Amount,
    /// The taker's fee, in the asset the taker receives.
    pub taker_fee: Amount,
    /// When, in ms since the epoch.
    pub timestamp_ms: u64,
}

/// What a command did. Every order a command touched appears once, in its final state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Event {
    /// An order's new state.
    OrderUpdated(OrderRecord),
    /// A trade.
    TradeExecuted(Trade),
    /// An account's new balance in an asset.
    BalanceUpdated {
        /// Whose.
        account: Address,
        /// Which asset.
        asset: AssetIndex,
        /// The balance after the command.
        balance: Balance,
    },
    /// A deposit or withdrawal, new or in a new state (the whole transfer each time).
    TransferApplied(Transfer),
}

/// Why a command was refused. A refused command changed nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rejection {
    /// No such pair on the chain.
    UnknownPair,
    /// No such asset on the chain.
    UnknownAsset,
    /// The order's terms contradict each other (a market order with a price, a limit order
    /// without one, a zero quantity).
    InvalidOrder(&'static str),
    /// The available balance is below what the command needs.
    InsufficientBalance,
    /// The order is smaller than the pair's minimum amount.
    BelowMinAmount,
    /// The order's value is below the pair's minimum notional.
    BelowMinNotional,
    /// A post-only order would have traded on arrival.
    PostOnlyWouldTake,
    /// A fill-or-kill order could not fill completely at once.
    FillOrKillNotFillable,
    /// A market order found nothing to trade against.
    NoLiquidity,
    /// The account already has its limit of open orders.
    TooManyOpenOrders,
    /// A value does not fit the engine's integers.
    AmountTooLarge,
    /// An open order already has this id.
    DuplicateOrderId,
    /// An open order of the account already has this client order id.
    DuplicateClientOrderId,
    /// No open order with this id.
    OrderNotFound,
    /// The order belongs to another account.
    NotOwner,
    /// The chain's books hold their limit of resting orders.
    BookFull,
    /// The chain holds its limit of accounts.
    TooManyAccounts,
    /// A client-signed request's nonce was refused.
    Nonce(NonceRejection),
    /// The command belongs to the other custody mode than the chain's.
    WrongCustodyMode,
    /// A pending transfer already has this id.
    DuplicateTransfer,
    /// The chain holds its limit of pending deposits or of pending withdrawals.
    TooManyPendingTransfers,
    /// The transfer named is not pending.
    TransferNotPending,
    /// A chain deposit that is not the vault's next one, or a scan behind the last.
    DepositOutOfOrder,
}

impl Rejection {
    fn from_ledger(error: LedgerError) -> Rejection {
        match error {
            LedgerError::InsufficientBalance => Rejection::InsufficientBalance,
            LedgerError::Overflow => Rejection::AmountTooLarge,
            LedgerError::TooManyAccounts => Rejection::TooManyAccounts,
        }
    }
}

/// What an account can trade on a pair right now.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TradableAmounts {
    /// The base that the available quote buys now against the resting sell orders, in lots.
    pub buy_quantity: Quantity,
    /// The available quote, in quote units.
    pub buy_cost: Amount,
    /// The available base, in base units.
    pub sell_amount: Amount,
}

#[derive(Clone)]
struct PairState {
    spec: PairSpec,
    book: OrderBook,
    candles: CandleSeries,
    last_price: Option<Price>,
}

/// A fill decided by the planning walk, before anything changes.
#[derive(Clone, Copy)]
struct PlannedFill {
    key: SlotKey,
    maker_slot: AccountSlot,
    quantity: Quantity,
}

#[derive(Clone, Default)]
struct Plan {
    fills: Vec<PlannedFill>,
    self_trade_cancels: Vec<SlotKey>,
    filled: Quantity,
    cost: Amount,
}

/// The engine of one chain.
#[derive(Clone)]
pub struct Engine {
    assets: Vec<AssetSpec>,
    pairs: Vec<PairState>,
    ledger: Ledger,
    order_locations: FxHashMap<OrderId, (PairIndex, SlotKey)>,
    /// Open orders per account, indexed by ledger slot.
    open_order_counts: Vec<u32>,
    client_order_ids: FxHashMap<Address, FxHashMap<String, OrderId>>,
    /// Positions per account and pair, indexed by ledger slot; empty until the account trades.
    positions: Vec<Vec<Position>>,
    fee_account: Address,
    fee_slot: AccountSlot,
    limits: EngineLimits,
    nonces: NonceRegistry,
    custody: Custody,
    next_order_sequence: u64,
    next_trade_id: u64,
    last_time_ms: u64,
    plan: Plan,
    touched_balances: Vec<(AccountSlot, AssetIndex)>,
}

impl Engine {
    /// Builds an empty engine, checking every pair.
    pub fn new(config: EngineConfig) -> Result<Engine, PairSpecError> {
        let pairs = config
            .pairs
            .iter()
            .map(|definition| {
                Ok(PairState {
                    spec: PairSpec::new(definition, &config.assets)?,
                    book: OrderBook::new(),
                    candles: CandleSeries::default(),
                    last_price: None,
                })
            })
            .collect::<Result<Vec<_>, PairSpecError>>()?;
        let mut ledger = Ledger::new(config.assets.len(), config.limits.max_accounts);
        let fee_slot = ledger
            .slot_or_insert(&config.fee_account, true)
            .expect("the first account always has a slot");
        let asset_count = config.assets.len();
        Ok(Engine {
            ledger,
            assets: config.assets,
            pairs,
            order_locations: FxHashMap::default(),
            open_order_counts: Vec::new(),
            client_order_ids: FxHashMap::default(),
            positions: Vec::new(),
            fee_account: config.fee_account,
            fee_slot,
            limits: config.limits,
            nonces: NonceRegistry::new(config.limits.max_live_nonces),
            custody: Custody::new(config.custody, asset_count, config.limits.max_pending_transfers),
            next_order_sequence: 1,
            next_trade_id: 1,
            last_time_ms: 0,
            plan: Plan::default(),
            touched_balances: Vec::new(),
        })
    }

    /// Applies a command at `now_ms`, appending its events, or refuses it and changes nothing.
    ///
    /// Time never runs backwards inside the engine: a `now_ms` older than the last command's is
    /// taken as the last command's.
    pub fn execute(&mut self, command: Command, now_ms: u64, events: &mut Vec<Event>) -> Result<(), Rejection> {
        self.execute_signed(command, None, now_ms, events)
    }

    /// Like [`Engine::execute`], for a command the client signed with a nonce: the claim is
    /// checked before anything else and recorded only if the command is applied, so a refused
    /// command leaves its nonce free.
    pub fn execute_signed(
        &mut self,
        command: Command,
        claim: Option<NonceClaim>,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        let now_ms = now_ms.max(self.last_time_ms);
        let claimant = match (&claim, command.account()) {
            (None, _) => None,
            (Some(claim), Some(account)) => {
                self.nonces.check(&account, claim, now_ms).map_err(Rejection::Nonce)?;
                Some(account)
            }
            (Some(_), None) => return Err(Rejection::InvalidOrder("only an account's own request carries a nonce")),
        };
        let ledger = &mut self.ledger;
        let custody = &mut self.custody;
        let result = match command {
            Command::PlaceOrder(order) => self.place_order(order, now_ms, events),
            Command::CancelOrder { account, order_id } => self.cancel_order(account, order_id, now_ms, events),
            Command::Deposit(request) => custody.deposit(ledger, request, now_ms, events),
            Command::Withdraw(request) => custody.withdraw(ledger, request, now_ms, events),
            Command::SubmitChainDeposit(submission) => custody.submit_deposit(ledger, submission, now_ms, events),
            Command::CreditChainDeposit(deposit) => custody.credit_deposit(ledger, deposit, now_ms, events),
            Command::FailChainDeposit { tx_hash } => custody.fail_deposit(tx_hash, now_ms, events),
            Command::RecordDepositScan {
                block_number,
                block_hash,
            } => custody.record_scan(block_number, block_hash),
            Command::RequestWithdrawal(withdrawal) => custody.request_withdrawal(ledger, withdrawal, now_ms, events),
            Command::MarkWithdrawalsSent { tx_hash, withdrawals } => {
                custody.mark_withdrawals_sent(tx_hash, &withdrawals, now_ms, events)
            }
            Command::ConfirmWithdrawals {
                tx_hash,
                block_number,
                withdrawals,
            } => custody.confirm_withdrawals(tx_hash, block_number, &withdrawals, now_ms, events),
            Command::FailWithdrawal(key) => custody.fail_withdrawal(ledger, key, now_ms, events),
        };
        if result.is_ok() {
            self.last_time_ms = now_ms;
            if let (Some(claim), Some(claimant)) = (claim, claimant) {
                self.nonces.record(claimant, claim, now_ms);
            }
        }
        result
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

    /// How many accounts the chain holds.
    pub fn account_count(&self) -> usize {
        self.ledger.account_count()
    }

    /// The best levels of one side of a pair's book and the book's sequence number.
    pub fn book_levels(&self, pair: PairIndex, direction: Direction, depth: usize) -> Option<(Vec<LevelView>, u64)> {
        let state = self.pairs.get(usize::from(pair.0))?;
        Some((state.book.levels(direction, depth), state.book.sequence()))
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

    /// An open order by id.
    pub fn open_order(&self, order_id: &OrderId) -> Option<&OrderRecord> {
        let (pair, slot) = self.order_locations.get(order_id)?;
        Some(self.pairs[usize::from(pair.0)].book.get(*slot))
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

    /// A BLAKE3 hash of the whole state: balances, books with their time priority, positions,
    /// candles, counters, custody. Two engines with equal hashes hold the same state.
    pub fn state_hash(&self) -> [u8; 32] {
        let mut hasher = StateHasher::new();
        hasher.update(self.next_order_sequence.to_be_bytes());
        hasher.update(self.next_trade_id.to_be_bytes());
        for (address, balances) in self.ledger.accounts_sorted() {
            hasher.update(address.as_bytes());
            for balance in balances {
                hasher.update(balance.available.units().to_be_bytes());
                hasher.update(balance.locked.units().to_be_bytes());
            }
        }
        for index in 0..self.assets.len() {
            let asset = AssetIndex(u16::try_from(index).expect("asset count fits u16"));
            hasher.update(self.ledger.net_deposits(asset).units().to_be_bytes());
        }
        for state in &self.pairs {
            hasher.update(state.last_price.map_or(0, Price::ticks).to_be_bytes());
            for record in state.book.orders_in_priority() {
                hash_order(&mut hasher, record);
            }
            for candle in state.candles.all() {
                for value in [
                    candle.open_time_ms,
                    candle.open.ticks(),
                    candle.high.ticks(),
                    candle.low.ticks(),
                    candle.close.ticks(),
                    candle.trades,
                ] {
                    hasher.update(value.to_be_bytes());
                }
                hasher.update(candle.volume.units().to_be_bytes());
                hasher.update(candle.quote_volume.units().to_be_bytes());
            }
        }
        let mut positions: Vec<(Address, &Vec<Position>)> = self
            .positions
            .iter()
            .enumerate()
            .filter(|(_, positions)| !positions.is_empty())
            .map(|(index, positions)| (self.ledger.address(AccountSlot::from_index(index)), positions))
            .collect();
        positions.sort_unstable_by_key(|(address, _)| *address);
        for (expiry_ms, account, nonce) in self.nonces.iter_in_order() {
            hasher.update(expiry_ms.to_be_bytes());
            hasher.update(account.as_bytes());
            hasher.update(nonce.as_bytes());
        }
        self.custody.hash_into(&mut hasher);
        for (address, positions) in positions {
            hasher.update(address.as_bytes());
            for position in positions {
                hasher.update(position.net_base.to_be_bytes());
                hasher.update(position.open_cost_quote.to_be_bytes());
                hasher.update(position.realized_pnl_quote.to_be_bytes());
            }
        }
        hasher.finalize()
    }

    /// Checks every invariant of the whole state; slow, for tests and audits:
    /// no book is crossed and each is well formed; every open order's lock is exactly what its
    /// remainder needs; every account's locked balance is the sum of its open orders' locks;
    /// per asset, all totals (fee account included) sum to deposits minus withdrawals; the
    /// indexes (locations, open order counts, client order ids) agree with the books.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut expected_locks: FxHashMap<(Address, AssetIndex), u128> = FxHashMap::default();
        let mut expected_counts: FxHashMap<Address, u32> = FxHashMap::default();
        let mut resting = 0usize;
        for (index, state) in self.pairs.iter().enumerate() {
            state.book.check_structure()?;
            for record in state.book.orders_in_priority() {
                resting += 1;
                let required = required_lock(&state.spec, record);
                if record.locked != required {
                    return Err(format!(
                        "order {} locks {:?}, needs {:?}",
                        record.terms.order_id, record.locked, required
                    ));
                }
                if record.status != OrderStatus::Open || record.remaining().is_zero() {
                    return Err(format!("order {} rests but is not open", record.terms.order_id));
                }
                let asset = paid_asset(&state.spec, record.terms.direction);
                *expected_locks.entry((record.terms.account, asset)).or_default() += record.locked.units();
                *expected_counts.entry(record.terms.account).or_default() += 1;
                match self.order_locations.get(&record.terms.order_id) {
                    Some((pair, _)) if usize::from(pair.0) == index => {}
                    _ => return Err(format!("order {} missing from the index", record.terms.order_id)),
                }
            }
        }
        if resting != self.order_locations.len() {
            return Err("the order index holds orders that no book does".to_string());
        }
        for (address, balances) in self.ledger.accounts_sorted() {
            for (index, balance) in balances.iter().enumerate() {
                let asset = AssetIndex(u16::try_from(index).expect("asset count fits u16"));
                let expected = expected_locks.get(&(*address, asset)).copied().unwrap_or(0);
                if balance.locked.units() != expected {
                    return Err(format!(
                        "{address} locks {} of asset {index}, its orders {expected}",
                        balance.locked.units()
                    ));
                }
            }
        }
        let counts: FxHashMap<Address, u32> = self
            .open_order_counts
            .iter()
            .enumerate()
            .filter(|(_, count)| **count > 0)
            .map(|(index, count)| (self.ledger.address(AccountSlot::from_index(index)), *count))
            .collect();
        if counts != expected_counts {
            return Err("open order counts disagree with the books".to_string());
        }
        let client_ids: usize = self.client_order_ids.values().map(|ids| ids.len()).sum();
        let with_client_ids = self
            .order_locations
            .keys()
            .filter(|id| {
                self.open_order(id)
                    .is_some_and(|record| record.terms.client_order_id.is_some())
            })
            .count();
        if client_ids != with_client_ids {
            return Err("client order ids disagree with the books".to_string());
        }
        self.custody.check_invariants()?;
        self.ledger.check_conservation()
    }

    fn place_order(&mut self, order: NewOrder, now_ms: u64, events: &mut Vec<Event>) -> Result<(), Rejection> {
        let pair_position = usize::from(order.pair.0);
        let spec = self
            .pairs
            .get(pair_position)
            .ok_or(Rejection::UnknownPair)?
            .spec
            .clone();
        self.check_terms(&spec, &order)?;
        let taker_slot = self.ledger.slot(&order.account);
        self.plan_matching(&order, taker_slot);
        let remaining = order
            .quantity
            .checked_sub(self.plan.filled)
            .expect("a plan never overfills");
        self.check_execution(&order, remaining)?;
        let required = match (order.direction, order.price) {
            (Direction::Buy, Some(price)) => spec.cost(price, order.quantity).ok_or(Rejection::AmountTooLarge)?,
            (Direction::Buy, None) => self.plan.cost,
            (Direction::Sell, _) => spec.base_amount(order.quantity),
        };
        let paid = paid_asset(&spec, order.direction);
        let taker_slot = taker_slot.ok_or(Rejection::InsufficientBalance)?;
        self.ledger
            .lock(taker_slot, paid, required)
            .map_err(Rejection::from_ledger)?;
        // Every check has passed: from here on the command applies whole.
        self.touched_balances.clear();
        self.touched_balances.push((taker_slot, paid));
        let sequence = self.next_order_sequence;
        self.next_order_sequence += 1;
        let mut taker = OrderRecord {
            terms: order,
            filled: Quantity::ZERO,
            cost: Amount::ZERO,
            fee: Amount::ZERO,
            status: OrderStatus::Open,
            cancel_reason: None,
            locked: required,
            created_at_ms: now_ms,
            updated_at_ms: now_ms,
            sequence,
        };
        let plan = std::mem::take(&mut self.plan);
        for key in &plan.self_trade_cancels {
            let record = self.pairs[pair_position].book.remove(*key);
            let cancelled =
                self.close_resting_order(&spec, record, taker_slot, CancelReason::SelfTradePrevention, now_ms);
            events.push(Event::OrderUpdated(cancelled));
        }
        for fill in &plan.fills {
            self.apply_fill(&spec, &mut taker, taker_slot, *fill, now_ms, events);
        }
        self.plan = plan;
        self.finish_taker(&spec, taker, taker_slot, events);
        self.push_balance_events(events);
        assert!(
            !self.pairs[pair_position].book.is_crossed(),
            "invariant: the book is never crossed"
        );
        Ok(())
    }

    /// The checks that need no walk of the book.
    fn check_terms(&self, spec: &PairSpec, order: &NewOrder) -> Result<(), Rejection> {
        match (order.order_type, order.price) {
            (OrderType::Limit, None) => return Err(Rejection::InvalidOrder("a limit order needs a price")),
            (OrderType::Market, Some(_)) => return Err(Rejection::InvalidOrder("a market order takes no price")),
            _ => {}
        }
        if order.quantity.is_zero() {
            return Err(Rejection::InvalidOrder("the amount must be positive"));
        }
        if order.quantity < spec.min_quantity() {
            return Err(Rejection::BelowMinAmount);
        }
        if let Some(price) = order.price {
            let notional = spec.cost(price, order.quantity).ok_or(Rejection::AmountTooLarge)?;
            if notional < spec.min_notional() {
                return Err(Rejection::BelowMinNotional);
            }
        }
        if self.order_locations.contains_key(&order.order_id) {
            return Err(Rejection::DuplicateOrderId);
        }
        if let Some(client_order_id) = &order.client_order_id {
            let taken = self
                .client_order_ids
                .get(&order.account)
                .is_some_and(|ids| ids.contains_key(client_order_id));
            if taken {
                return Err(Rejection::DuplicateClientOrderId);
            }
        }
        if order.post_only {
            let best_opposite = self.pairs[usize::from(order.pair.0)]
                .book
                .best_price(order.direction.opposite());
            let would_take = match (order.price, best_opposite) {
                (_, None) => false,
                (None, Some(_)) => true,
                (Some(limit), Some(best)) => crosses(order.direction, limit, best),
            };
            if would_take {
                return Err(Rejection::PostOnlyWouldTake);
            }
        }
        Ok(())
    }

    /// The checks that need the planned walk: fill-or-kill, liquidity, limits of resting orders.
    fn check_execution(&self, order: &NewOrder, remaining: Quantity) -> Result<(), Rejection> {
        if order.time_in_force == TimeInForce::FillOrKill && !remaining.is_zero() {
            return Err(Rejection::FillOrKillNotFillable);
        }
        if order.order_type == OrderType::Market && self.plan.filled.is_zero() {
            return Err(Rejection::NoLiquidity);
        }
        let rests = order.order_type == OrderType::Limit
            && order.time_in_force == TimeInForce::GoodTillCancelled
            && !remaining.is_zero();
        if rests {
            let self_cancels = u32::try_from(self.plan.self_trade_cancels.len()).unwrap_or(u32::MAX);
            let open_after_cancels = self.open_order_count(&order.account).saturating_sub(self_cancels);
            if open_after_cancels >= self.limits.max_open_orders_per_account {
                return Err(Rejection::TooManyOpenOrders);
            }
            if self.order_locations.len() >= self.limits.max_resting_orders {
                return Err(Rejection::BookFull);
            }
        }
        Ok(())
    }

    /// Walks the opposite side in priority order and decides, without changing anything, which
    /// resting orders the new order fills and which of its own account's orders it cancels.
    fn plan_matching(&mut self, order: &NewOrder, taker_slot: Option<AccountSlot>) {
        let mut plan = std::mem::take(&mut self.plan);
        plan.fills.clear();
        plan.self_trade_cancels.clear();
        plan.filled = Quantity::ZERO;
        plan.cost = Amount::ZERO;
        let mut overflow = false;
        let state = &self.pairs[usize::from(order.pair.0)];
        let spec = &state.spec;
        let mut remaining = order.quantity;
        state
            .book
            .visit_in_priority(order.direction.opposite(), |key, record, maker_slot| {
                let price = record.terms.price.expect("invariant: resting orders have prices");
                if let Some(limit) = order.price {
                    if !crosses(order.direction, limit, price) {
                        return false;
                    }
                }
                if Some(maker_slot) == taker_slot {
                    plan.self_trade_cancels.push(key);
                    return true;
                }
                let quantity = remaining.min(record.remaining());
                plan.fills.push(PlannedFill {
                    key,
                    maker_slot,
                    quantity,
                });
                let cost = spec
                    .cost(price, quantity)
                    .expect("invariant: a resting order's cost fits");
                match plan.cost.checked_add(cost) {
                    Some(total) => plan.cost = total,
                    None => overflow = true,
                }
                remaining = remaining.checked_sub(quantity).expect("fill within remaining");
                plan.filled = plan.filled.checked_add(quantity).expect("fills within the quantity");
                !remaining.is_zero() && !overflow
            });
        if overflow {
            // The walk's total cost does not fit; treat it as unfillable rather than wrap.
            plan.fills.clear();
            plan.filled = Quantity::ZERO;
            plan.cost = Amount::ZERO;
        }
        self.plan = plan;
    }

    /// Executes one planned fill: moves funds and fees, updates both orders, candles, positions.
    fn apply_fill(
        &mut self,
        spec: &PairSpec,
        taker: &mut OrderRecord,
        taker_slot: AccountSlot,
        fill: PlannedFill,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        let pair = taker.terms.pair;
        let pair_position = usize::from(pair.0);
        let maker = self.pairs[pair_position].book.get(fill.key);
        let price = maker.terms.price.expect("invariant: resting orders have prices");
        let maker_account = maker.terms.account;
        let maker_order_id = maker.terms.order_id;
        let cost = spec
            .cost(price, fill.quantity)
            .expect("invariant: a resting order's cost fits");
        let base_amount = spec.base_amount(fill.quantity);
        let (buyer, seller, buyer_fee_rate, seller_fee_rate) = match taker.terms.direction {
            Direction::Buy => (taker_slot, fill.maker_slot, spec.taker_fee(), spec.maker_fee()),
            Direction::Sell => (fill.maker_slot, taker_slot, spec.maker_fee(), spec.taker_fee()),
        };
        let buyer_fee = buyer_fee_rate.fee_rounded_down(base_amount);
        let seller_fee = seller_fee_rate.fee_rounded_down(cost);
        let base_after_fee = base_amount.checked_sub(buyer_fee).expect("fee at most 100 %");
        let quote_after_fee = cost.checked_sub(seller_fee).expect("fee at most 100 %");
        let fee_slot = self.fee_slot;
        self.ledger.transfer_locked(seller, buyer, spec.base(), base_after_fee);
        self.ledger.transfer_locked(seller, fee_slot, spec.base(), buyer_fee);
        self.ledger
            .transfer_locked(buyer, seller, spec.quote(), quote_after_fee);
        self.ledger.transfer_locked(buyer, fee_slot, spec.quote(), seller_fee);
        for account in [buyer, seller, fee_slot] {
            self.touch_balance(account, spec.base());
            self.touch_balance(account, spec.quote());
        }
        let (maker_fee, taker_fee, maker_spent, taker_spent) = match taker.terms.direction {
            Direction::Buy => (seller_fee, buyer_fee, base_amount, cost),
            Direction::Sell => (buyer_fee, seller_fee, cost, base_amount),
        };
        taker.filled = taker.filled.checked_add(fill.quantity).expect("fill within quantity");
        taker.cost = taker.cost.checked_add(cost).expect("taker cost fits");
        taker.fee = taker.fee.checked_add(taker_fee).expect("fee fits");
        taker.locked = taker
            .locked
            .checked_sub(taker_spent)
            .expect("invariant: the taker's lock covers its fills");
        taker.updated_at_ms = now_ms;
        let book = &mut self.pairs[pair_position].book;
        book.fill(fill.key, fill.quantity, |maker| {
            maker.cost = maker.cost.checked_add(cost).expect("maker cost fits");
            maker.fee = maker.fee.checked_add(maker_fee).expect("fee fits");
            maker.locked = maker
                .locked
                .checked_sub(maker_spent)
                .expect("invariant: the maker's lock covers its fills");
            maker.updated_at_ms = now_ms;
        });
        let trade = Trade {
            trade_id: self.next_trade_id,
            pair,
            price,
            quantity: fill.quantity,
            base_amount,
            cost,
            taker_direction: taker.terms.direction,
            maker_order_id,
            taker_order_id: taker.terms.order_id,
            maker_account,
            taker_account: taker.terms.account,
            maker_fee,
            taker_fee,
            timestamp_ms: now_ms,
        };
        self.next_trade_id += 1;
        self.record_market_data(&trade, buyer, seller);
        events.push(Event::TradeExecuted(trade));
        let maker = self.pairs[pair_position].book.get(fill.key);
        if maker.remaining().is_zero() {
            let record = self.pairs[pair_position].book.remove(fill.key);
            let filled = self.close_resting_order(spec, record, fill.maker_slot, CancelReason::Requested, now_ms);
            events.push(Event::OrderUpdated(filled));
        } else {
            events.push(Event::OrderUpdated(maker.clone()));
        }
    }

    fn record_market_data(&mut self, trade: &Trade, buyer: AccountSlot, seller: AccountSlot) {
        let state = &mut self.pairs[usize::from(trade.pair.0)];
        state.last_price = Some(trade.price);
        state
            .candles
            .record_trade(trade.timestamp_ms, trade.price, trade.base_amount, trade.cost);
        let pair_count = self.pairs.len();
        for (slot, is_buy) in [(buyer, true), (seller, false)] {
            let index = slot.index();
            if self.positions.len() <= index {
                self.positions.resize_with(index + 1, Vec::new);
            }
            let positions = &mut self.positions[index];
            if positions.is_empty() {
                positions.resize(pair_count, Position::default());
            }
            positions[usize::from(trade.pair.0)].record_fill(is_buy, trade.base_amount.units(), trade.cost.units());
        }
    }

    /// Rests the taker's remainder or closes it, and releases what its lock no longer needs.
    fn finish_taker(
        &mut self,
        spec: &PairSpec,
        mut taker: OrderRecord,
        taker_slot: AccountSlot,
        events: &mut Vec<Event>,
    ) {
        let remaining = taker.remaining();
        let rests = taker.terms.order_type == OrderType::Limit
            && taker.terms.time_in_force == TimeInForce::GoodTillCancelled
            && !remaining.is_zero();
        let still_needed = if rests {
            required_lock(spec, &taker)
        } else {
            Amount::ZERO
        };
        let release = taker
            .locked
            .checked_sub(still_needed)
            .expect("invariant: the lock covers the remainder");
        self.ledger
            .unlock(taker_slot, paid_asset(spec, taker.terms.direction), release);
        taker.locked = still_needed;
        if rests {
            self.register_open_order(&taker, taker_slot);
            let pair = taker.terms.pair;
            let order_id = taker.terms.order_id;
            events.push(Event::OrderUpdated(taker.clone()));
            let key = self.pairs[usize::from(pair.0)].book.insert(taker, taker_slot);
            self.order_locations.insert(order_id, (pair, key));
        } else {
            if remaining.is_zero() {
                taker.status = OrderStatus::Filled;
            } else {
                taker.status = OrderStatus::Cancelled;
                taker.cancel_reason = Some(CancelReason::UnfilledRemainder);
            }
            events.push(Event::OrderUpdated(taker));
        }
    }

    fn open_orders_of(&self, slot: AccountSlot) -> u32 {
        self.open_order_counts.get(slot.index()).copied().unwrap_or(0)
    }

    fn register_open_order(&mut self, record: &OrderRecord, slot: AccountSlot) {
        let index = slot.index();
        if self.open_order_counts.len() <= index {
            self.open_order_counts.resize(index + 1, 0);
        }
        self.open_order_counts[index] += 1;
        if let Some(client_order_id) = &record.terms.client_order_id {
            self.client_order_ids
                .entry(record.terms.account)
                .or_default()
                .insert(client_order_id.clone(), record.terms.order_id);
        }
    }

    /// Forgets an order that left its book: filled when nothing remains, else cancelled for
    /// `reason`; releases its lock and updates the indexes.
    fn close_resting_order(
        &mut self,
        spec: &PairSpec,
        mut record: OrderRecord,
        slot: AccountSlot,
        reason: CancelReason,
        now_ms: u64,
    ) -> OrderRecord {
        let paid = paid_asset(spec, record.terms.direction);
        self.ledger.unlock(slot, paid, record.locked);
        self.touch_balance(slot, paid);
        record.locked = Amount::ZERO;
        record.updated_at_ms = now_ms;
        if record.remaining().is_zero() {
            record.status = OrderStatus::Filled;
        } else {
            record.status = OrderStatus::Cancelled;
            record.cancel_reason = Some(reason);
        }
        self.order_locations.remove(&record.terms.order_id);
        self.open_order_counts[slot.index()] -= 1;
        if let Some(client_order_id) = &record.terms.client_order_id {
            let account = record.terms.account;
            if let Some(ids) = self.client_order_ids.get_mut(&account) {
                ids.remove(client_order_id);
                if ids.is_empty() {
                    self.client_order_ids.remove(&account);
                }
            }
        }
        record
    }

    fn cancel_order(
        &mut self,
        account: Address,
        order_id: OrderId,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        let (pair, key) = *self.order_locations.get(&order_id).ok_or(Rejection::OrderNotFound)?;
        let pair_position = usize::from(pair.0);
        let book = &self.pairs[pair_position].book;
        if book.get(key).terms.account != account {
            return Err(Rejection::NotOwner);
        }
        let slot = book.account_slot(key);
        let spec = self.pairs[pair_position].spec.clone();
        self.touched_balances.clear();
        let record = self.pairs[pair_position].book.remove(key);
        let cancelled = self.close_resting_order(&spec, record, slot, CancelReason::Requested, now_ms);
        events.push(Event::OrderUpdated(cancelled));
        self.push_balance_events(events);
        Ok(())
    }

    /// Notes a balance the command changed, once. The list is short (a few entries per fill),
    /// so a scan is cheaper than sorting it at the end.
    fn touch_balance(&mut self, slot: AccountSlot, asset: AssetIndex) {
        if !self.touched_balances.contains(&(slot, asset)) {
            self.touched_balances.push((slot, asset));
        }
    }

    fn push_balance_events(&mut self, events: &mut Vec<Event>) {
        for (slot, asset) in self.touched_balances.drain(..) {
            events.push(Event::BalanceUpdated {
                account: self.ledger.address(slot),
                asset,
                balance: self.ledger.balance_at(slot, asset),
            });
        }
    }
}

/// Whether an order of `direction` with limit `limit` trades against a resting price `resting`.
fn crosses(direction: Direction, limit: Price, resting: Price) -> bool {
    match direction {
        Direction::Buy => limit >= resting,
        Direction::Sell => limit <= resting,
    }
}

/// The asset an order pays: quote for a buy, base for a sell.
fn paid_asset(spec: &PairSpec, direction: Direction) -> AssetIndex {
    match direction {
        Direction::Buy => spec.quote(),
        Direction::Sell => spec.base(),
    }
}

/// What a resting order must lock for its remainder: remainder × price of quote for a buy, the
/// remainder of base for a sell.
fn required_lock(spec: &PairSpec, record: &OrderRecord) -> Amount {
    let remaining = record.remaining();
    match (record.terms.direction, record.terms.price) {
        (Direction::Buy, Some(price)) => spec.cost(price, remaining).expect("invariant: checked at placement"),
        (Direction::Buy, None) => Amount::ZERO,
        (Direction::Sell, _) => spec.base_amount(remaining),
    }
}

fn hash_order(hasher: &mut StateHasher, record: &OrderRecord) {
    hasher.update(record.terms.order_id.as_bytes());
    hasher.update(record.terms.account.as_bytes());
    hasher.update_with_length(record.terms.client_order_id.as_deref().unwrap_or("").as_bytes());
    hasher.update([
        record.terms.direction as u8,
        record.terms.time_in_force as u8,
        u8::from(record.terms.post_only),
    ]);
    hasher.update(record.terms.price.map_or(0, Price::ticks).to_be_bytes());
    for value in [
        record.terms.quantity.lots(),
        record.filled.lots(),
        record.created_at_ms,
        record.updated_at_ms,
        record.sequence,
    ] {
        hasher.update(value.to_be_bytes());
    }
    for value in [record.cost, record.fee, record.locked] {
        hasher.update(value.units().to_be_bytes());
    }
}
