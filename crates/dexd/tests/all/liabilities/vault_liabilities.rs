//! The vault's version 2 on a real node (anvil): what it counts per account and token, roots
//! committed and refused, the guardian's veto, the freeze, and the exit's formula (deposits after
//! the root, withdrawals debited and not paid, withdrawals paid after the root), each refusal by
//! its own error. The trees are built by dexd's own code (`dexd_crypto::liability_tree`).

use crate::common;

use alloy::primitives::U256;
use alloy::sol_types::{SolCall, SolInterface};
use common::chain::{TestChain, CONTRACT_ROOT_TERMS, USDC_UNIT};
use common::vault_calls::{
    commit_call, deposit_usdc, exit_call, leaf, pay_withdrawal, refusal, send, usdc_of, view, VaultError,
};
use dexd_crypto::liability_tree::LiabilityTree;
use dexd_custody::deploy;
use dexd_custody::node::NodeError;
use dexd_custody::vault::{DexdVault, DexdVaultV2};

#[tokio::test]
async fn roots_are_refused_unless_the_operator_sends_sorted_covered_forward_totals() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let (alice, bob) = (&chain.users[0], &chain.users[1]);
    deposit_usdc(&chain, alice, 1_000 * USDC_UNIT).await;
    let leaves = [leaf(alice, chain.usdc, 1_000 * USDC_UNIT, 1_000 * USDC_UNIT, 0)];
    let tree = LiabilityTree::build(&leaves, 1);
    let covered = [(chain.usdc, 1_000 * USDC_UNIT)];

    let by_alice = refusal(&chain, alice, commit_call(&tree, 5, &covered)).await;
    assert!(matches!(by_alice, VaultError::NotOperator(_)), "{by_alice:?}");

    let too_much = [(chain.usdc, 1_000 * USDC_UNIT + 1)];
    match refusal(&chain, &chain.operator, commit_call(&tree, 5, &too_much)).await {
        VaultError::TotalExceedsHoldings(error) => {
            assert_eq!(error.token, chain.usdc);
            assert_eq!(error.holdings, U256::from(1_000 * USDC_UNIT));
        }
        other => panic!("{other:?}"),
    }
    let (low, high) = if chain.usdc < chain.wbtc {
        (chain.usdc, chain.wbtc)
    } else {
        (chain.wbtc, chain.usdc)
    };
    let unsorted = [(high, 0), (low, 0)];
    let error = refusal(&chain, &chain.operator, commit_call(&tree, 5, &unsorted)).await;
    assert!(matches!(error, VaultError::TokensNotSorted(_)), "{error:?}");
    let twice = [(low, 0), (low, 0)];
    let error = refusal(&chain, &chain.operator, commit_call(&tree, 5, &twice)).await;
    assert!(matches!(error, VaultError::TokensNotSorted(_)), "{error:?}");
    let mut mismatched = DexdVaultV2::commitRootWithDataCall::abi_decode(&commit_call(&tree, 5, &covered)).unwrap();
    mismatched.totals.push(U256::ZERO);
    let error = refusal(&chain, &chain.operator, mismatched.abi_encode()).await;
    assert!(matches!(error, VaultError::LengthMismatch(_)), "{error:?}");

    // A root without its data is refused: `commitRoot` without blobs, or empty calldata.
    let mut without_blobs = DexdVaultV2::commitRootWithDataCall::abi_decode(&commit_call(&tree, 5, &covered)).unwrap();
    let error = refusal(
        &chain,
        &chain.operator,
        DexdVaultV2::commitRootCall {
            root: without_blobs.root,
            journalSequence: without_blobs.journalSequence,
            depositCount_: without_blobs.depositCount_,
            tokens: without_blobs.tokens.clone(),
            totals: without_blobs.totals.clone(),
        }
        .abi_encode(),
    )
    .await;
    assert!(matches!(error, VaultError::RootDataMissing(_)), "{error:?}");
    without_blobs.data = Default::default();
    let error = refusal(&chain, &chain.operator, without_blobs.abi_encode()).await;
    assert!(matches!(error, VaultError::RootDataMissing(_)), "{error:?}");

    send(&chain, &chain.operator, commit_call(&tree, 5, &covered)).await;
    assert_eq!(view(&chain, DexdVaultV2::rootCountCall {}).await, U256::from(1));
    // The vault keeps the hash of the data the root came with.
    assert_eq!(
        view(&chain, DexdVaultV2::rootDataCall { epoch: U256::ZERO }).await,
        alloy::primitives::keccak256(common::vault_calls::TEST_ROOT_DATA)
    );
    let stored = view(&chain, DexdVaultV2::liabilityRootCall { epoch: U256::ZERO }).await;
    assert_eq!(stored.root.0, tree.root());
    assert_eq!(stored.journalSequence, 5);
    assert!(!stored.vetoed);

    // A root at an earlier journal position is refused; the same position again is taken (a
    // quiet venue still commits, so that the vault never becomes freezable while it runs).
    let error = refusal(&chain, &chain.operator, commit_call(&tree, 4, &covered)).await;
    assert!(matches!(error, VaultError::SequenceGoesBack(_)), "{error:?}");
    send(&chain, &chain.operator, commit_call(&tree, 5, &covered)).await;

    // The guardian alone vetoes, and only during the challenge period.
    let error = refusal(&chain, bob, DexdVaultV2::vetoCall { epoch: U256::ZERO }.abi_encode()).await;
    assert!(matches!(error, VaultError::NotGuardian(_)), "{error:?}");
    let error = refusal(
        &chain,
        &chain.guardian,
        DexdVaultV2::vetoCall { epoch: U256::from(7) }.abi_encode(),
    )
    .await;
    assert!(matches!(error, VaultError::UnknownEpoch(_)), "{error:?}");
    send(
        &chain,
        &chain.guardian,
        DexdVaultV2::vetoCall { epoch: U256::from(1) }.abi_encode(),
    )
    .await;
    let error = refusal(
        &chain,
        &chain.guardian,
        DexdVaultV2::vetoCall { epoch: U256::from(1) }.abi_encode(),
    )
    .await;
    assert!(matches!(error, VaultError::AlreadyVetoed(_)), "{error:?}");
    chain
        .advance_time(common::chain::CONTRACT_ROOT_TERMS.challenge_period_s)
        .await;
    let error = refusal(
        &chain,
        &chain.guardian,
        DexdVaultV2::vetoCall { epoch: U256::ZERO }.abi_encode(),
    )
    .await;
    assert!(matches!(error, VaultError::ChallengePeriodOver(_)), "{error:?}");
}

