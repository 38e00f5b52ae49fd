//! The crash test: the real binary under concurrent clients is killed with SIGKILL at a random
//! moment and restarted; every acknowledged change must be there, orders must agree with trades,
//! no book may be crossed, and money must be conserved exactly.
//!
//! Snapshots are written every few dozen commands during the runs, so that a kill also lands
//! during a snapshot's build or write; the restarted server (from the newest snapshot) must show
//! exactly what a replay of the whole journal shows.
//!
//! `cargo test -p dexd --test all durability::crash` runs three seeds. `DEXD_CRASH_SEEDS=200` runs more (the
//! opt-in soak); `DEXD_CRASH_SEED=17` runs one. A failure prints its seed.

use crate::common;

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use dexd_core::Decimal;
use dexd_crypto::{checksummed, PrivateKey};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

const CLIENTS: usize = 4;
const FEE_ACCOUNT: &str = "0x000000000000000000000000000000000000fee1";

struct Trader {
    key: String,
    address: String,
}

fn trader(index: usize) -> Trader {
    let key = format!("0x{}", format!("{:02x}", 0x40 + index).repeat(32));
    let address = checksummed(&PrivateKey::parse(&key).unwrap().address());
    Trader { key, address }
}

/// What the server acknowledged before it was killed.
#[derive(Default)]
struct Acknowledged {
    deposit_ids: Vec<(String, String)>,
    withdrawal_ids: Vec<(String, String)>,
    orders: Vec<String>,
    cancels: Vec<String>,
}

async fn client(base_url: String, index: usize, seed: u64, acknowledged: Arc<Mutex<Acknowledged>>) {
    let http = reqwest::Client::builder()
        .timeout(Duration::from_secs(5))
        .build()
        .unwrap();
    let me = trader(index);
    let mut random = StdRng::seed_from_u64(seed * 1_000 + index as u64);
    let mut open: Vec<String> = Vec::new();
    loop {
        let roll = random.gen_range(0..100);
        let (path, body) = if roll < 20 || open.len() > 40 {
            let (symbol, quantity) = if random.gen_bool(0.5) {
                ("ETH", "3")
            } else {
                ("USDC", "5000")
            };
            (
                "/portfolio/deposit",
                json!({"chainId": "1", "from": me.address, "symbol": symbol, "quantity": quantity, "privateKey": me.key}),
            )
        } else if roll < 25 {
            (
                "/portfolio/withdraw",
                json!({"chainId": "1", "from": me.address, "symbol": "USDC", "quantity": "7", "privateKey": me.key}),
            )
        } else if roll < 80 {
            let direction = if random.gen_bool(0.5) { "buy" } else { "sell" };
            let price = format!("{}", 2_495 + random.gen_range(0..10));
            let amount = format!("0.{:02}", random.gen_range(1..60));
            (
                "/order/addOrder",
                json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": direction, "price": price, "amount": amount, "privateKey": me.key}),
            )
        } else {
            if open.is_empty() {
                continue;
            }
            let order_id = open.swap_remove(random.gen_range(0..open.len()));
            (
                "/order/cancelOrder",
                json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": order_id, "privateKey": me.key}),
            )
        };
        let Ok(response) = http.post(format!("{base_url}{path}")).json(&body).send().await else {
            return; // The server is gone.
        };
        let status = response.status().as_u16();
        let Ok(answer) = response.json::<Value>().await else {
            return;
        };
        if status != 200 {
            continue;
        }
        let mut acknowledged = acknowledged.lock().unwrap();
        match path {
            "/portfolio/deposit" => acknowledged.deposit_ids.push((
                me.address.clone(),
                answer["deposit"]["id"].as_str().unwrap().to_string(),
            )),
            "/portfolio/withdraw" => acknowledged.withdrawal_ids.push((
                me.address.clone(),
                answer["withdrawal"]["id"].as_str().unwrap().to_string(),
            )),
            "/order/addOrder" => {
                let order_id = answer["order"]["orderId"].as_str().unwrap().to_string();
                if answer["order"]["status"] == "open" {
                    open.push(order_id.clone());
                }
                acknowledged.orders.push(order_id);
            }
            _ => acknowledged
                .cancels
                .push(answer["order"]["orderId"].as_str().unwrap().to_string()),
        }
    }
}

