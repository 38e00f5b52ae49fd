//! Conditional orders through the API (contract version 4): a stop that waits untriggered and
//! locked, is listed open, and fires in the matching that prints its price; a one-cancels-other
//! pair; an expiry the venue's timer applies; the hostile inputs each refused with nothing
//! changed; and a trigger order signed by its client with the `Order` type's new fields.

use crate::common;

use std::time::Duration;

use common::signer::{eip712, now_ms, Signer};
use common::{assert_error, TestServer, Trader};
use serde_json::{json, Value};

async fn place(server: &TestServer, trader: &Trader, fields: Value) -> (u16, Value) {
    let mut body = json!({"chainId": "1", "symbol": "ETH/USDC", "privateKey": trader.key});
    for (name, value) in fields.as_object().unwrap() {
        body[name] = value.clone();
    }
    server.post_json("/order/addOrder", body).await
}

async fn placed(server: &TestServer, trader: &Trader, fields: Value) -> Value {
    let answer = place(server, trader, fields).await;
    assert_eq!(answer.0, 200, "{}", answer.1);
    answer.1["order"].clone()
}

async fn detail(server: &TestServer, order_id: &Value) -> Value {
    let (status, body) = server
        .get(
            "/order/orderDetail",
            &[("chainId", "1"), ("orderId", order_id.as_str().unwrap())],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    body["order"].clone()
}

/// Bob sells 0.01 to Carol at `price`: a trade that prints it.
async fn print(server: &TestServer, bob: &Trader, carol: &Trader, price: &str) {
    placed(
        server,
        bob,
        json!({"type": "limit", "direction": "sell", "price": price, "amount": "0.01"}),
    )
    .await;
    placed(
        server,
        carol,
        json!({"type": "limit", "direction": "buy", "price": price, "amount": "0.01"}),
    )
    .await;
}

#[tokio::test]
async fn a_stop_waits_locked_then_fires_and_hostile_conditions_change_nothing() {
    let server = TestServer::start().await;
    let (alice, bob, carol) = (Trader::new(0xd1), Trader::new(0xd2), Trader::new(0xd3));
    server.deposit(&alice, "ETH", "10").await;
    server.deposit(&bob, "ETH", "10").await;
    server.deposit(&carol, "USDC", "100000").await;
    print(&server, &bob, &carol, "2500").await;

    let stop = placed(
        &server,
        &alice,
        json!({"type": "market", "direction": "sell", "amount": "1", "triggerPrice": "2400", "triggerCondition": "below"}),
    )
    .await;
    assert_eq!(stop["status"], "untriggered");
    assert_eq!(
        (&stop["triggerPrice"], &stop["triggerCondition"]),
        (&json!("2400"), &json!("below"))
    );
    assert_eq!(server.balance(&alice, "ETH").await["locked"], "1");
    let open = server.account_list("/order/openOrders", &alice, "orders").await;
    assert_eq!(open.len(), 1);
    assert_eq!(open[0]["orderId"], stop["orderId"]);

    // Each hostile input is refused, and nothing changed.
    let before = server.balance(&alice, "ETH").await;
    let cases = [
        (
            json!({"type": "market", "direction": "sell", "amount": "1", "triggerPrice": "2600", "triggerCondition": "below"}),
            422,
            "TRIGGER_ALREADY_MET",
            "triggerPrice",
        ),
        (
            json!({"type": "market", "direction": "sell", "amount": "1", "triggerPrice": "2400.001", "triggerCondition": "below"}),
            422,
            "INVALID_TICK",
            "triggerPrice",
        ),
        (
            json!({"type": "market", "direction": "sell", "amount": "1", "triggerPrice": "2400"}),
            400,
            "INVALID_PARAMETER",
            "triggerCondition",
        ),
        (
            json!({"type": "market", "direction": "sell", "amount": "1", "triggerPrice": "2400", "triggerCondition": "sideways"}),
            400,
            "INVALID_PARAMETER",
            "triggerCondition",
        ),
        (
            json!({"type": "limit", "direction": "sell", "price": "3000", "amount": "1", "expiresAt": now_ms() + 1_000}),
            422,
            "EXPIRY_TOO_SOON",
            "expiresAt",
        ),
        (
            json!({"type": "limit", "direction": "sell", "price": "3000", "amount": "1", "expiresAt": now_ms() - 1_000}),
            422,
            "EXPIRY_TOO_SOON",
            "expiresAt",
        ),
        (
            json!({"type": "limit", "direction": "sell", "price": "3000", "amount": "1", "expiresAt": now_ms() + 400 * 86_400_000}),
            422,
            "EXPIRY_TOO_FAR",
            "expiresAt",
        ),
        (
            json!({"type": "limit", "direction": "sell", "price": "3000", "amount": "1", "expiresAt": "17000000000000"}),
            400,
            "INVALID_PARAMETER",
            "expiresAt",
        ),
        (
            json!({"type": "limit", "direction": "sell", "price": "3000", "amount": "1", "ocoGroup": "x".repeat(37)}),
            400,
            "INVALID_PARAMETER",
            "ocoGroup",
        ),
    ];
    for (fields, status, code, field) in cases {
        let answer = place(&server, &alice, fields.clone()).await;
        assert_error(&answer, status, code, Some(field));
    }
    assert_eq!(server.balance(&alice, "ETH").await, before);

    // An untriggered order is cancelled like any open order, and its lock comes back.
    let second = placed(
        &server,
        &alice,
        json!({"type": "limit", "direction": "sell", "price": "2300", "amount": "2", "triggerPrice": "2350",
               "triggerCondition": "below"}),
    )
    .await;
    assert_eq!(server.balance(&alice, "ETH").await["locked"], "3");
    let (status, cancelled) = server
        .post_json(
            "/order/cancelOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": second["orderId"], "privateKey": alice.key}),
        )
        .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["order"]["cancelReason"], "user");
    assert_eq!(server.balance(&alice, "ETH").await["locked"], "1");

    // Carol bids below; a trade at 2400 fires the stop into her bid in the same step.
    let bid = placed(
        &server,
        &carol,
        json!({"type": "limit", "direction": "buy", "price": "2390", "amount": "1"}),
    )
    .await;
    print(&server, &bob, &carol, "2400").await;
    let fired = detail(&server, &stop["orderId"]).await;
    assert_eq!(fired["status"], "filled", "{fired}");
    assert_eq!(detail(&server, &bid["orderId"]).await["status"], "filled");
    assert_eq!(server.balance(&alice, "ETH").await["locked"], "0");
}

