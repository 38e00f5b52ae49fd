//! The engine of one chain: every book, every balance, and the rules that turn a command into
//! events.
//!
//! [`Engine::execute`] takes a [`Command`] and the time, and either applies it whole and appends
//! the resulting [`Event`]s, or returns a [`Rejection`] and changes nothing. All checks happen
//! before the first change, so a rejection never leaves half a command behind. The engine does no
//! IO, reads no clock and draws no random numbers: the same commands at the same times give the
//! same events and the same [`Engine::state_hash`], which is what makes replay possible.

mod audit;
mod conditions;
mod configure;
mod controls;
mod forced_withdrawals;
mod matching;
mod queries;
mod state;
mod subaccount_transfers;
mod twaps;

pub use self::conditions::MAX_TRIGGERS_FIRED_PER_COMMAND;
pub use self::state::{EngineState, PairSnapshot, RestoreError};

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use crate::agents::{AgentGrant, AgentRegistry};
use crate::book::{LevelView, OrderBook, SlotKey};
use crate::configuration::{check_engine_change, ChainConfiguration, ChainDescription, ConfigurationRefused};
use crate::custody::{Custody, WithdrawalMark};
use crate::events::{Event, Rejection};
use crate::ledger::{AccountSlot, Balance, Ledger};
use crate::liabilities::{LiabilityEntry, LiabilityRootRecord, RootStanding, VaultFreeze};
use crate::market_data::{Candle, CandleInterval, CandleSeries, Position};
use crate::money::{Address, Amount, AssetIndex, OrderId, PairIndex, Price, Quantity};
use crate::nonces::{NonceClaim, NonceRegistry, MAX_SIGNED_REQUEST_LIFETIME_MS, MAX_SIGNED_WITHDRAWAL_LIFETIME_MS};
use crate::order::{Amend, Direction, NewOrder, OrderRecord};
use crate::pair::{AssetSpec, PairSpec, PairSpecError};
use crate::subaccounts::{SubaccountRegistry, SubaccountTransferRequest};
use crate::switches::CancelAllAfterSwitches;
use crate::transfer::{
    ChainDeposit, ChainDepositSubmission, ChainWithdrawalRequest, TransferKind, TransferRequest, VaultWithdrawal,
    WithdrawalKey,
};
use crate::triggers::TriggerBook;
use crate::twaps::{NewTwap, TwapRegistry};

