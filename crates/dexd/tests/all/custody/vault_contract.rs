//! The vault contract on a real node (anvil): deposits of ERC-20 tokens and of the native asset
//! with their events, withdrawals with the account's own EIP-712 authorization (signed by dexd's
//! own code and checked against the contract's digest), and every refusal: not the operator,
//! another account's signature, wrong token or amount, expired, replayed id, a token that
//! re-enters the vault, a paused vault, an owner-only call by someone else.

use crate::common;

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{SolCall, SolInterface};
use common::chain::{TestChain, ETH_UNIT, USDC_UNIT, WBTC_UNIT};
use dexd_crypto::{PrivateKey, SigningDomain};
use dexd_custody::deploy::{self, ReentrantToken};
use dexd_custody::node::NodeError;
use dexd_custody::vault::{chain_address, venue_address, DexdVault, DexdVaultBase, WithdrawalTerms};

/// The revert of a call from `from`, decoded as one of the vault's errors.
async fn vault_revert(
    chain: &TestChain,
    from: ChainAddress,
    input: Vec<u8>,
    value: U256,
) -> DexdVault::DexdVaultErrors {
    match chain
        .node
        .call(Some(from), chain.vault, input, value, BlockId::latest())
        .await
    {
        Err(NodeError::Reverted { data: Some(data), .. }) => {
            DexdVault::DexdVaultErrors::abi_decode(&data).expect("a revert of the vault's own")
        }
        other => panic!("expected a revert, got {other:?}"),
    }
}

fn key_of(signer: &PrivateKeySigner) -> PrivateKey {
    PrivateKey::parse(&format!("0x{}", alloy::hex::encode(signer.to_bytes()))).unwrap()
}

/// A withdrawal of `amount` units of `token` for `account`, signed by its own key with dexd's
/// EIP-712 code, valid far into the future.
fn signed_withdrawal(
    chain: &TestChain,
    account: &PrivateKeySigner,
    token: Option<ChainAddress>,
    amount: u128,
    id: u8,
) -> (WithdrawalTerms, [u8; 65]) {
    signed_withdrawal_by(chain, (account, account), token, amount, id, far_future_ms())
}

/// A withdrawal of `amount` units of `token` for `account`, signed by `signer`'s key, void
/// after `expiry_ms`.
fn signed_withdrawal_by(
    chain: &TestChain,
    (account, signer): (&PrivateKeySigner, &PrivateKeySigner),
    token: Option<ChainAddress>,
    amount: u128,
    id: u8,
    expiry_ms: u64,
) -> (WithdrawalTerms, [u8; 65]) {
    let terms = WithdrawalTerms {
        account: venue_address(&account.address()),
        token: token.map(|token| venue_address(&token)),
        amount_units: amount,
        withdrawal_id: [id; 32],
        expiry_ms,
    };
    let domain = SigningDomain::new(chain.chain_id, venue_address(&chain.vault));
    let signature = key_of(signer).sign_digest(terms.digest(&domain));
    (terms, signature)
}

fn far_future_ms() -> u64 {
    4_000_000_000_000
}

async fn withdraw(chain: &TestChain, terms: &WithdrawalTerms, signature: &[u8; 65]) -> dexd_custody::node::Receipt {
    let input = DexdVault::withdrawCall {
        withdrawal: terms.call_argument(signature),
    }
    .abi_encode();
    chain.call_vault_as_operator(input).await
}

async fn token_balance(chain: &TestChain, token: ChainAddress, owner: ChainAddress) -> U256 {
    chain.node.balance(Some(token), owner, BlockId::latest()).await.unwrap()
}