#[tokio::test]
async fn an_oco_pair_shares_one_lock_and_one_cancels_the_other() {
    let server = TestServer::start().await;
    let (alice, bob, carol, mallory) = (
        Trader::new(0xd4),
        Trader::new(0xd5),
        Trader::new(0xd6),
        Trader::new(0xd7),
    );
    server.deposit(&alice, "ETH", "10").await;
    server.deposit(&bob, "ETH", "10").await;
    server.deposit(&mallory, "ETH", "10").await;
    server.deposit(&carol, "USDC", "100000").await;
    print(&server, &bob, &carol, "2500").await;
    let take_profit = placed(
        &server,
        &alice,
        json!({"type": "limit", "direction": "sell", "price": "2600", "amount": "2", "ocoGroup": "exit-a"}),
    )
    .await;
    let stop = placed(
        &server,
        &alice,
        json!({"type": "market", "direction": "sell", "amount": "3", "triggerPrice": "2400",
               "triggerCondition": "below", "ocoGroup": "exit-a"}),
    )
    .await;
    assert_eq!(stop["ocoGroup"], "exit-a");
    assert_eq!(server.balance(&alice, "ETH").await["locked"], "3");
    // A third order in the group is refused; another account's order naming it makes a group
    // of its own (a name is the account's: nobody can take another's first).
    let third = place(
        &server,
        &alice,
        json!({"type": "market", "direction": "sell", "amount": "1", "triggerPrice": "2300",
               "triggerCondition": "below", "ocoGroup": "exit-a"}),
    )
    .await;
    assert_error(&third, 422, "OCO_GROUP_INVALID", Some("ocoGroup"));
    let foreign = placed(
        &server,
        &mallory,
        json!({"type": "market", "direction": "sell", "amount": "1", "triggerPrice": "2300",
               "triggerCondition": "below", "ocoGroup": "exit-a"}),
    )
    .await;
    assert_eq!(foreign["ocoGroup"], "exit-a");
    // Carol lifts part of the take-profit: the stop is cancelled for the group.
    placed(
        &server,
        &carol,
        json!({"type": "limit", "direction": "buy", "price": "2600", "amount": "0.5"}),
    )
    .await;
    let cancelled = detail(&server, &stop["orderId"]).await;
    assert_eq!(
        (&cancelled["status"], &cancelled["cancelReason"]),
        (&json!("cancelled"), &json!("oco"))
    );
    assert_eq!(detail(&server, &take_profit["orderId"]).await["filled"], "0.5");
    assert_eq!(server.balance(&alice, "ETH").await["locked"], "1.5");
    // Mallory's order of the same name is hers alone: untouched.
    assert_eq!(detail(&server, &foreign["orderId"]).await["status"], "untriggered");
}

