//! Withdrawals no one can stop (contract version 5), end to end on anvil with the dexd binary:
//! a withdrawal an account asks the vault for on chain, served by the venue through a final
//! root after it cancelled the account's orders holding the token; and the review's poisoned
//! withdrawal, from a real contract wallet whose approval holds only at gas price 0, which
//! passed the payer's simulation and reverted every batch on chain: it is set aside now, and the
//! others are paid.

use crate::common;

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, B256, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::signers::SignerSync;
use alloy::sol_types::SolCall;
use common::chain::{ETH_UNIT, USDC_UNIT};
use common::vault_venue::{address_of, deposit_body, key_of, native_withdrawal_digest, VaultVenue};
use dexd_crypto::checksummed;
use dexd_custody::deploy;
use dexd_custody::vault::{venue_address, DexdVault, DexdVaultV2};
use serde_json::json;

async fn send_to_vault(venue: &VaultVenue, from: &PrivateKeySigner, input: Vec<u8>) -> dexd_custody::node::Receipt {
    deploy::send_and_wait(
        &venue.chain.node,
        from,
        alloy::primitives::TxKind::Call(venue.chain.vault),
        input,
        U256::ZERO,
    )
    .await
    .unwrap()
}

#[tokio::test]
async fn a_withdrawal_asked_for_on_chain_cancels_orders_as_needed_and_is_served() {
    let (venue, alice) = VaultVenue::start_with_alice_funded(2).await;
    // Alice's two buys lock 60 of her 100 USDC.
    for price in ["1000", "2000"] {
        let (status, body) = venue
            .post(
                "/order/addOrder",
                json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": price, "amount": "0.01",
                       "privateKey": key_of(&alice)}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    assert_eq!(venue.balance(&alice, "USDC").await["available"], "70");
    let before = venue.usdc_in_wallet(&alice).await;

    // She asks the vault itself for 80 USDC: no signature, no venue in the way.
    let request = DexdVaultV2::requestWithdrawalCall {
        token: venue.chain.usdc,
        amount: U256::from(80 * USDC_UNIT),
    };
    send_to_vault(&venue, &alice, request.abi_encode()).await;
    venue.chain.mine(3).await;

    // The venue cancels her newest order (enough to free 80), debits 80 and serves it through
    // a final root.
    venue
        .eventually("the request served and confirmed", || async {
            let withdrawals = venue.transfers(&alice, "withdraw").await;
            withdrawals
                .first()
                .is_some_and(|withdrawal| withdrawal["status"] == "confirmed")
        })
        .await;
    let withdrawal = venue.transfers(&alice, "withdraw").await.remove(0);
    assert_eq!(
        (withdrawal["requested"].as_str(), withdrawal["requestId"].as_u64()),
        (Some("chain"), Some(0)),
        "{withdrawal}"
    );
    assert_eq!(withdrawal["quantity"], "80", "{withdrawal}");
    assert_eq!(venue.usdc_in_wallet(&alice).await - before, U256::from(80 * USDC_UNIT));
    let (status, cancelled) = venue
        .get("/order/cancelledOrders", &[("account", &address_of(&alice))])
        .await;
    assert_eq!(status, 200, "{cancelled}");
    let reasons: Vec<&str> = cancelled["orders"]
        .as_array()
        .unwrap()
        .iter()
        .map(|order| order["cancelReason"].as_str().unwrap())
        .collect();
    assert_eq!(reasons, ["forcedWithdrawal"], "{cancelled}");
    assert_eq!(cancelled["orders"][0]["price"], "2000", "the newest order goes first");
    let served = venue
        .chain
        .node
        .view(
            venue.chain.vault,
            DexdVaultV2::withdrawalRequestCall { requestId: U256::ZERO },
            BlockId::latest(),
        )
        .await
        .unwrap();
    assert!(served.served);
    assert_eq!(served.paidAmount, U256::from(80 * USDC_UNIT));
    // Her other order still rests; what is left is hers.
    assert_eq!(venue.balance(&alice, "USDC").await["total"], "20");
    venue.assert_conserved().await;
}

/// A contract wallet holding ETH in the vault whose approval holds only at gas price 0, as an
/// attacker deploys it; its owner signs a withdrawal of 0.1 ETH for it through the API, which
/// takes it (the approval holds in a call).
async fn poisoned_withdrawal(venue: &VaultVenue, owner: &PrivateKeySigner) -> ChainAddress {
    let node = &venue.chain.node;
    // Deployed approving always (it must take the native asset to deposit it), then turned.
    let wallet = deploy::deploy_fickle_wallet(node, &venue.chain.deployer, owner.address(), (0, 0))
        .await
        .unwrap()
        .address;
    deploy::send_native(node, owner, wallet, U256::from(ETH_UNIT))
        .await
        .unwrap();
    let deposit = DexdVault::depositNativeCall {}.abi_encode();
    deploy::execute_from_smart_wallet(node, owner, wallet, (venue.chain.vault, U256::from(ETH_UNIT), deposit))
        .await
        .unwrap();
    let only_at_zero_gas_price = deploy::FickleWallet::setModeCall {
        mode_: 1,
        until_: U256::ZERO,
    };
    deploy::send_and_wait(
        node,
        owner,
        alloy::primitives::TxKind::Call(wallet),
        only_at_zero_gas_price.abi_encode(),
        U256::ZERO,
    )
    .await
    .unwrap();
    venue.chain.mine(3).await;
    let address = checksummed(&venue_address(&wallet));
    venue
        .eventually("the wallet's deposit credited", || async {
            let (_, body) = venue.get("/account/assetBalances", &[("account", &address)]).await;
            body["balances"]
                .as_array()
                .is_some_and(|balances| balances.iter().any(|balance| balance["available"] == "1"))
        })
        .await;
    let expiry_ms = dexd_store::now_ms() + 600_000;
    let digest: B256 = native_withdrawal_digest(venue, wallet, ETH_UNIT / 10, 77, expiry_ms);
    let signature = owner.sign_hash_sync(&digest).unwrap().as_bytes();
    let (status, body) = venue
        .post(
            "/portfolio/withdraw",
            json!({"from": address, "symbol": "ETH", "quantity": "0.1", "nonce": "77",
                   "expiry": expiry_ms.to_string(), "signature": format!("0x{}", alloy::hex::encode(signature))}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    wallet
}

#[tokio::test]
async fn a_withdrawal_its_contract_refuses_at_the_real_gas_price_never_holds_up_the_others() {
    let venue = VaultVenue::start().await;
    let [alice, bob, mallory] = [0, 1, 2].map(|index| venue.chain.users[index].clone());
    venue.fund(&alice, None, ETH_UNIT, "ETH", "1").await;
    venue.fund(&bob, None, ETH_UNIT, "ETH", "1").await;
    // Mallory's poisoned withdrawal comes first, so that it is in every batch before the others.
    let wallet = poisoned_withdrawal(&venue, &mallory).await;
    for (account, quantity) in [(&alice, "0.25"), (&bob, "0.5")] {
        let (status, body) = venue
            .post("/portfolio/withdraw", deposit_body(account, "ETH", quantity))
            .await;
        assert_eq!(status, 200, "{body}");
    }
    venue.wait_for_every_withdrawal_confirmed(&alice).await;
    venue.wait_for_every_withdrawal_confirmed(&bob).await;
    // The wallet's stays pending, set aside; no transaction of the payer's reverted.
    let address = checksummed(&venue_address(&wallet));
    let (status, body) = venue
        .get("/portfolio/withdrawHistories", &[("account", &address)])
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["withdrawals"][0]["status"], "pending", "{body}");
    let spent = venue
        .chain
        .node
        .withdrawn_many(&[(wallet, U256::from(77))], BlockId::latest())
        .await
        .unwrap();
    assert_eq!(spent, vec![false]);
    let reverted = reverted_vault_transactions(&venue).await;
    assert_eq!(reverted, 0, "the payer sent nothing that reverted");
}

/// How many transactions to the vault, in every block so far, reverted.
async fn reverted_vault_transactions(venue: &VaultVenue) -> usize {
    let node = &venue.chain.node;
    let head = node.head().await.unwrap();
    let mut reverted = 0;
    for number in 0..=head {
        let block = node
            .raw_request("eth_getBlockByNumber", json!([format!("0x{number:x}"), true]))
            .await
            .unwrap();
        for transaction in block["transactions"].as_array().into_iter().flatten() {
            let to_vault = transaction["to"]
                .as_str()
                .is_some_and(|to| to.eq_ignore_ascii_case(&format!("{:#x}", venue.chain.vault)));
            if !to_vault {
                continue;
            }
            let hash: B256 = transaction["hash"].as_str().unwrap().parse().unwrap();
            if node
                .receipt(hash)
                .await
                .unwrap()
                .is_some_and(|receipt| !receipt.succeeded)
            {
                reverted += 1;
            }
        }
    }
    reverted
}
