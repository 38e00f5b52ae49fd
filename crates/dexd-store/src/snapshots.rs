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
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

use dexd_core::{Engine, EngineConfig, OrderRecord};

use super::database::StoreError;
use super::journal_interface::{execute_journaled, CommandRange, JournalRead};
use super::open_orders::OpenOrders;
use super::records::StoredOrder;
use crate::codec::snapshot::{
    decode_resting_order, decode_state, encode_snapshot, section_header, state_length, OrderSignature,
    MAX_RESTING_ORDER_BYTES, SECTION_HEADER_BYTES, STATE_PREFIX_BYTES,
};
use crate::codec::CodecError;

/// The first bytes of every snapshot file.
pub const SNAPSHOT_MAGIC: &[u8; 8] = b"DEXDSNAP";
/// The version of the snapshot file format this dexd writes and reads; a file of another
/// version is skipped (and the journal replayed instead). Version 2: the header's state hash
/// is BLAKE3 (version 1's was SHA3-256). Version 3: the resting orders come last, a section per
/// pair, each order beside its signature, after the length of the state before them. Version
/// 4: agents and switches. Version 5: the accounts' flows through the vault and the newest root.
/// Version 6: the engine's journal position, each pending withdrawal's debit position, the
/// uncredited deposits, every root not settled behind a final one, the vault's freeze, and each
/// live nonce's signer. Version 7: the chain's configuration as last journaled, under which the
/// state is restored, and the state hash that covers it. Version 8: each resting order's place
/// in its batch, for an order of a batch signed once. Version 9: the live nonces a batch signed
/// once claimed, with which of its orders were applied; each pending withdrawal's origin (signed,
/// or asked for on chain) and the next request made on chain. Version 10: every withdrawal id
/// the chain used, and the configuration's venue-signed window.
pub const SNAPSHOT_FILE_VERSION: u32 = 10;
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
    use sha3::{Digest, Keccak256};
    Keccak256::digest(format!("{config:?}").as_bytes()).into()
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
    files.sort_by_key(|file| std::cmp::Reverse(file.sequence));
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
            batch: known.batch.clone(),
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
    let header = SnapshotHeader {
        version: SNAPSHOT_FILE_VERSION,
        chain_id: identity.chain_id,
        sequence,
        journal_id,
        configuration_fingerprint: identity.configuration_fingerprint,
        state_hash,
        payload_bytes: payload.len() as u64,
    }
    .encode();
    let mut checksum = crc32fast::Hasher::new();
    checksum.update(&header);
    checksum.update(payload);
    let checksum = checksum.finalize().to_be_bytes();
    write_atomically(directory, sequence, &[&header, payload, &checksum])
}

/// Puts a whole snapshot file made elsewhere (another node's, from PostgreSQL) into `directory`
/// as the snapshot of `sequence`, atomically. Nothing is checked here: it is checked, as every
/// snapshot is, when it is loaded.
pub fn place_snapshot_file(directory: &Path, sequence: u64, bytes: &[u8]) -> Result<SnapshotFile, SnapshotError> {
    std::fs::create_dir_all(directory)?;
    write_atomically(directory, sequence, &[bytes])
}

/// Writes the snapshot file of `sequence` from `parts`: a temporary file, synced, renamed, the
/// directory synced.
fn write_atomically(directory: &Path, sequence: u64, parts: &[&[u8]]) -> Result<SnapshotFile, SnapshotError> {
    let path = directory.join(format!("{sequence:020}.{SNAPSHOT_EXTENSION}"));
    let temporary = directory.join(format!("{sequence:020}.{TEMPORARY_EXTENSION}"));
    {
        let mut file = std::io::BufWriter::with_capacity(1 << 20, File::create(&temporary)?);
        for part in parts {
            file.write_all(part)?;
        }
        file.into_inner().map_err(|error| error.into_error())?.sync_all()?;
    }
    std::fs::rename(&temporary, &path)?;
    File::open(directory)?.sync_all()?;
    Ok(SnapshotFile { sequence, path })
}

/// A snapshot file's header, after the magic: what the file is the state of and how long its
/// payload is. Every integer is big-endian.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct SnapshotHeader {
    version: u32,
    chain_id: u64,
    sequence: u64,
    /// The journal's id, 32 ASCII hex digits.
    journal_id: [u8; 32],
    configuration_fingerprint: [u8; 32],
    state_hash: [u8; 32],
    payload_bytes: u64,
}

