//! Subaccounts against the real server (contract version 5): transfers between an owner's
//! subaccounts (moved once however often they are sent, refused whole when malformed or
//! unfunded), trading in a subaccount (locks and fills land there, never on the owner), the
//! owner's agents (trade there, never transfer), withdrawals (the owner only), the owner's
//! signature for a subaccount, and a restart that brings every subaccount back.

use crate::common;

use common::signer::{eip712, now_ms, Signer};
use common::{assert_error, TestServer, Trader};
use serde_json::{json, Value};

fn transfer_body(owner: &Trader, from: u32, to: u32, symbol: &str, quantity: &str, id: &str) -> Value {
    json!({"chainId": "1", "from": owner.address, "fromSubaccount": from, "toSubaccount": to, "symbol": symbol,
           "quantity": quantity, "clientTransferId": id, "privateKey": owner.key})
}

async fn balance_of(server: &TestServer, owner: &Trader, subaccount: u32, symbol: &str) -> Value {
    let number = subaccount.to_string();
    let (status, body) = server
        .get(
            "/account/assetBalances",
            &[("chainId", "1"), ("account", &owner.address), ("subaccount", &number)],
        )
        .await;
    assert_eq!(status, 200, "{body}");
    common::balance_in(&body, symbol)
}

async fn subaccounts_of(server: &TestServer, owner: &Trader) -> Vec<Value> {
    let (status, body) = server
        .get("/account/subaccounts", &[("chainId", "1"), ("account", &owner.address)])
        .await;
    assert_eq!(status, 200, "{body}");
    body["subaccounts"].as_array().unwrap().clone()
}

#[tokio::test]
async fn a_transfer_moves_funds_once_however_often_it_is_sent() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    server.deposit(&alice, "USDC", "1000").await;
    let body = transfer_body(&alice, 0, 3, "USDC", "250.5", "rebalance-1");
    let (status, first) = server.post_json("/account/transfer", body.clone()).await;
    assert_eq!(status, 200, "{first}");
    let transfer = &first["transfer"];
    assert_eq!(transfer["account"], alice.address);
    assert_eq!(
        (transfer["fromSubaccount"].clone(), transfer["toSubaccount"].clone()),
        (json!(0), json!(3))
    );
    assert_eq!(transfer["from"], alice.address);
    assert_eq!(transfer["quantity"], "250.5");
    let third = transfer["to"].as_str().unwrap().to_string();
    assert_ne!(third, alice.address);

    // Sent again, alone and thirty times at once: the first result, and nothing moves.
    let (status, again) = server.post_json("/account/transfer", body.clone()).await;
    assert_eq!((status, &again), (200, &first));
    let retries = (0..30).map(|_| server.post_json("/account/transfer", body.clone()));
    for (status, answer) in futures_util::future::join_all(retries).await {
        assert_eq!((status, &answer), (200, &first));
    }
    assert_eq!(balance_of(&server, &alice, 0, "USDC").await["available"], "749.5");
    assert_eq!(balance_of(&server, &alice, 3, "USDC").await["available"], "250.5");

    // The same id with other terms.
    let reused = server
        .post_json(
            "/account/transfer",
            transfer_body(&alice, 0, 3, "USDC", "1", "rebalance-1"),
        )
        .await;
    assert_error(&reused, 409, "TRANSFER_ID_REUSED", Some("clientTransferId"));

    // Listed for the owner and for the subaccount; not for another.
    for (subaccount, expected) in [(None, 1), (Some("3"), 1), (Some("4"), 0)] {
        let mut query = vec![("chainId", "1"), ("account", alice.address.as_str())];
        if let Some(number) = subaccount {
            query.push(("subaccount", number));
        }
        let (status, listed) = server.get("/account/transfers", &query).await;
        assert_eq!(status, 200, "{listed}");
        assert_eq!(listed["transfers"].as_array().unwrap().len(), expected, "{listed}");
        if expected == 1 {
            assert_eq!(listed["transfers"][0], first["transfer"]);
        }
    }
    let listed = subaccounts_of(&server, &alice).await;
    assert_eq!(listed.len(), 2, "{listed:?}");
    assert_eq!(
        (listed[0]["subaccount"].clone(), listed[1]["subaccount"].clone()),
        (json!(0), json!(3))
    );
    assert_eq!(listed[1]["address"], third);
}

