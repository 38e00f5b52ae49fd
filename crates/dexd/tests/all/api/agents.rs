//! Agents against the real server: an account approves a bot's key, which then trades for it
//! with its own key (privateKey and `account`) or its own signature, and can never move funds
//! or approve agents; a key never approved, a revoked one and one past its end are refused with
//! `403 AGENT_NOT_ALLOWED`, and every refusal changes nothing.

use crate::common;

use common::signer::{eip712, now_ms, Signer};
use common::{assert_error, TestServer, Trader};
use serde_json::{json, Value};

fn order_for(account: &Trader, agent: &Trader, price: &str) -> Value {
    json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": price,
           "amount": "0.1", "privateKey": agent.key, "account": account.address})
}

async fn approve(server: &TestServer, account: &Trader, agent: &Trader, name: &str) -> (u16, Value) {
    server
        .post_json(
            "/account/approveAgent",
            json!({"chainId": "1", "privateKey": account.key, "agent": agent.address, "name": name}),
        )
        .await
}

async fn agents_of(server: &TestServer, account: &Trader) -> Vec<Value> {
    let (status, body) = server
        .get("/account/agents", &[("chainId", "1"), ("account", &account.address)])
        .await;
    assert_eq!(status, 200, "{body}");
    body["agents"].as_array().unwrap().clone()
}