impl SnapshotHeader {
    fn encode(&self) -> [u8; HEADER_BYTES] {
        let mut bytes = [0u8; HEADER_BYTES];
        let fields: [&[u8]; 8] = [
            SNAPSHOT_MAGIC,
            &self.version.to_be_bytes(),
            &self.chain_id.to_be_bytes(),
            &self.sequence.to_be_bytes(),
            &self.journal_id,
            &self.configuration_fingerprint,
            &self.state_hash,
            &self.payload_bytes.to_be_bytes(),
        ];
        let mut at = 0;
        for field in fields {
            bytes[at..at + field.len()].copy_from_slice(field);
            at += field.len();
        }
        assert_eq!(at, HEADER_BYTES, "invariant: the header's fields fill it exactly");
        bytes
    }

    /// The header's fields; `None` when the magic is not a dexd snapshot's.
    fn decode(bytes: &[u8; HEADER_BYTES]) -> Option<SnapshotHeader> {
        let (magic, rest) = bytes.split_first_chunk::<8>()?;
        if magic != SNAPSHOT_MAGIC {
            return None;
        }
        let (version, rest) = rest.split_first_chunk::<4>()?;
        let (chain_id, rest) = rest.split_first_chunk::<8>()?;
        let (sequence, rest) = rest.split_first_chunk::<8>()?;
        let (journal_id, rest) = rest.split_first_chunk::<32>()?;
        let (configuration_fingerprint, rest) = rest.split_first_chunk::<32>()?;
        let (state_hash, rest) = rest.split_first_chunk::<32>()?;
        let payload_bytes: [u8; 8] = rest.try_into().ok()?;
        Some(SnapshotHeader {
            version: u32::from_be_bytes(*version),
            chain_id: u64::from_be_bytes(*chain_id),
            sequence: u64::from_be_bytes(*sequence),
            journal_id: *journal_id,
            configuration_fingerprint: *configuration_fingerprint,
            state_hash: *state_hash,
            payload_bytes: u64::from_be_bytes(payload_bytes),
        })
    }