#[tokio::test]
async fn a_malformed_or_unfunded_transfer_is_refused_and_changes_nothing() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    let bob = Trader::new(0xb0);
    server.deposit(&alice, "USDC", "100").await;
    server
        .post_json("/account/transfer", transfer_body(&alice, 0, 1, "USDC", "40", "seed"))
        .await;
    let before = (
        balance_of(&server, &alice, 0, "USDC").await,
        balance_of(&server, &alice, 1, "USDC").await,
    );
    let mut bob_for_alice = transfer_body(&alice, 1, 0, "USDC", "1", "bob");
    bob_for_alice["privateKey"] = json!(bob.key);
    // (from, to, symbol, quantity, id) and what it gets.
    let cases = [
        ((0, 0, "USDC", "1", "same"), 400, "INVALID_PARAMETER", "toSubaccount"),
        ((0, 1001, "USDC", "1", "far"), 400, "INVALID_PARAMETER", "toSubaccount"),
        ((1, 0, "USDC", "0", "zero"), 400, "INVALID_NUMBER", "quantity"),
        (
            (1, 0, "USDC", "1.0000001", "precise"),
            400,
            "INVALID_NUMBER",
            "quantity",
        ),
        ((1, 0, "USDC", "1", "a b"), 400, "INVALID_PARAMETER", "clientTransferId"),
        ((1, 0, "DOGE", "1", "doge"), 404, "UNKNOWN_ASSET", "symbol"),
        (
            (1, 0, "USDC", "40.000001", "more"),
            422,
            "INSUFFICIENT_BALANCE",
            "quantity",
        ),
        ((2, 0, "USDC", "1", "empty"), 422, "INSUFFICIENT_BALANCE", "quantity"),
    ];
    let cases = cases
        .into_iter()
        .map(|((from, to, symbol, quantity, id), status, code, field)| {
            (
                transfer_body(&alice, from, to, symbol, quantity, id),
                status,
                code,
                Some(field),
            )
        })
        .chain([(bob_for_alice, 403, "ACCOUNT_MISMATCH", Some("from"))]);
    for (body, status, code, field) in cases {
        let answer = server.post_json("/account/transfer", body.clone()).await;
        assert_error(&answer, status, code, field);
    }
    let mut negative = transfer_body(&alice, 1, 0, "USDC", "1", "negative");
    negative["fromSubaccount"] = json!(-1);
    assert_error(
        &server.post_json("/account/transfer", negative).await,
        400,
        "INVALID_PARAMETER",
        Some("fromSubaccount"),
    );
    let after = (
        balance_of(&server, &alice, 0, "USDC").await,
        balance_of(&server, &alice, 1, "USDC").await,
    );
    assert_eq!(after, before);
    // A refused id is not spent: the same id with good terms moves the funds.
    let (status, body) = server
        .post_json("/account/transfer", transfer_body(&alice, 1, 0, "USDC", "40", "more"))
        .await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn an_order_in_a_subaccount_locks_and_fills_there_and_never_on_the_owner() {
    let server = TestServer::start().await;
    let (alice, bob) = common::alice_with_dollars_and_bob_offering(&server).await;
    server
        .post_json(
            "/account/transfer",
            transfer_body(&alice, 0, 7, "USDC", "2500", "strategy-7"),
        )
        .await;
    let owner_before = server.balance(&alice, "USDC").await;
    let (status, placed) = server
        .post_json(
            "/order/addOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "2100",
                   "amount": "1", "privateKey": alice.key, "subaccount": 7}),
        )
        .await;
    assert_eq!(status, 200, "{placed}");
    let seventh = placed["order"]["account"].as_str().unwrap().to_string();
    assert_ne!(seventh, alice.address);
    assert_eq!(placed["trades"].as_array().unwrap().len(), 1, "it takes Bob's offer");
    assert_eq!(
        server.balance(&alice, "USDC").await,
        owner_before,
        "the owner's funds never move"
    );
    assert_eq!(server.balance(&alice, "ETH").await["total"], "0");
    let in_seventh = balance_of(&server, &alice, 7, "ETH").await;
    assert_ne!(in_seventh["total"], "0", "the fill lands in the subaccount");
    assert_eq!(balance_of(&server, &alice, 7, "USDC").await["total"], "400");

    // A resting order: listed in the subaccount, not the owner; cancelled there.
    let (status, resting) = server
        .post_json(
            "/order/addOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100",
                   "amount": "1", "privateKey": alice.key, "subaccount": "7", "clientOrderId": "s7-1"}),
        )
        .await;
    assert_eq!(status, 200, "{resting}");
    assert_eq!(balance_of(&server, &alice, 7, "USDC").await["locked"], "100");
    let (_, open) = server
        .get(
            "/order/openOrders",
            &[("chainId", "1"), ("account", &alice.address), ("subaccount", "7")],
        )
        .await;
    assert_eq!(open["orders"].as_array().unwrap().len(), 1, "{open}");
    assert!(server
        .account_list("/order/openOrders", &alice, "orders")
        .await
        .is_empty());
    let (_, position) = server
        .get(
            "/order/openPositions",
            &[
                ("chainId", "1"),
                ("account", &alice.address),
                ("subaccount", "7"),
                ("pair", "ETH/USDC"),
            ],
        )
        .await;
    // Positions leave fees out: the subaccount bought 1 ETH (and holds it less the fee).
    assert_eq!(position["position"]["netAmount"], "1", "{position}");
    assert_eq!(position["position"]["base"], in_seventh, "{position}");
    // The owner's key without the subaccount does not reach it.
    let wrong = server
        .post_json(
            "/order/cancelOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": resting["order"]["orderId"], "privateKey": alice.key}),
        )
        .await;
    assert_error(&wrong, 404, "ORDER_NOT_FOUND", Some("orderId"));
    let (status, body) = server
        .post_json(
            "/order/cancelAll",
            json!({"chainId": "1", "privateKey": alice.key, "subaccount": 7}),
        )
        .await;
    assert_eq!((status, body["orders"].as_array().unwrap().len()), (200, 1), "{body}");
    drop(bob);
}

