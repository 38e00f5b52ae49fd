//! This node's place in a cluster on the PostgreSQL journal: its id, the URL it announces in
//! the directory on a regular beat, and what `GET /cluster` shows (the nodes, and each chain's
//! leader, epoch and positions). On the embedded journal the node is a cluster of one.
//!
//! It does not lead or follow chains (each chain's writer does, under its lease) and does not
//! forward writes.

use std::sync::Arc;
use std::time::Duration;

use dexd_store::backend::{JournalBackend, PostgresBackend};
use dexd_store::postgres::{self, directory};
use dexd_store::StoreError;
use serde_json::{json, Value};

use crate::venue::Venue;

/// The node id of a node on the embedded journal.
pub const SINGLE_NODE_ID: &str = "dexd";

/// This node in its cluster.
pub struct Cluster {
    node_id: String,
    url: String,
    lease_ms: u64,
    /// The directory's connection for `GET /cluster` (PostgreSQL only).
    directory: Option<Arc<parking_lot::Mutex<postgres::Client>>>,
    /// Ends the beat when dropped.
    _beat: Option<std::sync::mpsc::SyncSender<()>>,
}

impl Cluster {
    /// Joins the cluster of `journal` as the node answering at `listening_url` (unless the
    /// configuration names another URL): announces it at once and then every third of a lease.
    /// Blocking: run it off the async runtime's threads.
    pub fn join(journal: &JournalBackend, listening_url: String) -> Result<Cluster, StoreError> {
        let JournalBackend::Postgres(backend) = journal else {
            return Ok(Cluster {
                node_id: SINGLE_NODE_ID.to_string(),
                url: listening_url,
                lease_ms: 0,
                directory: None,
                _beat: None,
            });
        };
        let url = backend.advertised_url.clone().unwrap_or(listening_url);
        let mut beat_client = postgres::connect(&backend.url)?;
        directory::announce(&mut beat_client, &backend.node_id, &url)?;
        let beat = start_beat(beat_client, backend, url.clone());
        Ok(Cluster {
            node_id: backend.node_id.clone(),
            url,
            lease_ms: backend.lease_ms,
            directory: Some(Arc::new(parking_lot::Mutex::new(postgres::connect(&backend.url)?))),
            _beat: Some(beat),
        })
    }

    /// This node's id, for the `X-Dexd-Node` header; `None` on the embedded journal.
    pub fn node_header(&self) -> Option<&str> {
        self.directory.as_ref().map(|_| self.node_id.as_str())
    }

    /// The body of `GET /cluster`.
    pub async fn status(&self, venue: &Venue) -> Result<Value, StoreError> {
        let chain_ids: Vec<u64> = venue.config.chains.iter().map(|chain| chain.chain_id).collect();
        let applied = |chain_id: u64| venue.chain(chain_id).map_or(0, |chain| chain.journaled_sequence());
        let (nodes, chains) = match &self.directory {
            None => {
                let chains: Vec<directory::ChainSeen> = chain_ids
                    .iter()
                    .map(|&chain_id| directory::ChainSeen {
                        chain_id,
                        leader: Some(self.node_id.clone()),
                        epoch: 0,
                        sequence: applied(chain_id),
                    })
                    .collect();
                let me = directory::NodeSeen {
                    node_id: self.node_id.clone(),
                    url: self.url.clone(),
                    alive: true,
                };
                (vec![me], chains)
            }
            Some(client) => {
                let (client, lease_ms) = (Arc::clone(client), self.lease_ms);
                tokio::task::spawn_blocking(move || {
                    let mut client = client.lock();
                    Ok::<_, StoreError>((
                        directory::nodes(&mut client, lease_ms)?,
                        directory::chains(&mut client, &chain_ids)?,
                    ))
                })
                .await
                .map_err(|error| StoreError::Postgres(format!("the directory's read failed: {error}")))??
            }
        };
        Ok(json!({
            "node": self.node_id,
            "nodes": nodes.iter().map(|node| json!({"id": node.node_id, "url": node.url, "alive": node.alive})).collect::<Vec<_>>(),
            "chains": chains.iter().map(|chain| json!({
                "chainId": chain.chain_id.to_string(),
                "leader": chain.leader,
                "epoch": chain.epoch,
                "sequence": chain.sequence,
                "appliedSequence": applied(chain.chain_id),
            })).collect::<Vec<_>>(),
        }))
    }
}

/// Announces the node every third of a lease on a thread of its own, until the returned sender
/// is dropped.
fn start_beat(mut client: postgres::Client, backend: &PostgresBackend, url: String) -> std::sync::mpsc::SyncSender<()> {
    let (stop, stopped) = std::sync::mpsc::sync_channel::<()>(1);
    let node_id = backend.node_id.clone();
    let interval = Duration::from_millis(backend.lease_ms / 3);
    std::thread::Builder::new()
        .name("cluster-beat".into())
        .spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                if let Err(error) = directory::announce(&mut client, &node_id, &url) {
                    tracing::warn!(%error, "cannot announce this node in the cluster's directory");
                }
            }
        })
        .expect("the cluster beat thread starts");
    stop
}
