//! What the venue owes, as a vault (version 2) proves it: per account and asset, every deposit
//! credited and every withdrawal debited, in all; the entries of the liability tree at any state;
//! and the roots committed to the vault, as journaled facts.
//!
//! On a vault chain each account's leaf is `(balance, creditedDeposits, debitedWithdrawals)`:
//! the vault counts what it received and paid per account, and an exit pays `balance +
//! debitedWithdrawals - paid + deposited - creditedDeposits`. So a credit adds to
//! `creditedDeposits`, a debit adds to `debitedWithdrawals`, and a withdrawal that can never be
//! paid (failed, credited back) is taken out of `debitedWithdrawals` again: it was never paid and
//! its amount is back in the balance. Ledger-mode deposits and withdrawals are not counted (no
//! vault backs them, and no root is committed for them).
//!
//! This module does no hashing: the tree is built from [`LiabilityEntry`]s above the engine
//! (`dexd_crypto::liability_tree`), off the writer's path.

use std::collections::BTreeMap;

use crate::ledger::Ledger;
use crate::money::{Address, Amount, AssetIndex};
use crate::state_hash::StateHasher;

/// An account's cumulative flows of one asset through the vault.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct AccountFlows {
    /// Every deposit credited, in all.
    pub credited_deposits: Amount,
    /// Every withdrawal debited and not failed, in all (paid or not yet).
    pub debited_withdrawals: Amount,
}

/// One entry of the liability tree: what the venue owes an account in one asset.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiabilityEntry {
    /// The account.
    pub account: Address,
    /// The asset.
    pub asset: AssetIndex,
    /// The account's total (available + locked).
    pub balance: Amount,
    /// Its flows through the vault.
    pub flows: AccountFlows,
}

/// A root of the liability tree as the vault committed it: a fact from the chain, journaled.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct LiabilityRootRecord {
    /// The vault's number of the root, from 0 without gaps.
    pub epoch: u64,
    /// The root.
    pub root: [u8; 32],
    /// The journal position the tree was built at.
    pub journal_sequence: u64,
    /// The transaction that committed it.
    pub tx_hash: [u8; 32],
    /// Its block.
    pub block_number: u64,
    /// The block's time, in ms since the epoch.
    pub committed_at_ms: u64,
    /// Per asset, in asset order: every balance plus every withdrawal debited and not yet paid.
    pub totals: Vec<Amount>,
}

/// The liability state as plain data, for a snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiabilitiesState {
    /// Every account's non-zero flows, by account and asset.
    pub flows: Vec<((Address, AssetIndex), AccountFlows)>,
    /// How many roots are recorded (the epoch recorded next).
    pub roots_recorded: u64,
    /// The newest recorded root.
    pub newest_root: Option<LiabilityRootRecord>,
}

/// Why a root was not recorded: it is not the vault's next epoch, it is built before the
/// previous root's journal position, or it lacks an asset's total.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootOutOfOrder;

/// Flows per account and asset, and the roots recorded.
#[derive(Clone, Debug, Default)]
pub struct Liabilities {
    flows: BTreeMap<(Address, AssetIndex), AccountFlows>,
    roots_recorded: u64,
    newest_root: Option<LiabilityRootRecord>,
}

impl Liabilities {
    /// The state as plain data.
    pub fn state(&self) -> LiabilitiesState {
        LiabilitiesState {
            flows: self.flows.iter().map(|(key, flows)| (*key, *flows)).collect(),
            roots_recorded: self.roots_recorded,
            newest_root: self.newest_root.clone(),
        }
    }

    /// Restored from its state; refuses an entry listed twice or out of order.
    pub fn restore(state: LiabilitiesState) -> Result<Liabilities, String> {
        let mut flows = BTreeMap::new();
        for (key, entry) in state.flows {
            if flows.last_key_value().is_some_and(|(last, _)| *last >= key) {
                return Err("liability flows out of order".into());
            }
            flows.insert(key, entry);
        }
        Ok(Liabilities {
            flows,
            roots_recorded: state.roots_recorded,
            newest_root: state.newest_root,
        })
    }

    /// An account's flows of an asset (zeros when none).
    pub fn flows(&self, account: &Address, asset: AssetIndex) -> AccountFlows {
        self.flows.get(&(*account, asset)).copied().unwrap_or_default()
    }

    /// How many roots are recorded: the epoch the next one must carry.
    pub fn roots_recorded(&self) -> u64 {
        self.roots_recorded
    }

    /// The newest recorded root.
    pub fn newest_root(&self) -> Option<&LiabilityRootRecord> {
        self.newest_root.as_ref()
    }

    /// Whether a credit of `amount` fits the account's count (checked before anything changes).
    pub(crate) fn credit_fits(&self, account: &Address, asset: AssetIndex, amount: Amount) -> bool {
        self.flows(account, asset)
            .credited_deposits
            .checked_add(amount)
            .is_some()
    }

    /// Whether a debit of `amount` fits the account's count.
    pub(crate) fn debit_fits(&self, account: &Address, asset: AssetIndex, amount: Amount) -> bool {
        self.flows(account, asset)
            .debited_withdrawals
            .checked_add(amount)
            .is_some()
    }

