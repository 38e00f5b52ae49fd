//! Deploying the vault (what `dexd vault deploy` runs against any chain), and the test tokens
//! and funded accounts of a local devnet (what `dexd devnet-setup` and the tests run against
//! anvil). Every transaction is signed locally with the key it is given.
//!
//! It does not run the venue; it only puts contracts and balances on a chain.

use std::time::Duration;

use alloy::primitives::{Address as ChainAddress, Bytes, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{SolCall, SolConstructor};

use super::node::{Node, NodeError, Receipt};
use super::vault::{DexdVault, DexdVaultV2, Erc20};

alloy::sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    TestToken,
    "../../contracts/artifacts/TestToken.json"
);

alloy::sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    FeeOnTransferToken,
    "../../contracts/artifacts/FeeOnTransferToken.json"
);

alloy::sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    ReentrantToken,
    "../../contracts/artifacts/ReentrantToken.json"
);

alloy::sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    TestSmartWallet,
    "../../contracts/artifacts/TestSmartWallet.json"
);

alloy::sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    FickleWallet,
    "../../contracts/artifacts/FickleWallet.json"
);

/// How often a deployment polls for its receipt, and how long it waits in all.
const RECEIPT_POLL: Duration = Duration::from_millis(50);
const RECEIPT_TIMEOUT: Duration = Duration::from_secs(120);

/// A deployed contract.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Deployed {
    /// Its address.
    pub address: ChainAddress,
    /// The block it was created in.
    pub block_number: u64,
    /// Gas its creation used.
    pub gas_used: u64,
}

/// Sends a transaction, waits for it, and fails unless it succeeded.
pub async fn send_and_wait(
    node: &Node,
    signer: &PrivateKeySigner,
    to: TxKind,
    input: Vec<u8>,
    value: U256,
) -> Result<Receipt, NodeError> {
    let sent = node.send_estimated(signer, to, input, value).await?;
    let receipt = node.wait_for_receipt(sent.hash, RECEIPT_POLL, RECEIPT_TIMEOUT).await?;
    if !receipt.succeeded {
        return Err(NodeError::Reverted {
            message: format!("transaction {} reverted", sent.hash),
            data: None,
        });
    }
    Ok(receipt)
}

async fn create(node: &Node, deployer: &PrivateKeySigner, code: Vec<u8>) -> Result<Deployed, NodeError> {
    let nonce = node.pending_nonce(deployer.address()).await?;
    let receipt = send_and_wait(node, deployer, TxKind::Create, code, U256::ZERO).await?;
    Ok(Deployed {
        address: deployer.address().create(nonce),
        block_number: receipt.block_number,
        gas_used: receipt.gas_used,
    })
}

fn with_constructor(bytecode: &Bytes, arguments: Vec<u8>) -> Vec<u8> {
    let mut code = bytecode.to_vec();
    code.extend_from_slice(&arguments);
    code
}

/// Deploys version 1 of the vault with `owner` (who may replace the operator and pause
/// deposits) and `operator` (who pays withdrawals).
pub async fn deploy_vault(
    node: &Node,
    deployer: &PrivateKeySigner,
    owner: ChainAddress,
    operator: ChainAddress,
) -> Result<Deployed, NodeError> {
    let arguments = DexdVault::constructorCall {
        initialOwner: owner,
        initialOperator: operator,
    }
    .abi_encode();
    create(node, deployer, with_constructor(&DexdVault::BYTECODE, arguments)).await
}

/// The terms of a version 2 vault, fixed at its deployment (seconds of chain time) but for its
/// guardians, which its owner may replace (a change waits one challenge period).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootTerms {
    /// How long without a root before anyone may freeze the vault.
    pub max_root_age_s: u64,
    /// How long a guardian may veto a root; shorter than `max_root_age_s`.
    pub challenge_period_s: u64,
    /// How long the operator has to serve a withdrawal an account requested on chain before
    /// anyone may freeze the vault; longer than `challenge_period_s` plus the venue's root
    /// interval.
    pub request_period_s: u64,
    /// Who may veto a root besides the owner (at most [`MAX_GUARDIANS`]); empty for nobody else.
    pub guardians: Vec<ChainAddress>,
}