    /// Whether this header belongs to `file` of the chain and journal `identity` names, with a
    /// payload of `payload_bytes`.
    fn check(&self, file: &SnapshotFile, identity: &SnapshotIdentity, payload_bytes: u64) -> Result<(), SnapshotError> {
        let not_applicable = |message: String| Err(SnapshotError::NotApplicable(message));
        if self.version != SNAPSHOT_FILE_VERSION {
            return not_applicable(format!(
                "file version {}, this dexd reads {SNAPSHOT_FILE_VERSION}",
                self.version
            ));
        }
        if self.chain_id != identity.chain_id {
            return not_applicable(format!("a snapshot of chain {}", self.chain_id));
        }
        if self.sequence != file.sequence {
            return Err(SnapshotError::Damaged(
                "the sequence in the file differs from its name".into(),
            ));
        }
        if &self.journal_id[..] != identity.journal_id.as_bytes() {
            return not_applicable("a snapshot of another journal".into());
        }
        if self.configuration_fingerprint != identity.configuration_fingerprint {
            return not_applicable("written under another engine configuration".into());
        }
        if self.payload_bytes != payload_bytes {
            return Err(SnapshotError::Damaged(
                "the payload length differs from the file's".into(),
            ));
        }
        Ok(())
    }
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

/// Bytes read from a snapshot file at a time, by the checksum pass and by each thread that
/// decodes the resting orders.
const READ_CHUNK_BYTES: usize = 1 << 20;

/// Reads, checks and restores a snapshot file (see the module's description of the checks).
///
/// The file is not read into memory whole: the checksum is computed over it a chunk at a time,
/// then the state before the resting orders is read and decoded, and the resting orders are
/// read a chunk at a time by the threads that rebuild the engine and the open orders. The file
/// is never changed once written, and its handle stays valid if it is deleted meanwhile; should
/// it change anyway, a read error or a decoding error refuses it, and the restored engine's
/// state hash is still checked.
pub fn load_snapshot(
    file: &SnapshotFile,
    identity: &SnapshotIdentity,
    config: &EngineConfig,
) -> Result<LoadedSnapshot, SnapshotError> {
    let handle = File::open(&file.path)?;
    let file_bytes = handle.metadata()?.len();
    let damaged = |message: &str| SnapshotError::Damaged(message.to_owned());
    if file_bytes < (HEADER_BYTES + CHECKSUM_BYTES) as u64 {
        return Err(damaged("shorter than a header"));
    }
    let mut header = [0u8; HEADER_BYTES];
    handle.read_exact_at(&mut header, 0)?;
    let header = SnapshotHeader::decode(&header).ok_or_else(|| damaged("not a dexd snapshot"))?;
    if checksum_of(&handle, file_bytes - CHECKSUM_BYTES as u64)?
        != read_array::<CHECKSUM_BYTES>(&handle, file_bytes - CHECKSUM_BYTES as u64)?
    {
        return Err(damaged("the checksum does not match (truncated or changed)"));
    }
    let payload_end = file_bytes - CHECKSUM_BYTES as u64;
    header.check(file, identity, payload_end - HEADER_BYTES as u64)?;
    let (sequence, state_hash) = (header.sequence, header.state_hash);
    let codec_error = |error: CodecError| SnapshotError::Damaged(error.to_string());
    let state_at = HEADER_BYTES as u64;
    let state_length = state_length(&read_array(&handle, state_at)?).map_err(codec_error)?;
    let sections_at = (state_at + STATE_PREFIX_BYTES as u64)
        .checked_add(state_length)
        .filter(|end| *end <= payload_end)
        .ok_or_else(|| damaged("the state runs past the payload"))?;
    let mut state_bytes = vec![0u8; (sections_at - state_at) as usize];
    handle.read_exact_at(&mut state_bytes, state_at)?;
    let state = decode_state(&state_bytes).map_err(codec_error)?;
    drop(state_bytes);
    let sections = read_sections(&handle, sections_at, state.pairs.len(), payload_end)?;
    let resting_orders: usize = sections.iter().map(|section| section.count as usize).sum();
    // The engine (books, then the state hash that checks them) and the projector's open orders
    // (by id, and on a third thread by account) are rebuilt at once, each reading and decoding
    // the resting orders straight into its own structures: they share nothing else, and each
    // is about half of the start's work.
    let (engine, open_orders) = std::thread::scope(|scope| {
        let restoring = scope.spawn(|| {
            let orders_of_pair = |pair: usize| sections[pair].reader(&handle).map(|read| read.map(|(order, _)| order));
            let engine = Engine::from_state_and_orders(config.clone(), &state, orders_of_pair)
                .map_err(|error| SnapshotError::Damaged(format!("the state does not restore: {error}")))?;
            if engine.state_hash() != state_hash {
                return Err(damaged("the restored state's hash differs from the one written"));
            }
            Ok(engine)
        });
        let orders = sections.iter().flat_map(|section| section.reader(&handle)).map(|read| {
            let (record, signature) = read?;
            Ok(StoredOrder {
                record,
                nonce: signature.nonce,
                expiry_ms: signature.expiry_ms,
                signature: signature.signature,
                batch: signature.batch,
            })
        });
        let open_orders = OpenOrders::restored(resting_orders, orders, sequence)
            .map_err(|reason| SnapshotError::Damaged(format!("the open orders do not restore: {reason}")));
        let engine = restoring
            .join()
            .unwrap_or_else(|_| Err(damaged("the state's restoration panicked")))?;
        Ok::<_, SnapshotError>((engine, open_orders?))
    })?;
    Ok(LoadedSnapshot {
        sequence,
        engine,
        open_orders,
    })
}

/// Where each pair's section of resting orders lies, from `at` (after the state) to the end of
/// the payload, which the last section must reach exactly.
fn read_sections(handle: &File, mut at: u64, pairs: usize, payload_end: u64) -> Result<Vec<Section>, SnapshotError> {
    let damaged = |message: &str| SnapshotError::Damaged(message.to_owned());
    let mut sections = Vec::with_capacity(pairs);
    for _ in 0..pairs {
        if at + SECTION_HEADER_BYTES as u64 > payload_end {
            return Err(damaged("a pair's resting orders run past the payload"));
        }
        let (length, count) = section_header(&read_array(handle, at)?)
            .map_err(|error: CodecError| SnapshotError::Damaged(error.to_string()))?;
        let start = at + SECTION_HEADER_BYTES as u64;
        let end = start
            .checked_add(length)
            .filter(|end| *end <= payload_end)
            .ok_or_else(|| damaged("a pair's resting orders run past the payload"))?;
        sections.push(Section { start, end, count });
        at = end;
    }
    if at != payload_end {
        return Err(damaged("bytes after the last pair's resting orders"));
    }
    Ok(sections)
}

/// The CRC-32 of the file's first `length` bytes, read a chunk at a time.
fn checksum_of(handle: &File, length: u64) -> std::io::Result<[u8; CHECKSUM_BYTES]> {
    let mut checksum = crc32fast::Hasher::new();
    let mut chunk = vec![0u8; READ_CHUNK_BYTES];
    let mut at = 0;
    while at < length {
        let take = (length - at).min(READ_CHUNK_BYTES as u64) as usize;
        handle.read_exact_at(&mut chunk[..take], at)?;
        checksum.update(&chunk[..take]);
        at += take as u64;
    }
    Ok(checksum.finalize().to_be_bytes())
}

fn read_array<const N: usize>(handle: &File, at: u64) -> std::io::Result<[u8; N]> {
    let mut bytes = [0u8; N];
    handle.read_exact_at(&mut bytes, at)?;
    Ok(bytes)
}

/// Where one pair's resting orders are in the file.
struct Section {
    start: u64,
    end: u64,
    count: u64,
}

impl Section {
    fn reader<'f>(&self, handle: &'f File) -> SectionReader<'f> {
        SectionReader {
            handle,
            next_read_at: self.start,
            end: self.end,
            buffer: Vec::with_capacity(READ_CHUNK_BYTES),
            unread_at: 0,
            left: self.count,
            failed: false,
        }
    }
}

