//! Every operation over real HTTP: both body encodings, the aliases, and for each operation the
//! contract's errors, each checked for status, code and field, and for leaving state unchanged.

use crate::common;

use common::{assert_error, TestServer, Trader};
use serde_json::{json, Value};

/// A snapshot of everything a failed request must not change.
async fn state(server: &TestServer, traders: &[&Trader]) -> Vec<Value> {
    let mut snapshot = Vec::new();
    for trader in traders {
        snapshot.push(
            server
                .get(
                    "/account/assetBalances",
                    &[("chainId", "1"), ("account", &trader.address)],
                )
                .await
                .1["balances"]
                .clone(),
        );
        for path in ["/order/openOrders", "/order/filledOrders", "/order/cancelledOrders"] {
            snapshot.push(
                server
                    .get(path, &[("chainId", "1"), ("account", &trader.address)])
                    .await
                    .1["orders"]
                    .clone(),
            );
        }
        snapshot.push(
            server
                .get(
                    "/portfolio/depositHistories",
                    &[("chainId", "1"), ("account", &trader.address)],
                )
                .await
                .1
                .clone(),
        );
    }
    for path in ["/order/buyOrderbooks", "/order/sellOrderbooks"] {
        let mut book = server.get(path, &[("chainId", "1"), ("pair", "ETH/USDC")]).await.1;
        book["timestamp"] = Value::Null;
        snapshot.push(book);
    }
    snapshot.push(
        server
            .get("/order/tradeHistories", &[("chainId", "1"), ("pair", "ETH/USDC")])
            .await
            .1,
    );
    snapshot
}

fn order(trader: &Trader, extra: Value) -> Value {
    let mut body = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "2000", "amount": "1", "privateKey": trader.key});
    for (name, value) in extra.as_object().unwrap() {
        if value.is_null() {
            body.as_object_mut().unwrap().remove(name);
        } else {
            body[name] = value.clone();
        }
    }
    body
}

