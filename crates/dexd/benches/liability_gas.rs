//! Gas of the vault's version 2 on a real node (anvil from `contracts/node_modules`), against
//! version 1 where both do the same thing:
//!
//! - deposits (the first of an account and token, and a later one; ERC-20 and native), and a
//!   withdrawal: version 2 also counts them per account and token;
//! - `commitRoot` for trees of 10, 10,000 and 1,000,000 leaves (three tokens), each with its data
//!   (1 % of the accounts changed since the previous root, and one slice of 2,520) in blobs, and
//!   the same as `commitRootWithData` in calldata: the root is one word whatever the tree, so the
//!   execution gas of the blob form must not grow with the accounts;
//! - `exit` with the proof of a leaf in each of those trees (a proof is log2 of the leaves), and
//!   the all-zero exit of a deposit no root covers;
//! - contract version 5's calls: `requestWithdrawal`, `serveRequest` and `serveRequests` of 10,
//!   `withdrawBatch` of 10 and of 10 with one skipped, `veto` after 1 and after 100 vetoed roots,
//!   and `freeze` for an overdue request and for the roots' age.
//!
//! `cargo bench -p dexd --bench liability_gas`

use std::time::Duration;

use alloy::node_bindings::Anvil;
use alloy::primitives::{Address as ChainAddress, FixedBytes, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use dexd_crypto::liability_tree::{LiabilityLeaf, LiabilityTree};
use dexd_crypto::{PrivateKey, SigningDomain};
use dexd_custody::deploy::{self, RootTerms};
use dexd_custody::liabilities::root_blobs;
use dexd_custody::liabilities::root_data::{slice_range, RootData};
use dexd_custody::node::{BlobTerms, Fees, Node, Receipt, TransactionTerms};
use dexd_custody::vault::{venue_address, DexdVault, DexdVaultV2, WithdrawalTerms};

#[path = "common/anvil.rs"]
mod anvil;

use anvil::{anvil_path, signer};

async fn call(node: &Node, from: &PrivateKeySigner, to: ChainAddress, input: Vec<u8>, value: U256) -> Receipt {
    deploy::send_and_wait(node, from, TxKind::Call(to), input, value)
        .await
        .unwrap()
}

/// A root committed by hand, with a byte of calldata as its data (what the vault's other calls
/// are measured after).
fn commit_with_data(root: [u8; 32], sequence: u64, deposit_count: u64, tokens: Vec<ChainAddress>) -> Vec<u8> {
    DexdVaultV2::commitRootWithDataCall {
        root: FixedBytes(root),
        journalSequence: sequence,
        depositCount_: U256::from(deposit_count),
        totals: vec![U256::ZERO; tokens.len()],
        tokens,
        data: vec![1u8].into(),
    }
    .abi_encode()
}

/// Sends `input` to `to` as an EIP-4844 transaction carrying `sidecar`; its receipt.
async fn call_with_blobs(
    node: &Node,
    from: &PrivateKeySigner,
    to: ChainAddress,
    input: Vec<u8>,
    sidecar: alloy::eips::eip4844::BlobTransactionSidecar,
) -> Receipt {
    let blobs = BlobTerms {
        sidecar: std::sync::Arc::new(sidecar),
        max_fee_per_blob_gas: node.blob_base_fee().await.unwrap().saturating_mul(2).max(1),
    };
    let fees = node.fee_estimate().await.unwrap();
    let gas_limit = node
        .estimate_gas_as_sent(from.address(), (to, &input, U256::ZERO), fees, Some(&blobs))
        .await
        .unwrap();
    let terms = TransactionTerms {
        to: TxKind::Call(to),
        input,
        value: U256::ZERO,
        nonce: node.pending_nonce(from.address()).await.unwrap(),
        fees: Fees {
            max_fee_per_gas: fees.0,
            max_priority_fee_per_gas: fees.1,
            gas_limit,
        },
        blobs: Some(blobs),
    };
    let sent = node.send(from, terms).await.unwrap();
    let receipt = node
        .wait_for_receipt(sent.hash, Duration::from_millis(5), Duration::from_secs(60))
        .await
        .unwrap();
    assert!(receipt.succeeded);
    receipt
}

/// Gas of the deposits and a withdrawal on one vault: (first ERC-20 of the vault, later ERC-20,
/// first native of the vault, later native, withdrawal, another account's first ERC-20).
async fn transfer_gas(
    node: &Node,
    (user, other): (&PrivateKeySigner, &PrivateKeySigner),
    operator: &PrivateKeySigner,
    usdc: ChainAddress,
    chain_id: u64,
) -> [u64; 6] {
    let vault = node.vault();
    deploy::approve(node, user, usdc, vault, U256::from(u64::MAX))
        .await
        .unwrap();
    let erc20 = || {
        DexdVault::depositCall {
            token: usdc,
            amount: U256::from(1_000_000u64),
        }
        .abi_encode()
    };
    let first_erc20 = call(node, user, vault, erc20(), U256::ZERO).await.gas_used;
    let later_erc20 = call(node, user, vault, erc20(), U256::ZERO).await.gas_used;
    let native = || DexdVault::depositNativeCall {}.abi_encode();
    let first_native = call(node, user, vault, native(), U256::from(1_000u64)).await.gas_used;
    let later_native = call(node, user, vault, native(), U256::from(1_000u64)).await.gas_used;
    let terms = WithdrawalTerms {
        account: venue_address(&user.address()),
        token: Some(venue_address(&usdc)),
        amount_units: 500_000,
        withdrawal_id: [7; 32],
        expiry_ms: 4_000_000_000_000,
    };
    let key = PrivateKey::parse(&format!("0x{}", alloy::hex::encode(user.to_bytes()))).unwrap();
    let signature = key.sign_digest(terms.digest(&SigningDomain::new(chain_id, venue_address(&vault))));
    let withdraw = DexdVault::withdrawCall {
        withdrawal: terms.call_argument(&signature),
    }
    .abi_encode();
    let withdrawal = call(node, operator, vault, withdraw, U256::ZERO).await.gas_used;
    deploy::approve(node, other, usdc, vault, U256::from(u64::MAX))
        .await
        .unwrap();
    let other_first = call(node, other, vault, erc20(), U256::ZERO).await.gas_used;
    [
        first_erc20,
        later_erc20,
        first_native,
        later_native,
        withdrawal,
        other_first,
    ]
}

#[tokio::main(flavor = "current_thread")]
async fn main() {
    let anvil = Anvil::at(anvil_path())
        .args(["--accounts", "10", "--balance", "100000"])
        .spawn();
    let chain_id = anvil.chain_id();
    let (deployer, operator, user, other) = (
        signer(&anvil, 0),
        signer(&anvil, 1),
        signer(&anvil, 2),
        signer(&anvil, 4),
    );
    let timeout = Duration::from_secs(30);
    let bootstrap = Node::connect(&anvil.endpoint(), ChainAddress::ZERO, chain_id, timeout).unwrap();
    let usdc = deploy::deploy_test_token(&bootstrap, &deployer, "USD Coin", "USDC", 6)
        .await
        .unwrap()
        .address;
    for holder in [&user, &other] {
        deploy::mint(&bootstrap, &deployer, usdc, holder.address(), U256::from(u64::MAX))
            .await
            .unwrap();
    }
    let version_one = deploy::deploy_vault(&bootstrap, &deployer, deployer.address(), operator.address())
        .await
        .unwrap();
    let terms = RootTerms {
        max_root_age_s: 3_600,
        challenge_period_s: 60,
        request_period_s: 600,
        guardians: Vec::new(),
    };
    let version_two = deploy::deploy_vault_v2(&bootstrap, &deployer, deployer.address(), operator.address(), &terms)
        .await
        .unwrap();
    println!(
        "deployment: version 1 {} gas, version 2 {} gas",
        version_one.gas_used, version_two.gas_used
    );
    let node_one = Node::connect(&anvil.endpoint(), version_one.address, chain_id, timeout).unwrap();
    let node_two = Node::connect(&anvil.endpoint(), version_two.address, chain_id, timeout).unwrap();
    deploy::list_tokens(&node_two, &deployer, &[ChainAddress::ZERO, usdc])
        .await
        .unwrap();
    let one = transfer_gas(&node_one, (&user, &other), &operator, usdc, chain_id).await;
    let two = transfer_gas(&node_two, (&user, &other), &operator, usdc, chain_id).await;
    let names = [
        "ERC-20 deposit, the vault's first of the token",
        "ERC-20 deposit, later",
        "native deposit, the vault's first",
        "native deposit, later",
        "withdrawal (one, ERC-20)",
        "ERC-20 deposit, an account's first of a token deposited before",
    ];
    for (index, name) in names.iter().enumerate() {
        println!(
            "{name}: version 1 {} gas, version 2 {} gas (+{})",
            one[index],
            two[index],
            two[index] as i64 - one[index] as i64
        );
    }

    // Roots of growing trees: three tokens, the vault's whole holdings as totals.
    let vault = version_two.address;
    let wbtc = deploy::deploy_test_token(&bootstrap, &deployer, "Wrapped BTC", "WBTC", 8)
        .await
        .unwrap()
        .address;
    deploy::list_tokens(&node_two, &deployer, &[wbtc]).await.unwrap();
    let mut tokens = vec![ChainAddress::ZERO, usdc, wbtc];
    tokens.sort();
    let mut exits = Vec::new();
    for (sequence, leaves_count) in [(1u64, 10usize), (2, 10_000), (3, 1_000_000)] {
        let mut leaves: Vec<LiabilityLeaf> = (0..leaves_count)
            .map(|index| {
                let mut account = [0u8; 20];
                account[12..].copy_from_slice(&(index as u64 + 1).to_be_bytes());
                LiabilityLeaf {
                    account: dexd_core::Address::from_bytes(account),
                    token: venue_address(&usdc),
                    balance: 1,
                    credited_deposits: 1,
                    debited_withdrawals: 0,
                }
            })
            .collect();
        // The bench's user is the first leaf, owed what it holds in the vault.
        leaves[0] = LiabilityLeaf {
            account: venue_address(&user.address()),
            token: venue_address(&usdc),
            balance: 1_500_000,
            credited_deposits: 2_000_000,
            debited_withdrawals: 500_000,
        };
        let tree = LiabilityTree::build(&leaves, 2);
        // The previous root: 1 % of the accounts held one unit less.
        let mut previous = leaves.clone();
        for leaf in previous.iter_mut().step_by(100) {
            leaf.balance -= 1;
        }
        let previous_root = LiabilityTree::build(&previous, 2).root();
        let data = RootData::for_root(
            (sequence, 4, tree.root()),
            &leaves,
            Some((&previous, previous_root)),
            slice_range(sequence, 2_520),
        );
        let encoded = data.encode();
        let sidecar = root_blobs::sidecar_of(&encoded).unwrap();
        let blob_count = sidecar.blobs.len();
        let totals: Vec<U256> = tokens.iter().map(|_| U256::ZERO).collect();
        let commit = DexdVaultV2::commitRootCall {
            root: FixedBytes(tree.root()),
            journalSequence: sequence,
            depositCount_: U256::from(4),
            tokens: tokens.clone(),
            totals: totals.clone(),
        }
        .abi_encode();
        let gas = call_with_blobs(&node_two, &operator, vault, commit, sidecar)
            .await
            .gas_used;
        let with_data = DexdVaultV2::commitRootWithDataCall {
            root: FixedBytes(tree.root()),
            journalSequence: sequence,
            depositCount_: U256::from(4),
            tokens: tokens.clone(),
            totals,
            data: encoded.clone().into(),
        }
        .abi_encode();
        let calldata_gas = call(&node_two, &operator, vault, with_data, U256::ZERO).await.gas_used;
        println!(
            "commitRoot, {leaves_count} leaves, 3 tokens, {} accounts listed ({} bytes): in {blob_count} blobs \
             {gas} gas; in calldata {calldata_gas} gas",
            data.accounts.len(),
            encoded.len()
        );
        exits.push((leaves_count, leaves[0], tree.proof(0).unwrap()));
    }
    // Exits against the newest root only: each tree's exit is measured on a vault of its own.
    for (leaves_count, leaf, proof) in exits {
        let fresh = deploy::deploy_vault_v2(&bootstrap, &deployer, deployer.address(), operator.address(), &terms)
            .await
            .unwrap();
        let node = Node::connect(&anvil.endpoint(), fresh.address, chain_id, timeout).unwrap();
        deploy::list_tokens(&node, &deployer, &[ChainAddress::ZERO, usdc])
            .await
            .unwrap();
        transfer_gas(&node, (&user, &other), &operator, usdc, chain_id).await;
        let mut listed = vec![ChainAddress::ZERO, usdc];
        listed.sort();
        // The same tree's root, from the leaf and its proof.
        let root = proof.iter().fold(leaf.hash(), |node, sibling| {
            dexd_crypto::liability_tree::hash_pair(&node, sibling)
        });
        let commit = commit_with_data(root, 1, 4, listed.clone());
        call(&node, &operator, fresh.address, commit, U256::ZERO).await;
        node.raw_request("evm_increaseTime", serde_json::json!([terms.max_root_age_s + 1]))
            .await
            .unwrap();
        call(
            &node,
            &user,
            fresh.address,
            DexdVaultV2::freezeCall {}.abi_encode(),
            U256::ZERO,
        )
        .await;
        let exit = DexdVaultV2::exitCall {
            account: user.address(),
            token: usdc,
            balance: U256::from(leaf.balance),
            creditedDeposits: U256::from(leaf.credited_deposits),
            debitedWithdrawals: U256::from(leaf.debited_withdrawals),
            proof: proof.iter().map(|node| FixedBytes(*node)).collect(),
        }
        .abi_encode();
        let gas = call(&node, &user, fresh.address, exit, U256::ZERO).await.gas_used;
        println!(
            "exit, a leaf of {leaves_count} ({} proof nodes): {gas} gas",
            proof.len()
        );
    }
    all_zero_exit_gas(
        &anvil,
        &bootstrap,
        (&deployer, &operator),
        &signer(&anvil, 3),
        usdc,
        terms.clone(),
    )
    .await;
    version_five_gas(&anvil, &bootstrap, (&deployer, &operator), &user, usdc, &terms).await;
}

/// Gas of what contract version 5 adds, on a vault of its own.
async fn version_five_gas(
    anvil: &alloy::node_bindings::AnvilInstance,
    bootstrap: &Node,
    (deployer, operator): (&PrivateKeySigner, &PrivateKeySigner),
    user: &PrivateKeySigner,
    usdc: ChainAddress,
    terms: &RootTerms,
) {
    let chain_id = anvil.chain_id();
    let fresh = deploy::deploy_vault_v2(bootstrap, deployer, deployer.address(), operator.address(), terms)
        .await
        .unwrap();
    let vault = fresh.address;
    let node = Node::connect(&anvil.endpoint(), vault, chain_id, Duration::from_secs(30)).unwrap();
    deploy::list_tokens(&node, deployer, &[usdc]).await.unwrap();
    deploy::approve(&node, user, usdc, vault, U256::from(u64::MAX))
        .await
        .unwrap();
    let deposit = DexdVault::depositCall {
        token: usdc,
        amount: U256::from(100_000_000u64),
    }
    .abi_encode();
    call(&node, user, vault, deposit, U256::ZERO).await;
    let request = || {
        DexdVaultV2::requestWithdrawalCall {
            token: usdc,
            amount: U256::from(1_000u64),
        }
        .abi_encode()
    };
    let mut request_gas = Vec::new();
    // Twelve served below, the thirteenth left unserved for the freeze.
    for _ in 0..13 {
        request_gas.push(call(&node, user, vault, request(), U256::ZERO).await.gas_used);
    }
    println!(
        "requestWithdrawal: the vault's first {} gas, a later one {} gas",
        request_gas[0], request_gas[1]
    );
    let serve = DexdVaultV2::serveRequestCall {
        requestId: U256::ZERO,
        amount: U256::from(1_000u64),
    }
    .abi_encode();
    let one = call(&node, operator, vault, serve, U256::ZERO).await.gas_used;
    let serve_many = DexdVaultV2::serveRequestsCall {
        requestIds: (1..=10u64).map(U256::from).collect(),
        amounts: vec![U256::from(1_000u64); 10],
    }
    .abi_encode();
    let ten = call(&node, operator, vault, serve_many, U256::ZERO).await.gas_used;
    let nothing = DexdVaultV2::serveRequestCall {
        requestId: U256::from(11u64),
        amount: U256::ZERO,
    }
    .abi_encode();
    let zero = call(&node, operator, vault, nothing, U256::ZERO).await.gas_used;
    println!(
        "serveRequest (ERC-20): {one} gas; serveRequests of 10: {ten} gas ({} each); served with 0: {zero} gas",
        ten / 10
    );

    // A batch of ten withdrawals, and the same with one its account does not authorise.
    let key = PrivateKey::parse(&format!("0x{}", alloy::hex::encode(user.to_bytes()))).unwrap();
    let domain = SigningDomain::new(chain_id, venue_address(&vault));
    let withdrawal = |id: u8, forged: bool| {
        let terms = WithdrawalTerms {
            account: venue_address(&user.address()),
            token: Some(venue_address(&usdc)),
            amount_units: 1_000,
            withdrawal_id: [id; 32],
            expiry_ms: 4_000_000_000_000,
        };
        let mut signature = key.sign_digest(terms.digest(&domain));
        if forged {
            signature[10] ^= 1;
        }
        terms.call_argument(&signature)
    };
    let batch = |first: u8, forged: bool| {
        DexdVault::withdrawBatchCall {
            withdrawals: (0..10u8)
                .map(|index| withdrawal(first + index, forged && index == 0))
                .collect(),
        }
        .abi_encode()
    };
    let paid = call(&node, operator, vault, batch(100, false), U256::ZERO)
        .await
        .gas_used;
    let skipped = call(&node, operator, vault, batch(120, true), U256::ZERO)
        .await
        .gas_used;
    println!("withdrawBatch of 10: {paid} gas; of 10 with one skipped: {skipped} gas");

    // Vetoes: the newest root's, after one vetoed root and after a hundred.
    let commit = |sequence: u64| commit_with_data([sequence as u8; 32], sequence, 0, vec![usdc]);
    call(&node, operator, vault, commit(1), U256::ZERO).await;
    let mut veto_gas = Vec::new();
    for epoch in 1..=101u64 {
        node.raw_request("evm_increaseTime", serde_json::json!([1]))
            .await
            .unwrap();
        call(&node, operator, vault, commit(epoch + 1), U256::ZERO).await;
        let veto = DexdVaultV2::vetoCall {
            epoch: U256::from(epoch),
        }
        .abi_encode();
        veto_gas.push(call(&node, deployer, vault, veto, U256::ZERO).await.gas_used);
    }
    println!(
        "veto of the newest root: after 1 vetoed root {} gas, after 100 {} gas",
        veto_gas[0], veto_gas[100]
    );
    // The freeze for an overdue request (the thirteenth, never served), however young the root.
    node.raw_request("evm_increaseTime", serde_json::json!([terms.request_period_s + 1]))
        .await
        .unwrap();
    call(&node, operator, vault, commit(200), U256::ZERO).await;
    let freeze = call(&node, user, vault, DexdVaultV2::freezeCall {}.abi_encode(), U256::ZERO)
        .await
        .gas_used;
    println!("freeze, a request overdue: {freeze} gas");
}

/// The all-zero exit of an account whose only deposit came after the exit root.
async fn all_zero_exit_gas(
    anvil: &alloy::node_bindings::AnvilInstance,
    bootstrap: &Node,
    (deployer, operator): (&PrivateKeySigner, &PrivateKeySigner),
    late: &PrivateKeySigner,
    usdc: ChainAddress,
    terms: RootTerms,
) {
    let chain_id = anvil.chain_id();
    let max_root_age_s = terms.max_root_age_s;
    let fresh = deploy::deploy_vault_v2(bootstrap, deployer, deployer.address(), operator.address(), &terms)
        .await
        .unwrap();
    let node = Node::connect(&anvil.endpoint(), fresh.address, chain_id, Duration::from_secs(30)).unwrap();
    deploy::list_tokens(&node, deployer, &[usdc]).await.unwrap();
    let commit = commit_with_data([1; 32], 1, 0, vec![]);
    call(&node, operator, fresh.address, commit, U256::ZERO).await;
    deploy::mint(&node, deployer, usdc, late.address(), U256::from(1_000_000u64))
        .await
        .unwrap();
    deploy::deposit_from_wallet(&node, late, Some(usdc), U256::from(1_000_000u64))
        .await
        .unwrap();
    node.raw_request("evm_increaseTime", serde_json::json!([max_root_age_s + 1]))
        .await
        .unwrap();
    call(
        &node,
        late,
        fresh.address,
        DexdVaultV2::freezeCall {}.abi_encode(),
        U256::ZERO,
    )
    .await;
    let exit = DexdVaultV2::exitCall {
        account: late.address(),
        token: usdc,
        balance: U256::ZERO,
        creditedDeposits: U256::ZERO,
        debitedWithdrawals: U256::ZERO,
        proof: Vec::new(),
    }
    .abi_encode();
    let gas = call(&node, late, fresh.address, exit, U256::ZERO).await.gas_used;
    println!("exit, all-zero leaf of a deposit after the exit root: {gas} gas");
}
