//! Online backup of a data directory (`dexd backup --data-dir DIR --to DIR`), while the service
//! runs: each chain's history, then its journal, copied with SQLite's `VACUUM INTO` (a consistent
//! copy of one read transaction, taken without stopping the writer), then the snapshots the
//! copied journal reaches. The history is copied first, so the copy's journal holds at least
//! every command its history does; the copy is the venue at the journal copy's last command,
//! and a start on it projects what its history lacks. Restoring is starting dexd on the copy.
//!
//! Every copied file is synced, and the copied history is marked closed cleanly (it is a whole,
//! synced database, so a start on another machine trusts it instead of rebuilding it). This
//! module only reads the source; it never writes to it.

use std::fs::File;
use std::path::{Path, PathBuf};

use rusqlite::{Connection, OpenFlags};

use super::database::{database_path, history_path, StoreError};
use super::snapshots::{list_snapshots, snapshot_directory};

/// What was copied of one chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ChainBackup {
    /// The chain.
    pub chain_id: u64,
    /// The last command of the copied journal: the copy is the venue as of this command.
    pub journal_sequence: u64,
    /// How far the copied history reaches (a start on the copy projects the rest).
    pub history_sequence: u64,
    /// How many snapshot files were copied.
    pub snapshots: usize,
}

/// The chains whose journals are in `data_dir`, by id.
pub fn chains_in(data_dir: &Path) -> Result<Vec<u64>, StoreError> {
    let entries = std::fs::read_dir(data_dir)
        .map_err(|error| StoreError::Inconsistent(format!("cannot read {}: {error}", data_dir.display())))?;
    let mut chains = Vec::new();
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(name) = name.to_str() else { continue };
        if let Some(chain_id) = name
            .strip_prefix("chain-")
            .and_then(|rest| rest.strip_suffix(".sqlite3"))
            .and_then(|id| id.parse::<u64>().ok())
        {
            chains.push(chain_id);
        }
    }
    chains.sort_unstable();
    Ok(chains)
}

fn io_error(path: &Path, error: std::io::Error) -> StoreError {
    StoreError::Inconsistent(format!("{}: {error}", path.display()))
}

fn sync_file(path: &Path) -> Result<(), StoreError> {
    File::open(path)
        .and_then(|file| file.sync_all())
        .map_err(|error| io_error(path, error))
}

/// Copies a database with `VACUUM INTO` from a read-only connection.
fn copy_database(source: &Path, target: &Path) -> Result<(), StoreError> {
    let connection = Connection::open_with_flags(source, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    connection.busy_timeout(std::time::Duration::from_secs(30))?;
    let target_text = target
        .to_str()
        .ok_or_else(|| StoreError::Inconsistent(format!("{} is not UTF-8", target.display())))?;
    connection.execute("VACUUM INTO ?1", [target_text])?;
    sync_file(target)
}

fn last_command(journal: &Path) -> Result<u64, StoreError> {
    let connection = Connection::open_with_flags(journal, OpenFlags::SQLITE_OPEN_READ_ONLY)?;
    Ok(
        connection.query_row("SELECT COALESCE(MAX(sequence), 0) FROM commands", [], |row| {
            row.get::<_, i64>(0)
        })? as u64,
    )
}

/// Backs up every chain of `data_dir` into `to`, which must not exist or be empty.
pub fn backup(data_dir: &Path, to: &Path) -> Result<Vec<ChainBackup>, StoreError> {
    let is_empty = match std::fs::read_dir(to) {
        Ok(mut entries) => entries.next().is_none(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => true,
        Err(error) => return Err(io_error(to, error)),
    };
    if !is_empty {
        return Err(StoreError::Inconsistent(format!(
            "{} is not empty; a backup goes into a new folder",
            to.display()
        )));
    }
    std::fs::create_dir_all(to).map_err(|error| io_error(to, error))?;
    let chains = chains_in(data_dir)?;
    if chains.is_empty() {
        return Err(StoreError::Inconsistent(format!(
            "{} holds no chain's journal (chain-<id>.sqlite3)",
            data_dir.display()
        )));
    }
    let mut copied = Vec::with_capacity(chains.len());
    for chain_id in chains {
        copied.push(backup_chain(data_dir, chain_id, to)?);
    }
    File::open(to)
        .and_then(|directory| directory.sync_all())
        .map_err(|error| io_error(to, error))?;
    Ok(copied)
}

fn backup_chain(data_dir: &Path, chain_id: u64, to: &Path) -> Result<ChainBackup, StoreError> {
    // History first: the journal copied after it holds at least every command it does.
    let source_history = history_path(data_dir, chain_id);
    let target_history = history_path(to, chain_id);
    let history_sequence = if source_history.exists() {
        copy_database(&source_history, &target_history)?;
        let connection = Connection::open(&target_history)?;
        connection.execute("UPDATE meta SET value = '1' WHERE key = 'closed_cleanly'", [])?;
        let projected = super::history::projected_sequence(&connection)?;
        drop(connection);
        sync_file(&target_history)?;
        projected
    } else {
        0
    };
    let target_journal = database_path(to, chain_id);
    copy_database(&database_path(data_dir, chain_id), &target_journal)?;
    let journal_sequence = last_command(&target_journal)?;
    if history_sequence > journal_sequence {
        return Err(StoreError::Inconsistent(format!(
            "chain {chain_id}: the history copy reaches {history_sequence}, beyond the journal copy's \
             {journal_sequence}"
        )));
    }
    // Snapshots are immutable once renamed into place; one the snapshotter deletes meanwhile is
    // simply not copied.
    let source_snapshots = snapshot_directory(data_dir, chain_id);
    let target_snapshots: PathBuf = snapshot_directory(to, chain_id);
    let mut snapshots = 0;
    for file in list_snapshots(&source_snapshots)
        .map_err(|error| StoreError::Inconsistent(error.to_string()))?
        .into_iter()
        .filter(|file| file.sequence <= journal_sequence)
    {
        std::fs::create_dir_all(&target_snapshots).map_err(|error| io_error(&target_snapshots, error))?;
        let target = target_snapshots.join(file.path.file_name().expect("a snapshot file has a name"));
        match std::fs::copy(&file.path, &target) {
            Ok(_) => {
                sync_file(&target)?;
                snapshots += 1;
            }
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(&file.path, error)),
        }
    }
    if snapshots > 0 {
        for directory in [
            &target_snapshots,
            &snapshot_directory(to, chain_id).parent().expect("nested").to_path_buf(),
        ] {
            File::open(directory)
                .and_then(|directory| directory.sync_all())
                .map_err(|error| io_error(directory, error))?;
        }
    }
    Ok(ChainBackup {
        chain_id,
        journal_sequence,
        history_sequence,
        snapshots,
    })
}