#[tokio::test]
async fn agents_trade_in_a_subaccount_and_nobody_but_the_owner_moves_its_funds() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    let bot = Trader::new(0xb7);
    let mallory = Trader::new(0x3e);
    server.deposit(&alice, "USDC", "1000").await;
    server.deposit(&mallory, "USDC", "1").await;
    server
        .post_json("/account/transfer", transfer_body(&alice, 0, 2, "USDC", "500", "bots"))
        .await;
    let order_by = |trader: &Trader| {
        json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100",
               "amount": "1", "privateKey": trader.key, "account": alice.address, "subaccount": 2})
    };
    // Not approved: refused.
    assert_error(
        &server.post_json("/order/addOrder", order_by(&bot)).await,
        403,
        "AGENT_NOT_ALLOWED",
        Some("account"),
    );
    let (status, body) = server
        .post_json(
            "/account/approveAgent",
            json!({"chainId": "1", "privateKey": alice.key, "agent": bot.address, "name": "strategy-2"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let (status, placed) = server.post_json("/order/addOrder", order_by(&bot)).await;
    assert_eq!(status, 200, "{placed}");
    assert_eq!(balance_of(&server, &alice, 2, "USDC").await["locked"], "100");
    // Mallory, never approved, and her own subaccount 2 is another address.
    assert_error(
        &server.post_json("/order/addOrder", order_by(&mallory)).await,
        403,
        "AGENT_NOT_ALLOWED",
        Some("account"),
    );
    // The agent never transfers, whichever way it asks.
    let before = balance_of(&server, &alice, 2, "USDC").await;
    let mut by_agent = transfer_body(&alice, 2, 0, "USDC", "1", "agent");
    by_agent["privateKey"] = json!(bot.key);
    by_agent["account"] = json!(alice.address);
    assert_error(
        &server.post_json("/account/transfer", by_agent).await,
        403,
        "AGENT_NOT_ALLOWED",
        Some("account"),
    );
    // Withdrawals leave from the owner only: a subaccount is no parameter of theirs.
    let withdrawal = json!({"chainId": "1", "from": alice.address, "symbol": "USDC", "quantity": "1",
                            "privateKey": alice.key, "subaccount": 2});
    assert_error(
        &server.post_json("/portfolio/withdraw", withdrawal).await,
        400,
        "UNKNOWN_PARAMETER",
        Some("subaccount"),
    );
    assert_eq!(balance_of(&server, &alice, 2, "USDC").await, before);
}

#[tokio::test]
async fn the_owner_signs_for_its_subaccount_and_a_transfer_with_its_own_signature() {
    let server = TestServer::start().await;
    let carol = Signer::new(0xc3);
    let dave = Signer::new(0xd4);
    server.deposit(&carol.trader, "USDC", "1000").await;
    let eip712 = eip712(&server).await;
    assert_eq!(eip712["primaryTypes"]["transfer"], "Transfer");
    let expiry = now_ms() + 60_000;
    let message = json!({"account": carol.trader.address, "fromSubaccount": "0", "toSubaccount": "5",
                         "symbol": "USDC", "quantity": "300", "clientTransferId": "signed-1", "nonce": "1",
                         "expiry": expiry.to_string()});
    let body = |signature: &str| {
        json!({"chainId": "1", "from": carol.trader.address, "fromSubaccount": 0, "toSubaccount": 5,
               "symbol": "USDC", "quantity": "300", "clientTransferId": "signed-1", "account": carol.trader.address,
               "nonce": "1", "expiry": expiry, "signature": signature})
    };
    let (forged, _) = dave.sign(&eip712, "Transfer", message.clone());
    assert_error(
        &server.post_json("/account/transfer", body(&forged)).await,
        401,
        "INVALID_SIGNATURE",
        Some("signature"),
    );
    let (signature, _) = carol.sign(&eip712, "Transfer", message);
    let (status, moved) = server.post_json("/account/transfer", body(&signature)).await;
    assert_eq!(status, 200, "{moved}");
    let fifth = moved["transfer"]["to"].as_str().unwrap().to_string();
    // The same signed request again: the first result, its nonce not claimed twice.
    assert_eq!(
        server.post_json("/account/transfer", body(&signature)).await,
        (200, moved.clone())
    );

    // Carol signs an order whose account is her fifth subaccount; Dave cannot.
    let order = |nonce: &str| {
        json!({"account": fifth, "symbol": "ETH/USDC", "orderType": "limit", "direction": "buy",
               "timeInForce": "GTC", "postOnly": false, "price": "100", "amount": "1", "clientOrderId": "",
               "nonce": nonce, "expiry": expiry.to_string(), "triggerPrice": "", "triggerCondition": "",
               "ocoGroup": "", "expiresAt": "0"})
    };
    let request = |nonce: &str, signature: &str| {
        json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100",
               "amount": "1", "account": fifth, "nonce": nonce, "expiry": expiry, "signature": signature})
    };
    let (by_dave, _) = dave.sign(&eip712, "Order", order("2"));
    assert_error(
        &server.post_json("/order/addOrder", request("2", &by_dave)).await,
        403,
        "AGENT_NOT_ALLOWED",
        Some("account"),
    );
    let (by_carol, digest) = carol.sign(&eip712, "Order", order("3"));
    let (status, placed) = server.post_json("/order/addOrder", request("3", &by_carol)).await;
    assert_eq!(status, 200, "{placed}");
    assert_eq!(placed["order"]["orderId"], digest);
    assert_eq!(placed["order"]["account"], fifth);
    // Funds leave from the owner only: Carol's signature of a withdrawal from her subaccount's
    // address is refused (she may trade for it, never move its funds out).
    let withdrawal = json!({"account": fifth, "symbol": "USDC", "quantity": "1", "nonce": "5",
                            "expiry": expiry.to_string()});
    let (signed_out, _) = carol.sign(&eip712, "Withdraw", withdrawal);
    let refused = server
        .post_json(
            "/portfolio/withdraw",
            json!({"chainId": "1", "from": fifth, "symbol": "USDC", "quantity": "1", "account": fifth,
                   "nonce": "5", "expiry": expiry, "signature": signed_out}),
        )
        .await;
    assert_error(&refused, 403, "AGENT_NOT_ALLOWED", Some("account"));
    // A signed request names the subaccount by its address, never by number.
    let mut by_number = request("4", &by_carol);
    by_number["subaccount"] = json!(5);
    assert_error(
        &server.post_json("/order/addOrder", by_number).await,
        400,
        "INVALID_PARAMETER",
        Some("subaccount"),
    );
}

