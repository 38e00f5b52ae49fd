//! A deposit that the venue sends for an account with the account's key (`POST
//! /portfolio/deposit` with `privateKey` on a vault chain): checks the account's funds on chain,
//! sends `approve` when the allowance is short and waits for it, signs the `deposit` (or
//! `depositNative`), journals it as pending under its hash, and only then hands it to the node.
//! The credit itself comes from the watcher once the `Deposited` event is confirmed; a deposit
//! that reverts or is dropped is failed by the watcher.
//!
//! The key's signer lives for this call only. Nothing is journaled before every check passed;
//! a node that cannot be reached before that point changes nothing.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use dexd_core::{Address, Amount, AssetIndex, ChainDepositSubmission, Command, Event, Transfer};

use super::node::{Fees, Node, NodeError, SignedTransaction, TransactionTerms};
use super::vault::{DexdVault, Erc20};
use super::VaultChain;
use dexd_store::WriteError;

/// How often the deposit path polls for the `approve` it sent, and for how long.
const APPROVE_POLL: Duration = Duration::from_millis(100);
const APPROVE_TIMEOUT: Duration = Duration::from_secs(60);

/// A lock per account that has a deposit under way: one account's deposit waiting for its
/// approve to be mined (up to a minute) holds up that account's next deposit, no one else's.
/// An account's entry lives while a deposit of it holds or awaits the lock, so the map holds at
/// most as many entries as deposits in flight (bounded by the server's connection limit).
#[derive(Default)]
pub(crate) struct DepositLocks {
    by_account: parking_lot::Mutex<HashMap<ChainAddress, Arc<tokio::sync::Mutex<()>>>>,
}

/// An account's deposit lock, held; its entry is dropped with the last holder or waiter.
pub(crate) struct DepositLockGuard<'a> {
    locks: &'a DepositLocks,
    account: ChainAddress,
    lock: Arc<tokio::sync::Mutex<()>>,
    guard: Option<tokio::sync::OwnedMutexGuard<()>>,
}

impl DepositLocks {
    /// Waits for `account`'s deposit lock.
    pub(crate) async fn lock(&self, account: ChainAddress) -> DepositLockGuard<'_> {
        let lock = Arc::clone(self.by_account.lock().entry(account).or_default());
        let mut held = DepositLockGuard {
            locks: self,
            account,
            lock: Arc::clone(&lock),
            guard: None,
        };
        // Should this wait be cancelled (the client went away), the guard still cleans up.
        held.guard = Some(lock.lock_owned().await);
        held
    }
}

impl Drop for DepositLockGuard<'_> {
    fn drop(&mut self) {
        self.guard = None;
        let mut by_account = self.locks.by_account.lock();
        // Ours, the map's and the owned guard's (now dropped): nobody else holds or awaits it.
        if Arc::strong_count(&self.lock) == 2 {
            by_account.remove(&self.account);
        }
    }
}

/// Why a deposit was not sent.
#[derive(Debug)]
pub enum DepositError {
    /// The account lacks the token, or the native asset for gas, on chain.
    InsufficientFundsOnChain(String),
    /// The node could not be reached, or refused for a reason that is not the account's.
    ChainUnavailable(String),
    /// The venue could not journal the deposit (nothing was sent).
    Venue(WriteError),
}

impl From<NodeError> for DepositError {
    fn from(error: NodeError) -> DepositError {
        DepositError::ChainUnavailable(error.to_string())
    }
}

impl VaultChain {
    /// Sends a deposit of `amount` of `asset` from `account` (whose key `signer` is), and
    /// journals it as pending; returns the pending transfer (its id is the transaction hash).
    pub async fn deposit_with_key(
        &self,
        signer: PrivateKeySigner,
        account: Address,
        asset: AssetIndex,
        amount: u128,
    ) -> Result<Transfer, DepositError> {
        if !self.is_checked_against_chain() {
            // The amount in units comes from the configuration's decimals, not yet checked.
            return Err(DepositError::ChainUnavailable(
                "the venue has not yet checked its configuration against the chain; try again".into(),
            ));
        }
        let node = &self.node;
        let from = signer.address();
        let _one_at_a_time = self.deposit_locks.lock(from).await;
        let vault = node.vault();
        let token = self.token_of_asset(asset);
        let units = U256::from(amount);
        let symbol = self.asset_symbol(asset);
        let held = node.balance(token, from, BlockId::latest()).await?;
        if held < units {
            return Err(DepositError::InsufficientFundsOnChain(format!(
                "the account holds {held} of the smallest unit of {symbol} on chain, and the deposit needs {units}"
            )));
        }
        let (max_fee_per_gas, max_priority_fee_per_gas) = node.fee_estimate().await?;
        let fee_caps = (max_fee_per_gas, max_priority_fee_per_gas);
        let (input, value) = match token {
            Some(token) => {
                approve_if_short(node, &signer, token, units, fee_caps).await?;
                (DexdVault::depositCall { token, amount: units }.abi_encode(), U256::ZERO)
            }
            None => (DexdVault::depositNativeCall {}.abi_encode(), units),
        };
        let gas = match node.estimate_gas(from, vault, &input, value).await {
            Ok(gas) => gas,
            // A paused vault, or a token that refuses: not the account's doing.
            Err(NodeError::Reverted { message, .. }) => {
                return Err(DepositError::ChainUnavailable(format!(
                    "the vault refuses the deposit: {message}"
                )))
            }
            Err(error) => return Err(error.into()),
        };
        let (nonce, fees) = paid_for(node, from, gas, value, fee_caps).await?;
        let signed = node
            .sign(
                &signer,
                TransactionTerms {
                    to: TxKind::Call(vault),
                    input,
                    value,
                    nonce,
                    fees,
                    blobs: None,
                },
            )
            .await?;
        drop(signer);
        self.journal_and_broadcast(signed, account, asset, amount).await
    }

