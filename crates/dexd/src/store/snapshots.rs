//! Snapshots of a chain's state, so that a start replays only the journal after the newest one.
//!
//! A snapshot is one file, `snapshots/chain-<id>/<sequence>.snapshot` in the data directory: a
//! header (magic, file version, chain id, the journal sequence it is the state of, the journal's
//! identity, a fingerprint of the engine configuration, the engine's state hash), the payload
//! (`codec::snapshot`: the engine's whole state and the signatures of its resting orders) and a
//! CRC-32 of everything before it. It is written to a temporary file, synced, renamed into place
//! and the directory synced, so a crash leaves either the whole file or none.
//!
//! Loading checks everything it can before anything is used: the checksum, the header against
//! the journal and the configuration, the decoding, the engine's own consistency checks on
//! restore, and the restored engine's state hash against the header's. A snapshot that fails
//! any of them is reported and not used; the caller falls back to an older one or to the whole
//! journal. Snapshots are derived data: the journal stays the record, and nothing here deletes
//! from it. This module does not schedule snapshots (`venue::snapshotter` does); its only threads
//! are those a load rebuilds on, which end before it returns.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use dexd_core::{Engine, EngineConfig};

use super::database::StoreError;
use super::journal::{execute_journaled, JournalReader};
use super::open_orders::OpenOrders;
use super::records::StoredOrder;
use crate::codec::snapshot::{decode_snapshot, encode_snapshot, OrderSignature};

/// The first bytes of every snapshot file.
pub const SNAPSHOT_MAGIC: &[u8; 8] = b"DEXDSNAP";
/// The version of the snapshot file format this dexd writes and reads; a file of another
/// version is skipped (and the journal replayed instead). Version 2: the header's state hash
/// is BLAKE3 (version 1's was SHA3-256).
pub const SNAPSHOT_FILE_VERSION: u32 = 2;
/// The header: magic, version, chain id, sequence, journal id (32 ASCII hex digits),
/// configuration fingerprint, state hash, payload length.
const HEADER_BYTES: usize = 8 + 4 + 8 + 8 + 32 + 32 + 32 + 8;
const CHECKSUM_BYTES: usize = 4;
/// The extension of a complete snapshot file.
const SNAPSHOT_EXTENSION: &str = "snapshot";
/// The extension of a snapshot being written; such a file left by a crash is deleted.
const TEMPORARY_EXTENSION: &str = "snapshot-partial";

/// Why a snapshot could not be written or used.
#[derive(Debug)]
pub enum SnapshotError {
    /// Reading or writing the file failed.
    Io(std::io::Error),
    /// The file is damaged: short, bad checksum, undecodable, or a state that does not restore.
    Damaged(String),
    /// The file is whole but not for this store: another chain, journal, configuration or file
    /// version.
    NotApplicable(String),
    /// The store refused while the snapshot was built.
    Store(StoreError),
    /// The snapshot was abandoned because the chain is stopping.
    Stopped,
}

impl std::fmt::Display for SnapshotError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SnapshotError::Io(error) => write!(formatter, "{error}"),
            SnapshotError::Damaged(message) => write!(formatter, "damaged: {message}"),
            SnapshotError::NotApplicable(message) => write!(formatter, "not applicable: {message}"),
            SnapshotError::Store(error) => write!(formatter, "{error}"),
            SnapshotError::Stopped => formatter.write_str("abandoned: the chain is stopping"),
        }
    }
}

impl std::error::Error for SnapshotError {}

impl From<std::io::Error> for SnapshotError {
    fn from(error: std::io::Error) -> SnapshotError {
        SnapshotError::Io(error)
    }
}

impl From<StoreError> for SnapshotError {
    fn from(error: StoreError) -> SnapshotError {
        SnapshotError::Store(error)
    }
}

/// Where a chain's snapshots are kept.
pub fn snapshot_directory(data_dir: &Path, chain_id: u64) -> PathBuf {
    data_dir.join("snapshots").join(format!("chain-{chain_id}"))
}

