//! Limits on clients: rates per client IP (every request) and per account (state changes), with
//! 429, `Retry-After` and the `RateLimit-*` headers; and the time a body may take to arrive.

use crate::common;

use common::{assert_error, TestServer, Trader};
use dexd_venue::config::Config;
use serde_json::json;

#[tokio::test]
async fn a_client_past_its_budget_gets_429_with_retry_after_and_every_answer_carries_the_headers() {
    let mut config = Config::embedded_default();
    config.limits.requests_per_second_per_ip = 5;
    let server = TestServer::start_with(config).await;
    let mut remaining = Vec::new();
    let mut limited = None;
    for _ in 0..12 {
        let response = server
            .client
            .get(format!("{}/health", server.base_url))
            .send()
            .await
            .unwrap();
        if response.status() == 429 {
            limited = Some(response);
            break;
        }
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["ratelimit-limit"], "5");
        assert!(response.headers().contains_key("ratelimit-reset"));
        remaining.push(
            response.headers()["ratelimit-remaining"]
                .to_str()
                .unwrap()
                .parse::<u32>()
                .unwrap(),
        );
    }
    assert!(remaining.windows(2).all(|pair| pair[1] < pair[0]), "{remaining:?}");
    let limited = limited.expect("the sixth request in a burst is refused");
    let retry_after: u64 = limited.headers()["retry-after"].to_str().unwrap().parse().unwrap();
    assert!(retry_after >= 1);
    assert!(limited.headers().contains_key("x-request-id"));
    let body: serde_json::Value = limited.json().await.unwrap();
    assert_eq!(body["error"]["code"], "RATE_LIMITED");
}

#[tokio::test]
async fn an_account_past_its_write_budget_gets_429_and_nothing_is_applied() {
    let mut config = Config::embedded_default();
    config.limits.writes_per_second_per_account = 2;
    let server = TestServer::start_with(config).await;
    let alice = Trader::new(0xa1);
    let deposit =
        json!({"chainId": "1", "from": alice.address, "symbol": "USDC", "quantity": "10", "privateKey": alice.key});
    let mut answers = Vec::new();
    for _ in 0..3 {
        answers.push(server.post_json("/portfolio/deposit", deposit.clone()).await);
    }
    assert_eq!((answers[0].0, answers[1].0), (200, 200));
    assert_error(&answers[2], 429, "RATE_LIMITED", None);
    assert_eq!(server.balance(&alice, "USDC").await["total"], "20");
    // Another account is not held back by Alice's budget.
    let bob = Trader::new(0xb0);
    server.deposit(&bob, "USDC", "1").await;
}

#[tokio::test]
async fn a_body_that_does_not_arrive_in_time_is_answered_408_instead_of_held() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut config = Config::embedded_default();
    config.limits.body_read_timeout_ms = 200;
    let server = TestServer::start_with(config).await;
    let address = server.base_url.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = "POST /portfolio/deposit HTTP/1.1\r\nHost: dexd\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{\"ch";
    stream.write_all(head.as_bytes()).await.unwrap();
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let read = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    assert!(
        read.is_ok(),
        "the server answers instead of waiting for the body forever"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    let text = String::from_utf8_lossy(&answer);
    assert!(text.starts_with("HTTP/1.1 408"), "{text}");
    assert!(text.contains("\"REQUEST_TIMEOUT\""), "{text}");
}

#[tokio::test]
async fn a_connection_that_sends_its_headers_too_slowly_is_closed() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut config = Config::embedded_default();
    config.limits.header_read_timeout_ms = 200;
    let server = TestServer::start_with(config).await;
    let address = server.base_url.trim_start_matches("http://").to_string();
    let mut stream = tokio::net::TcpStream::connect(&address).await.unwrap();
    stream
        .write_all(b"GET /health HTTP/1.1\r\nHost: dexd\r\n")
        .await
        .unwrap();
    let started = std::time::Instant::now();
    let mut answer = Vec::new();
    let closed = tokio::time::timeout(std::time::Duration::from_secs(5), stream.read_to_end(&mut answer)).await;
    assert!(
        closed.is_ok(),
        "the server closes the connection instead of waiting for the headers forever"
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(3));
    assert!(!String::from_utf8_lossy(&answer).contains("200 OK"));
}

#[tokio::test]
async fn connections_past_the_limit_wait_until_one_closes() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut config = Config::embedded_default();
    config.limits.max_connections = 2;
    let server = TestServer::start_with(config).await;
    let address = server.base_url.trim_start_matches("http://").to_string();
    let first = tokio::net::TcpStream::connect(&address).await.unwrap();
    let second = tokio::net::TcpStream::connect(&address).await.unwrap();
    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    let mut third = tokio::net::TcpStream::connect(&address).await.unwrap();
    third
        .write_all(b"GET /health HTTP/1.1\r\nHost: dexd\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut answer = Vec::new();
    let waited = tokio::time::timeout(std::time::Duration::from_millis(500), third.read_to_end(&mut answer)).await;
    assert!(waited.is_err(), "a third connection is not served while two are open");
    drop(first);
    drop(second);
    let served = tokio::time::timeout(std::time::Duration::from_secs(5), third.read_to_end(&mut answer)).await;
    assert!(served.is_ok());
    assert!(String::from_utf8_lossy(&answer).starts_with("HTTP/1.1 200"));
}