#[tokio::test]
async fn a_vault_whose_challenge_period_is_not_shorter_than_its_max_root_age_is_not_deployed() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    for (max_root_age_s, challenge_period_s) in [(600, 600), (600, 601), (0, 0)] {
        let terms = deploy::RootTerms {
            max_root_age_s,
            challenge_period_s,
            request_period_s: 1_800,
            guardians: Vec::new(),
        };
        let deployed = deploy::deploy_vault_v2(
            &chain.node,
            &chain.deployer,
            chain.deployer.address(),
            chain.operator.address(),
            &terms,
        )
        .await;
        match deployed {
            Err(NodeError::Reverted { data: Some(data), .. }) => assert!(
                matches!(VaultError::abi_decode(&data), Ok(VaultError::InvalidPeriods(_))),
                "{data}"
            ),
            other => panic!("{max_root_age_s} / {challenge_period_s}: {other:?}"),
        }
    }
}

#[tokio::test]
async fn a_frozen_vault_pays_each_account_its_leaf_by_the_formula_once() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let (alice, bob, carol, dave) = (&chain.users[0], &chain.users[1], &chain.users[2], &chain.users[3]);
    deposit_usdc(&chain, alice, 1_000 * USDC_UNIT).await;
    deposit_usdc(&chain, bob, 500 * USDC_UNIT).await;
    deposit_usdc(&chain, carol, 300 * USDC_UNIT).await;
    let deposited = view(
        &chain,
        DexdVaultV2::depositedCall {
            account: alice.address(),
            token: chain.usdc,
        },
    )
    .await;
    assert_eq!(deposited, U256::from(1_000 * USDC_UNIT));

    // The venue's books at the root: Alice sold 0 and withdrew 400 (debited, not yet paid);
    // Bob holds his 500; Carol withdrew all 300 (debited, and never paid).
    let leaves = vec![
        leaf(alice, chain.usdc, 600 * USDC_UNIT, 1_000 * USDC_UNIT, 400 * USDC_UNIT),
        leaf(bob, chain.usdc, 500 * USDC_UNIT, 500 * USDC_UNIT, 0),
        leaf(carol, chain.usdc, 0, 300 * USDC_UNIT, 300 * USDC_UNIT),
    ];
    let tree = LiabilityTree::build(&leaves, 1);
    let owed = 600 + 500 + 400 + 300;
    send(
        &chain,
        &chain.operator,
        commit_call(&tree, 10, &[(chain.usdc, owed * USDC_UNIT)]),
    )
    .await;
    // A later root that lies (Alice owed everything) is vetoed by the guardian: exits never use it.
    let lie = vec![leaf(alice, chain.usdc, 1_800 * USDC_UNIT, 1_000 * USDC_UNIT, 0)];
    let lie_tree = LiabilityTree::build(&lie, 1);
    send(&chain, &chain.operator, commit_call(&lie_tree, 11, &[(chain.usdc, 0)])).await;
    send(
        &chain,
        &chain.guardian,
        DexdVaultV2::vetoCall { epoch: U256::from(1) }.abi_encode(),
    )
    .await;

    // After the root: Alice's withdrawal is paid, Bob deposits 200 more.
    send(
        &chain,
        &chain.operator,
        pay_withdrawal(&chain, alice, 400 * USDC_UNIT, 1).await,
    )
    .await;
    deposit_usdc(&chain, bob, 200 * USDC_UNIT).await;

    // Nothing exits before the freeze, and the freeze waits for `maxRootAge` after the newest
    // root the guardian kept.
    let error = refusal(&chain, dave, exit_call(&leaves, &tree, 0)).await;
    assert!(matches!(error, VaultError::NotFrozen(_)), "{error:?}");
    let error = refusal(&chain, dave, DexdVaultV2::freezeCall {}.abi_encode()).await;
    assert!(matches!(error, VaultError::FreezeNotDue(_)), "{error:?}");
    chain
        .advance_time(common::chain::CONTRACT_ROOT_TERMS.max_root_age_s + 1)
        .await;
    send(&chain, dave, DexdVaultV2::freezeCall {}.abi_encode()).await;
    assert!(view(&chain, DexdVaultV2::frozenCall {}).await);
    assert_eq!(view(&chain, DexdVaultV2::exitEpochCall {}).await, U256::ZERO);

    // Frozen: no deposits, no operator payments, no roots.
    let deposit = DexdVault::depositCall {
        token: chain.usdc,
        amount: U256::from(USDC_UNIT),
    }
    .abi_encode();
    assert!(matches!(refusal(&chain, bob, deposit).await, VaultError::IsFrozen(_)));
    let payment = pay_withdrawal(&chain, bob, USDC_UNIT, 2).await;
    assert!(matches!(
        refusal(&chain, &chain.operator, payment).await,
        VaultError::IsFrozen(_)
    ));
    let root = commit_call(&tree, 12, &[]);
    assert!(matches!(
        refusal(&chain, &chain.operator, root).await,
        VaultError::IsFrozen(_)
    ));
    // A frozen vault still takes a veto of a root within its period (its exits wait for the
    // exit root to be past its own); the exit root here is long past it.
    let veto = DexdVaultV2::vetoCall { epoch: U256::ZERO }.abi_encode();
    assert!(matches!(
        refusal(&chain, &chain.guardian, veto).await,
        VaultError::ChallengePeriodOver(_)
    ));
    let again = DexdVaultV2::freezeCall {}.abi_encode();
    assert!(matches!(refusal(&chain, dave, again).await, VaultError::IsFrozen(_)));

    // The vetoed root's leaf does not pass; a leaf with a changed amount does not either.
    let error = refusal(&chain, dave, exit_call(&lie, &lie_tree, 0)).await;
    assert!(matches!(error, VaultError::InvalidProof(_)), "{error:?}");
    let mut forged = leaves.clone();
    forged[0].balance += 1;
    let error = refusal(&chain, dave, exit_call(&forged, &tree, 0)).await;
    assert!(matches!(error, VaultError::InvalidProof(_)), "{error:?}");

    // Anyone sends the exit; the account is paid: balance + debited - paid + deposited - credited.
    let before = [
        usdc_of(&chain, alice.address()).await,
        usdc_of(&chain, bob.address()).await,
        usdc_of(&chain, carol.address()).await,
    ];
    for index in 0..3 {
        send(&chain, dave, exit_call(&leaves, &tree, index)).await;
    }
    let gained = [
        usdc_of(&chain, alice.address()).await - before[0],
        usdc_of(&chain, bob.address()).await - before[1],
        usdc_of(&chain, carol.address()).await - before[2],
    ];
    // Alice: 600 + 400 - 400 + 1000 - 1000; Bob: 500 + 0 - 0 + 700 - 500; Carol: 0 + 300 - 0
    // + 300 - 300.
    assert_eq!(gained, [600 * USDC_UNIT, 700 * USDC_UNIT, 300 * USDC_UNIT]);
    assert_eq!(
        chain.vault_balance(Some(chain.usdc)).await,
        U256::ZERO,
        "the vault paid out exactly what it held"
    );
    let error = refusal(&chain, dave, exit_call(&leaves, &tree, 1)).await;
    assert!(matches!(error, VaultError::NothingToExit(_)), "{error:?}");
}