#[tokio::test]
async fn a_restart_brings_back_every_subaccount_balance_order_and_transfer() {
    let folder = tempfile::tempdir().unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    // Snapshots every 5 commands: the restart restores one and replays the rest.
    let config_path = common::snapshot_config(folder.path(), 5);
    let config = || dexd_venue::config::Config::load(&config_path).unwrap();
    let alice = Trader::new(0xa1);
    let read = |server: &TestServer| {
        let base_url = server.base_url.clone();
        let alice = alice.address.clone();
        async move {
            let http = reqwest::Client::new();
            let mut state = Vec::new();
            for subaccount in ["0", "1", "2"] {
                let query = [
                    ("chainId", "1"),
                    ("account", alice.as_str()),
                    ("subaccount", subaccount),
                ];
                for path in ["/account/assetBalances", "/order/openOrders", "/account/transfers"] {
                    state.push(common::get_ok(&http, &base_url, path, &query).await);
                }
            }
            let owner = [("chainId", "1"), ("account", alice.as_str())];
            state.push(common::get_ok(&http, &base_url, "/account/subaccounts", &owner).await);
            state
        }
    };
    let before = {
        let server = TestServer::start_in(config(), data_dir.path()).await;
        server.deposit(&alice, "USDC", "1000").await;
        server.deposit(&alice, "ETH", "3").await;
        for (from, to, symbol, quantity, id) in [
            (0, 1, "USDC", "400", "a"),
            (0, 2, "ETH", "2", "b"),
            (1, 2, "USDC", "50", "c"),
            (2, 0, "ETH", "0.5", "d"),
        ] {
            let (status, body) = server
                .post_json(
                    "/account/transfer",
                    transfer_body(&alice, from, to, symbol, quantity, id),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
        for (subaccount, direction, price) in [(1, "buy", "100"), (2, "sell", "3000")] {
            let (status, body) = server
                .post_json(
                    "/order/addOrder",
                    json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": direction,
                           "price": price, "amount": "0.5", "privateKey": alice.key, "subaccount": subaccount}),
                )
                .await;
            assert_eq!(status, 200, "{body}");
        }
        // Time for a snapshot past the transfers.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        let state = read(&server).await;
        server.stop().await;
        state
    };
    assert!(common::snapshot_files(data_dir.path()) > 0, "a snapshot was written");
    let server = TestServer::start_in(config(), data_dir.path()).await;
    assert_eq!(read(&server).await, before);
    // The remembered ids came back: a retry still moves nothing.
    let (status, again) = server
        .post_json("/account/transfer", transfer_body(&alice, 0, 1, "USDC", "400", "a"))
        .await;
    assert_eq!(status, 200, "{again}");
    assert_eq!(again["transfer"]["transferId"], "1");
    assert_eq!(balance_of(&server, &alice, 0, "USDC").await["total"], "600");
}

