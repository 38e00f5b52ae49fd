//! The vault's version 2 on a real node (anvil), contract version 5's parts: a withdrawal asked
//! for on chain and served (or the vault frozen past its deadline, however young its newest
//! root), a payment the account refuses held for it to claim, a batch that skips a withdrawal
//! its own account's contract refuses on chain and pays the others, several guardians and a
//! change of them that waits a challenge period, and a veto whose gas does not grow with the
//! vetoed roots before it. Each refusal by its own error.

use crate::common;

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use common::chain::{TestChain, CONTRACT_ROOT_TERMS, USDC_UNIT};
use common::vault_calls::{commit_call, deposit_usdc, exit_call, leaf, refusal, send, usdc_of, view, VaultError};
use dexd_crypto::liability_tree::LiabilityTree;
use dexd_crypto::{PrivateKey, SigningDomain};
use dexd_custody::deploy;
use dexd_custody::vault::{venue_address, DexdVault, DexdVaultV2, WithdrawalTerms};

/// Moves the chain's clock past `time_s`: anvil's block times run ahead of the wall clock when
/// it mines faster than a block a second, so a deadline is reached by the chain's time, not by
/// adding a period to the wall clock.
async fn advance_past(chain: &TestChain, time_s: u64) {
    let head = chain.node.head().await.unwrap();
    let (_, now_s) = chain.node.block(head).await.unwrap().unwrap();
    chain.advance_time(time_s.saturating_sub(now_s) + 1).await;
}

fn request_call(token: ChainAddress, units: u128) -> Vec<u8> {
    DexdVaultV2::requestWithdrawalCall {
        token,
        amount: U256::from(units),
    }
    .abi_encode()
}

fn serve_call(request_id: u64, units: u128) -> Vec<u8> {
    DexdVaultV2::serveRequestCall {
        requestId: U256::from(request_id),
        amount: U256::from(units),
    }
    .abi_encode()
}

