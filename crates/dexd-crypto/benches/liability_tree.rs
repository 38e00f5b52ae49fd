//! The liability tree's build at the size the issue names: 1,000,000 accounts × 3 tokens
//! (3,000,000 entries), on one thread and on two, and its memory (the nodes and the positions);
//! then a build that takes the hashes of unchanged leaves from the tree before it, with 1 % and
//! 10 % of the leaves changed (between two roots most balances do not move).
//!
//! `cargo bench -p dexd-crypto --bench liability_tree`

use criterion::{criterion_group, criterion_main, Criterion};
use dexd_core::Address;
use dexd_crypto::liability_tree::{LiabilityLeaf, LiabilityTree};

const ACCOUNTS: usize = 1_000_000;
const TOKENS: usize = 3;

fn entries() -> Vec<LiabilityLeaf> {
    let mut leaves = Vec::with_capacity(ACCOUNTS * TOKENS);
    for account in 0..ACCOUNTS {
        let mut address = [0u8; 20];
        address[12..].copy_from_slice(&(account as u64).wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
        for token in 0..TOKENS {
            leaves.push(LiabilityLeaf {
                account: Address::from_bytes(address),
                token: Address::from_bytes([token as u8; 20]),
                balance: (account as u128 + 1) * 1_000_000,
                credited_deposits: (account as u128 + 1) * 2_000_000,
                debited_withdrawals: (account as u128 + 1) * 1_000_000,
            });
        }
    }
    leaves
}

fn build(criterion: &mut Criterion) {
    let leaves = entries();
    let tree = LiabilityTree::build(&leaves, 1);
    let node_bytes = (2 * leaves.len() - 1) * 32 + leaves.len() * std::mem::size_of::<usize>();
    println!(
        "{} entries: the tree holds {:.0} MiB (nodes and leaf positions); the entries {:.0} MiB",
        tree.len(),
        node_bytes as f64 / 1_048_576.0,
        (leaves.len() * std::mem::size_of::<LiabilityLeaf>()) as f64 / 1_048_576.0
    );
    let mut group = criterion.benchmark_group("liability_tree");
    group.sample_size(10);
    for threads in [1, 2] {
        group.bench_function(
            format!("build 1M accounts x 3 tokens, {threads} thread(s)"),
            |bencher| bencher.iter(|| LiabilityTree::build(&leaves, threads)),
        );
    }
    // The venue's leaves come sorted by account, which the reuse walks in.
    let mut sorted = leaves.clone();
    sorted.sort_by_key(|leaf| leaf.account);
    let earlier = LiabilityTree::build(&sorted, 2);
    for changed_every in [100, 10] {
        let later: Vec<LiabilityLeaf> = sorted
            .iter()
            .enumerate()
            .map(|(index, leaf)| LiabilityLeaf {
                balance: leaf.balance + u128::from(index % changed_every == 0),
                ..*leaf
            })
            .collect();
        assert_eq!(
            LiabilityTree::build_reusing(&later, 2, Some((&sorted, &earlier))).root(),
            LiabilityTree::build(&later, 2).root()
        );
        group.bench_function(
            format!(
                "rebuild 1M accounts x 3 tokens, {} % changed, reusing the earlier hashes, 2 threads",
                100 / changed_every
            ),
            |bencher| bencher.iter(|| LiabilityTree::build_reusing(&later, 2, Some((&sorted, &earlier)))),
        );
    }
    group.finish();
}

criterion_group!(benches, build);
criterion_main!(benches);