#[tokio::test]
async fn an_order_expires_by_the_venues_timer() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xd8);
    server.deposit(&alice, "ETH", "10").await;
    let expires_at = now_ms() + 5_500;
    let order = placed(
        &server,
        &alice,
        json!({"type": "limit", "direction": "sell", "price": "3000", "amount": "1", "expiresAt": expires_at.to_string()}),
    )
    .await;
    assert_eq!(order["expiresAt"], json!(expires_at));
    let mut expired = Value::Null;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        expired = detail(&server, &order["orderId"]).await;
        if expired["status"] == "cancelled" {
            break;
        }
    }
    assert_eq!(expired["cancelReason"], "expired", "{expired}");
    // Within the contract's 100 ms of its time, give or take the poll of this test.
    assert!(expired["updatedAt"].as_u64().unwrap() >= expires_at);
    assert!(expired["updatedAt"].as_u64().unwrap() <= expires_at + 300, "{expired}");
    assert_eq!(server.balance(&alice, "ETH").await["locked"], "0");
}

#[tokio::test]
async fn a_client_signs_a_trigger_order_with_the_order_types_new_fields() {
    let server = TestServer::start().await;
    let eip712 = eip712(&server).await;
    let names: Vec<&str> = eip712["types"]["Order"]
        .as_array()
        .unwrap()
        .iter()
        .map(|member| member["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names[11..],
        ["triggerPrice", "triggerCondition", "ocoGroup", "expiresAt"]
    );
    let signer = Signer::new(0x5c);
    server.deposit(&signer.trader, "ETH", "5").await;
    let expiry = now_ms() + 60_000;
    let expires_at = now_ms() + 3_600_000;
    let message = json!({
        "account": signer.trader.address, "symbol": "ETH/USDC", "orderType": "limit", "direction": "sell",
        "timeInForce": "GTC", "postOnly": false, "price": "1900", "amount": "1", "clientOrderId": "",
        "nonce": "9", "expiry": expiry.to_string(), "triggerPrice": "2000", "triggerCondition": "below",
        "ocoGroup": "signed-1", "expiresAt": expires_at.to_string(),
    });
    let (signature, digest) = signer.sign(&eip712, "Order", message);
    let body = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "sell", "price": "1900",
        "amount": "1", "triggerPrice": "2000", "triggerCondition": "below", "ocoGroup": "signed-1",
        "expiresAt": expires_at, "account": signer.trader.address, "nonce": "9", "expiry": expiry,
        "signature": signature});
    // Signed over other conditions than those sent: the signature recovers to another key, which
    // is no agent of the account.
    let mut altered = body.clone();
    altered["triggerPrice"] = json!("2100");
    let refused = server.post_json("/order/addOrder", altered).await;
    assert_error(&refused, 403, "AGENT_NOT_ALLOWED", Some("account"));
    let (status, answer) = server.post_json("/order/addOrder", body).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["order"]["orderId"], digest);
    assert_eq!(answer["order"]["status"], "untriggered");
    let (status, detail) = server
        .get("/order/orderDetail", &[("chainId", "1"), ("orderId", &digest)])
        .await;
    assert_eq!(status, 200, "{detail}");
    assert_eq!(detail["typedData"]["message"]["triggerPrice"], "2000");
    assert_eq!(detail["typedData"]["message"]["ocoGroup"], "signed-1");
}

