//! A liability tree kept as a file, so that proofs and leaves are served by reading it rather
//! than by rebuilding a state: `<sequence>-<root>.tree` in the chain's folder of trees.
//!
//! The file is a header (magic, version, journal position, deposit count, root, counts), the
//! leaves sorted by account, each a fixed-size record with the position of its leaf among the
//! nodes, then every node of the tree in OpenZeppelin's array layout. An account's leaves are
//! found by a binary search over the records, and each proof by reading the few nodes
//! [`proof_positions`] names: a proof costs a few dozen small reads, whatever the tree's size,
//! and holds no lock anyone else waits for.
//!
//! A file is written to a temporary name, synced and renamed, so it is there whole or not at
//! all; a file whose header does not check (magic, version, sizes, the root among the nodes)
//! is not used. It does not decide which trees are kept (the venue does), and it trusts its
//! own files' contents past their header: they are the venue's, in its data directory.

use std::fs::File;
use std::io::{BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use dexd_core::Address;
use dexd_crypto::liability_tree::{proof_positions, LiabilityLeaf};

use super::TreeAtPosition;

/// The first bytes of every tree file.
const MAGIC: &[u8; 8] = b"DEXDTREE";
/// The version of the format this dexd writes and reads.
const VERSION: u32 = 1;
/// magic, version, journal sequence, deposit count, root, leaf count, node count.
const HEADER_BYTES: u64 = 8 + 4 + 8 + 8 + 32 + 8 + 8;
/// account, token, balance, creditedDeposits, debitedWithdrawals, node position.
const LEAF_BYTES: u64 = 20 + 20 + 16 + 16 + 16 + 8;
/// The extension of a tree file, and of one being written.
const EXTENSION: &str = "tree";
const PARTIAL_EXTENSION: &str = "tree-partial";

/// The name of the file of the tree at `journal_sequence` with `root`.
pub fn file_name(journal_sequence: u64, root: &[u8; 32]) -> String {
    format!("{journal_sequence:020}-{}.{EXTENSION}", alloy::hex::encode(root))
}

/// The journal position and root a tree file's name carries, if it is one.
pub fn parse_file_name(name: &str) -> Option<(u64, [u8; 32])> {
    let stem = name.strip_suffix(&format!(".{EXTENSION}"))?;
    let (sequence, root) = stem.split_once('-')?;
    let root: [u8; 32] = alloy::hex::decode(root).ok()?.try_into().ok()?;
    Some((sequence.parse().ok()?, root))
}

/// Writes `tree` into `directory` (created if needed), atomically; returns its path.
pub fn write(directory: &Path, tree: &TreeAtPosition) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(directory)?;
    let path = directory.join(file_name(tree.journal_sequence, &tree.root()));
    if path.exists() {
        return Ok(path);
    }
    let partial = path.with_extension(PARTIAL_EXTENSION);
    let file = File::create(&partial)?;
    let mut out = BufWriter::with_capacity(1 << 20, file);
    let nodes = tree.tree.nodes();
    out.write_all(MAGIC)?;
    out.write_all(&VERSION.to_be_bytes())?;
    out.write_all(&tree.journal_sequence.to_be_bytes())?;
    out.write_all(&tree.deposit_count.to_be_bytes())?;
    out.write_all(&tree.root())?;
    out.write_all(&(tree.leaves.len() as u64).to_be_bytes())?;
    out.write_all(&(nodes.len() as u64).to_be_bytes())?;
    for (entry, leaf) in tree.leaves.iter().enumerate() {
        let position = tree
            .tree
            .leaf_position(entry)
            .expect("invariant: every entry has a leaf");
        out.write_all(leaf.account.as_bytes())?;
        out.write_all(leaf.token.as_bytes())?;
        out.write_all(&leaf.balance.to_be_bytes())?;
        out.write_all(&leaf.credited_deposits.to_be_bytes())?;
        out.write_all(&leaf.debited_withdrawals.to_be_bytes())?;
        out.write_all(&(position as u64).to_be_bytes())?;
    }
    for node in nodes {
        out.write_all(node)?;
    }
    let file = out.into_inner().map_err(|error| error.into_error())?;
    file.sync_all()?;
    drop(file);
    std::fs::rename(&partial, &path)?;
    File::open(directory)?.sync_all()?;
    Ok(path)
}