/// A fingerprint of everything in the engine's configuration: a snapshot is used only by the
/// configuration it was written under (a changed one replays the journal, as it would without
/// snapshots, and refuses the start if the journal no longer replays).
pub fn configuration_fingerprint(config: &EngineConfig) -> [u8; 32] {
    alloy_primitives::keccak256(format!("{config:?}").as_bytes()).0
}

/// What a snapshot must match to be used.
#[derive(Debug, Clone)]
pub struct SnapshotIdentity {
    /// The chain.
    pub chain_id: u64,
    /// The journal's identity (`meta.journal_id`).
    pub journal_id: String,
    /// [`configuration_fingerprint`] of the engine configuration.
    pub configuration_fingerprint: [u8; 32],
}

/// A snapshot file on disk, by the sequence in its name.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SnapshotFile {
    /// The journal sequence it is the state of.
    pub sequence: u64,
    /// Its path.
    pub path: PathBuf,
}

/// The complete snapshot files of a directory, newest first. Files of other names are ignored.
pub fn list_snapshots(directory: &Path) -> Result<Vec<SnapshotFile>, SnapshotError> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error.into()),
    };
    let mut files = Vec::new();
    for entry in entries {
        let path = entry?.path();
        if path.extension().and_then(|extension| extension.to_str()) != Some(SNAPSHOT_EXTENSION) {
            continue;
        }
        let Some(sequence) = path
            .file_stem()
            .and_then(|stem| stem.to_str())
            .and_then(|stem| stem.parse::<u64>().ok())
        else {
            continue;
        };
        files.push(SnapshotFile { sequence, path });
    }
    files.sort_by(|left, right| right.sequence.cmp(&left.sequence));
    Ok(files)
}

/// Deletes snapshots being written when a crash came (they are never complete).
pub fn remove_partial_snapshots(directory: &Path) -> Result<(), SnapshotError> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(error) => return Err(error.into()),
    };
    for entry in entries {
        let path = entry?.path();
        if path.extension().and_then(|extension| extension.to_str()) == Some(TEMPORARY_EXTENSION) {
            std::fs::remove_file(&path)?;
        }
    }
    Ok(())
}

/// Deletes all but the newest `keep` snapshots.
pub fn remove_older_snapshots(directory: &Path, keep: usize) -> Result<(), SnapshotError> {
    for file in list_snapshots(directory)?.into_iter().skip(keep) {
        std::fs::remove_file(&file.path)?;
    }
    Ok(())
}

/// Encodes the snapshot of `engine` with the signatures of `open_orders`, which must be the
/// history's open orders at the same sequence: one for each resting order, with the same
/// record. Returns the payload and the engine's state hash.
pub fn snapshot_payload(engine: &Engine, open_orders: &OpenOrders) -> Result<(Vec<u8>, [u8; 32]), SnapshotError> {
    let state = engine.state();
    let mut signatures = Vec::with_capacity(open_orders.len());
    for record in state.pairs.iter().flat_map(|pair| pair.orders.iter()) {
        let known = open_orders.by_id(&record.terms.order_id).ok_or_else(|| {
            SnapshotError::Store(StoreError::Inconsistent(format!(
                "resting order {} is not among the open orders",
                record.sequence
            )))
        })?;
        if known.record != *record {
            return Err(SnapshotError::Store(StoreError::Inconsistent(format!(
                "open order {} differs from the engine's",
                record.sequence
            ))));
        }
        signatures.push(OrderSignature {
            nonce: known.nonce,
            expiry_ms: known.expiry_ms,
            signature: known.signature,
        });
    }
    if signatures.len() != open_orders.len() {
        return Err(SnapshotError::Store(StoreError::Inconsistent(format!(
            "{} open orders but {} resting orders",
            open_orders.len(),
            signatures.len()
        ))));
    }
    Ok((encode_snapshot(&state, &signatures), engine.state_hash()))
}

