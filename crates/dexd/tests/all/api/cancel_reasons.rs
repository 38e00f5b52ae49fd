//! Why each cancelled order was cancelled (`cancelReason`): its owner's cancel, an IOC's
//! remainder, self-trade prevention and the dead man's switch, each in REST and on the `orders`
//! stream; `null` while an order is open or once it filled.

use crate::common;

use std::time::Duration;

use common::stream_client::StreamClient;
use common::{TestServer, Trader};
use serde_json::{json, Value};

async fn order(server: &TestServer, trader: &Trader, fields: Value) -> Value {
    let mut body = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "privateKey": trader.key});
    for (name, value) in fields.as_object().unwrap() {
        body[name] = value.clone();
    }
    let (status, answer) = server.post_json("/order/addOrder", body).await;
    assert_eq!(status, 200, "{answer}");
    answer["order"].clone()
}

#[tokio::test]
async fn each_cancelled_order_says_why_and_the_others_say_null() {
    let server = TestServer::start().await;
    let (alice, bob) = (Trader::new(0xc1), Trader::new(0xc2));
    server.deposit(&alice, "USDC", "100000").await;
    server.deposit(&alice, "ETH", "10").await;
    server.deposit(&bob, "ETH", "10").await;
    let mut stream = StreamClient::connect(&server.base_url).await;
    let subscribed = stream
        .ask(json!({"op": "subscribe", "id": "o", "channel": "orders", "chainId": "1", "account": alice.address}))
        .await;
    assert_eq!(subscribed["event"], "subscribed");
    assert_eq!(stream.next().await["event"], "snapshot");

    // Open, then cancelled by its owner.
    let resting = order(
        &server,
        &alice,
        json!({"direction": "buy", "price": "1000", "amount": "1"}),
    )
    .await;
    assert_eq!(resting["cancelReason"], Value::Null);
    let (status, cancelled) = server
        .post_json(
            "/order/cancelOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": resting["orderId"], "privateKey": alice.key}),
        )
        .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["order"]["cancelReason"], "user");

    // An IOC with nothing to trade against: its remainder.
    let ioc = order(
        &server,
        &alice,
        json!({"direction": "buy", "price": "900", "amount": "1", "timeInForce": "IOC"}),
    )
    .await;
    assert_eq!(
        (&ioc["status"], &ioc["cancelReason"]),
        (&json!("cancelled"), &json!("unfilled"))
    );

    // Alice's sell at 2000 rests; her own buy at 2000 would trade with it: the sell is cancelled.
    let sell = order(
        &server,
        &alice,
        json!({"direction": "sell", "price": "2000", "amount": "1"}),
    )
    .await;
    order(
        &server,
        &alice,
        json!({"direction": "buy", "price": "2000", "amount": "1"}),
    )
    .await;
    let (_, detail) = server
        .get(
            "/order/orderDetail",
            &[("chainId", "1"), ("orderId", sell["orderId"].as_str().unwrap())],
        )
        .await;
    assert_eq!(detail["order"]["cancelReason"], "selfTrade", "{detail}");

    // Bob fills alice's resting buy: filled, no reason.
    let filled = order(
        &server,
        &bob,
        json!({"direction": "sell", "price": "2000", "amount": "1"}),
    )
    .await;
    assert_eq!(filled["status"], "filled", "{filled}");
    assert_eq!(filled["cancelReason"], Value::Null);

    // The dead man's switch fires on an open order.
    let left = order(
        &server,
        &alice,
        json!({"direction": "buy", "price": "500", "amount": "1"}),
    )
    .await;
    let (status, armed) = server
        .post_json(
            "/order/cancelAllAfter",
            json!({"chainId": "1", "timeoutMs": 5000, "privateKey": alice.key}),
        )
        .await;
    assert_eq!(status, 200, "{armed}");
    let mut fired = Value::Null;
    for _ in 0..100 {
        let (_, detail) = server
            .get(
                "/order/orderDetail",
                &[("chainId", "1"), ("orderId", left["orderId"].as_str().unwrap())],
            )
            .await;
        if detail["order"]["status"] == "cancelled" {
            fired = detail["order"].clone();
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(fired["cancelReason"], "switch", "{fired}");

    // The stream said the same of every order it carried.
    let mut reasons = std::collections::BTreeMap::new();
    while let Some(message) = stream.next_within(Duration::from_millis(500)).await {
        for streamed in message["orders"].as_array().into_iter().flatten() {
            reasons.insert(
                streamed["orderId"].as_str().unwrap().to_string(),
                streamed["cancelReason"].clone(),
            );
        }
    }
    for (order_id, reason) in [
        (&resting, "user"),
        (&ioc, "unfilled"),
        (&sell, "selfTrade"),
        (&left, "switch"),
    ] {
        assert_eq!(
            reasons.get(order_id["orderId"].as_str().unwrap()),
            Some(&json!(reason)),
            "{reasons:?}"
        );
    }
}
