//! Trading without sending a key: requests signed by the client with an EIP-712 implementation
//! that shares no code with dexd (alloy's typed-data hasher, k256's signer), against the real
//! server. Checks acceptance, the order id, replay (nonce reuse, also after a restart), expiry,
//! foreign signatures, and that every refusal changes nothing.

use crate::common;

use alloy_dyn_abi::TypedData;
use common::signer::{eip712, now_ms, Signer};
use common::{assert_error, TestServer};
use dexd_venue::config::Config;
use serde_json::{json, Value};

/// Balances and the order book: what a refused request must leave alone.
async fn snapshot(server: &TestServer, signer: &Signer) -> Value {
    let (_, balances) = server
        .get(
            "/account/assetBalances",
            &[("chainId", "1"), ("account", &signer.trader.address)],
        )
        .await;
    let (_, bids) = server
        .get("/order/buyOrderbooks", &[("chainId", "1"), ("pair", "ETH/USDC")])
        .await;
    let (_, deposits) = server
        .get(
            "/portfolio/depositHistories",
            &[("chainId", "1"), ("account", &signer.trader.address)],
        )
        .await;
    json!({"balances": balances["balances"], "bids": bids["levels"], "deposits": deposits["deposits"]})
}

fn signed_deposit(eip712: &Value, signer: &Signer, quantity: &str, nonce: &str, expiry: u64) -> Value {
    let (signature, _) = signer.sign(
        eip712,
        "Deposit",
        json!({"account": signer.trader.address, "symbol": "USDC", "quantity": quantity, "nonce": nonce, "expiry": expiry.to_string()}),
    );
    json!({"chainId": "1", "from": signer.trader.address, "symbol": "USDC", "quantity": quantity,
           "account": signer.trader.address, "nonce": nonce, "expiry": expiry, "signature": signature})
}

#[tokio::test]
async fn the_published_types_are_the_ones_the_venue_hashes() {
    let server = TestServer::start().await;
    let description = eip712(&server).await;
    assert_eq!(description["domain"]["name"], "dexd");
    assert_eq!(description["domain"]["chainId"], 1);
    assert_eq!(description["primaryTypes"]["addOrder"], "Order");
    let order_members: Vec<&str> = description["types"]["Order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|member| member["name"].as_str().unwrap())
        .collect();
    assert_eq!(order_members.last(), Some(&"expiresAt"));
    let (status, _) = server.get("/account/eip712", &[("chainId", "5")]).await;
    assert_eq!(status, 404);
}

#[tokio::test]
async fn a_client_signed_deposit_order_cancel_and_withdrawal_go_through() {
    let server = TestServer::start().await;
    let eip712 = eip712(&server).await;
    let signer = Signer::new(0x5a);
    let expiry = now_ms() + 60_000;

    let (status, body) = server
        .post_json(
            "/portfolio/deposit",
            signed_deposit(&eip712, &signer, "5000", "1", expiry),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["balance"]["available"], "5000");

    let order_message = json!({
        "account": signer.trader.address, "symbol": "ETH/USDC", "orderType": "limit", "direction": "buy",
        "timeInForce": "GTC", "postOnly": false, "price": "2000.5", "amount": "1.25", "clientOrderId": "",
        "nonce": "2", "expiry": expiry.to_string(), "triggerPrice": "", "triggerCondition": "", "ocoGroup": "", "expiresAt": "0",
    });
    let (signature, digest) = signer.sign(&eip712, "Order", order_message);
    let (status, placed) = server
        .post_json(
            "/order/addOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy",
            "price": "2000.5", "amount": "1.25", "account": signer.trader.address, "nonce": "2", "expiry": expiry,
            "signature": signature}),
        )
        .await;
    assert_eq!(status, 200, "{placed}");
    assert_eq!(
        placed["order"]["orderId"],
        digest.as_str(),
        "the order id is the client's digest"
    );
    assert_eq!(placed["order"]["signature"], signature.as_str());
    assert_eq!(placed["order"]["account"], signer.trader.address.as_str());
    let (_, detail) = server
        .get("/order/orderDetail", &[("chainId", "1"), ("orderId", &digest)])
        .await;
    let typed_data: TypedData = serde_json::from_value(detail["typedData"].clone()).unwrap();
    assert_eq!(format!("{}", typed_data.eip712_signing_hash().unwrap()), digest);

    let (signature, _) = signer.sign(
        &eip712,
        "CancelOrder",
        json!({"account": signer.trader.address, "symbol": "ETH/USDC", "orderId": digest, "nonce": "3", "expiry": expiry.to_string()}),
    );
    let (status, cancelled) = server
        .post_json(
            "/order/cancelOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": digest,
            "account": signer.trader.address, "nonce": "3", "expiry": expiry, "signature": signature}),
        )
        .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["order"]["status"], "cancelled");

    let (signature, _) = signer.sign(
        &eip712,
        "Withdraw",
        json!({"account": signer.trader.address, "symbol": "USDC", "quantity": "1000", "nonce": "4", "expiry": expiry.to_string()}),
    );
    let (status, withdrawn) = server
        .post_json(
            "/portfolio/withdraw",
            json!({"chainId": "1", "from": signer.trader.address, "symbol": "USDC",
            "quantity": "1000", "nonce": "4", "expiry": expiry, "signature": signature}),
        )
        .await;
    assert_eq!(status, 200, "{withdrawn}");
    assert_eq!(withdrawn["balance"]["available"], "4000");
}