#[tokio::test]
async fn a_request_is_served_once_and_one_unserved_past_its_deadline_freezes_the_vault() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let (alice, bob, dave) = (&chain.users[0], &chain.users[1], &chain.users[3]);
    deposit_usdc(&chain, alice, 1_000 * USDC_UNIT).await;
    deposit_usdc(&chain, bob, 100 * USDC_UNIT).await;

    // Nothing to ask for, or a token the vault does not take: refused.
    let error = refusal(&chain, alice, request_call(chain.usdc, 0)).await;
    assert!(matches!(error, VaultError::ZeroAmount(_)), "{error:?}");
    let error = refusal(&chain, alice, request_call(ChainAddress::repeat_byte(0x77), 1)).await;
    assert!(matches!(error, VaultError::TokenNotListed(_)), "{error:?}");

    let receipt = send(&chain, alice, request_call(chain.usdc, 300 * USDC_UNIT)).await;
    let asked_at = chain.node.block(receipt.block_number).await.unwrap().unwrap().1;
    send(&chain, bob, request_call(chain.usdc, 50 * USDC_UNIT)).await;
    assert_eq!(view(&chain, DexdVaultV2::requestCountCall {}).await, U256::from(2));
    let first = view(&chain, DexdVaultV2::withdrawalRequestCall { requestId: U256::ZERO }).await;
    assert_eq!(
        (first.account, first.token, first.amount, first.served),
        (alice.address(), chain.usdc, U256::from(300 * USDC_UNIT), false)
    );
    assert_eq!(
        first.deadline,
        U256::from(asked_at + CONTRACT_ROOT_TERMS.request_period_s)
    );

    // Only the operator serves, at most what was asked, once.
    let error = refusal(&chain, alice, serve_call(0, 300 * USDC_UNIT)).await;
    assert!(matches!(error, VaultError::NotOperator(_)), "{error:?}");
    let error = refusal(&chain, &chain.operator, serve_call(0, 300 * USDC_UNIT + 1)).await;
    assert!(matches!(error, VaultError::AboveRequest(_)), "{error:?}");
    let error = refusal(&chain, &chain.operator, serve_call(7, 1)).await;
    assert!(matches!(error, VaultError::UnknownRequest(_)), "{error:?}");
    let before = usdc_of(&chain, alice.address()).await;
    send(&chain, &chain.operator, serve_call(0, 300 * USDC_UNIT)).await;
    assert_eq!(usdc_of(&chain, alice.address()).await - before, 300 * USDC_UNIT);
    let served = view(&chain, DexdVaultV2::withdrawalRequestCall { requestId: U256::ZERO }).await;
    assert!(served.served);
    assert_eq!(served.paidAmount, U256::from(300 * USDC_UNIT));
    let paid = view(
        &chain,
        DexdVaultV2::paidCall {
            account: alice.address(),
            token: chain.usdc,
        },
    )
    .await;
    assert_eq!(paid, U256::from(300 * USDC_UNIT), "counted in what the exit subtracts");
    let error = refusal(&chain, &chain.operator, serve_call(0, 0)).await;
    assert!(matches!(error, VaultError::RequestAlreadyServed(_)), "{error:?}");

    // Bob's request goes unserved. A root keeps coming, so the vault is not freezable for its
    // roots' age; before the deadline nobody may freeze it, after it anybody.
    let leaves = [
        leaf(alice, chain.usdc, 700 * USDC_UNIT, 1_000 * USDC_UNIT, 300 * USDC_UNIT),
        leaf(bob, chain.usdc, 100 * USDC_UNIT, 100 * USDC_UNIT, 0),
    ];
    let tree = LiabilityTree::build(&leaves, 1);
    send(
        &chain,
        &chain.operator,
        commit_call(&tree, 5, &[(chain.usdc, 800 * USDC_UNIT)]),
    )
    .await;
    let error = refusal(&chain, dave, DexdVaultV2::freezeCall {}.abi_encode()).await;
    assert!(matches!(error, VaultError::FreezeNotDue(_)), "{error:?}");
    let oldest = view(&chain, DexdVaultV2::oldestUnservedRequestCall {}).await;
    assert_eq!((oldest.any, oldest.requestId), (true, U256::from(1)));
    advance_past(&chain, oldest.deadline.to()).await;
    send(
        &chain,
        &chain.operator,
        commit_call(&tree, 6, &[(chain.usdc, 800 * USDC_UNIT)]),
    )
    .await;
    send(&chain, dave, DexdVaultV2::freezeCall {}.abi_encode()).await;
    assert!(view(&chain, DexdVaultV2::frozenCall {}).await);
    let error = refusal(&chain, bob, request_call(chain.usdc, 1)).await;
    assert!(matches!(error, VaultError::IsFrozen(_)), "{error:?}");
    let error = refusal(&chain, &chain.operator, serve_call(1, 50 * USDC_UNIT)).await;
    assert!(matches!(error, VaultError::IsFrozen(_)), "{error:?}");

    // The newest root is seconds old: a guardian may still veto it, and exits wait until it is
    // past its challenge period.
    assert_eq!(view(&chain, DexdVaultV2::exitEpochCall {}).await, U256::from(1));
    let error = refusal(&chain, bob, exit_call(&leaves, &tree, 1)).await;
    assert!(matches!(error, VaultError::ExitsNotOpen(_)), "{error:?}");
    let opens_at = view(&chain, DexdVaultV2::exitsOpenAtCall {}).await;
    advance_past(&chain, opens_at.to()).await;
    let before = usdc_of(&chain, bob.address()).await;
    send(&chain, dave, exit_call(&leaves, &tree, 1)).await;
    assert_eq!(usdc_of(&chain, bob.address()).await - before, 100 * USDC_UNIT);
    // Alice's leaf counts the debit; the vault counts the payment: her exit pays the rest.
    let before = usdc_of(&chain, alice.address()).await;
    send(&chain, dave, exit_call(&leaves, &tree, 0)).await;
    assert_eq!(usdc_of(&chain, alice.address()).await - before, 700 * USDC_UNIT);
}

