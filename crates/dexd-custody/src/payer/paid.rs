//! Confirming a withdrawal the vault shows paid (a request it shows served), whichever
//! transaction paid it (the payer's own, a replacement, or one sent before a restart).
//!
//! The transaction is found first among those known to have carried it (the one the journal
//! recorded, and every one of the flight in progress): one that was mined and whose block holds
//! the withdrawal's own event from it (the vault skips a withdrawal its account refuses, so a
//! transaction that carried it need not have paid it); only when none of them did is the vault's
//! `Withdrawn` (`RequestServed`) event looked for, backwards from the head in ranges of
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
            if let Some(receipt) = vault.node.receipt(hash).await? {
                let block = receipt.block_number;
                if receipt.succeeded && payment_event(vault, key, pending, (block, block)).await? == Some((hash, block))
                {
                    return Ok(Some((hash, block)));
                }
            }
        }
        let oldest = vault
            .config
            .start_block
            .max(head.saturating_sub(WITHDRAWN_SEARCH_LOOKBACK_BLOCKS));
        let mut range_blocks = vault.config.max_log_range_blocks.max(1);
        let mut to = head;
        while to >= oldest {
            let from = oldest.max(to.saturating_sub(range_blocks - 1));
            match payment_event(vault, key, pending, (from, to)).await {
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

/// The event of the vault's payment of a withdrawal (`Withdrawn`), or its serving of a request
/// made on chain (`RequestServed`), in blocks `from..=to`: its transaction and block.
async fn payment_event(
    vault: &VaultChain,
    key: &WithdrawalKey,
    pending: &PendingWithdrawal,
    (from, to): (u64, u64),
) -> Result<Option<(B256, u64)>, NodeError> {
    match pending.origin.request_id() {
        Some(request_id) => vault.node.request_served_event(request_id, from, to).await,
        None => {
            vault
                .node
                .withdrawn_event(chain_address(&key.account), withdrawal_id(key), from, to)
                .await
        }
    }
}
