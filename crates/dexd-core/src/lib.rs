//! dexd-core: the pure, deterministic heart of dexd.
//!
//! One [`engine::Engine`] holds, for one chain, every order book and every account balance, and
//! turns [`engine::Command`]s into `engine::Event`s. Money is exact: amounts are integers of an
//! asset's smallest unit, prices are whole ticks, quantities whole lots, and every arithmetic step
//! is checked.
//!
//! This crate does no IO, reads no clock and draws no random numbers; the caller passes the time
//! in. It knows nothing of HTTP, JSON, signatures or databases: those belong to the `dexd` crate
//! around it.

#![forbid(unsafe_code)]
#![warn(missing_docs)]

// The fixtures of `testing` name the engine `dexd_core`, inside this crate as outside it.
extern crate self as dexd_core;

pub mod agents;
pub mod book;
pub mod configuration;
pub mod custody;
pub mod decimal;
pub mod engine;
pub mod events;
pub mod ledger;
pub mod liabilities;
pub mod market_data;
pub mod money;
pub mod nonces;
pub mod order;
pub mod pair;
mod state_hash;
pub mod subaccounts;
pub mod switches;
pub mod transfer;
pub mod triggers;
pub mod twaps;
pub mod wire_names;

#[cfg(test)]
mod book_tests;
#[cfg(test)]
mod conditions_tests;
#[cfg(test)]
mod configuration_tests;
#[cfg(test)]
mod controls_tests;
#[cfg(test)]
mod custody_tests;
#[cfg(test)]
mod engine_replay_tests;
#[cfg(test)]
mod engine_tests;
#[cfg(test)]
mod halts_tests;
#[cfg(test)]
mod requests_tests;
#[cfg(test)]
mod roots_tests;
#[cfg(test)]
mod subaccounts_tests;
#[cfg(any(test, feature = "testing"))]
pub mod testing;
#[cfg(test)]
mod testing_tests;
#[cfg(test)]
mod twaps_tests;

pub use agents::{AgentGrant, AgentRejection, MAX_AGENTS_PER_ACCOUNT};
pub use book::LevelView;
pub use configuration::{
    AssetDescription, ChainConfiguration, ChainDescription, ConfigurationRefused, CURRENT_RULES, DEFAULT_FEE_NOTICE_MS,
    MAX_ASSETS_PER_CHAIN, MAX_ASSET_SYMBOL_BYTES, MAX_PAIRS_PER_CHAIN, MAX_VENUE_SIGNED_WINDOW_MS,
    RULE_EXPIRED_MAKERS_SKIPPED, RULE_MET_TRIGGERS_QUEUED, RULE_NONCES_PER_OWNER,
};
pub use custody::{Custody, CustodyMode, CustodyState, PendingDeposit, PendingWithdrawal, WithdrawalOrigin};
pub use decimal::{Decimal, DecimalError};
pub use engine::{
    Command, Engine, EngineConfig, EngineLimits, EngineState, PairSnapshot, RestoreError, SwitchSetting,
    TradableAmounts,
};
pub use events::{Event, Rejection, Trade};
pub use ledger::Balance;
pub use liabilities::{
    AccountFlows, LiabilitiesState, LiabilityEntry, LiabilityRootRecord, LiabilityToken, RecordedRoot, RootOrigin,
    RootStanding, VaultFreeze, WithdrawalWait, MAX_UNSETTLED_ROOTS,
};
pub use market_data::{Candle, CandleInterval, Position};
pub use money::{Address, Amount, AssetIndex, FeeRate, OrderId, PairIndex, Price, Quantity};
pub use nonces::{
    BatchSlot, LiveBatch, LiveClaim, Nonce, NonceClaim, NonceRejection, MAX_ORDERS_PER_SIGNED_BATCH,
    MAX_SIGNED_REQUEST_LIFETIME_MS, MAX_SIGNED_WITHDRAWAL_LIFETIME_MS,
};
pub use order::{
    Amend, CancelReason, Direction, NewOrder, OrderConditions, OrderRecord, OrderStatus, OrderType, TimeInForce,
    Trigger, TriggerCondition, MAX_EXPIRY_AHEAD_MS, MAX_OCO_GROUP_CHARS, MIN_EXPIRY_AHEAD_MS,
};
pub use pair::{
    fee_rate_from_decimal, fee_rate_text, AssetSpec, FeeRaise, PairDefinition, PairSpec, PairSpecError, PairValueError,
};
pub use subaccounts::{
    subaccount_address, SubaccountTransfer, SubaccountTransferRequest, SubaccountsState, MAX_SUBACCOUNT_NUMBER,
    TRANSFER_ID_MEMORY_MS,
};
pub use switches::{MAX_CANCEL_ALL_AFTER_MS, MIN_CANCEL_ALL_AFTER_MS};
pub use transfer::{
    chain_request_withdrawal_id, is_chain_request_withdrawal_id, ChainDeposit, ChainDepositSubmission,
    ChainWithdrawalRequest, Transfer, TransferKind, TransferRequest, TransferStatus, VaultWithdrawal, WithdrawalKey,
};
pub use twaps::{NewTwap, TwapRecord, TwapRejection, TwapStatus, TwapsState};
pub use wire_names::{
    CANCEL_REASON_NAMES, CANDLE_INTERVAL_NAMES, DIRECTION_NAMES, ORDER_STATUS_NAMES, ORDER_TYPE_NAMES,
    ROOT_ORIGIN_NAMES, ROOT_STANDING_NAMES, TIME_IN_FORCE_NAMES, TRANSFER_STATUS_NAMES, TRIGGER_CONDITION_NAMES,
};