    /// Counts a credited deposit; the caller checked [`Self::credit_fits`].
    pub(crate) fn count_credit(&mut self, account: &Address, asset: AssetIndex, amount: Amount) {
        let entry = self.flows.entry((*account, asset)).or_default();
        entry.credited_deposits = entry
            .credited_deposits
            .checked_add(amount)
            .expect("invariant: checked by credit_fits");
    }

    /// Counts a debited withdrawal; the caller checked [`Self::debit_fits`].
    pub(crate) fn count_debit(&mut self, account: &Address, asset: AssetIndex, amount: Amount) {
        let entry = self.flows.entry((*account, asset)).or_default();
        entry.debited_withdrawals = entry
            .debited_withdrawals
            .checked_add(amount)
            .expect("invariant: checked by debit_fits");
    }

    /// Takes back a debit whose withdrawal failed: it was never paid, and is credited back.
    pub(crate) fn uncount_debit(&mut self, account: &Address, asset: AssetIndex, amount: Amount) {
        let entry = self.flows.entry((*account, asset)).or_default();
        entry.debited_withdrawals = entry
            .debited_withdrawals
            .checked_sub(amount)
            .expect("invariant: a failed withdrawal was counted when it was debited");
        if *entry == AccountFlows::default() {
            self.flows.remove(&(*account, asset));
        }
    }

    /// Records a root the vault committed; it must be the next epoch, at a journal position not
    /// before the previous root's, with a total for every asset.
    pub(crate) fn record_root(
        &mut self,
        record: LiabilityRootRecord,
        asset_count: usize,
    ) -> Result<(), RootOutOfOrder> {
        if record.epoch != self.roots_recorded {
            return Err(RootOutOfOrder);
        }
        if record.totals.len() != asset_count
            || self
                .newest_root
                .as_ref()
                .is_some_and(|newest| record.journal_sequence < newest.journal_sequence)
        {
            return Err(RootOutOfOrder);
        }
        self.roots_recorded += 1;
        self.newest_root = Some(record);
        Ok(())
    }

    /// Every (account, asset) with a non-zero balance or flow, in account then asset order.
    pub fn entries(&self, ledger: &Ledger) -> Vec<LiabilityEntry> {
        let mut entries = Vec::with_capacity(self.flows.len());
        for (account, balances) in ledger.accounts_sorted() {
            for (index, balance) in balances.iter().enumerate() {
                let asset = AssetIndex(u16::try_from(index).expect("assets fit u16"));
                let flows = self.flows(account, asset);
                let total = balance.total();
                if !total.is_zero() || flows != AccountFlows::default() {
                    entries.push(LiabilityEntry {
                        account: *account,
                        asset,
                        balance: total,
                        flows,
                    });
                }
            }
        }
        entries
    }

    /// Feeds the whole state to a hash, in a fixed order.
    pub(crate) fn hash_into(&self, hasher: &mut StateHasher) {
        hasher.update((self.flows.len() as u64).to_be_bytes());
        for ((account, asset), flows) in &self.flows {
            hasher.update(account.as_bytes());
            hasher.update(asset.0.to_be_bytes());
            hasher.update(flows.credited_deposits.units().to_be_bytes());
            hasher.update(flows.debited_withdrawals.units().to_be_bytes());
        }
        hasher.update(self.roots_recorded.to_be_bytes());
        if let Some(root) = &self.newest_root {
            hasher.update(root.epoch.to_be_bytes());
            hasher.update(root.root);
            hasher.update(root.journal_sequence.to_be_bytes());
            hasher.update(root.tx_hash);
            hasher.update(root.block_number.to_be_bytes());
            hasher.update(root.committed_at_ms.to_be_bytes());
            for total in &root.totals {
                hasher.update(total.units().to_be_bytes());
            }
        }
    }

    /// Checks that, per asset, credited deposits minus debited withdrawals equal the ledger's
    /// net deposits (on a vault chain every credit and debit goes through both), and that every
    /// account with flows is in the ledger.
    pub(crate) fn check_against(&self, ledger: &Ledger) -> Result<(), String> {
        let mut credited = vec![0u128; ledger.asset_count()];
        let mut debited = vec![0u128; ledger.asset_count()];
        for ((account, asset), flows) in &self.flows {
            if ledger.slot(account).is_none() {
                return Err(format!("account {account} has flows and no ledger entry"));
            }
            let index = usize::from(asset.0);
            credited[index] = credited[index]
                .checked_add(flows.credited_deposits.units())
                .ok_or("credited deposits overflow")?;
            debited[index] = debited[index]
                .checked_add(flows.debited_withdrawals.units())
                .ok_or("debited withdrawals overflow")?;
        }
        for index in 0..ledger.asset_count() {
            let ledger_net = ledger.all_net_deposits()[index].units();
            if ledger_net.checked_add(debited[index]) != Some(credited[index]) {
                return Err(format!(
                    "asset {index}: credited {} minus debited {} is not the net deposits {ledger_net}",
                    credited[index], debited[index]
                ));
            }
        }
        Ok(())
    }
}
