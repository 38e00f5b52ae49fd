//! The live streams over real sockets, with a WebSocket client the project did not write
//! (tokio-tungstenite): random order flow from many accounts through REST while clients
//! subscribe at random moments; each rebuilds the book from its snapshot and updates, checking
//! every previousSequence and checksum, and ends equal to the REST book at the same sequence;
//! trades and candles equal the REST histories; account streams end in the REST state; a client
//! that stops reading is told SLOW_CONSUMER and closed while another keeps up.

use crate::common;

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::time::Duration;

use common::stream_client::{ClientBook, Levels, StreamClient};
use common::{TestServer, Trader};
use dexd_venue::config::Config;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const TRADERS: u8 = 8;

fn traders() -> Vec<Trader> {
    (0..TRADERS).map(|index| Trader::new(0x40 + index)).collect()
}

async fn fund(server: &TestServer, traders: &[Trader]) {
    for trader in traders {
        server.deposit(trader, "ETH", "1000").await;
        server.deposit(trader, "USDC", "1000000").await;
    }
}

/// Places random orders (limits around 100, some crossing, some markets) and cancels from the
/// traders for `duration`; returns how many requests were answered 200.
async fn random_flow(server: Arc<TestServer>, traders: Arc<Vec<Trader>>, seed: u64, duration: Duration) -> usize {
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let deadline = tokio::time::Instant::now() + duration;
    let mut open: Vec<(usize, String)> = Vec::new();
    let mut accepted = 0;
    while tokio::time::Instant::now() < deadline {
        let index = rng.gen_range(0..traders.len());
        let trader = &traders[index];
        let choice = rng.gen_range(0..10);
        let (status, body) = if choice < 7 || open.is_empty() {
            let direction = if rng.gen_bool(0.5) { "buy" } else { "sell" };
            let cents = rng.gen_range(9_500..10_500u32);
            let amount = format!("0.{:04}", rng.gen_range(10..5_000u32));
            let mut order = json!({"chainId": "1", "symbol": "ETH/USDC", "direction": direction, "amount": amount, "privateKey": trader.key});
            if choice == 6 {
                order["type"] = json!("market");
            } else {
                order["type"] = json!("limit");
                order["price"] = json!(format!("{}.{:02}", cents / 100, cents % 100));
            }
            server.post_json("/order/addOrder", order).await
        } else {
            let (owner, order_id) = open.swap_remove(rng.gen_range(0..open.len()));
            let cancel =
                json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": order_id, "privateKey": traders[owner].key});
            server.post_json("/order/cancelOrder", cancel).await
        };
        if status == 200 {
            accepted += 1;
            if body["order"]["status"] == "open" && body["order"]["type"] == "limit" {
                open.push((index, body["order"]["orderId"].as_str().unwrap().to_string()));
            }
        }
    }
    accepted
}

/// The REST book of a pair: bids and asks as `(price, amount, orders)` and the sequence of the
/// two reads (None when they differ: the book moved between them).
async fn rest_book(server: &TestServer, depth: usize) -> (Levels, Levels, Option<u64>) {
    let depth = depth.to_string();
    let read = |path: &'static str| {
        let depth = depth.clone();
        async move {
            let (status, body) = server
                .get(path, &[("chainId", "1"), ("pair", "ETH/USDC"), ("depth", &depth)])
                .await;
            assert_eq!(status, 200, "{body}");
            let levels = body["levels"]
                .as_array()
                .unwrap()
                .iter()
                .map(|level| {
                    (
                        level["price"].as_str().unwrap().to_string(),
                        level["amount"].as_str().unwrap().to_string(),
                        level["orders"].as_u64().unwrap(),
                    )
                })
                .collect::<Vec<_>>();
            (levels, body["sequence"].as_u64().unwrap())
        }
    };
    let (bids, bid_sequence) = read("/order/buyOrderbooks").await;
    let (asks, ask_sequence) = read("/order/sellOrderbooks").await;
    (bids, asks, (bid_sequence == ask_sequence).then_some(bid_sequence))
}

/// A market-data client: subscribes to the book (at `depth`), trades and 1m candles after
/// `delay`, then reads and checks everything until the server has been quiet for a while.
struct MarketClient {
    book: ClientBook,
    trades: Vec<Value>,
    candles: BTreeMap<u64, Value>,
}

