//! What a root's data costs on chain, and the time to rebuild a tree from it: at 10,000 and
//! 1,000,000 accounts (one or two tokens each, 1.5 leaves per account), 1 % of the accounts
//! changing between two roots, a root every 2 minutes and the snapshot's slices spread over
//! half of 7 days (2,520 slices); the bytes per root and per listed account, the blobs and blob
//! gas per root, the calldata gas where the chain takes no blobs, the cost per day; then the
//! time to decode the data of every account at 1,000,000 accounts and rebuild the root from it.
//!
//! `cargo bench -p dexd-custody --bench root_data`

use std::time::Instant;

use dexd_core::Address;
use dexd_crypto::liability_tree::{LiabilityLeaf, LiabilityTree};
use dexd_custody::liabilities::root_blobs::blobs_needed;
use dexd_custody::liabilities::root_data::{slice_range, AccountRange, Rebuild, RootData};

const ROOTS_PER_DAY: u64 = 24 * 60 / 2;
const SLICES: u64 = 2_520;
/// Gas per blob (EIP-4844).
const GAS_PER_BLOB: u64 = 131_072;
/// The stated prices: a blob at one cent (the blob fee floor since late 2025), and calldata at
/// 1 gwei a gas with ether at $3,000.
const DOLLARS_PER_BLOB: f64 = 0.01;
const DOLLARS_PER_CALLDATA_GAS: f64 = 1e-9 * 3_000.0;

fn account(index: u64) -> Address {
    let mut address = [0u8; 20];
    address[..8].copy_from_slice(&index.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    address[12..].copy_from_slice(&index.to_be_bytes());
    Address::from_bytes(address)
}

/// The leaves of `accounts` accounts, sorted by account then token; each `round` moves the
/// balances of the same one account in a hundred.
fn leaves(accounts: u64, round: u64) -> Vec<LiabilityLeaf> {
    let mut leaves = Vec::with_capacity(accounts as usize * 3 / 2);
    for index in 0..accounts {
        let moved = if index % 100 == 0 { u128::from(round) * 1_000 } else { 0 };
        for token in 0..(1 + index % 2) {
            // Balances of a dollar to a few thousand, in 6-decimal units.
            let base = u128::from(index % 5_000 + 1) * 1_000_000 + u128::from(index);
            leaves.push(LiabilityLeaf {
                account: account(index),
                token: Address::from_bytes([token as u8 + 1; 20]),
                balance: base + moved,
                credited_deposits: 2 * base + moved,
                debited_withdrawals: base,
            });
        }
    }
    leaves.sort_unstable_by_key(|leaf| (leaf.account, leaf.token));
    leaves
}

/// Calldata gas of `bytes` (16 per non-zero byte, 4 per zero byte).
fn calldata_gas(bytes: &[u8]) -> u64 {
    bytes.iter().map(|byte| if *byte == 0 { 4 } else { 16 }).sum()
}

fn main() {
    for accounts in [10_000u64, 1_000_000] {
        let before = leaves(accounts, 1);
        let after = leaves(accounts, 2);
        let before_root = LiabilityTree::build(&before, 2).root();
        let after_root = LiabilityTree::build(&after, 2).root();
        let data = RootData::for_root(
            (2, 0, after_root),
            &after,
            Some((&before, before_root)),
            slice_range(7, SLICES),
        );
        let unchanged = |leaf: &LiabilityLeaf| {
            before
                .binary_search_by_key(&(leaf.account, leaf.token), |old| (old.account, old.token))
                .is_ok_and(|at| before[at] == *leaf)
        };
        let changed = data
            .accounts
            .iter()
            .filter(|listed| !listed.leaves.iter().all(unchanged))
            .count();
        let bytes = data.encode();
        let blobs = blobs_needed(bytes.len());
        let gas = calldata_gas(&bytes);
        println!(
            "{accounts} accounts, {} leaves: a root lists {} accounts ({changed} changed, the rest in its slice of {SLICES}): \
             {} bytes, {:.1} per listed account; {blobs} blob(s) ({} blob gas) or {gas} calldata gas; \
             a day of {ROOTS_PER_DAY} roots: ${:.2} in blobs at ${DOLLARS_PER_BLOB} a blob, ${:.0} in calldata at 1 gwei",
            after.len(),
            data.accounts.len(),
            bytes.len(),
            bytes.len() as f64 / data.accounts.len() as f64,
            blobs as u64 * GAS_PER_BLOB,
            ROOTS_PER_DAY as f64 * blobs as f64 * DOLLARS_PER_BLOB,
            ROOTS_PER_DAY as f64 * gas as f64 * DOLLARS_PER_CALLDATA_GAS,
        );
    }
    // Rebuilding a 1,000,000-account root from data that lists every account.
    let accounts = 1_000_000;
    let state = leaves(accounts, 3);
    let root = LiabilityTree::build(&state, 2).root();
    let full = RootData::for_root((3, 0, root), &state, None, AccountRange::WHOLE).encode();
    println!(
        "{accounts} accounts in full: {} bytes ({:.1} per leaf), {} blobs",
        full.len(),
        full.len() as f64 / state.len() as f64,
        blobs_needed(full.len())
    );
    for threads in [1, 2] {
        let started = Instant::now();
        let decoded = RootData::decode(&full).expect("the data decodes");
        let decoded_in = started.elapsed();
        let mut rebuild = Rebuild::default();
        rebuild.apply(&decoded).expect("a first data applies");
        let (leaves, rebuilt, _, _) = rebuild.finish(threads).expect("the data rebuilds its root");
        assert_eq!((rebuilt, leaves.len()), (root, state.len()));
        println!(
            "rebuild of {} leaves on {threads} thread(s): {:.2} s ({:.2} s decoding)",
            leaves.len(),
            started.elapsed().as_secs_f64(),
            decoded_in.as_secs_f64()
        );
    }
}
