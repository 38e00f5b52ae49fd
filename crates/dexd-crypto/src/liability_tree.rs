//! The liability tree: OpenZeppelin's `StandardMerkleTree` over every (account, token) entry a
//! root commits, `(address account, address token, uint256 balance, uint256 creditedDeposits,
//! uint256 debitedWithdrawals)`, built exactly as `@openzeppelin/merkle-tree` builds it, so that
//! its root and proofs check with OpenZeppelin's `MerkleProof.verify` in the vault and with the
//! JavaScript library in a browser.
//!
//! - A leaf is `keccak256(bytes.concat(keccak256(abi.encode(...))))` (hashed twice, so that no
//!   leaf can pass for an inner node).
//! - The leaves are sorted by hash; the tree is the library's array (leaves at its end in
//!   reverse order, node `i`'s children at `2i + 1` and `2i + 2`), each inner node the hash of
//!   its two children sorted.
//! - A proof is the siblings from the leaf up.
//!
//! Pure functions of their input: this module does not know where the entries come from (the
//! engine's state at a journal position) or where the root goes (the vault).

use alloy_primitives::keccak256;
use dexd_core::Address;

/// One entry of the tree: what the venue owes an account in one token at a journal position.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LiabilityLeaf {
    /// The account.
    pub account: Address,
    /// The token's contract; the zero address for the chain's native asset.
    pub token: Address,
    /// The account's total (available + locked), in the token's smallest units.
    pub balance: u128,
    /// Every deposit of the token credited to the account, in all.
    pub credited_deposits: u128,
    /// Every withdrawal of the token debited from the account, in all (paid or not).
    pub debited_withdrawals: u128,
}

impl LiabilityLeaf {
    /// The leaf's hash: `keccak256(bytes.concat(keccak256(abi.encode(account, token, balance,
    /// creditedDeposits, debitedWithdrawals))))`.
    pub fn hash(&self) -> [u8; 32] {
        let mut encoded = [0u8; 5 * 32];
        encoded[12..32].copy_from_slice(self.account.as_bytes());
        encoded[44..64].copy_from_slice(self.token.as_bytes());
        encoded[80..96].copy_from_slice(&self.balance.to_be_bytes());
        encoded[112..128].copy_from_slice(&self.credited_deposits.to_be_bytes());
        encoded[144..160].copy_from_slice(&self.debited_withdrawals.to_be_bytes());
        keccak256(keccak256(encoded).0).0
    }
}

/// The hash of two nodes, sorted (OpenZeppelin's `Hashes.commutativeKeccak256`).
pub fn hash_pair(first: &[u8; 32], second: &[u8; 32]) -> [u8; 32] {
    let (low, high) = if first <= second {
        (first, second)
    } else {
        (second, first)
    };
    let mut both = [0u8; 64];
    both[..32].copy_from_slice(low);
    both[32..].copy_from_slice(high);
    keccak256(both).0
}

/// Whether `proof` leads from `leaf` to `root` (OpenZeppelin's `MerkleProof.verify`).
pub fn verify(root: &[u8; 32], leaf: &LiabilityLeaf, proof: &[[u8; 32]]) -> bool {
    let computed = proof
        .iter()
        .fold(leaf.hash(), |node, sibling| hash_pair(&node, sibling));
    computed == *root
}

/// A built tree: its nodes in the library's array layout, and where each entry's leaf is.
#[derive(Debug, Clone)]
pub struct LiabilityTree {
    nodes: Vec<[u8; 32]>,
    /// For each entry, in the order given, the index of its leaf in `nodes`.
    leaf_positions: Vec<usize>,
}

impl LiabilityTree {
    /// The tree of `leaves` (entries in any order; each gets its proof by its position in this
    /// slice). The leaf hashes are computed on up to `threads` threads.
    pub fn build(leaves: &[LiabilityLeaf], threads: usize) -> LiabilityTree {
        LiabilityTree::build_reusing(leaves, threads, None)
    }

