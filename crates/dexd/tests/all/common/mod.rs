//! Helpers of the black-box tests: a real server on port 0 and a small client.

pub mod auditor;
pub mod chain;
pub mod cluster;
pub mod journal_end;
pub mod signer;
pub mod stream_client;
pub mod vault_calls;
pub mod vault_venue;

use dexd_crypto::{checksummed, PrivateKey};
use dexd_venue::config::Config;
use serde_json::{json, Value};
use tokio::sync::oneshot;

/// The real `dexd` binary, serving on a port of its choosing; killed when dropped, so that a
/// server never outlives a failed assertion and holds the test's output open.
pub struct BinaryServer {
    pub child: std::process::Child,
    pub base_url: String,
}

impl BinaryServer {
    /// Starts `dexd serve` on port 0 with `data_dir` and waits for the address it logs.
    pub fn start(data_dir: &std::path::Path) -> BinaryServer {
        BinaryServer::start_with(data_dir, None)
    }

    /// Like [`BinaryServer::start`], with a configuration file.
    pub fn start_with(data_dir: &std::path::Path, config: Option<&std::path::Path>) -> BinaryServer {
        BinaryServer::start_logging(data_dir, config, "info", None)
    }

    /// Like [`BinaryServer::start_with`] at log level `level`, every log line also appended to
    /// `log` when given.
    pub fn start_logging(
        data_dir: &std::path::Path,
        config: Option<&std::path::Path>,
        level: &str,
        log: Option<std::sync::Arc<std::sync::Mutex<String>>>,
    ) -> BinaryServer {
        BinaryServer::launch(data_dir, config, level, log, true, &[], &[])
    }

    /// `dexd serve` with the operator's API on a port of its own (`--admin-listen`), its token
    /// in the child's environment; returns the server and the admin listener's URL.
    pub fn start_with_admin(data_dir: &std::path::Path, token: &str) -> (BinaryServer, String) {
        BinaryServer::start_with_admin_and_config(data_dir, None, token)
    }

    /// [`BinaryServer::start_with_admin`] on the configuration file `config` (the embedded one
    /// when `None`).
    pub fn start_with_admin_and_config(
        data_dir: &std::path::Path,
        config: Option<&std::path::Path>,
        token: &str,
    ) -> (BinaryServer, String) {
        let log = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let server = BinaryServer::launch(
            data_dir,
            config,
            "info",
            Some(std::sync::Arc::clone(&log)),
            true,
            &["--admin-listen", "127.0.0.1:0"],
            &[("DEXD_ADMIN_TOKEN", token)],
        );
        let text = log.lock().unwrap().clone();
        let line = text
            .lines()
            .find(|line| line.contains("dexd admin listening"))
            .expect("dexd logs the admin listener's address");
        let address = line
            .split("address=")
            .nth(1)
            .unwrap()
            .split_whitespace()
            .next()
            .unwrap();
        (server, format!("http://{address}"))
    }

    /// `dexd serve --demo` on the embedded configuration, every log line appended to `log`.
    pub fn start_demo(data_dir: &std::path::Path, log: std::sync::Arc<std::sync::Mutex<String>>) -> BinaryServer {
        BinaryServer::launch(data_dir, None, "info", Some(log), true, &["--demo"], &[])
    }

    /// Starts the server and returns as soon as it listens, before its chains have started
    /// (`/ready` may still answer 503).
    pub fn start_listening(
        data_dir: &std::path::Path,
        config: Option<&std::path::Path>,
        log: Option<std::sync::Arc<std::sync::Mutex<String>>>,
    ) -> BinaryServer {
        BinaryServer::launch(data_dir, config, "info", log, false, &[], &[])
    }

