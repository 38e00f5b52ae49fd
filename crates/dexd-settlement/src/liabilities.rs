//! The liability tree of a chain at one journal position: its leaves (every account and token
//! with a non-zero balance or flow, as [`dexd_core::Engine::liability_entries`] gives them), the
//! tree over them, and the totals per token a root commits.
//!
//! It is built from an engine at that position, which the venue makes off the writer's path
//! (from a snapshot and the journal after it, on a thread of its own) and hands over through
//! [`crate::VenueChain::liability_tree`]; so the committer, the endpoints and anyone with the
//! journal get the same tree for the same position. It reads nothing from the chain.

use std::ops::Range;
use std::sync::Arc;

use alloy::primitives::{Address as ChainAddress, U256};
use dexd_core::{Address, Amount, AssetIndex, Engine};
use dexd_crypto::liability_tree::{LiabilityLeaf, LiabilityTree};

use crate::vault::chain_address;

/// How many threads hash a tree's leaves.
pub const TREE_BUILD_THREADS: usize = 2;

/// The liability tree at one journal position.
#[derive(Debug)]
pub struct TreeAtPosition {
    /// The journal position the tree was built at.
    pub journal_sequence: u64,
    /// The leaves, by account then asset; `assets[i]` is the asset of `leaves[i]`.
    pub leaves: Vec<LiabilityLeaf>,
    /// The asset of each leaf.
    pub assets: Vec<AssetIndex>,
    /// The tree over the leaves, in that order.
    pub tree: LiabilityTree,
    /// Per asset, in asset order: every balance plus every withdrawal debited and not yet paid.
    pub totals: Vec<Amount>,
    /// Each asset's token (the zero address for the native asset).
    pub tokens: Vec<Address>,
}

/// A tree built, or why it could not be.
pub type TreeResult = Result<Arc<TreeAtPosition>, String>;

impl TreeAtPosition {
    /// The tree of `engine`, which stands at `journal_sequence`; `tokens[i]` is asset `i`'s
    /// token (`None` for the native asset). The hash of every leaf `previous` (an earlier tree
    /// of the chain) holds unchanged is taken from it (the tree is the same either way).
    pub fn build(
        journal_sequence: u64,
        engine: &Engine,
        tokens: &[Option<Address>],
        previous: Option<&TreeAtPosition>,
    ) -> TreeAtPosition {
        let tokens: Vec<Address> = tokens
            .iter()
            .map(|token| token.unwrap_or(Address::from_bytes([0; 20])))
            .collect();
        let entries = engine.liability_entries();
        let mut leaves = Vec::with_capacity(entries.len());
        let mut assets = Vec::with_capacity(entries.len());
        let custody = engine.custody();
        let mut totals: Vec<Amount> = (0..tokens.len())
            .map(|index| custody.pending_withdrawal_units(AssetIndex(index as u16)))
            .collect();
        for entry in entries {
            let index = usize::from(entry.asset.0);
            totals[index] = totals[index]
                .checked_add(entry.balance)
                .expect("invariant: what the venue owes of an asset fits a u128, as its deposits do");
            leaves.push(LiabilityLeaf {
                account: entry.account,
                token: tokens[index],
                balance: entry.balance.units(),
                credited_deposits: entry.flows.credited_deposits.units(),
                debited_withdrawals: entry.flows.debited_withdrawals.units(),
            });
            assets.push(entry.asset);
        }
        let previous = previous.map(|previous| (previous.leaves.as_slice(), &previous.tree));
        let tree = LiabilityTree::build_reusing(&leaves, TREE_BUILD_THREADS, previous);
        TreeAtPosition {
            journal_sequence,
            leaves,
            assets,
            tree,
            totals,
            tokens,
        }
    }

    /// The root.
    pub fn root(&self) -> [u8; 32] {
        self.tree.root()
    }

    /// Where an account's leaves are (the leaves are sorted by account).
    pub fn leaves_of(&self, account: &Address) -> Range<usize> {
        let start = self.leaves.partition_point(|leaf| leaf.account < *account);
        let end = self.leaves.partition_point(|leaf| leaf.account <= *account);
        start..end
    }

    /// The tokens and totals as `commitRoot` takes them: every asset, by token address.
    pub fn commit_arguments(&self) -> (Vec<ChainAddress>, Vec<U256>) {
        let mut pairs: Vec<(ChainAddress, U256)> = self
            .tokens
            .iter()
            .zip(&self.totals)
            .map(|(token, total)| (chain_address(token), U256::from(total.units())))
            .collect();
        pairs.sort_unstable_by_key(|(token, _)| *token);
        pairs.into_iter().unzip()
    }
}
