//! The payer's transaction in flight: followed until mined with enough confirmations, and
//! replaced at its nonce with higher fees when it is not mined in time.
//!
//! Every transaction sent at the nonce is followed, not only the newest: the one a replacement
//! was meant to replace may be mined first, and then every later replacement is refused ("nonce
//! too low"). When none of them has a receipt but the operator's mined nonce has passed this one,
//! the nonce was spent by a transaction the node no longer shows: the flight ends and the vault
//! says, at the next poll, which withdrawals are paid. It does not decide what to pay.

use std::time::Instant;

use alloy::eips::{BlockId, BlockNumberOrTag};
use alloy::primitives::{Address as ChainAddress, TxKind, B256, U256};
use dexd_core::{Command, WithdrawalKey};

use super::{submit, PayError, Payer};
use crate::node::{BlobTerms, Fees, NodeError, Receipt, SentTransaction, TransactionTerms};
use crate::vault::chain_address;
use crate::VaultChain;

/// How much a replacement raises both fees over the transaction it replaces, in percent (nodes
/// refuse a replacement that pays less than 10 % more).
pub const REPLACEMENT_FEE_RAISE_PERCENT: u128 = 25;

/// The raise for a transaction carrying blobs: the blob pools of geth and reth take a
/// replacement only at 100 % more of every fee.
pub const BLOB_REPLACEMENT_FEE_RAISE_PERCENT: u128 = 100;

/// The most transactions sent at one nonce (the first and its replacements) that are followed;
/// a further replacement is not sent, and the flight waits for one of these.
pub const MAX_TRANSACTIONS_PER_NONCE: usize = 16;

/// What a transaction in flight does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum FlightPurpose {
    /// It pays signed withdrawals (`withdrawBatch`).
    Withdrawals,
    /// It serves withdrawals requested on chain (`serveRequests`).
    Requests,
    /// It commits a liability root (`commitRoot`).
    Root,
}

/// The payer's transaction in flight.
pub(super) struct InFlight {
    /// Every transaction sent at the nonce, oldest first; the last one has the highest fees.
    sent: Vec<SentTransaction>,
    pub(super) keys: Vec<WithdrawalKey>,
    calldata: Vec<u8>,
    /// The blobs every transaction at the nonce carries (a root's data), if any.
    blobs: Option<BlobTerms>,
    sent_at: Instant,
    purpose: FlightPurpose,
}

impl InFlight {
    pub(super) fn new(sent: SentTransaction, keys: Vec<WithdrawalKey>, calldata: Vec<u8>) -> InFlight {
        InFlight {
            sent: vec![sent],
            keys,
            calldata,
            blobs: None,
            sent_at: Instant::now(),
            purpose: FlightPurpose::Withdrawals,
        }
    }

    /// The same flight, its transactions carrying `blobs`.
    pub(super) fn with_blobs(mut self, blobs: Option<BlobTerms>) -> InFlight {
        self.blobs = blobs;
        self
    }

    /// The same flight, doing `purpose`.
    pub(super) fn for_purpose(mut self, purpose: FlightPurpose) -> InFlight {
        self.purpose = purpose;
        self
    }

    fn newest(&self) -> SentTransaction {
        *self.sent.last().expect("invariant: a flight has sent a transaction")
    }

    /// The hashes of every transaction sent at the nonce.
    pub(super) fn hashes(&self) -> impl Iterator<Item = B256> + '_ {
        self.sent.iter().map(|sent| sent.hash)
    }
}

impl Payer {
    /// Follows the transaction in flight: confirmed once one of its transactions is mined with
    /// enough blocks on top; forgotten when that one reverted, or when the nonce was spent by
    /// none of them (the vault decides at the next poll); replaced when not mined in time.
    pub(super) async fn follow_in_flight(&mut self, vault: &VaultChain) -> Result<(), PayError> {
        let flight = self.in_flight.as_ref().expect("checked by the caller");
        let nonce = flight.newest().nonce;
        for hash in flight.hashes().collect::<Vec<B256>>().into_iter().rev() {
            if let Some(receipt) = vault.node.receipt(hash).await? {
                return self.settle_mined(vault, hash, receipt).await;
            }
        }
        if vault.node.latest_nonce(self.key.address()).await? > nonce {
            tracing::warn!(
                chain_id = vault.chain_id,
                nonce,
                "the payer's nonce was spent by none of its known transactions; the vault is asked again"
            );
            if flight.purpose == FlightPurpose::Root {
                self.roots.reverted();
            }
            self.in_flight = None;
            return Ok(());
        }
        let flight = self.in_flight.as_ref().expect("checked by the caller");
        if flight.sent_at.elapsed().as_millis() as u64 >= vault.config.replace_after_ms
            && flight.sent.len() < MAX_TRANSACTIONS_PER_NONCE
        {
            return self.replace(vault).await;
        }
        Ok(())
    }

