//! What a root's transaction carries besides the root: its data (docs/root-data.md), the leaves
//! changed since the venue's previous root and one slice of the address space, in blobs
//! (`commitRoot`) or in calldata (`commitRootWithData`), as the chain's `data` setting says.
//!
//! It builds the call and the blobs; it neither sends them nor decides when a root is due
//! (`roots.rs` does).

use std::sync::Arc;

use alloy::eips::eip4844::BlobTransactionSidecar;
use alloy::primitives::{FixedBytes, U256};
use alloy::sol_types::SolCall;

use super::PayError;
use crate::config::RootDataCarrier;
use crate::liabilities::root_blobs::{self, MAX_BLOBS_PER_ROOT};
use crate::liabilities::root_data::{slice_range, AccountRange, RootData};
use crate::liabilities::TreeAtPosition;
use crate::node::{BlobTerms, NodeError};
use crate::vault::DexdVaultV2;
use crate::VaultChain;

/// A root's call, ready to send: its calldata, and its blobs in blob mode.
pub(super) struct RootCall {
    pub(super) calldata: Vec<u8>,
    pub(super) blobs: Option<BlobTerms>,
    /// The size of the root's data, in bytes.
    pub(super) data_bytes: usize,
    /// How many accounts its data lists.
    pub(super) accounts_listed: usize,
}

/// The venue's previous root, which a root's data lists its changes against: its root and
/// tree.
pub(super) type PreviousRoot = Option<([u8; 32], Arc<TreeAtPosition>)>;

/// A root's data, built: the tree it is of, the encoded data, its blobs' sidecar when blobs
/// carry it, and how many accounts it lists.
struct BuiltData {
    tree: Arc<TreeAtPosition>,
    encoded: Vec<u8>,
    sidecar: Option<BlobTransactionSidecar>,
    accounts_listed: usize,
}

/// Lists, encodes and (for blobs) commits to a root's data. Listing a million accounts, encoding
/// them and computing the blobs' KZG commitments take seconds of CPU: off the runtime's threads.
async fn build_data(
    tree: Arc<TreeAtPosition>,
    previous: PreviousRoot,
    range: AccountRange,
    carrier: RootDataCarrier,
) -> Result<BuiltData, PayError> {
    let built = tokio::task::spawn_blocking(move || {
        let data = RootData::for_root(
            (tree.journal_sequence, tree.deposit_count, tree.root()),
            &tree.leaves,
            previous
                .as_ref()
                .map(|(root, previous_tree)| (previous_tree.leaves.as_slice(), *root)),
            range,
        );
        let accounts_listed = data.accounts.len();
        let encoded = data.encode();
        let sidecar = match carrier {
            RootDataCarrier::Blobs => Some(root_blobs::sidecar_of(&encoded).map_err(|error| error.to_string())?),
            RootDataCarrier::Calldata => None,
        };
        Ok::<_, String>((tree, encoded, sidecar, accounts_listed))
    })
    .await
    .map_err(|error| {
        PayError::Node(NodeError::Unavailable(format!(
            "the root's data was not built: {error}"
        )))
    })?;
    let (tree, encoded, sidecar, accounts_listed) = built.map_err(|error| {
        PayError::Node(NodeError::Refused(format!(
            "the root's data does not fit in {MAX_BLOBS_PER_ROOT} blobs ({error}): too many accounts changed since \
             the previous root; a shorter root_interval_ms lists fewer"
        )))
    })?;
    Ok(BuiltData {
        tree,
        encoded,
        sidecar,
        accounts_listed,
    })
}

/// The call committing `tree`'s root as the vault's root of `epoch`, with its data: the
/// accounts whose leaves differ from `previous`'s and slice `epoch mod n` of the `n` slices
/// the snapshot interval asks for (the whole space when there is no previous root).
pub(super) async fn root_call(
    vault: &VaultChain,
    tree: Arc<TreeAtPosition>,
    (tokens, totals): (Vec<alloy::primitives::Address>, Vec<U256>),
    previous: PreviousRoot,
    epoch: u64,
) -> Result<RootCall, PayError> {
    let range = slice_range(epoch, vault.config.snapshot_slices());
    let BuiltData {
        tree,
        encoded,
        sidecar,
        accounts_listed,
    } = build_data(tree, previous, range, vault.config.root_data).await?;
    let root = FixedBytes(tree.root());
    let journal_sequence = tree.journal_sequence;
    let deposit_count = U256::from(tree.deposit_count);
    let data_bytes = encoded.len();
    let (calldata, blobs) = match sidecar {
        Some(sidecar) => {
            // Twice the blob base fee: room for it to rise (by at most 12.5 % a block) while the
            // transaction waits, as wallets do.
            let max_fee_per_blob_gas = vault.node.blob_base_fee().await?.saturating_mul(2).max(1);
            let call = DexdVaultV2::commitRootCall {
                root,
                journalSequence: journal_sequence,
                depositCount_: deposit_count,
                tokens,
                totals,
            };
            (
                call.abi_encode(),
                Some(BlobTerms {
                    sidecar: Arc::new(sidecar),
                    max_fee_per_blob_gas,
                }),
            )
        }
        None => {
            let call = DexdVaultV2::commitRootWithDataCall {
                root,
                journalSequence: journal_sequence,
                depositCount_: deposit_count,
                tokens,
                totals,
                data: encoded.into(),
            };
            (call.abi_encode(), None)
        }
    };
    Ok(RootCall {
        calldata,
        blobs,
        data_bytes,
        accounts_listed,
    })
}