#[tokio::test]
async fn deposits_emit_numbered_events_for_what_arrived() {
    let chain = TestChain::start().await;
    let alice = &chain.users[0];
    let bob = &chain.users[1];
    let usdc_receipt = chain.deposit(alice, Some(chain.usdc), 250 * USDC_UNIT).await;
    let native_receipt = chain.deposit(bob, None, 2 * ETH_UNIT).await;
    // A token that burns 1 % of every transfer: the vault credits what it received.
    let fee_token = deploy::deploy_fee_on_transfer_token(&chain.node, &chain.deployer)
        .await
        .unwrap();
    chain
        .list_mint_and_deposit(fee_token.address, alice, 1_000, 1_000)
        .await;
    let logs = chain
        .node
        .deposit_logs(0, chain.node.head().await.unwrap())
        .await
        .unwrap();
    assert_eq!(logs.len(), 3);
    assert_eq!(
        (logs[0].deposit_id, logs[0].account, logs[0].token, logs[0].amount),
        (U256::ZERO, alice.address(), chain.usdc, U256::from(250 * USDC_UNIT))
    );
    assert_eq!(logs[0].block_number, usdc_receipt.block_number);
    assert_eq!(
        (logs[1].deposit_id, logs[1].account, logs[1].token, logs[1].amount),
        (
            U256::from(1),
            bob.address(),
            ChainAddress::ZERO,
            U256::from(2 * ETH_UNIT)
        )
    );
    assert_eq!(logs[1].block_number, native_receipt.block_number);
    assert_eq!(
        (logs[2].deposit_id, logs[2].amount),
        (U256::from(2), U256::from(990u64)),
        "credited by what arrived"
    );
    assert_eq!(chain.vault_balance(Some(chain.usdc)).await, U256::from(250 * USDC_UNIT));
    assert_eq!(chain.vault_balance(None).await, U256::from(2 * ETH_UNIT));
    // Nothing, and plain native transfers, are refused.
    let zero = DexdVault::depositCall {
        token: chain.usdc,
        amount: U256::ZERO,
    }
    .abi_encode();
    assert!(matches!(
        vault_revert(&chain, alice.address(), zero, U256::ZERO).await,
        DexdVault::DexdVaultErrors::ZeroAmount(_)
    ));
    let plain = chain
        .node
        .call(
            Some(alice.address()),
            chain.vault,
            Vec::new(),
            U256::from(1u64),
            BlockId::latest(),
        )
        .await;
    assert!(matches!(plain, Err(NodeError::Reverted { .. })), "{plain:?}");
}

