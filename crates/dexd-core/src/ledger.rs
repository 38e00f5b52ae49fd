//! Balances: per account and asset, what is available and what is locked by open orders.
//!
//! Every operation is checked and atomic on its own: it either applies whole or returns an
//! error and changes nothing. The ledger also counts, per asset, deposits minus withdrawals, so
//! that conservation (the sum of all totals equals that count) can be checked at any moment.
//! It does not know orders or prices: [`crate::engine`] decides what to lock and move.

use rustc_hash::FxHashMap;

use crate::money::{Address, Amount, AssetIndex};

/// One account's holding of one asset.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Balance {
    /// What can be spent or locked now.
    pub available: Amount,
    /// What open orders hold.
    pub locked: Amount,
}

impl Balance {
    /// `available + locked`. Both are bounded by the asset's deposits, which fit a `u128`.
    pub fn total(&self) -> Amount {
        self.available
            .checked_add(self.locked)
            .expect("invariant: a balance total never exceeds the asset's deposits")
    }
}

/// Why a ledger operation could not apply.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LedgerError {
    /// The available balance is below what is needed.
    InsufficientBalance,
    /// The result would not fit in a `u128`.
    Overflow,
    /// The account is new and the ledger already holds its limit of accounts.
    TooManyAccounts,
}

/// All balances of one chain.
#[derive(Clone, Debug)]
pub struct Ledger {
    accounts: FxHashMap<Address, Box<[Balance]>>,
    asset_count: usize,
    net_deposits: Vec<Amount>,
    max_accounts: usize,
}

impl Ledger {
    /// An empty ledger for `asset_count` assets and at most `max_accounts` accounts.
    pub fn new(asset_count: usize, max_accounts: usize) -> Ledger {
        Ledger {
            accounts: FxHashMap::default(),
            asset_count,
            net_deposits: vec![Amount::ZERO; asset_count],
            max_accounts,
        }
    }

    /// The balance of an account in an asset; zero for an account never seen.
    pub fn balance(&self, account: &Address, asset: AssetIndex) -> Balance {
        self.accounts
            .get(account)
            .map(|balances| balances[usize::from(asset.0)])
            .unwrap_or_default()
    }

    /// Deposits minus withdrawals of an asset.
    pub fn net_deposits(&self, asset: AssetIndex) -> Amount {
        self.net_deposits[usize::from(asset.0)]
    }

    /// How many accounts the ledger holds.
    pub fn account_count(&self) -> usize {
        self.accounts.len()
    }

    /// Every account with its balances, in address order (for hashing and checks).
    pub fn accounts_sorted(&self) -> Vec<(&Address, &[Balance])> {
        let mut accounts: Vec<_> = self
            .accounts
            .iter()
            .map(|(address, balances)| (address, &balances[..]))
            .collect();
        accounts.sort_unstable_by_key(|(address, _)| **address);
        accounts
    }

    /// Credits a deposit to the available balance.
    pub fn deposit(&mut self, account: &Address, asset: AssetIndex, amount: Amount) -> Result<Balance, LedgerError> {
        let index = usize::from(asset.0);
        let net = self.net_deposits[index]
            .checked_add(amount)
            .ok_or(LedgerError::Overflow)?;
        if !self.accounts.contains_key(account) && self.accounts.len() >= self.max_accounts {
            return Err(LedgerError::TooManyAccounts);
        }
        let asset_count = self.asset_count;
        let balances = self
            .accounts
            .entry(*account)
            .or_insert_with(|| vec![Balance::default(); asset_count].into_boxed_slice());
        // No account holds more than the asset's net deposits, so this add cannot overflow.
        balances[index].available = balances[index]
            .available
            .checked_add(amount)
            .expect("invariant: a balance is at most the asset's deposits");
        self.net_deposits[index] = net;
        Ok(balances[index])
    }

    /// Debits a withdrawal from the available balance.
    pub fn withdraw(&mut self, account: &Address, asset: AssetIndex, amount: Amount) -> Result<Balance, LedgerError> {
        let index = usize::from(asset.0);
        let balance = self
            .balance_mut(account, index)
            .ok_or(LedgerError::InsufficientBalance)?;
        balance.available = balance
            .available
            .checked_sub(amount)
            .ok_or(LedgerError::InsufficientBalance)?;
        let result = *balance;
        self.net_deposits[index] = self.net_deposits[index]
            .checked_sub(amount)
            .expect("invariant: withdrawals never exceed deposits");
        Ok(result)
    }

    /// Moves `amount` from available to locked.
    pub fn lock(&mut self, account: &Address, asset: AssetIndex, amount: Amount) -> Result<(), LedgerError> {
        if amount.is_zero() {
            return Ok(());
        }
        let balance = self
            .balance_mut(account, usize::from(asset.0))
            .ok_or(LedgerError::InsufficientBalance)?;
        balance.available = balance
            .available
            .checked_sub(amount)
            .ok_or(LedgerError::InsufficientBalance)?;
        balance.locked = balance.locked.checked_add(amount).expect("invariant: total fits");
        Ok(())
    }