    /// A transaction of the flight was mined: its withdrawals are confirmed once it has
    /// `confirmations` blocks on top; if it reverted, they are looked at again.
    async fn settle_mined(&mut self, vault: &VaultChain, hash: B256, receipt: Receipt) -> Result<(), PayError> {
        let purpose = self.in_flight.as_ref().expect("checked by the caller").purpose;
        if !receipt.succeeded {
            match purpose {
                FlightPurpose::Withdrawals | FlightPurpose::Requests => {
                    // Each is sent again alone: whatever made the transaction revert holds up
                    // only the one it belongs to.
                    tracing::warn!(chain_id = vault.chain_id, tx_hash = %hash, "a withdrawal transaction reverted; its withdrawals are set aside and sent again alone");
                    let keys = self.in_flight.as_ref().expect("checked by the caller").keys.clone();
                    self.not_paid_by(vault, hash, &keys).await?;
                }
                FlightPurpose::Root => {
                    tracing::warn!(chain_id = vault.chain_id, tx_hash = %hash, "a liability root's transaction reverted; a root is sent again when due")
                }
            }
            self.roots.reverted();
            self.in_flight = None;
            return Ok(());
        }
        if purpose == FlightPurpose::Root {
            // Mined: the nonce is spent and withdrawals may go on. The root is recorded from the
            // vault once it holds it with `confirmations` on top (and sent again, when due, if
            // a reorganisation takes it away).
            self.roots.mined_in(receipt.block_number);
            self.in_flight = None;
            return Ok(());
        }
        let head = vault.node.head().await?;
        if vault.confirmed_head(head).await? < Some(receipt.block_number) {
            return Ok(());
        }
        let flight = self.in_flight.as_ref().expect("checked by the caller");
        let keys = flight.keys.clone();
        let still_pending = still_pending(vault, &keys);
        // The vault skips a withdrawal its account refuses: what the transaction paid is read at
        // its block, and the rest is set aside.
        let paid = self
            .paid_at(vault, purpose, &still_pending, receipt.block_number)
            .await?;
        let mut unpaid = Vec::new();
        let paid: Vec<WithdrawalKey> = still_pending
            .into_iter()
            .zip(paid)
            .filter_map(|(key, paid)| {
                if !paid {
                    unpaid.push(key);
                }
                paid.then_some(key)
            })
            .collect();
        if !paid.is_empty() {
            vault.note_block_time(receipt.block_number).await?;
            submit(
                vault,
                Command::ConfirmWithdrawals {
                    tx_hash: hash.0,
                    block_number: receipt.block_number,
                    withdrawals: paid,
                },
            )
            .await?;
        }
        if !unpaid.is_empty() {
            tracing::warn!(
                chain_id = vault.chain_id,
                tx_hash = %hash,
                skipped = unpaid.len(),
                "the vault skipped withdrawals of this transaction (their accounts refused them on chain); they are set \
                 aside and sent again alone"
            );
            self.not_paid_by(vault, hash, &unpaid).await?;
        }
        let keys = keys.len();
        vault.update_status(|status| status.withdrawal_gas.push((keys, receipt.gas_used)));
        tracing::info!(chain_id = vault.chain_id, tx_hash = %hash, withdrawals = keys, gas_used = receipt.gas_used, "withdrawals confirmed");
        self.in_flight = None;
        Ok(())
    }