#[tokio::test]
async fn an_agent_trades_for_the_account_and_never_moves_funds_or_approves() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    let bot = Trader::new(0xb7);
    let carol = Trader::new(0xc0);
    server.deposit(&alice, "USDC", "1000").await;
    server.deposit(&bot, "USDC", "5").await;

    // Never approved.
    let refused = server
        .post_json("/order/addOrder", order_for(&alice, &bot, "1000"))
        .await;
    assert_error(&refused, 403, "AGENT_NOT_ALLOWED", Some("account"));

    let (status, body) = approve(&server, &alice, &bot, "maker-bot.1").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["agent"]["agent"], bot.address);
    assert_eq!(body["agent"]["validUntil"], Value::Null);
    let listed = agents_of(&server, &alice).await;
    assert_eq!(listed.len(), 1);
    assert_eq!(listed[0]["name"], "maker-bot.1");

    // The bot places, amends, cancels all and sets the switch for Alice, with its own key.
    let (status, placed) = server
        .post_json("/order/addOrder", order_for(&alice, &bot, "1000"))
        .await;
    assert_eq!(status, 200, "{placed}");
    assert_eq!(placed["order"]["account"], alice.address);
    assert_eq!(server.balance(&alice, "USDC").await["locked"], "100");
    assert_eq!(server.balance(&bot, "USDC").await["locked"], "0");
    let (status, body) = server
        .post_json(
            "/order/amendOrder",
            json!({"chainId": "1", "privateKey": bot.key, "account": alice.address, "symbol": "ETH/USDC",
                   "orderId": placed["order"]["orderId"], "price": "990"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .post_json(
            "/order/batchOrders",
            json!({"chainId": "1", "privateKey": bot.key, "account": alice.address,
                   "orders": [{"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "980", "amount": "0.1"}]}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["order"]["account"], alice.address, "{body}");
    let (status, body) = server
        .post_json(
            "/order/cancelAllAfter",
            json!({"chainId": "1", "privateKey": bot.key, "account": alice.address, "timeoutMs": 0}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .post_json(
            "/order/cancelAll",
            json!({"chainId": "1", "privateKey": bot.key, "account": alice.address}),
        )
        .await;
    assert_eq!((status, body["orders"].as_array().unwrap().len()), (200, 2), "{body}");

    // Never funds, never agents.
    let before = server.balance(&alice, "USDC").await;
    for (path, body) in [
        (
            "/portfolio/withdraw",
            json!({"chainId": "1", "from": alice.address, "account": alice.address, "symbol": "USDC", "quantity": "1", "privateKey": bot.key}),
        ),
        (
            "/portfolio/deposit",
            json!({"chainId": "1", "from": alice.address, "account": alice.address, "symbol": "USDC", "quantity": "1", "privateKey": bot.key}),
        ),
        (
            "/account/approveAgent",
            json!({"chainId": "1", "privateKey": bot.key, "account": alice.address, "agent": carol.address, "name": "x"}),
        ),
        (
            "/account/revokeAgent",
            json!({"chainId": "1", "privateKey": bot.key, "account": alice.address, "agent": bot.address}),
        ),
    ] {
        let answer = server.post_json(path, body).await;
        assert_error(&answer, 403, "AGENT_NOT_ALLOWED", Some("account"));
    }
    assert_eq!(server.balance(&alice, "USDC").await, before);
    assert_eq!(agents_of(&server, &alice).await.len(), 1);

    // Carol was never approved by Alice; the bot was never approved by Carol.
    let answer = server
        .post_json("/order/addOrder", order_for(&alice, &carol, "1000"))
        .await;
    assert_error(&answer, 403, "AGENT_NOT_ALLOWED", Some("account"));
    let answer = server
        .post_json("/order/addOrder", order_for(&carol, &bot, "1000"))
        .await;
    assert_error(&answer, 403, "AGENT_NOT_ALLOWED", Some("account"));

    // Revoked: refused at once.
    let (status, body) = server
        .post_json(
            "/account/revokeAgent",
            json!({"chainId": "1", "privateKey": alice.key, "agent": bot.address}),
        )
        .await;
    assert_eq!((status, &body["revoked"]), (200, &json!(true)), "{body}");
    let answer = server
        .post_json("/order/addOrder", order_for(&alice, &bot, "1000"))
        .await;
    assert_error(&answer, 403, "AGENT_NOT_ALLOWED", Some("account"));
    assert!(agents_of(&server, &alice).await.is_empty());
    let again = server
        .post_json(
            "/account/revokeAgent",
            json!({"chainId": "1", "privateKey": alice.key, "agent": bot.address}),
        )
        .await;
    assert_error(&again, 404, "AGENT_NOT_FOUND", Some("agent"));
    assert!(server
        .account_list("/order/openOrders", &alice, "orders")
        .await
        .is_empty());
}

#[tokio::test]
async fn approvals_are_checked_limited_and_end_on_time() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    let bot = Trader::new(0xb7);
    server.deposit(&alice, "USDC", "1000").await;
    for bad_name in ["", "has space", &"x".repeat(33), "émoji"] {
        let answer = approve(&server, &alice, &bot, bad_name).await;
        assert_eq!(answer.0, 400, "{}", answer.1);
    }
    let myself = approve(&server, &alice, &alice, "me").await;
    assert_error(&myself, 422, "AGENT_IS_ACCOUNT", Some("agent"));
    let past = server
        .post_json(
            "/account/approveAgent",
            json!({"chainId": "1", "privateKey": alice.key, "agent": bot.address, "name": "late", "validUntil": now_ms() - 1}),
        )
        .await;
    assert_error(&past, 422, "VALID_UNTIL_PASSED", Some("validUntil"));
    for number in 0..10 {
        let (status, body) = approve(&server, &alice, &Trader::numbered(number), &format!("bot-{number}")).await;
        assert_eq!(status, 200, "{body}");
    }
    let eleventh = approve(&server, &alice, &bot, "one-too-many").await;
    assert_error(&eleventh, 422, "TOO_MANY_AGENTS", Some("agent"));
    // Renewing an approved agent is not an eleventh.
    let (status, body) = approve(&server, &alice, &Trader::numbered(3), "renamed").await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(agents_of(&server, &alice).await.len(), 10);

    // An approval that ends: valid before, refused after.
    let other = Trader::new(0xd0);
    server.deposit(&other, "USDC", "1000").await;
    let until = now_ms() + 1_500;
    let (status, body) = server
        .post_json(
            "/account/approveAgent",
            json!({"chainId": "1", "privateKey": other.key, "agent": bot.address, "name": "short", "validUntil": until}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["agent"]["validUntil"], json!(until));
    let (status, body) = server
        .post_json("/order/addOrder", order_for(&other, &bot, "1000"))
        .await;
    assert_eq!(status, 200, "{body}");
    tokio::time::sleep(std::time::Duration::from_millis(until + 50 - now_ms())).await;
    let answer = server
        .post_json("/order/addOrder", order_for(&other, &bot, "1000"))
        .await;
    assert_error(&answer, 403, "AGENT_NOT_ALLOWED", Some("account"));
    assert!(agents_of(&server, &other).await.is_empty());
}

#[tokio::test]
async fn a_signed_agent_request_recovers_to_the_agent_and_the_approval_can_be_signed_too() {
    let server = TestServer::start().await;
    let alice = Signer::new(0xa1);
    let bot = Signer::new(0xb7);
    server.deposit(&alice.trader, "USDC", "1000").await;
    let eip712 = eip712(&server).await;
    assert_eq!(eip712["primaryTypes"]["approveAgent"], "ApproveAgent");
    let expiry = now_ms() + 60_000;
    let approval = json!({"account": alice.trader.address, "agent": bot.trader.address, "name": "signed-bot",
                          "validUntil": "0", "nonce": "1", "expiry": expiry.to_string()});
    // The bot cannot sign Alice's approval.
    let (forged, _) = bot.sign(&eip712, "ApproveAgent", approval.clone());
    let mut body = json!({"chainId": "1", "account": alice.trader.address, "agent": bot.trader.address,
                          "name": "signed-bot", "nonce": "1", "expiry": expiry, "signature": forged});
    assert_error(
        &server.post_json("/account/approveAgent", body.clone()).await,
        401,
        "INVALID_SIGNATURE",
        Some("signature"),
    );
    let (signature, _) = alice.sign(&eip712, "ApproveAgent", approval);
    body["signature"] = json!(signature);
    let (status, answer) = server.post_json("/account/approveAgent", body).await;
    assert_eq!(status, 200, "{answer}");

    // The bot signs an order for Alice with its own key: the order is Alice's.
    let order = json!({"account": alice.trader.address, "symbol": "ETH/USDC", "orderType": "limit",
                       "direction": "buy", "timeInForce": "GTC", "postOnly": false, "price": "1000",
                       "amount": "0.1", "clientOrderId": "", "nonce": "7", "expiry": expiry.to_string(), "triggerPrice": "", "triggerCondition": "", "ocoGroup": "", "expiresAt": "0"});
    let (signature, digest) = bot.sign(&eip712, "Order", order);
    let (status, placed) = server
        .post_json(
            "/order/addOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "1000",
                   "amount": "0.1", "account": alice.trader.address, "nonce": "7", "expiry": expiry,
                   "signature": signature}),
        )
        .await;
    assert_eq!(status, 200, "{placed}");
    assert_eq!(placed["order"]["orderId"], digest);
    assert_eq!(placed["order"]["account"], alice.trader.address);

    // The bot signs a withdrawal for Alice: an agent never moves funds.
    let withdrawal = json!({"account": alice.trader.address, "symbol": "USDC", "quantity": "1", "nonce": "9",
                            "expiry": expiry.to_string()});
    let (signature, _) = bot.sign(&eip712, "Withdraw", withdrawal);
    let refused = server
        .post_json(
            "/portfolio/withdraw",
            json!({"chainId": "1", "from": alice.trader.address, "symbol": "USDC", "quantity": "1",
                   "account": alice.trader.address, "nonce": "9", "expiry": expiry, "signature": signature}),
        )
        .await;
    assert_error(&refused, 403, "AGENT_NOT_ALLOWED", Some("account"));
    assert_eq!(server.balance(&alice.trader, "USDC").await["total"], "1000");

    // A key Alice never approved signs a cancel all for her: refused, nothing cancelled.
    let mallory = Signer::new(0x66);
    let cancel_all = json!({"account": alice.trader.address, "symbol": "", "nonce": "8", "expiry": expiry.to_string()});
    let (signature, _) = mallory.sign(&eip712, "CancelAll", cancel_all.clone());
    let request = json!({"chainId": "1", "account": alice.trader.address, "nonce": "8", "expiry": expiry, "signature": signature});
    assert_error(
        &server.post_json("/order/cancelAll", request.clone()).await,
        403,
        "AGENT_NOT_ALLOWED",
        Some("account"),
    );
    assert_eq!(
        server
            .account_list("/order/openOrders", &alice.trader, "orders")
            .await
            .len(),
        1
    );
    // The bot's own signature of the same cancels it.
    let (signature, _) = bot.sign(&eip712, "CancelAll", cancel_all);
    let mut request = request;
    request["signature"] = json!(signature);
    let (status, body) = server.post_json("/order/cancelAll", request).await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["orders"].as_array().unwrap().len(), 1);
}

/// An account and its agents hold one room of live signed requests, not one each: agents
/// signing for Alice are refused (`429`) once they and she hold all but her reserve, and her own
/// request still goes in. (Before, each agent held a room of its own: an account with ten agents
/// held eleven.)
#[tokio::test]
async fn an_account_and_its_agents_share_one_room_of_live_requests() {
    let mut config = dexd_venue::config::Config::embedded_default();
    config.limits.max_live_nonces_per_account = 10;
    let server = TestServer::start_with(config).await;
    let alice = Trader::new(0xa5);
    let bots = [Trader::new(0xb5), Trader::new(0xb6)];
    server.deposit(&alice, "USDC", "1000").await;
    for (index, bot) in bots.iter().enumerate() {
        let (status, body) = approve(&server, &alice, bot, &format!("bot-{index}")).await;
        assert_eq!(status, 200, "{body}");
    }
    let mut accepted = 0;
    let mut refused = [false, false];
    for round in 0..20 {
        let bot = &bots[round % 2];
        let answer = server.post_json("/order/addOrder", order_for(&alice, bot, "100")).await;
        match answer.0 {
            200 => accepted += 1,
            429 => {
                assert_eq!(answer.1["error"]["code"], "RATE_LIMITED", "{}", answer.1);
                refused[round % 2] = true;
            }
            _ => panic!("{answer:?}"),
        }
    }
    assert_eq!(refused, [true, true], "both agents reach the shared room's end");
    // Alice's two approvals hold two of her ten; the reserve (one) is hers alone.
    assert!(accepted <= 10 - 1 - 2, "{accepted} agent orders in one room of 10");
    let own = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100",
                     "amount": "0.1", "privateKey": alice.key});
    let (status, body) = server.post_json("/order/addOrder", own.clone()).await;
    assert_eq!(status, 200, "the owner's reserve: {body}");
    let (status, body) = server.post_json("/order/addOrder", own).await;
    assert_eq!(status, 429, "{body}");
    // Someone else is not held back.
    let carol = Trader::new(0xc5);
    server.deposit(&carol, "USDC", "100").await;
}
