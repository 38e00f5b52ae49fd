//! The engine of one chain: every book, every balance, and the rules that turn a command into
//! events.
//!
//! [`Engine::execute`] takes a [`Command`] and the time, and either applies it whole and appends
//! the resulting [`Event`]s, or returns a [`Rejection`] and changes nothing. All checks happen
//! before the first change, so a rejection never leaves half a command behind. The engine does no
//! IO, reads no clock and draws no random numbers: the same commands at the same times give the
//! same events and the same [`Engine::state_hash`], which is what makes replay possible.

mod audit;
mod command;
mod conditions;
mod configure;
mod controls;
mod forced_withdrawals;
mod matching;
mod open_order_places;
mod open_orders;
mod queries;
mod state;
mod subaccount_transfers;
mod twaps;

pub use self::command::{Command, SwitchSetting};
pub use self::conditions::MAX_TRIGGERS_FIRED_PER_COMMAND;
pub use self::state::{EngineState, PairSnapshot, RestoreError};

use std::collections::BTreeSet;

use rustc_hash::FxHashMap;

use crate::agents::AgentRegistry;
use crate::book::{LevelView, OrderBook, SlotKey};
use crate::configuration::{check_engine_change, ChainConfiguration, ChainDescription, ConfigurationRefused};
use crate::custody::{Custody, WithdrawalMark};
use crate::events::{Event, Rejection};
use crate::ledger::{AccountSlot, Balance, Ledger};
use crate::liabilities::LiabilityEntry;
use crate::market_data::{Candle, CandleInterval, CandleSeries, Position};
use crate::money::{Address, Amount, AssetIndex, OrderId, PairIndex, Price, Quantity};
use crate::nonces::{NonceClaim, NonceRegistry};
use crate::order::{Direction, OrderRecord};
use crate::pair::{AssetSpec, PairSpec, PairSpecError};
use crate::subaccounts::{SubaccountRegistry, SubaccountTransferRequest};
use crate::switches::CancelAllAfterSwitches;
use crate::transfer::{ChainWithdrawalRequest, TransferKind};
use crate::triggers::TriggerBook;
use crate::twaps::TwapRegistry;

pub use crate::configuration::{EngineConfig, EngineLimits};

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
    /// Matchings whose met triggers are not all fired yet, oldest first (under
    /// [`crate::configuration::RULE_MET_TRIGGERS_QUEUED`]): at most one per matching that hit
    /// the bound and one per trigger fired since, so never more than the pair's triggers ever
    /// fired plus one.
    met_pending: std::collections::VecDeque<crate::triggers::MetRange>,
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
    /// The ids of each account's open orders, indexed by ledger slot, with each one's place.
    open_orders: open_orders::OpenOrderIndex,
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
                    met_pending: std::collections::VecDeque::new(),
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
            open_orders: open_orders::OpenOrderIndex::default(),
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
                let parties = self.claim_parties(account, signer);
                self.nonces
                    .check(&parties, claim, now_ms, max_lifetime_ms)
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
                let parties = self.claim_parties(account, signer);
                self.nonces.record(parties, claim, now_ms);
            }
        }
        result
    }

    /// Who a claim of `signer` for `account` is for and whose room it takes: under
    /// [`crate::configuration::RULE_NONCES_PER_OWNER`] the account's owner (itself, or a
    /// subaccount's owner), otherwise the signer.
    fn claim_parties(&self, account: Address, signer: Address) -> crate::nonces::ClaimParties {
        let holder = nonce_holder(self.config.limits.rules, &self.subaccounts, &account, &signer);
        crate::nonces::ClaimParties {
            account,
            signer,
            holder,
        }
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
            } => self.cancel_order((account, order_id, pair), now_ms, events),
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
            Command::FireMetTriggers { pair } => self.fire_waiting_met_triggers(pair, now_ms, events),
            Command::SetPairHalted { pair, halted } => {
                let state = self.pairs.get_mut(usize::from(pair.0)).ok_or(Rejection::UnknownPair)?;
                state.halted = halted;
                Ok(())
            }
            Command::Configure(configuration) => self.configure(*configuration, now_ms),
        }
    }
}

/// Whose room of live nonces a claim of `signer` for `account` takes under `rules` (see
/// [`Engine::claim_parties`]); also what a restore counts each live claim under.
fn nonce_holder(rules: u64, subaccounts: &SubaccountRegistry, account: &Address, signer: &Address) -> Address {
    if rules & crate::configuration::RULE_NONCES_PER_OWNER == 0 {
        return *signer;
    }
    subaccounts.owner_of(account).map_or(*account, |(owner, _)| owner)
}
