//! The market's whole history against the real server (contract version 5): more than 10,000
//! trades paged by cursor and by time range with nothing left out or repeated, the same trades
//! as CSV streamed oldest first, and candles paged forward from the first trade.

use crate::common;

use std::collections::BTreeSet;

use common::{assert_error, TestServer, Trader};
use serde_json::{json, Value};

const TRADES: usize = 10_050;
const BATCH: usize = 50;

/// Bob offers ETH at 2000; Alice takes it in 0.001 ETH market buys, 50 a batch: one trade each.
async fn ten_thousand_trades(server: &TestServer) {
    let alice = Trader::new(0xa1);
    let bob = Trader::new(0xb0);
    server.deposit(&alice, "USDC", "30000").await;
    server.deposit(&bob, "ETH", "11").await;
    server.limit(&bob, "sell", "2000", "11").await;
    for batch in 0..TRADES / BATCH {
        // Each its own client order id: equal orders of one batch would share an id.
        let orders: Vec<Value> = (0..BATCH)
            .map(|index| {
                json!({"symbol": "ETH/USDC", "type": "market", "direction": "buy", "amount": "0.001",
                       "clientOrderId": format!("b{batch}-{index}")})
            })
            .collect();
        let results = server.batch_orders(&alice, orders).await;
        assert!(
            results
                .iter()
                .all(|result| result["trades"].as_array().is_some_and(|trades| trades.len() == 1)),
            "{results:?}"
        );
    }
}

async fn all_trade_ids(server: &TestServer, range: &[(&str, String)]) -> Vec<u64> {
    let mut ids = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut query: Vec<(&str, String)> = vec![
            ("chainId", "1".into()),
            ("pair", "ETH/USDC".into()),
            ("limit", "1000".into()),
        ];
        query.extend(range.iter().cloned());
        if let Some(cursor) = &cursor {
            query.push(("cursor", cursor.clone()));
        }
        let query: Vec<(&str, &str)> = query.iter().map(|(name, value)| (*name, value.as_str())).collect();
        let (status, page) = server.get("/order/tradeHistories", &query).await;
        assert_eq!(status, 200, "{page}");
        ids.extend(
            page["trades"]
                .as_array()
                .unwrap()
                .iter()
                .map(|trade| trade["tradeId"].as_str().unwrap().parse::<u64>().unwrap()),
        );
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return ids,
        }
    }
}

async fn csv(server: &TestServer, query: &str) -> (String, String) {
    let response = server
        .client
        .get(format!(
            "{}/market/trades.csv?chainId=1&pair=ETH%2FUSDC{query}",
            server.base_url
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let content_type = response.headers()["content-type"].to_str().unwrap().to_string();
    (content_type, response.text().await.unwrap())
}

#[tokio::test]
async fn more_than_ten_thousand_trades_page_whole_by_cursor_time_range_csv_and_candles() {
    let server = TestServer::start().await;
    ten_thousand_trades(&server).await;

    // Every trade once, newest first, by cursor.
    let ids = all_trade_ids(&server, &[]).await;
    assert_eq!(ids.len(), TRADES);
    assert!(
        ids.windows(2).all(|pair| pair[0] > pair[1]),
        "newest first, none repeated"
    );

    // As CSV: the same trades, oldest first, with the header.
    let (content_type, text) = csv(&server, "").await;
    assert!(content_type.starts_with("text/csv"), "{content_type}");
    let mut lines = text.lines();
    assert_eq!(
        lines.next(),
        Some("tradeId,timestamp,price,amount,cost,takerDirection,makerOrderId,takerOrderId")
    );
    let rows: Vec<Vec<&str>> = lines.map(|line| line.split(',').collect()).collect();
    assert_eq!(rows.len(), TRADES);
    assert!(rows
        .iter()
        .all(|row| row.len() == 8 && row[2] == "2000" && row[3] == "0.001" && row[5] == "buy"));
    let csv_ids: Vec<u64> = rows.iter().map(|row| row[0].parse().unwrap()).collect();
    assert_eq!(csv_ids.iter().rev().copied().collect::<Vec<_>>(), ids);

    // A time range: from the 5,000th trade's time to the 7,000th's, by either name, and as CSV.
    let times: Vec<u64> = rows.iter().map(|row| row[1].parse().unwrap()).collect();
    let (from, to) = (times[4_999], times[6_999]);
    let expected: BTreeSet<u64> = csv_ids
        .iter()
        .zip(&times)
        .filter(|(_, time)| (from..=to).contains(*time))
        .map(|(id, _)| *id)
        .collect();
    assert!(expected.len() >= 2_001);
    for range in [
        vec![("from", from.to_string()), ("to", to.to_string())],
        vec![("startTime", from.to_string()), ("endTime", to.to_string())],
    ] {
        let ranged: BTreeSet<u64> = all_trade_ids(&server, &range).await.into_iter().collect();
        assert_eq!(ranged, expected);
    }
    let (_, ranged_csv) = csv(&server, &format!("&from={from}&to={to}")).await;
    assert_eq!(ranged_csv.lines().count(), expected.len() + 1);
    // Both names of a bound: the range is where they overlap.
    let both = all_trade_ids(
        &server,
        &[
            ("from", from.to_string()),
            ("startTime", "0".to_string()),
            ("to", u64::MAX.to_string()),
            ("endTime", to.to_string()),
        ],
    )
    .await;
    assert_eq!(both.into_iter().collect::<BTreeSet<u64>>(), expected);
    assert_error(
        &server
            .get(
                "/market/trades.csv",
                &[("chainId", "1"), ("pair", "ETH/USDC"), ("from", "soon")],
            )
            .await,
        400,
        "INVALID_PARAMETER",
        Some("from"),
    );

    // Candles paged forward one at a time from the first trade: every trade counted once.
    let mut counted = 0u64;
    let mut cursor = "0".to_string();
    let mut pages = 0;
    loop {
        let (status, page) = server
            .get(
                "/order/tradesOHCL",
                &[
                    ("chainId", "1"),
                    ("pair", "ETH/USDC"),
                    ("interval", "1m"),
                    ("limit", "1"),
                    ("from", "0"),
                    ("cursor", &cursor),
                ],
            )
            .await;
        assert_eq!(status, 200, "{page}");
        let candles = page["candles"].as_array().unwrap();
        assert!(candles.len() <= 1);
        counted += candles
            .iter()
            .map(|candle| candle["trades"].as_u64().unwrap())
            .sum::<u64>();
        pages += 1;
        match page["nextCursor"].as_str() {
            Some(next) => cursor = next.to_string(),
            None => break,
        }
    }
    assert_eq!(counted, TRADES as u64);
    let (_, newest) = server
        .get(
            "/order/tradesOHCL",
            &[("chainId", "1"), ("pair", "ETH/USDC"), ("interval", "1w")],
        )
        .await;
    assert_eq!(newest["candles"].as_array().unwrap().len(), 1, "{newest}");
    assert_eq!(newest["candles"][0]["trades"], json!(TRADES), "{newest}");
    assert_eq!(newest["nextCursor"], Value::Null);
    assert!(pages >= 1);
}
