//! The root data's encoding and rebuild: a round trip of any data, one encoding per value, and
//! a run of roots' data rebuilding the newest root exactly when its ranges cover every address.

use super::*;
use proptest::prelude::*;

fn address(first_byte: u8, last_byte: u8) -> Address {
    let mut bytes = [0u8; 20];
    bytes[0] = first_byte;
    bytes[19] = last_byte;
    Address::from_bytes(bytes)
}

fn leaf(account: Address, token: u8, balance: u128) -> LiabilityLeaf {
    LiabilityLeaf {
        account,
        token: address(0, token),
        balance,
        credited_deposits: balance + 7,
        debited_withdrawals: 7,
    }
}

/// Leaves sorted by account then token, as the venue builds them.
fn sorted(mut leaves: Vec<LiabilityLeaf>) -> Vec<LiabilityLeaf> {
    leaves.sort_unstable_by_key(|leaf| (leaf.account, leaf.token));
    leaves.dedup_by_key(|leaf| (leaf.account, leaf.token));
    leaves
}

fn root_of(leaves: &[LiabilityLeaf]) -> [u8; 32] {
    LiabilityTree::build(leaves, 1).root()
}

fn leaves_strategy() -> impl Strategy<Value = Vec<LiabilityLeaf>> {
    prop::collection::vec((any::<u8>(), any::<u8>(), 0u8..4, 1u128..u128::MAX / 2), 0..40).prop_map(|entries| {
        sorted(
            entries
                .into_iter()
                .map(|(first, last, token, balance)| leaf(address(first, last), token, balance))
                .collect(),
        )
    })
}

/// The data of each state in turn, the nth root taking slice n of `slices`.
fn data_of_run(states: &[Vec<LiabilityLeaf>], slices: u64) -> Vec<RootData> {
    let mut run: Vec<RootData> = Vec::new();
    for (epoch, leaves) in states.iter().enumerate() {
        let previous = epoch
            .checked_sub(1)
            .map(|before| (states[before].as_slice(), run[before].root));
        run.push(RootData::for_root(
            (epoch as u64, epoch as u64, root_of(leaves)),
            leaves,
            previous,
            slice_range(epoch as u64, slices),
        ));
    }
    run
}

proptest! {
    #[test]
    fn any_data_decodes_to_itself(states in prop::collection::vec(leaves_strategy(), 1..4), slices in 1u64..5) {
        for data in data_of_run(&states, slices) {
            let bytes = data.encode();
            prop_assert_eq!(RootData::decode(&bytes), Ok(data));
        }
    }

    #[test]
    fn one_cycle_of_data_rebuilds_the_newest_root(states in prop::collection::vec(leaves_strategy(), 1..8), slices in 1u64..4) {
        let run = data_of_run(&states, slices);
        // Every run of data that ends at the newest root and whose ranges cover every address
        // rebuilds it, whichever root it starts from.
        let newest = states.len() - 1;
        for start in 0..=newest {
            let mut rebuild = Rebuild::default();
            for data in &run[start..] {
                rebuild.apply(data).unwrap();
            }
            if rebuild.is_complete() {
                let (leaves, root, sequence, _) = rebuild.finish(1).unwrap();
                prop_assert_eq!(root, root_of(&states[newest]));
                prop_assert_eq!(sequence, newest as u64);
                prop_assert_eq!(sorted(leaves), states[newest].clone());
            } else {
                prop_assert_eq!(rebuild.finish(1), Err(RebuildError::Incomplete));
                // Incomplete only when it starts after the first root and the slices left are
                // fewer than the cycle.
                prop_assert!(start > 0 && ((newest - start + 1) as u64) < slices);
            }
        }
    }
}

#[test]
fn a_first_root_lists_every_account_and_a_later_one_only_the_changed_and_its_slice() {
    let (alice, bob, carol) = (address(0x10, 1), address(0x90, 2), address(0xf0, 3));
    let before = sorted(vec![leaf(alice, 1, 5), leaf(bob, 1, 6), leaf(carol, 2, 7)]);
    let first = RootData::for_root((1, 1, root_of(&before)), &before, None, slice_range(0, 4));
    assert_eq!(first.range, AccountRange::WHOLE, "a first root's data lists everything");
    assert_eq!(first.accounts.len(), 3);
    // Bob's balance moves, carol leaves; slice 0 of 2 is the lower half, where alice is.
    let after = sorted(vec![leaf(alice, 1, 5), leaf(bob, 1, 60)]);
    let second = RootData::for_root(
        (2, 1, root_of(&after)),
        &after,
        Some((&before, first.root)),
        slice_range(0, 2),
    );
    let listed: Vec<(Address, usize)> = second
        .accounts
        .iter()
        .map(|listed| (listed.account, listed.leaves.len()))
        .collect();
    assert_eq!(listed, vec![(alice, 1), (bob, 1), (carol, 0)]);
    let mut rebuild = Rebuild::default();
    rebuild.apply(&first).unwrap();
    rebuild.apply(&second).unwrap();
    assert_eq!(rebuild.finish(1).unwrap().1, root_of(&after));
    // The data of the second root alone covers half the space: it rebuilds nothing.
    let mut alone = Rebuild::default();
    alone.apply(&second).unwrap();
    assert_eq!(alone.finish(1), Err(RebuildError::Incomplete));
}

