//! Deposits and withdrawals, and custody on chain as the engine sees it.
//!
//! A chain runs in one of two custody modes. In **ledger** mode the ledger is the whole truth: a
//! [`TransferRequest`] credits or debits at once and the transfer is confirmed. In **vault**
//! mode, balances are backed by a vault contract on the chain, and every fact from the chain
//! enters as a command that the caller journals, so that a replay reproduces it exactly:
//!
//! - a deposit submitted through the API is recorded as pending ([`ChainDepositSubmission`]),
//!   and failed if its transaction reverted or can never be mined;
//! - a `Deposited` event with enough confirmations is credited ([`ChainDeposit`]) exactly once:
//!   the vault numbers its deposits from 0 without gaps, and the engine accepts only the next
//!   number, so a repeated or skipped event is refused rather than credited twice or lost;
//! - a withdrawal ([`VaultWithdrawal`]) debits the account at once and waits, with the account's
//!   signature, until the payer reports it sent, confirmed, or never payable (failed, and the
//!   amount credited back);
//! - a withdrawal an account asked for on chain ([`ChainWithdrawalRequest`]) is recorded in the
//!   vault's order of requests, like a deposit, and waits to be served; it never fails.
//!
//! This module decides what those facts do to balances and transfer records. It does no IO and
//! trusts its caller for what it cannot check itself: that an event is confirmed, that a
//! signature is the account's, that a withdrawal is really unpayable.

mod deposits;
mod withdrawals;
pub(crate) use withdrawals::WithdrawalMark;

use std::collections::{BTreeMap, BTreeSet};

use sha3::{Digest, Keccak256};

use crate::events::{Event, Rejection};
use crate::ledger::Ledger;
use crate::liabilities::{
    Liabilities, LiabilitiesState, LiabilityRootRecord, LiabilityToken, RootStanding, VaultFreeze,
};
use crate::money::{Address, Amount, AssetIndex};
use crate::state_hash::StateHasher;
use crate::transfer::{
    chain_request_withdrawal_id, is_chain_request_withdrawal_id, ChainDeposit, ChainDepositSubmission,
    ChainWithdrawalRequest, Transfer, TransferKind, TransferRequest, TransferStatus, VaultWithdrawal, WithdrawalKey,
};

/// Where a chain's balances are held.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CustodyMode {
    /// The venue's own ledger is the whole truth (development, demos, paper trading).
    Ledger,
    /// A vault contract on the chain holds what the ledger says.
    Vault,
}

/// A withdrawal debited and not yet confirmed or failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingWithdrawal {
    /// Which asset.
    pub asset: AssetIndex,
    /// How much.
    pub amount: Amount,
    /// Until when the vault may pay it, in ms since the epoch.
    pub expiry_ms: u64,
    /// The account's signature of the vault's `Withdrawal`.
    pub signature: [u8; 65],
    /// `Pending` until a transaction is broadcast, then `Sent`.
    pub status: TransferStatus,
    /// The last transaction broadcast for it.
    pub tx_hash: Option<[u8; 32]>,
    /// When it was requested, in ms since the epoch.
    pub created_at_ms: u64,
    /// Its place in the order of requests, from 1.
    pub request_number: u64,
    /// The journal position of its debit: it is paid only once a final root of the venue's
    /// is built at or after it.
    pub debited_at_sequence: u64,
    /// Whether the account signed it, or asked the vault for it on chain.
    pub origin: WithdrawalOrigin,
}

/// How a withdrawal was asked for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WithdrawalOrigin {
    /// The account signed the vault's `Withdrawal` (through the API); paid by `withdrawBatch`.
    Signed,
    /// The account called the vault's `requestWithdrawal`; served by `serveRequests`, however
    /// little it holds (0 included), and never failed.
    Requested {
        /// The vault's number of the request.
        request_id: u64,
        /// What it asked for (the debit is at most this).
        requested: Amount,
        /// By when the vault must serve it, in ms of chain time.
        deadline_ms: u64,
        /// The token it named, which may be one the chain does not list.
        token: Address,
    },
}

