//! The orders' EIP-712 signatures, checked with implementations that share no code with dexd:
//! alloy's typed-data hasher for the digest and k256 for recovering the signer.

use crate::common;

use alloy_dyn_abi::TypedData;
use alloy_primitives::keccak256;
use common::{TestServer, Trader};
use k256::ecdsa::{RecoveryId, Signature, VerifyingKey};
use serde_json::json;

fn recover_with_k256(digest: &[u8; 32], signature_hex: &str) -> String {
    let bytes = hex::decode(signature_hex.trim_start_matches("0x")).unwrap();
    assert_eq!(bytes.len(), 65);
    let signature = Signature::from_slice(&bytes[..64]).unwrap();
    let recovery = RecoveryId::from_byte(bytes[64] - 27).unwrap();
    let key = VerifyingKey::recover_from_prehash(digest, &signature, recovery).unwrap();
    let point = key.to_encoded_point(false);
    let address = &keccak256(&point.as_bytes()[1..])[12..];
    alloy_primitives::Address::from_slice(address).to_checksum(None)
}

#[tokio::test]
async fn order_detail_typed_data_hashes_to_the_order_id_and_recovers_to_the_account() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    server.deposit(&alice, "USDC", "5000").await;
    let (status, placed) = server
        .post_json("/order/addOrder", json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "2000.5", "amount": "1.25", "clientOrderId": "bot-1", "postOnly": true, "privateKey": alice.key}))
        .await;
    assert_eq!(status, 200, "{placed}");
    let order_id = placed["order"]["orderId"].as_str().unwrap();
    let (status, detail) = server
        .get("/order/orderDetail", &[("chainId", "1"), ("orderId", order_id)])
        .await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["typedData"]["message"]["price"], "2000.5");
    assert_eq!(detail["typedData"]["message"]["clientOrderId"], "bot-1");
    assert_eq!(detail["typedData"]["domain"]["chainId"], 1);

    let typed_data: TypedData = serde_json::from_value(detail["typedData"].clone()).unwrap();
    let digest = typed_data.eip712_signing_hash().unwrap();
    assert_eq!(format!("{digest}"), order_id, "the order id is the EIP-712 digest");
    let signer = recover_with_k256(&digest.0, detail["order"]["signature"].as_str().unwrap());
    assert_eq!(signer, alice.address);

    // The same order on another chain has another domain, so another digest.
    let mut other_chain = detail["typedData"].clone();
    other_chain["domain"]["chainId"] = json!(42161);
    let other: TypedData = serde_json::from_value(other_chain).unwrap();
    assert_ne!(other.eip712_signing_hash().unwrap(), digest);
}

#[tokio::test]
async fn equal_orders_get_different_ids() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    server.deposit(&alice, "USDC", "5000").await;
    let first = server.limit(&alice, "buy", "1000", "1").await;
    let second = server.limit(&alice, "buy", "1000", "1").await;
    assert_ne!(first["order"]["orderId"], second["order"]["orderId"]);
}
