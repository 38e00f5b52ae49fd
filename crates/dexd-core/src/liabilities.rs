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

use std::collections::{BTreeMap, BTreeSet, VecDeque};

use crate::ledger::{Balance, Ledger};
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

/// One entry of the liability tree: what the venue owes an account in one token.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiabilityEntry {
    /// The account.
    pub account: Address,
    /// The token: one of the chain's assets, or a token the chain does not list.
    pub token: LiabilityToken,
    /// The account's total (available + locked).
    pub balance: Amount,
    /// Its flows through the vault.
    pub flows: AccountFlows,
}

/// Who made a root the vault holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootOrigin {
    /// The venue's own tree at the root's journal position has this root, deposit count and
    /// totals.
    Venue = 0,
    /// It does not (a stolen operator key, a bug): never served, never an exit root the venue
    /// stands behind, and withdrawals stop while it could become the exit root.
    Foreign = 1,
}

/// Where a recorded root stands, as the confirmed chain shows.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum RootStanding {
    /// Within its challenge period: it may still be vetoed.
    Challengeable = 0,
    /// Vetoed: never an exit root.
    Vetoed = 1,
    /// Past its challenge period without a veto: it stays, and the exit root is it or a later
    /// one.
    Final = 2,
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
    /// How many of the vault's deposits the tree covers (ids `0 .. deposit_count - 1`).
    pub deposit_count: u64,
    /// The transaction that committed it.
    pub tx_hash: [u8; 32],
    /// Its block.
    pub block_number: u64,
    /// The block's time, in ms since the epoch.
    pub committed_at_ms: u64,
    /// When its challenge period ends, in ms of chain time.
    pub final_after_ms: u64,
    /// Whether the venue made it.
    pub origin: RootOrigin,
    /// Per asset, in asset order: every balance plus every withdrawal debited and not yet paid
    /// (the venue's own totals; empty for a foreign root).
    pub totals: Vec<Amount>,
}

/// A recorded root and where it stands.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RecordedRoot {
    /// The root as recorded.
    pub record: LiabilityRootRecord,
    /// Vetoed, final, or neither yet.
    pub standing: RootStanding,
}

/// What the vault's freeze fixed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VaultFreeze {
    /// The epoch of the exit root, or `None` when the vault froze without one.
    pub exit_epoch: Option<u64>,
}

/// The most roots kept in the state that are not settled behind a final root of the venue's
/// (each within its challenge period, or a foreign root not yet superseded): past it a root is
/// refused, and the committer halts until roots settle. At one root every five minutes and a
/// challenge period of a day, about 300 are kept.
pub const MAX_UNSETTLED_ROOTS: usize = 16_384;

/// A token an entry is in: one of the chain's assets, or a token the chain does not list (a
/// deposit the vault took and the venue could not credit, owed back by the exit).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LiabilityToken {
    /// One of the chain's assets.
    Asset(AssetIndex),
    /// Another token, by its contract address.
    Unlisted(Address),
}

/// The liability state as plain data, for a snapshot.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct LiabilitiesState {
    /// Every account's non-zero flows, by account and asset.
    pub flows: Vec<((Address, AssetIndex), AccountFlows)>,
    /// Every (account, token) with a vault deposit the ledger did not credit.
    pub uncredited: Vec<(Address, LiabilityToken)>,
    /// How many roots are recorded (the epoch recorded next).
    pub roots_recorded: u64,
    /// The roots kept: from the newest final root of the venue's on, oldest first.
    pub roots: Vec<RecordedRoot>,
    /// The vault's freeze, once recorded.
    pub freeze: Option<VaultFreeze>,
}

/// Why a root's record, standing or the freeze was not recorded: it is not the vault's next
/// epoch, a venue root lacks an asset's total, the root is not kept or already settled, a
/// root is declared final before an earlier one, or too many roots are unsettled.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RootOutOfOrder;

/// Why a pending withdrawal is not paid yet (see [`Liabilities::withdrawal_wait`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WithdrawalWait {
    /// No root of the venue's covers its debit yet.
    Root,
    /// A root covers it and is within its challenge period, which ends at `payable_after_ms`.
    Challenge {
        /// When the covering root's challenge period ends, in ms of chain time.
        payable_after_ms: u64,
    },
    /// A final root covers it: the payer sends it (or waits while a foreign root is in the
    /// vault, or the vault is frozen).
    Payment,
}