impl WithdrawalOrigin {
    /// Its canonical bytes, which the state hash and the snapshot both write: a tag (0 signed,
    /// 1 asked for on chain), then a request's number, amount asked and deadline, big-endian,
    /// and its token's 20 bytes.
    pub fn canonical_bytes(&self) -> Vec<u8> {
        match self {
            WithdrawalOrigin::Signed => vec![0],
            WithdrawalOrigin::Requested {
                request_id,
                requested,
                deadline_ms,
                token,
            } => {
                let mut bytes = Vec::with_capacity(53);
                bytes.push(1);
                bytes.extend_from_slice(&request_id.to_be_bytes());
                bytes.extend_from_slice(&requested.units().to_be_bytes());
                bytes.extend_from_slice(&deadline_ms.to_be_bytes());
                bytes.extend_from_slice(token.as_bytes());
                bytes
            }
        }
    }

    /// The request's number, for a withdrawal asked for on chain.
    pub fn request_id(&self) -> Option<u64> {
        match self {
            WithdrawalOrigin::Signed => None,
            WithdrawalOrigin::Requested { request_id, .. } => Some(*request_id),
        }
    }
}

/// A deposit the venue sent for an account, waiting for its event.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PendingDeposit {
    /// Who deposits.
    pub account: Address,
    /// Which asset.
    pub asset: AssetIndex,
    /// How much was sent.
    pub amount: Amount,
    /// When it was sent, in ms since the epoch.
    pub created_at_ms: u64,
}

/// The custody state as plain data, for a snapshot.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CustodyState {
    /// The vault deposit number credited next.
    pub next_deposit_id: u64,
    /// The transaction of the last credited deposit.
    pub last_credited_tx: Option<[u8; 32]>,
    /// The last block scanned and its hash.
    pub scanned_through: Option<(u64, [u8; 32])>,
    /// Deposits sent and not yet confirmed, by transaction hash.
    pub pending_deposits: Vec<([u8; 32], PendingDeposit)>,
    /// Withdrawals not yet confirmed or failed.
    pub withdrawals: Vec<(WithdrawalKey, PendingWithdrawal)>,
    /// The number the next withdrawal request gets.
    pub next_request_number: u64,
    /// The vault's number of the next withdrawal requested on chain to record.
    pub next_chain_request_id: u64,
    /// The accounts' flows through the vault and the roots recorded.
    pub liabilities: LiabilitiesState,
    /// Every signed withdrawal id ever debited, by [`WithdrawalKey::mark`], in ascending order.
    pub used_withdrawal_ids: Vec<u128>,
}

/// The custody state of one chain: the vault's deposit counter as credited, how far the deposit
/// watcher has confirmed the chain, and the transfers in flight.
#[derive(Clone, Debug)]
pub struct Custody {
    mode: CustodyMode,
    next_deposit_id: u64,
    last_credited_tx: Option<[u8; 32]>,
    scanned_through: Option<(u64, [u8; 32])>,
    pending_deposits: BTreeMap<[u8; 32], PendingDeposit>,
    withdrawals: BTreeMap<WithdrawalKey, PendingWithdrawal>,
    withdrawals_in_request_order: BTreeMap<u64, WithdrawalKey>,
    next_request_number: u64,
    next_chain_request_id: u64,
    pending_withdrawal_units: Vec<Amount>,
    max_pending_transfers: usize,
    liabilities: Liabilities,
    /// Every signed withdrawal id the chain ever debited, by [`WithdrawalKey::mark`]: an id is
    /// used once in the chain's life, so that no journal can debit (or pay) one twice, even
    /// long after the first was paid. It grows with the chain's withdrawals, 16 bytes each
    /// (and the set's overhead); there is no cap, since refusing withdrawals once it filled
    /// would hold funds, and a million withdrawals take about 40 MB.
    used_withdrawal_ids: BTreeSet<u128>,
}

