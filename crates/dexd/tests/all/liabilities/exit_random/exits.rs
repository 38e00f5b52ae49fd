//! The end of a random sequence: the freeze, every account's exit, and what each got.

use super::world::*;
use alloy::primitives::{FixedBytes, U256};
use alloy::sol_types::SolCall;
use dexd_core::Address;
use dexd_custody::vault::{chain_address, venue_address, DexdVault, DexdVaultV2};

/// What a freeze found.
pub(super) struct ExitSummary {
    pub(super) had_exit_root: bool,
    /// Deposits the exit root did not cover.
    pub(super) deposits_after_root: u64,
    /// The vault was frozen for a request unserved past its deadline.
    pub(super) frozen_for_a_request: bool,
}

/// The freeze and everyone's exit, with the checks. With `by_request`, a vault holding a request
/// unserved is frozen right after its deadline, however young its newest root, and its exits
/// must open no later than a challenge period after that deadline; otherwise (or with none) the
/// vault is frozen for its roots' age.
pub(super) async fn freeze_and_exit_everyone(venue: &Venue<'_>, sequence: u64, by_request: bool) -> ExitSummary {
    let world = venue.world;
    let oldest = world.view(DexdVaultV2::oldestUnservedRequestCall {}).await;
    let frozen_for_a_request = by_request && oldest.any;
    let freezer = &world.users[0];
    if frozen_for_a_request {
        let deadline_s: u64 = oldest.deadline.saturating_to();
        let now_s = world.time_s().await;
        world.chain.advance_time(deadline_s.saturating_sub(now_s) + 1).await;
        world
            .send(freezer, world.chain.vault, DexdVaultV2::freezeCall {}.abi_encode())
            .await;
        let opens_at: U256 = world.view(DexdVaultV2::exitsOpenAtCall {}).await;
        assert!(
            opens_at <= U256::from(deadline_s + TERMS.challenge_period_s + 1),
            "sequence {sequence}: exits open at {opens_at}, past the deadline {deadline_s} and a challenge period"
        );
        let now_s = world.time_s().await;
        let opens_at: u64 = opens_at.saturating_to();
        if opens_at > now_s {
            world.chain.advance_time(opens_at - now_s).await;
        }
    } else {
        world.chain.advance_time(TERMS.max_root_age_s + 1).await;
        world
            .send(freezer, world.chain.vault, DexdVaultV2::freezeCall {}.abi_encode())
            .await;
    }
    let exit_tree = if world.view(DexdVaultV2::hasExitRootCall {}).await {
        let epoch: u64 = world.view(DexdVaultV2::exitEpochCall {}).await.saturating_to();
        let tree = venue.trees.get(&epoch).cloned();
        assert!(
            tree.is_some(),
            "sequence {sequence}: the exit root {epoch} is one of the venue's"
        );
        tree
    } else {
        None
    };
    if let Some(tree) = &exit_tree {
        assert!(
            venue.paid_debits.iter().all(|debit| *debit <= tree.journal_sequence),
            "sequence {sequence}: a withdrawal paid after the exit root"
        );
    }
    let accounts: Vec<Address> = world
        .users
        .iter()
        .map(|user| venue_address(&user.address()))
        .chain([FEES, venue_address(&world.wallet)])
        .collect();
    for account in accounts {
        for token in world.tokens {
            let holder = chain_address(&account);
            let deposited = world.view(DexdVaultV2::depositedCall { account: holder, token }).await;
            let paid = world.view(DexdVaultV2::paidCall { account: holder, token }).await;
            let leaf = exit_tree.as_ref().and_then(|tree| {
                tree.leaves_of(&account)
                    .find(|index| tree.leaves[*index].token == venue_address(&token))
                    .map(|index| (tree.leaves[index], tree.tree.proof(index).unwrap()))
            });
            // What the account is owed: its leaf (all zero without one) by the formula.
            let (balance, credited, debited) = leaf.as_ref().map_or((0, 0, 0), |(leaf, _)| {
                (leaf.balance, leaf.credited_deposits, leaf.debited_withdrawals)
            });
            let owed =
                (U256::from(balance) + U256::from(debited) + deposited).saturating_sub(U256::from(credited) + paid);
            let mut paid_now = paid;
            if let Some((leaf, proof)) = &leaf {
                if owed > U256::ZERO {
                    let call = DexdVaultV2::exitCall {
                        account: holder,
                        token,
                        balance: U256::from(leaf.balance),
                        creditedDeposits: U256::from(leaf.credited_deposits),
                        debitedWithdrawals: U256::from(leaf.debited_withdrawals),
                        proof: proof.iter().map(|node| FixedBytes(*node)).collect(),
                    };
                    world.send(freezer, world.chain.vault, call.abi_encode()).await;
                    paid_now += owed;
                }
            }
            let may = world
                .view(DexdVaultV2::mayExitWithoutLeafCall { account: holder, token })
                .await;
            if may && deposited > paid_now {
                let call = DexdVaultV2::exitCall {
                    account: holder,
                    token,
                    balance: U256::ZERO,
                    creditedDeposits: U256::ZERO,
                    debitedWithdrawals: U256::ZERO,
                    proof: Vec::new(),
                };
                world.send(freezer, world.chain.vault, call.abi_encode()).await;
            }
            // What the exits paid the account: the vault's count of what it paid, which the
            // vault's token transfers follow (the vault's holdings end at zero below).
            let got = world.view(DexdVaultV2::paidCall { account: holder, token }).await - paid;
            // The account gets its exit-root balance, its debits never paid, and its deposits
            // after the root: never less (nor more) than the formula.
            assert_eq!(got, owed, "sequence {sequence}: {account} in {token}");
        }
    }
    for token in world.tokens {
        assert_eq!(
            world.holdings(token).await,
            U256::ZERO,
            "sequence {sequence}: the vault paid everyone and holds nothing of {token}"
        );
    }
    let deposits: u64 = world.view(DexdVault::depositCountCall {}).await.saturating_to();
    ExitSummary {
        had_exit_root: exit_tree.is_some(),
        deposits_after_root: deposits - exit_tree.as_ref().map_or(0, |tree| tree.deposit_count),
        frozen_for_a_request,
    }
}