#[tokio::test]
async fn replayed_expired_foreign_and_mixed_credentials_are_refused_and_change_nothing() {
    let data_dir = tempfile::tempdir().unwrap();
    let signer = Signer::new(0x5b);
    let expiry = now_ms() + 60_000;
    let deposit = {
        let server = TestServer::start_in(Config::embedded_default(), data_dir.path()).await;
        let eip712 = eip712(&server).await;
        let deposit = signed_deposit(&eip712, &signer, "100", "77", expiry);
        let (status, body) = server.post_json("/portfolio/deposit", deposit.clone()).await;
        assert_eq!(status, 200, "{body}");
        let before = snapshot(&server, &signer).await;

        let replay = server.post_json("/portfolio/deposit", deposit.clone()).await;
        assert_error(&replay, 409, "NONCE_REUSED", Some("nonce"));

        let expired = signed_deposit(&eip712, &signer, "100", "78", now_ms() - 1);
        let answer = server.post_json("/portfolio/deposit", expired).await;
        assert_error(&answer, 401, "SIGNATURE_EXPIRED", Some("expiry"));

        let too_far = signed_deposit(&eip712, &signer, "100", "79", now_ms() + 2 * 3_600_000);
        let answer = server.post_json("/portfolio/deposit", too_far).await;
        assert_error(&answer, 400, "INVALID_PARAMETER", Some("expiry"));

        // Signed by another key, or over other terms than those sent.
        let mallory = Signer::new(0x66);
        let mut forged = signed_deposit(&eip712, &mallory, "100", "80", expiry);
        forged["from"] = json!(signer.trader.address);
        forged["account"] = json!(signer.trader.address);
        let answer = server.post_json("/portfolio/deposit", forged).await;
        assert_error(&answer, 401, "INVALID_SIGNATURE", Some("signature"));
        let mut altered = signed_deposit(&eip712, &signer, "100", "81", expiry);
        altered["quantity"] = json!("1000000");
        let answer = server.post_json("/portfolio/deposit", altered).await;
        assert_error(&answer, 401, "INVALID_SIGNATURE", Some("signature"));

        let mut mixed = signed_deposit(&eip712, &signer, "100", "82", expiry);
        mixed["privateKey"] = json!(signer.trader.key);
        let answer = server.post_json("/portfolio/deposit", mixed).await;
        assert_eq!(answer.0, 400, "{}", answer.1);
        let mut incomplete = signed_deposit(&eip712, &signer, "100", "83", expiry);
        incomplete.as_object_mut().unwrap().remove("nonce");
        let answer = server.post_json("/portfolio/deposit", incomplete).await;
        assert_error(&answer, 400, "MISSING_PARAMETER", Some("nonce"));
        let mut malformed = signed_deposit(&eip712, &signer, "100", "84", expiry);
        malformed["signature"] = json!("0x1234");
        let answer = server.post_json("/portfolio/deposit", malformed).await;
        assert_error(&answer, 400, "INVALID_PARAMETER", Some("signature"));

        assert_eq!(snapshot(&server, &signer).await, before, "refusals changed the state");
        deposit
    };
    // The nonce is kept durably: after a restart the same request is still refused.
    let server = TestServer::start_in(Config::embedded_default(), data_dir.path()).await;
    let before = snapshot(&server, &signer).await;
    let replay = server.post_json("/portfolio/deposit", deposit).await;
    assert_error(&replay, 409, "NONCE_REUSED", Some("nonce"));
    assert_eq!(snapshot(&server, &signer).await, before);
    assert_eq!(before["balances"][1]["available"], "100");
}

#[tokio::test]
async fn one_account_cannot_hold_more_live_signed_requests_than_its_limit() {
    let mut config = Config::embedded_default();
    config.limits.max_live_nonces_per_account = 2;
    let server = TestServer::start_with(config).await;
    let description = eip712(&server).await;
    let (alice, bob) = (Signer::new(0x71), Signer::new(0x72));
    let expiry = now_ms() + 600_000;
    for nonce in ["1", "2"] {
        let (status, body) = server
            .post_json(
                "/portfolio/deposit",
                signed_deposit(&description, &alice, "5", nonce, expiry),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    let before = snapshot(&server, &alice).await;
    let refused = server
        .client
        .post(format!("{}/portfolio/deposit", server.base_url))
        .json(&signed_deposit(&description, &alice, "5", "3", expiry))
        .send()
        .await
        .unwrap();
    assert_eq!(refused.status(), 429);
    // Room comes back when Alice's first request expires, ten minutes from now.
    let retry_after: u64 = refused.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!((590..=600).contains(&retry_after), "Retry-After {retry_after}");
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED", "{body}");
    assert_eq!(snapshot(&server, &alice).await, before, "nothing was applied");
    // Another account is not held back by Alice's requests.
    let (status, body) = server
        .post_json(
            "/portfolio/deposit",
            signed_deposit(&description, &bob, "5", "1", expiry),
        )
        .await;
    assert_eq!(status, 200, "{body}");
}