#[tokio::test]
async fn a_frozen_vaults_young_exit_root_may_still_be_vetoed_and_the_exit_falls_back() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let (alice, dave) = (&chain.users[0], &chain.users[3]);
    deposit_usdc(&chain, alice, 1_000 * USDC_UNIT).await;
    let honest = [leaf(alice, chain.usdc, 1_000 * USDC_UNIT, 1_000 * USDC_UNIT, 0)];
    let honest_tree = LiabilityTree::build(&honest, 1);
    send(
        &chain,
        &chain.operator,
        commit_call(&honest_tree, 3, &[(chain.usdc, 1_000 * USDC_UNIT)]),
    )
    .await;
    send(&chain, alice, request_call(chain.usdc, 1_000 * USDC_UNIT)).await;
    let oldest = view(&chain, DexdVaultV2::oldestUnservedRequestCall {}).await;
    advance_past(&chain, oldest.deadline.to()).await;
    // A stolen operator key commits a root that owes Alice nothing, then the vault freezes.
    let lie = [leaf(alice, chain.usdc, 0, 1_000 * USDC_UNIT, 0)];
    let lie_tree = LiabilityTree::build(&lie, 1);
    send(&chain, &chain.operator, commit_call(&lie_tree, 4, &[(chain.usdc, 0)])).await;
    send(&chain, dave, DexdVaultV2::freezeCall {}.abi_encode()).await;
    assert_eq!(view(&chain, DexdVaultV2::exitEpochCall {}).await, U256::from(1));
    // The guardian vetoes it within its period; the exit root is the honest one again, which is
    // long past its period, so exits open at once.
    send(
        &chain,
        &chain.guardian,
        DexdVaultV2::vetoCall { epoch: U256::from(1) }.abi_encode(),
    )
    .await;
    assert_eq!(view(&chain, DexdVaultV2::exitEpochCall {}).await, U256::ZERO);
    let before = usdc_of(&chain, alice.address()).await;
    send(&chain, dave, exit_call(&honest, &honest_tree, 0)).await;
    assert_eq!(usdc_of(&chain, alice.address()).await - before, 1_000 * USDC_UNIT);
}

/// Signs a USDC (or native, `token: None`) withdrawal for `account` with `owner`'s key: the
/// account's own key, or its wallet owner's for a contract account.
fn withdrawal(
    chain: &TestChain,
    (account, owner): (ChainAddress, &PrivateKeySigner),
    token: Option<ChainAddress>,
    units: u128,
    id: u8,
) -> dexd_custody::vault::DexdVaultBase::Withdrawal {
    let terms = WithdrawalTerms {
        account: venue_address(&account),
        token: token.map(|token| venue_address(&token)),
        amount_units: units,
        withdrawal_id: [id; 32],
        expiry_ms: 4_000_000_000_000,
    };
    let domain = SigningDomain::new(chain.chain_id, venue_address(&chain.vault));
    let key = PrivateKey::parse(&format!("0x{}", alloy::hex::encode(owner.to_bytes()))).unwrap();
    terms.call_argument(&key.sign_digest(terms.digest(&domain)))
}

/// A contract wallet of `owner` in `mode` (`FickleWallet`), holding `units` USDC in the vault.
async fn fickle_wallet_with_deposit(
    chain: &TestChain,
    owner: &PrivateKeySigner,
    mode: u8,
    units: u128,
) -> ChainAddress {
    let wallet = deploy::deploy_fickle_wallet(&chain.node, &chain.deployer, owner.address(), (mode, 0))
        .await
        .unwrap()
        .address;
    deploy::mint(&chain.node, &chain.deployer, chain.usdc, wallet, U256::from(units))
        .await
        .unwrap();
    let approve = dexd_custody::vault::Erc20::approveCall {
        spender: chain.vault,
        amount: U256::from(units),
    };
    deploy::execute_from_smart_wallet(
        &chain.node,
        owner,
        wallet,
        (chain.usdc, U256::ZERO, approve.abi_encode()),
    )
    .await
    .unwrap();
    let deposit = DexdVault::depositCall {
        token: chain.usdc,
        amount: U256::from(units),
    };
    deploy::execute_from_smart_wallet(
        &chain.node,
        owner,
        wallet,
        (chain.vault, U256::ZERO, deposit.abi_encode()),
    )
    .await
    .unwrap();
    wallet
}

