//! The withdrawal payer of one vault chain.
//!
//! Every poll it takes the oldest pending withdrawals (up to the chain's batch size) whose debit
//! the journal holds (never one the engine holds and a failed append may take back) and, before
//! any send, asks the vault which are already paid: those are confirmed once their `Withdrawn`
//! event has `confirmations` blocks on top, whatever transaction paid them (one sent before a
//! crash included). A withdrawal whose authorization expired unpaid, as a block with
//! `confirmations` on top shows, can never be paid and is failed (its amount credited back).
//! The rest are simulated as one batch (each alone when the batch would revert, to set the
//! unpayable ones aside until they expire), sent as one `withdrawBatch` from the operator's key
//! with EIP-1559 fees from the node, and journaled as sent. One transaction is in flight at a
//! time, so the operator's nonces form one sequence; one not mined within `replace_after_ms` is
//! replaced at the same nonce with higher fees.
//!
//! Every withdrawal is paid at most once because the vault refuses a paid id; it is paid at
//! least once because the payer keeps sending until it is paid or expired; and it is never both
//! paid and credited back because it is failed only when the confirmed chain proves it can no
//! longer be paid. Nothing here must survive a restart: the journal and the vault hold it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::eips::{BlockId, BlockNumberOrTag};
use alloy::primitives::{Address as ChainAddress, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{SolCall, SolInterface};
use dexd_core::{Command, PendingWithdrawal, WithdrawalKey};
use tokio::sync::watch;

use super::node::{Fees, NodeError, SentTransaction};
use super::vault::{chain_address, DexdVault, WithdrawalTerms};
use super::{pause_or_stop, VaultChain};
use dexd_store::WriteError;

/// How much a replacement raises both fees over the transaction it replaces, in percent (nodes
/// refuse a replacement that pays less than 10 % more).
pub const REPLACEMENT_FEE_RAISE_PERCENT: u128 = 25;

/// How long the payer waits for the journal to hold the pending withdrawals it read, before it
/// reads again at its next poll.
pub const DURABLE_READ_WAIT_MS: u64 = 1_000;

/// The payer's transaction in flight.
struct InFlight {
    sent: SentTransaction,
    keys: Vec<WithdrawalKey>,
    calldata: Vec<u8>,
    sent_at: Instant,
}

/// Why a poll did not finish.
#[derive(Debug)]
enum PayError {
    Node(NodeError),
    Venue(WriteError),
}

impl From<NodeError> for PayError {
    fn from(error: NodeError) -> PayError {
        PayError::Node(error)
    }
}

impl From<WriteError> for PayError {
    fn from(error: WriteError) -> PayError {
        PayError::Venue(error)
    }
}

struct Payer {
    key: PrivateKeySigner,
    operator_checked: bool,
    in_flight: Option<InFlight>,
}

/// Runs the payer until `stop`.
pub async fn run(vault: Arc<VaultChain>, key: PrivateKeySigner, mut stop: watch::Receiver<bool>) {
    let mut payer = Payer {
        key,
        operator_checked: false,
        in_flight: None,
    };
    let chain_id = vault.chain_id;
    loop {
        match payer.poll(&vault).await {
            Ok(()) => {}
            Err(PayError::Node(error)) => {
                tracing::warn!(chain_id, %error, "the withdrawal payer cannot use the node; withdrawals wait");
                vault.update_status(|status| status.node_error = Some(error.to_string()));
            }
            Err(PayError::Venue(error)) => {
                tracing::warn!(chain_id, ?error, "the withdrawal payer could not journal; retrying");
            }
        }
        if pause_or_stop(vault.poll_interval(), &mut stop).await {
            break;
        }
    }
}

fn withdrawal_id(key: &WithdrawalKey) -> U256 {
    U256::from_be_bytes(key.withdrawal_id)
}

fn terms(vault: &VaultChain, key: &WithdrawalKey, pending: &PendingWithdrawal) -> WithdrawalTerms {
    WithdrawalTerms {
        account: key.account,
        token: vault.assets[usize::from(pending.asset.0)].token,
        amount_units: pending.amount.units(),
        withdrawal_id: key.withdrawal_id,
        expiry_ms: pending.expiry_ms,
    }
}

impl Payer {
    async fn poll(&mut self, vault: &VaultChain) -> Result<(), PayError> {
        if !self.operator_checked {
            let operator = vault.node.operator().await?;
            if operator != self.key.address() {
                let message = format!(
                    "the configured operator key is {}, but the vault's operator is {operator}; withdrawals wait",
                    self.key.address()
                );
                vault.update_status(|status| status.payer_error = Some(message.clone()));
                return Err(PayError::Node(NodeError::Refused(message)));
            }
            self.operator_checked = true;
            vault.update_status(|status| status.payer_error = None);
        }
        if self.in_flight.is_some() {
            return self.follow_in_flight(vault).await;
        }
        // Only withdrawals whose debit is journaled: the engine holds a batch before the journal
        // does, and a failed append takes it back, so paying from a plain read could pay what
        // was never debited.
        let durable = vault
            .read_durable_engine(
                |engine| {
                    engine
                        .custody()
                        .pending_withdrawals()
                        .take(vault.config.max_withdrawals_per_transaction)
                        .map(|(key, pending)| (*key, pending.clone()))
                        .collect::<Vec<(WithdrawalKey, PendingWithdrawal)>>()
                },
                Duration::from_millis(DURABLE_READ_WAIT_MS),
            )
            .await;
        let Some(batch) = durable.filter(|batch| !batch.is_empty()) else {
            return Ok(());
        };
        let head = vault.node.head().await?;
        let confirmations = vault.config.confirmations;
        let ids: Vec<(ChainAddress, U256)> = batch
            .iter()
            .map(|(key, _)| (chain_address(&key.account), withdrawal_id(key)))
            .collect();
        let paid = vault.node.withdrawn_many(&ids, BlockId::latest()).await?;
        let confirmed_block = head.saturating_sub(confirmations);
        let confirmed_time_ms = match vault.node.block(confirmed_block).await? {
            Some((_, timestamp)) => timestamp.saturating_mul(1_000),
            None => return Ok(()),
        };
        let mut payable = Vec::new();
        for ((key, pending), already_paid) in batch.into_iter().zip(paid) {
            if already_paid {
                self.confirm_paid_elsewhere(vault, &key, head).await?;
            } else if confirmed_time_ms > pending.expiry_ms {
                // Past its expiry in a confirmed block: no block from there on can pay it. It
                // is failed only if, as of that block, it was not paid.
                let paid_then = vault
                    .node
                    .withdrawn_many(
                        &[(chain_address(&key.account), withdrawal_id(&key))],
                        BlockId::Number(BlockNumberOrTag::Number(confirmed_block)),
                    )
                    .await?;
                if paid_then == [false] {
                    tracing::warn!(
                        chain_id = vault.chain_id,
                        account = %dexd_crypto::checksummed(&key.account),
                        "a withdrawal expired unpaid; its amount is credited back"
                    );
                    submit(vault, Command::FailWithdrawal(key)).await?;
                }
            } else {
                payable.push((key, pending));
            }
        }
        if payable.is_empty() {
            return Ok(());
        }
        let payable = self.payable_now(vault, payable).await?;
        if payable.is_empty() {
            return Ok(());
        }
        let calldata = batch_calldata(vault, &payable);
        let gas_limit = vault
            .node
            .estimate_gas(self.key.address(), vault.node.vault(), &calldata, U256::ZERO)
            .await?;
        let (max_fee_per_gas, max_priority_fee_per_gas) = vault.node.fee_estimate().await?;
        let nonce = vault.node.pending_nonce(self.key.address()).await?;
        let fees = Fees {
            max_fee_per_gas,
            max_priority_fee_per_gas,
            gas_limit,
        };
        let sent = vault
            .node
            .send(
                &self.key,
                TxKind::Call(vault.node.vault()),
                calldata.clone(),
                U256::ZERO,
                nonce,
                fees,
            )
            .await?;
        let keys: Vec<WithdrawalKey> = payable.iter().map(|(key, _)| *key).collect();
        tracing::info!(
            chain_id = vault.chain_id,
            tx_hash = %sent.hash,
            nonce,
            withdrawals = keys.len(),
            "withdrawals sent to the vault"
        );
        self.in_flight = Some(InFlight {
            sent,
            keys: keys.clone(),
            calldata,
            sent_at: Instant::now(),
        });
        submit(
            vault,
            Command::MarkWithdrawalsSent {
                tx_hash: sent.hash.0,
                withdrawals: keys,
            },
        )
        .await
    }

    /// The withdrawals of `candidates` that the vault would pay now: all of them when the batch
    /// simulates; otherwise each that simulates alone (the others wait, logged, until they can
    /// be paid or expire).
    async fn payable_now(
        &self,
        vault: &VaultChain,
        candidates: Vec<(WithdrawalKey, PendingWithdrawal)>,
    ) -> Result<Vec<(WithdrawalKey, PendingWithdrawal)>, PayError> {
        let operator = Some(self.key.address());
        let simulate = |calldata: Vec<u8>| {
            vault
                .node
                .call(operator, vault.node.vault(), calldata, U256::ZERO, BlockId::latest())
        };
        match simulate(batch_calldata(vault, &candidates)).await {
            Ok(_) => return Ok(candidates),
            Err(NodeError::Reverted { .. }) => {}
            Err(error) => return Err(error.into()),
        }
        let mut payable = Vec::new();
        for candidate in candidates {
            let single = batch_calldata(vault, std::slice::from_ref(&candidate));
            match simulate(single).await {
                Ok(_) => payable.push(candidate),
                Err(NodeError::Reverted { data, message }) => {
                    let reason = data
                        .and_then(|data| DexdVault::DexdVaultErrors::abi_decode(&data).ok())
                        .map_or(message, |error| format!("{error:?}"));
                    tracing::warn!(
                        chain_id = vault.chain_id,
                        account = %dexd_crypto::checksummed(&candidate.0.account),
                        reason,
                        "the vault would refuse a withdrawal now; it waits until it can be paid or expires"
                    );
                }
                Err(error) => return Err(error.into()),
            }
        }
        Ok(payable)
    }

    /// Confirms a withdrawal the vault shows paid (by the payer's transaction or one from before
    /// a restart), once its `Withdrawn` event has enough confirmations.
    async fn confirm_paid_elsewhere(&self, vault: &VaultChain, key: &WithdrawalKey, head: u64) -> Result<(), PayError> {
        let found = vault
            .node
            .withdrawn_event(
                chain_address(&key.account),
                withdrawal_id(key),
                vault.config.start_block,
            )
            .await?;
        if let Some((tx_hash, block_number)) = found {
            if head >= block_number + vault.config.confirmations {
                submit(
                    vault,
                    Command::ConfirmWithdrawals {
                        tx_hash: tx_hash.0,
                        block_number,
                        withdrawals: vec![*key],
                    },
                )
                .await?;
            }
        }
        Ok(())
    }

    /// Follows the transaction in flight: confirmed once mined with enough blocks on top;
    /// forgotten when it reverted (its withdrawals are looked at again from the vault); replaced
    /// at the same nonce with higher fees when not mined in time.
    async fn follow_in_flight(&mut self, vault: &VaultChain) -> Result<(), PayError> {
        let flight = self.in_flight.as_ref().expect("checked by the caller");
        match vault.node.receipt(flight.sent.hash).await? {
            Some(receipt) if receipt.succeeded => {
                let head = vault.node.head().await?;
                if head < receipt.block_number + vault.config.confirmations {
                    return Ok(());
                }
                let still_pending: Vec<WithdrawalKey> = vault.read_engine(|engine| {
                    flight
                        .keys
                        .iter()
                        .filter(|key| engine.custody().pending_withdrawal(key).is_some())
                        .copied()
                        .collect()
                });
                let (hash, keys) = (flight.sent.hash, flight.keys.len());
                if !still_pending.is_empty() {
                    submit(
                        vault,
                        Command::ConfirmWithdrawals {
                            tx_hash: hash.0,
                            block_number: receipt.block_number,
                            withdrawals: still_pending,
                        },
                    )
                    .await?;
                }
                vault.update_status(|status| status.withdrawal_gas.push((keys, receipt.gas_used)));
                tracing::info!(chain_id = vault.chain_id, tx_hash = %hash, withdrawals = keys, gas_used = receipt.gas_used, "withdrawals confirmed");
                self.in_flight = None;
                Ok(())
            }
            Some(_) => {
                tracing::warn!(chain_id = vault.chain_id, tx_hash = %flight.sent.hash, "a withdrawal transaction reverted; its withdrawals are looked at again");
                self.in_flight = None;
                Ok(())
            }
            None if flight.sent_at.elapsed().as_millis() as u64 >= vault.config.replace_after_ms => {
                self.replace(vault).await
            }
            None => Ok(()),
        }
    }

    /// Replaces the transaction in flight at its nonce with fees raised by
    /// [`REPLACEMENT_FEE_RAISE_PERCENT`] (or the node's estimate, if higher).
    async fn replace(&mut self, vault: &VaultChain) -> Result<(), PayError> {
        let flight = self.in_flight.as_ref().expect("checked by the caller");
        let (estimate_max, estimate_priority) = vault.node.fee_estimate().await?;
        let raise = |fee: u128| {
            fee.saturating_add(fee * REPLACEMENT_FEE_RAISE_PERCENT / 100)
                .saturating_add(1)
        };
        let fees = Fees {
            max_fee_per_gas: raise(flight.sent.fees.max_fee_per_gas).max(estimate_max),
            max_priority_fee_per_gas: raise(flight.sent.fees.max_priority_fee_per_gas).max(estimate_priority),
            gas_limit: flight.sent.fees.gas_limit,
        };
        let replacement = match vault
            .node
            .send(
                &self.key,
                TxKind::Call(vault.node.vault()),
                flight.calldata.clone(),
                U256::ZERO,
                flight.sent.nonce,
                fees,
            )
            .await
        {
            Ok(sent) => sent,
            // The original was mined meanwhile ("nonce too low"): its receipt shows next poll.
            Err(NodeError::Refused(message)) => {
                tracing::info!(
                    chain_id = vault.chain_id,
                    message,
                    "a replacement was refused; following the original"
                );
                return Ok(());
            }
            Err(error) => return Err(error.into()),
        };
        tracing::info!(
            chain_id = vault.chain_id,
            replaced = %flight.sent.hash,
            tx_hash = %replacement.hash,
            nonce = replacement.nonce,
            "a withdrawal transaction was not mined in time; replaced at the same nonce with higher fees"
        );
        let keys = flight.keys.clone();
        let flight = self.in_flight.as_mut().expect("checked by the caller");
        flight.sent = replacement;
        flight.sent_at = Instant::now();
        let still_pending: Vec<WithdrawalKey> = vault.read_engine(|engine| {
            keys.iter()
                .filter(|key| engine.custody().pending_withdrawal(key).is_some())
                .copied()
                .collect()
        });
        if still_pending.is_empty() {
            return Ok(());
        }
        submit(
            vault,
            Command::MarkWithdrawalsSent {
                tx_hash: replacement.hash.0,
                withdrawals: still_pending,
            },
        )
        .await
    }
}

fn batch_calldata(vault: &VaultChain, withdrawals: &[(WithdrawalKey, PendingWithdrawal)]) -> Vec<u8> {
    DexdVault::withdrawBatchCall {
        withdrawals: withdrawals
            .iter()
            .map(|(key, pending)| terms(vault, key, pending).call_argument(&pending.signature))
            .collect(),
    }
    .abi_encode()
}

/// Journals a payer's command. A refusal means the state moved on (another path settled it),
/// which the next poll sees; only a failure to journal is an error.
async fn submit(vault: &VaultChain, command: Command) -> Result<(), PayError> {
    match vault.submit(command).await {
        Ok(_) => Ok(()),
        Err(WriteError::Rejected(rejection)) => {
            tracing::warn!(chain_id = vault.chain_id, ?rejection, "a payer's record was refused");
            Ok(())
        }
        Err(error) => Err(error.into()),
    }
}
