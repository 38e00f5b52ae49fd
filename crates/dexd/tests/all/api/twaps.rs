//! TWAP orders against the real server in ledger mode (contract version 5): the first slice at
//! once, with `twapId` in the account's orders; a TWAP sent again (thirty times at once) started
//! once; a cancel only its account can make; the bounds and limits refused whole; the signed
//! `Twap` type; a TWAP in a subaccount. The schedule over time is tested on a vault chain, whose
//! clock the tests move (`custody::twap_schedule`).

use std::time::Duration;

use crate::common;

use common::signer::{eip712, now_ms, Signer};
use common::{alice_with_dollars_and_bob_offering, assert_error, TestServer, Trader};
use serde_json::{json, Value};

fn twap_body(trader: &Trader, amount: &str, client_twap_id: Option<&str>) -> Value {
    let mut body = json!({"chainId": "1", "symbol": "ETH/USDC", "direction": "buy", "amount": amount,
                          "durationMs": 300_000, "intervalMs": 30_000, "privateKey": trader.key});
    if let Some(id) = client_twap_id {
        body["clientTwapId"] = json!(id);
    }
    body
}

async fn twaps_of(server: &TestServer, trader: &Trader, subaccount: Option<&str>) -> Vec<Value> {
    let mut query = vec![("chainId", "1"), ("account", trader.address.as_str())];
    if let Some(number) = subaccount {
        query.push(("subaccount", number));
    }
    let (status, body) = server.get("/order/twaps", &query).await;
    assert_eq!(status, 200, "{body}");
    body["twaps"].as_array().unwrap().clone()
}