pub use crate::configuration::{EngineConfig, EngineLimits};

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
        /// The pair the account named (and signed): the cancel is refused unless the order is on
        /// it. `None` only in commands journaled before the pair was recorded.
        pair: Option<PairIndex>,
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
    /// The mined transaction meant to pay these withdrawals paid none of them (the vault skipped
    /// them, or it reverted): they are pending again, to be sent alone (vault custody).
    MarkWithdrawalsUnpaid {
        /// The transaction that did not pay them.
        tx_hash: [u8; 32],
        /// The withdrawals it did not pay.
        withdrawals: Vec<WithdrawalKey>,
    },
    /// A withdrawal can never be paid; its amount is credited back (vault custody).
    FailWithdrawal(WithdrawalKey),
    /// An account asked the vault for a withdrawal on chain (`WithdrawalRequested`, with enough
    /// confirmations): its orders holding the token are cancelled as needed and what it then
    /// holds of the token, up to the amount asked, is debited, to be served by the vault
    /// (vault custody).
    RecordWithdrawalRequest(ChainWithdrawalRequest),
    /// A liability root the vault committed, with what it was built from (vault custody).
    RecordLiabilityRoot(LiabilityRootRecord),
    /// A recorded root was vetoed, or passed its challenge period without a veto, as a
    /// confirmed block shows (vault custody).
    SettleLiabilityRoot {
        /// The root's epoch.
        epoch: u64,
        /// Vetoed or final.
        standing: RootStanding,
    },
    /// The vault froze, as a confirmed block shows (vault custody).
    RecordVaultFreeze(VaultFreeze),
    /// The expiry of an open order has come: cancel it (entered by the venue's timer, so a
    /// replay cancels it exactly as the first run did). Refused unless the order is open and its
    /// `expiresAt` is due.
    ExpireOrder {
        /// Which order.
        order_id: OrderId,
    },
    /// Cancel every open order of `account`, on one pair or on all.
    CancelAll {
        /// Whose orders.
        account: Address,
        /// Only this pair's; `None`: every pair's.
        pair: Option<PairIndex>,
    },
    /// Cancel an open order and place its replacement in one step; if the replacement is
    /// refused, the old order stays as it was.
    AmendOrder(Amend),
    /// Arm the account's dead man's switch, or disarm it.
    SetCancelAllAfter {
        /// Whose switch.
        account: Address,
        /// Off, or when every open order of the account is cancelled.
        setting: SwitchSetting,
    },
    /// The time of the account's switch armed for `trigger_at_ms` has come: cancel every open
    /// order of the account and disarm it (entered by the venue's timer, so a replay fires it
    /// exactly as the first run did). Refused unless that switch is armed and due.
    FireCancelAllAfter {
        /// Whose switch.
        account: Address,
        /// The trigger it was armed for.
        trigger_at_ms: u64,
    },
    /// Approve `agent` to trade for `account` (or renew its approval).
    ApproveAgent {
        /// Who approves.
        account: Address,
        /// The agent's address, its name and its end.
        grant: AgentGrant,
    },
    /// End an agent's approval at once.
    RevokeAgent {
        /// Who approved it.
        account: Address,
        /// The agent.
        agent: Address,
    },
    /// A trading command (place, cancel, cancel all, amend, the switch) that `agent` sends for
    /// the command's account; refused unless the account approved the agent and the approval
    /// has not ended.
    ByAgent {
        /// The agent's address (the key that signed).
        agent: Address,
        /// What it asks for the account.
        command: Box<Command>,
    },
    /// Move available funds between two subaccounts of one owner (contract version 5): the
    /// owner's own request, never an agent's.
    TransferBetweenSubaccounts(SubaccountTransferRequest),
    /// Start a TWAP order (contract version 5): slices placed over time by
    /// [`Command::RunTwapSlice`].
    StartTwap(NewTwap),
    /// Cancel a running TWAP of `account`.
    CancelTwap {
        /// Whose.
        account: Address,
        /// Which.
        twap_id: u64,
    },
    /// Slice `slice` of a running TWAP is due: place it (entered by the venue's timer, so a
    /// replay runs it exactly as the first run did). Refused unless it is the slice due.
    RunTwapSlice {
        /// Which TWAP.
        twap_id: u64,
        /// Which slice, from 0.
        slice: u32,
    },
    /// Halt a pair, or resume it (contract version 5, an operator's configuration command): a
    /// halted pair takes cancels only, no order, amend or TWAP slice.
    SetPairHalted {
        /// Which pair.
        pair: PairIndex,
        /// Halted (`true`) or trading (`false`).
        halted: bool,
    },
    /// The chain's configuration: the journal's first command, and again at every change. As
    /// the first command it replaces whatever the engine was built with; later, it may only
    /// add assets and pairs and change fees, minimums and limits
    /// ([`ChainConfiguration::check_change_to`]).
    Configure(Box<ChainConfiguration>),
}

/// What `SetCancelAllAfter` does to the account's switch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SwitchSetting {
    /// Disarm it.
    Off,
    /// Arm it for the command's time plus this many ms: what the account signs (`timeoutMs`),
    /// so the trigger follows from the journal alone.
    AfterMs(u64),
    /// Arm it for this time: how journals recorded the switch before the timeout was journaled
    /// (read, never written).
    AtMs(u64),
}

