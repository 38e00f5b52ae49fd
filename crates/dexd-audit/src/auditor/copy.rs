//! The auditor's directory: its own copy of the venue's journal (every command it checked, in a
//! journal of dexd's own format), snapshots of its engine along it, the liability tree of every
//! root it checked (as the venue keeps them, so that `dexd exit --audit-dir` reads them the same
//! way), and its progress: what it printed and decided, so that a restart neither checks nor
//! prints anything twice.
//!
//! ```text
//! DIR/chain-<id>.sqlite3                      the journal, as checked
//! DIR/snapshots/chain-<id>/                   the engine every SNAPSHOT_EVERY_COMMANDS commands
//! DIR/liabilities/chain-<id>/<seq>-<root>.tree the tree of each root checked
//! DIR/audit/chain-<id>.json                   the progress
//! ```
//!
//! It does no checking itself.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Duration;

use dexd_core::{Engine, EngineConfig, EngineLimits};
use dexd_custody::liabilities::tree_file;
use dexd_custody::liabilities::TreeAtPosition;
use dexd_store::snapshots::{
    build_state, list_snapshots, load_snapshot, remove_older_snapshots, snapshot_directory, snapshot_payload,
    write_snapshot, LoadedSnapshot, SnapshotIdentity,
};
use dexd_store::{JournalEntry, JournalRead, StoreWriter};
use serde::{Deserialize, Serialize};

/// A snapshot of the auditor's engine is written after this many commands since the last.
pub const SNAPSHOT_EVERY_COMMANDS: u64 = 100_000;
/// The snapshots kept (the newest).
pub const SNAPSHOTS_KEPT: usize = 3;
/// How long a write to the copy waits for SQLite's lock (only the auditor writes it).
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// What the auditor decided about one root.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RootVerdict {
    /// `ok`, `mismatch` or `unavailable`.
    pub verdict: String,
    /// The line printed for it.
    pub line: String,
    /// The veto sent for it, if the auditor is the guardian and vetoed it.
    pub veto_tx: Option<String>,
}

/// The auditor's progress, kept in its directory.
#[derive(Debug, Clone, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Progress {
    /// The first check that failed, as printed (`FAIL <sequence> <what>`), with its position.
    pub failed: Option<(u64, String)>,
    /// Each root decided, by epoch.
    pub roots: BTreeMap<u64, RootVerdict>,
    /// Each withdrawal requested on chain found unserved past its deadline (the line printed),
    /// by request number.
    #[serde(default)]
    pub overdue_requests: BTreeMap<u64, String>,
}

/// The auditor's directory for one chain.
pub struct AuditCopy {
    directory: PathBuf,
    chain_id: u64,
    journal: StoreWriter,
    identity: SnapshotIdentity,
    progress: Progress,
}

/// The rules an empty engine is built with before the journal's first command, its
/// configuration, replaces them: none of its own.
pub fn placeholder_engine_config() -> EngineConfig {
    EngineConfig {
        assets: Vec::new(),
        pairs: Vec::new(),
        fee_account: dexd_core::Address::from_bytes([0; 20]),
        custody: dexd_core::CustodyMode::Ledger,
        limits: EngineLimits::default(),
    }
}

impl AuditCopy {
    /// Opens (or creates) the directory's copy of chain `chain_id`.
    pub fn open(directory: &Path, chain_id: u64) -> Result<AuditCopy, String> {
        let journal = dexd_store::open_journal(directory, chain_id, BUSY_TIMEOUT).map_err(|error| error.to_string())?;
        let journal_id = journal.journal_id().map_err(|error| error.to_string())?;
        let progress = match std::fs::read(progress_path(directory, chain_id)) {
            Ok(bytes) => serde_json::from_slice(&bytes).map_err(|error| format!("the progress file: {error}"))?,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => Progress::default(),
            Err(error) => return Err(format!("the progress file: {error}")),
        };
        Ok(AuditCopy {
            directory: directory.to_path_buf(),
            chain_id,
            journal,
            identity: SnapshotIdentity {
                chain_id,
                journal_id,
                // The states carry their configuration: one fingerprint for all.
                configuration_fingerprint: [0; 32],
            },
            progress,
        })
    }

    /// The progress so far.
    pub fn progress(&self) -> &Progress {
        &self.progress
    }

    /// Changes the progress and writes it (through a file renamed over the old one).
    pub fn update_progress(&mut self, change: impl FnOnce(&mut Progress)) -> Result<(), String> {
        change(&mut self.progress);
        let path = progress_path(&self.directory, self.chain_id);
        let partial = path.with_extension("json-partial");
        std::fs::create_dir_all(path.parent().expect("a file in a directory")).map_err(|error| error.to_string())?;
        let bytes = serde_json::to_vec_pretty(&self.progress).map_err(|error| error.to_string())?;
        std::fs::write(&partial, bytes).map_err(|error| error.to_string())?;
        std::fs::rename(&partial, &path).map_err(|error| error.to_string())
    }

    /// The last position checked (0 before any).
    pub fn position(&self) -> Result<u64, String> {
        self.journal.last_sequence().map_err(|error| error.to_string())
    }

