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

/// An account's dense position in the ledger, so that the hot path indexes a vector instead of
/// hashing a 20-byte address. Slots are never reused.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AccountSlot(u32);

impl AccountSlot {
    /// The slot's position.
    pub fn index(self) -> usize {
        self.0 as usize
    }

    /// The slot at a position; only meaningful for positions the ledger handed out.
    pub fn from_index(index: usize) -> AccountSlot {
        AccountSlot(u32::try_from(index).expect("slots fit u32"))
    }
}

#[derive(Clone, Debug)]
struct AccountEntry {
    address: Address,
    balances: Box<[Balance]>,
}

/// All balances of one chain.
#[derive(Clone, Debug)]
pub struct Ledger {
    slots: FxHashMap<Address, AccountSlot>,
    accounts: Vec<AccountEntry>,
    asset_count: usize,
    net_deposits: Vec<Amount>,
    max_accounts: usize,
}

impl Ledger {
    /// An empty ledger for `asset_count` assets and at most `max_accounts` accounts.
    pub fn new(asset_count: usize, max_accounts: usize) -> Ledger {
        Ledger {
            slots: FxHashMap::default(),
            accounts: Vec::new(),
            asset_count,
            net_deposits: vec![Amount::ZERO; asset_count],
            max_accounts,
        }
    }

    /// A ledger restored from its accounts in slot order and its net deposits per asset.
    /// Refuses an account listed twice or a balance row of the wrong width.
    pub fn restore(
        asset_count: usize,
        max_accounts: usize,
        accounts: Vec<(Address, Vec<Balance>)>,
        net_deposits: Vec<Amount>,
    ) -> Result<Ledger, String> {
        if net_deposits.len() != asset_count {
            return Err("net deposits for another number of assets".into());
        }
        let mut ledger = Ledger::new(asset_count, max_accounts);
        ledger.net_deposits = net_deposits;
        for (address, balances) in accounts {
            if balances.len() != asset_count {
                return Err(format!("account {address} has balances for another number of assets"));
            }
            let slot = AccountSlot(u32::try_from(ledger.accounts.len()).map_err(|_| "too many accounts")?);
            if ledger.slots.insert(address, slot).is_some() {
                return Err(format!("account {address} is listed twice"));
            }
            ledger.accounts.push(AccountEntry {
                address,
                balances: balances.into_boxed_slice(),
            });
        }
        Ok(ledger)
    }

    /// Every account in slot order with its balances, for a snapshot.
    pub fn accounts_in_slot_order(&self) -> impl Iterator<Item = (&Address, &[Balance])> {
        self.accounts.iter().map(|entry| (&entry.address, &entry.balances[..]))
    }

    /// Net deposits of every asset, in asset order.
    pub fn all_net_deposits(&self) -> &[Amount] {
        &self.net_deposits
    }

    /// The slot of a known account.
    pub fn slot(&self, account: &Address) -> Option<AccountSlot> {
        self.slots.get(account).copied()
    }

    /// The slot of an account, adding it when new; refused past the account limit unless
    /// `beyond_limit` (for accounts that must always be payable, such as the fee account).
    pub fn slot_or_insert(&mut self, account: &Address, beyond_limit: bool) -> Result<AccountSlot, LedgerError> {
        if let Some(slot) = self.slots.get(account) {
            return Ok(*slot);
        }
        if !beyond_limit && self.accounts.len() >= self.max_accounts {
            return Err(LedgerError::TooManyAccounts);
        }
        let slot = AccountSlot(u32::try_from(self.accounts.len()).map_err(|_| LedgerError::TooManyAccounts)?);
        self.accounts.push(AccountEntry {
            address: *account,
            balances: vec![Balance::default(); self.asset_count].into_boxed_slice(),
        });
        self.slots.insert(*account, slot);
        Ok(slot)
    }

    /// The address behind a slot.
    pub fn address(&self, slot: AccountSlot) -> Address {
        self.accounts[slot.0 as usize].address
    }

    /// The balance of an account in an asset; zero for an account never seen.
    pub fn balance(&self, account: &Address, asset: AssetIndex) -> Balance {
        self.slot(account)
            .map(|slot| self.balance_at(slot, asset))
            .unwrap_or_default()
    }

    /// The balance behind a slot.
    pub fn balance_at(&self, slot: AccountSlot, asset: AssetIndex) -> Balance {
        self.accounts[slot.0 as usize].balances[usize::from(asset.0)]
    }

    /// Deposits minus withdrawals of an asset.
    pub fn net_deposits(&self, asset: AssetIndex) -> Amount {
        self.net_deposits[usize::from(asset.0)]
    }

    /// How many assets each account has a balance in.
    pub fn asset_count(&self) -> usize {
        self.asset_count
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
            .map(|entry| (&entry.address, &entry.balances[..]))
            .collect();
        accounts.sort_unstable_by_key(|(address, _)| **address);
        accounts
    }

    /// Credits a deposit to the available balance. A new account past the account limit is
    /// refused unless `beyond_account_limit` (funds that already arrived in the vault on chain
    /// must be credited whatever the limit).
    pub fn deposit(
        &mut self,
        account: &Address,
        asset: AssetIndex,
        amount: Amount,
        beyond_account_limit: bool,
    ) -> Result<Balance, LedgerError> {
        let index = usize::from(asset.0);
        let net = self.net_deposits[index]
            .checked_add(amount)
            .ok_or(LedgerError::Overflow)?;
        let slot = self.slot_or_insert(account, beyond_account_limit)?;
        let balance = self.balance_mut(slot, asset);
        // No account holds more than the asset's net deposits, so this add cannot overflow.
        balance.available = balance
            .available
            .checked_add(amount)
            .expect("invariant: a balance is at most the asset's deposits");
        let result = *balance;
        self.net_deposits[index] = net;
        Ok(result)
    }