#[tokio::test]
async fn without_any_root_a_frozen_vault_returns_what_was_deposited_and_not_paid() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let alice = &chain.users[0];
    deposit_usdc(&chain, alice, 250 * USDC_UNIT).await;
    send(
        &chain,
        &chain.operator,
        pay_withdrawal(&chain, alice, 50 * USDC_UNIT, 1).await,
    )
    .await;
    chain
        .advance_time(common::chain::CONTRACT_ROOT_TERMS.max_root_age_s + 1)
        .await;
    send(&chain, alice, DexdVaultV2::freezeCall {}.abi_encode()).await;
    assert!(!view(&chain, DexdVaultV2::hasExitRootCall {}).await);
    let exit = |balance: u128| {
        DexdVaultV2::exitCall {
            account: alice.address(),
            token: chain.usdc,
            balance: U256::from(balance),
            creditedDeposits: U256::ZERO,
            debitedWithdrawals: U256::ZERO,
            proof: Vec::new(),
        }
        .abi_encode()
    };
    let error = refusal(&chain, alice, exit(1)).await;
    assert!(matches!(error, VaultError::InvalidProof(_)), "{error:?}");
    let before = usdc_of(&chain, alice.address()).await;
    send(&chain, alice, exit(0)).await;
    assert_eq!(usdc_of(&chain, alice.address()).await - before, 200 * USDC_UNIT);
    let nothing = DexdVaultV2::exitCall {
        account: chain.users[1].address(),
        token: chain.usdc,
        balance: U256::ZERO,
        creditedDeposits: U256::ZERO,
        debitedWithdrawals: U256::ZERO,
        proof: Vec::new(),
    }
    .abi_encode();
    let error = refusal(&chain, alice, nothing).await;
    assert!(matches!(error, VaultError::NothingToExit(_)), "{error:?}");
}