#[tokio::test]
async fn a_bots_batch_carries_a_stop_and_the_orders_stream_shows_it_wait_then_fire() {
    let server = TestServer::start().await;
    let (alice, bob, carol) = (Trader::new(0xe1), Trader::new(0xe2), Trader::new(0xe3));
    server.deposit(&alice, "ETH", "5").await;
    server.deposit(&bob, "ETH", "5").await;
    server.deposit(&carol, "USDC", "100000").await;
    print(&server, &bob, &carol, "2500").await;
    let mut stream = common::stream_client::StreamClient::connect(&server.base_url).await;
    let subscribed = stream
        .ask(json!({"op": "subscribe", "id": "o", "channel": "orders", "chainId": "1", "account": alice.address}))
        .await;
    assert_eq!(subscribed["event"], "subscribed");
    assert_eq!(stream.next().await["event"], "snapshot");
    // The market maker's loop of docs/clients.md: quotes and a stop-loss in one batch.
    let (status, batch) = server
        .post_json(
            "/order/batchOrders",
            json!({"chainId": "1", "privateKey": alice.key, "orders": [
                {"symbol": "ETH/USDC", "type": "limit", "direction": "sell", "price": "2520", "amount": "0.1", "postOnly": true},
                {"symbol": "ETH/USDC", "type": "market", "direction": "sell", "amount": "0.2",
                 "triggerPrice": "2400", "triggerCondition": "below"},
                {"symbol": "ETH/USDC", "type": "limit", "direction": "sell", "price": "2450", "amount": "0.3",
                 "triggerPrice": "2400", "triggerCondition": "below"}]}),
        )
        .await;
    assert_eq!(status, 200, "{batch}");
    let stop = batch["results"][1]["order"].clone();
    assert_eq!(stop["status"], "untriggered", "{batch}");
    // The stop's updates on the stream: untriggered when placed, filled when it fired.
    let status_of_stop = |message: &Value| -> Option<Value> {
        message["orders"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|order| order["orderId"] == stop["orderId"])
            .map(|order| order["status"].clone())
    };
    let mut statuses = Vec::new();
    while statuses.is_empty() {
        let message = stream.next().await;
        statuses.extend(status_of_stop(&message));
    }
    assert_eq!(statuses, [json!("untriggered")]);
    placed(
        &server,
        &carol,
        json!({"type": "limit", "direction": "buy", "price": "2300", "amount": "1"}),
    )
    .await;
    print(&server, &bob, &carol, "2400").await;
    while statuses.len() < 2 {
        let message = stream.next().await;
        statuses.extend(status_of_stop(&message));
    }
    assert_eq!(statuses[1], "filled");
    // The limit stop fired and rests at 2450: open, under its placement's id, on REST.
    let resting_stop = &batch["results"][2]["order"];
    let open = server.account_list("/order/openOrders", &alice, "orders").await;
    let listed = open
        .iter()
        .find(|order| order["orderId"] == resting_stop["orderId"])
        .expect("the fired limit stop rests");
    assert_eq!(
        (&listed["status"], &listed["remaining"]),
        (&json!("open"), &json!("0.3"))
    );
}

#[tokio::test]
async fn an_expiry_survives_a_restart_and_fires_once_after_it() {
    let data_dir = tempfile::tempdir().unwrap();
    let alice = Trader::new(0xe4);
    let expires_at = now_ms() + 6_000;
    let order_id = {
        let server = TestServer::start_in(dexd_venue::config::Config::embedded_default(), data_dir.path()).await;
        server.deposit(&alice, "ETH", "3").await;
        let order = placed(
            &server,
            &alice,
            json!({"type": "limit", "direction": "sell", "price": "3000", "amount": "1", "expiresAt": expires_at}),
        )
        .await;
        order["orderId"].clone()
    };
    let server = TestServer::start_in(dexd_venue::config::Config::embedded_default(), data_dir.path()).await;
    assert_eq!(detail(&server, &order_id).await["status"], "open");
    let mut expired = Value::Null;
    for _ in 0..100 {
        tokio::time::sleep(Duration::from_millis(100)).await;
        expired = detail(&server, &order_id).await;
        if expired["status"] == "cancelled" {
            break;
        }
    }
    assert_eq!(expired["cancelReason"], "expired", "{expired}");
    assert_eq!(server.balance(&alice, "ETH").await["locked"], "0");
    assert_eq!(server.balance(&alice, "ETH").await["available"], "3");
}