#[tokio::test]
async fn add_order_refuses_bad_requests_with_the_contract_errors_and_changes_nothing() {
    let server = TestServer::start().await;
    let (alice, bob) = common::alice_with_dollars_and_bob_offering(&server).await;
    let mut tagged = order(&alice, json!({"clientOrderId": "bot-42"}));
    tagged["price"] = json!("1000");
    assert_eq!(server.post_json("/order/addOrder", tagged.clone()).await.0, 200);
    let before = state(&server, &[&alice, &bob]).await;
    let cases: Vec<(Value, u16, &str, Option<&str>)> = vec![
        (
            order(&alice, json!({"amount": "10"})),
            422,
            "INSUFFICIENT_BALANCE",
            None,
        ),
        (
            order(&alice, json!({"price": "2000.001"})),
            422,
            "INVALID_TICK",
            Some("price"),
        ),
        (
            order(&alice, json!({"amount": "0.00001"})),
            422,
            "INVALID_STEP",
            Some("amount"),
        ),
        (
            order(&alice, json!({"amount": "0.0000000000000000001"})),
            400,
            "INVALID_NUMBER",
            Some("amount"),
        ),
        (
            order(&alice, json!({"price": 2000})),
            400,
            "INVALID_NUMBER",
            Some("price"),
        ),
        (
            order(&alice, json!({"price": "1e3"})),
            400,
            "INVALID_NUMBER",
            Some("price"),
        ),
        (
            order(&alice, json!({"price": "-5"})),
            400,
            "INVALID_NUMBER",
            Some("price"),
        ),
        (
            order(&alice, json!({"amount": "0"})),
            400,
            "INVALID_NUMBER",
            Some("amount"),
        ),
        (
            order(&alice, json!({"amount": "0.0001"})),
            422,
            "BELOW_MIN_AMOUNT",
            Some("amount"),
        ),
        (
            order(&alice, json!({"price": "0.01", "amount": "1"})),
            422,
            "BELOW_MIN_NOTIONAL",
            None,
        ),
        (
            order(&alice, json!({"price": null})),
            400,
            "MISSING_PARAMETER",
            Some("price"),
        ),
        (
            order(&alice, json!({"type": "market"})),
            400,
            "INVALID_PARAMETER",
            Some("price"),
        ),
        (
            order(&alice, json!({"type": "stop"})),
            400,
            "INVALID_PARAMETER",
            Some("type"),
        ),
        (
            order(&alice, json!({"direction": null})),
            400,
            "MISSING_PARAMETER",
            Some("direction"),
        ),
        (
            order(&alice, json!({"postonly": true})),
            400,
            "UNKNOWN_PARAMETER",
            Some("postonly"),
        ),
        (
            order(&alice, json!({"privateKey": null})),
            401,
            "UNAUTHENTICATED",
            Some("privateKey"),
        ),
        (
            order(&alice, json!({"privateKey": "0x1234"})),
            401,
            "INVALID_PRIVATE_KEY",
            Some("privateKey"),
        ),
        (
            order(&alice, json!({"chainId": "999"})),
            404,
            "UNKNOWN_CHAIN",
            Some("chainId"),
        ),
        (
            order(&alice, json!({"symbol": "DOGE/USDC"})),
            404,
            "UNKNOWN_PAIR",
            Some("symbol"),
        ),
        (
            order(&alice, json!({"symbol": "ETHUSDC"})),
            400,
            "INVALID_PARAMETER",
            Some("symbol"),
        ),
        (
            order(&alice, json!({"price": "2100", "postOnly": true})),
            422,
            "POST_ONLY_WOULD_TAKE",
            None,
        ),
        (
            order(&alice, json!({"price": "2100", "amount": "1.2", "timeInForce": "FOK"})),
            422,
            "FOK_NOT_FILLABLE",
            None,
        ),
        (
            order(
                &bob,
                json!({"symbol": "WBTC/USDC", "type": "market", "direction": "sell", "price": null}),
            ),
            422,
            "NO_LIQUIDITY",
            None,
        ),
        (
            order(&alice, json!({"clientOrderId": "bot-42"})),
            409,
            "DUPLICATE_CLIENT_ORDER_ID",
            Some("clientOrderId"),
        ),
        (
            order(&alice, json!({"clientOrderId": "has space"})),
            400,
            "INVALID_PARAMETER",
            Some("clientOrderId"),
        ),
        (
            order(&alice, json!({"postOnly": "yes"})),
            400,
            "INVALID_PARAMETER",
            Some("postOnly"),
        ),
        (
            order(&alice, json!({"amount": "340282366920938463463374607431768211456"})),
            400,
            "INVALID_NUMBER",
            Some("amount"),
        ),
        (
            order(&alice, json!({"amount": "100000000000000000"})),
            422,
            "AMOUNT_TOO_LARGE",
            Some("amount"),
        ),
    ];
    for (body, status, code, field) in cases {
        let answer = server.post_json("/order/addOrder", body.clone()).await;
        assert_error(&answer, status, code, field);
        assert!(
            !answer.1.to_string().contains(&alice.key[2..]),
            "an error never echoes the key"
        );
    }
    // Bodies that are not a JSON object of the limited size: the media type, the JSON, the size.
    #[rustfmt::skip]
    let raw_bodies = [
        ("text/plain", b"x".to_vec(), 415, "UNSUPPORTED_MEDIA_TYPE"),
        ("application/json", b"{\"chainId\":".to_vec(), 400, "MALFORMED_BODY"),
        ("application/json", b"[1,2]".to_vec(), 400, "MALFORMED_BODY"),
        ("application/json", vec![b' '; 70_000], 413, "PAYLOAD_TOO_LARGE"),
    ];
    for (content_type, body, status, code) in raw_bodies {
        let answer = server.post_raw("/order/addOrder", content_type, body).await;
        assert_error(&answer, status, code, None);
    }
    assert_error(
        &server
            .post_form("/order/addOrder", &[("chainId", "1"), ("chainId", "2")])
            .await,
        400,
        "INVALID_PARAMETER",
        Some("chainId"),
    );
    assert_eq!(
        state(&server, &[&alice, &bob]).await,
        before,
        "refused requests changed nothing"
    );
}