/// Writes a snapshot file atomically: a temporary file, synced, renamed, the directory synced.
pub fn write_snapshot(
    directory: &Path,
    identity: &SnapshotIdentity,
    sequence: u64,
    state_hash: [u8; 32],
    payload: &[u8],
) -> Result<SnapshotFile, SnapshotError> {
    std::fs::create_dir_all(directory)?;
    let journal_id: [u8; 32] = identity
        .journal_id
        .as_bytes()
        .try_into()
        .map_err(|_| SnapshotError::NotApplicable("the journal id is not 32 characters".into()))?;
    let mut header = Vec::with_capacity(HEADER_BYTES);
    header.extend_from_slice(SNAPSHOT_MAGIC);
    header.extend_from_slice(&SNAPSHOT_FILE_VERSION.to_be_bytes());
    header.extend_from_slice(&identity.chain_id.to_be_bytes());
    header.extend_from_slice(&sequence.to_be_bytes());
    header.extend_from_slice(&journal_id);
    header.extend_from_slice(&identity.configuration_fingerprint);
    header.extend_from_slice(&state_hash);
    header.extend_from_slice(&(payload.len() as u64).to_be_bytes());
    debug_assert_eq!(header.len(), HEADER_BYTES);
    let mut checksum = crc32fast::Hasher::new();
    checksum.update(&header);
    checksum.update(payload);
    let path = directory.join(format!("{sequence:020}.{SNAPSHOT_EXTENSION}"));
    let temporary = directory.join(format!("{sequence:020}.{TEMPORARY_EXTENSION}"));
    {
        let mut file = std::io::BufWriter::with_capacity(1 << 20, File::create(&temporary)?);
        file.write_all(&header)?;
        file.write_all(payload)?;
        file.write_all(&checksum.finalize().to_be_bytes())?;
        file.into_inner().map_err(|error| error.into_error())?.sync_all()?;
    }
    std::fs::rename(&temporary, &path)?;
    File::open(directory)?.sync_all()?;
    Ok(SnapshotFile { sequence, path })
}

/// A snapshot loaded, checked and restored.
pub struct LoadedSnapshot {
    /// The journal sequence it is the state of.
    pub sequence: u64,
    /// The engine in that state.
    pub engine: Engine,
    /// The history's open orders in that state, with their signatures, marked at `sequence`.
    pub open_orders: OpenOrders,
}