#[tokio::test]
async fn a_withdrawal_with_the_accounts_authorization_pays_the_account_once() {
    let chain = TestChain::start().await;
    let alice = &chain.users[0];
    chain.deposit(alice, Some(chain.usdc), 500 * USDC_UNIT).await;
    chain.deposit(alice, None, 3 * ETH_UNIT).await;
    let (terms, signature) = signed_withdrawal(&chain, alice, Some(chain.usdc), 200 * USDC_UNIT, 1);
    // dexd's digest is the contract's digest.
    let digest_call = DexdVault::withdrawalDigestCall {
        account: alice.address(),
        token: chain.usdc,
        amount: U256::from(200 * USDC_UNIT),
        withdrawalId: U256::from_be_bytes([1u8; 32]),
        expiry: U256::from(far_future_ms()),
    };
    let output = chain
        .node
        .call(
            None,
            chain.vault,
            digest_call.abi_encode(),
            U256::ZERO,
            BlockId::latest(),
        )
        .await
        .unwrap();
    let on_chain_digest = DexdVault::withdrawalDigestCall::abi_decode_returns(&output).unwrap();
    let domain = SigningDomain::new(chain.chain_id, venue_address(&chain.vault));
    assert_eq!(on_chain_digest.0, terms.digest(&domain));
    let before = token_balance(&chain, chain.usdc, alice.address()).await;
    let receipt = withdraw(&chain, &terms, &signature).await;
    assert!(receipt.succeeded);
    assert_eq!(
        token_balance(&chain, chain.usdc, alice.address()).await - before,
        U256::from(200 * USDC_UNIT)
    );
    let event = chain
        .node
        .withdrawn_event(alice.address(), U256::from_be_bytes([1u8; 32]), 0, receipt.block_number)
        .await
        .unwrap()
        .expect("the Withdrawn event");
    assert_eq!(event.1, receipt.block_number);
    let paid = chain
        .node
        .withdrawn_many(
            &[
                (alice.address(), U256::from_be_bytes([1u8; 32])),
                (alice.address(), U256::from(2)),
            ],
            BlockId::latest(),
        )
        .await
        .unwrap();
    assert_eq!(paid, vec![true, false]);
    // Replayed: refused.
    let replay = DexdVault::withdrawCall {
        withdrawal: terms.call_argument(&signature),
    }
    .abi_encode();
    assert!(matches!(
        vault_revert(&chain, chain.operator.address(), replay, U256::ZERO).await,
        DexdVault::DexdVaultErrors::AlreadyWithdrawn(_)
    ));
    // The native asset, and several in one batch.
    let native_before = chain
        .node
        .balance(None, alice.address(), BlockId::latest())
        .await
        .unwrap();
    let (native, native_signature) = signed_withdrawal(&chain, alice, None, ETH_UNIT, 2);
    let (usdc, usdc_signature) = signed_withdrawal(&chain, alice, Some(chain.usdc), 50 * USDC_UNIT, 3);
    let batch = DexdVault::withdrawBatchCall {
        withdrawals: vec![
            native.call_argument(&native_signature),
            usdc.call_argument(&usdc_signature),
        ],
    }
    .abi_encode();
    chain.call_vault_as_operator(batch).await;
    let native_after = chain
        .node
        .balance(None, alice.address(), BlockId::latest())
        .await
        .unwrap();
    assert_eq!(
        native_after - native_before,
        U256::from(ETH_UNIT),
        "the operator paid the gas, the account got it all"
    );
    assert_eq!(chain.vault_balance(Some(chain.usdc)).await, U256::from(250 * USDC_UNIT));
    assert_eq!(chain.vault_balance(None).await, U256::from(2 * ETH_UNIT));
}

