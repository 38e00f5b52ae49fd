//! Confirming a withdrawal the vault shows paid, whichever transaction paid it (the payer's own,
//! a replacement, or one sent before a restart).
//!
//! The transaction is found first among those known to have carried it (the one the journal
//! recorded, and every one of the flight in progress) by their receipts; only when none of them
//! was mined is the vault's `Withdrawn` event looked for, backwards from the head in ranges of
//! `max_log_range_blocks` (halved when the node refuses one), over at most
//! [`WITHDRAWN_SEARCH_LOOKBACK_BLOCKS`]. It never asks a node for more than a provider allows.

use alloy::primitives::B256;
use dexd_core::{Command, PendingWithdrawal, WithdrawalKey};

use super::{submit, withdrawal_id, PayError, Payer};
use crate::node::NodeError;
use crate::vault::chain_address;
use crate::VaultChain;

/// How far back from the head the `Withdrawn` event of a paid withdrawal is looked for when no
/// known transaction paid it. A payment older than this stays `sent` with a warning in the log,
/// never credited back (the vault shows it paid).
pub const WITHDRAWN_SEARCH_LOOKBACK_BLOCKS: u64 = 100_000;

impl Payer {
    /// Confirms a withdrawal the vault shows paid, once the transaction that paid it has
    /// `confirmations` blocks on top (its block is at most `confirmed_block`).
    pub(super) async fn confirm_paid(
        &self,
        vault: &VaultChain,
        key: &WithdrawalKey,
        pending: &PendingWithdrawal,
        (head, confirmed_block): (u64, u64),
    ) -> Result<(), PayError> {
        let Some((tx_hash, block_number)) = self.paying_transaction(vault, key, pending, head).await? else {
            tracing::warn!(
                chain_id = vault.chain_id,
                account = %dexd_crypto::checksummed(&key.account),
                "the vault shows a withdrawal paid, and its transaction was not found; it stays sent"
            );
            return Ok(());
        };
        if confirmed_block >= block_number {
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
        Ok(())
    }

    /// The transaction (and its block) that paid the withdrawal.
    async fn paying_transaction(
        &self,
        vault: &VaultChain,
        key: &WithdrawalKey,
        pending: &PendingWithdrawal,
        head: u64,
    ) -> Result<Option<(B256, u64)>, NodeError> {
        let in_flight = self
            .in_flight
            .iter()
            .filter(|flight| flight.keys.contains(key))
            .flat_map(|flight| flight.hashes());
        let known: Vec<B256> = pending.tx_hash.map(B256::from).into_iter().chain(in_flight).collect();
        for hash in known {
            // A successful `withdrawBatch` that carried the withdrawal paid it: the vault
            // reverts the whole batch when any of it cannot be paid.
            if let Some(receipt) = vault.node.receipt(hash).await? {
                if receipt.succeeded {
                    return Ok(Some((hash, receipt.block_number)));
                }
            }
        }
        let (account, id) = (chain_address(&key.account), withdrawal_id(key));
        let oldest = vault
            .config
            .start_block
            .max(head.saturating_sub(WITHDRAWN_SEARCH_LOOKBACK_BLOCKS));
        let mut range_blocks = vault.config.max_log_range_blocks.max(1);
        let mut to = head;
        while to >= oldest {
            let from = oldest.max(to.saturating_sub(range_blocks - 1));
            match vault.node.withdrawn_event(account, id, from, to).await {
                Ok(Some(found)) => return Ok(Some(found)),
                Ok(None) if from == 0 => break,
                Ok(None) => to = from - 1,
                Err(NodeError::Refused(_)) if to > from => range_blocks = (to - from + 1).div_ceil(2),
                Err(error) => return Err(error),
            }
        }
        Ok(None)
    }
}