    /// Like [`LiabilityTree::build`], taking the hash of every leaf that `previous` (an earlier
    /// tree and the leaves it was built from) holds unchanged from it instead of hashing it
    /// again: most of a build's hashing, since between two roots most balances do not move.
    /// A leaf is reused only when it is equal in every field, so the tree is the same as
    /// [`LiabilityTree::build`]'s whatever `previous` is; the reuse finds its leaves when both
    /// slices are sorted by account (as the venue's entries are).
    pub fn build_reusing(
        leaves: &[LiabilityLeaf],
        threads: usize,
        previous: Option<(&[LiabilityLeaf], &LiabilityTree)>,
    ) -> LiabilityTree {
        // Each hash beside its entry's index, sorted together: sorting indexes by the hashes
        // they point at read a random hash per comparison, most of the build's time.
        let previous = previous.filter(|(previous_leaves, tree)| previous_leaves.len() == tree.len());
        let mut sorted = hash_leaves(leaves, threads.max(1), previous);
        sorted.sort_unstable();
        let count = leaves.len();
        if count == 0 {
            return LiabilityTree {
                nodes: Vec::new(),
                leaf_positions: Vec::new(),
            };
        }
        let length = 2 * count - 1;
        let mut nodes = vec![[0u8; 32]; length];
        let mut leaf_positions = vec![0usize; count];
        for (sorted_index, (hash, entry)) in sorted.iter().enumerate() {
            let position = length - 1 - sorted_index;
            nodes[position] = *hash;
            leaf_positions[*entry as usize] = position;
        }
        hash_inner_nodes(&mut nodes, length - count, threads.max(1));
        LiabilityTree { nodes, leaf_positions }
    }

    /// The root; all zeros for a tree without entries.
    pub fn root(&self) -> [u8; 32] {
        self.nodes.first().copied().unwrap_or([0; 32])
    }

    /// How many entries the tree holds.
    pub fn len(&self) -> usize {
        self.leaf_positions.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.leaf_positions.is_empty()
    }

    /// The proof of the entry at `entry` (its position in the slice the tree was built from):
    /// the siblings from its leaf up to the root.
    pub fn proof(&self, entry: usize) -> Option<Vec<[u8; 32]>> {
        let position = *self.leaf_positions.get(entry)?;
        Some(proof_positions(position).map(|sibling| self.nodes[sibling]).collect())
    }

    /// Every node, in the library's array layout (the root first).
    pub fn nodes(&self) -> &[[u8; 32]] {
        &self.nodes
    }

    /// Where the leaf of the entry at `entry` is among [`Self::nodes`].
    pub fn leaf_position(&self, entry: usize) -> Option<usize> {
        self.leaf_positions.get(entry).copied()
    }
}

/// The positions of a proof's nodes in the library's array layout, for the leaf at `position`:
/// each node's sibling, from the leaf up to the root's children. A reader that keeps the nodes
/// elsewhere (a file) builds proofs from these.
pub fn proof_positions(position: usize) -> impl Iterator<Item = usize> {
    let mut index = position;
    std::iter::from_fn(move || {
        if index == 0 {
            return None;
        }
        let sibling = if index % 2 == 1 { index + 1 } else { index - 1 };
        index = (index - 1) / 2;
        Some(sibling)
    })
}

/// A level of the tree with at least this many inner nodes is hashed on several threads (below
/// it, starting threads costs more than it saves).
const PARALLEL_LEVEL_NODES: usize = 4_096;

/// Hashes the `inner` inner nodes (`nodes[..inner]`) from their children, level by level from
/// the deepest up: the nodes of one level depend only on the level below, so a level's nodes
/// are split between up to `threads` threads.
fn hash_inner_nodes(nodes: &mut [[u8; 32]], inner: usize, threads: usize) {
    if inner == 0 {
        return;
    }
    // Node `i` is at depth floor(log2(i + 1)); the deepest inner node is `inner - 1`.
    let deepest = inner.ilog2() as usize;
    for depth in (0..=deepest).rev() {
        let start = (1usize << depth) - 1;
        let end = ((1usize << (depth + 1)) - 1).min(inner);
        // Every child of this level is at or after the level below's start.
        let split = ((1usize << (depth + 1)) - 1).min(nodes.len());
        let (head, children) = nodes.split_at_mut(split);
        let level = &mut head[start..end];
        let hash_range = |level: &mut [[u8; 32]], first: usize| {
            for (offset, node) in level.iter_mut().enumerate() {
                let left = 2 * (first + offset) + 1 - split;
                *node = hash_pair(&children[left], &children[left + 1]);
            }
        };
        if threads == 1 || level.len() < PARALLEL_LEVEL_NODES {
            hash_range(level, start);
            continue;
        }
        let chunk = level.len().div_ceil(threads);
        std::thread::scope(|scope| {
            for (index, part) in level.chunks_mut(chunk).enumerate() {
                scope.spawn(move || hash_range(part, start + index * chunk));
            }
        });
    }
}

