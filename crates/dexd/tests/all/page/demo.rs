//! `dexd serve --demo`, from outside: the real binary, the API as any client reads it. Within
//! seconds every pair of every chain has a two-sided book and trades; the page says it is a
//! demo; the demo's accounts are ordinary accounts, listed in the log by address and never by
//! key; a graceful stop takes the makers' orders out of the books; a vault chain refuses it.

use crate::common;

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{BinaryServer, TestServer};
use dexd_venue::config::{Config, DEFAULT_CONFIG_TOML};
use serde_json::Value;

/// How long the test waits for a live market on every pair; the demo takes a few seconds.
const LIVE_WITHIN: Duration = Duration::from_secs(60);

/// Every (chain id, pair) of the embedded configuration.
fn every_pair() -> Vec<(String, String)> {
    Config::embedded_default()
        .chains
        .iter()
        .flat_map(|chain| {
            chain
                .pairs
                .iter()
                .map(|pair| (chain.chain_id.to_string(), pair.symbol.clone()))
        })
        .collect()
}

async fn levels(server: &TestServer, path: &str, chain_id: &str, pair: &str) -> Vec<Value> {
    let (status, body) = server.get(path, &[("chainId", chain_id), ("pair", pair)]).await;
    assert_eq!(status, 200, "{body}");
    body["levels"].as_array().unwrap().clone()
}

fn price(level: &Value) -> f64 {
    level["price"].as_str().unwrap().parse().unwrap()
}

/// Whether the pair has a two-sided, uncrossed book and at least one trade.
async fn is_live(server: &TestServer, chain_id: &str, pair: &str) -> bool {
    let bids = levels(server, "/order/buyOrderbooks", chain_id, pair).await;
    let asks = levels(server, "/order/sellOrderbooks", chain_id, pair).await;
    let (status, trades) = server
        .get("/order/tradeHistories", &[("chainId", chain_id), ("pair", pair)])
        .await;
    assert_eq!(status, 200, "{trades}");
    if let (Some(best_bid), Some(best_ask)) = (bids.first(), asks.first()) {
        assert!(
            price(best_bid) < price(best_ask),
            "{pair} on {chain_id} is crossed: {bids:?} {asks:?}"
        );
    }
    !bids.is_empty() && !asks.is_empty() && !trades["trades"].as_array().unwrap().is_empty()
}

/// The trading page's HTML.
async fn page_text(server: &TestServer) -> String {
    server
        .client
        .get(&server.base_url)
        .send()
        .await
        .unwrap()
        .text()
        .await
        .unwrap()
}

