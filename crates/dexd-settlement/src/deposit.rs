//! A deposit that the venue sends for an account with the account's key (`POST
//! /portfolio/deposit` with `privateKey` on a vault chain): checks the account's funds on chain,
//! sends `approve` when the allowance is short and waits for it, signs the `deposit` (or
//! `depositNative`), journals it as pending under its hash, and only then hands it to the node.
//! The credit itself comes from the watcher once the `Deposited` event is confirmed; a deposit
//! that reverts or is dropped is failed by the watcher.
//!
//! The key's signer lives for this call only. Nothing is journaled before every check passed;
//! a node that cannot be reached before that point changes nothing.

use std::time::Duration;

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use dexd_core::{Address, Amount, AssetIndex, ChainDepositSubmission, Command, Event, Transfer};

use super::node::{Fees, Node, NodeError, SignedTransaction};
use super::vault::{DexdVault, Erc20};
use super::VaultChain;
use dexd_store::WriteError;

/// How often the deposit path polls for the `approve` it sent, and for how long.
const APPROVE_POLL: Duration = Duration::from_millis(100);
const APPROVE_TIMEOUT: Duration = Duration::from_secs(60);

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
        let _one_at_a_time = self.deposit_lock.lock().await;
        let node = &self.node;
        let from = signer.address();
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
            .sign(&signer, TxKind::Call(vault), input, value, nonce, fees)
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
        .send(signer, TxKind::Call(token), approve, U256::ZERO, nonce, fees)
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
