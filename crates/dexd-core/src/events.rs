//! What a command did, or why it was refused: the engine's output.
//!
//! Every command either appends [`Event`]s (each order it touched once, in its final state, the
//! trades it made, the balances and transfers it changed) or returns a [`Rejection`] and changes
//! nothing. These are plain data shared by the engine and custody; this module decides nothing.

use crate::agents::AgentRejection;
use crate::ledger::{Balance, LedgerError};
use crate::liabilities::{LiabilityRootRecord, RootStanding, VaultFreeze};
use crate::money::{Address, Amount, AssetIndex, OrderId, PairIndex, Price, Quantity};
use crate::nonces::NonceRejection;
use crate::order::{Direction, OrderRecord};
use crate::subaccounts::SubaccountTransfer;
use crate::transfer::Transfer;
use crate::twaps::{TwapRecord, TwapRejection};

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
    /// A liability root the vault committed was recorded.
    LiabilityRootRecorded(LiabilityRootRecord),
    /// A recorded root was vetoed, or became final.
    LiabilityRootSettled {
        /// The root's epoch.
        epoch: u64,
        /// Vetoed or final.
        standing: RootStanding,
    },
    /// The vault froze: the chain takes no more orders, deposits or withdrawals.
    VaultFrozen(VaultFreeze),
    /// Funds moved between two subaccounts of one owner.
    SubaccountTransferred(SubaccountTransfer),
    /// A TWAP started, ran a slice, completed or was cancelled (the whole TWAP each time).
    TwapUpdated(TwapRecord),
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
    /// An amend took its amount from the old order's remaining amount, and the old order has
    /// filled since: nothing changed, and the client may amend again.
    OrderChanged,
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
    /// A withdrawal marked sent that no final root of the venue's covers yet: it may not be
    /// paid, or the exit root might not count the payment.
    WithdrawalNotCovered,
    /// A signed withdrawal whose id is in the range kept for withdrawals requested on chain.
    ReservedWithdrawalId,
    /// A chain deposit that is not the vault's next one, or a scan behind the last.
    DepositOutOfOrder,
    /// The agent is not approved by the account, its approval ended, or it asked for what no
    /// agent may do (move funds, approve or revoke agents).
    AgentNotAllowed,
    /// An approval of an agent was refused.
    Agent(AgentRejection),
    /// No such agent of the account to revoke.
    AgentNotFound,
    /// No switch of the account is armed for that trigger, or its time has not come.
    SwitchNotDue,
    /// A trigger order whose trigger a trade at the pair's last price already meets.
    TriggerAlreadyMet,
    /// An expiry in the past or less than [`crate::MIN_EXPIRY_AHEAD_MS`] ahead.
    ExpiryTooSoon,
    /// An expiry more than [`crate::MAX_EXPIRY_AHEAD_MS`] ahead (seconds sent for
    /// milliseconds, or a mistake like it).
    ExpiryTooFar,
    /// A one-cancels-other group that would get a third open order, mix pairs or
    /// directions, hold two orders that both rest in the book, take an order that neither
    /// rests nor waits, or join an order that has filled.
    OcoGroupInvalid(&'static str),
    /// No open order with that id expires by now.
    ExpiryNotDue,
    /// The pair has no met trigger waiting to fire, or it is halted (a
    /// [`crate::Command::FireMetTriggers`] the timer sent late or twice).
    NoMetTriggersWaiting,
    /// A liability root that is not the vault's next epoch or lacks an asset's total, a root's
    /// standing out of order, or a second freeze.
    RootOutOfOrder,
    /// The vault is frozen: it backs nothing new, and accounts leave through its exit.
    VaultFrozen,
    /// The account has nothing on the chain (no deposit ever): it cannot hold signed nonces, a
    /// dead man's switch or agents.
    UnknownAccount,
    /// A transfer between subaccounts whose terms are malformed (a number out of range, the
    /// same subaccount twice, a zero amount, a bad `clientTransferId`).
    InvalidTransfer(&'static str),
    /// The same transfer (owner, `clientTransferId` and terms) was applied already: nothing
    /// moved again, and the first result is the answer.
    TransferAlreadyApplied,
    /// The owner used this `clientTransferId` for another transfer.
    TransferIdReused,
    /// The owner has [`crate::subaccounts::MAX_REMEMBERED_TRANSFERS_PER_OWNER`] transfers
    /// remembered.
    TooManyTransfers,
    /// The pair is halted by the operator: it takes cancels only.
    PairHalted,
    /// A TWAP command refused: terms out of bounds, too many running, a `clientTwapId` in use,
    /// no such running TWAP, or a slice not due.
    Twap(TwapRejection),
    /// A configuration that is not valid, or a change to the journal's that does more than add
    /// assets and pairs and change fees, minimums and limits.
    ConfigurationRefused,
}

impl From<LedgerError> for Rejection {
    fn from(error: LedgerError) -> Rejection {
        match error {
            LedgerError::InsufficientBalance => Rejection::InsufficientBalance,
            LedgerError::Overflow => Rejection::AmountTooLarge,
            LedgerError::TooManyAccounts => Rejection::TooManyAccounts,
        }
    }
}
