//! What custody checks against the chain before it credits or pays anything: that each token's
//! `decimals()` is the configuration's (and the native asset has 18), that a journal that is
//! empty is not started against a vault that has already paid withdrawals (a fresh venue there
//! would owe again what was paid; the operator restores the journal from its backup), and that
//! the vault is version 2 as contract version 5 has it, whose terms it reads once. A vault of
//! version 1 (no roots: nothing would force a payment, and nothing bounds what the operator
//! pays), one that answers `rootCount()` and not `depositedTokens()` (an earlier draft whose exit
//! does not hold), or one without `requestPeriod()` (an earlier version 2 where no account can
//! ask for a withdrawal on chain) is refused.
//!
//! At start, [`Custodians::start`](crate::Custodians::start) runs the checks once: a mismatch
//! refuses the start. When the node cannot be reached then, the watcher runs them before its
//! first scan, and until they pass nothing is credited, paid or sent for a deposit; a mismatch
//! found then halts custody on the chain. This module changes nothing on the venue.

use alloy::eips::BlockId;
use alloy::primitives::B256;

use super::node::NodeError;
use super::vault::{chain_address, DexdVaultV2};
use super::{VaultChain, VaultRootTerms};

/// The decimals of every EVM chain's native asset (wei).
const NATIVE_DECIMALS: u32 = 18;

/// Why the checks did not pass.
#[derive(Debug)]
pub enum PreflightError {
    /// The node could not answer: the checks are to be run again.
    Node(NodeError),
    /// The configuration or the journal does not fit the chain: custody must not go on.
    Refused(String),
}

impl From<NodeError> for PreflightError {
    fn from(error: NodeError) -> PreflightError {
        PreflightError::Node(error)
    }
}

/// Runs every check against the chain; `journal_empty` says whether the chain's journal held
/// nothing but its configuration when custody started.
pub async fn check_against_chain(vault: &VaultChain, journal_empty: bool) -> Result<(), PreflightError> {
    check_decimals(vault).await?;
    let terms = read_root_terms(vault).await?;
    let _ = vault.root_terms.set(terms);
    if journal_empty {
        check_nothing_paid(vault).await?;
    }
    Ok(())
}

/// The vault's terms; an asset the vault does not list is logged, since its deposits would be
/// refused.
async fn read_root_terms(vault: &VaultChain) -> Result<Option<VaultRootTerms>, PreflightError> {
    let latest = BlockId::latest();
    let node_vault = vault.node.vault();
    let refuse = |what: &str| {
        PreflightError::Refused(format!(
            "the vault {} {what}; deploy the current version 2 (dexd vault deploy)",
            dexd_crypto::checksummed(&vault.config.vault)
        ))
    };
    match vault.node.view(node_vault, DexdVaultV2::rootCountCall {}, latest).await {
        Ok(_) => {}
        Err(NodeError::Reverted { .. }) => {
            return Err(refuse(
                "has no liability roots (version 1): nothing would force a withdrawal to be paid",
            ))
        }
        Err(error) => return Err(error.into()),
    }
    match vault
        .node
        .view(node_vault, DexdVaultV2::depositedTokensCall {}, latest)
        .await
    {
        Ok(_) => {}
        Err(NodeError::Reverted { .. }) => {
            return Err(refuse(
                "has liability roots but not the list of deposited tokens: it is an earlier draft of version 2, \
                 whose exit does not hold",
            ))
        }
        Err(error) => return Err(error.into()),
    }
    let request_period_s =
        match vault
            .node
            .view(node_vault, DexdVaultV2::requestPeriodCall {}, latest)
            .await
        {
            Ok(period) => period,
            Err(NodeError::Reverted { .. }) => return Err(refuse(
                "takes no withdrawal requested on chain: it is an earlier version 2, from which the operator could \
                 keep an account's funds by doing nothing",
            )),
            Err(error) => return Err(error.into()),
        };
    let challenge_period_s = vault
        .node
        .view(node_vault, DexdVaultV2::challengePeriodCall {}, latest)
        .await?;
    let max_root_age_s = vault
        .node
        .view(node_vault, DexdVaultV2::maxRootAgeCall {}, latest)
        .await?;
    for asset in &vault.assets {
        let token = asset
            .token
            .as_ref()
            .map_or(alloy::primitives::Address::ZERO, chain_address);
        if !vault
            .node
            .view(node_vault, DexdVaultV2::listedCall { token }, latest)
            .await?
        {
            tracing::error!(
                chain_id = vault.chain_id,
                asset = asset.symbol,
                "the vault does not list this asset's token: its deposits are refused until the owner lists it \
                 (dexd vault list-token)"
            );
        }
    }
    Ok(Some(VaultRootTerms {
        challenge_period_s,
        max_root_age_s,
        request_period_s,
    }))
}

async fn check_decimals(vault: &VaultChain) -> Result<(), PreflightError> {
    for asset in &vault.assets {
        let on_chain = match &asset.token {
            None => NATIVE_DECIMALS,
            Some(token) => u32::from(vault.node.decimals(chain_address(token)).await.map_err(|error| {
                match error {
                    // A contract that does not answer decimals() is not a token the venue can hold.
                    NodeError::Reverted { .. } => PreflightError::Refused(format!(
                        "asset {}: its token {} does not answer decimals()",
                        asset.symbol,
                        dexd_crypto::checksummed(token)
                    )),
                    other => PreflightError::Node(other),
                }
            })?),
        };
        if on_chain != asset.decimals {
            let place = asset.token.as_ref().map_or_else(
                || "the chain's native asset".to_string(),
                |token| format!("its token {}", dexd_crypto::checksummed(token)),
            );
            return Err(PreflightError::Refused(format!(
                "asset {} has {} decimals in the configuration, and {place} has {on_chain} on chain",
                asset.symbol, asset.decimals
            )));
        }
    }
    Ok(())
}

/// An empty journal against a vault with any `Withdrawn` event since `start_block` is refused.
async fn check_nothing_paid(vault: &VaultChain) -> Result<(), PreflightError> {
    let head = vault.node.head().await?;
    let range_blocks = vault.config.max_log_range_blocks.max(1);
    let mut from = vault.config.start_block;
    while from <= head {
        let to = head.min(from.saturating_add(range_blocks - 1));
        if let Some((transaction, block)) = vault.node.first_withdrawn_event(from, to).await? {
            return Err(PreflightError::Refused(paid_already(vault, transaction, block)));
        }
        from = to + 1;
    }
    Ok(())
}

fn paid_already(vault: &VaultChain, transaction: B256, block: u64) -> String {
    format!(
        "the journal is empty, and the vault {} has already paid withdrawals (the first in transaction {transaction}, \
         block {block}): a fresh journal would owe them again; restore the journal from its backup",
        dexd_crypto::checksummed(&vault.config.vault)
    )
}
