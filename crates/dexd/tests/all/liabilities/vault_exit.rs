//! The vault's exit holds (contract version 4's rules, on a real node): a root must carry a
//! total for every token ever deposited and cover only deposits the vault took, so a stolen
//! operator key cannot plant a root that skips the holdings check; a deposit no exit root covers
//! exits with the all-zero leaf while a covered one needs its leaf; nobody's all-zero exit spoils
//! another's leaf; and a root planted far ahead is vetoed by the owner, after which the venue
//! commits again and its root is the exit root. Each refusal is asserted by the vault's own
//! error.

use crate::common;

use alloy::primitives::{Address as ChainAddress, U256};
use alloy::sol_types::SolCall;
use common::chain::{TestChain, CONTRACT_ROOT_TERMS, USDC_UNIT};
use common::vault_calls::{commit_covering, deposit_usdc, exit_call, leaf, refusal, send, usdc_of, view, VaultError};
use dexd_crypto::liability_tree::LiabilityTree;
use dexd_custody::deploy;
use dexd_custody::vault::{DexdVault, DexdVaultV2};

/// The all-zero exit of `account`'s `token`: no leaf, no proof.
fn all_zero_exit(account: ChainAddress, token: ChainAddress) -> Vec<u8> {
    DexdVaultV2::exitCall {
        account,
        token,
        balance: U256::ZERO,
        creditedDeposits: U256::ZERO,
        debitedWithdrawals: U256::ZERO,
        proof: Vec::new(),
    }
    .abi_encode()
}

async fn freeze(chain: &TestChain) {
    chain.advance_time(CONTRACT_ROOT_TERMS.max_root_age_s + 1).await;
    send(chain, &chain.users[3], DexdVaultV2::freezeCall {}.abi_encode()).await;
}

#[tokio::test]
async fn a_root_carries_every_deposited_token_and_covers_only_deposits_the_vault_took() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let alice = &chain.users[0];
    deposit_usdc(&chain, alice, 100 * USDC_UNIT).await;
    let leaves = [leaf(alice, chain.usdc, 100 * USDC_UNIT, 100 * USDC_UNIT, 0)];
    let tree = LiabilityTree::build(&leaves, 1);

    // The stolen key's root of the review: no tokens at all.
    let planted = refusal(&chain, &chain.operator, commit_covering(&tree, 9, 0, &[])).await;
    match planted {
        VaultError::TokenMissing(missing) => assert_eq!(missing.token, chain.usdc),
        other => panic!("{other:?}"),
    }
    // Another token's total does not stand for USDC's.
    let error = refusal(
        &chain,
        &chain.operator,
        commit_covering(&tree, 9, 0, &[(chain.wbtc, 0)]),
    )
    .await;
    assert!(matches!(error, VaultError::TokenMissing(_)), "{error:?}");
    // A token the owner never listed is neither taken as a deposit nor as a total.
    let stray = deploy::deploy_test_token(&chain.node, &chain.deployer, "Stray", "STRAY", 6)
        .await
        .unwrap();
    deploy::mint(
        &chain.node,
        &chain.deployer,
        stray.address,
        alice.address(),
        U256::from(5u64),
    )
    .await
    .unwrap();
    let error = deploy::deposit_from_wallet(&chain.node, alice, Some(stray.address), U256::from(5u64)).await;
    assert!(error.is_err(), "a deposit of an unlisted token is refused");
    let mut both = vec![(chain.usdc, 100 * USDC_UNIT), (stray.address, 0)];
    both.sort();
    let error = refusal(&chain, &chain.operator, commit_covering(&tree, 9, 1, &both)).await;
    assert!(matches!(error, VaultError::TokenNotListed(_)), "{error:?}");
    // No root covers a deposit the vault has not taken.
    let usdc_total = [(chain.usdc, 100 * USDC_UNIT)];
    let error = refusal(&chain, &chain.operator, commit_covering(&tree, 9, 2, &usdc_total)).await;
    assert!(matches!(error, VaultError::DepositCountAhead(_)), "{error:?}");

    send(&chain, &chain.operator, commit_covering(&tree, 9, 1, &usdc_total)).await;
    let stored = view(&chain, DexdVaultV2::liabilityRootCall { epoch: U256::ZERO }).await;
    assert_eq!((stored.journalSequence, stored.depositCount), (9, 1));
    assert_eq!(
        view(&chain, DexdVaultV2::depositedTokensCall {}).await,
        vec![chain.usdc]
    );
    // A later root covers at least as many deposits.
    let error = refusal(&chain, &chain.operator, commit_covering(&tree, 10, 0, &usdc_total)).await;
    assert!(matches!(error, VaultError::DepositCountGoesBack(_)), "{error:?}");
}