/// Every `0x` followed by exactly 64 hex digits in `text`: how a private key (or an order id)
/// is written.
fn sixty_four_digit_hex_strings(text: &str) -> Vec<&str> {
    let bytes = text.as_bytes();
    let mut found = Vec::new();
    for (start, _) in text.match_indices("0x") {
        let digits = bytes[start + 2..]
            .iter()
            .take_while(|byte| byte.is_ascii_hexdigit())
            .count();
        if digits == 64 {
            found.push(&text[start..start + 66]);
        }
    }
    found
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_demo_venue_is_live_on_every_pair_within_seconds_and_its_makers_leave_at_the_stop() {
    let data_dir = tempfile::tempdir().unwrap();
    let log = Arc::new(Mutex::new(String::new()));
    let mut binary = BinaryServer::start_demo(data_dir.path(), Arc::clone(&log));
    let server = TestServer::at(&binary.base_url);
    let began = Instant::now();
    let mut waiting = every_pair();
    while !waiting.is_empty() {
        assert!(
            began.elapsed() < LIVE_WITHIN,
            "no live market within {LIVE_WITHIN:?} on {waiting:?}"
        );
        let mut still_waiting = Vec::new();
        for (chain_id, pair) in waiting {
            if !is_live(&server, &chain_id, &pair).await {
                still_waiting.push((chain_id, pair));
            }
        }
        waiting = still_waiting;
        tokio::time::sleep(Duration::from_millis(250)).await;
    }
    eprintln!("every pair live after {:?}", began.elapsed());

    // Candles, from those trades.
    let (status, candles) = server
        .get(
            "/order/tradesOHCL",
            &[("chainId", "1"), ("pair", "ETH/USDC"), ("interval", "1m")],
        )
        .await;
    assert_eq!(status, 200);
    let candles = candles["candles"].as_array().unwrap();
    assert!(!candles.is_empty() && candles.iter().all(|candle| candle["trades"].as_u64().unwrap() > 0));

    // The page shows its banner.
    let page = page_text(&server).await;
    assert!(
        page.contains(r#"<p id="demo-banner" class="demo-banner">"#),
        "the banner is hidden"
    );

    // The log says it is a demo and names the makers; a maker is an ordinary account whose
    // orders and balances read like anyone's.
    let text = log.lock().unwrap().clone();
    assert!(text.contains("this venue's market is a demo"), "{text}");
    let makers: Vec<String> = text
        .lines()
        .filter(|line| line.contains("demo: market maker") && line.contains("chain_id=1 "))
        .filter_map(|line| line.split("maker=").nth(1))
        .map(|rest| rest.split_whitespace().next().unwrap().to_string())
        .collect();
    assert_eq!(makers.len(), Config::embedded_default().chains[0].pairs.len(), "{text}");
    // A requote cancels the ladder, then places the new one: a read may fall between the two.
    let mut open = Vec::new();
    for _ in 0..50 {
        let (status, answer) = server
            .get("/order/openOrders", &[("chainId", "1"), ("account", &makers[0])])
            .await;
        assert_eq!(status, 200, "{answer}");
        open = answer["orders"].as_array().unwrap().clone();
        if !open.is_empty() {
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(
        !open.is_empty() && open.len() <= 2 * dexd::demo::LEVELS_PER_SIDE,
        "{open:?}"
    );
    let (status, balances) = server
        .get("/account/assetBalances", &[("chainId", "1"), ("account", &makers[0])])
        .await;
    assert_eq!(status, 200, "{balances}");
    assert!(!balances["balances"].as_array().unwrap().is_empty(), "{balances}");
    // No key in the log: the demo writes no order id either, so no 64-digit hex string at all.
    assert_eq!(sixty_four_digit_hex_strings(&text), Vec::<&str>::new());

    // A graceful stop cancels the makers' orders: restarted without the demo, the books are empty.
    assert!(binary.stop_gracefully().await.success());
    let binary = BinaryServer::start(data_dir.path());
    let server = TestServer::at(&binary.base_url);
    for (chain_id, pair) in every_pair() {
        assert_eq!(
            levels(&server, "/order/buyOrderbooks", &chain_id, &pair).await,
            Vec::<Value>::new()
        );
        assert_eq!(
            levels(&server, "/order/sellOrderbooks", &chain_id, &pair).await,
            Vec::<Value>::new()
        );
    }
    // Nothing in the page says demo any more.
    let page = page_text(&server).await;
    assert!(page.contains(dexd::api::page::HIDDEN_DEMO_BANNER));
}

#[test]
fn the_demo_is_refused_on_a_vault_chain_with_a_clear_message() {
    let folder = tempfile::tempdir().unwrap();
    let config = folder.path().join("vault.toml");
    std::fs::write(
        &config,
        DEFAULT_CONFIG_TOML.replacen(
            "[[chains.assets]]",
            "[chains.custody]\nmode = \"vault\"\nrpc_url = \"http://127.0.0.1:9\"\n\
             vault = \"0x00000000000000000000000000000000000de7d1\"\noperator_key_env = \"DEXD_TEST_OPERATOR_KEY\"\n\
             [[chains.assets]]",
            1,
        ),
    )
    .unwrap();
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args(["serve", "--demo", "--listen", "127.0.0.1:0", "--data-dir"])
        .arg(folder.path().join("data"))
        .arg("--config")
        .arg(&config)
        .output()
        .unwrap();
    assert_eq!(output.status.code(), Some(2));
    let message = String::from_utf8_lossy(&output.stderr);
    assert!(
        message.contains("--demo runs only on ledger chains") && message.contains("chain 1 (Ethereum)"),
        "{message}"
    );
    // Refused before anything was created.
    assert!(!folder.path().join("data").exists());
}