/// Every leaf's hash with its entry's index, in the order given, on up to `threads` threads;
/// a leaf `previous` holds unchanged takes its hash from there.
fn hash_leaves(
    leaves: &[LiabilityLeaf],
    threads: usize,
    previous: Option<(&[LiabilityLeaf], &LiabilityTree)>,
) -> Vec<([u8; 32], u32)> {
    assert!(u32::try_from(leaves.len()).is_ok(), "a tree holds at most 2^32 entries");
    let mut hashes = vec![([0u8; 32], 0u32); leaves.len()];
    let chunk = leaves.len().div_ceil(threads).max(1);
    std::thread::scope(|scope| {
        for (chunk_index, (leaves, hashes)) in leaves.chunks(chunk).zip(hashes.chunks_mut(chunk)).enumerate() {
            scope.spawn(move || {
                let first = chunk_index * chunk;
                let mut reuse =
                    previous.map(|(previous_leaves, tree)| PreviousHashes::new(previous_leaves, tree, leaves));
                for (offset, (leaf, slot)) in leaves.iter().zip(hashes.iter_mut()).enumerate() {
                    let hash = reuse
                        .as_mut()
                        .and_then(|reuse| reuse.hash_of(leaf))
                        .unwrap_or_else(|| leaf.hash());
                    *slot = (hash, (first + offset) as u32);
                }
            });
        }
    });
    hashes
}

/// The leaf hashes of an earlier tree, walked in account order beside the new leaves.
struct PreviousHashes<'a> {
    leaves: &'a [LiabilityLeaf],
    tree: &'a LiabilityTree,
    /// The first earlier leaf whose account is not below the new leaf's.
    next: usize,
}