/// The most guardians a vault takes (`MAX_GUARDIANS` in the contract).
pub const MAX_GUARDIANS: usize = 8;

impl RootTerms {
    /// For a venue in production: three days without a root before a freeze, fifteen minutes
    /// to veto (withdrawals are paid once a root covering them is past it: a longer period gives
    /// the guardians more time, and every withdrawal as much more to wait; several guardians that
    /// verify a root in seconds need far less than this), a day to serve a request. With a root
    /// every two minutes (the venue's default) a withdrawal is paid about 20 minutes after its
    /// debit.
    pub const PRODUCTION: RootTerms = RootTerms {
        max_root_age_s: 3 * 24 * 3_600,
        challenge_period_s: 900,
        request_period_s: 24 * 3_600,
        guardians: Vec::new(),
    };

    /// For a local devnet: ten minutes without a root, a minute to veto, five to serve a request.
    pub const DEVNET: RootTerms = RootTerms {
        max_root_age_s: 600,
        challenge_period_s: 60,
        request_period_s: 300,
        guardians: Vec::new(),
    };
}

/// Deploys version 2 of the vault (liability roots and the exit, `contracts/src/DexdVaultV2.sol`)
/// with `owner`, `operator` and the terms of its roots.
pub async fn deploy_vault_v2(
    node: &Node,
    deployer: &PrivateKeySigner,
    owner: ChainAddress,
    operator: ChainAddress,
    terms: &RootTerms,
) -> Result<Deployed, NodeError> {
    let arguments = DexdVaultV2::constructorCall {
        initialOwner: owner,
        initialOperator: operator,
        maxRootAge_: terms.max_root_age_s,
        challengePeriod_: terms.challenge_period_s,
        guardians_: terms.guardians.clone(),
        requestPeriod_: terms.request_period_s,
    }
    .abi_encode();
    create(node, deployer, with_constructor(&DexdVaultV2::BYTECODE, arguments)).await
}

/// Lists `tokens` in a version 2 vault (the zero address: the native asset), one transaction
/// each, from the vault's owner `owner` (`node` is connected to the vault).
pub async fn list_tokens(node: &Node, owner: &PrivateKeySigner, tokens: &[ChainAddress]) -> Result<(), NodeError> {
    for token in tokens {
        let call = crate::vault::DexdVaultV2::listTokenCall { token: *token }.abi_encode();
        send_and_wait(node, owner, TxKind::Call(node.vault()), call, U256::ZERO).await?;
    }
    Ok(())
}

/// Deploys a test token anyone may mint (for devnets and tests only).
pub async fn deploy_test_token(
    node: &Node,
    deployer: &PrivateKeySigner,
    name: &str,
    symbol: &str,
    decimals: u8,
) -> Result<Deployed, NodeError> {
    let arguments = TestToken::constructorCall {
        name_: name.to_string(),
        symbol_: symbol.to_string(),
        decimals_: decimals,
    }
    .abi_encode();
    create(node, deployer, with_constructor(&TestToken::BYTECODE, arguments)).await
}

/// Deploys the token that burns 1 % of every transfer (tests only).
pub async fn deploy_fee_on_transfer_token(node: &Node, deployer: &PrivateKeySigner) -> Result<Deployed, NodeError> {
    create(node, deployer, FeeOnTransferToken::BYTECODE.to_vec()).await
}

/// Deploys the token that calls back into a target during transfers (tests only).
pub async fn deploy_reentrant_token(node: &Node, deployer: &PrivateKeySigner) -> Result<Deployed, NodeError> {
    create(node, deployer, ReentrantToken::BYTECODE.to_vec()).await
}

