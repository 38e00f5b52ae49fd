//! The end-to-end scenario: two accounts deposit, trade across price levels with partial fills
//! and cancels, and every read endpoint is checked against values computed by hand.
//!
//! ETH/USDC on chain 1: tick 0.01, step 0.0001, maker fee 0.1 %, taker fee 0.2 %.

use crate::common;

use common::{TestServer, Trader};
use serde_json::{json, Value};

fn field<'a>(values: &'a [Value], name: &str) -> Vec<&'a str> {
    values.iter().map(|value| value[name].as_str().unwrap()).collect()
}

#[tokio::test]
async fn two_accounts_trade_and_every_read_agrees_with_hand_computed_values() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    let bob = Trader::new(0xb0);
    server.deposit(&alice, "ETH", "10").await;
    server.deposit(&bob, "USDC", "50000").await;

    let a1 = server.limit(&alice, "sell", "2500", "1").await;
    let a2 = server.limit(&alice, "sell", "2510", "2").await;
    let a3 = server.limit(&alice, "sell", "2520", "1").await;
    let a2_id = a2["order"]["orderId"].as_str().unwrap().to_string();

    // Bob's buy walks two levels: 1 ETH at 2500, then 1.5 of 2 ETH at 2510.
    let b1 = server.limit(&bob, "buy", "2515", "2.5").await;
    assert_eq!(b1["order"]["status"], "filled");
    assert_eq!(b1["order"]["filled"], "2.5");
    assert_eq!(b1["order"]["cost"], "6265");
    assert_eq!(b1["order"]["average"], "2506");
    assert_eq!(b1["order"]["fee"], "0.005");
    assert_eq!(b1["order"]["feeAsset"], "ETH");
    let trades = b1["trades"].as_array().unwrap();
    assert_eq!(field(trades, "price"), ["2500", "2510"]);
    assert_eq!(field(trades, "amount"), ["1", "1.5"]);
    assert_eq!(
        field(trades, "makerOrderId"),
        [a1["order"]["orderId"].as_str().unwrap(), a2_id.as_str()]
    );

    // A resting buy that Bob cancels, and a resting sell that Alice cancels.
    let b2 = server.limit(&bob, "buy", "2400", "1").await;
    let (status, cancelled) = server
        .post_form(
            "/order/cancel",
            &[
                ("chainId", "1"),
                ("symbol", "eth/usdc"),
                ("orderId", b2["order"]["orderId"].as_str().unwrap()),
                ("privateKey", &bob.key),
            ],
        )
        .await;
    assert_eq!(status, 200, "{cancelled}");
    assert_eq!(cancelled["order"]["status"], "cancelled");
    let (status, _) = server
        .post_json(
            "/order/cancelOrder",
            json!({"chainId": 1, "symbol": "ETH/USDC", "orderId": a3["order"]["orderId"], "privateKey": alice.key}),
        )
        .await;
    assert_eq!(status, 200);

    // A market buy of 0.2 ETH takes from what is left of A2 at 2510.
    let (status, market) = server
        .post_json("/order/add", json!({"chainId": "1", "symbol": "ETH/USDC", "type": "market", "direction": "buy", "amount": "0.2", "privateKey": bob.key}))
        .await;
    assert_eq!(status, 200, "{market}");
    assert_eq!(market["order"]["status"], "filled");
    assert_eq!(market["order"]["cost"], "502");
    assert_eq!(market["order"]["timeInForce"], "IOC");
    assert_eq!(market["order"]["price"], Value::Null);

    let (status, withdrawal) = server
        .post_json(
            "/portfolio/withdraw",
            json!({"chainId": "1", "from": bob.address, "symbol": "USDC", "quantity": "233", "privateKey": bob.key}),
        )
        .await;
    assert_eq!(status, 200, "{withdrawal}");
    assert_eq!(withdrawal["balance"]["total"], "43000");

    // Balances: every figure computed by hand from the fills and fees above.
    let expect_balance = |balance: Value, total: &str, available: &str, locked: &str| {
        assert_eq!(
            (
                balance["total"].as_str(),
                balance["available"].as_str(),
                balance["locked"].as_str()
            ),
            (Some(total), Some(available), Some(locked)),
            "{balance}"
        );
    };
    expect_balance(server.balance(&bob, "USDC").await, "43000", "43000", "0");
    expect_balance(server.balance(&bob, "ETH").await, "2.6946", "2.6946", "0");
    expect_balance(server.balance(&alice, "ETH").await, "7.3", "7", "0.3");
    expect_balance(server.balance(&alice, "USDC").await, "6760.233", "6760.233", "0");
    let (_, fees) = server
        .get(
            "/account/assetBalances",
            &[
                ("chainId", "1"),
                ("account", "0x000000000000000000000000000000000000fee1"),
            ],
        )
        .await;
    let fee_of = |symbol: &str| {
        fees["balances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|b| b["symbol"] == symbol)
            .unwrap()["total"]
            .clone()
    };
    assert_eq!(fee_of("ETH"), "0.0054");
    assert_eq!(fee_of("USDC"), "6.767");
    // Conservation: ETH 7.3 + 2.6946 + 0.0054 = 10 deposited; USDC 43000 + 6760.233 + 6.767 = 50000 - 233 withdrawn.

    // Books.
    let (_, asks) = server
        .get("/order/sellOrderbooks", &[("chainId", "1"), ("pair", "ETH/USDC")])
        .await;
    assert_eq!(asks["levels"], json!([{"price": "2510", "amount": "0.3", "orders": 1}]));
    assert_eq!(asks["direction"], "sell");
    let (_, bids) = server.get_raw("/order/buyOrderbooks?chainId=1&pair=eth%2Fusdc").await;
    assert_eq!(bids["levels"], json!([]));

    // Trades, newest first.
    let (_, history) = server
        .get("/order/tradeHistories", &[("chainId", "1"), ("pair", "ETH/USDC")])
        .await;
    let trades = history["trades"].as_array().unwrap();
    assert_eq!(field(trades, "amount"), ["0.2", "1.5", "1"]);
    assert_eq!(field(trades, "price"), ["2510", "2510", "2500"]);
    assert_eq!(field(trades, "cost"), ["502", "3765", "2500"]);
    assert_eq!(history["nextCursor"], Value::Null);

    // Candles: all three trades, whichever minutes they fell in.
    let (_, candles) = server
        .get(
            "/order/tradesOHCL",
            &[("chainId", "1"), ("pair", "ETH/USDC"), ("interval", "1m")],
        )
        .await;
    let candles = candles["candles"].as_array().unwrap();
    let trade_count: u64 = candles.iter().map(|candle| candle["trades"].as_u64().unwrap()).sum();
    assert_eq!(trade_count, 3);
    assert_eq!(candles.first().unwrap()["open"], "2500");
    assert_eq!(candles.last().unwrap()["close"], "2510");
    let (_, weekly) = server
        .get(
            "/order/tradeOHCL",
            &[("chainId", "1"), ("pair", "ETH/USDC"), ("interval", "1w")],
        )
        .await;
    let volume: f64 = weekly["candles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["volume"].as_str().unwrap().parse::<f64>().unwrap())
        .sum();
    assert!((volume - 2.7).abs() < 1e-12, "{weekly}");

    // Orders by status.
    let open = server.account_list("/order/openOrders", &alice, "orders").await;
    assert_eq!(field(&open, "orderId"), [a2_id.as_str()]);
    assert_eq!(open[0]["filled"], "1.7");
    assert_eq!(open[0]["remaining"], "0.3");
    assert_eq!(
        field(
            &server.account_list("/order/filledOrders", &alice, "orders").await,
            "orderId"
        ),
        [a1["order"]["orderId"].as_str().unwrap()]
    );
    assert_eq!(
        field(
            &server.account_list("/order/cancelledOrders", &alice, "orders").await,
            "orderId"
        ),
        [a3["order"]["orderId"].as_str().unwrap()]
    );
    let bob_filled = server.account_list("/order/filledOrders", &bob, "orders").await;
    assert_eq!(
        field(&bob_filled, "orderId"),
        [
            market["order"]["orderId"].as_str().unwrap(),
            b1["order"]["orderId"].as_str().unwrap()
        ]
    );
    assert_eq!(
        field(
            &server.account_list("/order/cancelledOrders", &bob, "orders").await,
            "orderId"
        ),
        [b2["order"]["orderId"].as_str().unwrap()]
    );
    assert!(server
        .account_list("/order/openOrders", &bob, "orders")
        .await
        .is_empty());

    // Positions, average cost: Bob bought 2.7 ETH for 6767 USDC.
    let (_, position) = server
        .get(
            "/order/openPositions",
            &[("chainId", "1"), ("pair", "ETH/USDC"), ("account", &bob.address)],
        )
        .await;
    assert_eq!(position["position"]["netAmount"], "2.7");
    assert_eq!(position["position"]["averageEntryPrice"], "2506.296296");
    assert_eq!(position["position"]["markPrice"], "2510");
    assert_eq!(position["position"]["unrealizedPnl"], "10");
    assert_eq!(position["position"]["realizedPnl"], "0");
    assert_eq!(position["position"]["quote"]["total"], "43000");
    let (_, position) = server
        .get(
            "/order/openPositions",
            &[("chainId", "1"), ("pair", "ETH/USDC"), ("account", &alice.address)],
        )
        .await;
    assert_eq!(position["position"]["netAmount"], "-2.7");
    assert_eq!(position["position"]["unrealizedPnl"], "-10");
    assert_eq!(
        field(position["openOrders"].as_array().unwrap(), "orderId"),
        [a2_id.as_str()]
    );

    // Tradable amounts: Bob's 43000 USDC can buy only the 0.3 ETH that rests.
    let (_, tradable) = server
        .get(
            "/account/tradableAmounts",
            &[("chainId", "1"), ("account", &bob.address)],
        )
        .await;
    let eth_usdc = tradable["tradable"]
        .as_array()
        .unwrap()
        .iter()
        .find(|t| t["symbol"] == "ETH/USDC")
        .unwrap()
        .clone();
    assert_eq!(
        eth_usdc,
        json!({"symbol": "ETH/USDC", "buy": {"maxAmount": "0.3", "maxCost": "43000"}, "sell": {"maxAmount": "2.6946"}})
    );

    // Deposit and withdrawal histories.
    let (_, deposits) = server
        .get(
            "/portfolio/depositHistories",
            &[("chainId", "1"), ("account", &alice.address)],
        )
        .await;
    assert_eq!(field(deposits["deposits"].as_array().unwrap(), "quantity"), ["10"]);
    let (_, withdrawals) = server
        .get(
            "/portfolio/withdrawHistories",
            &[("chainId", "1"), ("account", &bob.address)],
        )
        .await;
    assert_eq!(
        field(withdrawals["withdrawals"].as_array().unwrap(), "quantity"),
        ["233"]
    );
    assert_eq!(withdrawals["withdrawals"][0]["status"], "confirmed");

    // The pair's last price.
    let (_, pairs) = server.get("/account/assetPairs", &[("chainId", "1")]).await;
    assert_eq!(pairs["pairs"][0]["lastPrice"], "2510");
    assert_eq!(pairs["pairs"][0]["makerFee"], "0.001");
}