impl Command {
    /// The account that asked for the command, if an account did (the chain's facts are not
    /// asked for by anyone).
    pub fn account(&self) -> Option<Address> {
        match self {
            Command::PlaceOrder(order) => Some(order.account),
            Command::CancelOrder { account, .. }
            | Command::CancelAll { account, .. }
            | Command::AmendOrder(Amend { account, .. })
            | Command::SetCancelAllAfter { account, .. }
            | Command::ApproveAgent { account, .. }
            | Command::RevokeAgent { account, .. }
            | Command::CancelTwap { account, .. } => Some(*account),
            Command::StartTwap(terms) => Some(terms.account),
            Command::ByAgent { command, .. } => command.account(),
            Command::Deposit(request) | Command::Withdraw(request) => Some(request.account),
            Command::TransferBetweenSubaccounts(request) => Some(request.owner),
            Command::RequestWithdrawal(withdrawal) => Some(withdrawal.request.account),
            Command::SubmitChainDeposit(_)
            | Command::CreditChainDeposit(_)
            | Command::FailChainDeposit { .. }
            | Command::RecordDepositScan { .. }
            | Command::MarkWithdrawalsSent { .. }
            | Command::MarkWithdrawalsUnpaid { .. }
            | Command::ConfirmWithdrawals { .. }
            | Command::FailWithdrawal(_)
            | Command::RecordWithdrawalRequest(_)
            | Command::RecordLiabilityRoot(_)
            | Command::SettleLiabilityRoot { .. }
            | Command::RecordVaultFreeze(_)
            | Command::FireCancelAllAfter { .. }
            | Command::ExpireOrder { .. }
            | Command::RunTwapSlice { .. }
            | Command::SetPairHalted { .. }
            | Command::Configure(_) => None,
        }
    }
}

impl Command {
    /// Who signed the command, when it is not its account: the agent of a `ByAgent`.
    fn signer(&self) -> Option<Address> {
        match self {
            Command::ByAgent { agent, .. } => Some(*agent),
            _ => None,
        }
    }

    /// Whether the command can be applied for an account that holds nothing (a cancel of all its
    /// orders, its switch, its agents): such a command from an address with nothing on the chain
    /// would hold a nonce, a switch or an agent for free.
    fn succeeds_without_funds(&self) -> bool {
        match self {
            Command::CancelAll { .. }
            | Command::SetCancelAllAfter { .. }
            | Command::ApproveAgent { .. }
            | Command::RevokeAgent { .. }
            | Command::CancelTwap { .. }
            | Command::CancelOrder { .. } => true,
            Command::ByAgent { command, .. } => command.succeeds_without_funds(),
            _ => false,
        }
    }

    /// How long a client-signed request of this command may live: a withdrawal waits for a
    /// final liability root, anything else is decided at once.
    fn max_signed_lifetime_ms(&self) -> u64 {
        match self {
            Command::RequestWithdrawal(_) => MAX_SIGNED_WITHDRAWAL_LIFETIME_MS,
            _ => MAX_SIGNED_REQUEST_LIFETIME_MS,
        }
    }

    /// Whether the command adds to what a vault must back (an order, an amendment, a deposit
    /// or withdrawal asked for), so that a frozen vault's chain refuses it. Cancels, the chain's
    /// facts and agent changes stay allowed.
    fn needs_a_live_vault(&self) -> bool {
        match self {
            Command::PlaceOrder(_)
            | Command::AmendOrder(_)
            | Command::SubmitChainDeposit(_)
            | Command::StartTwap(_)
            | Command::RequestWithdrawal(_) => true,
            // Funds moving inside an owner's leaf change nothing the vault backs; the owner may
            // gather them in number 0 to leave through the exit.
            Command::TransferBetweenSubaccounts(_) => false,
            Command::ByAgent { command, .. } => command.needs_a_live_vault(),
            Command::CancelOrder { .. }
            | Command::Deposit(_)
            | Command::Withdraw(_)
            | Command::CreditChainDeposit(_)
            | Command::FailChainDeposit { .. }
            | Command::RecordDepositScan { .. }
            | Command::MarkWithdrawalsSent { .. }
            | Command::MarkWithdrawalsUnpaid { .. }
            | Command::ConfirmWithdrawals { .. }
            | Command::FailWithdrawal(_)
            | Command::RecordWithdrawalRequest(_)
            | Command::RecordLiabilityRoot(_)
            | Command::SettleLiabilityRoot { .. }
            | Command::RecordVaultFreeze(_)
            | Command::CancelAll { .. }
            | Command::SetCancelAllAfter { .. }
            | Command::FireCancelAllAfter { .. }
            | Command::ExpireOrder { .. }
            | Command::ApproveAgent { .. }
            | Command::RevokeAgent { .. }
            | Command::CancelTwap { .. }
            // A slice of a frozen chain runs and places nothing, so that the TWAP still ends.
            | Command::RunTwapSlice { .. }
            | Command::SetPairHalted { .. }
            | Command::Configure(_) => false,
        }
    }
}