impl Custody {
    /// An empty custody state for `asset_count` assets, holding at most `max_pending_transfers`
    /// pending deposits and as many pending withdrawals.
    pub fn new(mode: CustodyMode, asset_count: usize, max_pending_transfers: usize) -> Custody {
        Custody {
            mode,
            next_deposit_id: 0,
            last_credited_tx: None,
            scanned_through: None,
            pending_deposits: BTreeMap::new(),
            withdrawals: BTreeMap::new(),
            withdrawals_in_request_order: BTreeMap::new(),
            next_request_number: 1,
            next_chain_request_id: 0,
            pending_withdrawal_units: vec![Amount::ZERO; asset_count],
            max_pending_transfers,
            liabilities: Liabilities::default(),
            used_withdrawal_ids: BTreeSet::new(),
        }
    }

    /// The state as plain data.
    pub fn state(&self) -> CustodyState {
        CustodyState {
            next_deposit_id: self.next_deposit_id,
            last_credited_tx: self.last_credited_tx,
            scanned_through: self.scanned_through,
            pending_deposits: self
                .pending_deposits
                .iter()
                .map(|(hash, pending)| (*hash, pending.clone()))
                .collect(),
            withdrawals: self
                .withdrawals
                .iter()
                .map(|(key, pending)| (*key, pending.clone()))
                .collect(),
            next_request_number: self.next_request_number,
            next_chain_request_id: self.next_chain_request_id,
            liabilities: self.liabilities.state(),
            used_withdrawal_ids: self.used_withdrawal_ids.iter().copied().collect(),
        }
    }

    /// A custody restored from its state; refuses withdrawals of unknown assets or numbered
    /// twice.
    pub fn restore(
        mode: CustodyMode,
        asset_count: usize,
        max_pending_transfers: usize,
        state: CustodyState,
    ) -> Result<Custody, String> {
        let mut custody = Custody::new(mode, asset_count, max_pending_transfers);
        custody.next_deposit_id = state.next_deposit_id;
        custody.last_credited_tx = state.last_credited_tx;
        custody.scanned_through = state.scanned_through;
        custody.next_request_number = state.next_request_number;
        custody.next_chain_request_id = state.next_chain_request_id;
        custody.pending_deposits = state.pending_deposits.into_iter().collect();
        custody.liabilities = Liabilities::restore(state.liabilities)?;
        custody.used_withdrawal_ids = state.used_withdrawal_ids.into_iter().collect();
        for (key, pending) in state.withdrawals {
            let index = usize::from(pending.asset.0);
            if index >= asset_count {
                return Err("a pending withdrawal of an unknown asset".into());
            }
            custody.pending_withdrawal_units[index] = custody.pending_withdrawal_units[index]
                .checked_add(pending.amount)
                .ok_or("pending withdrawals overflow")?;
            if custody
                .withdrawals_in_request_order
                .insert(pending.request_number, key)
                .is_some()
            {
                return Err("two pending withdrawals share a request number".into());
            }
            custody.withdrawals.insert(key, pending);
        }
        Ok(custody)
    }

    /// The chain's custody mode.
    pub fn mode(&self) -> CustodyMode {
        self.mode
    }

    /// The vault deposit number the engine credits next.
    pub fn next_deposit_id(&self) -> u64 {
        self.next_deposit_id
    }

    /// The vault's number of the next withdrawal requested on chain the engine records.
    pub fn next_chain_request_id(&self) -> u64 {
        self.next_chain_request_id
    }

    /// The last block (number and hash) the deposit watcher recorded as confirmed and scanned.
    pub fn scanned_through(&self) -> Option<(u64, [u8; 32])> {
        self.scanned_through
    }

    /// The accounts' flows through the vault and the roots recorded.
    pub fn liabilities(&self) -> &Liabilities {
        &self.liabilities
    }