/// Reads, checks and restores a snapshot file (see the module's description of the checks).
pub fn load_snapshot(
    file: &SnapshotFile,
    identity: &SnapshotIdentity,
    config: &EngineConfig,
) -> Result<LoadedSnapshot, SnapshotError> {
    let bytes = std::fs::read(&file.path)?;
    let damaged = |message: &str| SnapshotError::Damaged(message.to_owned());
    if bytes.len() < HEADER_BYTES + CHECKSUM_BYTES {
        return Err(damaged("shorter than a header"));
    }
    if &bytes[..8] != SNAPSHOT_MAGIC {
        return Err(damaged("not a dexd snapshot"));
    }
    let (checked, stored_checksum) = bytes.split_at(bytes.len() - CHECKSUM_BYTES);
    if crc32fast::hash(checked).to_be_bytes() != stored_checksum {
        return Err(damaged("the checksum does not match (truncated or changed)"));
    }
    let word = |at: usize| u64::from_be_bytes(bytes[at..at + 8].try_into().expect("8 bytes"));
    let version = u32::from_be_bytes(bytes[8..12].try_into().expect("4 bytes"));
    if version != SNAPSHOT_FILE_VERSION {
        return Err(SnapshotError::NotApplicable(format!(
            "file version {version}, this dexd reads {SNAPSHOT_FILE_VERSION}"
        )));
    }
    let (chain_id, sequence) = (word(12), word(20));
    if chain_id != identity.chain_id {
        return Err(SnapshotError::NotApplicable(format!("a snapshot of chain {chain_id}")));
    }
    if sequence != file.sequence {
        return Err(damaged("the sequence in the file differs from its name"));
    }
    if &bytes[28..60] != identity.journal_id.as_bytes() {
        return Err(SnapshotError::NotApplicable("a snapshot of another journal".into()));
    }
    if bytes[60..92] != identity.configuration_fingerprint {
        return Err(SnapshotError::NotApplicable(
            "written under another engine configuration".into(),
        ));
    }
    let state_hash: [u8; 32] = bytes[92..124].try_into().expect("32 bytes");
    let payload_bytes = word(124);
    if payload_bytes != (checked.len() - HEADER_BYTES) as u64 {
        return Err(damaged("the payload length differs from the file's"));
    }
    let (state, resting_orders) =
        decode_snapshot(&checked[HEADER_BYTES..]).map_err(|error| SnapshotError::Damaged(error.to_string()))?;
    // The engine (books, then the state hash that checks them) and the projector's open orders
    // (by id, and on a third thread by account) are rebuilt at once, each decoding the resting
    // orders straight into its own structures: they share nothing else, and each is about half
    // of the start's work.
    let (engine, open_orders) = std::thread::scope(|scope| {
        let restoring = scope.spawn(|| {
            let orders_of_pair = |pair| {
                resting_orders
                    .of_pair(pair)
                    .map(|decoded| decoded.map(|(order, _)| order).map_err(|error| error.to_string()))
            };
            let engine = Engine::from_state_and_orders(config.clone(), &state, orders_of_pair)
                .map_err(|error| SnapshotError::Damaged(format!("the state does not restore: {error}")))?;
            if engine.state_hash() != state_hash {
                return Err(damaged("the restored state's hash differs from the one written"));
            }
            Ok(engine)
        });
        let orders = resting_orders.iter().map(|decoded| {
            let (record, signature) = decoded.map_err(|error| error.to_string())?;
            Ok(StoredOrder {
                record,
                nonce: signature.nonce,
                expiry_ms: signature.expiry_ms,
                signature: signature.signature,
            })
        });
        let keys = resting_orders.iter().map(|decoded| {
            let (record, _) = decoded.map_err(|error| error.to_string())?;
            Ok((record.terms.account, record.sequence, record.terms.order_id))
        });
        let open_orders = OpenOrders::restored(resting_orders.len(), orders, keys, sequence)
            .map_err(|reason| SnapshotError::Damaged(format!("the open orders do not restore: {reason}")));
        let engine = restoring
            .join()
            .unwrap_or_else(|_| Err(damaged("the state's restoration panicked")))?;
        Ok::<_, SnapshotError>((engine, open_orders?))
    })?;
    drop(bytes);
    Ok(LoadedSnapshot {
        sequence,
        engine,
        open_orders,
    })
}

/// Builds the state of command `through` beside the running chain, without touching it: from
/// `base` (the newest snapshot, or nothing for the empty state), replays the journal through a
/// read-only connection into a separate engine and open orders. `keep_going` is asked between
/// chunks of the journal; when it says no, the build is abandoned.
pub fn build_state(
    journal: &JournalReader,
    config: &EngineConfig,
    base: Option<LoadedSnapshot>,
    through: u64,
    keep_going: &dyn Fn() -> bool,
) -> Result<(Engine, OpenOrders), SnapshotError> {
    let (mut engine, mut open_orders, after) = match base {
        Some(base) => (base.engine, base.open_orders, base.sequence),
        None => (
            Engine::new(config.clone())
                .map_err(|error| StoreError::Inconsistent(format!("the configuration's pairs are invalid: {error}")))?,
            OpenOrders::default(),
            0,
        ),
    };
    let mut events = Vec::new();
    let reached = journal.for_each_command(after, through, keep_going, |journaled| {
        let (sequence, authorization) = (journaled.sequence, journaled.authorization);
        execute_journaled(&mut engine, journaled, &mut events)?;
        open_orders.apply(sequence, &events, authorization)
    })?;
    if reached != through {
        return Err(if keep_going() {
            SnapshotError::Store(StoreError::Inconsistent(format!(
                "the journal ends at {reached}, before {through}"
            )))
        } else {
            SnapshotError::Stopped
        });
    }
    Ok((engine, open_orders))
}