#[tokio::test]
async fn a_deposit_after_the_exit_root_leaves_with_the_all_zero_leaf_and_a_covered_one_needs_its_leaf() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let (alice, bob, mallory) = (&chain.users[0], &chain.users[1], &chain.users[2]);
    deposit_usdc(&chain, alice, 100 * USDC_UNIT).await;
    // The venue's root: Alice sold 30 USDC's worth to Mallory (a trade moves balances only).
    let leaves = vec![
        leaf(alice, chain.usdc, 70 * USDC_UNIT, 100 * USDC_UNIT, 0),
        leaf(mallory, chain.usdc, 30 * USDC_UNIT, 0, 0),
    ];
    let tree = LiabilityTree::build(&leaves, 1);
    send(
        &chain,
        &chain.operator,
        commit_covering(&tree, 5, 1, &[(chain.usdc, 100 * USDC_UNIT)]),
    )
    .await;
    // Deposits after the root: Bob's first, and Mallory's on top of her leaf.
    deposit_usdc(&chain, bob, 50 * USDC_UNIT).await;
    deposit_usdc(&chain, mallory, 20 * USDC_UNIT).await;
    freeze(&chain).await;
    assert!(view(&chain, DexdVaultV2::hasExitRootCall {}).await);

    let may = |account: ChainAddress| DexdVaultV2::mayExitWithoutLeafCall {
        account,
        token: chain.usdc,
    };
    assert!(view(&chain, may(bob.address())).await);
    assert!(view(&chain, may(mallory.address())).await);
    assert!(!view(&chain, may(alice.address())).await, "her deposit is in the root");

    // Bob was locked in before (InvalidProof); now he gets his 50 back.
    let before = usdc_of(&chain, bob.address()).await;
    send(&chain, alice, all_zero_exit(bob.address(), chain.usdc)).await;
    assert_eq!(usdc_of(&chain, bob.address()).await - before, 50 * USDC_UNIT);
    // Alice cannot take her deposit back while skipping the leaf that shows what she sold.
    let error = refusal(&chain, alice, all_zero_exit(alice.address(), chain.usdc)).await;
    assert!(matches!(error, VaultError::InvalidProof(_)), "{error:?}");
    let before = usdc_of(&chain, alice.address()).await;
    send(&chain, alice, exit_call(&leaves, &tree, 0)).await;
    assert_eq!(usdc_of(&chain, alice.address()).await - before, 70 * USDC_UNIT);

    // Someone sends Mallory's all-zero exit first: she gets her later deposit, and her leaf still
    // pays the rest of what she is owed (30 + 20 in all), once.
    let before = usdc_of(&chain, mallory.address()).await;
    send(&chain, bob, all_zero_exit(mallory.address(), chain.usdc)).await;
    assert_eq!(usdc_of(&chain, mallory.address()).await - before, 20 * USDC_UNIT);
    send(&chain, bob, exit_call(&leaves, &tree, 1)).await;
    assert_eq!(usdc_of(&chain, mallory.address()).await - before, 50 * USDC_UNIT);
    let error = refusal(&chain, bob, exit_call(&leaves, &tree, 1)).await;
    assert!(matches!(error, VaultError::NothingToExit(_)), "{error:?}");
    let error = refusal(&chain, bob, all_zero_exit(mallory.address(), chain.usdc)).await;
    assert!(matches!(error, VaultError::NothingToExit(_)), "{error:?}");
    assert_eq!(
        chain.vault_balance(Some(chain.usdc)).await,
        U256::ZERO,
        "every unit the vault held went to whom it was owed"
    );
}

#[tokio::test]
async fn a_root_planted_far_ahead_is_vetoed_by_the_owner_and_the_venues_next_root_is_the_exit_root() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let (alice, mallory) = (&chain.users[0], &chain.users[2]);
    deposit_usdc(&chain, alice, 100 * USDC_UNIT).await;
    let honest = vec![leaf(alice, chain.usdc, 100 * USDC_UNIT, 100 * USDC_UNIT, 0)];
    let honest_tree = LiabilityTree::build(&honest, 1);
    let usdc_total = [(chain.usdc, 100 * USDC_UNIT)];
    send(
        &chain,
        &chain.operator,
        commit_covering(&honest_tree, 5, 1, &usdc_total),
    )
    .await;

    // The stolen operator key plants a root that gives Mallory everything, at the last journal
    // position there is, so that the venue could never commit after it.
    let lie = vec![leaf(mallory, chain.usdc, 100 * USDC_UNIT, 0, 0)];
    let lie_tree = LiabilityTree::build(&lie, 1);
    send(
        &chain,
        &chain.operator,
        commit_covering(&lie_tree, u64::MAX, 1, &usdc_total),
    )
    .await;
    let error = refusal(
        &chain,
        &chain.operator,
        commit_covering(&honest_tree, 6, 1, &usdc_total),
    )
    .await;
    assert!(matches!(error, VaultError::SequenceGoesBack(_)), "{error:?}");

    // Only the owner or the guardian vetoes.
    let veto = || DexdVaultV2::vetoCall { epoch: U256::from(1) }.abi_encode();
    let error = refusal(&chain, mallory, veto()).await;
    assert!(matches!(error, VaultError::NotGuardian(_)), "{error:?}");
    let error = refusal(&chain, &chain.operator, veto()).await;
    assert!(
        matches!(error, VaultError::NotGuardian(_)),
        "the operator key cannot undo others' vetoes"
    );
    send(&chain, &chain.deployer, veto()).await;
    assert!(
        view(&chain, DexdVaultV2::liabilityRootCall { epoch: U256::from(1) })
            .await
            .vetoed
    );
    // Held against the newest root not vetoed, the venue's root goes in again.
    send(
        &chain,
        &chain.operator,
        commit_covering(&honest_tree, 6, 1, &usdc_total),
    )
    .await;

    freeze(&chain).await;
    assert_eq!(view(&chain, DexdVaultV2::exitEpochCall {}).await, U256::from(2));
    let error = refusal(&chain, mallory, exit_call(&lie, &lie_tree, 0)).await;
    assert!(matches!(error, VaultError::InvalidProof(_)), "{error:?}");
    let before = usdc_of(&chain, alice.address()).await;
    send(&chain, mallory, exit_call(&honest, &honest_tree, 0)).await;
    assert_eq!(usdc_of(&chain, alice.address()).await - before, 100 * USDC_UNIT);
    // A frozen vault takes no deposit.
    let deposit = DexdVault::depositCall {
        token: chain.usdc,
        amount: U256::from(USDC_UNIT),
    }
    .abi_encode();
    assert!(matches!(refusal(&chain, alice, deposit).await, VaultError::IsFrozen(_)));
}