/// `GET /account/rateLimits` shows an account its write budget as the writes spend it, and its
/// open orders against the limit; another account's is untouched; bad input is refused.
#[tokio::test]
async fn an_account_sees_its_write_budget_and_open_orders() {
    let mut config = Config::embedded_default();
    // Five writes a second: a spent write comes back only after 200 ms.
    config.limits.writes_per_second_per_account = 5;
    config.limits.max_open_orders_per_account = 40;
    let server = TestServer::start_with(config).await;
    let (alice, bob) = common::alice_with_dollars_and_bob_offering(&server).await;
    let limits = |trader: &Trader| {
        let address = trader.address.clone();
        let server = &server;
        async move {
            let (status, body) = server
                .get("/account/rateLimits", &[("chainId", "1"), ("account", &address)])
                .await;
            assert_eq!(status, 200, "{body}");
            body
        }
    };
    let before = limits(&alice).await;
    assert_eq!(before["writesPerSecond"], 5);
    assert_eq!(before["maxOpenOrders"], 40);
    assert_eq!(before["openOrders"], 0);
    for price in ["1900", "1901", "1902"] {
        server.limit(&alice, "buy", price, "0.1").await;
    }
    let after = limits(&alice).await;
    assert_eq!(after["openOrders"], 3);
    let used = after["writesUsed"].as_u64().unwrap();
    assert!(
        (2..=4).contains(&used),
        "three placements (and the deposit before them) spent most of the budget: {after}"
    );
    assert!(after["resetAt"].as_u64().unwrap() > dexd_store::now_ms() - 1_000);
    // Bob's budget is his own: one deposit and one offer, a while ago.
    assert_eq!(limits(&bob).await["openOrders"], 1);
    let stranger = Trader::new(0x77);
    let untouched = limits(&stranger).await;
    assert_eq!(
        (untouched["writesUsed"].as_u64(), untouched["openOrders"].as_u64()),
        (Some(0), Some(0))
    );
    assert_error(
        &server
            .get("/account/rateLimits", &[("chainId", "1"), ("account", "0x12")])
            .await,
        400,
        "INVALID_PARAMETER",
        Some("account"),
    );
    assert_error(
        &server.get("/account/rateLimits", &[("chainId", "1")]).await,
        400,
        "MISSING_PARAMETER",
        Some("account"),
    );
    assert_error(
        &server
            .get(
                "/account/rateLimits",
                &[("chainId", "999"), ("account", &alice.address)],
            )
            .await,
        404,
        "UNKNOWN_CHAIN",
        Some("chainId"),
    );
}

/// A signed batch of 50 orders whose signatures are all bad: each item's signature is recovered.
fn badly_signed_batch(trader: &Trader) -> serde_json::Value {
    let item = |index: usize| {
        json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "2000", "amount": "0.01",
            "account": trader.address, "nonce": index.to_string(), "expiry": common::signer::now_ms() + 60_000,
            "signature": format!("0x{}1b", "11".repeat(64))})
    };
    json!({"chainId": "1", "orders": (0..50).map(item).collect::<Vec<_>>()})
}

#[tokio::test]
async fn each_batch_item_and_each_order_over_the_stream_counts_against_the_address() {
    let mut config = Config::embedded_default();
    config.limits.requests_per_second_per_ip = 120;
    let server = TestServer::start_with(config).await;
    let mallory = Trader::new(0x66);
    // 50 signature recoveries each: two batches fit a budget of 120, the third does not (it was
    // one request each, 120 batches a second).
    for _ in 0..2 {
        let (status, body) = server
            .post_json("/order/batchOrders", badly_signed_batch(&mallory))
            .await;
        assert_eq!(status, 200, "{body}");
        assert_eq!(body["results"][0]["error"]["code"], "INVALID_SIGNATURE", "{body}");
    }
    let refused = server
        .post_json("/order/batchOrders", badly_signed_batch(&mallory))
        .await;
    assert_error(&refused, 429, "RATE_LIMITED", None);
    tokio::time::sleep(std::time::Duration::from_millis(1_100)).await;
    // Orders over the stream draw on the same budget: a burst past it is refused.
    let mut stream = common::stream_client::StreamClient::connect(&server.base_url).await;
    let mut limited = 0;
    for index in 0..3 {
        let mut message = badly_signed_batch(&mallory);
        message["op"] = json!("order");
        message["id"] = json!(index);
        message["action"] = json!("batchOrders");
        let answer = stream.ask(message).await;
        if answer["code"] == "RATE_LIMITED" {
            limited += 1;
        }
    }
    assert!(limited >= 1, "a stream's orders are counted");
}
