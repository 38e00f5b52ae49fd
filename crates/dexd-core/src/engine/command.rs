//! What the engine can be asked to do ([`Command`]), and what each command is as a request: who
//! asked, who signed, how long its signature may live, whether a frozen vault refuses it. The
//! engine's dispatch of each command is in the parent module; this module decides nothing.

use crate::agents::AgentGrant;
use crate::configuration::ChainConfiguration;
use crate::liabilities::{LiabilityRootRecord, RootStanding, VaultFreeze};
use crate::money::{Address, OrderId, PairIndex};
use crate::nonces::{MAX_SIGNED_REQUEST_LIFETIME_MS, MAX_SIGNED_WITHDRAWAL_LIFETIME_MS};
use crate::order::{Amend, NewOrder};
use crate::subaccounts::SubaccountTransferRequest;
use crate::transfer::{
    ChainDeposit, ChainDepositSubmission, ChainWithdrawalRequest, TransferRequest, VaultWithdrawal, WithdrawalKey,
};
use crate::twaps::NewTwap;

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
    /// Fire the met triggers of `pair` that wait beyond the bound of the command that met them
    /// (entered by the venue's timer; [`crate::configuration::RULE_MET_TRIGGERS_QUEUED`]):
    /// refused when none waits.
    FireMetTriggers {
        /// Which pair.
        pair: PairIndex,
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
            | Command::FireMetTriggers { .. }
            | Command::SetPairHalted { .. }
            | Command::Configure(_) => None,
        }
    }
}

impl Command {
    /// Who signed the command, when it is not its account: the agent of a `ByAgent`.
    pub(super) fn signer(&self) -> Option<Address> {
        match self {
            Command::ByAgent { agent, .. } => Some(*agent),
            _ => None,
        }
    }

    /// Whether the command can be applied for an account that holds nothing (a cancel of all its
    /// orders, its switch, its agents): such a command from an address with nothing on the chain
    /// would hold a nonce, a switch or an agent for free.
    pub(super) fn succeeds_without_funds(&self) -> bool {
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
    pub(super) fn max_signed_lifetime_ms(&self) -> u64 {
        match self {
            Command::RequestWithdrawal(_) => MAX_SIGNED_WITHDRAWAL_LIFETIME_MS,
            _ => MAX_SIGNED_REQUEST_LIFETIME_MS,
        }
    }

    /// Whether the command adds to what a vault must back (an order, an amendment, a deposit
    /// or withdrawal asked for), so that a frozen vault's chain refuses it. Cancels, the chain's
    /// facts and agent changes stay allowed.
    pub(super) fn needs_a_live_vault(&self) -> bool {
        match self {
            Command::PlaceOrder(_)
            | Command::AmendOrder(_)
            | Command::SubmitChainDeposit(_)
            | Command::StartTwap(_)
            // Trades: a frozen chain's met triggers wait (its accounts leave through the exit).
            | Command::FireMetTriggers { .. }
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