#[tokio::test]
async fn the_account_channels_of_a_subaccount_carry_its_changes_and_name_it() {
    use common::stream_client::StreamClient;
    use std::time::Duration;
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    server.deposit(&alice, "USDC", "1000").await;
    let mut client = StreamClient::connect(&server.base_url).await;
    for channel in ["orders", "balances"] {
        client
            .send(
                json!({"op": "subscribe", "id": channel, "channel": channel, "chainId": "1",
                         "account": alice.address, "subaccount": 4}),
            )
            .await;
    }
    let mut snapshots = 0;
    while snapshots < 2 {
        let message = client.next_within(Duration::from_secs(5)).await.expect("a message");
        if message["event"] == "snapshot" {
            assert_eq!(
                (message["account"].clone(), message["subaccount"].clone()),
                (json!(alice.address), json!(4))
            );
            snapshots += 1;
        }
    }
    server
        .post_json("/account/transfer", transfer_body(&alice, 0, 4, "USDC", "10", "to-4"))
        .await;
    // The owner's own order is not the subaccount's: its update never reaches this stream.
    server.limit(&alice, "buy", "100", "1").await;
    let (status, placed) = server
        .post_json(
            "/order/addOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "5",
                   "amount": "1", "privateKey": alice.key, "subaccount": 4}),
        )
        .await;
    assert_eq!(status, 200, "{placed}");
    let mut seen_balance = false;
    let mut seen_order = false;
    while let Some(message) = client.next_within(Duration::from_millis(1_500)).await {
        assert_eq!(
            (message["account"].clone(), message["subaccount"].clone()),
            (json!(alice.address), json!(4)),
            "{message}"
        );
        match message["channel"].as_str().unwrap() {
            "balances" => {
                seen_balance |= message["balances"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .any(|balance| balance["symbol"] == "USDC" && balance["total"] == "10");
            }
            "orders" => {
                for order in message["orders"].as_array().unwrap() {
                    assert_eq!(
                        order["orderId"], placed["order"]["orderId"],
                        "only the subaccount's orders"
                    );
                    seen_order = true;
                }
            }
            other => panic!("{other}"),
        }
    }
    assert!(seen_balance && seen_order);
}