    /// Moves `amount` from locked back to available. Releasing more than is locked is a bug.
    pub fn unlock(&mut self, account: &Address, asset: AssetIndex, amount: Amount) {
        if amount.is_zero() {
            return;
        }
        let balance = self
            .balance_mut(account, usize::from(asset.0))
            .expect("invariant: an account with a lock exists");
        balance.locked = balance
            .locked
            .checked_sub(amount)
            .expect("invariant: an unlock never exceeds the lock");
        balance.available = balance.available.checked_add(amount).expect("invariant: total fits");
    }

    /// Moves `amount` out of `from`'s locked balance into `to`'s available balance.
    pub fn transfer_locked(&mut self, from: &Address, to: &Address, asset: AssetIndex, amount: Amount) {
        if amount.is_zero() {
            return;
        }
        let index = usize::from(asset.0);
        let source = self
            .balance_mut(from, index)
            .expect("invariant: a payer with a lock exists");
        source.locked = source
            .locked
            .checked_sub(amount)
            .expect("invariant: a payment never exceeds the payer's lock");
        self.credit_available(to, asset, amount);
    }

    /// Adds to an account's available balance, creating the account when it is new. Used only
    /// for money moving inside the ledger (fills and fees), so the asset total is unchanged and
    /// the account limit does not apply: a counterparty or the fee account must always be paid.
    pub fn credit_available(&mut self, account: &Address, asset: AssetIndex, amount: Amount) {
        let asset_count = self.asset_count;
        let balances = self
            .accounts
            .entry(*account)
            .or_insert_with(|| vec![Balance::default(); asset_count].into_boxed_slice());
        let index = usize::from(asset.0);
        balances[index].available = balances[index]
            .available
            .checked_add(amount)
            .expect("invariant: a balance is at most the asset's deposits");
    }

    /// Checks conservation: for every asset the sum of all totals equals net deposits.
    pub fn check_conservation(&self) -> Result<(), String> {
        let mut sums = vec![0u128; self.asset_count];
        for balances in self.accounts.values() {
            for (index, balance) in balances.iter().enumerate() {
                sums[index] = sums[index]
                    .checked_add(balance.total().units())
                    .ok_or("sum of balances overflows")?;
            }
        }
        for (index, sum) in sums.iter().enumerate() {
            if *sum != self.net_deposits[index].units() {
                return Err(format!(
                    "asset {index}: balances sum to {sum} but net deposits are {}",
                    self.net_deposits[index].units()
                ));
            }
        }
        Ok(())
    }

    fn balance_mut(&mut self, account: &Address, index: usize) -> Option<&mut Balance> {
        self.accounts.get_mut(account).map(|balances| &mut balances[index])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const ALICE: Address = Address::from_bytes([1; 20]);
    const BOB: Address = Address::from_bytes([2; 20]);
    const ETH: AssetIndex = AssetIndex(0);

    #[test]
    fn locks_and_transfers_conserve_money() {
        let mut ledger = Ledger::new(2, 10);
        ledger.deposit(&ALICE, ETH, Amount::from_units(100)).unwrap();
        ledger.lock(&ALICE, ETH, Amount::from_units(60)).unwrap();
        assert_eq!(
            ledger.lock(&ALICE, ETH, Amount::from_units(41)),
            Err(LedgerError::InsufficientBalance)
        );
        ledger.transfer_locked(&ALICE, &BOB, ETH, Amount::from_units(50));
        ledger.unlock(&ALICE, ETH, Amount::from_units(10));
        assert_eq!(
            ledger.balance(&ALICE, ETH),
            Balance {
                available: Amount::from_units(50),
                locked: Amount::ZERO
            }
        );
        assert_eq!(ledger.balance(&BOB, ETH).available, Amount::from_units(50));
        ledger.check_conservation().unwrap();
    }

    #[test]
    fn a_refused_withdrawal_changes_nothing() {
        let mut ledger = Ledger::new(1, 10);
        ledger.deposit(&ALICE, ETH, Amount::from_units(5)).unwrap();
        assert_eq!(
            ledger.withdraw(&ALICE, ETH, Amount::from_units(6)),
            Err(LedgerError::InsufficientBalance)
        );
        assert_eq!(
            ledger.withdraw(&BOB, ETH, Amount::from_units(1)),
            Err(LedgerError::InsufficientBalance)
        );
        assert_eq!(ledger.balance(&ALICE, ETH).available, Amount::from_units(5));
        assert_eq!(ledger.net_deposits(ETH), Amount::from_units(5));
        ledger.check_conservation().unwrap();
    }

    #[test]
    fn refuses_new_accounts_past_the_limit_and_overflowing_deposits() {
        let mut ledger = Ledger::new(1, 1);
        ledger.deposit(&ALICE, ETH, Amount::from_units(u128::MAX)).unwrap();
        assert_eq!(
            ledger.deposit(&ALICE, ETH, Amount::from_units(1)),
            Err(LedgerError::Overflow)
        );
        assert_eq!(
            ledger.deposit(&BOB, ETH, Amount::ZERO),
            Err(LedgerError::TooManyAccounts)
        );
        ledger.check_conservation().unwrap();
    }
}
