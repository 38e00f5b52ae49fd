//! Rate limits per client IP (every request) and per account (state changes): 429 with
//! `Retry-After` past the budget, the `RateLimit-*` headers on every answer, nothing applied.

mod common;

use common::{assert_error, TestServer, Trader};
use dexd::config::Config;
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