/// Deploys a one-owner smart wallet that approves its owner's signatures through ERC-1271
/// (tests only).
pub async fn deploy_test_smart_wallet(
    node: &Node,
    deployer: &PrivateKeySigner,
    owner: ChainAddress,
) -> Result<Deployed, NodeError> {
    let arguments = TestSmartWallet::constructorCall { owner_: owner }.abi_encode();
    create(node, deployer, with_constructor(&TestSmartWallet::BYTECODE, arguments)).await
}

/// Deploys a smart wallet whose approval of its owner's signatures depends on `mode`
/// (`FickleWallet`'s: 0 always, 1 only at gas price 0, 2 only before block time `until`, 3
/// never), as an attacker would to make a withdrawal pass its checks and fail on chain (tests
/// only). [`execute_from_smart_wallet`] calls through it.
pub async fn deploy_fickle_wallet(
    node: &Node,
    deployer: &PrivateKeySigner,
    owner: ChainAddress,
    (mode, until): (u8, u64),
) -> Result<Deployed, NodeError> {
    let arguments = FickleWallet::constructorCall {
        owner_: owner,
        mode_: mode,
        until_: U256::from(until),
    }
    .abi_encode();
    create(node, deployer, with_constructor(&FickleWallet::BYTECODE, arguments)).await
}

/// Has the test smart wallet `wallet` call `target` with `value` and `input`, signed by its
/// owner.
pub async fn execute_from_smart_wallet(
    node: &Node,
    owner: &PrivateKeySigner,
    wallet: ChainAddress,
    (target, value, input): (ChainAddress, U256, Vec<u8>),
) -> Result<Receipt, NodeError> {
    let call = TestSmartWallet::executeCall {
        target,
        value,
        data: input.into(),
    };
    send_and_wait(node, owner, TxKind::Call(wallet), call.abi_encode(), U256::ZERO).await
}

/// Mints test tokens (any of the three test tokens: they share `mint(address,uint256)`).
pub async fn mint(
    node: &Node,
    signer: &PrivateKeySigner,
    token: ChainAddress,
    to: ChainAddress,
    amount: U256,
) -> Result<Receipt, NodeError> {
    let input = TestToken::mintCall { to, amount }.abi_encode();
    send_and_wait(node, signer, TxKind::Call(token), input, U256::ZERO).await
}

/// Approves `spender` for `amount` of `token` from the signer's account.
pub async fn approve(
    node: &Node,
    signer: &PrivateKeySigner,
    token: ChainAddress,
    spender: ChainAddress,
    amount: U256,
) -> Result<Receipt, NodeError> {
    let input = Erc20::approveCall { spender, amount }.abi_encode();
    send_and_wait(node, signer, TxKind::Call(token), input, U256::ZERO).await
}

/// Deposits straight from a wallet to the vault, as a user would without dexd: `approve`, then
/// `deposit` (or `depositNative` when `token` is `None`). Returns the deposit's receipt.
pub async fn deposit_from_wallet(
    node: &Node,
    signer: &PrivateKeySigner,
    token: Option<ChainAddress>,
    amount: U256,
) -> Result<Receipt, NodeError> {
    match token {
        Some(token) => {
            approve(node, signer, token, node.vault(), amount).await?;
            let input = DexdVault::depositCall { token, amount }.abi_encode();
            send_and_wait(node, signer, TxKind::Call(node.vault()), input, U256::ZERO).await
        }
        None => {
            let input = DexdVault::depositNativeCall {}.abi_encode();
            send_and_wait(node, signer, TxKind::Call(node.vault()), input, amount).await
        }
    }
}

/// Sends the native asset from the signer to `to` (to give a devnet account gas).
pub async fn send_native(
    node: &Node,
    signer: &PrivateKeySigner,
    to: ChainAddress,
    amount: U256,
) -> Result<Receipt, NodeError> {
    send_and_wait(node, signer, TxKind::Call(to), Vec::new(), amount).await
}