/// Waits (up to 10 s) until the account's first listed TWAP has run `slices` slices.
async fn wait_for_slices(server: &TestServer, trader: &Trader, slices: u64) -> Value {
    for _ in 0..200 {
        let twaps = twaps_of(server, trader, None).await;
        if twaps.first().is_some_and(|twap| twap["slices"] == slices) {
            return twaps[0].clone();
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    panic!(
        "the TWAP did not run {slices} slices: {:?}",
        twaps_of(server, trader, None).await
    );
}

#[tokio::test]
async fn a_twap_starts_once_places_its_first_slice_at_once_and_only_its_account_cancels_it() {
    let server = TestServer::start().await;
    let (alice, bob) = alice_with_dollars_and_bob_offering(&server).await;
    let body = twap_body(&alice, "1", Some("slow-buy"));
    let (status, first) = server.post_json("/order/addTwap", body.clone()).await;
    assert_eq!(status, 200, "{first}");
    let twap = &first["twap"];
    assert_eq!(
        (
            &twap["status"],
            &twap["amount"],
            &twap["slicesPlanned"],
            &twap["clientTwapId"]
        ),
        (&json!("running"), &json!("1"), &json!(10), &json!("slow-buy"))
    );
    let twap_id = twap["twapId"].as_str().unwrap().to_string();

    // Sent again, alone and thirty times at once: the same TWAP, started once.
    let retries = (0..30).map(|_| server.post_json("/order/addTwap", body.clone()));
    for (status, answer) in futures_util::future::join_all(retries).await {
        assert_eq!((status, &answer["twap"]["twapId"]), (200, &json!(twap_id)), "{answer}");
    }
    assert_eq!(twaps_of(&server, &alice, None).await.len(), 1);
    assert_error(
        &server
            .post_json("/order/addTwap", twap_body(&alice, "2", Some("slow-buy")))
            .await,
        409,
        "DUPLICATE_CLIENT_TWAP_ID",
        Some("clientTwapId"),
    );

    // The first slice is placed at once: a tenth, immediate-or-cancel, marked with the TWAP.
    let ran = wait_for_slices(&server, &alice, 1).await;
    assert_eq!((&ran["filled"], &ran["cost"]), (&json!("0.1"), &json!("210")));
    let filled = server.account_list("/order/filledOrders", &alice, "orders").await;
    assert_eq!(filled.len(), 1, "{filled:?}");
    let slice = &filled[0];
    assert_eq!(
        (
            &slice["twapId"],
            &slice["timeInForce"],
            &slice["amount"],
            &slice["signature"]
        ),
        (&json!(twap_id), &json!("IOC"), &json!("0.1"), &json!(""))
    );
    // The taker's fee is taken from the ETH it receives.
    assert_eq!(server.balance(&alice, "USDC").await["available"], "2790");

    // Only its account cancels it, once.
    let cancel = |trader: &Trader| json!({"chainId": "1", "twapId": twap_id, "privateKey": trader.key});
    assert_error(
        &server.post_json("/order/cancelTwap", cancel(&bob)).await,
        404,
        "TWAP_NOT_FOUND",
        Some("twapId"),
    );
    let (status, cancelled) = server.post_json("/order/cancelTwap", cancel(&alice)).await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(
        (&cancelled["twap"]["status"], &cancelled["twap"]["nextSliceAt"]),
        (&json!("cancelled"), &Value::Null)
    );
    assert_error(
        &server.post_json("/order/cancelTwap", cancel(&alice)).await,
        409,
        "TWAP_NOT_RUNNING",
        Some("twapId"),
    );
    // Its id is kept with the finished TWAP: the same request is still answered with it.
    let (status, again) = server.post_json("/order/addTwap", body).await;
    assert_eq!((status, &again["twap"]["status"]), (200, &json!("cancelled")));
}

#[tokio::test]
async fn bounds_and_limits_are_refused_whole() {
    let server = TestServer::start().await;
    let (alice, _bob) = alice_with_dollars_and_bob_offering(&server).await;
    let with = |changes: Value| {
        let mut body = twap_body(&alice, "1", None);
        body["limitPrice"] = json!("1000");
        for (name, value) in changes.as_object().unwrap() {
            body[name] = value.clone();
        }
        body
    };
    for (changes, status, code, field) in [
        (json!({"durationMs": 299_999}), 422, "TWAP_OUT_OF_BOUNDS", None),
        (json!({"durationMs": 86_400_001u64}), 422, "TWAP_OUT_OF_BOUNDS", None),
        (json!({"intervalMs": 29_999}), 422, "TWAP_OUT_OF_BOUNDS", None),
        (json!({"intervalMs": 70_000}), 422, "TWAP_OUT_OF_BOUNDS", None),
        (json!({"amount": "0.001"}), 422, "TWAP_OUT_OF_BOUNDS", None),
        (
            json!({"limitPrice": "1000.001"}),
            422,
            "INVALID_TICK",
            Some("limitPrice"),
        ),
        (
            json!({"durationMs": "5m"}),
            400,
            "INVALID_PARAMETER",
            Some("durationMs"),
        ),
        (
            json!({"clientTwapId": "a/b"}),
            400,
            "INVALID_PARAMETER",
            Some("clientTwapId"),
        ),
        (
            json!({"direction": "hold"}),
            400,
            "INVALID_PARAMETER",
            Some("direction"),
        ),
    ] {
        let answer = server.post_json("/order/addTwap", with(changes.clone())).await;
        assert_error(&answer, status, code, field);
    }
    let mut missing = with(json!({}));
    missing.as_object_mut().unwrap().remove("intervalMs");
    assert_error(
        &server.post_json("/order/addTwap", missing).await,
        400,
        "MISSING_PARAMETER",
        Some("intervalMs"),
    );
    let stranger = Trader::new(0x5e);
    let body = json!({"chainId": "1", "symbol": "ETH/USDC", "direction": "buy", "amount": "1", "durationMs": 300_000,
                      "intervalMs": 30_000, "privateKey": stranger.key});
    assert_error(
        &server.post_json("/order/addTwap", body).await,
        404,
        "ACCOUNT_NOT_FOUND",
        Some("account"),
    );
    assert!(
        twaps_of(&server, &alice, None).await.is_empty(),
        "nothing refused started"
    );
    // Five run on a pair, not six.
    for _ in 0..5 {
        let (status, answer) = server.post_json("/order/addTwap", with(json!({}))).await;
        assert_eq!(status, 200, "{answer}");
    }
    assert_error(
        &server.post_json("/order/addTwap", with(json!({}))).await,
        422,
        "TOO_MANY_TWAPS",
        None,
    );
    assert_eq!(twaps_of(&server, &alice, None).await.len(), 5);
}

#[tokio::test]
async fn a_twap_signed_by_its_account_and_one_in_a_subaccount() {
    let server = TestServer::start().await;
    let carol = Signer::new(0xc3);
    let dave = Signer::new(0xd4);
    server.deposit(&carol.trader, "USDC", "1000").await;
    let eip712 = eip712(&server).await;
    assert_eq!(eip712["primaryTypes"]["addTwap"], "Twap");
    let expiry = now_ms() + 60_000;
    let message = json!({"account": carol.trader.address, "symbol": "ETH/USDC", "direction": "buy", "amount": "0.5",
                         "durationMs": "600000", "intervalMs": "60000", "limitPrice": "1500", "clientTwapId": "",
                         "nonce": "7", "expiry": expiry.to_string()});
    let body = |signature: &str| {
        json!({"chainId": "1", "symbol": "ETH/USDC", "direction": "buy", "amount": "0.5", "durationMs": 600_000,
               "intervalMs": 60_000, "limitPrice": "1500", "account": carol.trader.address, "nonce": "7",
               "expiry": expiry, "signature": signature})
    };
    // Another key's signature is an agent's, and Dave is none of Carol's.
    let (forged, _) = dave.sign(&eip712, "Twap", message.clone());
    assert_error(
        &server.post_json("/order/addTwap", body(&forged)).await,
        403,
        "AGENT_NOT_ALLOWED",
        Some("account"),
    );
    let (signature, _) = carol.sign(&eip712, "Twap", message);
    let (status, started) = server.post_json("/order/addTwap", body(&signature)).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["twap"]["limitPrice"], "1500");
    let twap_id = started["twap"]["twapId"].as_str().unwrap().to_string();
    // The same signed request again: its nonce is spent, nothing starts.
    let (status, _) = server.post_json("/order/addTwap", body(&signature)).await;
    assert_eq!(status, 409);
    // A signed cancel.
    let cancel =
        json!({"account": carol.trader.address, "twapId": twap_id, "nonce": "8", "expiry": expiry.to_string()});
    let (signature, _) = carol.sign(&eip712, "CancelTwap", cancel);
    let (status, cancelled) = server
        .post_json(
            "/order/cancelTwap",
            json!({"chainId": "1", "twapId": twap_id, "account": carol.trader.address, "nonce": "8",
                   "expiry": expiry, "signature": signature}),
        )
        .await;
    assert_eq!(
        (status, &cancelled["twap"]["status"]),
        (200, &json!("cancelled")),
        "{cancelled}"
    );

    // In a subaccount: the TWAP is the subaccount's, listed under it and not under the owner.
    let (status, moved) = server
        .post_json(
            "/account/transfer",
            json!({"chainId": "1", "from": carol.trader.address, "fromSubaccount": 0, "toSubaccount": 2,
                   "symbol": "USDC", "quantity": "500", "clientTransferId": "fund-2", "privateKey": carol.trader.key}),
        )
        .await;
    assert_eq!(status, 200, "{moved}");
    let mut body = twap_body(&carol.trader, "0.2", None);
    body["subaccount"] = json!(2);
    body["limitPrice"] = json!("1000");
    let (status, started) = server.post_json("/order/addTwap", body).await;
    assert_eq!(status, 200, "{started}");
    assert_eq!(started["twap"]["account"], moved["transfer"]["to"]);
    assert_eq!(twaps_of(&server, &carol.trader, Some("2")).await.len(), 1);
    assert_eq!(
        twaps_of(&server, &carol.trader, None).await.len(),
        1,
        "only the signed, cancelled one"
    );
}
