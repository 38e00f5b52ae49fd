//! The live-nonce registry's rules: a nonce accepted once per account while it lives, expiries
//! and lifetimes, each holder's room and its owner's reserve, a full registry still taking those
//! under their share, a batch's orders applied once each, and the order the live claims are
//! walked in.

use super::*;

const HOUR: u64 = MAX_SIGNED_REQUEST_LIFETIME_MS;

fn account(byte: u8) -> Address {
    Address::from_bytes([byte; 20])
}

fn claim(nonce: u8, expiry_ms: u64) -> NonceClaim {
    NonceClaim {
        nonce: Nonce::from_bytes([nonce; 32]),
        expiry_ms,
        batch: None,
        venue_signed: false,
    }
}

fn batch_claim(nonce: u8, identity: u8, index: u8, starts: bool) -> NonceClaim {
    NonceClaim {
        batch: Some(BatchSlot {
            identity: [identity; 32],
            index,
            starts,
        }),
        ..claim(nonce, 5_000)
    }
}

/// The account itself signing.
fn own(who: u8) -> ClaimParties {
    ClaimParties {
        account: account(who),
        signer: account(who),
        holder: account(who),
    }
}

/// Agent `agent` signing for `who`: under the per-owner rule (the owner holds the room) or
/// before it (the agent holds its own).
fn by_agent(who: u8, agent: u8, per_owner: bool) -> ClaimParties {
    ClaimParties {
        account: account(who),
        signer: account(agent),
        holder: if per_owner { account(who) } else { account(agent) },
    }
}

/// A check and record by the account itself.
fn check(registry: &NonceRegistry, who: u8, claim: NonceClaim, now_ms: u64) -> Result<(), NonceRejection> {
    registry.check(&own(who), &claim, now_ms, HOUR)
}

fn record(registry: &mut NonceRegistry, who: u8, claim: NonceClaim, now_ms: u64) {
    registry.record(own(who), claim, now_ms);
}

#[test]
fn a_nonce_is_accepted_once_per_account_while_live() {
    let mut registry = NonceRegistry::new(10, 10);
    check(&registry, 1, claim(7, 2_000), 1_000).unwrap();
    record(&mut registry, 1, claim(7, 2_000), 1_000);
    assert_eq!(check(&registry, 1, claim(7, 3_000), 1_500), Err(NonceRejection::Reused));
    // Another account may use the same number.
    assert_eq!(check(&registry, 2, claim(7, 2_000), 1_500), Ok(()));
    // An agent of the account may not: the nonce is the account's.
    assert_eq!(
        registry.check(&by_agent(1, 9, true), &claim(7, 2_000), 1_500, HOUR),
        Err(NonceRejection::Reused)
    );
}

#[test]
fn expired_and_far_expiries_are_refused() {
    let registry = NonceRegistry::new(10, 10);
    assert_eq!(
        check(&registry, 1, claim(1, 1_000), 1_000),
        Err(NonceRejection::Expired)
    );
    assert_eq!(
        check(&registry, 1, claim(1, 1_000 + HOUR + 1), 1_000),
        Err(NonceRejection::ExpiryTooFar { max_lifetime_ms: HOUR })
    );
    assert_eq!(check(&registry, 1, claim(1, 1_000 + HOUR), 1_000), Ok(()));
    // A withdrawal may live a week.
    assert_eq!(
        registry.check(
            &own(1),
            &claim(1, 1_000 + HOUR + 1),
            1_000,
            MAX_SIGNED_WITHDRAWAL_LIFETIME_MS
        ),
        Ok(())
    );
}

#[test]
fn expired_claims_are_forgotten_and_free_room() {
    let mut registry = NonceRegistry::new(2, 2);
    record(&mut registry, 1, claim(1, 2_000), 1_000);
    record(&mut registry, 1, claim(2, 5_000), 1_000);
    assert_eq!(
        check(&registry, 1, claim(3, 6_000), 1_500),
        Err(NonceRejection::AccountFull { frees_at_ms: 2_000 })
    );
    // At 2,000 the first claim has expired, so there is room again.
    check(&registry, 1, claim(3, 6_000), 2_000).unwrap();
    record(&mut registry, 1, claim(3, 6_000), 2_000);
    assert_eq!(registry.len(), 2);
    assert_eq!(check(&registry, 1, claim(2, 6_000), 2_000), Err(NonceRejection::Reused));
}

