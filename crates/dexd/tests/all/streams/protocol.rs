//! The stream protocol at its edges: a batch whose journal write failed is never streamed, bad
//! messages get an error event and change nothing, connections per address are limited, a stop
//! closes every stream with 1001, and the limits are the ones docs/limits.md names.

use crate::common;

use std::time::Duration;

use common::stream_client::{ClientBook, StreamClient};
use common::{TestServer, Trader};
use dexd_venue::config::Config;
use serde_json::{json, Value};

#[tokio::test]
async fn a_batch_whose_journal_write_failed_is_never_streamed() {
    let data_dir = tempfile::tempdir().unwrap();
    let mut config = Config::embedded_default();
    config.limits.write_lock_timeout_ms = 100;
    let server = TestServer::start_in(config, data_dir.path()).await;
    let alice = Trader::new(0xa1);
    server.deposit(&alice, "USDC", "1000").await;
    let mut client = StreamClient::connect(&server.base_url).await;
    let subscribed = client
        .ask(json!({"op": "subscribe", "id": 1, "channel": "book", "chainId": "1", "pair": "ETH/USDC", "depth": 25}))
        .await;
    assert_eq!(subscribed["event"], "subscribed");
    let mut book = ClientBook {
        depth: 25,
        ..ClientBook::default()
    };
    book.apply(&client.next().await);
    let balances = client
        .ask(json!({"op": "subscribe", "id": 2, "channel": "balances", "chainId": "1", "account": alice.address}))
        .await;
    assert_eq!(balances["event"], "subscribed");
    assert_eq!(client.next().await["event"], "snapshot");
    let database = rusqlite::Connection::open(dexd_store::database_path(data_dir.path(), 1)).unwrap();
    database.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let order = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "10", "amount": "1", "privateKey": alice.key});
    assert_eq!(server.post_json("/order/addOrder", order.clone()).await.0, 503);
    assert!(
        client.next_within(Duration::from_millis(700)).await.is_none(),
        "nothing of the refused batch is streamed"
    );
    database.execute_batch("ROLLBACK").unwrap();
    drop(database);
    let mut placed = false;
    for _ in 0..50 {
        if server.post_json("/order/addOrder", order.clone()).await.0 == 200 {
            placed = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(placed);
    // Exactly the durable order arrives: one level, one order, and Alice's lock.
    let mut seen_book = false;
    let mut seen_balance = false;
    while let Some(message) = client.next_within(Duration::from_millis(700)).await {
        match message["channel"].as_str() {
            Some("book") => {
                book.apply(&message);
                seen_book = true;
            }
            Some("balances") => {
                assert_eq!(message["balances"][0]["locked"], "10");
                seen_balance = true;
            }
            _ => panic!("{message}"),
        }
    }
    assert!(seen_book && seen_balance);
    assert_eq!(book.levels().0, vec![("10".to_string(), "1".to_string(), 1)]);
}

#[tokio::test]
async fn bad_messages_get_an_error_event_and_the_connection_stays_open() {
    let server = TestServer::start().await;
    let mut client = StreamClient::connect(&server.base_url).await;
    // Paced under the connection's budget of messages per second (the flood is tested below).
    client.pace = Some(Duration::from_millis(25));
    let cases: Vec<(Value, &str, Option<&str>)> = vec![
        (json!({"op": "dance"}), "INVALID_PARAMETER", Some("op")),
        (json!({"id": 1}), "MISSING_PARAMETER", Some("op")),
        (
            json!({"op": "subscribe", "id": 1}),
            "MISSING_PARAMETER",
            Some("channel"),
        ),
        (
            json!({"op": "subscribe", "channel": "news", "chainId": "1"}),
            "INVALID_PARAMETER",
            Some("channel"),
        ),
        (
            json!({"op": "subscribe", "channel": "book", "pair": "ETH/USDC"}),
            "MISSING_PARAMETER",
            Some("chainId"),
        ),
        (
            json!({"op": "subscribe", "channel": "book", "chainId": "9", "pair": "ETH/USDC"}),
            "UNKNOWN_CHAIN",
            Some("chainId"),
        ),
        (
            json!({"op": "subscribe", "channel": "book", "chainId": "1", "pair": "DOGE/USDC"}),
            "UNKNOWN_PAIR",
            Some("pair"),
        ),
        (
            json!({"op": "subscribe", "channel": "book", "chainId": "1", "pair": "ETHUSDC"}),
            "INVALID_PARAMETER",
            Some("pair"),
        ),
        (
            json!({"op": "subscribe", "channel": "book", "chainId": "1"}),
            "MISSING_PARAMETER",
            Some("pair"),
        ),
        (
            json!({"op": "subscribe", "channel": "book", "chainId": "1", "pair": "ETH/USDC", "depth": 0}),
            "INVALID_PARAMETER",
            Some("depth"),
        ),
        (
            json!({"op": "subscribe", "channel": "book", "chainId": "1", "pair": "ETH/USDC", "depth": 5000}),
            "INVALID_PARAMETER",
            Some("depth"),
        ),
        (
            json!({"op": "subscribe", "channel": "book", "chainId": "1", "pair": "ETH/USDC", "depth": 10}),
            "INVALID_PARAMETER",
            Some("depth"),
        ),
        (
            json!({"op": "subscribe", "channel": "book", "chainId": "1", "pair": "ETH/USDC", "depht": 50}),
            "UNKNOWN_PARAMETER",
            Some("depht"),
        ),
        (
            json!({"op": "subscribe", "channel": "candles", "chainId": "1", "pair": "ETH/USDC", "interval": "2m"}),
            "INVALID_PARAMETER",
            Some("interval"),
        ),
        (
            json!({"op": "subscribe", "channel": "orders", "chainId": "1", "account": "0x123"}),
            "INVALID_PARAMETER",
            Some("account"),
        ),
        (
            json!({"op": "subscribe", "channel": "orders", "chainId": "1", "account": "0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2a"}),
            "INVALID_PARAMETER",
            Some("account"),
        ),
        (
            json!({"op": "subscribe", "channel": "balances", "chainId": 1, "account": "0x19e7e376e7c213b7e7e7e46cc70a5dd086daff2a", "privateKey": "0x11"}),
            "UNKNOWN_PARAMETER",
            Some("privateKey"),
        ),
        (
            json!({"op": "subscribe", "id": {"nested": true}, "channel": "trades", "chainId": "1", "pair": "ETH/USDC"}),
            "INVALID_PARAMETER",
            Some("id"),
        ),
        (
            json!({"op": "unsubscribe", "id": 3, "channel": "trades", "chainId": "1", "pair": "ETH/USDC"}),
            "NOT_SUBSCRIBED",
            None,
        ),
        (json!(["subscribe"]), "MALFORMED_BODY", None),
    ];
    for (message, code, field) in cases {
        client.send(message.clone()).await;
        let answer = client
            .next_within(Duration::from_secs(5))
            .await
            .unwrap_or_else(|| panic!("no answer to {message}"));
        assert_eq!(answer["event"], "error", "{message} → {answer}");
        assert_eq!(answer["code"], code, "{message} → {answer}");
        assert_eq!(answer["field"].as_str(), field, "{message} → {answer}");
        assert!(answer["message"].as_str().is_some_and(|text| !text.is_empty()));
    }
    // Not JSON, and a binary frame.
    client
        .send_raw(tokio_tungstenite::tungstenite::Message::Text("{not json".into()))
        .await;
    assert_eq!(client.next().await["code"], "MALFORMED_BODY");
    client
        .send_raw(tokio_tungstenite::tungstenite::Message::Binary(vec![1, 2, 3].into()))
        .await;
    assert_eq!(client.next().await["code"], "MALFORMED_BODY");
    // A duplicate subscription.
    let trades = json!({"op": "subscribe", "id": "t", "channel": "trades", "chainId": "1", "pair": "ETH/USDC"});
    assert_eq!(client.ask(trades.clone()).await["event"], "subscribed");
    let duplicate = client.ask(trades).await;
    assert_eq!(
        (
            duplicate["event"].as_str(),
            duplicate["code"].as_str(),
            duplicate["pair"].as_str()
        ),
        (Some("error"), Some("ALREADY_SUBSCRIBED"), Some("ETH/USDC"))
    );
    // The connection still works: a ping is answered with its id, an unsubscribe too.
    assert_eq!(
        client.ask(json!({"op": "ping", "id": 42})).await,
        json!({"event": "pong", "id": 42})
    );
    let unsubscribed = client
        .ask(json!({"op": "unsubscribe", "id": "u", "channel": "trades", "chainId": "1", "pair": "ETH/USDC"}))
        .await;
    assert_eq!(
        (unsubscribed["event"].as_str(), unsubscribed["id"].as_str()),
        (Some("unsubscribed"), Some("u"))
    );
    // Too many subscriptions on one connection: balances of one account after another.
    let limit = dexd::api::stream_connections::connection::MAX_SUBSCRIPTIONS_PER_CONNECTION;
    for index in 0..limit {
        let account = format!("0x{:040x}", index + 1);
        let answer = client
            .ask(json!({"op": "subscribe", "channel": "balances", "chainId": "1", "account": account}))
            .await;
        assert_eq!(answer["event"], "subscribed", "{answer}");
        assert_eq!(client.next().await["event"], "snapshot");
    }
    let refused = client
        .ask(json!({"op": "subscribe", "id": "over", "channel": "trades", "chainId": "1", "pair": "ETH/USDC"}))
        .await;
    assert_eq!(
        (refused["code"].as_str(), refused["id"].as_str()),
        (Some("TOO_MANY_SUBSCRIPTIONS"), Some("over"))
    );
    // A frame over the limit closes the connection (1009).
    let oversized =
        json!({"op": "ping", "id": "x".repeat(dexd::api::stream_connections::connection::MAX_INBOUND_MESSAGE_BYTES)});
    client.send(oversized).await;
    assert!(
        client.next_within(Duration::from_secs(5)).await.is_none(),
        "the connection closes"
    );
    // A flood of messages closes it (1008).
    let mut flooding = StreamClient::connect(&server.base_url).await;
    for _ in 0..dexd::api::stream_connections::connection::MAX_INBOUND_MESSAGES_PER_SECOND * 3 {
        if futures_util::SinkExt::send(
            &mut flooding.socket,
            tokio_tungstenite::tungstenite::Message::Text(json!({"op": "ping"}).to_string().into()),
        )
        .await
        .is_err()
        {
            break;
        }
    }
    let mut pongs = 0;
    while let Some(message) = flooding.next_within(Duration::from_secs(5)).await {
        assert_eq!(message["event"], "pong");
        pongs += 1;
    }
    assert!(
        pongs <= dexd::api::stream_connections::connection::MAX_INBOUND_MESSAGES_PER_SECOND as usize + 5,
        "{pongs} pongs before the close"
    );
    // The server still serves others.
    let mut other = StreamClient::connect(&server.base_url).await;
    assert_eq!(other.ask(json!({"op": "ping"})).await["event"], "pong");
}

#[tokio::test]
async fn connections_per_address_are_limited_and_a_stop_closes_every_stream_with_1001() {
    let mut config = Config::embedded_default();
    config.limits.max_stream_connections_per_ip = 2;
    let data_dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let path = data_dir.path().to_path_buf();
    let serving = tokio::spawn(async move {
        dexd::serve(config, &path, listener, async move {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    let base_url = format!("http://{address}");
    common::wait_until_ready(&reqwest::Client::new(), &base_url).await;
    let mut first = StreamClient::connect(&base_url).await;
    let _second = StreamClient::connect(&base_url).await;
    let refused = tokio_tungstenite::connect_async(format!("ws://{address}/ws")).await;
    match refused {
        Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
            assert_eq!(response.status(), 429);
            let body: Value = serde_json::from_slice(response.body().as_deref().unwrap_or_default()).unwrap();
            assert_eq!(body["error"]["code"], "RATE_LIMITED");
        }
        other => panic!("a third connection from one address is refused: {other:?}"),
    }
    // A GET that is not an upgrade is answered in JSON.
    let plain = TestServer::at(&base_url).get("/ws", &[]).await;
    assert_eq!(
        (plain.0, plain.1["error"]["code"].as_str()),
        (400, Some("INVALID_PARAMETER"))
    );
    assert_eq!(
        first
            .ask(json!({"op": "subscribe", "id": 1, "channel": "trades", "chainId": "1", "pair": "ETH/USDC"}))
            .await["event"],
        "subscribed"
    );
    drop(stop);
    let close = loop {
        match tokio::time::timeout(
            Duration::from_secs(10),
            futures_util::StreamExt::next(&mut first.socket),
        )
        .await
        {
            Ok(Some(Ok(tokio_tungstenite::tungstenite::Message::Close(frame)))) => break frame,
            Ok(Some(Ok(_))) => continue,
            other => panic!("a close frame was expected: {other:?}"),
        }
    };
    assert_eq!(close.map(|frame| u16::from(frame.code)), Some(1001));
    serving.await.unwrap();
}

#[test]
fn depth_and_protocol_limits_are_what_the_limits_page_documents() {
    let limits = std::fs::read_to_string(concat!(env!("CARGO_MANIFEST_DIR"), "/../../docs/limits.md")).unwrap();
    for name in [
        "MAX_SUBSCRIPTIONS_PER_CONNECTION",
        "MAX_INBOUND_MESSAGES_PER_SECOND",
        "MAX_INBOUND_MESSAGE_BYTES",
        "PING_INTERVAL_MS",
        "PONG_TIMEOUT_MS",
        "IDLE_TIMEOUT_MS",
        "MAX_QUEUED_MESSAGES_PER_CONNECTION",
        "MAX_QUEUED_BYTES_PER_CONNECTION",
        "max_stream_connections_per_ip",
    ] {
        assert!(limits.contains(name), "docs/limits.md names {name}");
    }
}