    /// Replaces the transaction in flight at its nonce with fees raised by
    /// [`REPLACEMENT_FEE_RAISE_PERCENT`] (or the node's estimate, if higher).
    async fn replace(&mut self, vault: &VaultChain) -> Result<(), PayError> {
        let flight = self.in_flight.as_ref().expect("checked by the caller");
        let newest = flight.newest();
        let (estimate_max, estimate_priority) = vault.node.fee_estimate().await?;
        // Nodes take a blob transaction's replacement only at twice its fees (all three).
        let raise_percent = if flight.blobs.is_some() {
            BLOB_REPLACEMENT_FEE_RAISE_PERCENT
        } else {
            REPLACEMENT_FEE_RAISE_PERCENT
        };
        let raise = |fee: u128| fee.saturating_add(fee * raise_percent / 100).saturating_add(1);
        let blobs = match &flight.blobs {
            Some(blobs) => Some(BlobTerms {
                sidecar: blobs.sidecar.clone(),
                max_fee_per_blob_gas: raise(blobs.max_fee_per_blob_gas)
                    .max(vault.node.blob_base_fee().await?.saturating_mul(2)),
            }),
            None => None,
        };
        let fees = Fees {
            max_fee_per_gas: raise(newest.fees.max_fee_per_gas).max(estimate_max),
            max_priority_fee_per_gas: raise(newest.fees.max_priority_fee_per_gas).max(estimate_priority),
            gas_limit: newest.fees.gas_limit,
        };
        let replacement = match vault
            .node
            .send(
                &self.key,
                TransactionTerms {
                    to: TxKind::Call(vault.node.vault()),
                    input: flight.calldata.clone(),
                    value: U256::ZERO,
                    nonce: newest.nonce,
                    fees,
                    blobs,
                },
            )
            .await
        {
            Ok(sent) => sent,
            // One of the flight's transactions was mined meanwhile ("nonce too low"): its receipt
            // shows at the next poll, which follows them all.
            Err(NodeError::Refused(message)) => {
                tracing::info!(
                    chain_id = vault.chain_id,
                    message,
                    "a replacement was refused; following the transactions sent"
                );
                return Ok(());
            }
            Err(error) => return Err(error.into()),
        };
        tracing::info!(
            chain_id = vault.chain_id,
            replaced = %newest.hash,
            tx_hash = %replacement.hash,
            nonce = replacement.nonce,
            "a withdrawal transaction was not mined in time; replaced at the same nonce with higher fees"
        );
        let flight = self.in_flight.as_mut().expect("checked by the caller");
        flight.sent.push(replacement);
        flight.sent_at = Instant::now();
        let still_pending = still_pending(vault, &flight.keys);
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

impl Payer {
    /// Whether each of `keys` was paid (served, for requests) as of `block`.
    async fn paid_at(
        &self,
        vault: &VaultChain,
        purpose: FlightPurpose,
        keys: &[WithdrawalKey],
        block: u64,
    ) -> Result<Vec<bool>, PayError> {
        let at = BlockId::Number(BlockNumberOrTag::Number(block));
        match purpose {
            FlightPurpose::Requests => {
                let request_ids: Vec<u64> = vault.read_engine(|engine| {
                    keys.iter()
                        .map(|key| {
                            engine
                                .custody()
                                .pending_withdrawal(key)
                                .and_then(|pending| pending.origin.request_id())
                                .expect("invariant: a request in flight is pending and was asked on chain")
                        })
                        .collect()
                });
                Ok(vault.node.requests_served(&request_ids, at).await?)
            }
            FlightPurpose::Withdrawals | FlightPurpose::Root => {
                let ids: Vec<(ChainAddress, U256)> = keys
                    .iter()
                    .map(|key| (chain_address(&key.account), U256::from_be_bytes(key.withdrawal_id)))
                    .collect();
                Ok(vault.node.withdrawn_many(&ids, at).await?)
            }
        }
    }

    /// The mined transaction `hash` did not pay `keys`: each is set aside (sent again alone,
    /// later) and journaled as pending again, if it is still marked sent.
    pub(super) async fn not_paid_by(
        &mut self,
        vault: &VaultChain,
        hash: B256,
        keys: &[WithdrawalKey],
    ) -> Result<(), PayError> {
        for key in keys {
            self.set_aside(*key);
        }
        let sent: Vec<WithdrawalKey> = vault.read_engine(|engine| {
            keys.iter()
                .filter(|key| {
                    engine
                        .custody()
                        .pending_withdrawal(key)
                        .is_some_and(|pending| pending.status == dexd_core::TransferStatus::Sent)
                })
                .copied()
                .collect()
        });
        if sent.is_empty() {
            return Ok(());
        }
        submit(
            vault,
            Command::MarkWithdrawalsUnpaid {
                tx_hash: hash.0,
                withdrawals: sent,
            },
        )
        .await
    }
}

/// Those of `keys` that are still pending.
fn still_pending(vault: &VaultChain, keys: &[WithdrawalKey]) -> Vec<WithdrawalKey> {
    vault.read_engine(|engine| {
        keys.iter()
            .filter(|key| engine.custody().pending_withdrawal(key).is_some())
            .copied()
            .collect()
    })
}
