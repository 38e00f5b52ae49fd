//! Deposits and withdrawals as data: what is asked, what the chain reports, and the transfer
//! record each step produces.
//!
//! The rules that move balances for them are in [`crate::custody`]; this module holds only the
//! types, so that events, custody and the engine can all name them without depending on each
//! other.

use crate::money::{Address, Amount, AssetIndex};

/// A request to move funds in or out of an account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TransferRequest {
    /// The transfer's identity (a transaction hash, or a withdrawal id).
    pub transfer_id: [u8; 32],
    /// Whose balance.
    pub account: Address,
    /// Which asset.
    pub asset: AssetIndex,
    /// How much, in the asset's smallest unit; positive.
    pub amount: Amount,
}

/// Whether funds came in or went out.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransferKind {
    /// Funds came in.
    Deposit,
    /// Funds went out.
    Withdrawal,
}

/// Where a transfer is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TransferStatus {
    /// A deposit sent and not yet confirmed, or a withdrawal debited and not yet sent.
    Pending,
    /// A withdrawal whose transaction is broadcast.
    Sent,
    /// Credited (deposit) or paid with enough confirmations (withdrawal).
    Confirmed,
    /// A deposit that reverted or was dropped (nothing credited), or a withdrawal that can never
    /// be paid (its amount credited back).
    Failed,
}

/// A deposit or withdrawal, in its latest state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Transfer {
    /// The transfer's identity.
    pub transfer_id: [u8; 32],
    /// In or out.
    pub kind: TransferKind,
    /// Whose balance.
    pub account: Address,
    /// Which asset.
    pub asset: AssetIndex,
    /// How much, in the asset's smallest unit.
    pub amount: Amount,
    /// Where it is in its life.
    pub status: TransferStatus,
    /// The chain transaction that carries it, once there is one.
    pub tx_hash: Option<[u8; 32]>,
    /// The block of that transaction, once it is confirmed.
    pub block_number: Option<u64>,
    /// When the venue first recorded it, in ms since the epoch.
    pub timestamp_ms: u64,
    /// When it last changed, in ms since the epoch.
    pub updated_at_ms: u64,
}

/// A deposit transaction that the venue sent for an account, not yet confirmed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainDepositSubmission {
    /// The deposit transaction's hash; the transfer's id.
    pub tx_hash: [u8; 32],
    /// Who deposits.
    pub account: Address,
    /// Which asset.
    pub asset: AssetIndex,
    /// How much was sent (a fee-on-transfer token may credit less).
    pub amount: Amount,
}

/// A `Deposited` event of the vault with enough confirmations on top.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainDeposit {
    /// The vault's number of the deposit: 0, 1, 2... without gaps.
    pub deposit_id: u64,
    /// Who deposited (and is credited).
    pub account: Address,
    /// The token's contract (the zero address for the native asset).
    pub token: Address,
    /// The asset, or `None` for a token the chain does not list (recorded, never credited).
    pub asset: Option<AssetIndex>,
    /// What the vault received, or `None` when it does not fit 128 bits (never credited).
    pub amount: Option<Amount>,
    /// The transaction that made it.
    pub tx_hash: [u8; 32],
    /// The event's position in its block.
    pub log_index: u64,
    /// The block that holds it.
    pub block_number: u64,
    /// That block's hash.
    pub block_hash: [u8; 32],
}

/// A `WithdrawalRequested` event of the vault with enough confirmations on top: a withdrawal an
/// account asked for on chain, with no signature and no venue in the way (contract version 5).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainWithdrawalRequest {
    /// The vault's number of the request: 0, 1, 2... without gaps.
    pub request_id: u64,
    /// Who asked (and is paid).
    pub account: Address,
    /// The token's contract (the zero address for the native asset).
    pub token: Address,
    /// The asset, or `None` for a token the chain does not list (served with nothing).
    pub asset: Option<AssetIndex>,
    /// What the account asked for, at most (the vault takes at most 2^128 - 1).
    pub amount: Amount,
    /// By when the vault must serve it, in ms of chain time; after it anyone may freeze the
    /// vault.
    pub deadline_ms: u64,
    /// The transaction that asked.
    pub tx_hash: [u8; 32],
    /// The event's position in its block.
    pub log_index: u64,
    /// The block that holds it.
    pub block_number: u64,
    /// That block's hash.
    pub block_hash: [u8; 32],
}

/// The first 24 bytes of the withdrawal id under which the engine keeps a request made on chain;
/// the last 8 are the request's number. An account's signed withdrawal may not use an id that
/// starts so, so that no account can take a request's place (and have it refused).
pub const CHAIN_REQUEST_ID_PREFIX: [u8; 24] = [0xff; 24];

/// The withdrawal id of the request `request_id` made on chain.
pub fn chain_request_withdrawal_id(request_id: u64) -> [u8; 32] {
    let mut id = [0u8; 32];
    id[..24].copy_from_slice(&CHAIN_REQUEST_ID_PREFIX);
    id[24..].copy_from_slice(&request_id.to_be_bytes());
    id
}

/// Whether a withdrawal id is one of the ids kept for requests made on chain.
pub fn is_chain_request_withdrawal_id(withdrawal_id: &[u8; 32]) -> bool {
    withdrawal_id[..24] == CHAIN_REQUEST_ID_PREFIX
}

/// An account's withdrawal in vault mode: what the account authorised the vault to pay.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct VaultWithdrawal {
    /// The withdrawal: `transfer_id` is the withdrawal id the account signed.
    pub request: TransferRequest,
    /// Until when the vault may pay it, in ms since the epoch.
    pub expiry_ms: u64,
    /// The account's 65-byte EIP-712 signature of the vault's `Withdrawal`.
    pub signature: [u8; 65],
}

/// Names one withdrawal: ids are the account's own, unique per account.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct WithdrawalKey {
    /// Whose withdrawal.
    pub account: Address,
    /// The id the account signed.
    pub withdrawal_id: [u8; 32],
}

impl WithdrawalKey {
    /// The withdrawal's mark in the chain's memory of used ids: 128 bits of BLAKE3 over the
    /// account and the id. Two withdrawals share one only by a 2^-128 accident, which would
    /// refuse the second (the client signs again with another id), never pay it twice.
    pub fn mark(&self) -> u128 {
        let mut hasher = blake3::Hasher::new();
        hasher.update(self.account.as_bytes());
        hasher.update(&self.withdrawal_id);
        let digest = hasher.finalize();
        u128::from_be_bytes(digest.as_bytes()[..16].try_into().expect("16 of 32 bytes"))
    }
}
