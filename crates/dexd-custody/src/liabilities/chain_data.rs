//! A root's data and its tree, read from the chain alone: the vault's root and the hash of its
//! data, the root's transaction (found by its `RootCommitted` event), its blobs from a beacon
//! node or its calldata, each checked against the hash the vault recorded; then the run of
//! roots back to one whose ranges, with those after it, cover every address, applied oldest
//! first, and the rebuilt tree checked against the root the vault holds (docs/root-data.md).
//!
//! Nothing read is trusted that can be checked: a node or beacon node that lies makes the
//! rebuild fail, never succeed with other leaves. It reads roots committed by the operator's
//! own transactions (the data is the transaction's `commitRoot` blobs or `commitRootWithData`
//! argument); it does not send anything (`dexd exit` does) or keep anything (an auditor
//! archives what it checked).

use alloy::eips::BlockId;
use alloy::primitives::{keccak256, B256, U256};
use alloy::sol_types::SolCall;
use dexd_crypto::liability_tree::LiabilityLeaf;

use super::beacon::{root_data_from_beacon, slot_clock, BeaconError};
use super::root_data::{Coverage, Rebuild, RebuildError, RootData, RootDataError};
use crate::node::{Node, NodeError};
use crate::vault::DexdVaultV2;

/// The most roots walked back from the one rebuilt: a full set passes through the data of at
/// most half a snapshot interval's roots (14 days at most, a root every minute at the least
/// interval that makes sense on a chain with 12 s blocks).
pub const MAX_ROOTS_WALKED: u64 = 20_160;

/// Why a root's data could not be read, or does not rebuild it.
#[derive(Debug)]
pub enum ChainDataError {
    /// The node failed, or does not know what it should.
    Node(NodeError),
    /// The root's blobs could not be had.
    Beacon(BeaconError),
    /// The root's data is in blobs and no beacon node was given.
    NoBeacon,
    /// The vault has no such root, or the node does not show its event or transaction (it may
    /// lag).
    Missing(String),
    /// The root's transaction carries no data a reader can find: no blobs, and not a
    /// `commitRootWithData` of the operator's (a root sent through another contract).
    Unreadable(String),
    /// The data the chain recorded is not a root's data, or not this root's.
    Data(RootDataError),
    /// The data is not the root's: another root, position or deposit count.
    NotTheRoot(String),
    /// The data of the run does not rebuild the root.
    Rebuild(RebuildError),
}

impl std::fmt::Display for ChainDataError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ChainDataError::Node(error) => write!(formatter, "{error}"),
            ChainDataError::Beacon(error) => write!(formatter, "{error}"),
            ChainDataError::NoBeacon => write!(formatter, "the root's data is in blobs: a beacon node URL is needed"),
            ChainDataError::Missing(what) | ChainDataError::Unreadable(what) => write!(formatter, "{what}"),
            ChainDataError::Data(error) => write!(formatter, "{error}"),
            ChainDataError::NotTheRoot(what) => write!(formatter, "the data recorded is not the root's: {what}"),
            ChainDataError::Rebuild(error) => write!(formatter, "{error}"),
        }
    }
}

impl std::error::Error for ChainDataError {}

impl From<NodeError> for ChainDataError {
    fn from(error: NodeError) -> ChainDataError {
        ChainDataError::Node(error)
    }
}

/// A tree rebuilt from the chain: its leaves (by account, then token), and the epochs whose
/// data it took.
#[derive(Debug)]
pub struct RebuiltRoot {
    /// The leaves.
    pub leaves: Vec<LiabilityLeaf>,
    /// The root, as the vault holds it.
    pub root: [u8; 32],
    /// The epochs read, oldest first.
    pub epochs: Vec<u64>,
}

/// Reads roots' data from a vault's node and a beacon node; keeps its HTTP client and the beacon
/// chain's clock between reads.
pub struct ChainData {
    node: Node,
    beacon: Option<Beacon>,
    max_log_range_blocks: u64,
}

struct Beacon {
    client: alloy_reqwest::Client,
    url: String,
    /// The beacon chain's clock, once read (`None` inside: the node serves no spec).
    clock: Option<Option<(u64, u64)>>,
}

impl ChainData {
    /// A reader of `node`'s vault; blobs from the beacon node at `beacon_url` when given.
    pub fn new(node: Node, beacon_url: Option<&str>, max_log_range_blocks: u64) -> ChainData {
        ChainData {
            node,
            beacon: beacon_url.map(|url| Beacon {
                client: alloy_reqwest::Client::new(),
                url: url.to_string(),
                clock: None,
            }),
            max_log_range_blocks,
        }
    }

