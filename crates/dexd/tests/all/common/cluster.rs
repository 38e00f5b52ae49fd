//! What the cluster tests share: a node's configuration on a PostgreSQL journal, and a look at
//! which node leads a chain.

use std::time::{Duration, Instant};

/// How long a node's lease of a chain lasts in the cluster tests.
pub const LEASE_MS: u64 = 2_000;

/// The environment variable a test cluster's nodes read their shared secret from
/// (`[cluster] secret_env`); every node the tests start has it.
pub const TEST_CLUSTER_SECRET_VARIABLE: &str = "DEXD_TEST_CLUSTER_SECRET";
/// The test clusters' shared secret.
pub const TEST_CLUSTER_SECRET: &str = "a cluster secret of at least 32 bytes!";

/// The `[store]` and `[cluster]` sections of a node named `node_id` on the journal at
/// `postgres_url`.
pub fn cluster_sections(postgres_url: &str, node_id: &str) -> String {
    format!(
        "\n[store]\njournal = \"postgres\"\npostgres_url = \"{postgres_url}\"\n\n[cluster]\nnode_id = \"{node_id}\"\nlease_ms = {LEASE_MS}\n"
    )
}

/// Writes `base` (a configuration without `[store]` and `[cluster]`) with the sections of node
/// `node_id` into `folder`; returns its path.
pub fn write_node_config(
    folder: &std::path::Path,
    base: &str,
    postgres_url: &str,
    node_id: &str,
) -> std::path::PathBuf {
    let path = folder.join(format!("dexd-{node_id}.toml"));
    std::fs::write(&path, format!("{base}{}", cluster_sections(postgres_url, node_id))).unwrap();
    path
}

/// The embedded default configuration with the sections of node `node_id` on `postgres`,
/// written into `folder`; returns its path.
pub fn default_node_config(
    folder: &std::path::Path,
    postgres: &dexd_store::postgres::test_server::PostgresServer,
    node_id: &str,
) -> std::path::PathBuf {
    write_node_config(
        folder,
        dexd_venue::config::DEFAULT_CONFIG_TOML,
        &postgres.url(),
        node_id,
    )
}

/// `account`'s balances on chain 1 as the node at `base_url` serves them once it has applied
/// journal position `min_sequence` (`X-Dexd-Min-Sequence`), or its error.
pub async fn balances_at(base_url: &str, account: &str, min_sequence: &str) -> serde_json::Value {
    reqwest::Client::new()
        .get(format!("{base_url}/account/assetBalances"))
        .query(&[("chainId", "1"), ("account", account)])
        .header("X-Dexd-Min-Sequence", min_sequence)
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap()
}

/// The cluster as the node at `base_url` sees it (`GET /cluster`); `None` while the node does
/// not answer (it is starting, or was killed).
pub async fn view(base_url: &str) -> Option<serde_json::Value> {
    reqwest::get(format!("{base_url}/cluster"))
        .await
        .ok()?
        .json()
        .await
        .ok()
}

/// The node that leads `chain_id` as the node at `base_url` sees it (`GET /cluster`), once one
/// other than `not` does; waits up to `within`.
pub async fn leader_other_than(base_url: &str, chain_id: u64, not: Option<&str>, within: Duration) -> String {
    let started = Instant::now();
    loop {
        let answer = view(base_url).await.expect("the node answers");
        let leader = answer["chains"]
            .as_array()
            .unwrap()
            .iter()
            .find(|chain| chain["chainId"].as_str() == Some(chain_id.to_string().as_str()))
            .and_then(|chain| chain["leader"].as_str().map(str::to_string));
        if let Some(leader) = leader.filter(|leader| Some(leader.as_str()) != not) {
            return leader;
        }
        assert!(
            started.elapsed() < within,
            "no node other than {not:?} leads chain {chain_id}: {answer}"
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}