impl<'a> PreviousHashes<'a> {
    /// Starts at the earlier leaves of the first account of `chunk`.
    fn new(leaves: &'a [LiabilityLeaf], tree: &'a LiabilityTree, chunk: &[LiabilityLeaf]) -> PreviousHashes<'a> {
        let next = chunk
            .first()
            .map_or(0, |first| leaves.partition_point(|leaf| leaf.account < first.account));
        PreviousHashes { leaves, tree, next }
    }

    /// The earlier hash of `leaf` when an equal leaf was in the earlier tree. Accounts only move
    /// forward; leaves out of account order are hashed anew (found by no one).
    fn hash_of(&mut self, leaf: &LiabilityLeaf) -> Option<[u8; 32]> {
        while self
            .leaves
            .get(self.next)
            .is_some_and(|earlier| earlier.account < leaf.account)
        {
            self.next += 1;
        }
        let same_account = self.leaves[self.next..]
            .iter()
            .take_while(|earlier| earlier.account == leaf.account);
        for (offset, earlier) in same_account.enumerate() {
            if earlier == leaf {
                return Some(self.tree.nodes[self.tree.leaf_positions[self.next + offset]]);
            }
        }
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn leaf(account: u8, token: u8, balance: u128) -> LiabilityLeaf {
        LiabilityLeaf {
            account: Address::from_bytes([account; 20]),
            token: Address::from_bytes([token; 20]),
            balance,
            credited_deposits: balance + 7,
            debited_withdrawals: 7,
        }
    }

    #[test]
    fn every_proof_verifies_and_a_changed_leaf_does_not() {
        for count in [1usize, 2, 3, 5, 8, 13, 100] {
            let leaves: Vec<LiabilityLeaf> = (0..count)
                .map(|index| leaf(index as u8, 1, index as u128 * 10))
                .collect();
            let tree = LiabilityTree::build(&leaves, 3);
            assert_eq!(tree.len(), count);
            for (index, entry) in leaves.iter().enumerate() {
                let proof = tree.proof(index).unwrap();
                assert!(verify(&tree.root(), entry, &proof), "{count} leaves, entry {index}");
                let mut changed = *entry;
                changed.balance += 1;
                assert!(!verify(&tree.root(), &changed, &proof));
            }
            // The order the entries come in does not change the root.
            let mut reversed = leaves.clone();
            reversed.reverse();
            assert_eq!(LiabilityTree::build(&reversed, 1).root(), tree.root());
        }
        assert_eq!(LiabilityTree::build(&[], 2).root(), [0; 32]);
    }

    #[test]
    fn a_tree_reusing_an_earlier_ones_hashes_is_the_tree_built_anew() {
        let earlier: Vec<LiabilityLeaf> = (0..5_000u32)
            .map(|index| LiabilityLeaf {
                account: Address::from_bytes([
                    (index / 3 % 251) as u8,
                    (index / 3 / 251) as u8,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    0,
                    1,
                ]),
                token: Address::from_bytes([(index % 3) as u8; 20]),
                balance: u128::from(index),
                credited_deposits: 1,
                debited_withdrawals: 0,
            })
            .collect();
        let mut earlier_sorted = earlier.clone();
        earlier_sorted.sort_by_key(|leaf| leaf.account);
        let earlier_tree = LiabilityTree::build(&earlier_sorted, 2);
        // Balances changed, leaves gone, new accounts, a new token for an old account.
        let mut later: Vec<LiabilityLeaf> = earlier_sorted
            .iter()
            .enumerate()
            .filter(|(index, _)| index % 97 != 0)
            .map(|(index, leaf)| LiabilityLeaf {
                balance: if index % 13 == 0 {
                    leaf.balance + 1
                } else {
                    leaf.balance
                },
                ..*leaf
            })
            .collect();
        later.push(LiabilityLeaf {
            token: Address::from_bytes([9; 20]),
            ..later[10]
        });
        later.push(leaf(250, 1, 77));
        later.sort_by_key(|leaf| leaf.account);
        for threads in [1, 3] {
            let reused = LiabilityTree::build_reusing(&later, threads, Some((&earlier_sorted, &earlier_tree)));
            let anew = LiabilityTree::build(&later, threads);
            assert_eq!(reused.nodes, anew.nodes);
            assert_eq!(reused.leaf_positions, anew.leaf_positions);
        }
        // Leaves out of account order, or a tree of other leaves, change nothing but the speed.
        let mut shuffled = later.clone();
        shuffled.reverse();
        let from_shuffled = LiabilityTree::build_reusing(&shuffled, 2, Some((&earlier_sorted, &earlier_tree)));
        assert_eq!(from_shuffled.root(), LiabilityTree::build(&later, 2).root());
        let mismatched = LiabilityTree::build_reusing(&later, 2, Some((&later[..10], &earlier_tree)));
        assert_eq!(mismatched.root(), LiabilityTree::build(&later, 2).root());
    }

    #[test]
    fn levels_hashed_on_several_threads_give_the_same_tree() {
        // Past `PARALLEL_LEVEL_NODES`, with a partial deepest level.
        let leaves: Vec<LiabilityLeaf> = (0..20_003u32)
            .map(|index| LiabilityLeaf {
                account: Address::from_bytes([(index % 251) as u8; 20]),
                token: Address::from_bytes([(index / 251) as u8; 20]),
                balance: u128::from(index),
                credited_deposits: 1,
                debited_withdrawals: 0,
            })
            .collect();
        let one = LiabilityTree::build(&leaves, 1);
        let three = LiabilityTree::build(&leaves, 3);
        assert_eq!(one.nodes, three.nodes);
        for entry in [0, 4_095, 20_002] {
            assert!(verify(&three.root(), &leaves[entry], &three.proof(entry).unwrap()));
        }
    }
}
