//! What the cluster benchmarks share: a real `dexd` binary on a PostgreSQL journal, with rate
//! limits and the open orders an account may have raised out of the way, and the benchmarks'
//! traders.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};

/// A `dexd serve` on the PostgreSQL journal; killed when dropped.
pub struct Node {
    pub child: Child,
    pub base_url: String,
}

impl Node {
    /// Kills the node at once (SIGKILL).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Starts node `node_id` on the journal at `postgres_url`, with leases of `lease_ms`; returns
/// once it is ready.
pub fn start_node(folder: &std::path::Path, postgres_url: &str, node_id: &str, lease_ms: u64) -> Node {
    let config = folder.join(format!("{node_id}.toml"));
    let mut text = dexd_venue::config::DEFAULT_CONFIG_TOML
        .replace(
            "requests_per_second_per_ip = 20000",
            "requests_per_second_per_ip = 1000000",
        )
        .replace(
            "writes_per_second_per_account = 1000",
            "writes_per_second_per_account = 1000000",
        )
        .replace(
            "max_open_orders_per_account = 500",
            "max_open_orders_per_account = 1000000",
        );
    text.push_str(&format!(
        "\n[store]\njournal = \"postgres\"\npostgres_url = \"{postgres_url}\"\n\n[cluster]\nnode_id = \"{node_id}\"\nlease_ms = {lease_ms}\n"
    ));
    std::fs::write(&config, text).unwrap();
    let data_dir = folder.join(node_id);
    let mut child = Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args(["serve", "--listen", "127.0.0.1:0", "--config"])
        .arg(&config)
        .arg("--data-dir")
        .arg(&data_dir)
        .env("RUST_LOG", "warn,dexd=info")
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let mut lines = std::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let mut address = None;
    for line in lines.by_ref() {
        let line = line.unwrap();
        if let Some(rest) = line.split("address=").nth(1) {
            address = Some(rest.split_whitespace().next().unwrap().to_string());
        }
        if line.contains("dexd ready") {
            break;
        }
    }
    std::thread::spawn(move || for _ in lines {});
    Node {
        child,
        base_url: format!("http://{}", address.expect("dexd prints its address")),
    }
}

/// The key of the benchmarks' trader number `index`.
pub fn trader_key(index: usize) -> String {
    format!("0x{}", format!("{:02x}", index + 1).repeat(32))
}

/// The address of a key.
pub fn trader_address(key: &str) -> String {
    dexd_crypto::checksummed(&dexd_crypto::PrivateKey::parse(key).unwrap().address())
}

/// A setting from the environment, or its default.
pub fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(default)
}
