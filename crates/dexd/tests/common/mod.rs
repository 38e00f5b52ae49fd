//! Helpers of the black-box tests: a real server on port 0 and a small client.

#![allow(dead_code)]

pub mod chain;
pub mod stream_client;

use dexd::config::Config;
use dexd::crypto::{checksummed, PrivateKey};
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
        use std::io::BufRead;
        let mut command = std::process::Command::new(env!("CARGO_BIN_EXE_dexd"));
        command
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(data_dir);
        if let Some(config) = config {
            command.arg("--config").arg(config);
        }
        let mut child = command
            .env("RUST_LOG", level)
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::inherit())
            .spawn()
            .expect("the dexd binary starts");
        let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
        let address = loop {
            let line = lines.next().expect("dexd prints its address").unwrap();
            if let Some(log) = &log {
                log.lock().unwrap().push_str(&line);
                log.lock().unwrap().push('\n');
            }
            if let Some(rest) = line.split("address=").nth(1) {
                if line.contains("dexd listening") {
                    break rest.split_whitespace().next().unwrap().to_string();
                }
            }
        };
        // Keep reading the log so that the server never blocks on a full pipe.
        std::thread::spawn(move || {
            for line in lines.map_while(Result::ok) {
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
}

impl Drop for BinaryServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A running server; it stops when dropped.
pub struct TestServer {
    pub base_url: String,
    pub client: reqwest::Client,
    _stop: oneshot::Sender<()>,
    _data_dir: Option<tempfile::TempDir>,
}

impl TestServer {
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
        }
    }

    async fn start_owning(config: Config, path: std::path::PathBuf, data_dir: Option<tempfile::TempDir>) -> TestServer {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let address = listener.local_addr().unwrap();
        let (stop, stopped) = oneshot::channel::<()>();
        tokio::spawn(async move {
            dexd::serve(config, &path, listener, async move {
                let _ = stopped.await;
            })
            .await
            .unwrap();
        });
        TestServer {
            base_url: format!("http://{address}"),
            client: reqwest::Client::new(),
            _stop: stop,
            _data_dir: data_dir,
        }
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
        body["balances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|balance| balance["symbol"] == symbol)
            .unwrap()
            .clone()
    }
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
        let key = format!("0x{}", format!("{byte:02x}").repeat(32));
        let address = checksummed(&PrivateKey::parse(&key).unwrap().address());
        Trader { key, address }
    }
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
