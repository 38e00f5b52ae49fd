//! The `[store]` and `[cluster]` sections: where the journals are (the embedded SQLite journal,
//! or PostgreSQL with its URL from the file or the environment), and this node's part in a
//! cluster (its id, lease, advertised URL and the cluster's shared secret). It checks them and
//! builds the [`JournalBackend`]; it does not connect to anything.

use dexd_store::backend::{JournalBackend, PostgresBackend};
use serde::Deserialize;
use toml::Spanned;

use super::{at, line_of, ClusterSecret, ConfigError};

/// `[store]`: where the journals are.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawStore {
    journal: String,
    postgres_url: Option<String>,
    postgres_url_env: Option<String>,
}

/// `[cluster]`: this node's part in a cluster on PostgreSQL.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawCluster {
    node_id: Option<String>,
    lease_ms: Option<u64>,
    url: Option<String>,
    secret_env: Option<String>,
}

/// The longest and shortest lease a node may take: shorter than a second, a slow disk or a
/// pause of the garbage collector of a managed database would cost a node its chains; longer
/// than a minute, a dead leader would hold its chains that long.
pub const MIN_LEASE_MS: u64 = 1_000;
pub const MAX_LEASE_MS: u64 = 60_000;
/// The lease a node takes when `[cluster] lease_ms` is not set.
pub const DEFAULT_LEASE_MS: u64 = 3_000;
/// The longest node id, and what it may be made of (it appears in headers and `/cluster`).
pub const MAX_NODE_ID_LENGTH: usize = 64;

/// The shortest cluster secret accepted, in bytes.
pub const MIN_CLUSTER_SECRET_BYTES: usize = 32;

/// `[cluster] secret_env`: the shared secret the nodes sign forwarded writes with, read from the
/// environment variable it names (never from the file, never printed).
pub(super) fn cluster_secret(
    text: &str,
    cluster: Option<&Spanned<RawCluster>>,
) -> Result<Option<ClusterSecret>, ConfigError> {
    let Some(cluster) = cluster else {
        return Ok(None);
    };
    let Some(variable) = &cluster.get_ref().secret_env else {
        return Ok(None);
    };
    let line = line_of(text, cluster.span().start);
    let secret = std::env::var(variable).map_err(|_| {
        at(
            line,
            format!("the environment variable {variable} ([cluster] secret_env) is not set"),
        )
    })?;
    if secret.len() < MIN_CLUSTER_SECRET_BYTES {
        return Err(at(
            line,
            format!("the cluster secret in {variable} must be at least {MIN_CLUSTER_SECRET_BYTES} bytes"),
        ));
    }
    Ok(Some(ClusterSecret::new(secret.into_bytes())))
}

pub(super) fn check_store(
    text: &str,
    store: Option<Spanned<RawStore>>,
    cluster: Option<Spanned<RawCluster>>,
) -> Result<JournalBackend, ConfigError> {
    let Some(store) = store else {
        return match cluster {
            Some(cluster) => Err(at(
                line_of(text, cluster.span().start),
                "[cluster] needs [store] journal = \"postgres\"".into(),
            )),
            None => Ok(JournalBackend::Sqlite),
        };
    };
    let line = line_of(text, store.span().start);
    let store = store.into_inner();
    match store.journal.as_str() {
        "sqlite" => {
            if store.postgres_url.is_some() || store.postgres_url_env.is_some() || cluster.is_some() {
                return Err(at(
                    line,
                    "postgres_url, postgres_url_env and [cluster] are for journal = \"postgres\"".into(),
                ));
            }
            Ok(JournalBackend::Sqlite)
        }
        "postgres" => check_postgres_store(line, store, cluster),
        other => Err(at(
            line,
            format!("[store] journal must be \"sqlite\" or \"postgres\", not {other:?}"),
        )),
    }
}

/// `[store] journal = "postgres"` and its `[cluster]`: the journal's URL (given, or from an
/// environment variable), this node's id, its lease and its advertised URL, each checked.
fn check_postgres_store(
    line: usize,
    store: RawStore,
    cluster: Option<Spanned<RawCluster>>,
) -> Result<JournalBackend, ConfigError> {
    let url = match (store.postgres_url, store.postgres_url_env) {
        (Some(url), None) => url,
        (None, Some(variable)) => std::env::var(&variable).map_err(|_| {
            at(
                line,
                format!("the environment variable {variable} (postgres_url_env) is not set"),
            )
        })?,
        _ => {
            return Err(at(
                line,
                "journal = \"postgres\" needs exactly one of postgres_url and postgres_url_env".into(),
            ))
        }
    };
    let (node_id, lease_ms, advertised_url) = match cluster.map(Spanned::into_inner) {
        Some(cluster) => (cluster.node_id, cluster.lease_ms, cluster.url),
        None => (None, None, None),
    };
    if let Some(url) = &advertised_url {
        if !(url.starts_with("http://") || url.starts_with("https://")) || url.len() > 2_048 {
            return Err(at(line, "[cluster] url must be an http:// or https:// URL".into()));
        }
    }
    let node_id = node_id.unwrap_or_else(|| "dexd".to_string());
    if node_id.is_empty()
        || node_id.len() > MAX_NODE_ID_LENGTH
        || !node_id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'-' || byte == b'_')
    {
        return Err(at(
            line,
            format!("[cluster] node_id must be 1 to {MAX_NODE_ID_LENGTH} letters, digits, - or _"),
        ));
    }
    let lease_ms = lease_ms.unwrap_or(DEFAULT_LEASE_MS);
    if !(MIN_LEASE_MS..=MAX_LEASE_MS).contains(&lease_ms) {
        return Err(at(
            line,
            format!("[cluster] lease_ms must be between {MIN_LEASE_MS} and {MAX_LEASE_MS}"),
        ));
    }
    Ok(JournalBackend::Postgres(PostgresBackend {
        url,
        node_id,
        lease_ms,
        advertised_url,
    }))
}