/// A maker quoting with an expiry was filled after it, exactly when prices had moved: takers
/// aimed 10 to 60 ms past the expiry filled in 7 of 10 rounds, before the venue's timer (every
/// 100 ms) cancelled the quote. An order is dead at its expiry inside matching now: ten rounds,
/// run side by side, none fills, and each quote ends cancelled `expired`.
#[tokio::test]
async fn no_taker_aimed_just_past_a_makers_expiry_fills_against_it() {
    let server = TestServer::start().await;
    let maker = Trader::new(0x3a);
    let taker = Trader::new(0x3b);
    server.deposit(&maker, "ETH", "5").await;
    server.deposit(&taker, "USDC", "100000").await;
    let first_expiry_ms = now_ms() + 5_600;
    let mut quotes = Vec::new();
    for round in 0..10u64 {
        let expires_at = first_expiry_ms + round * 80;
        let price = format!("{}", 2000 + round);
        let order = placed(
            &server,
            &maker,
            json!({"type": "limit", "direction": "sell", "price": price, "amount": "0.1", "expiresAt": expires_at}),
        )
        .await;
        quotes.push((order["orderId"].clone(), expires_at, price));
    }
    let takers = quotes.iter().enumerate().map(|(round, (_, expires_at, price))| {
        let (server, taker, price) = (&server, &taker, price.clone());
        let aim_ms = expires_at + 10 + (round as u64 * 5) % 50;
        async move {
            tokio::time::sleep(Duration::from_millis(aim_ms.saturating_sub(now_ms()))).await;
            place(
                server,
                taker,
                json!({"type": "limit", "direction": "buy", "price": price, "amount": "0.1", "timeInForce": "IOC"}),
            )
            .await
        }
    });
    for (status, answer) in futures_util::future::join_all(takers).await {
        assert_eq!(status, 200, "{answer}");
        assert_eq!(
            answer["order"]["filled"], "0",
            "a taker filled against an expired quote: {answer}"
        );
        assert_eq!(answer["trades"].as_array().map(Vec::len), Some(0), "{answer}");
    }
    for (order_id, _, _) in &quotes {
        let order = detail(&server, order_id).await;
        assert_eq!(
            (&order["status"], &order["cancelReason"], &order["filled"]),
            (&json!("cancelled"), &json!("expired"), &json!("0")),
            "{order}"
        );
    }
    assert_eq!(server.balance(&maker, "ETH").await["total"], "5");
}

/// More stops met at once than one command fires (`MAX_TRIGGERS_FIRED_PER_COMMAND`): the rest
/// fire from the pair's queue by the venue's timer, though no trade meets them again (before the
/// queue, the last stop waited locked until a trade printed 2,400 or below again).
#[tokio::test]
async fn stops_met_beyond_one_commands_bound_all_fire_without_another_trade() {
    let count = dexd_core::engine::MAX_TRIGGERS_FIRED_PER_COMMAND + 1;
    let mut config = dexd_venue::config::Config::embedded_default();
    config.limits.max_open_orders_per_account = u32::try_from(count).unwrap() + 10;
    config.limits.writes_per_second_per_account = 100_000;
    let server = TestServer::start_with(config).await;
    let (alice, bob, carol) = (Trader::new(0xe1), Trader::new(0xe2), Trader::new(0xe3));
    server.deposit(&alice, "ETH", "20").await;
    server.deposit(&bob, "ETH", "10").await;
    server.deposit(&carol, "USDC", "1000000").await;
    let stop = json!({"symbol": "ETH/USDC", "type": "market", "direction": "sell", "amount": "0.001",
                      "triggerPrice": "2400", "triggerCondition": "below"});
    let mut sent = 0;
    while sent < count {
        let items = (count - sent).min(50);
        let results = server.batch_orders(&alice, vec![stop.clone(); items]).await;
        assert!(
            results.iter().all(|result| result["order"]["status"] == "untriggered"),
            "{results:?}"
        );
        sent += items;
    }
    assert_eq!(server.balance(&alice, "ETH").await["locked"], "10.001");
    // A bid far below takes what the stops sell; then one trade at 2,400 meets them all.
    placed(
        &server,
        &carol,
        json!({"type": "limit", "direction": "buy", "price": "2000", "amount": "15"}),
    )
    .await;
    print(&server, &bob, &carol, "2400").await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let alice_eth = server.balance(&alice, "ETH").await;
        if alice_eth["locked"] == "0" {
            assert_eq!(alice_eth["total"], "9.999", "every stop sold its 0.001");
            break;
        }
        assert!(std::time::Instant::now() < deadline, "stops still wait: {alice_eth}");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
