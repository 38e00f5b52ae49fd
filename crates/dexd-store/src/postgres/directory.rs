//! The cluster's directory: which nodes there are, where they answer, whether they are alive,
//! and who leads each chain at which position, as the database sees it (`GET /cluster`).
//!
//! A node announces itself (its id and URL) on a regular beat; one is alive while its last beat
//! is more recent than a lease's length. This module reads and writes the directory, and says
//! which node a chain would rather have as its leader ([`preferred_leader`]); the leases decide.

use super::{from_bigint, postgres_error, to_bigint, StoreError};

/// A node of the cluster as the directory has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NodeSeen {
    /// Its id (`[cluster] node_id`).
    pub node_id: String,
    /// Where it answers.
    pub url: String,
    /// Whether it announced itself within the last lease's length.
    pub alive: bool,
}

/// A chain as the directory has it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainSeen {
    /// The chain.
    pub chain_id: u64,
    /// The node holding its lease now, if one does.
    pub leader: Option<String>,
    /// The epoch of its lease (0 if it was never led).
    pub epoch: u64,
    /// The journal's last sequence.
    pub sequence: u64,
}

/// The most nodes the directory lists (a bound on `GET /cluster`'s answer).
pub const MAX_LISTED_NODES: i64 = 1_000;

/// Records that `node_id` is alive and answers at `url`.
pub fn announce(client: &mut postgres::Client, node_id: &str, url: &str) -> Result<(), StoreError> {
    client
        .execute(
            "INSERT INTO dexd_nodes (node_id, url, heartbeat_at) VALUES ($1, $2, clock_timestamp())
             ON CONFLICT (node_id) DO UPDATE SET url = EXCLUDED.url, heartbeat_at = EXCLUDED.heartbeat_at",
            &[&node_id, &url],
        )
        .map_err(postgres_error)?;
    Ok(())
}

/// Every node, alive when it announced itself within `alive_within_ms`.
pub fn nodes(client: &mut postgres::Client, alive_within_ms: u64) -> Result<Vec<NodeSeen>, StoreError> {
    let rows = client
        .query(
            "SELECT node_id, url, heartbeat_at > clock_timestamp() - $1 * interval '1 millisecond'
             FROM dexd_nodes ORDER BY node_id LIMIT $2",
            &[&(alive_within_ms as f64), &MAX_LISTED_NODES],
        )
        .map_err(postgres_error)?;
    Ok(rows
        .iter()
        .map(|row| NodeSeen {
            node_id: row.get(0),
            url: row.get(1),
            alive: row.get(2),
        })
        .collect())
}

/// Each of `chain_ids`: its leader now, its epoch and its journal's last sequence.
pub fn chains(client: &mut postgres::Client, chain_ids: &[u64]) -> Result<Vec<ChainSeen>, StoreError> {
    let mut seen = Vec::with_capacity(chain_ids.len());
    for &chain_id in chain_ids {
        let row = client
            .query_one(
                "SELECT
                     (SELECT holder FROM dexd_leases WHERE chain_id = $1 AND expires_at > clock_timestamp()),
                     COALESCE((SELECT epoch FROM dexd_leases WHERE chain_id = $1), 0),
                     COALESCE((SELECT MAX(sequence) FROM dexd_journal WHERE chain_id = $1), 0)",
                &[&to_bigint(chain_id)],
            )
            .map_err(postgres_error)?;
        seen.push(ChainSeen {
            chain_id,
            leader: row.get(0),
            epoch: from_bigint(row.get(1))?,
            sequence: from_bigint(row.get(2))?,
        });
    }
    Ok(seen)
}

/// The node that should lead `chain_id`, so that the chains spread over the nodes: every chain
/// with a journal (by id) is dealt to the nodes alive within `alive_within_ms` (by id) in turn,
/// so each node leads as many chains as the others, give or take one. `None` when no node is
/// alive or the chain has no journal yet. A preference only: a node that is not the preferred
/// one waits a lease before taking a free lease, and a leader hands a chain over to its
/// preferred node; nothing is fenced by it (the epoch fences).
pub fn preferred_leader(
    client: &mut postgres::Client,
    chain_id: u64,
    alive_within_ms: u64,
) -> Result<Option<String>, StoreError> {
    let alive: Vec<String> = nodes(client, alive_within_ms)?
        .into_iter()
        .filter(|node| node.alive)
        .map(|node| node.node_id)
        .collect();
    let chains = client
        .query("SELECT chain_id FROM dexd_chains ORDER BY chain_id", &[])
        .map_err(postgres_error)?;
    let position = chains
        .iter()
        .position(|row| row.get::<_, i64>(0) == to_bigint(chain_id));
    Ok(match position {
        Some(position) if !alive.is_empty() => Some(alive[position % alive.len()].clone()),
        _ => None,
    })
}
