//! No private key reaches a log line (at the most verbose level) or a file in the data directory.

use std::io::Read;
use std::process::{Command, Stdio};

use dexd_crypto::{checksummed, PrivateKey};
use serde_json::json;

#[test]
fn keys_never_appear_in_logs_or_stored_files_even_at_trace_level() {
    let data_dir = tempfile::tempdir().unwrap();
    // Snapshots after every few commands, so that one is among the stored files.
    let config = data_dir.path().join("dexd.toml");
    std::fs::write(
        &config,
        format!(
            "{}\n[snapshots]\nevery_commands = 4\ncheck_interval_ms = 10\n",
            dexd_venue::config::DEFAULT_CONFIG_TOML
        ),
    )
    .unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(data_dir.path())
        .env("RUST_LOG", "trace")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdout = child.stdout.take().unwrap();
    let mut log = Vec::new();
    let mut buffer = [0u8; 4096];
    let address = loop {
        let read = stdout.read(&mut buffer).unwrap();
        assert!(read > 0, "dexd exited before listening");
        log.extend_from_slice(&buffer[..read]);
        let text = String::from_utf8_lossy(&log);
        if let Some(line) = text
            .lines()
            .find(|line| line.contains("dexd listening") && line.contains("address="))
        {
            break line
                .split("address=")
                .nth(1)
                .unwrap()
                .split_whitespace()
                .next()
                .unwrap()
                .to_string();
        }
    };
    let keys: Vec<String> = [0x5a_u8, 0x6b]
        .iter()
        .map(|byte| format!("0x{}", format!("{byte:02x}").repeat(32)))
        .collect();
    let base_url = format!("http://{address}");
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    runtime.block_on(async {
        let http = reqwest::Client::new();
        for _ in 0..6_000 {
            let ready = http.get(format!("{base_url}/ready")).send().await;
            if ready.is_ok_and(|response| response.status() == 200) {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        for key in &keys {
            let from = checksummed(&PrivateKey::parse(key).unwrap().address());
            let deposit = json!({"chainId": "1", "from": from, "symbol": "USDC", "quantity": "1000", "privateKey": key});
            assert_eq!(http.post(format!("{base_url}/portfolio/deposit")).json(&deposit).send().await.unwrap().status(), 200);
            let order = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100", "amount": "1", "privateKey": key});
            let placed: serde_json::Value = http.post(format!("{base_url}/order/addOrder")).json(&order).send().await.unwrap().json().await.unwrap();
            let cancel = [("chainId", "1"), ("symbol", "ETH/USDC"), ("orderId", placed["order"]["orderId"].as_str().unwrap()), ("privateKey", key)];
            assert_eq!(http.post(format!("{base_url}/order/cancelOrder")).form(&cancel).send().await.unwrap().status(), 200);
            // Refused requests carrying the key: wrong account, bad order, bad key spelling.
            let mismatch = json!({"chainId": "1", "from": "0x0000000000000000000000000000000000000001", "symbol": "USDC", "quantity": "1", "privateKey": key});
            assert_eq!(http.post(format!("{base_url}/portfolio/withdraw")).json(&mismatch).send().await.unwrap().status(), 403);
            let truncated = &key[..60];
            let bad = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100", "amount": "1", "privateKey": truncated});
            let answer = http.post(format!("{base_url}/order/addOrder")).json(&bad).send().await.unwrap().text().await.unwrap();
            assert!(!answer.contains(&truncated[2..]), "an error echoes the key");
        }
        let snapshots = dexd_store::snapshots::snapshot_directory(data_dir.path(), 1);
        for _ in 0..1_000 {
            if !dexd_store::snapshots::list_snapshots(&snapshots).unwrap().is_empty() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        assert!(!dexd_store::snapshots::list_snapshots(&snapshots).unwrap().is_empty(), "a snapshot was written");
    });
    child.kill().unwrap();
    child.wait().unwrap();
    stdout.read_to_end(&mut log).unwrap();
    child.stderr.take().unwrap().read_to_end(&mut log).unwrap();
    let log = String::from_utf8_lossy(&log).to_lowercase();
    assert!(log.contains("request"), "the trace log was captured");
    for key in &keys {
        let hex_digits = &key[2..];
        assert!(!log.contains(&hex_digits[..40]), "a key appears in the log");
        let raw = hex::decode(hex_digits).unwrap();
        for path in files_under(data_dir.path()) {
            let contents = std::fs::read(path).unwrap();
            let lowered = String::from_utf8_lossy(&contents).to_lowercase();
            assert!(
                !lowered.contains(&hex_digits[..40]),
                "a key appears in a stored file as text"
            );
            assert!(
                !contents.windows(raw.len()).any(|window| window == raw.as_slice()),
                "a key appears in a stored file as bytes"
            );
        }
    }
}

use crate::common;

/// Every file under a folder, its subfolders' included.
fn files_under(folder: &std::path::Path) -> Vec<std::path::PathBuf> {
    let mut files = Vec::new();
    for entry in std::fs::read_dir(folder).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files
}

/// In vault mode the operator's key is read from its file and signs every payment, and users'
/// keys sign chain transactions: neither reaches a log line (at trace level, alloy's and the
/// HTTP client's included) or a file in the data directory.
#[tokio::test]
async fn the_operator_key_and_users_keys_never_appear_in_vault_mode() {
    use alloy::primitives::U256;
    let chain = common::chain::TestChain::start().await;
    let folder = tempfile::tempdir().unwrap();
    let config = chain.write_dexd_config(folder.path(), &chain.anvil.endpoint());
    let data_dir = folder.path().join("data");
    let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
    let server = common::BinaryServer::start_logging(&data_dir, Some(&config), "trace", Some(log.clone()));
    let http = reqwest::Client::new();
    let user = &chain.users[0];
    let user_key = format!("0x{}", hex::encode(user.to_bytes()));
    let from = checksummed(&dexd_custody::vault::venue_address(&user.address()));
    let chain_id = chain.chain_id.to_string();
    let deposit =
        json!({"chainId": chain_id, "from": from, "symbol": "USDC", "quantity": "40", "privateKey": user_key});
    let answer = http
        .post(format!("{}/portfolio/deposit", server.base_url))
        .json(&deposit)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200, "{}", answer.text().await.unwrap());
    let balances = format!(
        "{}/account/assetBalances?chainId={chain_id}&account={from}",
        server.base_url
    );
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    loop {
        chain.mine(1).await;
        let body: serde_json::Value = http.get(&balances).send().await.unwrap().json().await.unwrap();
        if body["balances"][1]["available"] == "40" {
            break;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the deposit was not credited: {body}"
        );
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    let withdraw =
        json!({"chainId": chain_id, "from": from, "symbol": "USDC", "quantity": "15", "privateKey": user_key});
    let answer = http
        .post(format!("{}/portfolio/withdraw", server.base_url))
        .json(&withdraw)
        .send()
        .await
        .unwrap();
    assert_eq!(answer.status(), 200);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
    while chain.vault_balance(Some(chain.usdc)).await != U256::from(25_000_000u64) {
        assert!(std::time::Instant::now() < deadline, "the withdrawal was not paid");
        chain.mine(1).await;
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;
    }
    // Let the payer confirm and log it, then stop.
    chain.mine(3).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    drop(server);
    let log = log.lock().unwrap().to_lowercase();
    assert!(
        log.contains("withdrawals sent to the vault"),
        "the payer's log was captured"
    );
    let operator_key = hex::encode(chain.operator.to_bytes());
    let user_key = hex::encode(user.to_bytes());
    for (who, key) in [("operator", &operator_key), ("user", &user_key)] {
        assert!(!log.contains(&key[..40]), "the {who} key appears in the log");
        let raw = hex::decode(key).unwrap();
        for path in files_under(&data_dir) {
            let contents = std::fs::read(path).unwrap();
            assert!(
                !String::from_utf8_lossy(&contents).to_lowercase().contains(&key[..40]),
                "the {who} key in a stored file"
            );
            assert!(
                !contents.windows(raw.len()).any(|window| window == raw.as_slice()),
                "the {who} key in a stored file as bytes"
            );
        }
    }
}