fn units(text: &str) -> u128 {
    Decimal::parse(text).unwrap().to_scaled_units(18).unwrap()
}

async fn check_after_restart(base_url: &str, acknowledged: &Acknowledged) {
    let http = reqwest::Client::new();
    let accounts: Vec<String> = (0..CLIENTS).map(|index| trader(index).address).collect();
    let mut deposited: HashMap<String, u128> = HashMap::new();
    let mut present_transfers = HashSet::new();
    for account in &accounts {
        for (path, field, sign) in [
            ("/portfolio/depositHistories", "deposits", 1i8),
            ("/portfolio/withdrawHistories", "withdrawals", -1),
        ] {
            for transfer in
                common::all_pages(&http, base_url, path, &[("chainId", "1"), ("account", account)], field).await
            {
                present_transfers.insert(transfer["id"].as_str().unwrap().to_string());
                let entry = deposited
                    .entry(transfer["symbol"].as_str().unwrap().to_string())
                    .or_default();
                let amount = units(transfer["quantity"].as_str().unwrap());
                *entry = if sign > 0 { *entry + amount } else { *entry - amount };
            }
        }
    }
    for (_, id) in acknowledged.deposit_ids.iter().chain(&acknowledged.withdrawal_ids) {
        assert!(present_transfers.contains(id), "acknowledged transfer {id} is lost");
    }
    // Conservation: all totals, the fee account's included, equal deposits minus withdrawals.
    let mut totals: HashMap<String, u128> = HashMap::new();
    for account in accounts.iter().map(String::as_str).chain([FEE_ACCOUNT]) {
        let balances = common::get_ok(
            &http,
            base_url,
            "/account/assetBalances",
            &[("chainId", "1"), ("account", account)],
        )
        .await;
        for balance in balances["balances"].as_array().unwrap() {
            let total = units(balance["total"].as_str().unwrap());
            assert_eq!(
                total,
                units(balance["available"].as_str().unwrap()) + units(balance["locked"].as_str().unwrap())
            );
            *totals
                .entry(balance["symbol"].as_str().unwrap().to_string())
                .or_default() += total;
        }
    }
    for symbol in ["ETH", "USDC"] {
        assert_eq!(
            totals.get(symbol).copied().unwrap_or(0),
            deposited.get(symbol).copied().unwrap_or(0),
            "{symbol} is not conserved"
        );
    }
    // Orders: every acknowledged one exists, acknowledged cancels are cancelled, and every
    // order's filled amount is the sum of its trades.
    let mut orders: HashMap<String, Value> = HashMap::new();
    for account in &accounts {
        for path in ["/order/openOrders", "/order/filledOrders", "/order/cancelledOrders"] {
            for order in common::all_pages(
                &http,
                base_url,
                path,
                &[("chainId", "1"), ("account", account)],
                "orders",
            )
            .await
            {
                orders.insert(order["orderId"].as_str().unwrap().to_string(), order);
            }
        }
    }
    for order_id in &acknowledged.orders {
        assert!(orders.contains_key(order_id), "acknowledged order {order_id} is lost");
    }
    for order_id in &acknowledged.cancels {
        assert_eq!(
            orders[order_id]["status"], "cancelled",
            "acknowledged cancel of {order_id} is lost"
        );
    }
    let mut traded: HashMap<String, u128> = HashMap::new();
    for trade in common::all_pages(
        &http,
        base_url,
        "/order/tradeHistories",
        &[("chainId", "1"), ("pair", "ETH/USDC")],
        "trades",
    )
    .await
    {
        for side in ["makerOrderId", "takerOrderId"] {
            *traded.entry(trade[side].as_str().unwrap().to_string()).or_default() +=
                units(trade["amount"].as_str().unwrap());
        }
    }
    for (order_id, order) in &orders {
        assert_eq!(
            traded.get(order_id).copied().unwrap_or(0),
            units(order["filled"].as_str().unwrap()),
            "order {order_id} disagrees with its trades"
        );
    }
    let best = |side: &'static str| {
        let http = http.clone();
        async move {
            let book = common::get_ok(
                &http,
                base_url,
                side,
                &[("chainId", "1"), ("pair", "ETH/USDC"), ("depth", "1")],
            )
            .await;
            book["levels"]
                .as_array()
                .unwrap()
                .first()
                .map(|level| units(level["price"].as_str().unwrap()))
        }
    };
    if let (Some(bid), Some(ask)) = (best("/order/buyOrderbooks").await, best("/order/sellOrderbooks").await) {
        assert!(bid < ask, "the book is crossed after recovery");
    }
}