#[tokio::test]
async fn orders_are_placed_through_both_encodings_and_both_paths() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    server.deposit(&alice, "USDC", "10000").await;
    let (status, json_answer) = server
        .post_json(
            "/order/addOrder",
            order(&alice, json!({"postOnly": "false", "chainId": 1})),
        )
        .await;
    assert_eq!(status, 200, "{json_answer}");
    let (status, form_answer) = server
        .post_form(
            "/order/add",
            &[
                ("chainId", "1"),
                ("symbol", "eth/usdc"),
                ("type", "LIMIT"),
                ("direction", "buy"),
                ("price", "2000.50"),
                ("amount", "1.5"),
                ("timeInForce", "gtc"),
                ("postOnly", "true"),
                ("clientOrderId", "abc:1"),
                ("privateKey", &alice.key),
            ],
        )
        .await;
    assert_eq!(status, 200, "{form_answer}");
    let placed = &form_answer["order"];
    assert_eq!(placed["symbol"], "ETH/USDC");
    assert_eq!(placed["price"], "2000.5");
    assert_eq!(placed["amount"], "1.5");
    assert_eq!(placed["postOnly"], true);
    assert_eq!(placed["clientOrderId"], "abc:1");
    assert_eq!(placed["account"], alice.address);
    assert_eq!(placed["chainId"], "1");
    assert_eq!(server.balance(&alice, "USDC").await["locked"], "5000.75");
}

#[tokio::test]
async fn cancel_order_distinguishes_unknown_foreign_and_closed_orders() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    let bob = Trader::new(0xb0);
    server.deposit(&alice, "USDC", "10000").await;
    let placed = server.limit(&alice, "buy", "2000", "1").await;
    let order_id = placed["order"]["orderId"].as_str().unwrap();
    let cancel = |key: &str, order_id: &str, symbol: &str| json!({"chainId": "1", "symbol": symbol, "orderId": order_id, "privateKey": key});
    let unknown = format!("0x{}", "ab".repeat(32));
    // An unknown id, another account's order, the right id on the wrong pair, a malformed id.
    let refusals = [
        (&alice.key, unknown.as_str(), "ETH/USDC", 404, "ORDER_NOT_FOUND"),
        (&bob.key, order_id, "ETH/USDC", 404, "ORDER_NOT_FOUND"),
        (&alice.key, order_id, "WBTC/USDC", 404, "ORDER_NOT_FOUND"),
        (&alice.key, "0x12", "ETH/USDC", 400, "INVALID_PARAMETER"),
    ];
    for (key, id, symbol, status, code) in refusals {
        let answer = server.post_json("/order/cancelOrder", cancel(key, id, symbol)).await;
        assert_error(&answer, status, code, Some("orderId"));
    }
    let (status, _) = server
        .post_json("/order/cancelOrder", cancel(&alice.key, order_id, "ETH/USDC"))
        .await;
    assert_eq!(status, 200);
    assert_error(
        &server
            .post_json("/order/cancelOrder", cancel(&alice.key, order_id, "ETH/USDC"))
            .await,
        409,
        "ORDER_NOT_OPEN",
        Some("orderId"),
    );
    assert_eq!(server.balance(&alice, "USDC").await["locked"], "0");
}

#[tokio::test]
async fn transfers_check_the_account_the_asset_and_the_balance() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    let bob = Trader::new(0xb0);
    server.deposit(&alice, "usdc", "100.5").await;
    let body = |from: &str, symbol: &str, quantity: &str| json!({"chainId": "1", "from": from, "symbol": symbol, "quantity": quantity, "privateKey": alice.key});
    // One row a refusal: the path, the request, and the status, code and field it is refused with.
    #[rustfmt::skip]
    let refused = [
        ("/portfolio/deposit", body(&bob.address, "USDC", "1"), 403, "ACCOUNT_MISMATCH", Some("from")),
        ("/portfolio/deposit", body(&alice.address, "DOGE", "1"), 404, "UNKNOWN_ASSET", Some("symbol")),
        ("/portfolio/deposit", body(&alice.address, "USDC", "0.0000001"), 400, "INVALID_NUMBER", Some("quantity")),
        ("/portfolio/deposit", body(&alice.address, "USDC", "0"), 400, "INVALID_NUMBER", Some("quantity")),
        ("/portfolio/withdraw", body(&alice.address, "USDC", "100.6"), 422, "INSUFFICIENT_BALANCE", None),
    ];
    for (path, request, status, code, field) in refused {
        assert_error(&server.post_json(path, request).await, status, code, field);
    }
    let lower = alice.address.to_lowercase();
    let (status, answer) = server
        .post_form(
            "/portfolio/withdraw",
            &[
                ("chainId", "1"),
                ("from", &lower),
                ("symbol", "USDC"),
                ("quantity", "0.5"),
                ("privateKey", &alice.key),
            ],
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["withdrawal"]["quantity"], "0.5");
    assert_eq!(answer["withdrawal"]["account"], alice.address);
    assert_eq!(
        answer["balance"],
        json!({"symbol": "USDC", "total": "100", "available": "100", "locked": "0"})
    );
    assert!(answer["withdrawal"]["id"].as_str().unwrap().len() == 66);
}