    /// Appends checked commands, in one transaction.
    pub fn append(&mut self, entries: &[JournalEntry]) -> Result<(), String> {
        self.journal.append(entries).map_err(|error| error.to_string())
    }

    fn reader(&self) -> Result<Box<dyn JournalRead>, String> {
        dexd_store::JournalReader::open(&self.directory, self.chain_id)
            .map(|reader| Box::new(reader) as Box<dyn JournalRead>)
            .map_err(|error| error.to_string())
    }

    fn snapshots(&self) -> PathBuf {
        snapshot_directory(&self.directory, self.chain_id)
    }

    fn newest_snapshot_at_or_before(&self, through: u64) -> Option<LoadedSnapshot> {
        let files = list_snapshots(&self.snapshots()).ok()?;
        files
            .iter()
            .filter(|file| file.sequence <= through)
            .find_map(|file| load_snapshot(file, &self.identity, &placeholder_engine_config()).ok())
    }

    /// The engine at `position`: from the newest snapshot at or before it and the copy's
    /// journal up to it.
    pub fn engine_at(&self, position: u64) -> Result<Engine, String> {
        let mut reader = self.reader()?;
        let base = self.newest_snapshot_at_or_before(position);
        let (engine, _) = build_state(reader.as_mut(), &placeholder_engine_config(), base, position, &|| true)
            .map_err(|error| error.to_string())?;
        if engine.journal_sequence() != position {
            return Err(format!(
                "the copy ends at {}, before {position}",
                engine.journal_sequence()
            ));
        }
        Ok(engine)
    }

    /// The newest snapshot's position (0 when there is none).
    pub fn newest_snapshot(&self) -> u64 {
        list_snapshots(&self.snapshots())
            .ok()
            .and_then(|files| files.first().map(|file| file.sequence))
            .unwrap_or(0)
    }

    /// Writes a snapshot of the copy at `position` (rebuilt from the last one and the journal,
    /// which gives the open orders a snapshot holds beside the engine).
    pub fn snapshot(&self, position: u64) -> Result<(), String> {
        let mut reader = self.reader()?;
        let base = self.newest_snapshot_at_or_before(position);
        let (engine, open_orders) =
            build_state(reader.as_mut(), &placeholder_engine_config(), base, position, &|| true)
                .map_err(|error| error.to_string())?;
        let (payload, state_hash) = snapshot_payload(&engine, &open_orders).map_err(|error| error.to_string())?;
        write_snapshot(&self.snapshots(), &self.identity, position, state_hash, &payload)
            .map_err(|error| error.to_string())?;
        remove_older_snapshots(&self.snapshots(), SNAPSHOTS_KEPT).map_err(|error| error.to_string())
    }

    /// How many commands of the copy `counted` counts (a scan of the whole copy).
    pub fn count_commands(&self, counted: impl Fn(&dexd_core::Command) -> bool) -> Result<u64, String> {
        let mut reader = self.reader()?;
        let mut count = 0;
        reader
            .for_each_command(dexd_store::CommandRange::after(0), &mut |journaled| {
                count += u64::from(counted(&journaled.command));
                Ok(())
            })
            .map_err(|error| error.to_string())?;
        Ok(count)
    }

    /// Where the trees of the roots checked are kept.
    pub fn trees(&self) -> PathBuf {
        trees_directory(&self.directory, self.chain_id)
    }

    /// Keeps a root's tree.
    pub fn keep_tree(&self, tree: &TreeAtPosition) -> Result<PathBuf, String> {
        tree_file::write(&self.trees(), tree).map_err(|error| error.to_string())
    }

    /// Archives a root's data as checked (its encoding, docs/root-data.md), so that it can be
    /// read after beacon nodes prune the blobs that carried it; the file's path.
    pub fn keep_root_data(&self, epoch: u64, root: &[u8; 32], encoded: &[u8]) -> Result<PathBuf, String> {
        let folder = root_data_directory(&self.directory, self.chain_id);
        std::fs::create_dir_all(&folder).map_err(|error| format!("cannot create {}: {error}", folder.display()))?;
        let path = folder.join(format!("{epoch:010}-{}.dxrd", alloy::hex::encode(root)));
        let partial = path.with_extension("partial");
        std::fs::write(&partial, encoded)
            .and_then(|()| std::fs::rename(&partial, &path))
            .map_err(|error| format!("cannot write {}: {error}", path.display()))?;
        Ok(path)
    }
}

/// The folder of an auditor's archive of the roots' data of a chain.
pub fn root_data_directory(directory: &Path, chain_id: u64) -> PathBuf {
    directory.join("root-data").join(format!("chain-{chain_id}"))
}

fn progress_path(directory: &Path, chain_id: u64) -> PathBuf {
    directory.join("audit").join(format!("chain-{chain_id}.json"))
}

/// The folder of an auditor's (or a venue's) tree files of a chain.
pub fn trees_directory(directory: &Path, chain_id: u64) -> PathBuf {
    directory.join("liabilities").join(format!("chain-{chain_id}"))
}