    /// Debits a withdrawal from the available balance.
    pub fn withdraw(&mut self, account: &Address, asset: AssetIndex, amount: Amount) -> Result<Balance, LedgerError> {
        let slot = self.slot(account).ok_or(LedgerError::InsufficientBalance)?;
        let balance = self.balance_mut(slot, asset);
        balance.available = balance
            .available
            .checked_sub(amount)
            .ok_or(LedgerError::InsufficientBalance)?;
        let result = *balance;
        let index = usize::from(asset.0);
        self.net_deposits[index] = self.net_deposits[index]
            .checked_sub(amount)
            .expect("invariant: withdrawals never exceed deposits");
        Ok(result)
    }

    /// Moves `amount` from available to locked.
    ///
    /// Here and in [`Ledger::unlock`] the balance is written as one value, not field by field:
    /// the command's balance event reads it whole right after, and a wide read of data written
    /// by narrower stores cannot be forwarded from them and waits for them to reach the cache
    /// (written field by field, the peer harness's static workload ran at 2.4 M messages a
    /// second in place of 3.2 to 3.5; BENCHMARKS.md, 2026-11-29).
    pub fn lock(&mut self, slot: AccountSlot, asset: AssetIndex, amount: Amount) -> Result<(), LedgerError> {
        let balance = self.balance_mut(slot, asset);
        *balance = Balance {
            available: balance
                .available
                .checked_sub(amount)
                .ok_or(LedgerError::InsufficientBalance)?,
            locked: balance.locked.checked_add(amount).expect("invariant: total fits"),
        };
        Ok(())
    }

    /// Moves `amount` from locked back to available. Releasing more than is locked is a bug.
    pub fn unlock(&mut self, slot: AccountSlot, asset: AssetIndex, amount: Amount) {
        let balance = self.balance_mut(slot, asset);
        *balance = Balance {
            available: balance.available.checked_add(amount).expect("invariant: total fits"),
            locked: balance
                .locked
                .checked_sub(amount)
                .expect("invariant: an unlock never exceeds the lock"),
        };
    }

    /// Moves `amount` out of `from`'s locked balance into `to`'s available balance. Money moving
    /// inside the ledger leaves the asset's total unchanged.
    pub fn transfer_locked(&mut self, from: AccountSlot, to: AccountSlot, asset: AssetIndex, amount: Amount) {
        let source = self.balance_mut(from, asset);
        source.locked = source
            .locked
            .checked_sub(amount)
            .expect("invariant: a payment never exceeds the payer's lock");
        let target = self.balance_mut(to, asset);
        target.available = target
            .available
            .checked_add(amount)
            .expect("invariant: a balance is at most the asset's deposits");
    }

    /// Moves `amount` of `from`'s available balance to `to`'s available balance (a transfer
    /// between subaccounts): the asset's total is unchanged. Refused, changing nothing, when
    /// `from` has less available.
    pub fn move_available(
        &mut self,
        from: AccountSlot,
        to: AccountSlot,
        asset: AssetIndex,
        amount: Amount,
    ) -> Result<(), LedgerError> {
        let source = self.balance_mut(from, asset);
        source.available = source
            .available
            .checked_sub(amount)
            .ok_or(LedgerError::InsufficientBalance)?;
        let target = self.balance_mut(to, asset);
        target.available = target
            .available
            .checked_add(amount)
            .expect("invariant: a balance is at most the asset's deposits");
        Ok(())
    }

    /// Checks conservation: for every asset the sum of all totals equals net deposits.
    pub fn check_conservation(&self) -> Result<(), String> {
        let mut sums = vec![0u128; self.asset_count];
        for entry in &self.accounts {
            for (index, balance) in entry.balances.iter().enumerate() {
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

    fn balance_mut(&mut self, slot: AccountSlot, asset: AssetIndex) -> &mut Balance {
        &mut self.accounts[slot.0 as usize].balances[usize::from(asset.0)]
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
        ledger.deposit(&ALICE, ETH, Amount::from_units(100), false).unwrap();
        let alice = ledger.slot(&ALICE).unwrap();
        let bob = ledger.slot_or_insert(&BOB, false).unwrap();
        ledger.lock(alice, ETH, Amount::from_units(60)).unwrap();
        assert_eq!(
            ledger.lock(alice, ETH, Amount::from_units(41)),
            Err(LedgerError::InsufficientBalance)
        );
        ledger.transfer_locked(alice, bob, ETH, Amount::from_units(50));
        ledger.unlock(alice, ETH, Amount::from_units(10));
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
        ledger.deposit(&ALICE, ETH, Amount::from_units(5), false).unwrap();
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
        ledger
            .deposit(&ALICE, ETH, Amount::from_units(u128::MAX), false)
            .unwrap();
        assert_eq!(
            ledger.deposit(&ALICE, ETH, Amount::from_units(1), false),
            Err(LedgerError::Overflow)
        );
        assert_eq!(
            ledger.deposit(&BOB, ETH, Amount::ZERO, false),
            Err(LedgerError::TooManyAccounts)
        );
        ledger.check_conservation().unwrap();
    }
}