/// The reproduction of the review's poisoned batch: a contract account whose approval holds only
/// at gas price 0 passed every simulation and reverted the whole batch on chain, every poll.
/// Now the batch skips it and pays the others; a simulation at the real fees shows it too.
#[tokio::test]
async fn a_batch_skips_a_withdrawal_its_contract_account_refuses_on_chain_and_pays_the_others() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let (alice, bob, mallory) = (&chain.users[0], &chain.users[1], &chain.users[2]);
    deposit_usdc(&chain, alice, 100 * USDC_UNIT).await;
    deposit_usdc(&chain, bob, 100 * USDC_UNIT).await;
    let poisoned = fickle_wallet_with_deposit(&chain, mallory, 1, 100 * USDC_UNIT).await;
    // Encoded with version 1's binding (the same selector; the struct is the base's), read back
    // with version 2's, which returns what was paid.
    let batch = DexdVault::withdrawBatchCall {
        withdrawals: vec![
            withdrawal(&chain, (alice.address(), alice), Some(chain.usdc), 10 * USDC_UNIT, 1),
            withdrawal(&chain, (poisoned, mallory), Some(chain.usdc), 10 * USDC_UNIT, 2),
            withdrawal(&chain, (bob.address(), bob), Some(chain.usdc), 10 * USDC_UNIT, 3),
        ],
    };
    // At gas price 0 (what the payer simulated before) all three would be paid.
    let at_zero = chain
        .node
        .call(
            Some(chain.operator.address()),
            chain.vault,
            batch.abi_encode(),
            U256::ZERO,
            BlockId::latest(),
        )
        .await
        .unwrap();
    let at_zero = DexdVaultV2::withdrawBatchCall::abi_decode_returns(&at_zero).unwrap();
    assert_eq!(at_zero, vec![true, true, true]);
    // At the fees the transaction pays, the simulation shows the skip.
    let fees = chain.node.fee_estimate().await.unwrap();
    let as_sent = chain
        .node
        .call_as_sent(
            chain.operator.address(),
            (chain.vault, batch.abi_encode(), U256::ZERO),
            fees,
            BlockId::latest(),
        )
        .await
        .unwrap();
    let as_sent = DexdVaultV2::withdrawBatchCall::abi_decode_returns(&as_sent).unwrap();
    assert_eq!(as_sent, vec![true, false, true]);
    // On chain: Alice and Bob paid, the wallet's id unspent, nothing counted for it.
    let (alice_before, bob_before) = (
        usdc_of(&chain, alice.address()).await,
        usdc_of(&chain, bob.address()).await,
    );
    let receipt = send(&chain, &chain.operator, batch.abi_encode()).await;
    assert!(receipt.succeeded);
    assert_eq!(usdc_of(&chain, alice.address()).await - alice_before, 10 * USDC_UNIT);
    assert_eq!(usdc_of(&chain, bob.address()).await - bob_before, 10 * USDC_UNIT);
    let spent = view(
        &chain,
        DexdVaultV2::withdrawnManyCall {
            accounts: vec![alice.address(), poisoned, bob.address()],
            withdrawalIds: vec![
                U256::from_be_bytes([1; 32]),
                U256::from_be_bytes([2; 32]),
                U256::from_be_bytes([3; 32]),
            ],
        },
    )
    .await;
    assert_eq!(spent, vec![true, false, true]);
    let counted = view(
        &chain,
        DexdVaultV2::paidCall {
            account: poisoned,
            token: chain.usdc,
        },
    )
    .await;
    assert_eq!(counted, U256::ZERO);
}

