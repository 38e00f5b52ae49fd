//! The public audit log on a ledger venue, and `dexd audit` (the real binary) reading it: every
//! kind of account command in both credential modes checks, state hashes included; a journal
//! tampered with (a command altered, one left out, a forged signature, a state hash) is
//! reported with its position; an auditor killed mid-way resumes without checking or counting
//! anything twice.

use crate::common;

use std::sync::Arc;

use common::auditor::RunningAuditor;
use common::signer::{eip712, now_ms, Signer};
use common::{TestServer, Trader};
use serde_json::{json, Value};

/// The journal of chain 1 as served: every line, from position 1.
async fn journal_lines(server: &TestServer) -> (Vec<String>, u64) {
    let mut lines = Vec::new();
    let mut from = 1u64;
    loop {
        let response = server
            .client
            .get(format!("{}/audit/journal", server.base_url))
            .query(&[("chainId", "1"), ("from", &from.to_string())])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-dexd-journal-format"], "2");
        let end: u64 = response.headers()["x-dexd-journal-end"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let text = response.text().await.unwrap();
        let page: Vec<String> = text.lines().map(str::to_string).collect();
        let commands = page.iter().filter(|line| !line.contains("\"stateHash\"")).count() as u64;
        lines.extend(page);
        from += commands;
        if from > end {
            return (lines, end);
        }
        if commands == 0 {
            // The state hash of a multiple of 10,000 is not known yet.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// Runs `dexd audit --once` against `venue` with the directory `dir`; its success, standard
/// output and standard error.
pub(crate) async fn audit_once(venue: &str, dir: &std::path::Path) -> (bool, String, String) {
    let output = audit_once_with(venue, dir, &[]).await;
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `dexd audit --once` against `venue` with the directory `dir` and the arguments `more`.
pub(super) async fn audit_once_with(venue: &str, dir: &std::path::Path, more: &[&str]) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args([
            "audit",
            "--venue",
            venue,
            "--chain-id",
            "1",
            "--once",
            "--poll-interval-ms",
            "20",
            "--dir",
        ])
        .arg(dir)
        .args(more)
        .output()
        .await
        .unwrap()
}

async fn post_ok(server: &TestServer, path: &str, body: Value) -> Value {
    let (status, answer) = server.post_json(path, body).await;
    assert_eq!(status, 200, "{path}: {answer}");
    answer
}

/// Every kind of account command, with a key and with the client's own signature.
async fn trade_every_way(server: &TestServer) -> u64 {
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

/// Batches of resting orders, each cancelled by a cancel all, until the journal passes `until`.
async fn fill_journal(server: &TestServer, until: u64) {
    let bulk = Trader::new(0xb1);
    server.deposit(&bulk, "USDC", "100000000").await;
    let orders: Vec<Value> = (0..50)
        .map(|index| {
            json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": format!("{}", 100 + index), "amount": "0.01"})
        })
        .collect();
    loop {
        let response = server
            .client
            .post(format!("{}/order/batchOrders", server.base_url))
            .json(&json!({"chainId": "1", "privateKey": bulk.key, "orders": orders}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let sequence: u64 = response.headers()["x-dexd-sequence"].to_str().unwrap().parse().unwrap();
        post_ok(
            server,
            "/order/cancelAll",
            json!({"chainId": "1", "privateKey": bulk.key}),
        )
        .await;
        if sequence > until {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_of_a_ledger_venue_checks_with_its_state_hashes() {
    let server = TestServer::start().await;
    let deposits = trade_every_way(&server).await + 1;
    fill_journal(&server, 10_050).await;
    let (lines, end) = journal_lines(&server).await;
    assert!(end > 10_050);
    // The configuration first, a state hash right after position 10,000, every account
    // command signed.
    let first: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(first["command"]["type"], "configure");
    assert_eq!(first["authorization"]["kind"], "system");
    let hash_at = lines.iter().position(|line| line.contains("\"stateHash\"")).unwrap();
    let before: Value = serde_json::from_str(&lines[hash_at - 1]).unwrap();
    let hash: Value = serde_json::from_str(&lines[hash_at]).unwrap();
    assert_eq!(
        (before["sequence"].as_u64(), hash["sequence"].as_u64()),
        (Some(10_000), Some(10_000))
    );
    for line in &lines {
        let line: Value = serde_json::from_str(line).unwrap();
        if line["command"]["account"].is_string() || line["command"]["type"] == "byAgent" {
            assert_eq!(line["authorization"]["kind"], "eip712", "{line}");
        }
    }
    // Past the end: no lines (far past it: Carol's switch may fire meanwhile and journal one
    // more command). In ledger mode: no roots.
    let past = server
        .client
        .get(format!(
            "{}/audit/journal?chainId=1&from={}",
            server.base_url,
            end + 1_000_000
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(past.status(), 200);
    assert!(past.text().await.unwrap().is_empty());
    let (status, roots) = server.get("/audit/roots", &[("chainId", "1")]).await;
    assert_eq!(
        (status, roots["roots"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{roots}"
    );

    let directory = tempfile::tempdir().unwrap();
    let (held, output, errors) = audit_once(&server.base_url, directory.path()).await;
    assert!(held, "{output}\n{errors}");
    assert!(!output.contains("FAIL"), "{output}");
    assert!(
        output.contains(&format!("ledger deposits: {deposits} not checkable against a chain")),
        "{output}"
    );
}

/// A venue that serves `lines` as its journal (honouring `from` and `limit`, and `segment`), as
/// a venue that tampered with its own would: each page gives a batch's order hashes on its first
/// line of the batch, as the format has it.
pub(super) async fn serve_journal(lines: Vec<String>, end: u64) -> String {
    serve_journal_padded(lines, end, usize::MAX).await
}

/// [`serve_journal`], with every page of more than `padded_over` commands (segments included)
/// made larger than a page may be by 17 MiB of empty lines.
async fn serve_journal_padded(lines: Vec<String>, end: u64, padded_over: usize) -> String {
    let lines = Arc::new(lines);
    let router = axum::Router::new().route(
        "/audit/journal",
        axum::routing::get(move |axum::extract::RawQuery(query): axum::extract::RawQuery| {
            let lines = Arc::clone(&lines);
            let query: std::collections::HashMap<String, String> =
                form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                    .into_owned()
                    .collect();
            async move {
                let segment: Option<u64> = query.get("segment").and_then(|segment| segment.parse().ok());
                let from: u64 = match segment {
                    Some(segment) => segment * 10_000 + 1,
                    None => query.get("from").and_then(|from| from.parse().ok()).unwrap_or(1),
                };
                let limit: usize = query
                    .get("limit")
                    .and_then(|limit| limit.parse().ok())
                    .unwrap_or(10_000);
                let mut page = Vec::new();
                let mut commands = 0;
                for line in lines.iter() {
                    let value: Value = serde_json::from_str(line).unwrap();
                    if value["sequence"].as_u64().unwrap() < from {
                        continue;
                    }
                    let is_command = value.get("stateHash").is_none();
                    if is_command && commands == limit {
                        break;
                    }
                    commands += usize::from(is_command);
                    page.push(value);
                }
                let mut body = paged(&lines, page);
                if commands > padded_over || (segment.is_some() && padded_over < 10_000) {
                    body.push_str(&"\n".repeat(17 * 1024 * 1024));
                }
                (
                    [
                        ("x-dexd-journal-format", "2".to_string()),
                        ("x-dexd-journal-end", end.to_string()),
                    ],
                    body,
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{address}")
}

/// A page of `page`'s lines as the format gives it: a batch's order hashes on the first line of
/// each run of its lines (taken from the first line of `all` that has them), on no other.
fn paged(all: &[String], page: Vec<Value>) -> String {
    let mut hashes_by_signature = std::collections::HashMap::new();
    for line in all {
        let value: Value = serde_json::from_str(line).unwrap();
        let authorization = &value["authorization"];
        if !authorization["batch"]["orderHashes"].is_null() {
            hashes_by_signature
                .entry(authorization["signature"].to_string())
                .or_insert_with(|| authorization["batch"]["orderHashes"].clone());
        }
    }
    let mut body = String::new();
    let mut last_signature = None;
    for mut value in page {
        if value["authorization"]["batch"].is_object() {
            let signature = value["authorization"]["signature"].to_string();
            if last_signature.as_ref() == Some(&signature) {
                value["authorization"]["batch"]
                    .as_object_mut()
                    .unwrap()
                    .remove("orderHashes");
            } else if value["authorization"]["batch"]["orderHashes"].is_null() {
                value["authorization"]["batch"]["orderHashes"] = hashes_by_signature[&signature].clone();
            }
            last_signature = Some(signature);
        }
        body.push_str(&value.to_string());
        body.push('\n');
    }
    body
}

fn find(lines: &[String], matches: impl Fn(&Value) -> bool) -> usize {
    lines
        .iter()
        .position(|line| matches(&serde_json::from_str(line).unwrap()))
        .unwrap()
}

fn sequence_of(line: &str) -> u64 {
    serde_json::from_str::<Value>(line).unwrap()["sequence"]
        .as_u64()
        .unwrap()
}

/// A line re-rendered from a changed command, as a venue that altered it would serve it: its
/// fields and bytes agree, its signature is the original one.
fn altered(line: &str, change: impl FnOnce(&mut dexd_core::Command)) -> String {
    let dexd::audit::format::JournalLine::Command(parsed) = dexd::audit::format::parse_line(line).unwrap() else {
        panic!("a command line")
    };
    let authorization = parsed.journal_authorization();
    let mut command = parsed.command;
    change(&mut command);
    let config = dexd_venue::config::Config::embedded_default();
    let chain = config.chains.iter().find(|chain| chain.chain_id == 1).unwrap();
    let messages = dexd_crypto::RequestMessages::new(&chain.configuration(&config.limits)).unwrap();
    dexd::audit::format::command_line(
        parsed.sequence,
        parsed.time_ms,
        &command,
        authorization.as_ref(),
        &messages,
    )
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_journal_is_reported_with_the_position() {
    let server = TestServer::start().await;
    trade_every_way(&server).await;
    let (lines, end) = journal_lines(&server).await;
    let honest = serve_journal(lines.clone(), end).await;
    let directory = tempfile::tempdir().unwrap();
    let (held, output, errors) = audit_once(&honest, directory.path()).await;
    assert!(held, "the honest copy checks: {output}\n{errors}");

    let carol_deposit = find(&lines, |line| {
        line["command"]["type"] == "deposit" && line["authorization"]["clientSigned"] == true
    });
    let order = find(&lines, |line| line["command"]["type"] == "placeOrder");
    let withdrawal = find(&lines, |line| line["command"]["type"] == "withdraw");
    let mut cases: Vec<(&str, Vec<String>, u64)> = Vec::new();
    // A deposit's amount raised, its fields and bytes made to agree.
    let mut raised = lines.clone();
    raised[carol_deposit] = altered(&lines[carol_deposit], |command| {
        if let dexd_core::Command::Deposit(request) = command {
            request.amount = dexd_core::Amount::from_units(request.amount.units() * 10);
        }
    });
    cases.push(("a deposit raised", raised, sequence_of(&lines[carol_deposit])));
    // A command left out.
    let mut gap = lines.clone();
    gap.remove(order);
    cases.push(("a command left out", gap, sequence_of(&lines[order])));
    // A withdrawal signed by another key over the same message.
    let mut forged = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[withdrawal]).unwrap();
    let mallory = Signer::new(0x66);
    let (signature, _) = mallory.sign(
        &eip712(&server).await,
        "Withdraw",
        value["authorization"]["message"].clone(),
    );
    value["authorization"]["signature"] = json!(signature);
    forged[withdrawal] = value.to_string();
    cases.push(("a forged signature", forged, sequence_of(&lines[withdrawal])));
    // The command's fields changed, its bytes not.
    let mut fields = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[order]).unwrap();
    value["command"]["price"] = json!("1");
    fields[order] = value.to_string();
    cases.push(("the fields unlike the bytes", fields, sequence_of(&lines[order])));

    // A batch signed once: its claim of the nonce dropped (its orders could then be placed
    // again), or the hashes of its orders changed (the signature is of another batch).
    let claimant = find(&lines, |line| line["authorization"]["batch"]["claimsNonce"] == true);
    let mut unclaimed = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[claimant]).unwrap();
    value["authorization"]["batch"]["claimsNonce"] = json!(false);
    unclaimed[claimant] = value.to_string();
    cases.push((
        "a batch's nonce claim dropped",
        unclaimed,
        sequence_of(&lines[claimant]),
    ));
    // The page gives the batch's hashes once, on its first line: another order's hash changed
    // there makes the signature another batch's.
    let follower = claimant + 1;
    let value: Value = serde_json::from_str(&lines[follower]).unwrap();
    assert_eq!(value["authorization"]["batch"]["claimsNonce"], false, "{value}");
    assert!(
        value["authorization"]["batch"]["orderHashes"].is_null(),
        "given once: {value}"
    );
    let mut rehashed = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[claimant]).unwrap();
    value["authorization"]["batch"]["orderHashes"][1] = json!(format!("0x{}", "11".repeat(32)));
    rehashed[claimant] = value.to_string();
    cases.push(("a batch's other order changed", rehashed, sequence_of(&lines[claimant])));
    // A filled order of a batch journaled again right after its batch, following the same
    // claim: the same order placed twice (what a client's retry did before each order of a
    // batch was held to the claim in the engine).
    let filled = find(&lines, |line| {
        line["authorization"]["batch"]["claimsNonce"] == false && line["command"]["timeInForce"] == "IOC"
    });
    let mut replayed = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[filled]).unwrap();
    let next: Value = serde_json::from_str(&lines[filled + 1]).unwrap();
    value["sequence"] = next["sequence"].clone();
    value["time"] = next["time"].clone();
    replayed[filled + 1] = value.to_string();
    cases.push((
        "a batch's filled order placed again",
        replayed,
        sequence_of(&lines[filled + 1]),
    ));

    // Every account command is bound to its signer. A cancel all the venue signed with alice's
    // key, journaled again in place of the next line (it would cancel her new orders), and
    // carol's own cancel all relabelled as the venue's (so that its nonce would not count):
    // the first reuses its nonce, the second's expiry is ten minutes from its time, beyond the
    // venue's window.
    for (what, client_signed) in [
        ("a venue-signed command journaled again", false),
        ("a client's command relabelled as the venue's", true),
    ] {
        let original = find(&lines, |line| {
            line["command"]["type"] == "cancelAll" && line["authorization"]["clientSigned"] == client_signed
        });
        let mut copied = lines.clone();
        let mut value: Value = serde_json::from_str(&lines[original]).unwrap();
        let next: Value = serde_json::from_str(&lines[original + 1]).unwrap();
        value["sequence"] = next["sequence"].clone();
        value["time"] = next["time"].clone();
        value["authorization"]["clientSigned"] = json!(false);
        copied[original + 1] = value.to_string();
        cases.push((what, copied, sequence_of(&lines[original + 1])));
    }

    // A configuration that raises a fee at once, journaled in place of a command (the review's
    // `configure(takerFee=100%)`, a victim's fill, `configure(back)`): a raise must be announced
    // a notice ahead, so the replay refuses it.
    let mut gouging = lines.clone();
    let config = dexd_venue::config::Config::embedded_default();
    let chain = config.chains.iter().find(|chain| chain.chain_id == 1).unwrap();
    let mut raised = chain.configuration(&config.limits);
    raised.engine.pairs[0].taker_fee = dexd_core::FeeRate::from_parts_per_million(1_000_000).unwrap();
    let messages = dexd_crypto::RequestMessages::new(&raised).unwrap();
    let replaced: Value = serde_json::from_str(&lines[order]).unwrap();
    gouging[order] = dexd::audit::format::command_line(
        sequence_of(&lines[order]),
        replaced["time"].as_u64().unwrap(),
        &dexd_core::Command::Configure(Box::new(raised)),
        None,
        &messages,
    )
    .to_string();
    cases.push(("a fee raised at once", gouging, sequence_of(&lines[order])));

    for (what, tampered, position) in cases {
        let venue = serve_journal(tampered, end).await;
        let directory = tempfile::tempdir().unwrap();
        let (held, output, errors) = audit_once(&venue, directory.path()).await;
        assert!(!held, "{what}: {output}\n{errors}");
        assert!(output.contains(&format!("FAIL {position} ")), "{what}: {output}");
        // The copy holds what checked, and nothing from the failure on.
        let copy = dexd_store::JournalReader::open(directory.path(), 1).unwrap();
        let mut copy: Box<dyn dexd_store::JournalRead> = Box::new(copy);
        assert_eq!(copy.last_sequence().unwrap(), position - 1, "{what}");
    }
}

/// A page over the size bound is not the end: the auditor asks for it again with fewer
/// commands, so no line size can stop it (a segment too large is read in pages too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_over_the_size_bound_is_read_again_in_smaller_pages() {
    let server = TestServer::start().await;
    trade_every_way(&server).await;
    let (lines, end) = journal_lines(&server).await;
    let venue = serve_journal_padded(lines, end, 4).await;
    let directory = tempfile::tempdir().unwrap();
    let (held, output, errors) = audit_once(&venue, directory.path()).await;
    assert!(held, "{output}\n{errors}");
    let copy = dexd_store::JournalReader::open(directory.path(), 1).unwrap();
    let mut copy: Box<dyn dexd_store::JournalRead> = Box::new(copy);
    assert_eq!(copy.last_sequence().unwrap(), end);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auditor_killed_mid_way_resumes_without_checking_twice() {
    let server = TestServer::start().await;
    let deposits = trade_every_way(&server).await + 1;
    fill_journal(&server, 12_000).await;
    let (_, end) = journal_lines(&server).await;
    let directory = tempfile::tempdir().unwrap();
    // Following, 500 commands a page: killed once it has checked some.
    let mut follower = RunningAuditor::start(&server.base_url, 1, directory.path(), &["--page-commands", "500"], &[]);
    let copy_path = directory.path().join("chain-1.sqlite3");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let checked = follower.checked_through();
        if copy_path.exists() && checked > 0 && checked < end {
            break;
        }
        assert!(checked < end, "the auditor finished before it could be killed");
        assert!(std::time::Instant::now() < deadline, "the auditor checked nothing");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    follower.kill();
    let (held, output, errors) = audit_once(&server.base_url, directory.path()).await;
    assert!(held, "{output}\n{errors}");
    // Each deposit counted once, across the two runs.
    assert!(
        output.contains(&format!("ledger deposits: {deposits} not checkable against a chain")),
        "{output}"
    );
    let reader = dexd_store::JournalReader::open(directory.path(), 1).unwrap();
    let mut reader: Box<dyn dexd_store::JournalRead> = Box::new(reader);
    assert_eq!(reader.last_sequence().unwrap(), end);
}