    /// The data of the vault's root of `epoch`, checked against the hash the vault recorded and
    /// against the root itself (its root, journal position and deposit count).
    pub async fn root_data(&mut self, epoch: u64) -> Result<RootData, ChainDataError> {
        let latest = BlockId::latest();
        let stored = self.node.liability_root(epoch, latest).await?;
        let recorded = self
            .node
            .view(
                self.node.vault(),
                DexdVaultV2::rootDataCall {
                    epoch: U256::from(epoch),
                },
                latest,
            )
            .await?;
        let head = self.node.head().await?;
        let event = self
            .node
            .find_root_committed_event(
                epoch,
                stored.committedAt.saturating_to(),
                (0, head),
                self.max_log_range_blocks,
            )
            .await?
            .ok_or_else(|| ChainDataError::Missing(format!("no RootCommitted event of root {epoch} was found")))?;
        let (input, blob_hashes) = self
            .node
            .transaction_payload(event.tx_hash)
            .await?
            .ok_or_else(|| ChainDataError::Missing(format!("the node has no transaction of root {epoch}")))?;
        let bytes = if blob_hashes.is_empty() {
            let call = DexdVaultV2::commitRootWithDataCall::abi_decode(&input).map_err(|_| {
                ChainDataError::Unreadable(format!(
                    "root {epoch}'s transaction carries no blobs and is not commitRootWithData (a root sent through \
                     another contract cannot be read)"
                ))
            })?;
            if keccak256(&call.data) != recorded {
                return Err(ChainDataError::NotTheRoot(format!(
                    "root {epoch}'s calldata is not of the hash the vault recorded"
                )));
            }
            call.data.to_vec()
        } else {
            let packed: Vec<u8> = blob_hashes.iter().flat_map(|hash| hash.0).collect();
            if keccak256(&packed) != recorded {
                return Err(ChainDataError::NotTheRoot(format!(
                    "root {epoch}'s transaction carries other blobs than the vault recorded"
                )));
            }
            self.blobs(event.block_number, &blob_hashes).await?
        };
        let data = RootData::decode(&bytes).map_err(ChainDataError::Data)?;
        if data.root != stored.root.0
            || data.journal_sequence != stored.journalSequence
            || data.deposit_count != stored.depositCount
        {
            return Err(ChainDataError::NotTheRoot(format!(
                "root {epoch}'s data names another root, journal position or deposit count"
            )));
        }
        Ok(data)
    }

    /// The data of the blobs with `hashes` of block `block_number`, from the beacon node: asked
    /// by the block's slot (from the beacon clock) or, where the node has no clock (anvil), by
    /// the block's number. A wrong block only fails the hash check.
    async fn blobs(&mut self, block_number: u64, hashes: &[B256]) -> Result<Vec<u8>, ChainDataError> {
        let Some(beacon) = self.beacon.as_mut() else {
            return Err(ChainDataError::NoBeacon);
        };
        if beacon.clock.is_none() {
            beacon.clock = Some(slot_clock(&beacon.client, &beacon.url).await);
        }
        let mut block_ids = Vec::new();
        if let Some(Some((genesis_time_s, seconds_per_slot))) = beacon.clock {
            let (_, time_s) = self
                .node
                .block(block_number)
                .await?
                .ok_or_else(|| ChainDataError::Missing(format!("the node has no block {block_number}")))?;
            block_ids.push((time_s.saturating_sub(genesis_time_s) / seconds_per_slot).to_string());
        }
        block_ids.push(block_number.to_string());
        let mut last_error = None;
        for block_id in block_ids {
            match root_data_from_beacon(&beacon.client, &beacon.url, &block_id, hashes).await {
                Ok(data) => return Ok(data),
                Err(error) => last_error = Some(error),
            }
        }
        Err(ChainDataError::Beacon(
            last_error.expect("invariant: at least one block id is tried"),
        ))
    }

    /// The data of the newest epoch before `before` whose root is `root` and whose data reads
    /// (the root a data's changes are against): the same root may stand at several epochs (a
    /// quiet venue commits it again, a stolen key may copy it with bad data), and any of them
    /// with good data serves, as their trees are the same.
    async fn data_of_root(&mut self, root: [u8; 32], before: u64) -> Result<(u64, RootData), ChainDataError> {
        let oldest = before.saturating_sub(MAX_ROOTS_WALKED);
        let mut last_error = None;
        for epoch in (oldest..before).rev() {
            if self.node.liability_root(epoch, BlockId::latest()).await?.root.0 != root {
                continue;
            }
            match self.root_data(epoch).await {
                Ok(data) => return Ok((epoch, data)),
                Err(ChainDataError::Node(error)) => return Err(ChainDataError::Node(error)),
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| {
            ChainDataError::Missing(format!(
                "no root 0x{} before epoch {before}: the data's previous root is not in the vault",
                alloy::hex::encode(root)
            ))
        }))
    }

    /// The tree of the vault's root of `epoch`, rebuilt from the chain: the data of that root
    /// and of the roots before it, each naming the one before as its previous, back until
    /// their ranges cover every address.
    pub async fn rebuild(&mut self, epoch: u64, threads: usize) -> Result<RebuiltRoot, ChainDataError> {
        let mut run = vec![(epoch, self.root_data(epoch).await?)];
        let mut coverage = Coverage::default();
        coverage.cover(run[0].1.range);
        while !coverage.is_complete() {
            let (newest_epoch, newest) = run.last().expect("invariant: the run is never empty");
            if newest.previous_root == [0; 32] {
                return Err(ChainDataError::Rebuild(RebuildError::Incomplete));
            }
            if run.len() as u64 > MAX_ROOTS_WALKED {
                return Err(ChainDataError::Missing(format!(
                    "the data of {MAX_ROOTS_WALKED} roots does not cover every address"
                )));
            }
            let (previous, data) = self.data_of_root(newest.previous_root, *newest_epoch).await?;
            coverage.cover(data.range);
            run.push((previous, data));
        }
        let root = run[0].1.root;
        let epochs: Vec<u64> = run.iter().rev().map(|(epoch, _)| *epoch).collect();
        let leaves = tokio::task::spawn_blocking(move || {
            let mut rebuild = Rebuild::default();
            for (_, data) in run.iter().rev() {
                rebuild.apply(data)?;
            }
            rebuild.finish(threads).map(|(leaves, ..)| leaves)
        })
        .await
        .map_err(|error| ChainDataError::Missing(format!("the rebuild did not finish: {error}")))?
        .map_err(ChainDataError::Rebuild)?;
        Ok(RebuiltRoot { leaves, root, epochs })
    }
}