async fn market_client(base_url: String, delay: Duration, depth: usize, quiet: Duration) -> MarketClient {
    tokio::time::sleep(delay).await;
    let mut client = StreamClient::connect(&base_url).await;
    let mut book = ClientBook {
        depth,
        ..ClientBook::default()
    };
    client
        .send(json!({"op": "subscribe", "id": "b", "channel": "book", "chainId": "1", "pair": "eth/usdc", "depth": depth}))
        .await;
    client
        .send(json!({"op": "subscribe", "id": 7, "channel": "trades", "chainId": "1", "pair": "ETH/USDC"}))
        .await;
    client
        .send(json!({"op": "subscribe", "id": "c", "channel": "candles", "chainId": "1", "pair": "ETH/USDC", "interval": "1m"}))
        .await;
    let mut trades = Vec::new();
    let mut candles = BTreeMap::new();
    let mut acknowledged = 0;
    let mut snapshot_seen = false;
    while let Some(message) = client.next_within(quiet).await {
        match (message["event"].as_str().unwrap(), message["channel"].as_str()) {
            ("subscribed", _) => acknowledged += 1,
            ("snapshot", Some("book")) | ("update", Some("book")) => {
                assert_eq!(message["id"], "b");
                assert_eq!(
                    (message["chainId"].as_str(), message["pair"].as_str()),
                    (Some("1"), Some("ETH/USDC"))
                );
                if message["event"] == "update" {
                    assert!(snapshot_seen, "an update before the snapshot");
                }
                snapshot_seen = true;
                book.apply(&message);
            }
            ("update", Some("trades")) => {
                assert_eq!(message["id"], 7);
                trades.extend(message["trades"].as_array().unwrap().iter().cloned());
            }
            ("update", Some("candles")) => {
                assert_eq!(
                    (message["id"].as_str(), message["interval"].as_str()),
                    (Some("c"), Some("1m"))
                );
                let candle = message["candle"].clone();
                candles.insert(candle["openTime"].as_u64().unwrap(), candle);
            }
            _ => panic!("unexpected message {message}"),
        }
    }
    assert_eq!(acknowledged, 3);
    assert!(snapshot_seen);
    MarketClient { book, trades, candles }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn clients_joining_during_random_trading_rebuild_the_rest_book_trades_and_candles() {
    let server = Arc::new(TestServer::start().await);
    let traders = Arc::new(traders());
    fund(&server, &traders).await;
    let flow_time = Duration::from_secs(4);
    let quiet = Duration::from_millis(1_500);
    let mut clients = Vec::new();
    for (index, depth) in [25usize, 50, 100, 1_000, 50, 30].into_iter().enumerate() {
        let delay = Duration::from_millis(300 + 600 * index as u64);
        clients.push(tokio::spawn(market_client(
            server.base_url.clone(),
            delay,
            depth,
            quiet,
        )));
    }
    let flows: Vec<_> = (0..4)
        .map(|seed| tokio::spawn(random_flow(Arc::clone(&server), Arc::clone(&traders), seed, flow_time)))
        .collect();
    let mut accepted = 0;
    for flow in flows {
        accepted += flow.await.unwrap();
    }
    assert!(accepted > 200, "the flow placed orders ({accepted})");
    let mut rest_trades: BTreeMap<u64, Value> = BTreeMap::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("chainId", "1"), ("pair", "ETH/USDC"), ("limit", "1000")];
        if let Some(cursor) = &cursor {
            query.push(("cursor", cursor.as_str()));
        }
        let (_, page) = server.get("/order/tradeHistories", &query).await;
        for trade in page["trades"].as_array().unwrap() {
            rest_trades.insert(trade["tradeId"].as_str().unwrap().parse().unwrap(), trade.clone());
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    let (_, rest_candles) = server
        .get(
            "/order/tradesOHCL",
            &[("chainId", "1"), ("pair", "ETH/USDC"), ("interval", "1m")],
        )
        .await;
    for client in clients {
        let client = client.await.unwrap();
        let (bids, asks, sequence) = rest_book(&server, client.book.depth).await;
        let (client_bids, client_asks) = client.book.levels();
        assert_eq!(
            Some(client.book.sequence),
            sequence,
            "the stream ends at the REST book's sequence"
        );
        assert_eq!(client_bids, bids, "bids equal REST at depth {}", client.book.depth);
        assert_eq!(client_asks, asks, "asks equal REST at depth {}", client.book.depth);
        assert!(client.book.updates > 0, "the client saw updates");
        // Trades: a run of consecutive ids from the subscription on, each equal to REST's.
        let ids: Vec<u64> = client
            .trades
            .iter()
            .map(|trade| trade["tradeId"].as_str().unwrap().parse().unwrap())
            .collect();
        assert!(!ids.is_empty());
        assert_eq!(
            ids,
            (ids[0]..ids[0] + ids.len() as u64).collect::<Vec<_>>(),
            "no trade left out"
        );
        assert_eq!(
            *ids.last().unwrap(),
            *rest_trades.keys().last().unwrap(),
            "up to the last trade"
        );
        for trade in &client.trades {
            let id: u64 = trade["tradeId"].as_str().unwrap().parse().unwrap();
            assert_eq!(trade, &rest_trades[&id]);
        }
        // Candles: each candle last streamed equals REST's.
        for candle in client.candles.values() {
            let rest = rest_candles["candles"]
                .as_array()
                .unwrap()
                .iter()
                .find(|rest| rest["openTime"] == candle["openTime"])
                .expect("a streamed candle is in REST");
            assert_eq!(candle, rest);
        }
    }
    // Every snapshot came from the streams' own copy of the engine: the writer gave one copy, at
    // the start, and no subscription asked it for anything.
    let metrics = server.get_text("/metrics").await;
    assert!(
        metrics
            .lines()
            .any(|line| line == "dexd_stream_engine_copies_total{chain_id=\"1\"} 1"),
        "{}",
        metrics
            .lines()
            .filter(|line| line.contains("engine_copies"))
            .collect::<Vec<_>>()
            .join("\n")
    );
}

/// An account's open orders and balances as its streams built them.
#[derive(Default)]
struct AccountState {
    open: BTreeMap<String, Value>,
    balances: BTreeMap<String, Value>,
    snapshots: BTreeSet<&'static str>,
    transfer_seen: bool,
}

impl AccountState {
    async fn read_until_quiet(&mut self, client: &mut StreamClient, account: &str) {
        while let Some(message) = client.next_within(Duration::from_millis(1_500)).await {
            if message["event"] == "subscribed" {
                continue;
            }
            assert_eq!(message["account"], account, "{message}");
            let event = message["event"].as_str().unwrap();
            match message["channel"].as_str().unwrap() {
                "orders" => {
                    if event == "snapshot" {
                        self.snapshots.insert("orders");
                    } else {
                        assert!(self.snapshots.contains("orders"), "an update before the snapshot");
                    }
                    for order in message["orders"].as_array().unwrap() {
                        let id = order["orderId"].as_str().unwrap().to_string();
                        if order["status"] == "open" {
                            self.open.insert(id, order.clone());
                        } else {
                            self.open.remove(&id);
                        }
                    }
                }
                "balances" => {
                    if event == "snapshot" {
                        self.snapshots.insert("balances");
                        assert_eq!(
                            message["balances"].as_array().unwrap().len(),
                            5,
                            "every asset of the chain"
                        );
                    } else {
                        assert!(self.snapshots.contains("balances"), "an update before the snapshot");
                    }
                    for balance in message["balances"].as_array().unwrap() {
                        self.balances
                            .insert(balance["symbol"].as_str().unwrap().to_string(), balance.clone());
                    }
                    for transfer in message["transfers"].as_array().into_iter().flatten() {
                        assert_eq!(
                            (
                                transfer["symbol"].as_str(),
                                transfer["quantity"].as_str(),
                                transfer["status"].as_str()
                            ),
                            (Some("DAI"), Some("3"), Some("confirmed"))
                        );
                        self.transfer_seen = true;
                    }
                }
                _ => panic!("{message}"),
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn account_streams_end_in_the_state_rest_shows() {
    let server = Arc::new(TestServer::start().await);
    let traders = Arc::new(traders());
    fund(&server, &traders).await;
    let flow = tokio::spawn(random_flow(
        Arc::clone(&server),
        Arc::clone(&traders),
        99,
        Duration::from_secs(3),
    ));
    tokio::time::sleep(Duration::from_millis(800)).await;
    let account = traders[3].address.clone();
    let mut client = StreamClient::connect(&server.base_url).await;
    client
        .send(json!({"op": "subscribe", "id": "o", "channel": "orders", "chainId": "1", "account": account.to_lowercase()}))
        .await;
    client
        .send(json!({"op": "subscribe", "id": "w", "channel": "balances", "chainId": "1", "account": account}))
        .await;
    let mut state = AccountState::default();
    state.read_until_quiet(&mut client, &account).await;
    flow.await.unwrap();
    state.read_until_quiet(&mut client, &account).await;
    // A transfer arrives with its balance.
    server.deposit(&traders[3], "DAI", "3").await;
    state.read_until_quiet(&mut client, &account).await;
    assert!(state.transfer_seen, "the deposit was streamed with its balance");
    let AccountState { open, balances, .. } = state;
    let rest_open: BTreeMap<String, Value> = server
        .account_list("/order/openOrders", &traders[3], "orders")
        .await
        .into_iter()
        .map(|order| (order["orderId"].as_str().unwrap().to_string(), order))
        .collect();
    assert_eq!(open, rest_open, "the streamed open orders are REST's, field for field");
    let (_, rest) = server
        .get("/account/assetBalances", &[("chainId", "1"), ("account", &account)])
        .await;
    for balance in rest["balances"].as_array().unwrap() {
        assert_eq!(&balances[balance["symbol"].as_str().unwrap()], balance);
    }
    assert_eq!(balances["DAI"]["total"], "3");
}

/// Whether the server has told a connection `SLOW_CONSUMER` (its `/metrics` counter).
async fn found_slow(server: &TestServer) -> bool {
    server.get_text("/metrics").await.lines().any(|line| {
        line.strip_prefix("dexd_stream_slow_consumers_total ")
            .is_some_and(|count| count.trim() != "0")
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_client_that_stops_reading_is_told_slow_consumer_and_closed_while_another_keeps_up() {
    // Small outboxes, so that the slow client falls behind after little data.
    let mut config = Config::embedded_default();
    config.limits.stream_queue_messages_per_connection = 256;
    config.limits.stream_queue_bytes_per_connection = 256 * 1024;
    let server = Arc::new(TestServer::start_with(config).await);
    let traders = Arc::new(traders());
    fund(&server, &traders).await;
    // A deep book (1,000 levels a side), so that every snapshot is about 100 KB: the slow
    // client's socket buffers (the server's can grow to 4 MB) fill within seconds.
    for level in 0..2_000u32 {
        let maker = &traders[(level / 400) as usize];
        let (direction, cents) = if level % 2 == 0 {
            ("buy", 5_000 + level / 2)
        } else {
            ("sell", 20_000 + level / 2)
        };
        let order = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": direction, "price": format!("{}.{:02}", cents / 100, cents % 100), "amount": "0.05", "privateKey": maker.key});
        let (status, body) = server.post_json("/order/addOrder", order).await;
        assert_eq!(status, 200, "{body}");
    }
    let mut slow = StreamClient::connect_with_small_buffer(&server.base_url).await;
    let keeping_up = tokio::spawn(market_client(
        server.base_url.clone(),
        Duration::ZERO,
        50,
        Duration::from_millis(1_500),
    ));
    let flow = tokio::spawn(random_flow(
        Arc::clone(&server),
        Arc::clone(&traders),
        7,
        Duration::from_secs(4),
    ));
    // The slow client asks for snapshot after snapshot of the deep book and reads nothing: while
    // the flow runs, and for at least 200 snapshots (about 20 MB, several times what its queue
    // and the sockets' buffers hold; the flow's 4 s alone sometimes gave only 7.5 MB), unless
    // the server found it slow before. It stops once the server has closed the connection.
    // Reading soon after the server found it slow matters: a client that does not read for
    // WRITE_TIMEOUT_MS after that counts as stuck and is cut off without the error.
    let mut sent = 0;
    'asking: while (!flow.is_finished() || sent < 400) && !(sent % 20 == 0 && found_slow(&server).await) {
        for channel in ["subscribe", "unsubscribe"] {
            let message = json!({"op": channel, "id": sent, "channel": "book", "chainId": "1", "pair": "ETH/USDC", "depth": 1000});
            let sending = futures_util::SinkExt::send(
                &mut slow.socket,
                tokio_tungstenite::tungstenite::Message::Text(message.to_string().into()),
            );
            if !matches!(tokio::time::timeout(Duration::from_secs(10), sending).await, Ok(Ok(()))) {
                break 'asking;
            }
            sent += 1;
            // Long enough for the snapshot to be taken before the unsubscribe.
            tokio::time::sleep(Duration::from_millis(25)).await;
        }
    }
    flow.await.unwrap();
    // Now it reads: what was queued, then the error, then the end of the connection.
    let mut last = None;
    let mut received = 0;
    while let Some(message) = slow.next_within(Duration::from_secs(15)).await {
        received += 1;
        last = Some(message);
    }
    let last = last.expect("the slow client received messages");
    assert_eq!(last["code"], "SLOW_CONSUMER", "the last of {received} messages: {last}");
    assert_eq!(last["event"], "error");
    assert!(
        found_slow(&server).await,
        "/metrics counts the connection told SLOW_CONSUMER"
    );
    // The other client kept up with no gap (its checks run on every message) and ends equal to
    // REST.
    let client = keeping_up.await.unwrap();
    let (bids, asks, sequence) = rest_book(&server, 50).await;
    assert_eq!(Some(client.book.sequence), sequence);
    assert_eq!(client.book.levels(), (bids, asks));
}