/// Reads one pair's resting orders from the file a chunk at a time and decodes them one by
/// one. After an error it yields nothing more; bytes after the last order are an error.
struct SectionReader<'f> {
    handle: &'f File,
    next_read_at: u64,
    end: u64,
    buffer: Vec<u8>,
    unread_at: usize,
    left: u64,
    failed: bool,
}

impl SectionReader<'_> {
    fn next_order(&mut self) -> Result<Option<(OrderRecord, OrderSignature)>, String> {
        if self.buffer.len() - self.unread_at < MAX_RESTING_ORDER_BYTES && self.next_read_at < self.end {
            self.refill()
                .map_err(|error| format!("cannot read the file: {error}"))?;
        }
        if self.left == 0 {
            return if self.unread_at == self.buffer.len() && self.next_read_at == self.end {
                Ok(None)
            } else {
                Err("bytes after a pair's resting orders".to_owned())
            };
        }
        let (order, signature, taken) =
            decode_resting_order(&self.buffer[self.unread_at..]).map_err(|error| error.to_string())?;
        self.unread_at += taken;
        self.left -= 1;
        Ok(Some((order, signature)))
    }

    /// Moves the unread bytes to the front and reads as many more as the buffer holds.
    fn refill(&mut self) -> std::io::Result<()> {
        self.buffer.drain(..self.unread_at);
        self.unread_at = 0;
        let kept = self.buffer.len();
        let take = ((READ_CHUNK_BYTES - kept) as u64).min(self.end - self.next_read_at) as usize;
        self.buffer.resize(kept + take, 0);
        self.handle.read_exact_at(&mut self.buffer[kept..], self.next_read_at)?;
        self.next_read_at += take as u64;
        Ok(())
    }
}

impl Iterator for SectionReader<'_> {
    type Item = Result<(OrderRecord, OrderSignature), String>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let next = self.next_order().transpose();
        self.failed = matches!(next, Some(Err(_)));
        next
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        let left = usize::try_from(self.left).unwrap_or(usize::MAX);
        (left, left.checked_add(1))
    }
}

/// Builds the state of command `through` beside the running chain, without touching it: from
/// `base` (the newest snapshot, or nothing for the empty state), replays the journal through a
/// reader of its own into a separate engine and open orders. `keep_going` is asked between
/// chunks of the journal; when it says no, the build is abandoned.
pub fn build_state(
    journal: &mut dyn JournalRead,
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
    let reached = journal.for_each_command(
        CommandRange {
            after,
            through,
            keep_going,
        },
        &mut |journaled| {
            let (sequence, authorization) = (journaled.sequence, journaled.authorization.clone());
            execute_journaled(&mut engine, journaled, &mut events)?;
            open_orders.apply(sequence, &events, authorization)
        },
    )?;
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