/// One leaf read from a file, with its proof.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProvenLeaf {
    /// The leaf.
    pub leaf: LiabilityLeaf,
    /// The siblings from its leaf up to the root.
    pub proof: Vec<[u8; 32]>,
}

/// A tree file opened for reading.
#[derive(Debug)]
pub struct TreeFile {
    file: File,
    /// The journal position the tree was built at.
    pub journal_sequence: u64,
    /// How many vault deposits it covers.
    pub deposit_count: u64,
    /// Its root.
    pub root: [u8; 32],
    /// How many leaves it holds.
    pub leaf_count: u64,
    node_count: u64,
}

fn invalid(message: &str) -> std::io::Error {
    std::io::Error::new(std::io::ErrorKind::InvalidData, message.to_string())
}

impl TreeFile {
    /// Opens a tree file and checks its header against its size and its root.
    pub fn open(path: &Path) -> std::io::Result<TreeFile> {
        let mut file = File::open(path)?;
        let mut header = [0u8; HEADER_BYTES as usize];
        file.read_exact(&mut header)?;
        let field = |at: usize| u64::from_be_bytes(header[at..at + 8].try_into().expect("8 bytes"));
        if &header[..8] != MAGIC || header[8..12] != VERSION.to_be_bytes() {
            return Err(invalid("not a tree file of this version"));
        }
        let tree = TreeFile {
            journal_sequence: field(12),
            deposit_count: field(20),
            root: header[28..60].try_into().expect("32 bytes"),
            leaf_count: field(60),
            node_count: field(68),
            file,
        };
        let expected_nodes = (2 * tree.leaf_count).saturating_sub(1);
        let size = HEADER_BYTES + tree.leaf_count * LEAF_BYTES + tree.node_count * 32;
        if tree.node_count != expected_nodes || tree.file.metadata()?.len() != size {
            return Err(invalid("a tree file of the wrong size"));
        }
        let first_node = if tree.node_count == 0 { [0; 32] } else { tree.node(0)? };
        if first_node != tree.root {
            return Err(invalid("a tree file whose nodes do not have its root"));
        }
        Ok(tree)
    }

    fn node(&self, position: u64) -> std::io::Result<[u8; 32]> {
        if position >= self.node_count {
            return Err(invalid("a node position past the tree"));
        }
        let mut node = [0u8; 32];
        self.file
            .read_exact_at(&mut node, HEADER_BYTES + self.leaf_count * LEAF_BYTES + position * 32)?;
        Ok(node)
    }

    /// The leaf record at `index` and the position of its leaf among the nodes.
    fn leaf(&self, index: u64) -> std::io::Result<(LiabilityLeaf, u64)> {
        let mut record = [0u8; LEAF_BYTES as usize];
        self.file
            .read_exact_at(&mut record, HEADER_BYTES + index * LEAF_BYTES)?;
        Ok(decode_leaf(&record))
    }