/// A served request whose payment the account's address refuses (a contract whose `receive`
/// reverts) is held for it, so that no account can keep its own request unserved and freeze the
/// vault; it claims it later.
#[tokio::test]
async fn a_served_payment_the_account_refuses_is_held_for_it_to_claim() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let owner = &chain.users[2];
    let wallet = deploy::deploy_fickle_wallet(&chain.node, &chain.deployer, owner.address(), (0, 0))
        .await
        .unwrap()
        .address;
    let units = 10u128.pow(18);
    let execute = |(target, value, input): (ChainAddress, U256, Vec<u8>)| {
        deploy::execute_from_smart_wallet(&chain.node, owner, wallet, (target, value, input))
    };
    deploy::send_and_wait(
        &chain.node,
        owner,
        alloy::primitives::TxKind::Call(wallet),
        Vec::new(),
        U256::from(units),
    )
    .await
    .unwrap();
    execute((
        chain.vault,
        U256::from(units),
        DexdVault::depositNativeCall {}.abi_encode(),
    ))
    .await
    .unwrap();
    execute((chain.vault, U256::ZERO, request_call(ChainAddress::ZERO, units)))
        .await
        .unwrap();
    let set_refuses = |refuses: bool| {
        let input = deploy::FickleWallet::setRefusesPaymentsCall { refuses }.abi_encode();
        deploy::send_and_wait(
            &chain.node,
            owner,
            alloy::primitives::TxKind::Call(wallet),
            input,
            U256::ZERO,
        )
    };
    set_refuses(true).await.unwrap();

    send(&chain, &chain.operator, serve_call(0, units)).await;
    let request = view(&chain, DexdVaultV2::withdrawalRequestCall { requestId: U256::ZERO }).await;
    assert!(request.served);
    let held = view(
        &chain,
        DexdVaultV2::heldCall {
            account: wallet,
            token: ChainAddress::ZERO,
        },
    )
    .await;
    assert_eq!(held, U256::from(units));
    // Nobody else claims it; the account does once it takes payments again.
    let error = refusal(
        &chain,
        owner,
        DexdVaultV2::claimCall {
            token: ChainAddress::ZERO,
        }
        .abi_encode(),
    )
    .await;
    assert!(matches!(error, VaultError::NothingHeld(_)), "{error:?}");
    set_refuses(false).await.unwrap();
    let before = chain.node.balance(None, wallet, BlockId::latest()).await.unwrap();
    execute((
        chain.vault,
        U256::ZERO,
        DexdVaultV2::claimCall {
            token: ChainAddress::ZERO,
        }
        .abi_encode(),
    ))
    .await
    .unwrap();
    let after = chain.node.balance(None, wallet, BlockId::latest()).await.unwrap();
    assert_eq!(after - before, U256::from(units));
}