    /// Journals a signed deposit as pending under its hash, then hands it to the node.
    async fn journal_and_broadcast(
        &self,
        signed: SignedTransaction,
        account: Address,
        asset: AssetIndex,
        amount: u128,
    ) -> Result<Transfer, DepositError> {
        let tx_hash = signed.sent.hash.0;
        // Journaled before the node sees it: the watcher can then never credit it before the
        // venue knows it was sent for this account.
        let events = self
            .submit(Command::SubmitChainDeposit(ChainDepositSubmission {
                tx_hash,
                account,
                asset,
                amount: Amount::from_units(amount),
            }))
            .await
            .map_err(DepositError::Venue)?;
        let pending = events
            .iter()
            .find_map(|event| match event {
                Event::TransferApplied(transfer) => Some(transfer.clone()),
                _ => None,
            })
            .expect("invariant: a submitted deposit is recorded as a transfer");
        if let Err(error) = self.node.broadcast(&signed).await {
            // Recorded as failed at once; should the node have taken it after all, the watcher
            // credits it when it is mined, as any deposit.
            let _ = self.submit(Command::FailChainDeposit { tx_hash }).await;
            return Err(match error {
                NodeError::Refused(message) if message.contains("insufficient funds") => {
                    DepositError::InsufficientFundsOnChain(message)
                }
                other => other.into(),
            });
        }
        Ok(pending)
    }
}

/// Sends `approve(vault, units)` from the signer when its allowance to the vault is short of
/// `units`, and waits for it to be mined: a deposit estimated before the approve is mined fails.
async fn approve_if_short(
    node: &Node,
    signer: &PrivateKeySigner,
    token: ChainAddress,
    units: U256,
    fee_caps: (u128, u128),
) -> Result<(), DepositError> {
    let from = signer.address();
    let vault = node.vault();
    if node.allowance(token, from, vault).await? >= units {
        return Ok(());
    }
    let approve = Erc20::approveCall {
        spender: vault,
        amount: units,
    }
    .abi_encode();
    let gas = node.estimate_gas(from, token, &approve, U256::ZERO).await?;
    let (nonce, fees) = paid_for(node, from, gas, U256::ZERO, fee_caps).await?;
    let sent = node
        .send(
            signer,
            TransactionTerms {
                to: TxKind::Call(token),
                input: approve,
                value: U256::ZERO,
                nonce,
                fees,
                blobs: None,
            },
        )
        .await?;
    let receipt = node.wait_for_receipt(sent.hash, APPROVE_POLL, APPROVE_TIMEOUT).await?;
    if !receipt.succeeded {
        return Err(DepositError::ChainUnavailable(format!(
            "the token refused the approve {}",
            sent.hash
        )));
    }
    Ok(())
}

/// The nonce and fees of a transaction from `from` of `gas` carrying `value`, once the account
/// is known to hold the native asset for both at the fee caps `(max fee, max priority fee)`.
async fn paid_for(
    node: &Node,
    from: ChainAddress,
    gas: u64,
    value: U256,
    (max_fee_per_gas, max_priority_fee_per_gas): (u128, u128),
) -> Result<(u64, Fees), DepositError> {
    let needed = U256::from(gas) * U256::from(max_fee_per_gas) + value;
    if node.balance(None, from, BlockId::latest()).await? < needed {
        return Err(DepositError::InsufficientFundsOnChain(
            "the account lacks the chain's native asset to pay the deposit's gas".to_string(),
        ));
    }
    let nonce = node.pending_nonce(from).await?;
    let fees = Fees {
        max_fee_per_gas,
        max_priority_fee_per_gas,
        gas_limit: gas,
    };
    Ok((nonce, fees))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn deposit_locks_hold_up_one_account_only_and_leave_no_entry_behind() {
        let locks = DepositLocks::default();
        let (alice, bob) = (ChainAddress::repeat_byte(1), ChainAddress::repeat_byte(2));
        let alice_held = locks.lock(alice).await;
        // Another account's lock is free; the same account's waits.
        let bob_held = tokio::time::timeout(Duration::from_millis(100), locks.lock(bob)).await;
        assert!(bob_held.is_ok(), "bob waited for alice");
        drop(bob_held);
        let second = tokio::time::timeout(Duration::from_millis(100), locks.lock(alice)).await;
        assert!(second.is_err(), "alice's second deposit did not wait for her first");
        assert_eq!(locks.by_account.lock().len(), 1, "only alice's entry is left");
        drop(alice_held);
        assert!(locks.by_account.lock().is_empty(), "an entry outlived its deposits");
        let again = tokio::time::timeout(Duration::from_millis(100), locks.lock(alice)).await;
        assert!(again.is_ok());
    }
}
