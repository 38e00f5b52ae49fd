//! What market makers use, against the real server: batches of orders and of cancels, cancel
//! all, amend, and the dead man's switch (journaled: it fires once, after a restart too, and its
//! cancels reach the orders stream). Every hostile input of the issue gets the contract's error
//! and changes nothing.

use crate::common;

use std::time::Duration;

use common::stream_client::StreamClient;
use common::{alice_with_dollars_and_bob_offering, assert_error, BinaryServer, TestServer, Trader};
use serde_json::{json, Value};

fn buy(price: &str, amount: &str) -> Value {
    json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": price, "amount": amount})
}

/// What a refused request must leave alone: the account's balances and open orders, and the
/// book.
async fn state_of(server: &TestServer, trader: &Trader) -> Value {
    let (_, balances) = server
        .get(
            "/account/assetBalances",
            &[("chainId", "1"), ("account", &trader.address)],
        )
        .await;
    let open = server.account_list("/order/openOrders", trader, "orders").await;
    let (_, bids) = server
        .get("/order/buyOrderbooks", &[("chainId", "1"), ("pair", "ETH/USDC")])
        .await;
    json!({"balances": balances["balances"], "open": open, "bids": bids["levels"]})
}

#[tokio::test]
async fn a_batch_places_each_order_in_turn_and_a_refused_one_refuses_no_other() {
    let server = TestServer::start().await;
    let (alice, _bob) = alice_with_dollars_and_bob_offering(&server).await;
    let mut orders = vec![buy("2000", "0.5"), buy("1990", "0.5")];
    let mut too_big = buy("1980", "100");
    too_big["clientOrderId"] = json!("too-big");
    orders.push(too_big);
    // Crosses Bob's offer at 2100: trades on arrival, and its trades are in its result.
    orders.push(buy("2100", "0.1"));
    let results = server.batch_orders(&alice, orders).await;
    assert_eq!(results.len(), 4);
    assert_eq!(results[0]["order"]["price"], "2000");
    assert_eq!(results[1]["order"]["status"], "open");
    assert_eq!(results[2]["error"]["code"], "INSUFFICIENT_BALANCE", "{results:?}");
    assert_eq!(results[3]["order"]["status"], "filled", "{results:?}");
    assert_eq!(results[3]["trades"].as_array().unwrap().len(), 1);
    let open = server.account_list("/order/openOrders", &alice, "orders").await;
    assert_eq!(open.len(), 2);
    // 2000 × 0.5 + 1990 × 0.5 locked; 210 spent on the fill.
    let usdc = server.balance(&alice, "USDC").await;
    assert_eq!(usdc["locked"], "1995", "{usdc}");
    assert_eq!(usdc["total"], "2790", "{usdc}");

    // Form data carries the list as JSON text.
    let listed = json!([buy("1900", "0.1")]).to_string();
    let (status, body) = server
        .post_form(
            "/order/batchOrders",
            &[("chainId", "1"), ("privateKey", &alice.key), ("orders", &listed)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["results"][0]["order"]["price"], "1900");
}

#[tokio::test]
async fn a_malformed_batch_is_refused_whole_and_changes_nothing() {
    let server = TestServer::start().await;
    let (alice, _bob) = alice_with_dollars_and_bob_offering(&server).await;
    server.limit(&alice, "buy", "1000", "0.1").await;
    let before = state_of(&server, &alice).await;
    let batch = |orders: Value| json!({"chainId": "1", "privateKey": alice.key, "orders": orders});
    let empty = server.post_json("/order/batchOrders", batch(json!([]))).await;
    assert_error(&empty, 400, "INVALID_PARAMETER", Some("orders"));
    let fifty_one: Vec<Value> = (0..51).map(|_| buy("1000", "0.01")).collect();
    let too_many = server.post_json("/order/batchOrders", batch(json!(fifty_one))).await;
    assert_error(&too_many, 400, "INVALID_PARAMETER", Some("orders"));
    let not_a_list = server
        .post_json("/order/batchOrders", batch(json!({"symbol": "ETH/USDC"})))
        .await;
    assert_error(&not_a_list, 400, "INVALID_PARAMETER", Some("orders"));
    let mut missing_amount = buy("1000", "0.01");
    missing_amount.as_object_mut().unwrap().remove("amount");
    let wrong_shape = server
        .post_json(
            "/order/batchOrders",
            batch(json!([buy("1000", "0.01"), missing_amount])),
        )
        .await;
    assert_error(&wrong_shape, 400, "MISSING_PARAMETER", Some("orders[1].amount"));
    let not_an_object = server
        .post_json("/order/batchOrders", batch(json!([buy("1000", "0.01"), "buy"])))
        .await;
    assert_error(&not_an_object, 400, "INVALID_PARAMETER", Some("orders[1]"));
    let mut other_pair = buy("1000", "0.01");
    other_pair["symbol"] = json!("WBTC/USDC");
    let mixed_pairs = server
        .post_json("/order/batchOrders", batch(json!([buy("1000", "0.01"), other_pair])))
        .await;
    assert_error(&mixed_pairs, 422, "BATCH_MIXES_PAIRS", Some("orders[1].symbol"));
    let mut nulls = buy("1000", "0.01");
    nulls["clientOrderId"] = Value::Null;
    let null_item = server.post_json("/order/batchOrders", batch(json!([nulls]))).await;
    assert_error(&null_item, 400, "INVALID_PARAMETER", Some("orders[0].clientOrderId"));
    let mut null_account = batch(json!([buy("1000", "0.01")]));
    null_account["account"] = Value::Null;
    let null_top = server.post_json("/order/batchOrders", null_account).await;
    assert_error(&null_top, 400, "INVALID_PARAMETER", Some("account"));
    let mut other_chain = buy("1000", "0.01");
    other_chain["chainId"] = json!("11155111");
    let mixed_chains = server
        .post_json("/order/batchOrders", batch(json!([buy("1000", "0.01"), other_chain])))
        .await;
    assert_error(&mixed_chains, 400, "UNKNOWN_PARAMETER", Some("orders[1].chainId"));
    let mut with_float = buy("1000", "0.01");
    with_float["price"] = json!(1000.5);
    let float = server.post_json("/order/batchOrders", batch(json!([with_float]))).await;
    assert_error(&float, 400, "INVALID_NUMBER", Some("orders[0].price"));
    let no_credential = server
        .post_json(
            "/order/batchOrders",
            json!({"chainId": "1", "orders": [buy("1000", "0.01")]}),
        )
        .await;
    assert_error(&no_credential, 401, "UNAUTHENTICATED", Some("orders[0].privateKey"));
    let cancels = server
        .post_json(
            "/order/batchCancel",
            json!({"chainId": "1", "privateKey": alice.key, "cancels": []}),
        )
        .await;
    assert_error(&cancels, 400, "INVALID_PARAMETER", Some("cancels"));
    assert_eq!(state_of(&server, &alice).await, before);
}

#[tokio::test]
async fn a_batch_cancel_cancels_each_and_answers_each() {
    let server = TestServer::start().await;
    let (alice, bob) = alice_with_dollars_and_bob_offering(&server).await;
    let first = server.limit(&alice, "buy", "1000", "0.1").await;
    let second = server.limit(&alice, "buy", "1001", "0.1").await;
    let bobs = server.account_list("/order/openOrders", &bob, "orders").await;
    let id = |placed: &Value| placed["order"]["orderId"].clone();
    let cancels = json!([
        {"symbol": "ETH/USDC", "orderId": id(&first)},
        {"symbol": "ETH/USDC", "orderId": bobs[0]["orderId"]},
        {"symbol": "ETH/USDC", "orderId": id(&second)},
        {"symbol": "ETH/USDC", "orderId": id(&first)},
    ]);
    let (status, body) = server
        .post_json(
            "/order/batchCancel",
            json!({"chainId": "1", "privateKey": alice.key, "cancels": cancels}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let results = body["results"].as_array().unwrap();
    assert_eq!(results[0]["order"]["status"], "cancelled", "{body}");
    assert_eq!(results[1]["error"]["code"], "ORDER_NOT_FOUND", "Bob's order: {body}");
    assert_eq!(results[2]["order"]["status"], "cancelled", "{body}");
    assert_eq!(
        results[3]["error"]["code"], "ORDER_NOT_OPEN",
        "cancelled just before, in the same batch: {body}"
    );
    assert!(server
        .account_list("/order/openOrders", &alice, "orders")
        .await
        .is_empty());
    assert_eq!(server.account_list("/order/openOrders", &bob, "orders").await.len(), 1);
}

#[tokio::test]
async fn cancel_all_cancels_every_open_order_of_the_account_on_one_pair_or_all() {
    let server = TestServer::start().await;
    let (alice, bob) = alice_with_dollars_and_bob_offering(&server).await;
    server.deposit(&alice, "USDT", "1000").await;
    server.limit(&alice, "buy", "1000", "0.1").await;
    server.limit(&alice, "buy", "1001", "0.2").await;
    let (status, body) = server
        .post_json(
            "/order/addOrder",
            json!({"chainId": "1", "symbol": "ETH/USDT", "type": "limit", "direction": "buy", "price": "900", "amount": "0.1", "privateKey": alice.key}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, body) = server
        .post_json(
            "/order/cancelAll",
            json!({"chainId": "1", "privateKey": alice.key, "symbol": "eth/usdc"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let cancelled = body["orders"].as_array().unwrap();
    assert_eq!(cancelled.len(), 2, "{body}");
    assert!(cancelled
        .iter()
        .all(|order| order["status"] == "cancelled" && order["symbol"] == "ETH/USDC"));
    assert!(cancelled
        .iter()
        .all(|order| order["signature"].as_str().unwrap().len() == 132));
    assert_eq!(server.balance(&alice, "USDC").await["locked"], "0");
    let open = server.account_list("/order/openOrders", &alice, "orders").await;
    assert_eq!(open.len(), 1, "the ETH/USDT order stays");
    let (status, body) = server
        .post_json("/order/cancelAll", json!({"chainId": "1", "privateKey": alice.key}))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["orders"].as_array().unwrap().len(), 1);
    let (status, body) = server
        .post_json("/order/cancelAll", json!({"chainId": "1", "privateKey": alice.key}))
        .await;
    assert_eq!((status, body["orders"].as_array().unwrap().len()), (200, 0));
    assert_eq!(server.account_list("/order/openOrders", &bob, "orders").await.len(), 1);
    let unknown = server
        .post_json(
            "/order/cancelAll",
            json!({"chainId": "1", "privateKey": alice.key, "symbol": "DOGE/USDC"}),
        )
        .await;
    assert_error(&unknown, 404, "UNKNOWN_PAIR", Some("symbol"));
}

#[tokio::test]
async fn amend_replaces_an_open_order_in_one_step_or_leaves_it_as_it_was() {
    let server = TestServer::start().await;
    let (alice, bob) = alice_with_dollars_and_bob_offering(&server).await;
    let (status, placed) = server
        .post_json(
            "/order/addOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "2000", "amount": "1", "clientOrderId": "quote-7", "privateKey": alice.key}),
        )
        .await;
    assert_eq!(status, 200, "{placed}");
    let old_id = placed["order"]["orderId"].clone();
    let amend = |fields: Value| {
        let mut body = json!({"chainId": "1", "privateKey": alice.key, "symbol": "ETH/USDC", "orderId": old_id});
        body.as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        body
    };
    let (status, body) = server
        .post_json("/order/amendOrder", amend(json!({"price": "2010.5"})))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["cancelled"]["orderId"], old_id);
    assert_eq!(body["cancelled"]["status"], "cancelled");
    let new = &body["order"];
    assert_ne!(new["orderId"], old_id);
    assert_eq!(
        (new["price"].as_str(), new["amount"].as_str()),
        (Some("2010.5"), Some("1"))
    );
    assert_eq!(new["clientOrderId"], "quote-7");
    assert_eq!(new["direction"], "buy");
    assert_eq!(server.balance(&alice, "USDC").await["locked"], "2010.5");
    let new_id = new["orderId"].clone();

    // Refused: the old order stays exactly as it was.
    let before = state_of(&server, &alice).await;
    let mut too_big = amend(json!({"amount": "5"}));
    too_big["orderId"] = new_id.clone();
    let refused = server.post_json("/order/amendOrder", too_big).await;
    assert_error(&refused, 422, "INSUFFICIENT_BALANCE", None);
    let mut nothing = amend(json!({}));
    nothing["orderId"] = new_id.clone();
    assert_error(
        &server.post_json("/order/amendOrder", nothing).await,
        400,
        "MISSING_PARAMETER",
        Some("price"),
    );
    let mut off_tick = amend(json!({"price": "2000.001"}));
    off_tick["orderId"] = new_id.clone();
    assert_error(
        &server.post_json("/order/amendOrder", off_tick).await,
        422,
        "INVALID_TICK",
        Some("price"),
    );
    // Someone else's order: not found for this account.
    let bobs = server.account_list("/order/openOrders", &bob, "orders").await;
    let mut foreign = amend(json!({"price": "2050"}));
    foreign["orderId"] = bobs[0]["orderId"].clone();
    assert_error(
        &server.post_json("/order/amendOrder", foreign).await,
        404,
        "ORDER_NOT_FOUND",
        Some("orderId"),
    );
    // The old, cancelled one is no longer open.
    assert_error(
        &server
            .post_json("/order/amendOrder", amend(json!({"price": "1990"})))
            .await,
        409,
        "ORDER_NOT_OPEN",
        Some("orderId"),
    );
    assert_eq!(state_of(&server, &alice).await, before);

    // A filled order cannot be amended either.
    let filled = server.limit(&alice, "buy", "2100", "0.4").await;
    assert_eq!(filled["order"]["status"], "filled", "{filled}");
    let mut late = amend(json!({"price": "2000"}));
    late["orderId"] = filled["order"]["orderId"].clone();
    assert_error(
        &server.post_json("/order/amendOrder", late).await,
        409,
        "ORDER_NOT_OPEN",
        Some("orderId"),
    );
}

#[tokio::test]
async fn the_switch_takes_zero_or_five_seconds_to_a_day_and_nothing_else() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    let set = |timeout: Value| json!({"chainId": "1", "privateKey": alice.key, "timeoutMs": timeout});
    for refused in [
        json!(4_999),
        json!(86_400_001),
        json!("-1"),
        json!(5_000.5),
        json!("soon"),
    ] {
        let answer = server.post_json("/order/cancelAllAfter", set(refused.clone())).await;
        assert_error(&answer, 400, "INVALID_PARAMETER", Some("timeoutMs"));
    }
    // An address with nothing on the chain arms no switch: random keys cannot fill the timer.
    let answer = server.post_json("/order/cancelAllAfter", set(json!(60_000))).await;
    assert_error(&answer, 404, "ACCOUNT_NOT_FOUND", Some("account"));
    server.deposit(&alice, "USDC", "10").await;
    let before = common::signer::now_ms();
    let (status, body) = server.post_json("/order/cancelAllAfter", set(json!(60_000))).await;
    assert_eq!(status, 200, "{body}");
    let trigger = body["triggerAt"].as_u64().unwrap();
    assert!((before + 60_000..before + 70_000).contains(&trigger), "{body}");
    let (status, body) = server.post_json("/order/cancelAllAfter", set(json!("0"))).await;
    assert_eq!((status, body), (200, json!({"triggerAt": null})));
}

#[tokio::test]
async fn the_switch_fires_once_after_a_restart_and_its_cancels_reach_the_orders_stream() {
    let data_dir = tempfile::tempdir().unwrap();
    let mut node = BinaryServer::start(data_dir.path());
    let server = TestServer::at(&node.base_url);
    let (alice, _bob) = alice_with_dollars_and_bob_offering(&server).await;
    server.limit(&alice, "buy", "1000", "0.1").await;
    server.limit(&alice, "buy", "1001", "0.1").await;
    let (status, body) = server
        .post_json(
            "/order/cancelAllAfter",
            json!({"chainId": "1", "privateKey": alice.key, "timeoutMs": 5_000}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let trigger = body["triggerAt"].as_u64().unwrap();
    // The process dies; the switch is in the journal.
    node.kill();
    let node = BinaryServer::start(data_dir.path());
    let server = TestServer::at(&node.base_url);
    let mut stream = StreamClient::connect(&node.base_url).await;
    let subscribed = stream
        .ask(json!({"op": "subscribe", "id": "mine", "channel": "orders", "chainId": "1", "account": alice.address}))
        .await;
    assert_eq!(subscribed["event"], "subscribed", "{subscribed}");
    let snapshot = stream.next().await;
    assert_eq!(snapshot["orders"].as_array().unwrap().len(), 2, "{snapshot}");
    let update = stream
        .next_within(Duration::from_secs(15))
        .await
        .expect("the switch fires within its time and a poll");
    assert_eq!(update["event"], "update", "{update}");
    let cancelled = update["orders"].as_array().unwrap();
    assert_eq!(cancelled.len(), 2, "{update}");
    assert!(cancelled.iter().all(|order| order["status"] == "cancelled"));
    let fired_at = cancelled[0]["updatedAt"].as_u64().unwrap();
    assert!(fired_at >= trigger, "fired at {fired_at}, armed for {trigger}");
    assert!(server
        .account_list("/order/openOrders", &alice, "orders")
        .await
        .is_empty());
    assert_eq!(server.balance(&alice, "USDC").await["locked"], "0");
    // Once: a new order after the firing stays.
    server.limit(&alice, "buy", "1000", "0.1").await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        server.account_list("/order/openOrders", &alice, "orders").await.len(),
        1
    );
    assert!(
        stream.next_within(Duration::from_millis(100)).await.is_some(),
        "the new order's update"
    );
}

#[tokio::test]
async fn orders_over_the_stream_do_what_the_rest_operations_do_in_the_order_sent() {
    let server = TestServer::start().await;
    let (alice, _bob) = alice_with_dollars_and_bob_offering(&server).await;
    let mut stream = StreamClient::connect(&server.base_url).await;
    let order = |id: &str, action: &str, fields: Value| {
        let mut message = json!({"op": "order", "id": id, "action": action, "chainId": "1", "privateKey": alice.key});
        message
            .as_object_mut()
            .unwrap()
            .extend(fields.as_object().unwrap().clone());
        message
    };
    // Sent back to back: answered in the order sent, each after the one before applied.
    stream
        .send(order(
            "a1",
            "add",
            json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "1000", "amount": "0.1"}),
        ))
        .await;
    stream
        .send(order(
            "b1",
            "batchOrders",
            json!({"orders": [buy("1001", "0.1"), buy("1002", "0.1")]}),
        ))
        .await;
    let added = stream.next().await;
    assert_eq!(
        (added["event"].as_str(), added["id"].as_str()),
        (Some("result"), Some("a1")),
        "{added}"
    );
    assert_eq!(added["order"]["status"], "open");
    let batch = stream.next().await;
    assert_eq!(batch["id"], "b1", "{batch}");
    assert_eq!(batch["results"].as_array().unwrap().len(), 2);
    let amended = stream
        .ask(order(
            "m1",
            "amend",
            json!({"symbol": "ETH/USDC", "orderId": added["order"]["orderId"], "price": "999"}),
        ))
        .await;
    assert_eq!(amended["event"], "result", "{amended}");
    assert_eq!(amended["order"]["price"], "999");
    let cancelled = stream
        .ask(order(
            "c1",
            "cancel",
            json!({"symbol": "ETH/USDC", "orderId": amended["order"]["orderId"]}),
        ))
        .await;
    assert_eq!(cancelled["order"]["status"], "cancelled", "{cancelled}");
    let all = stream.ask(order("x1", "cancelAll", json!({}))).await;
    assert_eq!(all["orders"].as_array().unwrap().len(), 2, "{all}");
    assert!(server
        .account_list("/order/openOrders", &alice, "orders")
        .await
        .is_empty());

    // Refusals are error events with the REST error, and the connection stays open.
    let unknown_action = stream.ask(order("e1", "withdraw", json!({}))).await;
    assert_eq!(
        (
            unknown_action["event"].as_str(),
            unknown_action["code"].as_str(),
            unknown_action["field"].as_str()
        ),
        (Some("error"), Some("INVALID_PARAMETER"), Some("action")),
        "{unknown_action}"
    );
    let misspelt = stream.ask(order("e2", "cancelAll", json!({"symbl": "ETH/USDC"}))).await;
    assert_eq!(
        (misspelt["code"].as_str(), misspelt["id"].as_str()),
        (Some("UNKNOWN_PARAMETER"), Some("e2"))
    );
    let poor = stream
        .ask(order(
            "e3",
            "add",
            json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "1000", "amount": "50"}),
        ))
        .await;
    assert_eq!(poor["code"], "INSUFFICIENT_BALANCE", "{poor}");
    let no_action = stream.ask(json!({"op": "order", "id": "e4", "chainId": "1"})).await;
    assert_eq!(
        (no_action["code"].as_str(), no_action["field"].as_str()),
        (Some("MISSING_PARAMETER"), Some("action"))
    );
    let pong = stream.ask(json!({"op": "ping", "id": "still-open"})).await;
    assert_eq!(pong["event"], "pong");
    assert!(server
        .account_list("/order/openOrders", &alice, "orders")
        .await
        .is_empty());
}