#[tokio::test]
async fn several_guardians_each_veto_and_a_new_set_waits_a_challenge_period() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let (first, second, newcomer) = (&chain.users[0], &chain.users[1], &chain.users[2]);
    let terms = deploy::RootTerms {
        guardians: vec![first.address(), second.address()],
        ..CONTRACT_ROOT_TERMS
    };
    let vault = deploy::deploy_vault_v2(
        &chain.node,
        &chain.deployer,
        chain.deployer.address(),
        chain.operator.address(),
        &terms,
    )
    .await
    .unwrap()
    .address;
    let node = dexd_custody::node::Node::connect(
        &chain.anvil.endpoint(),
        vault,
        chain.chain_id,
        std::time::Duration::from_secs(10),
    )
    .unwrap();
    let guardians = node
        .view(vault, DexdVaultV2::guardiansCall {}, BlockId::latest())
        .await
        .unwrap();
    assert_eq!(guardians, vec![first.address(), second.address()]);
    let send_to = |from: &PrivateKeySigner, input: Vec<u8>| {
        let (node, from) = (node.clone(), from.clone());
        async move { deploy::send_and_wait(&node, &from, alloy::primitives::TxKind::Call(vault), input, U256::ZERO).await }
    };
    let tree = LiabilityTree::build(&[leaf(first, chain.usdc, 0, 0, 0)], 1);
    for sequence in 1..=3 {
        send_to(&chain.operator, commit_call(&tree, sequence, &[]))
            .await
            .unwrap();
    }
    // Either guardian vetoes.
    send_to(first, DexdVaultV2::vetoCall { epoch: U256::ZERO }.abi_encode())
        .await
        .unwrap();
    send_to(second, DexdVaultV2::vetoCall { epoch: U256::from(1) }.abi_encode())
        .await
        .unwrap();
    // The owner proposes a new set of one; until a challenge period has passed the old set holds.
    let too_many = vec![ChainAddress::repeat_byte(1); 9];
    let propose = |set: Vec<ChainAddress>| DexdVaultV2::proposeGuardiansCall { newGuardians: set }.abi_encode();
    assert!(send_to(&chain.deployer, propose(too_many)).await.is_err());
    assert!(
        send_to(first, propose(vec![newcomer.address()])).await.is_err(),
        "only the owner"
    );
    send_to(&chain.deployer, propose(vec![newcomer.address()]))
        .await
        .unwrap();
    assert!(
        send_to(newcomer, DexdVaultV2::vetoCall { epoch: U256::from(2) }.abi_encode())
            .await
            .is_err()
    );
    chain.advance_time(CONTRACT_ROOT_TERMS.challenge_period_s).await;
    send_to(&chain.operator, commit_call(&tree, 4, &[])).await.unwrap();
    assert!(
        send_to(first, DexdVaultV2::vetoCall { epoch: U256::from(3) }.abi_encode())
            .await
            .is_err()
    );
    send_to(newcomer, DexdVaultV2::vetoCall { epoch: U256::from(3) }.abi_encode())
        .await
        .unwrap();
    let guardians = node
        .view(vault, DexdVaultV2::guardiansCall {}, BlockId::latest())
        .await
        .unwrap();
    assert_eq!(guardians, vec![newcomer.address()]);
}

/// The review's reproduction: each veto walked back over the vetoed roots before it, so a key
/// thief's stream of vetoed roots could push a veto past the block gas limit. Now the gas of a
/// veto (and of a freeze) is the same after 1 vetoed root and after 120.
#[tokio::test]
async fn a_veto_and_a_freeze_cost_the_same_whatever_the_vetoed_roots_before_them() {
    let chain = TestChain::start_with_terms(&[], CONTRACT_ROOT_TERMS).await;
    let alice = &chain.users[0];
    let tree = LiabilityTree::build(&[leaf(alice, chain.usdc, 0, 0, 0)], 1);
    send(&chain, &chain.operator, commit_call(&tree, 1, &[])).await;
    let mut veto_gas = Vec::new();
    for epoch in 1..=121u64 {
        // Each root in a second of its own, so that every veto moves the freeze clock back the
        // same way (a store of the same value costs less).
        chain.advance_time(1).await;
        send(&chain, &chain.operator, commit_call(&tree, epoch + 1, &[])).await;
        let receipt = send(
            &chain,
            &chain.guardian,
            DexdVaultV2::vetoCall {
                epoch: U256::from(epoch),
            }
            .abi_encode(),
        )
        .await;
        veto_gas.push(receipt.gas_used);
    }
    let (first, last) = (veto_gas[0], *veto_gas.last().unwrap());
    assert_eq!(first, last, "veto gas after 1 and after 120 vetoed roots: {veto_gas:?}");
    chain.advance_time(CONTRACT_ROOT_TERMS.max_root_age_s + 1).await;
    let freeze = send(&chain, alice, DexdVaultV2::freezeCall {}.abi_encode()).await;
    assert!(freeze.gas_used < 60_000, "freeze: {} gas", freeze.gas_used);
    assert_eq!(view(&chain, DexdVaultV2::exitEpochCall {}).await, U256::ZERO);
}
