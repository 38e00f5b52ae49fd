//! dexd's liability tree against OpenZeppelin's own `StandardMerkleTree`
//! (`@openzeppelin/merkle-tree`, run by node from `contracts/`): the same entries give the same
//! root and the same proofs, for trees of every shape from one entry to a few hundred.

use std::io::Write;
use std::process::{Command, Stdio};

use dexd_core::Address;
use dexd_crypto::hex_prefixed;
use dexd_crypto::liability_tree::{verify, LiabilityLeaf, LiabilityTree};
use serde_json::Value;

fn contracts_folder() -> std::path::PathBuf {
    std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contracts")
}

/// The root and proofs OpenZeppelin's library gives for `leaves`.
fn openzeppelin(leaves: &[LiabilityLeaf]) -> (String, Vec<Vec<String>>) {
    let folder = contracts_folder();
    assert!(
        folder.join("node_modules/@openzeppelin/merkle-tree").exists(),
        "run scripts/install-test-tools (npm ci in contracts/) first"
    );
    let mut child = Command::new("node")
        .arg("test/liability_tree.mjs")
        .current_dir(&folder)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .expect("node runs");
    let mut input = String::new();
    for leaf in leaves {
        input.push_str(
            &serde_json::json!([
                hex_prefixed(leaf.account.as_bytes()),
                hex_prefixed(leaf.token.as_bytes()),
                leaf.balance.to_string(),
                leaf.credited_deposits.to_string(),
                leaf.debited_withdrawals.to_string(),
            ])
            .to_string(),
        );
        input.push('\n');
    }
    child.stdin.take().unwrap().write_all(input.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let answer: Value = serde_json::from_slice(&output.stdout).unwrap();
    let proofs = answer["proofs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|proof| {
            proof
                .as_array()
                .unwrap()
                .iter()
                .map(|node| node.as_str().unwrap().to_string())
                .collect()
        })
        .collect();
    (answer["root"].as_str().unwrap().to_string(), proofs)
}

fn entries(count: usize) -> Vec<LiabilityLeaf> {
    (0..count)
        .map(|index| {
            let mut account = [0u8; 20];
            account[..8].copy_from_slice(&(index as u64 * 2_654_435_761).to_be_bytes());
            let token = if index % 3 == 0 {
                [0u8; 20]
            } else {
                [index as u8 % 3; 20]
            };
            LiabilityLeaf {
                account: Address::from_bytes(account),
                token: Address::from_bytes(token),
                balance: (index as u128) * 1_000_000_007 + u128::from(index % 2 == 0) * u128::MAX / 4,
                credited_deposits: (index as u128) * 3,
                debited_withdrawals: index as u128 % 5,
            }
        })
        .collect()
}

#[test]
fn the_root_and_every_proof_are_openzeppelins() {
    for count in [1, 2, 3, 4, 7, 16, 33, 300] {
        let leaves = entries(count);
        let tree = LiabilityTree::build(&leaves, 2);
        let (root, proofs) = openzeppelin(&leaves);
        assert_eq!(hex_prefixed(&tree.root()), root, "{count} entries");
        for (index, leaf) in leaves.iter().enumerate() {
            let proof = tree.proof(index).unwrap();
            let ours: Vec<String> = proof.iter().map(|node| hex_prefixed(node)).collect();
            assert_eq!(ours, proofs[index], "{count} entries, entry {index}");
            assert!(verify(&tree.root(), leaf, &proof));
        }
    }
}
