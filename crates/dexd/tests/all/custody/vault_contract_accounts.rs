//! Contract accounts (smart wallets such as a Safe or an ERC-4337 account) on a vault chain, end
//! to end on anvil: a one-owner wallet deposits from its own address, withdraws with a signature
//! its contract approves through ERC-1271 and is paid on chain; signatures the wallet does not
//! approve are refused at the door and change nothing; and the vault's own `isAuthorized` draws
//! the line between an account's ECDSA signature and its contract's approval.

use crate::common;

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, B256, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::signers::SignerSync;
use alloy::sol_types::SolCall;
use common::chain::ETH_UNIT;
use common::vault_venue::{native_withdrawal_digest, VaultVenue};
use dexd_crypto::checksummed;
use dexd_custody::deploy;
use dexd_custody::vault::{venue_address, DexdVault};
use serde_json::json;

fn sign(signer: &PrivateKeySigner, digest: B256) -> [u8; 65] {
    signer.sign_hash_sync(&digest).unwrap().as_bytes()
}

fn withdrawal_body(
    account: ChainAddress,
    quantity: &str,
    id: u64,
    expiry_ms: u64,
    signature: &[u8],
) -> serde_json::Value {
    json!({"from": checksummed(&venue_address(&account)), "symbol": "ETH", "quantity": quantity,
        "nonce": id.to_string(), "expiry": expiry_ms.to_string(),
        "signature": format!("0x{}", alloy::hex::encode(signature))})
}

/// Deploys a wallet owned by `owner` and deposits `amount_units` of the native asset into the
/// vault from the wallet's own address (the owner funds it, then has it call `depositNative`).
async fn smart_wallet_with_deposit(venue: &VaultVenue, owner: &PrivateKeySigner, amount_units: u128) -> ChainAddress {
    let node = &venue.chain.node;
    let wallet = deploy::deploy_test_smart_wallet(node, &venue.chain.deployer, owner.address())
        .await
        .unwrap()
        .address;
    deploy::send_native(node, owner, wallet, U256::from(amount_units))
        .await
        .unwrap();
    let deposit = DexdVault::depositNativeCall {}.abi_encode();
    deploy::execute_from_smart_wallet(
        node,
        owner,
        wallet,
        (venue.chain.vault, U256::from(amount_units), deposit),
    )
    .await
    .unwrap();
    wallet
}

async fn available_eth(venue: &VaultVenue, account: ChainAddress) -> serde_json::Value {
    let address = checksummed(&venue_address(&account));
    let (status, body) = venue.get("/account/assetBalances", &[("account", &address)]).await;
    assert_eq!(status, 200, "{body}");
    common::balance_in(&body, "ETH")["available"].clone()
}

#[tokio::test]
async fn a_smart_wallet_deposits_and_withdraws_with_the_signature_its_contract_approves() {
    let venue = VaultVenue::start().await;
    let owner = venue.chain.users[0].clone();
    let stranger = venue.chain.users[1].clone();
    let wallet = smart_wallet_with_deposit(&venue, &owner, ETH_UNIT).await;
    venue.chain.mine(3).await;
    venue
        .eventually("the wallet's deposit credited", || async {
            available_eth(&venue, wallet).await == "1"
        })
        .await;
    let expiry_ms = dexd_store::now_ms() + 600_000;
    let digest = native_withdrawal_digest(&venue, wallet, ETH_UNIT / 5, 41, expiry_ms);

    // A stranger's signature is not the wallet's: refused, nothing debited, the nonce unclaimed.
    let forged = sign(&stranger, digest);
    venue
        .refused(
            "/portfolio/withdraw",
            withdrawal_body(wallet, "0.2", 41, expiry_ms, &forged),
            401,
            "INVALID_SIGNATURE",
        )
        .await;
    assert_eq!(available_eth(&venue, wallet).await, "1", "nothing was debited");

    // The owner's signature is approved by the wallet's contract: debited, then paid to the
    // wallet on chain.
    let wallet_before = venue.chain.node.balance(None, wallet, BlockId::latest()).await.unwrap();
    let approved = sign(&owner, digest);
    let (status, answer) = venue
        .post(
            "/portfolio/withdraw",
            withdrawal_body(wallet, "0.2", 41, expiry_ms, &approved),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["withdrawal"]["id"], format!("0x{:064x}", 41));
    assert_eq!(available_eth(&venue, wallet).await, "0.8");
    venue
        .eventually("the wallet's withdrawal paid", || async {
            let address = checksummed(&venue_address(&wallet));
            let (_, body) = venue
                .get("/portfolio/withdrawHistories", &[("account", &address)])
                .await;
            body["withdrawals"][0]["status"] == "confirmed"
        })
        .await;
    let wallet_after = venue.chain.node.balance(None, wallet, BlockId::latest()).await.unwrap();
    assert_eq!(wallet_after - wallet_before, U256::from(ETH_UNIT / 5));
    // The same approval again: its id is used.
    venue
        .refused(
            "/portfolio/withdraw",
            withdrawal_body(wallet, "0.2", 41, expiry_ms, &approved),
            409,
            "NONCE_REUSED",
        )
        .await;
    venue.assert_conserved().await;
}

#[tokio::test]
async fn the_vault_takes_a_contracts_approval_only_for_that_contract_account() {
    let venue = VaultVenue::start().await;
    let owner = venue.chain.users[0].clone();
    let stranger = venue.chain.users[1].clone();
    let node = &venue.chain.node;
    let wallet = deploy::deploy_test_smart_wallet(node, &venue.chain.deployer, owner.address())
        .await
        .unwrap()
        .address;
    let expiry_ms = dexd_store::now_ms() + 600_000;
    let for_wallet = native_withdrawal_digest(&venue, wallet, 1, 1, expiry_ms);
    let for_owner = native_withdrawal_digest(&venue, owner.address(), 1, 1, expiry_ms);
    let takes = |account: ChainAddress, digest: B256, signature: [u8; 65]| async move {
        node.vault_takes_authorization(account, digest, &signature)
            .await
            .unwrap()
    };
    assert!(
        takes(wallet, for_wallet, sign(&owner, for_wallet)).await,
        "the wallet approves its owner"
    );
    assert!(
        !takes(wallet, for_wallet, sign(&stranger, for_wallet)).await,
        "nor anyone else"
    );
    assert!(
        takes(owner.address(), for_owner, sign(&owner, for_owner)).await,
        "an account's own ECDSA"
    );
    // The owner's approval speaks for the wallet, never for another account with no code.
    assert!(!takes(stranger.address(), for_wallet, sign(&owner, for_wallet)).await);
    // A signature over other terms is approved by nobody.
    assert!(!takes(wallet, for_owner, sign(&owner, for_wallet)).await);
}