#[tokio::test]
async fn reads_refuse_bad_parameters() {
    let server = TestServer::start().await;
    let account = Trader::new(0xa1).address;
    // Flipping the case of one letter of a checksummed address breaks its checksum.
    let letter = account
        .char_indices()
        .skip(2)
        .find(|(_, c)| c.is_ascii_alphabetic())
        .unwrap()
        .0;
    let flipped = account[letter..letter + 1]
        .chars()
        .map(|c| {
            if c.is_ascii_uppercase() {
                c.to_ascii_lowercase()
            } else {
                c.to_ascii_uppercase()
            }
        })
        .collect::<String>();
    let bad_checksum = format!("{}{}{}", &account[..letter], flipped, &account[letter + 1..]);
    type Case<'a> = (&'a str, Vec<(&'a str, &'a str)>, u16, &'a str, Option<&'a str>);
    let cases: Vec<Case> = vec![
        (
            "/order/openOrders",
            vec![("chainId", "1"), ("account", "0x12")],
            400,
            "INVALID_PARAMETER",
            Some("account"),
        ),
        (
            "/order/filledOrders",
            vec![("chainId", "1"), ("account", &account), ("limit", "0")],
            400,
            "INVALID_PARAMETER",
            Some("limit"),
        ),
        (
            "/order/cancelledOrders",
            vec![("chainId", "1"), ("account", &account), ("cursor", "zz")],
            400,
            "INVALID_PARAMETER",
            Some("cursor"),
        ),
        (
            "/order/openOrders",
            vec![("chainId", "1"), ("account", &account), ("symbol", "X/Y")],
            404,
            "UNKNOWN_PAIR",
            Some("symbol"),
        ),
        (
            "/order/buyOrderbooks",
            vec![("chainId", "1"), ("pair", "ETH/USDC"), ("depth", "1001")],
            400,
            "INVALID_PARAMETER",
            Some("depth"),
        ),
        (
            "/order/sellOrderbooks",
            vec![("chainId", "1")],
            400,
            "MISSING_PARAMETER",
            Some("pair"),
        ),
        (
            "/order/tradesOHCL",
            vec![("chainId", "1"), ("pair", "ETH/USDC"), ("interval", "2m")],
            400,
            "INVALID_PARAMETER",
            Some("interval"),
        ),
        (
            "/order/tradeOHCL",
            vec![("chainId", "1"), ("pair", "ETH/USDC"), ("limit", "1001")],
            400,
            "INVALID_PARAMETER",
            Some("limit"),
        ),
        (
            "/order/tradeHistories",
            vec![("chainId", "1"), ("pair", "ETH/DOGE")],
            404,
            "UNKNOWN_PAIR",
            Some("pair"),
        ),
        (
            "/order/openPositions",
            vec![("chainId", "1"), ("pair", "ETH/USDC")],
            400,
            "MISSING_PARAMETER",
            Some("account"),
        ),
        (
            "/portfolio/depositHistories",
            vec![("account", &account)],
            400,
            "MISSING_PARAMETER",
            Some("chainId"),
        ),
        (
            "/portfolio/withdrawHistories",
            vec![("chainId", "x1"), ("account", &account)],
            400,
            "INVALID_PARAMETER",
            Some("chainId"),
        ),
        (
            "/account/assetsInfo",
            vec![("chainId", "5")],
            404,
            "UNKNOWN_CHAIN",
            Some("chainId"),
        ),
        (
            "/account/assetBalances",
            vec![("chainId", "1"), ("account", &bad_checksum)],
            400,
            "INVALID_PARAMETER",
            Some("account"),
        ),
        (
            "/account/assetPairs",
            vec![("chainId", "1"), ("extra", "1")],
            400,
            "UNKNOWN_PARAMETER",
            Some("extra"),
        ),
        (
            "/account/tradableAmounts",
            vec![("chainId", "1")],
            400,
            "MISSING_PARAMETER",
            Some("account"),
        ),
        (
            "/order/orderDetail",
            vec![("chainId", "1"), ("orderId", "0x00")],
            400,
            "INVALID_PARAMETER",
            Some("orderId"),
        ),
    ];
    for (path, query, status, code, field) in cases {
        let answer = server.get(path, &query).await;
        assert_error(&answer, status, code, field);
    }
    // A startTime after the endTime is an empty range, not an error (every pair of times the
    // OpenAPI document allows is answered).
    let (status, body) = server
        .get(
            "/order/tradeHistories",
            &[
                ("chainId", "1"),
                ("pair", "ETH/USDC"),
                ("startTime", "5"),
                ("endTime", "4"),
            ],
        )
        .await;
    assert_eq!(
        (status, body["trades"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{body}"
    );
    let unknown_order = format!("0x{}", "cd".repeat(32));
    assert_error(
        &server
            .get("/order/orderDetail", &[("chainId", "1"), ("orderId", &unknown_order)])
            .await,
        404,
        "ORDER_NOT_FOUND",
        Some("orderId"),
    );
    assert_error(&server.get("/no/such/path", &[]).await, 404, "NOT_FOUND", None);
    let answer = server.post_json("/account/assetsInfo", json!({})).await;
    assert_error(&answer, 405, "METHOD_NOT_ALLOWED", None);
    assert_error(
        &server.get("/order/addOrder", &[]).await,
        405,
        "METHOD_NOT_ALLOWED",
        None,
    );
}

#[tokio::test]
async fn chain_reads_describe_assets_pairs_and_zero_balances() {
    let server = TestServer::start().await;
    let (status, assets) = server.get("/account/assetsInfo", &[("chainId", "42161")]).await;
    assert_eq!(status, 200);
    let usdc = assets["assets"]
        .as_array()
        .unwrap()
        .iter()
        .find(|asset| asset["symbol"] == "USDC")
        .unwrap();
    assert_eq!(usdc["address"], "0xaf88d065e77c8cC2239327C5EDb3A432268e5831");
    assert_eq!(usdc["decimals"], 6);
    assert_eq!(usdc["native"], false);
    assert_eq!(
        assets["assets"][0],
        json!({"symbol": "ETH", "name": "Ether", "decimals": 18, "address": null, "native": true})
    );
    let (_, pairs) = server.get("/account/assetPairs", &[("chainId", "11155111")]).await;
    assert_eq!(pairs["pairs"][0]["symbol"], "ETH/USDC");
    assert_eq!(pairs["pairs"][0]["tickSize"], "0.01");
    assert_eq!(pairs["pairs"][0]["lastPrice"], Value::Null);
    let account = Trader::new(7).address;
    let (_, balances) = server
        .get("/account/assetBalances", &[("chainId", "1"), ("account", &account)])
        .await;
    assert_eq!(balances["balances"].as_array().unwrap().len(), 5);
    assert!(balances["balances"]
        .as_array()
        .unwrap()
        .iter()
        .all(|balance| balance["total"] == "0"));
    let (status, health) = server.get("/health", &[]).await;
    assert_eq!((status, health), (200, json!({"status": "ok"})));
}

#[tokio::test]
async fn histories_page_newest_first_with_cursors() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    for quantity in ["1", "2", "3", "4", "5"] {
        server.deposit(&alice, "USDC", quantity).await;
    }
    let mut seen = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query = vec![("chainId", "1"), ("account", alice.address.as_str()), ("limit", "2")];
        if let Some(cursor) = &cursor {
            query.push(("cursor", cursor.as_str()));
        }
        let (status, page) = server.get("/portfolio/depositHistories", &query).await;
        assert_eq!(status, 200, "{page}");
        for deposit in page["deposits"].as_array().unwrap() {
            seen.push(deposit["quantity"].as_str().unwrap().to_string());
        }
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => break,
        }
    }
    assert_eq!(seen, ["5", "4", "3", "2", "1"]);
}
