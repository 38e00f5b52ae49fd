//! The `depth` channel over a real socket: the top 5, 10 or 20 levels of each side whole, at
//! most one message per 100 or 1000 ms and only when those levels changed, each with the
//! book's sequence and the checksum of its levels, ending equal to the REST book.

use crate::common;

use std::time::{Duration, Instant};

use common::stream_client::StreamClient;
use common::{TestServer, Trader};
use serde_json::{json, Value};

/// The REST book's top `depth` levels of a side, as the channel writes them, and the sequence.
async fn rest_levels(server: &TestServer, path: &str, depth: usize) -> (Vec<Value>, u64) {
    let depth = depth.to_string();
    let (_, body) = server
        .get(path, &[("chainId", "1"), ("pair", "ETH/USDC"), ("depth", &depth)])
        .await;
    (
        body["levels"].as_array().unwrap().clone(),
        body["sequence"].as_u64().unwrap(),
    )
}

/// The contract's checksum of a message's levels: CRC-32 of `price:amount`, bids then asks.
fn checksum_of(message: &Value) -> u32 {
    let text: Vec<String> = ["bids", "asks"]
        .iter()
        .flat_map(|side| message[*side].as_array().unwrap().iter())
        .map(|level| {
            format!(
                "{}:{}",
                level["price"].as_str().unwrap(),
                level["amount"].as_str().unwrap()
            )
        })
        .collect();
    crc32fast::hash(text.join("|").as_bytes())
}

#[tokio::test]
async fn depth_sends_the_top_levels_whole_checksummed_and_ends_equal_to_rest() {
    let server = TestServer::start().await;
    let (alice, bob) = (Trader::new(0xd1), Trader::new(0xd2));
    server.deposit(&alice, "USDC", "1000000").await;
    server.deposit(&bob, "ETH", "100").await;
    let mut client = StreamClient::connect(&server.base_url).await;
    let subscribed = client
        .ask(json!({"op": "subscribe", "id": "d", "channel": "depth", "chainId": "1", "pair": "ETH/USDC", "levels": 5, "intervalMs": 100}))
        .await;
    assert_eq!(
        subscribed,
        json!({"event": "subscribed", "id": "d", "channel": "depth", "chainId": "1", "pair": "ETH/USDC", "levels": 5, "intervalMs": 100})
    );
    let snapshot = client.next().await;
    assert_eq!(snapshot["event"], "snapshot", "{snapshot}");
    assert_eq!(
        (
            snapshot["bids"].as_array().unwrap().len(),
            snapshot["asks"].as_array().unwrap().len()
        ),
        (0, 0)
    );
    assert_eq!(snapshot["checksum"].as_u64(), Some(u64::from(checksum_of(&snapshot))));

    // Eight bids and three asks: only the top five bids are sent.
    for step in 0..8 {
        server
            .limit(&alice, "buy", &format!("{}", 1900 + step * 10), "0.5")
            .await;
    }
    for step in 0..3 {
        server
            .limit(&bob, "sell", &format!("{}", 2100 + step * 10), "0.25")
            .await;
    }
    let mut last = snapshot.clone();
    while let Some(message) = client.next_within(Duration::from_millis(600)).await {
        assert_eq!(message["event"], "update", "{message}");
        assert!(message["bids"].as_array().unwrap().len() <= 5 && message["asks"].as_array().unwrap().len() <= 5);
        assert_eq!(
            message["checksum"].as_u64(),
            Some(u64::from(checksum_of(&message))),
            "{message}"
        );
        assert!(
            message["sequence"].as_u64() > last["sequence"].as_u64(),
            "sequences only grow"
        );
        last = message;
    }
    let (bids, bid_sequence) = rest_levels(&server, "/order/buyOrderbooks", 5).await;
    let (asks, ask_sequence) = rest_levels(&server, "/order/sellOrderbooks", 5).await;
    assert_eq!(bid_sequence, ask_sequence);
    assert_eq!((&last["bids"], &last["asks"]), (&json!(bids), &json!(asks)), "{last}");
    assert_eq!(last["bids"][0]["price"], "1970");
    assert_eq!(last["sequence"].as_u64(), Some(bid_sequence));

    // A change below the top five sends nothing.
    server.limit(&alice, "buy", "1800", "1").await;
    assert!(
        client.next_within(Duration::from_millis(400)).await.is_none(),
        "a change below the levels sends nothing"
    );
}

#[tokio::test]
async fn depth_at_one_second_sends_at_most_one_message_a_second() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xd3);
    server.deposit(&alice, "USDC", "1000000").await;
    let mut client = StreamClient::connect(&server.base_url).await;
    let subscribed = client
        .ask(json!({"op": "subscribe", "id": 1, "channel": "depth", "chainId": "1", "pair": "ETH/USDC", "levels": 10}))
        .await;
    assert_eq!(subscribed["intervalMs"], 1000, "1000 ms when not named: {subscribed}");
    assert_eq!(client.next().await["event"], "snapshot");
    // A change of the top every 100 ms or so for two seconds, reading the stream meanwhile so
    // that each message's arrival is seen when it comes (within the 100 ms of a wait).
    let started = Instant::now();
    let mut price = 1000;
    let mut updates = Vec::new();
    while started.elapsed() < Duration::from_secs(2) {
        server.limit(&alice, "buy", &price.to_string(), "0.1").await;
        price += 1;
        if let Some(message) = client.next_within(Duration::from_millis(100)).await {
            updates.push((Instant::now(), message));
        }
    }
    while let Some(message) = client.next_within(Duration::from_millis(1_300)).await {
        updates.push((Instant::now(), message));
    }
    assert!(
        (2..=4).contains(&updates.len()),
        "about one message a second over two seconds of changes, not {}",
        updates.len()
    );
    for pair in updates.windows(2) {
        assert!(
            pair[1].0 - pair[0].0 >= Duration::from_millis(700),
            "two depth messages {:?} apart",
            pair[1].0 - pair[0].0
        );
    }
    let (bids, _) = rest_levels(&server, "/order/buyOrderbooks", 10).await;
    assert_eq!(
        updates.last().unwrap().1["bids"],
        json!(bids),
        "the last message is the book as it ended"
    );
}

