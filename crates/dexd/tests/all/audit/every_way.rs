//! The scenario behind the public journal's tests: every kind of account command a venue
//! journals, each with a key and with the client's own signature (orders and batches, equal
//! orders in one, cancels, amends, the switch, agents, subaccounts and transfers, TWAPs,
//! withdrawals), so that the auditor checks each kind. It asserts only that each request is
//! taken; what the journal holds is the tests' in `journal.rs`.

use crate::common;

use common::signer::{eip712, now_ms, Signer};
use common::{TestServer, Trader};
use serde_json::{json, Value};

use super::journal::post_ok;

/// Every kind of account command, with a key and with the client's own signature.
pub(super) async fn trade_every_way(server: &TestServer) -> u64 {
    let eip712 = eip712(server).await;
    let alice = Trader::new(0xa1);
    let agent = Trader::new(0xa9);
    let carol = Signer::new(0xc3);
    let expiry = now_ms() + 600_000;
    let mut deposits = 0;
    server.deposit(&alice, "USDC", "1000000").await;
    server.deposit(&alice, "ETH", "50").await;
    deposits += 2;
    let sign = |primary: &str, message: Value| carol.sign(&eip712, primary, message);
    let signed = |nonce: u64, signature: String| json!({"chainId": "1", "account": carol.trader.address, "nonce": nonce.to_string(), "expiry": expiry, "signature": signature});
    let merge = |mut base: Value, extra: Value| {
        for (key, value) in extra.as_object().unwrap() {
            base[key] = value.clone();
        }
        base
    };
    let (signature, _) = sign(
        "Deposit",
        json!({"account": carol.trader.address, "symbol": "USDC", "quantity": "5000", "nonce": "1", "expiry": expiry.to_string()}),
    );
    post_ok(
        server,
        "/portfolio/deposit",
        merge(
            signed(1, signature),
            json!({"from": carol.trader.address, "symbol": "USDC", "quantity": "5000"}),
        ),
    )
    .await;
    deposits += 1;
    // Orders, an amend of each kind, cancels, cancel all.
    let sell = server.limit(&alice, "sell", "2100", "1").await;
    let order = json!({"account": carol.trader.address, "symbol": "ETH/USDC", "orderType": "limit", "direction": "buy",
        "timeInForce": "GTC", "postOnly": false, "price": "2000", "amount": "1", "clientOrderId": "c-1", "nonce": "2",
        "expiry": expiry.to_string(), "triggerPrice": "", "triggerCondition": "", "ocoGroup": "", "expiresAt": "0"});
    let (signature, digest) = sign("Order", order);
    post_ok(
        server,
        "/order/addOrder",
        merge(
            signed(2, signature),
            json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "2000", "amount": "1", "clientOrderId": "c-1"}),
        ),
    )
    .await;
    let amend = json!({"account": carol.trader.address, "symbol": "ETH/USDC", "orderId": digest, "price": "",
        "amount": "0.5", "nonce": "3", "expiry": expiry.to_string()});
    let (signature, amended) = sign("AmendOrder", amend);
    post_ok(
        server,
        "/order/amendOrder",
        merge(
            signed(3, signature),
            json!({"symbol": "ETH/USDC", "orderId": digest, "amount": "0.5"}),
        ),
    )
    .await;
    let cancel = json!({"account": carol.trader.address, "symbol": "ETH/USDC", "orderId": amended, "nonce": "4",
        "expiry": expiry.to_string()});
    let (signature, _) = sign("CancelOrder", cancel);
    post_ok(
        server,
        "/order/cancelOrder",
        merge(signed(4, signature), json!({"symbol": "ETH/USDC", "orderId": amended})),
    )
    .await;
    post_ok(
        server,
        "/order/amendOrder",
        json!({"chainId": "1", "privateKey": alice.key, "symbol": "ETH/USDC", "orderId": sell["order"]["orderId"], "price": "2101"}),
    )
    .await;
    post_ok(
        server,
        "/order/cancelAll",
        json!({"chainId": "1", "privateKey": alice.key, "symbol": "ETH/USDC"}),
    )
    .await;
    let (signature, _) = sign(
        "CancelAll",
        json!({"account": carol.trader.address, "symbol": "", "nonce": "5", "expiry": expiry.to_string()}),
    );
    post_ok(server, "/order/cancelAll", signed(5, signature)).await;
    // A trade, with fees.
    server.limit(&alice, "sell", "2050", "0.25").await;
    let market = json!({"account": carol.trader.address, "symbol": "ETH/USDC", "orderType": "market", "direction": "buy",
        "timeInForce": "IOC", "postOnly": false, "price": "", "amount": "0.25", "clientOrderId": "", "nonce": "6",
        "expiry": expiry.to_string(), "triggerPrice": "", "triggerCondition": "", "ocoGroup": "", "expiresAt": "0"});
    let (signature, _) = sign("Order", market);
    let taken = post_ok(
        server,
        "/order/addOrder",
        merge(
            signed(6, signature),
            json!({"symbol": "ETH/USDC", "type": "market", "direction": "buy", "amount": "0.25", "timeInForce": "IOC"}),
        ),
    )
    .await;
    assert_eq!(taken["trades"].as_array().unwrap().len(), 1, "{taken}");
    // A batch Carol signs once: two orders, the first claiming the batch's nonce.
    let batch_order = |price: &str, client_order_id: &str| {
        json!({"account": carol.trader.address, "symbol": "ETH/USDC", "orderType": "limit", "direction": "buy",
            "timeInForce": "GTC", "postOnly": false, "price": price, "amount": "0.1", "clientOrderId": client_order_id,
            "nonce": "9", "expiry": expiry.to_string(), "triggerPrice": "", "triggerCondition": "", "ocoGroup": "",
            "expiresAt": "0"})
    };
    let (signature, _) = sign(
        "OrderBatch",
        json!({"account": carol.trader.address, "orders": [batch_order("1500", "b-1"), batch_order("1490", "b-2")],
               "nonce": "9", "expiry": expiry.to_string()}),
    );
    let item = |price: &str, client_order_id: &str| {
        json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": price, "amount": "0.1",
               "clientOrderId": client_order_id})
    };
    let batch = post_ok(
        server,
        "/order/batchOrders",
        merge(
            signed(9, signature),
            json!({"orders": [item("1500", "b-1"), item("1490", "b-2")]}),
        ),
    )
    .await;
    assert!(
        batch["results"]
            .as_array()
            .unwrap()
            .iter()
            .all(|result| result.get("order").is_some()),
        "{batch}"
    );
    // A second batch, of two IOC orders that fill at once: nothing open is left to tell a
    // second placement of either from the first.
    server.limit(&alice, "sell", "2050", "0.2").await;
    let taker = |client_order_id: &str| {
        let mut order = batch_order("2050", client_order_id);
        order["timeInForce"] = json!("IOC");
        order["nonce"] = json!("10");
        order
    };
    let (signature, _) = sign(
        "OrderBatch",
        json!({"account": carol.trader.address, "orders": [taker("t-1"), taker("t-2")], "nonce": "10",
               "expiry": expiry.to_string()}),
    );
    let ioc = |client_order_id: &str| {
        let mut item = item("2050", client_order_id);
        item["timeInForce"] = json!("IOC");
        item
    };
    let takers = post_ok(
        server,
        "/order/batchOrders",
        merge(signed(10, signature), json!({"orders": [ioc("t-1"), ioc("t-2")]})),
    )
    .await;
    for result in takers["results"].as_array().unwrap() {
        assert_eq!(result["order"]["status"], "filled", "{takers}");
    }
    // The switch, both ways.
    post_ok(
        server,
        "/order/cancelAllAfter",
        json!({"chainId": "1", "privateKey": alice.key, "timeoutMs": 60_000}),
    )
    .await;
    let (signature, _) = sign(
        "CancelAllAfter",
        json!({"account": carol.trader.address, "timeoutMs": "30000", "nonce": "7", "expiry": expiry.to_string()}),
    );
    post_ok(
        server,
        "/order/cancelAllAfter",
        merge(signed(7, signature), json!({"timeoutMs": 30_000})),
    )
    .await;
    // Disarmed again, so that no firing grows the journal while a test reads it.
    let (signature, _) = sign(
        "CancelAllAfter",
        json!({"account": carol.trader.address, "timeoutMs": "0", "nonce": "11", "expiry": expiry.to_string()}),
    );
    post_ok(
        server,
        "/order/cancelAllAfter",
        merge(signed(11, signature), json!({"timeoutMs": 0})),
    )
    .await;
    post_ok(
        server,
        "/order/cancelAllAfter",
        json!({"chainId": "1", "privateKey": alice.key, "timeoutMs": 0}),
    )
    .await;
    // An agent, trading for Alice with its own key, then revoked.
    post_ok(
        server,
        "/account/approveAgent",
        json!({"chainId": "1", "privateKey": alice.key, "agent": agent.address, "name": "bot"}),
    )
    .await;
    let placed = post_ok(
        server,
        "/order/addOrder",
        json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "1000",
               "amount": "0.1", "privateKey": agent.key, "account": alice.address}),
    )
    .await;
    post_ok(
        server,
        "/order/cancelOrder",
        json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": placed["order"]["orderId"],
               "privateKey": agent.key, "account": alice.address}),
    )
    .await;
    post_ok(
        server,
        "/account/revokeAgent",
        json!({"chainId": "1", "privateKey": alice.key, "agent": agent.address}),
    )
    .await;
    // Subaccounts: transfers both ways, and orders in a subaccount by key and by signature.
    post_ok(
        server,
        "/account/transfer",
        json!({"chainId": "1", "from": alice.address, "fromSubaccount": 0, "toSubaccount": 2, "symbol": "USDC",
               "quantity": "100", "clientTransferId": "t-1", "privateKey": alice.key}),
    )
    .await;
    let placed = post_ok(
        server,
        "/order/addOrder",
        json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "900",
               "amount": "0.1", "privateKey": alice.key, "subaccount": 2}),
    )
    .await;
    post_ok(
        server,
        "/order/cancelOrder",
        json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": placed["order"]["orderId"], "privateKey": alice.key,
               "subaccount": "2"}),
    )
    .await;
    let (signature, _) = sign(
        "Transfer",
        json!({"account": carol.trader.address, "fromSubaccount": "0", "toSubaccount": "1", "symbol": "USDC",
               "quantity": "50", "clientTransferId": "c-t-1", "nonce": "12", "expiry": expiry.to_string()}),
    );
    let moved = post_ok(
        server,
        "/account/transfer",
        merge(
            signed(12, signature),
            json!({"from": carol.trader.address, "fromSubaccount": 0, "toSubaccount": 1, "symbol": "USDC",
                   "quantity": "50", "clientTransferId": "c-t-1"}),
        ),
    )
    .await;
    let carol_first = moved["transfer"]["to"].as_str().unwrap().to_string();
    let mut in_subaccount = batch_order("100", "");
    in_subaccount["account"] = json!(carol_first);
    in_subaccount["nonce"] = json!("13");
    let (signature, _) = sign("Order", in_subaccount);
    let placed = post_ok(
        server,
        "/order/addOrder",
        json!({"chainId": "1", "account": carol_first, "nonce": "13", "expiry": expiry, "signature": signature,
               "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100", "amount": "0.1"}),
    )
    .await;
    assert_eq!(placed["order"]["account"], carol_first);
    // Two equal orders in one batch signed once with a key: each its own id.
    let child = json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "90", "amount": "0.1"});
    let equal = post_ok(
        server,
        "/order/batchOrders",
        json!({"chainId": "1", "privateKey": alice.key, "orders": [child, child]}),
    )
    .await;
    assert_ne!(
        equal["results"][0]["order"]["orderId"], equal["results"][1]["order"]["orderId"],
        "{equal}"
    );
    // TWAPs, both ways: Alice's with her key (its first slice journaled by the timer at once),
    // Carol's signed as a Twap and cancelled as a CancelTwap.
    let twap = post_ok(
        server,
        "/order/addTwap",
        json!({"chainId": "1", "symbol": "ETH/USDC", "direction": "sell", "amount": "1", "durationMs": 300_000,
               "intervalMs": 30_000, "limitPrice": "1", "privateKey": alice.key}),
    )
    .await;
    let twap_id = twap["twap"]["twapId"].as_str().unwrap().to_string();
    for _ in 0..100 {
        let (_, twaps) = server
            .get("/order/twaps", &[("chainId", "1"), ("account", &alice.address)])
            .await;
        if twaps["twaps"][0]["slices"] == 1 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
    let (signature, _) = sign(
        "Twap",
        json!({"account": carol.trader.address, "symbol": "ETH/USDC", "direction": "buy", "amount": "0.5",
               "durationMs": "600000", "intervalMs": "60000", "limitPrice": "100", "clientTwapId": "c-twap",
               "nonce": "14", "expiry": expiry.to_string()}),
    );
    let carols = post_ok(
        server,
        "/order/addTwap",
        merge(
            signed(14, signature),
            json!({"symbol": "ETH/USDC", "direction": "buy", "amount": "0.5", "durationMs": 600_000,
                   "intervalMs": 60_000, "limitPrice": "100", "clientTwapId": "c-twap"}),
        ),
    )
    .await;
    let carols_id = carols["twap"]["twapId"].as_str().unwrap().to_string();
    let (signature, _) = sign(
        "CancelTwap",
        json!({"account": carol.trader.address, "twapId": carols_id, "nonce": "15", "expiry": expiry.to_string()}),
    );
    post_ok(
        server,
        "/order/cancelTwap",
        merge(signed(15, signature), json!({"twapId": carols_id})),
    )
    .await;
    post_ok(
        server,
        "/order/cancelTwap",
        json!({"chainId": "1", "twapId": twap_id, "privateKey": alice.key}),
    )
    .await;
    // Withdrawals, both ways.
    post_ok(
        server,
        "/portfolio/withdraw",
        json!({"chainId": "1", "from": alice.address, "symbol": "USDC", "quantity": "10", "privateKey": alice.key}),
    )
    .await;
    let (signature, _) = sign(
        "Withdraw",
        json!({"account": carol.trader.address, "symbol": "USDC", "quantity": "1", "nonce": "8", "expiry": expiry.to_string()}),
    );
    post_ok(
        server,
        "/portfolio/withdraw",
        merge(
            signed(8, signature),
            json!({"from": carol.trader.address, "symbol": "USDC", "quantity": "1"}),
        ),
    )
    .await;
    deposits
}