    /// Records a liability root the vault committed (a fact from the chain, journaled).
    pub(crate) fn record_liability_root(
        &mut self,
        record: LiabilityRootRecord,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        self.liabilities
            .record_root(record.clone(), self.pending_withdrawal_units.len())
            .map_err(|_| Rejection::RootOutOfOrder)?;
        events.push(Event::LiabilityRootRecorded(record));
        Ok(())
    }

    /// Records that a root was vetoed or became final (a fact from the confirmed chain).
    pub(crate) fn settle_liability_root(
        &mut self,
        epoch: u64,
        standing: RootStanding,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        self.liabilities
            .settle_root(epoch, standing)
            .map_err(|_| Rejection::RootOutOfOrder)?;
        events.push(Event::LiabilityRootSettled { epoch, standing });
        Ok(())
    }

    /// Records the vault's freeze (a fact from the confirmed chain): from now on the chain takes
    /// no order, deposit or withdrawal, and pays nothing; accounts exit through the vault.
    pub(crate) fn record_freeze(&mut self, freeze: VaultFreeze, events: &mut Vec<Event>) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        self.liabilities
            .record_freeze(freeze)
            .map_err(|_| Rejection::RootOutOfOrder)?;
        events.push(Event::VaultFrozen(freeze));
        Ok(())
    }

    /// Whether the vault is frozen (recorded from the chain).
    pub fn is_frozen(&self) -> bool {
        self.liabilities.freeze().is_some()
    }

    /// Deposits sent through the venue and not yet confirmed or failed, by transaction hash.
    pub fn pending_deposits(&self) -> &BTreeMap<[u8; 32], PendingDeposit> {
        &self.pending_deposits
    }

    /// Withdrawals debited and not yet confirmed or failed, oldest request first.
    pub fn pending_withdrawals(&self) -> impl Iterator<Item = (&WithdrawalKey, &PendingWithdrawal)> {
        self.withdrawals_in_request_order
            .values()
            .map(|key| (key, &self.withdrawals[key]))
    }

    /// One pending withdrawal.
    pub fn pending_withdrawal(&self, key: &WithdrawalKey) -> Option<&PendingWithdrawal> {
        self.withdrawals.get(key)
    }

    /// What the pending withdrawals of an asset add up to: debited from accounts, still in the
    /// vault until they are confirmed.
    pub fn pending_withdrawal_units(&self, asset: AssetIndex) -> Amount {
        self.pending_withdrawal_units
            .get(usize::from(asset.0))
            .copied()
            .unwrap_or(Amount::ZERO)
    }

    /// Refuses what a frozen vault can no longer back.
    pub(crate) fn refuse_when_frozen(&self) -> Result<(), Rejection> {
        if self.is_frozen() {
            Err(Rejection::VaultFrozen)
        } else {
            Ok(())
        }
    }

    fn require(&self, mode: CustodyMode) -> Result<(), Rejection> {
        if self.mode == mode {
            Ok(())
        } else {
            Err(Rejection::WrongCustodyMode)
        }
    }

    /// A ledger-mode deposit or withdrawal: credited or debited, and confirmed, at once.
    pub(crate) fn ledger_transfer(
        &mut self,
        ledger: &mut Ledger,
        kind: TransferKind,
        request: TransferRequest,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Ledger)?;
        check_request(ledger, &request)?;
        let (account, asset, amount) = (request.account, request.asset, request.amount);
        let balance = match kind {
            TransferKind::Deposit => ledger.deposit(&account, asset, amount, false),
            TransferKind::Withdrawal => ledger.withdraw(&account, asset, amount),
        }
        .map_err(Rejection::from)?;
        events.push(Event::TransferApplied(confirmed_at_once(request, kind, now_ms)));
        events.push(Event::BalanceUpdated {
            account,
            asset,
            balance,
        });
        Ok(())
    }

    /// Feeds the whole custody state to a hash, in a fixed order.
    pub(crate) fn hash_into(&self, hasher: &mut StateHasher) {
        hasher.update([self.mode as u8]);
        hasher.update(self.next_deposit_id.to_be_bytes());
        hasher.update(self.last_credited_tx.unwrap_or_default());
        let (block_number, block_hash) = self.scanned_through.unwrap_or_default();
        hasher.update(block_number.to_be_bytes());
        hasher.update(block_hash);
        hasher.update(self.next_request_number.to_be_bytes());
        for (tx_hash, pending) in &self.pending_deposits {
            hasher.update(tx_hash);
            hasher.update(pending.account.as_bytes());
            hasher.update(pending.asset.0.to_be_bytes());
            hasher.update(pending.amount.units().to_be_bytes());
            hasher.update(pending.created_at_ms.to_be_bytes());
        }
        for (key, pending) in &self.withdrawals {
            hasher.update(key.account.as_bytes());
            hasher.update(key.withdrawal_id);
            hasher.update(pending.asset.0.to_be_bytes());
            hasher.update(pending.amount.units().to_be_bytes());
            hasher.update(pending.expiry_ms.to_be_bytes());
            hasher.update(pending.signature);
            hasher.update([pending.status as u8]);
            hasher.update(pending.tx_hash.unwrap_or_default());
            hasher.update(pending.created_at_ms.to_be_bytes());
            hasher.update(pending.request_number.to_be_bytes());
            hasher.update(pending.debited_at_sequence.to_be_bytes());
            hasher.update(pending.origin.canonical_bytes());
        }
        hasher.update(self.next_chain_request_id.to_be_bytes());
        self.liabilities.hash_into(hasher);
        hasher.update((self.used_withdrawal_ids.len() as u64).to_be_bytes());
        for mark in &self.used_withdrawal_ids {
            hasher.update(mark.to_be_bytes());
        }
    }

    /// Checks the custody state's own invariants: the per-asset pending totals equal the sum of
    /// the pending withdrawals, the request-order index matches, and the limits hold.
    pub(crate) fn check_invariants(&self) -> Result<(), String> {
        let mut totals = vec![0u128; self.pending_withdrawal_units.len()];
        for pending in self.withdrawals.values() {
            let total = &mut totals[usize::from(pending.asset.0)];
            *total = total
                .checked_add(pending.amount.units())
                .ok_or("pending withdrawals overflow")?;
            if !matches!(pending.status, TransferStatus::Pending | TransferStatus::Sent) {
                return Err("a settled withdrawal is still pending".into());
            }
        }
        for (index, total) in totals.iter().enumerate() {
            if *total != self.pending_withdrawal_units[index].units() {
                return Err(format!("asset {index}: pending withdrawals disagree with their total"));
            }
        }
        if self.withdrawals_in_request_order.len() != self.withdrawals.len()
            || self
                .withdrawals_in_request_order
                .iter()
                .any(|(number, key)| self.withdrawals.get(key).map(|pending| pending.request_number) != Some(*number))
        {
            return Err("the withdrawal request index disagrees with the withdrawals".into());
        }
        if self.withdrawals.len() > self.max_pending_transfers
            || self.pending_deposits.len() > self.max_pending_transfers
        {
            return Err("more pending transfers than the limit".into());
        }
        Ok(())
    }
}

fn check_request(ledger: &Ledger, request: &TransferRequest) -> Result<(), Rejection> {
    if usize::from(request.asset.0) >= ledger.asset_count() {
        return Err(Rejection::UnknownAsset);
    }
    if request.amount.is_zero() {
        return Err(Rejection::InvalidOrder("the quantity must be positive"));
    }
    Ok(())
}

fn confirmed_at_once(request: TransferRequest, kind: TransferKind, now_ms: u64) -> Transfer {
    Transfer {
        transfer_id: request.transfer_id,
        kind,
        account: request.account,
        asset: request.asset,
        amount: request.amount,
        status: TransferStatus::Confirmed,
        tx_hash: None,
        block_number: None,
        timestamp_ms: now_ms,
        updated_at_ms: now_ms,
    }
}