/// The traders' addresses and the fee account's.
fn accounts_and_fees() -> Vec<String> {
    (0..CLIENTS)
        .map(|index| trader(index).address)
        .chain([FEE_ACCOUNT.to_string()])
        .collect()
}

/// Runs one seed; returns whether the restart started from a snapshot.
fn run_seed(seed: u64) -> bool {
    let data_dir = tempfile::tempdir().unwrap();
    let configs = tempfile::tempdir().unwrap();
    let with_snapshots = common::snapshot_config(configs.path(), 40);
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let acknowledged = Arc::new(Mutex::new(Acknowledged::default()));
    let mut server = common::BinaryServer::start_with(data_dir.path(), Some(&with_snapshots));
    let kill_after = Duration::from_millis(StdRng::seed_from_u64(seed).gen_range(200..1_500));
    runtime.block_on(async {
        let clients: Vec<_> = (0..CLIENTS)
            .map(|index| tokio::spawn(client(server.base_url.clone(), index, seed, Arc::clone(&acknowledged))))
            .collect();
        // The random moment counts from the first acknowledged order, so that a slow machine
        // still kills a server in the middle of its work rather than before it.
        for _ in 0..1_000 {
            if !acknowledged.lock().unwrap().orders.is_empty() {
                break;
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        tokio::time::sleep(kill_after).await;
        // Child::kill sends SIGKILL: no chance to flush or shut down.
        server.child.kill().expect("SIGKILL");
        server.child.wait().unwrap();
        for client in clients {
            let _ = client.await;
        }
    });
    let acknowledged = acknowledged.lock().unwrap();
    assert!(
        !acknowledged.orders.is_empty(),
        "seed {seed}: the clients got nothing done before the kill"
    );
    // The same journal, started without snapshots: the whole journal replayed.
    let copy = tempfile::tempdir().unwrap();
    common::copy_directory(data_dir.path(), copy.path());
    let log = Arc::new(Mutex::new(String::new()));
    let restarted =
        common::BinaryServer::start_logging(data_dir.path(), Some(&with_snapshots), "info", Some(Arc::clone(&log)));
    runtime.block_on(check_after_restart(&restarted.base_url, &acknowledged));
    let from_snapshot = runtime.block_on(common::observable_state(&restarted.base_url, &accounts_and_fees()));
    drop(restarted);
    let replayed = common::BinaryServer::start_with(copy.path(), Some(&common::snapshot_config(configs.path(), 0)));
    let from_journal = runtime.block_on(common::observable_state(&replayed.base_url, &accounts_and_fees()));
    assert!(
        from_snapshot == from_journal,
        "seed {seed}: the start from a snapshot shows another state than the whole journal's replay"
    );
    let restored = log.lock().unwrap().contains("chain state restored from a snapshot");
    restored
}

#[test]
fn acknowledged_changes_survive_sigkill_and_money_is_conserved() {
    let seeds: Vec<u64> = match (std::env::var("DEXD_CRASH_SEED"), std::env::var("DEXD_CRASH_SEEDS")) {
        (Ok(seed), _) => vec![seed.parse().unwrap()],
        (_, Ok(count)) => (1..=count.parse().unwrap()).collect(),
        _ => vec![1, 2, 3],
    };
    let mut restored_from_snapshots = 0;
    for seed in &seeds {
        let seed = *seed;
        match std::panic::catch_unwind(|| run_seed(seed)) {
            Ok(restored) => restored_from_snapshots += usize::from(restored),
            Err(panic) => {
                eprintln!("crash test failed with seed {seed} (rerun with DEXD_CRASH_SEED={seed})");
                std::panic::resume_unwind(panic);
            }
        }
    }
    // A kill comes 200 ms or more after the first order, by when snapshots have been written.
    if seeds.len() >= 3 {
        assert!(
            restored_from_snapshots > 0,
            "no restart used a snapshot: the test no longer covers them"
        );
    }
}