/// One account's open orders: those resting in a book and those waiting for their trigger, apart,
/// so that trading, which adds and removes resting orders, never walks the waiting ones.
#[derive(Clone, Debug, Default)]
struct OpenOrderIds {
    resting: Vec<OrderId>,
    waiting: Vec<OrderId>,
}

impl OpenOrderIds {
    fn len(&self) -> usize {
        self.resting.len() + self.waiting.len()
    }

    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn iter(&self) -> impl Iterator<Item = &OrderId> {
        self.resting.iter().chain(&self.waiting)
    }

    fn list(&mut self, waiting: bool) -> &mut Vec<OrderId> {
        if waiting {
            &mut self.waiting
        } else {
            &mut self.resting
        }
    }

    /// Takes an order out of the list it is in; whether it was there.
    fn remove(&mut self, order_id: &OrderId, waiting: bool) -> bool {
        let list = self.list(waiting);
        match list.iter().position(|open_id| open_id == order_id) {
            Some(position) => {
                list.swap_remove(position);
                true
            }
            None => false,
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
    triggers: TriggerBook,
    candles: CandleSeries,
    last_price: Option<Price>,
    /// The operator halted the pair: it takes cancels only.
    halted: bool,
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
    /// Resting orders whose expiry has come, met on the walk: cancelled, never filled (under
    /// [`crate::configuration::RULE_EXPIRED_MAKERS_SKIPPED`]), with their accounts' slots.
    expired_cancels: Vec<(SlotKey, AccountSlot)>,
    filled: Quantity,
    cost: Amount,
}

/// The engine of one chain.
#[derive(Clone)]
pub struct Engine {
    /// The rules the engine was built with, or last configured with.
    config: EngineConfig,
    /// The chain's description as last journaled (`None` before a journal's first
    /// `Configure`, or for a journal that predates them).
    description: Option<ChainDescription>,
    assets: Vec<AssetSpec>,
    pairs: Vec<PairState>,
    ledger: Ledger,
    order_locations: FxHashMap<OrderId, (PairIndex, SlotKey)>,
    /// The pair of each untriggered order (the order itself is in that pair's trigger book).
    waiting_orders: FxHashMap<OrderId, PairIndex>,
    /// The open members of each one-cancels-other group, by its account and name (one or two,
    /// of one pair and direction; see `conditions`): a name is the account's own, so nobody can
    /// take another account's name first.
    oco_groups: FxHashMap<(Address, String), Vec<OrderId>>,
    /// The open orders that expire, by expiry then id: what the venue's timer reads.
    expiries: BTreeSet<(u64, OrderId)>,
    /// The ids of each account's open orders, indexed by ledger slot (at most
    /// `max_open_orders_per_account` each, so a linear search is cheap).
    open_orders_by_slot: Vec<OpenOrderIds>,
    client_order_ids: FxHashMap<Address, FxHashMap<String, OrderId>>,
    /// Positions per account and pair, indexed by ledger slot; empty until the account trades.
    positions: Vec<Vec<Position>>,
    fee_account: Address,
    fee_slot: AccountSlot,
    limits: EngineLimits,
    nonces: NonceRegistry,
    custody: Custody,
    agents: AgentRegistry,
    switches: CancelAllAfterSwitches,
    subaccounts: SubaccountRegistry,
    twaps: TwapRegistry,
    next_order_sequence: u64,
    next_trade_id: u64,
    last_time_ms: u64,
    /// The time of the command being applied (what matching judges expiries by).
    command_time_ms: u64,
    /// How many commands the engine has applied: the journal position of the last one, since
    /// every journaled command is applied once and nothing else is.
    journal_sequence: u64,
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
                    triggers: TriggerBook::default(),
                    candles: CandleSeries::default(),
                    last_price: None,
                    halted: false,
                })
            })
            .collect::<Result<Vec<_>, PairSpecError>>()?;
        let mut ledger = Ledger::new(config.assets.len(), config.limits.max_accounts);
        let fee_slot = ledger
            .slot_or_insert(&config.fee_account, true)
            .expect("the first account always has a slot");
        let asset_count = config.assets.len();
        Ok(Engine {
            config: config.clone(),
            description: None,
            ledger,
            assets: config.assets,
            pairs,
            order_locations: FxHashMap::default(),
            waiting_orders: FxHashMap::default(),
            oco_groups: FxHashMap::default(),
            expiries: BTreeSet::default(),
            open_orders_by_slot: Vec::new(),
            client_order_ids: FxHashMap::default(),
            positions: Vec::new(),
            fee_account: config.fee_account,
            fee_slot,
            limits: config.limits,
            nonces: NonceRegistry::new(config.limits.max_live_nonces, config.limits.max_live_nonces_per_account),
            custody: Custody::new(config.custody, asset_count, config.limits.max_pending_transfers),
            agents: AgentRegistry::default(),
            switches: CancelAllAfterSwitches::default(),
            subaccounts: SubaccountRegistry::default(),
            twaps: TwapRegistry::default(),
            next_order_sequence: 1,
            next_trade_id: 1,
            last_time_ms: 0,
            command_time_ms: 0,
            journal_sequence: 0,
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
        let (claim, max_lifetime_ms) = match claim {
            Some(claim) if claim.venue_signed => {
                // A venue-signed withdrawal's expiry is the vault's (hours ahead): its id, unique
                // for the chain's life, binds it instead. Journals from before the rule carry
                // venue-signed commands that claimed nothing.
                let window_ms = self.config.limits.venue_signed_window_ms;
                if window_ms == 0 || matches!(command, Command::RequestWithdrawal(_)) {
                    (None, 0)
                } else {
                    let (held, max_lifetime_ms) = claim.held_for_venue_window(window_ms);
                    (Some(held), max_lifetime_ms)
                }
            }
            claim => (claim, command.max_signed_lifetime_ms()),
        };
        let claimant = match (&claim, command.account()) {
            (None, _) => None,
            (Some(claim), Some(account)) => {
                // A nonce is held for the request's life: an address with nothing on the chain
                // cannot make the venue hold its nonces with a command that succeeds without
                // funds (an order or a withdrawal from it is refused for its balance anyway,
                // and a ledger deposit creates the account).
                if self.ledger.slot(&account).is_none() && command.succeeds_without_funds() {
                    return Err(Rejection::UnknownAccount);
                }
                let signer = command.signer().unwrap_or(account);
                self.nonces
                    .check(&account, &signer, claim, now_ms, max_lifetime_ms)
                    .map_err(Rejection::Nonce)?;
                Some((account, signer))
            }
            (Some(_), None) => return Err(Rejection::InvalidOrder("only an account's own request carries a nonce")),
        };
        let result = self.dispatch(command, now_ms, events);
        if result.is_ok() {
            self.journal_sequence += 1;
            self.last_time_ms = now_ms;
            if let (Some(claim), Some((account, signer))) = (claim, claimant) {
                self.nonces.record(account, signer, claim, now_ms);
            }
        }
        result
    }

    /// Runs one command (time already made monotonic, nonce already checked).
    fn dispatch(&mut self, command: Command, now_ms: u64, events: &mut Vec<Event>) -> Result<(), Rejection> {
        if self.custody.is_frozen() && command.needs_a_live_vault() {
            return Err(Rejection::VaultFrozen);
        }
        let sequence = self.journal_sequence + 1;
        self.command_time_ms = now_ms;
        let ledger = &mut self.ledger;
        let custody = &mut self.custody;
        match command {
            Command::PlaceOrder(order) => self.place_order(order, now_ms, events),
            Command::CancelOrder {
                account,
                order_id,
                pair,
            } => {
                if let Some(pair) = pair {
                    if self.open_order_pair(&order_id).is_some_and(|at| at != pair) {
                        return Err(Rejection::OrderNotFound);
                    }
                }
                self.cancel_order(account, order_id, now_ms, events)
            }
            Command::Deposit(request) => {
                custody.ledger_transfer(ledger, TransferKind::Deposit, request, now_ms, events)
            }
            Command::Withdraw(request) => {
                custody.ledger_transfer(ledger, TransferKind::Withdrawal, request, now_ms, events)
            }
            Command::SubmitChainDeposit(submission) => custody.submit_deposit(ledger, submission, now_ms, events),
            Command::CreditChainDeposit(deposit) => custody.credit_deposit(ledger, deposit, now_ms, events),
            Command::FailChainDeposit { tx_hash } => custody.fail_deposit(tx_hash, now_ms, events),
            Command::RecordDepositScan {
                block_number,
                block_hash,
            } => custody.record_scan(block_number, block_hash),
            Command::RequestWithdrawal(withdrawal) => {
                custody.request_withdrawal(ledger, withdrawal, sequence, now_ms, events)
            }
            Command::MarkWithdrawalsSent { tx_hash, withdrawals } => {
                custody.mark_withdrawals((tx_hash, WithdrawalMark::Sent), &withdrawals, now_ms, events)
            }
            Command::ConfirmWithdrawals {
                tx_hash,
                block_number,
                withdrawals,
            } => custody.confirm_withdrawals(tx_hash, block_number, &withdrawals, now_ms, events),
            Command::MarkWithdrawalsUnpaid { tx_hash, withdrawals } => {
                custody.mark_withdrawals((tx_hash, WithdrawalMark::Unpaid), &withdrawals, now_ms, events)
            }
            Command::FailWithdrawal(key) => custody.fail_withdrawal(ledger, key, now_ms, events),
            Command::RecordWithdrawalRequest(request) => {
                self.record_withdrawal_request(request, sequence, now_ms, events)
            }
            Command::RecordLiabilityRoot(record) => custody.record_liability_root(record, events),
            Command::SettleLiabilityRoot { epoch, standing } => custody.settle_liability_root(epoch, standing, events),
            Command::RecordVaultFreeze(freeze) => custody.record_freeze(freeze, events),
            Command::CancelAll { account, pair } => {
                self.cancel_all((account, pair), crate::order::CancelReason::Requested, now_ms, events)
            }
            Command::AmendOrder(amend) => self.amend_order(amend, now_ms, events),
            Command::SetCancelAllAfter { account, setting } => {
                let trigger_at_ms = match setting {
                    SwitchSetting::Off => None,
                    SwitchSetting::AfterMs(timeout_ms) => Some(
                        now_ms
                            .checked_add(timeout_ms)
                            .ok_or(Rejection::InvalidOrder("the switch's timeout is too long"))?,
                    ),
                    SwitchSetting::AtMs(trigger_at_ms) => Some(trigger_at_ms),
                };
                // An armed switch is held until it fires: only an account with something on the
                // chain may hold one (turning one off asks nothing).
                if trigger_at_ms.is_some() && ledger.slot(&account).is_none() {
                    return Err(Rejection::UnknownAccount);
                }
                self.switches.set(account, trigger_at_ms);
                Ok(())
            }
            Command::FireCancelAllAfter { account, trigger_at_ms } => {
                self.fire_cancel_all_after(account, trigger_at_ms, now_ms, events)
            }
            Command::ExpireOrder { order_id } => self.expire_order(order_id, now_ms, events),
            Command::ApproveAgent { account, mut grant } => {
                if ledger.slot(&account).is_none() {
                    return Err(Rejection::UnknownAccount);
                }
                grant.approved_at_ms = now_ms;
                self.agents.approve(account, grant).map_err(Rejection::Agent)
            }
            Command::RevokeAgent { account, agent } => {
                if self.agents.revoke(&account, &agent) {
                    Ok(())
                } else {
                    Err(Rejection::AgentNotFound)
                }
            }
            Command::ByAgent { agent, command } => self.by_agent(agent, *command, now_ms, events),
            Command::TransferBetweenSubaccounts(request) => self.transfer_between_subaccounts(request, now_ms, events),
            Command::StartTwap(terms) => self.start_twap(terms, now_ms, events),
            Command::CancelTwap { account, twap_id } => self.cancel_twap(account, twap_id, now_ms, events),
            Command::RunTwapSlice { twap_id, slice } => self.run_twap_slice(twap_id, slice, now_ms, events),
            Command::SetPairHalted { pair, halted } => {
                let state = self.pairs.get_mut(usize::from(pair.0)).ok_or(Rejection::UnknownPair)?;
                state.halted = halted;
                Ok(())
            }
            Command::Configure(configuration) => self.configure(*configuration, now_ms),
        }
    }
}
