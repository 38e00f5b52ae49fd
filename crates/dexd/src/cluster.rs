//! This node's place in a cluster on the PostgreSQL journal: its id, the URL it announces in
//! the directory on a regular beat, and what `GET /cluster` shows (the nodes, and each chain's
//! leader, epoch and positions). On the embedded journal the node is a cluster of one.
//!
//! It also finds a chain's leader's URL for the API's forwarding of writes (cached for a third of
//! a lease). It does not lead or follow chains (each chain's writer does, under its lease).

use std::sync::Arc;
use std::time::Duration;

use dexd_store::backend::{JournalBackend, PostgresBackend};
use dexd_store::postgres::{self, directory};
use dexd_store::StoreError;
use serde_json::{json, Value};

use dexd_venue::Venue;

/// The node id of a node on the embedded journal.
pub const SINGLE_NODE_ID: &str = "dexd";

/// This node in its cluster.
pub struct Cluster {
    node_id: String,
    url: String,
    lease_ms: u64,
    /// The directory's connection for `GET /cluster` (PostgreSQL only).
    directory: Option<Arc<parking_lot::Mutex<postgres::Connection>>>,
    /// Ends the beat when dropped.
    _beat: Option<std::sync::mpsc::SyncSender<()>>,
    /// Each chain's leader as last read, and when.
    leaders: parking_lot::Mutex<std::collections::HashMap<u64, LeaderReading>>,
    /// Each chain's journal end as last read, and when; its lock is held across a read, so
    /// that however many reads wait for a position, one directory read at a time serves them.
    journal_ends: parking_lot::Mutex<std::collections::HashMap<u64, Arc<tokio::sync::Mutex<Option<EndReading>>>>>,
    /// How many times the directory was read (for `/metrics`).
    directory_reads: std::sync::atomic::AtomicU64,
}

/// A chain's journal end as read from the directory, and when.
#[derive(Clone, Copy)]
struct EndReading {
    end: u64,
    read_at: std::time::Instant,
}

/// A chain's leader as read from the directory (`None`: no other node leads it), and when.
struct LeaderReading {
    leader: Option<Leader>,
    read_at: std::time::Instant,
}

