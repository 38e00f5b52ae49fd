//! Calls to the vault (version 2) that the contract's tests share: sending, reading, a call's
//! refusal by the vault's own error, the leaves and roots of small trees, a withdrawal signed by
//! its account.

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, FixedBytes, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{SolCall, SolInterface};
use dexd_crypto::liability_tree::{LiabilityLeaf, LiabilityTree};
use dexd_crypto::{PrivateKey, SigningDomain};
use dexd_custody::deploy;
use dexd_custody::node::NodeError;
use dexd_custody::vault::{venue_address, DexdVault, DexdVaultV2, WithdrawalTerms};

use super::chain::TestChain;

pub type VaultError = DexdVaultV2::DexdVaultV2Errors;

/// The vault's own error for a call from `from`, or a panic if it does not revert.
pub async fn refusal(chain: &TestChain, from: &PrivateKeySigner, input: Vec<u8>) -> VaultError {
    match chain
        .node
        .call(Some(from.address()), chain.vault, input, U256::ZERO, BlockId::latest())
        .await
    {
        Err(NodeError::Reverted { data: Some(data), .. }) => {
            VaultError::abi_decode(&data).expect("a revert of the vault's own")
        }
        other => panic!("expected a revert, got {other:?}"),
    }
}

pub async fn send(chain: &TestChain, from: &PrivateKeySigner, input: Vec<u8>) -> dexd_custody::node::Receipt {
    deploy::send_and_wait(&chain.node, from, TxKind::Call(chain.vault), input, U256::ZERO)
        .await
        .unwrap()
}

pub async fn view<Call: SolCall>(chain: &TestChain, call: Call) -> Call::Return {
    chain.node.view(chain.vault, call, BlockId::latest()).await.unwrap()
}

/// What `owner` holds of `token` in its own wallet, now.
pub async fn token_balance(chain: &TestChain, token: ChainAddress, owner: ChainAddress) -> U256 {
    chain.node.balance(Some(token), owner, BlockId::latest()).await.unwrap()
}

pub fn leaf(
    account: &PrivateKeySigner,
    token: ChainAddress,
    balance: u128,
    credited: u128,
    debited: u128,
) -> LiabilityLeaf {
    LiabilityLeaf {
        account: venue_address(&account.address()),
        token: venue_address(&token),
        balance,
        credited_deposits: credited,
        debited_withdrawals: debited,
    }
}

pub fn commit_call(tree: &LiabilityTree, sequence: u64, totals: &[(ChainAddress, u128)]) -> Vec<u8> {
    commit_covering(tree, sequence, 0, totals)
}

/// What the tests' roots give as their data: roots committed by hand carry calldata (the vault
/// refuses a root without data), whose content only the payer's and the auditor's tests read.
pub const TEST_ROOT_DATA: &[u8] = b"a test's root data";

/// A `commitRootWithData` of `tree` covering the vault's first `deposit_count` deposits.
pub fn commit_covering(
    tree: &LiabilityTree,
    sequence: u64,
    deposit_count: u64,
    totals: &[(ChainAddress, u128)],
) -> Vec<u8> {
    DexdVaultV2::commitRootWithDataCall {
        root: FixedBytes(tree.root()),
        journalSequence: sequence,
        depositCount_: U256::from(deposit_count),
        tokens: totals.iter().map(|(token, _)| *token).collect(),
        totals: totals.iter().map(|(_, total)| U256::from(*total)).collect(),
        data: TEST_ROOT_DATA.to_vec().into(),
    }
    .abi_encode()
}

pub fn exit_call(leaves: &[LiabilityLeaf], tree: &LiabilityTree, index: usize) -> Vec<u8> {
    let entry = leaves[index];
    DexdVaultV2::exitCall {
        account: ChainAddress::from(*entry.account.as_bytes()),
        token: ChainAddress::from(*entry.token.as_bytes()),
        balance: U256::from(entry.balance),
        creditedDeposits: U256::from(entry.credited_deposits),
        debitedWithdrawals: U256::from(entry.debited_withdrawals),
        proof: tree.proof(index).unwrap().into_iter().map(FixedBytes).collect(),
    }
    .abi_encode()
}

pub async fn deposit_usdc(chain: &TestChain, account: &PrivateKeySigner, units: u128) {
    chain.deposit(account, Some(chain.usdc), units).await;
}

/// Pays a USDC withdrawal of `units` to `account` through the operator, signed by the account.
pub async fn pay_withdrawal(chain: &TestChain, account: &PrivateKeySigner, units: u128, id: u8) -> Vec<u8> {
    let terms = WithdrawalTerms {
        account: venue_address(&account.address()),
        token: Some(venue_address(&chain.usdc)),
        amount_units: units,
        withdrawal_id: [id; 32],
        expiry_ms: 4_000_000_000_000,
    };
    let domain = SigningDomain::new(chain.chain_id, venue_address(&chain.vault));
    let key = PrivateKey::parse(&format!("0x{}", alloy::hex::encode(account.to_bytes()))).unwrap();
    let signature = key.sign_digest(terms.digest(&domain));
    DexdVault::withdrawCall {
        withdrawal: terms.call_argument(&signature),
    }
    .abi_encode()
}

pub async fn usdc_of(chain: &TestChain, owner: ChainAddress) -> u128 {
    chain
        .node
        .balance(Some(chain.usdc), owner, BlockId::latest())
        .await
        .unwrap()
        .to::<u128>()
}