    /// Every leaf of `account`, each with its proof.
    pub fn leaves_of(&self, account: &Address) -> std::io::Result<Vec<ProvenLeaf>> {
        // The first record whose account is not below `account`.
        let (mut low, mut high) = (0u64, self.leaf_count);
        while low < high {
            let middle = low + (high - low) / 2;
            if self.leaf(middle)?.0.account < *account {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        let mut found = Vec::new();
        for index in low..self.leaf_count {
            let (leaf, position) = self.leaf(index)?;
            if leaf.account != *account {
                break;
            }
            let proof = proof_positions(position as usize)
                .map(|sibling| self.node(sibling as u64))
                .collect::<std::io::Result<Vec<[u8; 32]>>>()?;
            found.push(ProvenLeaf { leaf, proof });
        }
        Ok(found)
    }

    /// Up to `count` leaves from the record at `from`, in the file's order (by account).
    pub fn leaves(&self, from: u64, count: u64) -> std::io::Result<Vec<LiabilityLeaf>> {
        let end = from.saturating_add(count).min(self.leaf_count);
        if from >= end {
            return Ok(Vec::new());
        }
        let mut bytes = vec![0u8; ((end - from) * LEAF_BYTES) as usize];
        self.file.read_exact_at(&mut bytes, HEADER_BYTES + from * LEAF_BYTES)?;
        Ok(bytes
            .chunks_exact(LEAF_BYTES as usize)
            .map(|record| decode_leaf(record).0)
            .collect())
    }
}

fn decode_leaf(record: &[u8]) -> (LiabilityLeaf, u64) {
    let units = |at: usize| u128::from_be_bytes(record[at..at + 16].try_into().expect("16 bytes"));
    let leaf = LiabilityLeaf {
        account: Address::from_bytes(record[..20].try_into().expect("20 bytes")),
        token: Address::from_bytes(record[20..40].try_into().expect("20 bytes")),
        balance: units(40),
        credited_deposits: units(56),
        debited_withdrawals: units(72),
    };
    let position = u64::from_be_bytes(record[88..96].try_into().expect("8 bytes"));
    (leaf, position)
}

#[cfg(test)]
mod tests {
    use super::*;
    use dexd_core::{Amount, AssetIndex, LiabilityToken};
    use dexd_crypto::liability_tree::{verify, LiabilityTree};

    fn tree_of(leaves: Vec<LiabilityLeaf>) -> TreeAtPosition {
        let tree = LiabilityTree::build(&leaves, 2);
        TreeAtPosition {
            journal_sequence: 42,
            deposit_count: 7,
            tokens_of_leaves: vec![LiabilityToken::Asset(AssetIndex(0)); leaves.len()],
            leaves,
            tree,
            totals: vec![Amount::ZERO],
            tokens: vec![Address::from_bytes([0; 20])],
            unlisted_tokens: Vec::new(),
        }
    }

    #[test]
    fn proofs_read_from_a_file_are_the_trees_own_and_a_damaged_file_is_refused() {
        let directory = tempfile::tempdir().unwrap();
        for count in [0usize, 1, 2, 5, 1_000] {
            let leaves: Vec<LiabilityLeaf> = (0..count)
                .map(|index| LiabilityLeaf {
                    account: Address::from_bytes([(index / 3) as u8; 20]),
                    token: Address::from_bytes([(index % 3) as u8; 20]),
                    balance: index as u128,
                    credited_deposits: 1,
                    debited_withdrawals: 0,
                })
                .collect();
            let tree = tree_of(leaves.clone());
            let path = write(directory.path(), &tree).unwrap();
            assert_eq!(
                parse_file_name(path.file_name().unwrap().to_str().unwrap()),
                Some((42, tree.root()))
            );
            let file = TreeFile::open(&path).unwrap();
            assert_eq!(
                (file.journal_sequence, file.deposit_count, file.root),
                (42, 7, tree.root())
            );
            assert_eq!(file.leaves(0, u64::MAX).unwrap(), leaves);
            for account in (0..=(count / 3) as u8).map(|byte| Address::from_bytes([byte; 20])) {
                let range = tree.leaves_of(&account);
                let found = file.leaves_of(&account).unwrap();
                assert_eq!(found.len(), range.len());
                for (proven, index) in found.iter().zip(range) {
                    assert_eq!(proven.leaf, tree.leaves[index]);
                    assert_eq!(Some(proven.proof.clone()), tree.tree.proof(index));
                    assert!(verify(&tree.root(), &proven.leaf, &proven.proof));
                }
            }
            std::fs::remove_file(&path).unwrap();
        }
        let tree = tree_of(vec![LiabilityLeaf {
            account: Address::from_bytes([1; 20]),
            token: Address::from_bytes([2; 20]),
            balance: 3,
            credited_deposits: 3,
            debited_withdrawals: 0,
        }]);
        let path = write(directory.path(), &tree).unwrap();
        let bytes = std::fs::read(&path).unwrap();
        std::fs::write(&path, &bytes[..bytes.len() - 1]).unwrap();
        assert!(TreeFile::open(&path).is_err(), "a truncated file");
        let mut other_root = bytes.clone();
        other_root[30] ^= 1;
        std::fs::write(&path, &other_root).unwrap();
        assert!(TreeFile::open(&path).is_err(), "a header whose root is not the nodes'");
    }
}