#[tokio::test]
async fn the_vault_refuses_every_withdrawal_it_was_not_authorised_to_pay() {
    let chain = TestChain::start().await;
    let alice = &chain.users[0];
    let mallory = &chain.users[1];
    chain.deposit(alice, Some(chain.usdc), 500 * USDC_UNIT).await;
    chain.deposit(mallory, Some(chain.wbtc), WBTC_UNIT).await;
    let operator = chain.operator.address();
    let call = |terms: &WithdrawalTerms, signature: &[u8; 65]| {
        DexdVault::withdrawCall {
            withdrawal: terms.call_argument(signature),
        }
        .abi_encode()
    };
    let (good, good_signature) = signed_withdrawal(&chain, alice, Some(chain.usdc), 100 * USDC_UNIT, 7);
    // Not the operator: even with a good authorization, and even the account itself.
    for caller in [alice.address(), mallory.address(), chain.deployer.address()] {
        assert!(matches!(
            vault_revert(&chain, caller, call(&good, &good_signature), U256::ZERO).await,
            DexdVault::DexdVaultErrors::NotOperator(_)
        ));
    }
    // Another account's signature over Alice's withdrawal.
    let (forged, forged_signature) = signed_withdrawal_by(
        &chain,
        (alice, mallory),
        Some(chain.usdc),
        100 * USDC_UNIT,
        8,
        far_future_ms(),
    );
    assert!(matches!(
        vault_revert(&chain, operator, call(&forged, &forged_signature), U256::ZERO).await,
        DexdVault::DexdVaultErrors::InvalidAuthorization(_)
    ));
    // Alice's signature, but another token, another amount, another id, or paid to another
    // account.
    let mut wrong_token = good;
    wrong_token.token = Some(venue_address(&chain.wbtc));
    let mut wrong_amount = good;
    wrong_amount.amount_units += 1;
    let mut wrong_id = good;
    wrong_id.withdrawal_id = [9; 32];
    let mut wrong_account = good;
    wrong_account.account = venue_address(&mallory.address());
    let mut wrong_expiry = good;
    wrong_expiry.expiry_ms += 1;
    for altered in [wrong_token, wrong_amount, wrong_id, wrong_account, wrong_expiry] {
        assert!(matches!(
            vault_revert(&chain, operator, call(&altered, &good_signature), U256::ZERO).await,
            DexdVault::DexdVaultErrors::InvalidAuthorization(_)
        ));
    }
    // A signature that is not 65 bytes, or garbage.
    let short = DexdVault::withdrawCall {
        withdrawal: DexdVaultBase::Withdrawal {
            signature: vec![1u8; 64].into(),
            ..good.call_argument(&good_signature)
        },
    }
    .abi_encode();
    assert!(matches!(
        vault_revert(&chain, operator, short, U256::ZERO).await,
        DexdVault::DexdVaultErrors::InvalidAuthorization(_)
    ));
    // Expired: the block's time (ms) is past the expiry.
    let head = chain.node.head().await.unwrap();
    let (_, timestamp) = chain.node.block(head).await.unwrap().unwrap();
    let (expired, expired_signature) = signed_withdrawal_by(
        &chain,
        (alice, alice),
        Some(chain.usdc),
        USDC_UNIT,
        10,
        timestamp * 1000 - 1,
    );
    assert!(matches!(
        vault_revert(&chain, operator, call(&expired, &expired_signature), U256::ZERO).await,
        DexdVault::DexdVaultErrors::WithdrawalExpired(_)
    ));
    // A batch skips the forged one (its id unspent, nothing paid for it) and pays the good
    // one: an account's bad withdrawal never holds up another's (contract version 5).
    let batch = DexdVault::withdrawBatchCall {
        withdrawals: vec![
            forged.call_argument(&forged_signature),
            good.call_argument(&good_signature),
        ],
    }
    .abi_encode();
    let receipt = chain.call_vault_as_operator(batch).await;
    assert!(receipt.succeeded);
    assert_eq!(
        chain.vault_balance(Some(chain.usdc)).await,
        U256::from(500 * USDC_UNIT - good.amount_units)
    );
    let spent = chain
        .node
        .withdrawn_many(
            &[
                (
                    chain_address(&forged.account),
                    U256::from_be_bytes(forged.withdrawal_id),
                ),
                (chain_address(&good.account), U256::from_be_bytes(good.withdrawal_id)),
            ],
            BlockId::latest(),
        )
        .await
        .unwrap();
    assert_eq!(spent, vec![false, true]);
    // Paid once: the good one alone again is refused as paid.
    assert!(matches!(
        vault_revert(&chain, operator, call(&good, &good_signature), U256::ZERO).await,
        DexdVault::DexdVaultErrors::AlreadyWithdrawn(_)
    ));
}

#[tokio::test]
async fn a_token_that_reenters_the_vault_during_a_transfer_is_stopped() {
    let chain = TestChain::start().await;
    let alice = &chain.users[0];
    let token = deploy::deploy_reentrant_token(&chain.node, &chain.deployer)
        .await
        .unwrap();
    chain.list_mint_and_deposit(token.address, alice, 1_000, 500).await;
    // Armed: every transfer now calls the vault's depositNative from inside the transfer.
    let arm = ReentrantToken::armCall {
        target_: chain.vault,
        callback_: DexdVault::depositNativeCall {}.abi_encode().into(),
    }
    .abi_encode();
    deploy::send_and_wait(
        &chain.node,
        &chain.deployer,
        TxKind::Call(token.address),
        arm,
        U256::ZERO,
    )
    .await
    .unwrap();
    deploy::approve(&chain.node, alice, token.address, chain.vault, U256::from(100u64))
        .await
        .unwrap();
    let deposit = DexdVault::depositCall {
        token: token.address,
        amount: U256::from(100u64),
    }
    .abi_encode();
    assert!(matches!(
        vault_revert(&chain, alice.address(), deposit, U256::ZERO).await,
        DexdVault::DexdVaultErrors::ReentrancyGuardReentrantCall(_)
    ));
    let (terms, signature) = signed_withdrawal(&chain, alice, Some(token.address), 100, 1);
    let withdrawal = DexdVault::withdrawCall {
        withdrawal: terms.call_argument(&signature),
    }
    .abi_encode();
    assert!(matches!(
        vault_revert(&chain, chain.operator.address(), withdrawal, U256::ZERO).await,
        DexdVault::DexdVaultErrors::ReentrancyGuardReentrantCall(_)
    ));
    assert_eq!(
        token_balance(&chain, token.address, chain.vault).await,
        U256::from(500u64)
    );
}

