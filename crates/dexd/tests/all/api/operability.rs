//! Operating the service: `/ready` during a long start, `/metrics` read by a real Prometheus text
//! parser (Python's `prometheus_client`, from the test virtualenv of
//! `scripts/install-test-tools`), and an online backup taken under load that starts into exactly
//! the state the original had at the backup's journal sequence.

use crate::common;

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use common::{BinaryServer, TestServer, Trader};
use dexd_core::{
    Address, Amount, AssetIndex, Command, Direction, Engine, NewOrder, OrderId, OrderType, PairIndex, Price, Quantity,
    TimeInForce, TransferRequest,
};
use dexd_store::{Authorization, JournalEntry};
use dexd_venue::config::Config;
use serde_json::{json, Value};

/// Writes a journal of `orders` resting sell orders (after two deposits) straight into a data
/// directory, as the recovery benchmark does, so that a start has a long replay to do.
fn write_journal(data_dir: &Path, orders: u64) {
    let config = Config::embedded_default();
    let engine_config = config.chain(1).unwrap().engine_config(&config.limits);
    let (mut journal, _projector, _reader) = dexd_store::open(data_dir, 1, Duration::from_secs(5)).unwrap();
    let mut engine = Engine::new(engine_config).unwrap();
    let mut events = Vec::new();
    let seller = |number: u64| {
        let mut bytes = [0x51u8; 20];
        bytes[12..].copy_from_slice(&(number % 400).to_be_bytes());
        Address::from_bytes(bytes)
    };
    let mut commands: Vec<Command> = (0..400)
        .map(|number| {
            Command::Deposit(TransferRequest {
                transfer_id: [1; 32],
                account: seller(number),
                asset: AssetIndex(0),
                amount: Amount::from_units(10u128.pow(30)),
            })
        })
        .collect();
    commands.extend((0..orders).map(|number| {
        let mut id = [0u8; 32];
        id[24..].copy_from_slice(&number.to_be_bytes());
        Command::PlaceOrder(NewOrder {
            order_id: OrderId::from_bytes(id),
            client_order_id: None,
            account: seller(number),
            pair: PairIndex(0),
            order_type: OrderType::Limit,
            direction: Direction::Sell,
            time_in_force: TimeInForce::GoodTillCancelled,
            post_only: false,
            price: Price::from_ticks(250_000 + number % 1_000),
            quantity: Quantity::from_lots(10),
            conditions: Default::default(),
        })
    }));
    let mut sequence = 0u64;
    for chunk in commands.chunks(10_000) {
        let entries: Vec<JournalEntry> = chunk
            .iter()
            .map(|command| {
                sequence += 1;
                events.clear();
                engine
                    .execute(command.clone(), 1_700_000_000_000 + sequence, &mut events)
                    .unwrap();
                JournalEntry {
                    sequence,
                    time_ms: 1_700_000_000_000 + sequence,
                    command: dexd_store::codec::encode_command(command),
                    authorization: match command {
                        Command::PlaceOrder(order) => Some(Authorization {
                            order_id: Some(order.order_id),
                            // What the venue signs with a key: a nonce of its own and an
                            // expiry in its window of the line's time.
                            nonce: *order.order_id.as_bytes(),
                            expiry_ms: 1_700_000_000_000 + sequence,
                            signature: [0; 65],
                            client_signed: false,
                            batch: None,
                            claims_batch_nonce: false,
                            approved_at_block: None,
                        }),
                        _ => None,
                    },
                }
            })
            .collect();
        journal.append(&entries).unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn ready_is_503_during_a_long_replay_and_200_after() {
    let data_dir = tempfile::tempdir().unwrap();
    write_journal(data_dir.path(), 150_000);
    let server = BinaryServer::start_listening(data_dir.path(), None, None);
    let http = reqwest::Client::new();
    let url = |path: &str| format!("{}{path}", server.base_url);

    let ready = http.get(url("/ready")).send().await.unwrap();
    assert_eq!(
        ready.status(),
        503,
        "the replay of 150,000 commands has not finished yet"
    );
    assert_eq!(ready.headers()["retry-after"], "1");
    let body: Value = ready.json().await.unwrap();
    assert_eq!(body["error"]["code"], "UNAVAILABLE");
    let health = http.get(url("/health")).send().await.unwrap();
    assert_eq!(health.status(), 200, "the process answers while it starts");
    let balances = http
        .get(url(
            "/account/assetBalances?chainId=1&account=0x5151515151515151515151515151515151515151",
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(balances.status(), 503);
    let metrics = http.get(url("/metrics")).send().await.unwrap().text().await.unwrap();
    assert!(metrics.lines().any(|line| line == "dexd_ready 0"), "{metrics}");

    common::wait_until_ready(&http, &server.base_url).await;
    let body: Value = http.get(url("/ready")).send().await.unwrap().json().await.unwrap();
    assert_eq!(body, json!({"status": "ready", "custodyHalted": []}));
    let book: Value = http
        .get(url("/order/sellOrderbooks?chainId=1&pair=ETH/USDC&depth=1000"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(
        book["levels"].as_array().unwrap().len(),
        1_000,
        "every replayed order rests"
    );
}

/// The Python of the test virtualenv.
fn python() -> PathBuf {
    let target = std::env::var("CARGO_TARGET_DIR").map_or_else(
        |_| Path::new(env!("CARGO_MANIFEST_DIR")).join("../../target"),
        PathBuf::from,
    );
    let python = target.join("python-test-venv/bin/python");
    assert!(
        python.exists(),
        "{} is missing: run scripts/install-test-tools",
        python.display()
    );
    python
}

/// Parses an exposition with `prometheus_client`'s text parser; returns every sample as
/// `{"family", "type", "help", "name", "labels", "value"}`.
fn parse_exposition(text: &str) -> Vec<Value> {
    use std::io::Write;
    let script = r#"
import json, sys
from prometheus_client.parser import text_string_to_metric_families
samples = []
for family in text_string_to_metric_families(sys.stdin.read()):
    for sample in family.samples:
        samples.append({"family": family.name, "type": family.type, "help": family.documentation,
                        "name": sample.name, "labels": sample.labels, "value": sample.value})
print(json.dumps(samples))
"#;
    let mut child = std::process::Command::new(python())
        .args(["-c", script])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(text.as_bytes()).unwrap();
    let output = child.wait_with_output().unwrap();
    assert!(
        output.status.success(),
        "prometheus_client refused the exposition: {}",
        String::from_utf8_lossy(&output.stderr)
    );
    serde_json::from_slice(&output.stdout).unwrap()
}

/// The value of the sample `name` whose labels include `labels` (0 when there is none).
fn sample(samples: &[Value], name: &str, labels: &[(&str, &str)]) -> f64 {
    samples
        .iter()
        .filter(|sample| sample["name"] == name)
        .find(|sample| labels.iter().all(|(label, value)| sample["labels"][*label] == *value))
        .map_or(0.0, |sample| sample["value"].as_f64().unwrap())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_parse_as_prometheus_text_and_move_with_traffic() {
    let server = TestServer::start().await;
    let scrape = || async {
        let response = server
            .client
            .get(format!("{}/metrics", server.base_url))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(
            response.headers()["content-type"],
            "text/plain; version=0.0.4; charset=utf-8"
        );
        parse_exposition(&response.text().await.unwrap())
    };
    let before = scrape().await;
    let placed = |samples: &[Value]| {
        sample(
            samples,
            "dexd_http_requests_total",
            &[("operation", "/order/addOrder"), ("status", "200")],
        )
    };
    assert_eq!(placed(&before), 0.0);

    let (maker, taker) = (Trader::new(0x61), Trader::new(0x62));
    server.deposit(&maker, "ETH", "10").await;
    server.deposit(&taker, "USDC", "100000").await;
    for price in ["2500", "2501", "2502"] {
        server.limit(&maker, "sell", price, "1").await;
    }
    server.limit(&taker, "buy", "2500", "0.5").await;
    let (status, _) = server.get("/order/openOrders", &[("chainId", "1")]).await;
    assert_eq!(status, 400);

    // The projector writes the history after the acknowledgment (gathering a small batch for up
    // to 5 ms), so its lag is a level that reaches 0 shortly after the last write, not at once.
    let mut after = scrape().await;
    for _ in 0..100 {
        if sample(&after, "dexd_projector_lag_commands", &[("chain_id", "1")]) == 0.0 {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        after = scrape().await;
    }
    for family in after.iter().map(|sample| sample["family"].as_str().unwrap()) {
        assert!(family.starts_with("dexd_"), "{family} lacks the prefix");
    }
    for sample in &after {
        assert!(
            !sample["help"].as_str().unwrap().is_empty(),
            "{} has no help",
            sample["family"]
        );
        if sample["type"] == "counter" {
            assert!(sample["name"].as_str().unwrap().ends_with("_total"), "{sample}");
        }
    }
    assert_eq!(placed(&after), 4.0);
    assert_eq!(
        sample(
            &after,
            "dexd_http_requests_total",
            &[("operation", "/order/openOrders"), ("status", "400")]
        ),
        1.0
    );
    assert_eq!(
        sample(
            &after,
            "dexd_http_request_duration_seconds_count",
            &[("operation", "/order/addOrder")]
        ),
        4.0
    );
    assert!(
        sample(
            &after,
            "dexd_http_request_duration_seconds_bucket",
            &[("operation", "/order/addOrder"), ("le", "+Inf")]
        ) == 4.0
    );
    let chain = [("chain_id", "1")];
    assert_eq!(
        sample(&after, "dexd_journal_sequence", &chain),
        7.0,
        "the configuration, two deposits and four orders"
    );
    assert!(sample(&after, "dexd_journal_batch_commands_count", &chain) >= 1.0);
    assert_eq!(sample(&after, "dexd_journal_batch_commands_sum", &chain), 7.0);
    assert!(sample(&after, "dexd_journal_commit_duration_seconds_count", &chain) >= 1.0);
    assert_eq!(
        sample(&after, "dexd_resting_orders", &chain),
        3.0,
        "one sell filled by half"
    );
    assert_eq!(
        sample(&after, "dexd_accounts", &chain),
        3.0,
        "two traders and the fee account"
    );
    assert_eq!(sample(&after, "dexd_write_queue_depth", &chain), 0.0);
    assert_eq!(sample(&after, "dexd_write_queue_capacity", &chain), 4_096.0);
    assert_eq!(sample(&after, "dexd_projector_lag_commands", &chain), 0.0);
    assert_eq!(sample(&after, "dexd_snapshot_commands_behind", &chain), 7.0);
    assert_eq!(sample(&after, "dexd_ready", &[]), 1.0);
    assert!(sample(&after, "dexd_http_connections", &[]) >= 1.0);

    // A stream subscription shows as one.
    let mut stream = common::stream_client::StreamClient::connect(&server.base_url).await;
    stream
        .send(json!({"op": "subscribe", "id": 1, "channel": "trades", "chainId": "1", "pair": "ETH/USDC"}))
        .await;
    let _ = stream.next().await;
    let with_stream = scrape().await;
    assert_eq!(sample(&with_stream, "dexd_stream_connections", &[]), 1.0);
    assert_eq!(sample(&with_stream, "dexd_stream_subscriptions", &chain), 1.0);
}

/// Places orders, deposits and cancels from `traders` until `stop`, each trader in a task.
async fn load(base_url: String, traders: Vec<Trader>, stop: Arc<AtomicBool>) {
    let mut tasks = Vec::new();
    for (index, trader) in traders.into_iter().enumerate() {
        let (base_url, stop) = (base_url.clone(), Arc::clone(&stop));
        tasks.push(tokio::spawn(async move {
            let server = TestServer::at(&base_url);
            server.deposit(&trader, "ETH", "1000").await;
            server.deposit(&trader, "USDC", "10000000").await;
            let mut number = 0u64;
            while !stop.load(Ordering::Acquire) {
                number += 1;
                let direction = if (number + index as u64).is_multiple_of(2) { "buy" } else { "sell" };
                let price = format!("{}", 2_490 + (number * 7 + index as u64) % 20);
                let placed = server.limit(&trader, direction, &price, "0.3").await;
                if number.is_multiple_of(5) {
                    if let Some(order_id) = placed["order"]["orderId"].as_str() {
                        let _ = server
                            .post_json(
                                "/order/cancelOrder",
                                json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": order_id, "privateKey": trader.key}),
                            )
                            .await;
                    }
                }
                if number.is_multiple_of(11) {
                    server.deposit(&trader, "USDC", "5").await;
                }
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_backup_under_load_starts_into_the_state_at_its_sequence() {
    let folder = tempfile::tempdir().unwrap();
    let data_dir = folder.path().join("data");
    let config = common::snapshot_config(folder.path(), 200);
    let server = BinaryServer::start_with(&data_dir, Some(&config));
    let traders: Vec<Trader> = (0..4).map(|index| Trader::new(0x71 + index)).collect();
    let mut accounts: Vec<String> = traders.iter().map(|trader| trader.address.clone()).collect();
    accounts.push("0x000000000000000000000000000000000000fee1".into());
    let stop = Arc::new(AtomicBool::new(false));
    let running = tokio::spawn(load(server.base_url.clone(), traders, Arc::clone(&stop)));
    // Under load for a while (snapshots are written meanwhile), then the backup, load going on.
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    let backup_dir = folder.path().join("backup");
    let output = std::process::Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args(["backup", "--data-dir"])
        .arg(&data_dir)
        .arg("--to")
        .arg(&backup_dir)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let report = String::from_utf8(output.stdout).unwrap();
    let backup_sequence: u64 = report
        .lines()
        .find_map(|line| line.strip_prefix("chain 1: journal through command "))
        .and_then(|rest| rest.split_whitespace().next())
        .and_then(|number| number.parse().ok())
        .unwrap_or_else(|| panic!("no sequence for chain 1 in: {report}"));
    tokio::time::sleep(Duration::from_millis(500)).await;
    stop.store(true, Ordering::Release);
    running.await.unwrap();
    drop(server);

    // The original as it was at the backup's sequence: its journal cut there, its history and
    // later snapshots deleted (rebuilt from the journal at start).
    let reference = folder.path().join("reference");
    common::copy_directory(&data_dir, &reference);
    let journal = rusqlite::Connection::open(dexd_store::database_path(&reference, 1)).unwrap();
    let last: i64 = journal
        .query_row("SELECT MAX(sequence) FROM commands", [], |row| row.get(0))
        .unwrap();
    assert!(last as u64 > backup_sequence, "the load went on after the backup");
    journal
        .execute("DELETE FROM commands WHERE sequence > ?1", [backup_sequence as i64])
        .unwrap();
    drop(journal);
    let history = dexd_store::history_path(&reference, 1);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", history.display()));
    }
    for file in
        dexd_store::snapshots::list_snapshots(&dexd_store::snapshots::snapshot_directory(&reference, 1)).unwrap()
    {
        if file.sequence > backup_sequence {
            std::fs::remove_file(file.path).unwrap();
        }
    }
    let copied_snapshots =
        dexd_store::snapshots::list_snapshots(&dexd_store::snapshots::snapshot_directory(&backup_dir, 1)).unwrap();
    assert!(!copied_snapshots.is_empty(), "the backup holds the snapshots: {report}");

    let log = Arc::new(std::sync::Mutex::new(String::new()));
    let restored = BinaryServer::start_logging(&backup_dir, Some(&config), "info", Some(Arc::clone(&log)));
    let from_backup = common::observable_state(&restored.base_url, &accounts).await;
    assert!(
        log.lock().unwrap().contains("chain state restored from a snapshot"),
        "the start on the backup used its snapshot"
    );
    drop(restored);
    let at_sequence = BinaryServer::start_with(&reference, Some(&config));
    let expected = common::observable_state(&at_sequence.base_url, &accounts).await;
    assert!(
        from_backup == expected,
        "the backup differs from the original at command {backup_sequence}"
    );
    let orders: usize = accounts
        .iter()
        .map(|account| from_backup[account]["/order/filledOrders"].as_array().unwrap().len())
        .sum();
    assert!(orders > 10, "the backup holds the load's orders ({orders} filled)");
}

/// A single node's writes carry their journal position, and a read that names a position reads
/// it at once; one the journal never reached is 503 at once (no write was ever answered with
/// it), and one that is not a number is 400.
#[tokio::test]
async fn a_single_node_answers_the_cluster_headers() {
    let server = TestServer::start().await;
    let http = reqwest::Client::new();
    let alice = common::Trader::new(0xa1);
    let written = http
        .post(format!("{}/portfolio/deposit", server.base_url))
        .json(&serde_json::json!({"chainId": "1", "from": alice.address, "symbol": "USDC", "quantity": "2", "privateKey": alice.key}))
        .send()
        .await
        .unwrap();
    assert_eq!(written.status(), 200);
    assert!(
        written.headers().get("x-dexd-node").is_none(),
        "no cluster, no node name"
    );
    let position: u64 = written.headers()["x-dexd-sequence"].to_str().unwrap().parse().unwrap();
    let read = |minimum: String| {
        http.get(format!("{}/account/assetBalances", server.base_url))
            .query(&[("chainId", "1"), ("account", alice.address.as_str())])
            .header("X-Dexd-Min-Sequence", minimum)
            .send()
    };
    assert_eq!(read(position.to_string()).await.unwrap().status(), 200);
    let beyond = read((position + 1_000).to_string()).await.unwrap();
    assert_eq!(beyond.status(), 503);
    let body: serde_json::Value = beyond.json().await.unwrap();
    assert!(
        body["error"]["message"].as_str().unwrap().contains("never written"),
        "{body}"
    );
    assert_eq!(read("-1".to_string()).await.unwrap().status(), 400);
}