    fn launch(
        data_dir: &std::path::Path,
        config: Option<&std::path::Path>,
        level: &str,
        log: Option<std::sync::Arc<std::sync::Mutex<String>>>,
        wait_until_ready: bool,
        extra_arguments: &[&str],
        environment: &[(&str, &str)],
    ) -> BinaryServer {
        use std::io::BufRead;
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_dexd"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir)
            .args(extra_arguments);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        let mut child = command
            .env("RUST_LOG", level)
            // A cluster node's configuration names this variable for its secret (the test
            // process's own environment is never changed: its tests run on threads side by side).
            .env(cluster::TEST_CLUSTER_SECRET_VARIABLE, cluster::TEST_CLUSTER_SECRET)
            .envs(environment.iter().copied())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("the dexd binary starts");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let mut address = None;
        let address = loop {
            let line = lines
                .next()
                .expect("dexd prints its address, then that it is ready")
                .unwrap();
            if let Some(log) = &log {
                log.lock().unwrap().push_str(&line);
                log.lock().unwrap().push('\n');
            }
            if let Some(rest) = line.split("address=").nth(1) {
                if line.contains("dexd listening") {
                    address = Some(rest.split_whitespace().next().unwrap().to_string());
                }
            }
            match &address {
                Some(address) if !wait_until_ready || line.contains("dexd ready") => break address.clone(),
                _ => {}
            }
        };
        // Keep reading the log so that the server never blocks on a full pipe; echoed to the
        // test's output with DEXD_TEST_ECHO_LOG=1, to see what a failing test's server did.
        let echo = std::env::var("DEXD_TEST_ECHO_LOG").is_ok_and(|value| value == "1");
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
                if echo {
                    eprintln!("[dexd] {line}");
                }
                if let Some(log) = &log {
                    let mut log = log.lock().unwrap();
                    log.push_str(&line);
                    log.push('\n');
                }
            }
        });
        BinaryServer {
            child,
            base_url: format!("http://{address}"),
        }
    }

    /// Kills the server at once (SIGKILL).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// Stops the server with SIGTERM (a graceful stop) and returns how it exited, within 20 s.
    pub async fn stop_gracefully(&mut self) -> std::process::ExitStatus {
        // SAFETY: kill only sends a signal to the child this test started.
        assert_eq!(unsafe { libc::kill(self.child.id() as i32, libc::SIGTERM) }, 0);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        loop {
            if let Some(exit) = self.child.try_wait().unwrap() {
                return exit;
            }
            assert!(std::time::Instant::now() < deadline, "dexd did not stop after SIGTERM");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

impl Drop for BinaryServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Waits until the server at `base_url` answers `/ready` with 200 (every chain has started).
pub async fn wait_until_ready(client: &reqwest::Client, base_url: &str) {
    for _ in 0..6_000 {
        let ready = client
            .get(format!("{base_url}/ready"))
            .send()
            .await
            .is_ok_and(|response| response.status() == 200);
        if ready {
            return;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    panic!("the server did not become ready in 60 s");
}

/// A running server; it stops when dropped.
pub struct TestServer {
    pub base_url: String,
    pub client: reqwest::Client,
    _stop: oneshot::Sender<()>,
    _data_dir: Option<tempfile::TempDir>,
    /// The in-process server's task, until it has stopped.
    serving: Option<tokio::task::JoinHandle<()>>,
}

impl TestServer {
    /// Stops an in-process server and waits until it has closed its data directory, so that
    /// another may start on it (dropping it stops it in the background).
    pub async fn stop(self) {
        let TestServer { _stop, serving, .. } = self;
        drop(_stop);
        if let Some(serving) = serving {
            serving.await.unwrap();
        }
    }

    pub async fn start() -> TestServer {
        TestServer::start_with(Config::embedded_default()).await
    }

    pub async fn start_with(config: Config) -> TestServer {
        let data_dir = tempfile::tempdir().unwrap();
        TestServer::start_owning(config, data_dir.path().to_path_buf(), Some(data_dir)).await
    }

    /// A server on a data directory the caller keeps.
    pub async fn start_in(config: Config, data_dir: &std::path::Path) -> TestServer {
        TestServer::start_owning(config, data_dir.to_path_buf(), None).await
    }

    /// A client of a server running elsewhere (for example a [`BinaryServer`]).
    pub fn at(base_url: &str) -> TestServer {
        let (stop, _) = oneshot::channel::<()>();
        TestServer {
            base_url: base_url.to_string(),
            client: reqwest::Client::new(),
            _stop: stop,
            _data_dir: None,
            serving: None,
        }
    }

    async fn start_owning(config: Config, path: std::path::PathBuf, data_dir: Option<tempfile::TempDir>) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        let serving = tokio::spawn(async move {
            dexd::serve(config, &path, listener, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        let server = TestServer {
            base_url: format!("http://{address}"),
            client: reqwest::Client::new(),
            _stop: stop,
            _data_dir: data_dir,
            serving: Some(serving),
        };
        server.wait_until_ready().await;
        server
    }

    /// Waits until `/ready` answers 200 (every chain has started).
    pub async fn wait_until_ready(&self) {
        wait_until_ready(&self.client, &self.base_url).await;
    }

    /// GET with a query string; returns status and body.
    pub async fn get(&self, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path}", self.base_url))
            .query(query)
            .send()
            .await
            .unwrap();
        read(response).await
    }

    /// GET a path's text (the metrics).
    pub async fn get_text(&self, path: &str) -> String {
        let response = self
            .client
            .get(format!("{}{path}", self.base_url))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{path}");
        response.text().await.unwrap()
    }

    /// GET a path with its query string written out by the caller.
    pub async fn get_raw(&self, path_and_query: &str) -> (u16, Value) {
        let response = self
            .client
            .get(format!("{}{path_and_query}", self.base_url))
            .send()
            .await
            .unwrap();
        read(response).await
    }

    /// POST a JSON body.
    pub async fn post_json(&self, path: &str, body: Value) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.base_url))
            .json(&body)
            .send()
            .await
            .unwrap();
        read(response).await
    }

    /// POST form data.
    pub async fn post_form(&self, path: &str, fields: &[(&str, &str)]) -> (u16, Value) {
        let body: String = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(fields)
            .finish();
        let response = self
            .client
            .post(format!("{}{path}", self.base_url))
            .header("content-type", "application/x-www-form-urlencoded")
            .body(body)
            .send()
            .await
            .unwrap();
        read(response).await
    }

    /// POST raw bytes with a content type.
    pub async fn post_raw(&self, path: &str, content_type: &str, body: Vec<u8>) -> (u16, Value) {
        let response = self
            .client
            .post(format!("{}{path}", self.base_url))
            .header("content-type", content_type)
            .body(body)
            .send()
            .await
            .unwrap();
        read(response).await
    }

    pub async fn deposit(&self, trader: &Trader, symbol: &str, quantity: &str) -> Value {
        let (status, body) = self
            .post_json("/portfolio/deposit", json!({"chainId": "1", "from": trader.address, "symbol": symbol, "quantity": quantity, "privateKey": trader.key}))
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    pub async fn limit(&self, trader: &Trader, direction: &str, price: &str, amount: &str) -> Value {
        let (status, body) = self
            .post_json("/order/addOrder", json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": direction, "price": price, "amount": amount, "privateKey": trader.key}))
            .await;
        assert_eq!(status, 200, "{body}");
        body
    }

    /// A batch of orders on chain 1 with the trader's key, which must be answered 200: each
    /// item's result.
    pub async fn batch_orders(&self, trader: &Trader, orders: Vec<Value>) -> Vec<Value> {
        let (status, body) = self
            .post_json(
                "/order/batchOrders",
                json!({"chainId": "1", "privateKey": trader.key, "orders": orders}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        body["results"].as_array().expect("a batch's results").clone()
    }

    /// The first page of an account list on chain 1 (`path`, such as `/order/openOrders`), the
    /// array under `key` (`orders`, `deposits`, `withdrawals`).
    pub async fn account_list(&self, path: &str, trader: &Trader, key: &str) -> Vec<Value> {
        let (status, body) = self.get(path, &[("chainId", "1"), ("account", &trader.address)]).await;
        assert_eq!(status, 200, "{body}");
        body[key].as_array().unwrap().clone()
    }

    pub async fn balance(&self, trader: &Trader, symbol: &str) -> Value {
        let (status, body) = self
            .get(
                "/account/assetBalances",
                &[("chainId", "1"), ("account", &trader.address)],
            )
            .await;
        assert_eq!(status, 200, "{body}");
        balance_in(&body, symbol)
    }
}

/// The balance of `symbol` in an `/account/assetBalances` answer.
pub fn balance_in(body: &Value, symbol: &str) -> Value {
    body["balances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|balance| balance["symbol"] == symbol)
        .unwrap_or_else(|| panic!("no {symbol} balance in {body}"))
        .clone()
}

async fn read(response: reqwest::Response) -> (u16, Value) {
    let status = response.status().as_u16();
    assert!(
        response.headers().contains_key("x-request-id"),
        "every response carries X-Request-Id"
    );
    let content_type = response
        .headers()
        .get("content-type")
        .map(|value| value.to_str().unwrap().to_string());
    assert_eq!(
        content_type.as_deref(),
        Some("application/json"),
        "every response is JSON"
    );
    let body: Value = response.json().await.unwrap();
    (status, body)
}

/// An account with its key.
pub struct Trader {
    pub key: String,
    pub address: String,
}

impl Trader {
    pub fn new(byte: u8) -> Trader {
        Trader::with_key(format!("0x{}", format!("{byte:02x}").repeat(32)))
    }

    /// Trader number `number`, one of as many as a test needs (their keys are small numbers).
    pub fn numbered(number: u64) -> Trader {
        Trader::with_key(format!("0x{:064x}", 1_000_000 + number))
    }

    fn with_key(key: String) -> Trader {
        let address = checksummed(&PrivateKey::parse(&key).unwrap().address());
        Trader { key, address }
    }
}

/// The market most scenarios start from: Alice holds 3000 USDC, Bob 5 ETH and offers 1 ETH at
/// 2100.
pub async fn alice_with_dollars_and_bob_offering(server: &TestServer) -> (Trader, Trader) {
    let alice = Trader::new(0xa1);
    let bob = Trader::new(0xb0);
    server.deposit(&alice, "USDC", "3000").await;
    server.deposit(&bob, "ETH", "5").await;
    server.limit(&bob, "sell", "2100", "1").await;
    (alice, bob)
}

/// Asserts an error answer's status, code and field.
pub fn assert_error(answer: &(u16, Value), status: u16, code: &str, field: Option<&str>) {
    assert_eq!(answer.0, status, "{}", answer.1);
    assert_eq!(answer.1["error"]["code"], code, "{}", answer.1);
    assert_eq!(answer.1["error"]["field"].as_str(), field, "{}", answer.1);
    assert!(answer.1["error"]["message"]
        .as_str()
        .is_some_and(|message| !message.is_empty()));
}

/// GET a path that must answer 200; returns its JSON body.
pub async fn get_ok(http: &reqwest::Client, base_url: &str, path: &str, query: &[(&str, &str)]) -> Value {
    let response = http.get(format!("{base_url}{path}")).query(query).send().await.unwrap();
    assert_eq!(response.status().as_u16(), 200, "{path}");
    response.json().await.unwrap()
}

/// Every record of a paged list.
pub async fn all_pages(
    http: &reqwest::Client,
    base_url: &str,
    path: &str,
    query: &[(&str, &str)],
    field: &str,
) -> Vec<Value> {
    let mut records = Vec::new();
    let mut cursor: Option<String> = None;
    loop {
        let mut full: Vec<(&str, &str)> = query.to_vec();
        full.push(("limit", "1000"));
        if let Some(cursor) = &cursor {
            full.push(("cursor", cursor));
        }
        let page = get_ok(http, base_url, path, &full).await;
        records.extend(page[field].as_array().unwrap().iter().cloned());
        match page["nextCursor"].as_str() {
            Some(next) => cursor = Some(next.to_string()),
            None => return records,
        }
    }
}

/// What a server shows of chain 1's state for `accounts`: their balances, orders and transfers,
/// the trades of ETH/USDC and both of its books, as JSON.
pub async fn observable_state(base_url: &str, accounts: &[String]) -> Value {
    let http = reqwest::Client::new();
    let mut state = serde_json::Map::new();
    for account in accounts {
        let query = [("chainId", "1"), ("account", account.as_str())];
        let mut of_account = serde_json::Map::new();
        of_account.insert(
            "balances".into(),
            get_ok(&http, base_url, "/account/assetBalances", &query).await,
        );
        for (path, field) in [
            ("/order/openOrders", "orders"),
            ("/order/filledOrders", "orders"),
            ("/order/cancelledOrders", "orders"),
            ("/portfolio/depositHistories", "deposits"),
            ("/portfolio/withdrawHistories", "withdrawals"),
        ] {
            of_account.insert(
                path.into(),
                Value::Array(all_pages(&http, base_url, path, &query, field).await),
            );
        }
        state.insert(account.clone(), Value::Object(of_account));
    }
    let pair = [("chainId", "1"), ("pair", "ETH/USDC")];
    state.insert(
        "trades".into(),
        Value::Array(all_pages(&http, base_url, "/order/tradeHistories", &pair, "trades").await),
    );
    for side in ["/order/buyOrderbooks", "/order/sellOrderbooks"] {
        let book = get_ok(
            &http,
            base_url,
            side,
            &[("chainId", "1"), ("pair", "ETH/USDC"), ("depth", "1000")],
        )
        .await;
        state.insert(side.into(), book["levels"].clone());
    }
    Value::Object(state)
}

/// Writes a configuration file into `folder`: the embedded default, with a snapshot every
/// `every_commands` (0: none), checked every 5 ms.
pub fn snapshot_config(folder: &std::path::Path, every_commands: u64) -> std::path::PathBuf {
    let path = folder.join(format!("dexd-snapshots-{every_commands}.toml"));
    std::fs::write(
        &path,
        format!(
            "{}\n[snapshots]\nevery_commands = {every_commands}\ncheck_interval_ms = 5\n",
            dexd_venue::config::DEFAULT_CONFIG_TOML
        ),
    )
    .unwrap();
    path
}

/// How many files of a data directory hold snapshots.
pub fn snapshot_files(data_dir: &std::path::Path) -> usize {
    std::fs::read_dir(data_dir)
        .unwrap()
        .filter(|entry| {
            entry
                .as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .contains("snapshot")
        })
        .count()
}

/// Copies a folder with everything in it.
pub fn copy_directory(from: &std::path::Path, to: &std::path::Path) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_type().unwrap().is_dir() {
            copy_directory(&entry.path(), &to.join(entry.file_name()));
        } else {
            std::fs::copy(entry.path(), to.join(entry.file_name())).unwrap();
        }
    }
}