/// The state hash and snapshots walk the live claims in `LiveClaim`'s order (expiry, account,
/// nonce, signer) whatever order they came in, and a restored registry walks them the same.
#[test]
fn live_claims_are_walked_in_their_tuple_order() {
    let mut registry = NonceRegistry::new(100, 100);
    let mut expected = Vec::new();
    // Three expiries, each shared by claims of several accounts, recorded out of order.
    for (step, (who, nonce, expiry_ms)) in [
        (3, 5, 9_000),
        (1, 9, 7_000),
        (2, 1, 9_000),
        (1, 2, 9_000),
        (4, 4, 7_000),
        (2, 8, 8_000),
        (1, 1, 7_000),
    ]
    .into_iter()
    .enumerate()
    {
        record(&mut registry, who, claim(nonce, expiry_ms), 1_000 + step as u64);
        expected.push((expiry_ms, account(who), Nonce::from_bytes([nonce; 32]), account(who)));
    }
    expected.sort();
    assert_eq!(registry.iter_in_order().collect::<Vec<_>>(), expected);
    let restored = NonceRegistry::restore((100, 100), expected.iter().rev().copied(), [], |_, signer| *signer);
    assert_eq!(restored.iter_in_order().collect::<Vec<_>>(), expected);
    // Forgetting the expired keeps the rest in order.
    record(&mut registry, 5, claim(1, 20_000), 8_000);
    expected.retain(|(expiry_ms, ..)| *expiry_ms > 8_000);
    expected.push((20_000, account(5), Nonce::from_bytes([1; 32]), account(5)));
    assert_eq!(registry.iter_in_order().collect::<Vec<_>>(), expected);
    assert_eq!(registry.len(), expected.len());
}

#[test]
fn one_account_cannot_fill_the_registry() {
    let mut registry = NonceRegistry::new(10, 2);
    record(&mut registry, 1, claim(1, 5_000), 1_000);
    record(&mut registry, 1, claim(2, 3_000), 1_000);
    assert_eq!(
        check(&registry, 1, claim(3, 6_000), 1_500),
        Err(NonceRejection::AccountFull { frees_at_ms: 3_000 })
    );
    // Others are not held up, and once one of the account's claims expires it has room.
    assert_eq!(check(&registry, 2, claim(3, 6_000), 1_500), Ok(()));
    assert_eq!(check(&registry, 1, claim(3, 6_000), 3_000), Ok(()));
    record(&mut registry, 1, claim(3, 6_000), 3_000);
    assert_eq!(registry.by_holder[&account(1)].total, 2);
    // Everything expired: nothing of the account is left behind.
    record(&mut registry, 2, claim(9, 9_000), 8_000);
    assert!(!registry.by_holder.contains_key(&account(1)));
    assert_eq!(registry.len(), 1);
}

#[test]
fn before_the_per_owner_rule_an_agent_held_its_own_room() {
    // Account 1 with its agent 9; each signer may hold 2.
    let mut registry = NonceRegistry::new(100, 2);
    for nonce in [1, 2] {
        registry
            .check(&by_agent(1, 9, false), &claim(nonce, 5_000), 1_000, HOUR)
            .unwrap();
        registry.record(by_agent(1, 9, false), claim(nonce, 5_000), 1_000);
    }
    assert_eq!(
        registry.check(&by_agent(1, 9, false), &claim(3, 5_000), 1_000, HOUR),
        Err(NonceRejection::AccountFull { frees_at_ms: 5_000 })
    );
    // The owner's own signed requests (a revoke, a withdrawal) still go in.
    assert_eq!(check(&registry, 1, claim(3, 5_000), 1_000), Ok(()));
}