#[test]
fn slices_of_a_cycle_tile_the_address_space() {
    for count in [1u64, 2, 3, 7, 5040] {
        let mut coverage = Coverage::default();
        for index in 0..count {
            assert!(!coverage.is_complete() || count == 1 && index == 1);
            let range = slice_range(index, count);
            assert!(range.first <= range.last);
            coverage.cover(range);
            if index > 0 {
                let before = slice_range(index - 1, count);
                assert!(adjacent_or_overlapping(&before.last, &range.first) && before.last < range.first);
            }
        }
        assert!(coverage.is_complete(), "{count} slices");
    }
    assert_eq!(slice_range(0, 1), AccountRange::WHOLE);
    assert_eq!(slice_range(7, 7), slice_range(0, 7));
}

#[test]
fn data_that_names_another_root_or_another_previous_root_is_refused() {
    let alice = address(0x10, 1);
    let leaves = vec![leaf(alice, 1, 5)];
    let mut data = RootData::for_root((1, 0, root_of(&leaves)), &leaves, None, AccountRange::WHOLE);
    data.root[0] ^= 1;
    let mut rebuild = Rebuild::default();
    rebuild.apply(&data).unwrap();
    assert!(matches!(rebuild.finish(1), Err(RebuildError::OtherRoot { .. })));
    let next = RootData::for_root(
        (2, 0, root_of(&leaves)),
        &leaves,
        Some((&leaves, [9; 32])),
        AccountRange::WHOLE,
    );
    assert!(matches!(rebuild.apply(&next), Err(RebuildError::NotChained { .. })));
}

#[test]
fn every_other_encoding_is_refused() {
    let alice = address(0x10, 1);
    let bob = address(0x20, 1);
    let leaves = sorted(vec![leaf(alice, 1, 300), leaf(alice, 2, 1), leaf(bob, 1, 5)]);
    let data = RootData::for_root((1, 2, root_of(&leaves)), &leaves, None, AccountRange::WHOLE);
    let bytes = data.encode();
    assert_eq!(RootData::decode(&bytes).unwrap(), data);
    for cut in 0..bytes.len() {
        assert!(RootData::decode(&bytes[..cut]).is_err(), "cut at {cut}");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert_eq!(
        RootData::decode(&longer),
        Err(RootDataError::Malformed("bytes after the last account"))
    );
    let mut other_version = bytes.clone();
    other_version[4] = 2;
    assert_eq!(RootData::decode(&other_version), Err(RootDataError::Version(2)));
    let mut no_magic = bytes.clone();
    no_magic[0] = b'X';
    assert_eq!(RootData::decode(&no_magic), Err(RootDataError::Magic));
    // A varint with a superfluous zero byte: alice's first balance, 300 = 0xac 0x02, rewritten
    // as 0xac 0x82 0x00 is the same value in another encoding.
    let at = bytes.windows(2).position(|pair| pair == [0xac, 0x02]).unwrap();
    let mut overlong = bytes[..at].to_vec();
    overlong.extend_from_slice(&[0xac, 0x82, 0x00]);
    overlong.extend_from_slice(&bytes[at + 2..]);
    assert_eq!(
        RootData::decode(&overlong),
        Err(RootDataError::Malformed("a varint with a superfluous zero byte"))
    );
    // Accounts out of order.
    let mut swapped = data.clone();
    swapped.accounts.swap(0, 1);
    assert_eq!(
        RootData::decode(&swapped.encode()),
        Err(RootDataError::Malformed("accounts not strictly increasing"))
    );
    assert!(matches!(
        RootData::decode(&vec![0; MAX_ROOT_DATA_BYTES + 1]),
        Err(RootDataError::TooLong(_))
    ));
}

/// Regression: a venue's first root is often of an empty tree, whose root is all zeros, which
/// the encoding reads as "no previous root". The data after it listed one slice and named zeros
/// as its previous: no reader could tell it from a first root, and the auditor found it wrong.
/// It lists the whole space now, and rebuilds alone.
#[test]
fn data_after_an_empty_trees_root_lists_every_account() {
    assert_eq!(root_of(&[]), [0; 32], "the empty tree's root is zeros");
    let leaves = sorted(vec![leaf(address(0x10, 1), 1, 5), leaf(address(0xf0, 2), 1, 6)]);
    let data = RootData::for_root(
        (2, 1, root_of(&leaves)),
        &leaves,
        Some((&[], [0; 32])),
        slice_range(1, 8),
    );
    assert_eq!(data.range, AccountRange::WHOLE);
    assert_eq!(data.previous_root, [0; 32]);
    let mut rebuild = Rebuild::default();
    rebuild.apply(&data).unwrap();
    assert_eq!(rebuild.finish(1).unwrap().1, root_of(&leaves));
}

#[test]
fn a_window_of_ranges_holds_a_full_set_only_if_every_slice_came_within_it() {
    // Four slices, a root every 10 s, a window of 50 s: a cycle fits.
    let mut window = RangeWindow::new(50);
    assert!(window.add(0, AccountRange::WHOLE), "a first root lists everything");
    for epoch in 1..20u64 {
        assert!(window.add(epoch * 10, slice_range(epoch, 4)), "epoch {epoch}");
    }
    // A venue that names slice 1 again and again: once the window no longer holds the others,
    // the full set is missing.
    let mut stuck = RangeWindow::new(50);
    assert!(stuck.add(0, AccountRange::WHOLE));
    let verdicts: Vec<bool> = (1..10u64)
        .map(|epoch| stuck.add(epoch * 10, slice_range(1, 4)))
        .collect();
    assert_eq!(verdicts, vec![true, true, true, true, true, false, false, false, false]);
    // Before the run has lasted the window nothing is judged (an auditor that just started).
    let mut young = RangeWindow::new(50);
    assert!(young.add(100, slice_range(1, 4)));
    assert!(young.add(140, slice_range(1, 4)));
    assert!(!young.add(150, slice_range(1, 4)));
}
