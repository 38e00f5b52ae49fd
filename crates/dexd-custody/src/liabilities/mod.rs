//! The liability tree of a chain at one journal position: its leaves (every account and token
//! with a non-zero balance or flow, or a deposit the vault took and the ledger did not credit, as
//! [`dexd_core::Engine::liability_entries`] gives them), the tree over them, how many of the
//! vault's deposits it covers, and the totals per token a root commits; and the tree kept as a
//! file ([`tree_file`]), from which proofs and leaves are served without rebuilding anything.
//!
//! It is built from an engine at that position, which the venue makes off the writer's path
//! (from a snapshot and the journal after it, on a thread of its own) and hands over through
//! [`crate::VenueChain::liability_tree`]; so the committer, the endpoints and anyone with the
//! journal get the same tree for the same position. It reads nothing from the chain.

pub mod beacon;
pub mod chain_data;
pub mod root_blobs;
pub mod root_data;
pub mod tree_file;

use std::ops::Range;
use std::sync::Arc;

use alloy::primitives::{Address as ChainAddress, U256};
use dexd_core::{Address, Amount, AssetIndex, Engine, LiabilityToken};
use dexd_crypto::liability_tree::{LiabilityLeaf, LiabilityTree};

use crate::vault::chain_address;

/// How many threads hash a tree's leaves.
pub const TREE_BUILD_THREADS: usize = 2;

/// The liability tree at one journal position.
#[derive(Debug)]
pub struct TreeAtPosition {
    /// The journal position the tree was built at.
    pub journal_sequence: u64,
    /// How many of the vault's deposits the state at that position had taken (credited, or
    /// recorded without credit): the tree covers the deposits numbered below it.
    pub deposit_count: u64,
    /// The leaves, by account then token; `tokens_of_leaves[i]` names the token of `leaves[i]`.
    pub leaves: Vec<LiabilityLeaf>,
    /// The token of each leaf, as the engine names it.
    pub tokens_of_leaves: Vec<LiabilityToken>,
    /// The tree over the leaves, in that order.
    pub tree: LiabilityTree,
    /// Per asset, in asset order: every balance plus every withdrawal debited and not yet paid.
    pub totals: Vec<Amount>,
    /// Each asset's token (the zero address for the native asset).
    pub tokens: Vec<Address>,
    /// The tokens the chain does not list that the vault took deposits of, sorted: each gets a
    /// total of zero in the root (what the vault took of them is owed back by the exit formula,
    /// not by a balance).
    pub unlisted_tokens: Vec<Address>,
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
        let mut tokens_of_leaves = Vec::with_capacity(entries.len());
        let mut unlisted_tokens = Vec::new();
        let custody = engine.custody();
        let mut totals: Vec<Amount> = (0..tokens.len())
            .map(|index| custody.pending_withdrawal_units(AssetIndex(index as u16)))
            .collect();
        for entry in entries {
            let token = match entry.token {
                LiabilityToken::Asset(asset) => {
                    let index = usize::from(asset.0);
                    totals[index] = totals[index]
                        .checked_add(entry.balance)
                        .expect("invariant: what the venue owes of an asset fits a u128, as its deposits do");
                    tokens[index]
                }
                LiabilityToken::Unlisted(token) => {
                    unlisted_tokens.push(token);
                    token
                }
            };
            leaves.push(LiabilityLeaf {
                account: entry.account,
                token,
                balance: entry.balance.units(),
                credited_deposits: entry.flows.credited_deposits.units(),
                debited_withdrawals: entry.flows.debited_withdrawals.units(),
            });
            tokens_of_leaves.push(entry.token);
        }
        unlisted_tokens.sort_unstable();
        unlisted_tokens.dedup();
        unlisted_tokens.retain(|token| !tokens.contains(token));
        let previous = previous.map(|previous| (previous.leaves.as_slice(), &previous.tree));
        let tree = LiabilityTree::build_reusing(&leaves, TREE_BUILD_THREADS, previous);
        TreeAtPosition {
            journal_sequence,
            deposit_count: custody.next_deposit_id(),
            leaves,
            tokens_of_leaves,
            tree,
            totals,
            tokens,
            unlisted_tokens,
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

    /// The tokens and totals as `commitRoot` takes them, sorted by token: every asset the vault
    /// lists (`listed`; an asset it does not list can have no deposit, and the vault refuses a
    /// total for it) and every unlisted token it took deposits of, at zero.
    pub fn commit_arguments(&self, listed: impl Fn(&Address) -> bool) -> (Vec<ChainAddress>, Vec<U256>) {
        let mut pairs: Vec<(ChainAddress, U256)> = self
            .tokens
            .iter()
            .zip(&self.totals)
            .filter(|(token, _)| listed(token))
            .map(|(token, total)| (chain_address(token), U256::from(total.units())))
            .chain(
                self.unlisted_tokens
                    .iter()
                    .map(|token| (chain_address(token), U256::ZERO)),
            )
            .collect();
        pairs.sort_unstable_by_key(|(token, _)| *token);
        pairs.dedup_by_key(|(token, _)| *token);
        pairs.into_iter().unzip()
    }
}