/// A subscriber that joins a group while the group's next view waits for its pace has that view
/// in its snapshot already: the view's update must not reach it (it would repeat the snapshot's
/// sequence, where the contract says a depth sequence only grows).
#[tokio::test]
async fn a_late_joiner_gets_no_update_at_or_before_its_snapshot() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xd4);
    server.deposit(&alice, "USDC", "1000000").await;
    let subscribe = json!({"op": "subscribe", "id": "d", "channel": "depth", "chainId": "1", "pair": "ETH/USDC", "levels": 5, "intervalMs": 1000});
    let mut early = StreamClient::connect(&server.base_url).await;
    early.ask(subscribe.clone()).await;
    assert_eq!(early.next().await["event"], "snapshot");
    // Changes of the top: the group's view waits for its second.
    for price in ["2000", "1000", "999", "998", "997"] {
        server.limit(&alice, "buy", price, "1").await;
    }
    let mut late = StreamClient::connect(&server.base_url).await;
    late.ask(subscribe).await;
    let snapshot = late.next().await;
    assert_eq!(snapshot["event"], "snapshot", "{snapshot}");
    let (_, rest_sequence) = rest_levels(&server, "/order/buyOrderbooks", 5).await;
    assert_eq!(
        snapshot["sequence"], rest_sequence,
        "the snapshot stands at the book's position"
    );
    let update = early
        .next_within(Duration::from_millis(2_000))
        .await
        .expect("the early subscriber gets the group's view at its pace");
    assert!(
        update["sequence"].as_u64() <= snapshot["sequence"].as_u64(),
        "{update} / {snapshot}"
    );
    if let Some(message) = late.next_within(Duration::from_millis(1_500)).await {
        panic!("the late subscriber got {message} after its snapshot {snapshot}");
    }
    // The next change reaches both, newer than either has.
    server.limit(&alice, "buy", "2001", "1").await;
    for client in [&mut early, &mut late] {
        let next = client
            .next_within(Duration::from_millis(2_000))
            .await
            .expect("the next change");
        assert!(next["sequence"].as_u64() > snapshot["sequence"].as_u64(), "{next}");
    }
}

#[tokio::test]
async fn a_depth_subscription_takes_only_its_levels_and_paces() {
    let server = TestServer::start().await;
    let mut client = StreamClient::connect(&server.base_url).await;
    for (id, message, code, field) in [
        (1, json!({"levels": 7}), "INVALID_PARAMETER", "levels"),
        (2, json!({}), "MISSING_PARAMETER", "levels"),
        (
            3,
            json!({"levels": 5, "intervalMs": 250}),
            "INVALID_PARAMETER",
            "intervalMs",
        ),
        (4, json!({"levels": 5, "depth": 5}), "UNKNOWN_PARAMETER", "depth"),
    ] {
        let mut request = json!({"op": "subscribe", "id": id, "channel": "depth", "chainId": "1", "pair": "ETH/USDC"});
        for (name, value) in message.as_object().unwrap() {
            request[name] = value.clone();
        }
        let answer = client.ask(request).await;
        assert_eq!(
            (&answer["event"], &answer["code"], &answer["field"]),
            (&json!("error"), &json!(code), &json!(field)),
            "{answer}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_thousand_depth_subscribers_with_one_id_all_receive_the_same_bytes() {
    const SUBSCRIBERS: usize = 1_000;
    let mut config = dexd_venue::config::Config::embedded_default();
    config.limits.max_stream_connections_per_ip = SUBSCRIBERS + 10;
    let server = TestServer::start_with(config).await;
    let alice = Trader::new(0xd4);
    server.deposit(&alice, "USDC", "1000000").await;
    let mut clients = Vec::with_capacity(SUBSCRIBERS);
    for _ in 0..SUBSCRIBERS {
        let mut client = StreamClient::connect(&server.base_url).await;
        client
            .send(json!({"op": "subscribe", "id": "depth", "channel": "depth", "chainId": "1", "pair": "ETH/USDC", "levels": 5, "intervalMs": 100}))
            .await;
        clients.push(client);
    }
    for client in &mut clients {
        assert_eq!(client.next().await["event"], "subscribed");
        assert_eq!(client.next().await["event"], "snapshot");
    }
    server.limit(&alice, "buy", "1500", "1").await;
    let mut texts = std::collections::BTreeSet::new();
    for client in &mut clients {
        let update = client.next().await;
        assert_eq!(update["event"], "update", "{update}");
        texts.insert(update.to_string());
    }
    assert_eq!(texts.len(), 1, "every subscriber got the same message: {texts:?}");
}