/// An account and its ten agents hold one room, not eleven: the agents together fill all
/// but the owner's reserve, and the owner's own requests take that reserve.
#[test]
fn an_account_and_its_agents_share_one_room_and_the_owner_keeps_a_reserve() {
    let mut registry = NonceRegistry::new(1_000, 20);
    let mut nonce = 0u8;
    let mut taken = 0;
    for agent in 10..20 {
        for _ in 0..5 {
            nonce += 1;
            if registry
                .check(&by_agent(1, agent, true), &claim(nonce, 5_000), 1_000, HOUR)
                .is_ok()
            {
                registry.record(by_agent(1, agent, true), claim(nonce, 5_000), 1_000);
                taken += 1;
            }
        }
    }
    assert_eq!(taken, 20 - owner_reserve(20), "ten agents, one room less the reserve");
    assert_eq!(
        registry.check(&by_agent(1, 19, true), &claim(200, 5_000), 1_000, HOUR),
        Err(NonceRejection::AccountFull { frees_at_ms: 5_000 })
    );
    // The owner takes its reserve, then it is full too.
    for reserved in 0..owner_reserve(20) {
        let claim = claim(201 + reserved as u8, 5_000);
        check(&registry, 1, claim, 1_000).unwrap();
        record(&mut registry, 1, claim, 1_000);
    }
    assert_eq!(
        check(&registry, 1, claim(250, 5_000), 1_000),
        Err(NonceRejection::AccountFull { frees_at_ms: 5_000 })
    );
    // Another account is not held up.
    assert_eq!(check(&registry, 2, claim(1, 5_000), 1_000), Ok(()));
}

#[test]
fn signers_that_filled_the_registry_stop_nobody_under_their_share() {
    // Three signers fill a registry of 6, two each.
    let mut registry = NonceRegistry::new(6, 2);
    for who in [1, 2, 3] {
        for nonce in [1, 2] {
            record(&mut registry, who, claim(nonce, 9_000), 1_000);
        }
    }
    // A fourth signer holds nothing, under the share of 6 / 3: it gets room.
    assert_eq!(check(&registry, 4, claim(1, 9_000), 1_000), Ok(()));
    record(&mut registry, 4, claim(1, 9_000), 1_000);
    // Six more newcomers, each once: the registry grows, but never past twice its limit.
    let mut taken = 7;
    for who in 5..=20 {
        if check(&registry, who, claim(1, 9_000), 1_000).is_ok() {
            record(&mut registry, who, claim(1, 9_000), 1_000);
            taken += 1;
        }
    }
    assert_eq!(taken, 12, "twice the limit");
    assert_eq!(check(&registry, 21, claim(1, 9_000), 1_000), Err(NonceRejection::Full));
}

#[test]
fn each_order_of_a_batch_is_applied_once_whatever_copy_carries_it() {
    let mut registry = NonceRegistry::new(10, 10);
    // The batch's first copy: order 0 claims, order 1 follows.
    check(&registry, 1, batch_claim(7, 0xaa, 0, true), 1_000).unwrap();
    record(&mut registry, 1, batch_claim(7, 0xaa, 0, true), 1_000);
    check(&registry, 1, batch_claim(7, 0xaa, 1, false), 1_000).unwrap();
    record(&mut registry, 1, batch_claim(7, 0xaa, 1, false), 1_000);
    assert_eq!(registry.len(), 1, "a batch holds one nonce");
    // A second copy that starts: the nonce is taken.
    assert_eq!(
        check(&registry, 1, batch_claim(7, 0xaa, 0, true), 1_100),
        Err(NonceRejection::Reused)
    );
    // Its orders presented as followers (a writer that took it for the first copy): each
    // applied order is refused; an order the first copy did not apply may still go in once.
    for index in [0, 1] {
        assert_eq!(
            check(&registry, 1, batch_claim(7, 0xaa, index, false), 1_100),
            Err(NonceRejection::Reused)
        );
    }
    assert_eq!(check(&registry, 1, batch_claim(7, 0xaa, 2, false), 1_100), Ok(()));
    // Another batch with the same nonce never follows this one's claim.
    assert_eq!(
        check(&registry, 1, batch_claim(7, 0xbb, 2, false), 1_100),
        Err(NonceRejection::Reused)
    );
    // A follower with no claim at all is refused, and says so.
    assert_eq!(
        check(&registry, 1, batch_claim(8, 0xaa, 1, false), 1_100),
        Err(NonceRejection::BatchNotClaimed)
    );
    assert_eq!(
        check(&registry, 1, batch_claim(8, 0xaa, 64, true), 1_100),
        Err(NonceRejection::Reused),
        "an index past the registry's bits is never applied"
    );
    // At its expiry the batch is forgotten with its nonce.
    record(&mut registry, 2, claim(1, 9_000), 6_000);
    assert!(registry.batch(&account(1), &Nonce::from_bytes([7; 32])).is_none());
    assert_eq!(registry.len(), 1);
}