/// A chain's leader, for a forwarded write.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Leader {
    /// Its node id.
    pub node_id: String,
    /// Where it answers.
    pub url: String,
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
                leaders: parking_lot::Mutex::default(),
                journal_ends: parking_lot::Mutex::default(),
                directory_reads: std::sync::atomic::AtomicU64::new(0),
            });
        };
        let url = backend.advertised_url.clone().unwrap_or(listening_url);
        let mut beat_connection = postgres::Connection::open(&backend.url)?;
        directory::announce(beat_connection.client()?, &backend.node_id, &url)?;
        let beat = start_beat(beat_connection, backend, url.clone());
        Ok(Cluster {
            node_id: backend.node_id.clone(),
            url,
            lease_ms: backend.lease_ms,
            directory: Some(Arc::new(parking_lot::Mutex::new(postgres::Connection::open(
                &backend.url,
            )?))),
            _beat: Some(beat),
            leaders: parking_lot::Mutex::default(),
            journal_ends: parking_lot::Mutex::default(),
            directory_reads: std::sync::atomic::AtomicU64::new(0),
        })
    }

    /// The node leading `chain_id` now and its URL, if another node does (read from the
    /// directory at most every third of a lease; [`Cluster::forget_leader`] reads it again).
    pub async fn leader(&self, chain_id: u64) -> Option<Leader> {
        self.directory.as_ref()?;
        let fresh_for = Duration::from_millis(self.lease_ms / 3);
        if let Some(reading) = self.leaders.lock().get(&chain_id) {
            if reading.read_at.elapsed() < fresh_for {
                return reading.leader.clone();
            }
        }
        let lease_ms = self.lease_ms;
        let read = self
            .read_directory(move |client| {
                let chains = directory::chains(client, &[chain_id])?;
                let nodes = directory::nodes(client, lease_ms)?;
                Ok(chains
                    .first()
                    .and_then(|chain| chain.leader.clone())
                    .and_then(|leader| {
                        nodes
                            .into_iter()
                            .find(|node| node.node_id == leader)
                            .map(|node| Leader {
                                node_id: node.node_id,
                                url: node.url,
                            })
                    }))
            })
            .await?;
        let leader = match read {
            Ok(leader) => leader.filter(|leader| leader.node_id != self.node_id),
            Err(error) => {
                tracing::warn!(%error, "cannot read the chain's leader from the directory");
                None
            }
        };
        let read_at = std::time::Instant::now();
        self.leaders.lock().insert(
            chain_id,
            LeaderReading {
                leader: leader.clone(),
                read_at,
            },
        );
        leader
    }

    /// Forgets what was read of `chain_id`'s leader (a forward to it failed).
    pub fn forget_leader(&self, chain_id: u64) {
        self.leaders.lock().remove(&chain_id);
    }

    /// Where `chain_id`'s shared journal ends, as the database has it, at or after `at_least`
    /// if it does: an end read before that reaches `at_least` is served as it is; otherwise the
    /// directory is read, one read at a time per chain, and every ask that came while one was
    /// under way takes its answer. So a crowd of reads waiting for positions costs a directory
    /// read at a time, never a blocking thread each. `None` on the embedded journal, or when it
    /// cannot be read.
    pub async fn journal_end(&self, chain_id: u64, at_least: u64) -> Option<u64> {
        self.directory.as_ref()?;
        let asked_at = std::time::Instant::now();
        let slot = Arc::clone(self.journal_ends.lock().entry(chain_id).or_default());
        let mut reading = slot.lock().await;
        if let Some(known) = *reading {
            if known.end >= at_least || known.read_at >= asked_at {
                return Some(known.end);
            }
        }
        let read_at = std::time::Instant::now();
        let chains = self
            .read_directory(move |client| directory::chains(client, &[chain_id]))
            .await?
            .ok()?;
        let end = chains.first().map(|chain| chain.sequence)?;
        *reading = Some(EndReading { end, read_at });
        Some(end)
    }

    /// How many times the directory was read since the start.
    pub fn directory_reads(&self) -> u64 {
        self.directory_reads.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs `read` on the directory's connection, off the async runtime's threads (the
    /// synchronous client cannot run on them); `None` on the embedded journal.
    async fn read_directory<R: Send + 'static>(
        &self,
        read: impl FnOnce(&mut postgres::Client) -> Result<R, StoreError> + Send + 'static,
    ) -> Option<Result<R, StoreError>> {
        let directory = Arc::clone(self.directory.as_ref()?);
        self.directory_reads.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let joined = tokio::task::spawn_blocking(move || {
            let mut connection = directory.lock();
            read(connection.client()?)
        })
        .await;
        Some(joined.unwrap_or_else(|error| Err(StoreError::Postgres(format!("the directory's read failed: {error}")))))
    }

    /// This node's id (`dexd` on the embedded journal).
    pub fn node_id(&self) -> &str {
        &self.node_id
    }

    /// This node's id, for the `X-Dexd-Node` header; `None` on the embedded journal.
    pub fn node_header(&self) -> Option<&str> {
        self.directory.as_ref().map(|_| self.node_id.as_str())
    }

    /// The body of `GET /cluster`.
    pub async fn status(&self, venue: &Venue) -> Result<Value, StoreError> {
        let chain_ids: Vec<u64> = venue.config.chains.iter().map(|chain| chain.chain_id).collect();
        let applied = |chain_id: u64| venue.chain(chain_id).map_or(0, |chain| chain.journaled_sequence());
        let lease_ms = self.lease_ms;
        let read_ids = chain_ids.clone();
        let directory = self
            .read_directory(move |client| {
                Ok((
                    directory::nodes(client, lease_ms)?,
                    directory::chains(client, &read_ids)?,
                ))
            })
            .await;
        let (nodes, chains) = match directory {
            Some(read) => read?,
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
fn start_beat(
    mut connection: postgres::Connection,
    backend: &PostgresBackend,
    url: String,
) -> std::sync::mpsc::SyncSender<()> {
    let (stop, stopped) = std::sync::mpsc::sync_channel::<()>(1);
    let node_id = backend.node_id.clone();
    let interval = Duration::from_millis(backend.lease_ms / 3);
    std::thread::Builder::new()
        .name("cluster-beat".into())
        .spawn(move || {
            while let Err(std::sync::mpsc::RecvTimeoutError::Timeout) = stopped.recv_timeout(interval) {
                if let Err(error) = connection
                    .client()
                    .and_then(|client| directory::announce(client, &node_id, &url))
                {
                    tracing::warn!(%error, "cannot announce this node in the cluster's directory");
                }
            }
        })
        .expect("the cluster beat thread starts");
    stop
}