/// Flows per account and asset, and the roots recorded.
#[derive(Clone, Debug, Default)]
pub struct Liabilities {
    flows: BTreeMap<(Address, AssetIndex), AccountFlows>,
    uncredited: BTreeSet<(Address, LiabilityToken)>,
    roots_recorded: u64,
    /// From the newest final root of the venue's on (older ones can never be an exit root
    /// again, nor stop a payment), at most [`MAX_UNSETTLED_ROOTS`] after it.
    roots: VecDeque<RecordedRoot>,
    freeze: Option<VaultFreeze>,
}

impl Liabilities {
    /// The state as plain data.
    pub fn state(&self) -> LiabilitiesState {
        LiabilitiesState {
            flows: self.flows.iter().map(|(key, flows)| (*key, *flows)).collect(),
            uncredited: self.uncredited.iter().copied().collect(),
            roots_recorded: self.roots_recorded,
            roots: self.roots.iter().cloned().collect(),
            freeze: self.freeze,
        }
    }

    /// Restored from its state; refuses an entry listed twice or out of order, and roots that
    /// are not consecutive epochs ending before `roots_recorded`.
    pub fn restore(state: LiabilitiesState) -> Result<Liabilities, String> {
        let mut flows = BTreeMap::new();
        for (key, entry) in state.flows {
            if flows.last_key_value().is_some_and(|(last, _)| *last >= key) {
                return Err("liability flows out of order".into());
            }
            flows.insert(key, entry);
        }
        let mut uncredited = BTreeSet::new();
        for key in state.uncredited {
            if uncredited.last().is_some_and(|last| *last >= key) {
                return Err("uncredited deposits out of order".into());
            }
            uncredited.insert(key);
        }
        let roots: VecDeque<RecordedRoot> = state.roots.into();
        let consecutive = roots
            .iter()
            .zip(roots.iter().skip(1))
            .all(|(earlier, later)| earlier.record.epoch + 1 == later.record.epoch);
        if !consecutive
            || roots
                .back()
                .is_some_and(|newest| newest.record.epoch + 1 != state.roots_recorded)
            || roots.len() > MAX_UNSETTLED_ROOTS + 1
        {
            return Err("liability roots are not the consecutive newest epochs".into());
        }
        Ok(Liabilities {
            flows,
            uncredited,
            roots_recorded: state.roots_recorded,
            roots,
            freeze: state.freeze,
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

    /// The newest recorded root, whoever made it and wherever it stands.
    pub fn newest_root(&self) -> Option<&LiabilityRootRecord> {
        self.roots.back().map(|root| &root.record)
    }

    /// The roots kept, oldest first: the newest final root of the venue's, and every root
    /// after it.
    pub fn roots(&self) -> impl DoubleEndedIterator<Item = &RecordedRoot> {
        self.roots.iter()
    }

    /// A kept root by epoch.
    pub fn root(&self, epoch: u64) -> Option<&RecordedRoot> {
        let oldest = self.roots.front()?.record.epoch;
        self.roots.get(usize::try_from(epoch.checked_sub(oldest)?).ok()?)
    }

    /// The newest root the venue made that is not vetoed: the one its proofs are served from
    /// by default (it becomes the exit root if the vault froze now, once final).
    pub fn newest_venue_root(&self) -> Option<&LiabilityRootRecord> {
        self.roots
            .iter()
            .rev()
            .find(|root| root.record.origin == RootOrigin::Venue && root.standing != RootStanding::Vetoed)
            .map(|root| &root.record)
    }

    /// The newest final root of the venue's.
    fn newest_final_venue_root(&self) -> Option<&LiabilityRootRecord> {
        self.roots
            .iter()
            .rev()
            .find(|root| root.record.origin == RootOrigin::Venue && root.standing == RootStanding::Final)
            .map(|root| &root.record)
    }

    /// A foreign root that could still become the exit root: not vetoed, and with no final root
    /// of the venue's after it. While there is one, nothing is paid.
    pub fn unresolved_foreign_root(&self) -> Option<&LiabilityRootRecord> {
        let settled_through = self.newest_final_venue_root().map(|root| root.epoch);
        self.roots
            .iter()
            .find(|root| {
                root.record.origin == RootOrigin::Foreign
                    && root.standing != RootStanding::Vetoed
                    && settled_through.is_none_or(|epoch| root.record.epoch > epoch)
            })
            .map(|root| &root.record)
    }

    /// The journal position up to which debited withdrawals may be paid: that of the newest
    /// final root of the venue's, unless a foreign root could still become the exit root or the
    /// vault is frozen (then `None`: nothing is paid). A withdrawal paid under this rule is
    /// counted as debited in every root that can become the exit root, so no exit pays it
    /// again.
    pub fn payable_through(&self) -> Option<u64> {
        if self.freeze.is_some() || self.unresolved_foreign_root().is_some() {
            return None;
        }
        self.newest_final_venue_root().map(|root| root.journal_sequence)
    }

    /// What a withdrawal debited at journal position `debited_at_sequence` waits for.
    pub fn withdrawal_wait(&self, debited_at_sequence: u64) -> WithdrawalWait {
        let covering = self.roots.iter().find(|root| {
            root.record.origin == RootOrigin::Venue
                && root.standing != RootStanding::Vetoed
                && root.record.journal_sequence >= debited_at_sequence
        });
        match covering {
            None => WithdrawalWait::Root,
            Some(root) if root.standing == RootStanding::Final => WithdrawalWait::Payment,
            Some(root) => WithdrawalWait::Challenge {
                payable_after_ms: root.record.final_after_ms,
            },
        }
    }

    /// The vault's freeze, once recorded.
    pub fn freeze(&self) -> Option<VaultFreeze> {
        self.freeze
    }

    /// Every (account, token) with a vault deposit the ledger did not credit.
    pub fn uncredited(&self) -> impl Iterator<Item = &(Address, LiabilityToken)> {
        self.uncredited.iter()
    }

    /// Notes a vault deposit that took its number without being credited: its pair gets a leaf
    /// in every later tree, so that an exit can pay it back.
    pub(crate) fn note_uncredited(&mut self, account: Address, token: LiabilityToken) {
        self.uncredited.insert((account, token));
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

    /// Records a root the vault committed; it must be the next epoch, and a root of the
    /// venue's must carry a total for every asset.
    pub(crate) fn record_root(
        &mut self,
        record: LiabilityRootRecord,
        asset_count: usize,
    ) -> Result<(), RootOutOfOrder> {
        if record.epoch != self.roots_recorded
            || (record.origin == RootOrigin::Venue && record.totals.len() != asset_count)
            || self.roots.len() > MAX_UNSETTLED_ROOTS
            || self.freeze.is_some()
        {
            return Err(RootOutOfOrder);
        }
        self.roots_recorded += 1;
        self.roots.push_back(RecordedRoot {
            record,
            standing: RootStanding::Challengeable,
        });
        Ok(())
    }

    /// Records that a root was vetoed, or that it is past its challenge period without a veto
    /// (final): each once, and final only after every earlier root is settled. A final root of
    /// the venue's lets go of every root before it.
    pub(crate) fn settle_root(&mut self, epoch: u64, standing: RootStanding) -> Result<(), RootOutOfOrder> {
        if standing == RootStanding::Challengeable {
            return Err(RootOutOfOrder);
        }
        let oldest = self.roots.front().ok_or(RootOutOfOrder)?.record.epoch;
        let index = usize::try_from(epoch.checked_sub(oldest).ok_or(RootOutOfOrder)?).map_err(|_| RootOutOfOrder)?;
        if self
            .roots
            .get(index)
            .is_none_or(|root| root.standing != RootStanding::Challengeable)
        {
            return Err(RootOutOfOrder);
        }
        if standing == RootStanding::Final
            && self
                .roots
                .iter()
                .take(index)
                .any(|root| root.standing == RootStanding::Challengeable)
        {
            return Err(RootOutOfOrder);
        }
        self.roots[index].standing = standing;
        if standing == RootStanding::Final && self.roots[index].record.origin == RootOrigin::Venue {
            self.roots.drain(..index);
        }
        Ok(())
    }

    /// Records the vault's freeze, once.
    pub(crate) fn record_freeze(&mut self, freeze: VaultFreeze) -> Result<(), RootOutOfOrder> {
        if self.freeze.is_some() {
            return Err(RootOutOfOrder);
        }
        self.freeze = Some(freeze);
        Ok(())
    }

    /// Every (account, token) with a non-zero balance or flow, or a deposit the vault took and
    /// the ledger did not credit (a zero entry, unless the pair has one anyway): in account
    /// order, then the chain's assets in order, then other tokens by address.
    ///
    /// `leaf_of` names the account whose leaf holds an account's funds: a subaccount's owner, or
    /// the account itself; the balances of accounts that share a leaf are added.
    pub fn entries(&self, ledger: &Ledger, leaf_of: impl Fn(&Address) -> Address) -> Vec<LiabilityEntry> {
        let mut folded: Vec<(Address, Vec<Amount>)> = ledger
            .accounts_sorted()
            .into_iter()
            .map(|(account, balances)| (leaf_of(account), balances.iter().map(Balance::total).collect()))
            .collect();
        // Stable: an owner and its subaccounts end up adjacent, in one order whatever the slots.
        folded.sort_by_key(|(leaf, _)| *leaf);
        folded.dedup_by(|later, kept| {
            if later.0 != kept.0 {
                return false;
            }
            for (total, more) in kept.1.iter_mut().zip(&later.1) {
                *total = total
                    .checked_add(*more)
                    .expect("invariant: an owner's funds are at most the asset's deposits");
            }
            true
        });

        let mut entries = Vec::with_capacity(self.flows.len() + self.uncredited.len());
        let mut uncredited = self.uncredited.iter().peekable();
        let mut push_uncredited_before =
            |entries: &mut Vec<LiabilityEntry>, bound: Option<(Address, LiabilityToken)>| {
                while let Some(&&(account, token)) = uncredited.peek() {
                    if bound.is_some_and(|bound| (account, token) >= bound) {
                        break;
                    }
                    uncredited.next();
                    if entries
                        .last()
                        .is_none_or(|last: &LiabilityEntry| (last.account, last.token) != (account, token))
                    {
                        entries.push(LiabilityEntry {
                            account,
                            token,
                            balance: Amount::ZERO,
                            flows: AccountFlows::default(),
                        });
                    }
                }
            };
        for (account, totals) in &folded {
            for (index, total) in totals.iter().enumerate() {
                let asset = AssetIndex(u16::try_from(index).expect("assets fit u16"));
                let flows = self.flows(account, asset);
                let total = *total;
                let token = LiabilityToken::Asset(asset);
                if !total.is_zero() || flows != AccountFlows::default() {
                    push_uncredited_before(&mut entries, Some((*account, token)));
                    entries.push(LiabilityEntry {
                        account: *account,
                        token,
                        balance: total,
                        flows,
                    });
                }
            }
        }
        push_uncredited_before(&mut entries, None);
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
        hasher.update((self.uncredited.len() as u64).to_be_bytes());
        for (account, token) in &self.uncredited {
            hasher.update(account.as_bytes());
            match token {
                LiabilityToken::Asset(asset) => {
                    hasher.update([0]);
                    hasher.update(asset.0.to_be_bytes());
                }
                LiabilityToken::Unlisted(address) => {
                    hasher.update([1]);
                    hasher.update(address.as_bytes());
                }
            }
        }
        hasher.update(self.roots_recorded.to_be_bytes());
        hasher.update((self.roots.len() as u64).to_be_bytes());
        for RecordedRoot { record, standing } in &self.roots {
            hasher.update(record.epoch.to_be_bytes());
            hasher.update(record.root);
            hasher.update(record.journal_sequence.to_be_bytes());
            hasher.update(record.deposit_count.to_be_bytes());
            hasher.update(record.tx_hash);
            hasher.update(record.block_number.to_be_bytes());
            hasher.update(record.committed_at_ms.to_be_bytes());
            hasher.update(record.final_after_ms.to_be_bytes());
            hasher.update([record.origin as u8, *standing as u8]);
            hasher.update((record.totals.len() as u64).to_be_bytes());
            for total in &record.totals {
                hasher.update(total.units().to_be_bytes());
            }
        }
        match self.freeze {
            None => hasher.update([0]),
            Some(VaultFreeze { exit_epoch }) => {
                hasher.update([1]);
                hasher.update(exit_epoch.map_or(u64::MAX, |epoch| epoch).to_be_bytes());
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