#[tokio::test]
async fn a_paused_vault_takes_no_deposit_but_pays_and_only_the_owner_governs_it() {
    let chain = TestChain::start().await;
    let alice = &chain.users[0];
    chain.deposit(alice, Some(chain.usdc), 100 * USDC_UNIT).await;
    // Only the owner pauses, unpauses, replaces the operator; nobody renounces ownership.
    for input in [
        DexdVault::pauseCall {}.abi_encode(),
        DexdVault::setOperatorCall {
            newOperator: alice.address(),
        }
        .abi_encode(),
    ] {
        assert!(matches!(
            vault_revert(&chain, chain.operator.address(), input, U256::ZERO).await,
            DexdVault::DexdVaultErrors::OwnableUnauthorizedAccount(_)
        ));
    }
    assert!(matches!(
        vault_revert(
            &chain,
            chain.deployer.address(),
            DexdVault::renounceOwnershipCall {}.abi_encode(),
            U256::ZERO
        )
        .await,
        DexdVault::DexdVaultErrors::OwnershipCannotBeRenounced(_)
    ));
    deploy::send_and_wait(
        &chain.node,
        &chain.deployer,
        TxKind::Call(chain.vault),
        DexdVault::pauseCall {}.abi_encode(),
        U256::ZERO,
    )
    .await
    .unwrap();
    deploy::approve(&chain.node, alice, chain.usdc, chain.vault, U256::from(USDC_UNIT))
        .await
        .unwrap();
    let deposit = DexdVault::depositCall {
        token: chain.usdc,
        amount: U256::from(USDC_UNIT),
    }
    .abi_encode();
    assert!(matches!(
        vault_revert(&chain, alice.address(), deposit, U256::ZERO).await,
        DexdVault::DexdVaultErrors::EnforcedPause(_)
    ));
    assert!(matches!(
        vault_revert(
            &chain,
            alice.address(),
            DexdVault::depositNativeCall {}.abi_encode(),
            U256::from(1u64)
        )
        .await,
        DexdVault::DexdVaultErrors::EnforcedPause(_)
    ));
    // Withdrawals go on while deposits are paused.
    let (terms, signature) = signed_withdrawal(&chain, alice, Some(chain.usdc), 40 * USDC_UNIT, 1);
    assert!(withdraw(&chain, &terms, &signature).await.succeeded);
    // The owner replaces the operator: the old one can no longer pay.
    let new_operator = &chain.users[3];
    deploy::send_and_wait(
        &chain.node,
        &chain.deployer,
        TxKind::Call(chain.vault),
        DexdVault::setOperatorCall {
            newOperator: new_operator.address(),
        }
        .abi_encode(),
        U256::ZERO,
    )
    .await
    .unwrap();
    assert_eq!(chain.node.operator().await.unwrap(), new_operator.address());
    let (next, next_signature) = signed_withdrawal(&chain, alice, Some(chain.usdc), USDC_UNIT, 2);
    let input = DexdVault::withdrawCall {
        withdrawal: next.call_argument(&next_signature),
    }
    .abi_encode();
    assert!(matches!(
        vault_revert(&chain, chain.operator.address(), input, U256::ZERO).await,
        DexdVault::DexdVaultErrors::NotOperator(_)
    ));
}
