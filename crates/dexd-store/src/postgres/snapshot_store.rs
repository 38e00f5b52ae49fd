//! Snapshots shared through PostgreSQL: a node that writes a snapshot of a chain also stores the
//! whole file in `dexd_snapshots` (the newest few per chain), and a node that starts takes the
//! newest one there when it is newer than its own. The file is the one a node writes to its
//! data directory, byte for byte; it is checked (checksum, journal, configuration, state hash)
//! when it is loaded, as every snapshot is, so a bad row costs a replay, never a wrong state.
//!
//! It does not decide when snapshots are written (the venue's snapshotter does), and does not
//! make a node's history: a node with an empty data directory still projects the whole journal
//! into its history, since the history holds every closed order and trade.

use super::{from_bigint, postgres_error, to_bigint, StoreError};

/// The largest snapshot file shared through the database (PostgreSQL's `BYTEA` holds up to
/// 1 GiB, and a row is sent in one message); a larger one stays in the node's own directory.
pub const MAX_SHARED_SNAPSHOT_BYTES: usize = 256 << 20;

/// Stores the snapshot file of `sequence` of `chain_id` (unless one is there already), and
/// keeps only the newest `keep` of the chain.
pub fn share(
    client: &mut postgres::Client,
    chain_id: u64,
    sequence: u64,
    file: &[u8],
    keep: usize,
) -> Result<(), StoreError> {
    let chain = to_bigint(chain_id);
    let mut transaction = client.transaction().map_err(postgres_error)?;
    transaction
        .execute(
            "INSERT INTO dexd_snapshots (chain_id, sequence, file) VALUES ($1, $2, $3)
             ON CONFLICT (chain_id, sequence) DO NOTHING",
            &[&chain, &to_bigint(sequence), &file],
        )
        .map_err(postgres_error)?;
    transaction
        .execute(
            "DELETE FROM dexd_snapshots WHERE chain_id = $1 AND sequence NOT IN (
                 SELECT sequence FROM dexd_snapshots WHERE chain_id = $1 ORDER BY sequence DESC LIMIT $2)",
            &[&chain, &(keep.max(1) as i64)],
        )
        .map_err(postgres_error)?;
    transaction.commit().map_err(postgres_error)
}

/// The newest shared snapshot file of `chain_id` whose sequence is above `newer_than` and at
/// most `through`, with its sequence.
pub fn newest(
    client: &mut postgres::Client,
    chain_id: u64,
    (newer_than, through): (u64, u64),
) -> Result<Option<(u64, Vec<u8>)>, StoreError> {
    let row = client
        .query_opt(
            "SELECT sequence, file FROM dexd_snapshots
             WHERE chain_id = $1 AND sequence > $2 AND sequence <= $3
             ORDER BY sequence DESC LIMIT 1",
            &[
                &to_bigint(chain_id),
                &to_bigint(newer_than),
                &to_bigint(through.min(i64::MAX as u64)),
            ],
        )
        .map_err(postgres_error)?;
    row.map(|row| Ok((from_bigint(row.get(0))?, row.get(1)))).transpose()
}
