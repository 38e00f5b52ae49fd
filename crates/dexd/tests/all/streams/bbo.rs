//! The `bbo` channel over a real socket: a snapshot of the best bid and ask, then an update
//! whenever either changes and never when only a deeper level does, ending equal to the REST
//! book's top at the same sequence.

use crate::common;

use std::time::Duration;

use common::stream_client::StreamClient;
use common::{TestServer, Trader};
use serde_json::{json, Value};

/// The REST book's best bid and ask, as the bbo channel writes them, and their sequence.
async fn rest_top(server: &TestServer) -> (Value, Value, u64) {
    let side = |body: &Value| match body["levels"].as_array().and_then(|levels| levels.first()) {
        None => Value::Null,
        Some(level) => json!({"price": level["price"], "amount": level["amount"]}),
    };
    let query = [("chainId", "1"), ("pair", "ETH/USDC"), ("depth", "1")];
    let (_, bids) = server.get("/order/buyOrderbooks", &query).await;
    let (_, asks) = server.get("/order/sellOrderbooks", &query).await;
    assert_eq!(
        bids["sequence"], asks["sequence"],
        "the book did not move between the two reads"
    );
    (side(&bids), side(&asks), bids["sequence"].as_u64().unwrap())
}

#[tokio::test]
async fn the_best_bid_and_ask_stream_on_every_change_of_the_top_and_only_then() {
    let server = TestServer::start().await;
    let (alice, bob) = (Trader::new(0xb1), Trader::new(0xb2));
    server.deposit(&alice, "USDC", "100000").await;
    server.deposit(&bob, "ETH", "100").await;
    let mut client = StreamClient::connect(&server.base_url).await;
    let subscribed = client
        .ask(json!({"op": "subscribe", "id": "q", "channel": "bbo", "chainId": "1", "pair": "ETH/USDC"}))
        .await;
    assert_eq!(
        subscribed,
        json!({"event": "subscribed", "id": "q", "channel": "bbo", "chainId": "1", "pair": "ETH/USDC"})
    );
    let snapshot = client.next().await;
    assert_eq!(snapshot["event"], "snapshot", "{snapshot}");
    assert_eq!(
        (&snapshot["bid"], &snapshot["ask"]),
        (&Value::Null, &Value::Null),
        "{snapshot}"
    );

    // A new best bid.
    server.limit(&alice, "buy", "2000", "1.5").await;
    let update = client.next().await;
    assert_eq!(update["event"], "update", "{update}");
    assert_eq!(update["bid"], json!({"price": "2000", "amount": "1.5"}), "{update}");
    assert_eq!(update["ask"], Value::Null);
    assert!(update["sequence"].as_u64() > snapshot["sequence"].as_u64());

    // A bid below the best changes nothing at the top: no message.
    server.limit(&alice, "buy", "1990", "2").await;
    assert!(
        client.next_within(Duration::from_millis(500)).await.is_none(),
        "a change below the top sends nothing"
    );

    // A sell that takes part of the best bid, then one that rests above it.
    server.limit(&bob, "sell", "2000", "0.5").await;
    let update = client.next().await;
    assert_eq!(update["bid"], json!({"price": "2000", "amount": "1"}), "{update}");
    server.limit(&bob, "sell", "2010", "0.25").await;
    let update = client.next().await;
    assert_eq!(update["ask"], json!({"price": "2010", "amount": "0.25"}), "{update}");

    // The whole best bid taken: the next level becomes the best.
    server.limit(&bob, "sell", "2000", "1").await;
    let last = client.next().await;
    assert_eq!(last["bid"], json!({"price": "1990", "amount": "2"}), "{last}");
    let (bid, ask, sequence) = rest_top(&server).await;
    assert_eq!((&last["bid"], &last["ask"]), (&bid, &ask));
    assert_eq!(
        last["sequence"].as_u64(),
        Some(sequence),
        "the stream's sequence is the REST book's"
    );
    assert!(client.next_within(Duration::from_millis(300)).await.is_none());
}

#[tokio::test]
async fn a_bbo_subscription_takes_only_a_known_pair_and_its_own_parameters() {
    let server = TestServer::start().await;
    let mut client = StreamClient::connect(&server.base_url).await;
    let unknown_pair = client
        .ask(json!({"op": "subscribe", "id": 1, "channel": "bbo", "chainId": "1", "pair": "DOGE/USDC"}))
        .await;
    assert_eq!(
        (&unknown_pair["event"], &unknown_pair["code"]),
        (&json!("error"), &json!("UNKNOWN_PAIR"))
    );
    let depth = client
        .ask(json!({"op": "subscribe", "id": 2, "channel": "bbo", "chainId": "1", "pair": "ETH/USDC", "depth": 5}))
        .await;
    assert_eq!(
        (&depth["code"], &depth["field"]),
        (&json!("UNKNOWN_PARAMETER"), &json!("depth")),
        "{depth}"
    );
}
