//! Unit tests of the SQLite journal's checkpoints: the WAL copied into the database file by the
//! writer, by the checkpointer's own connection, and on the schedule the writer runs between
//! batches.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::database::database_path;
use super::*;

/// 100 journal entries from `first` on, each with a 200-byte placeholder command.
fn placeholder_entries(first: u64) -> Vec<JournalEntry> {
    (first..first + 100)
        .map(|sequence| JournalEntry {
            sequence,
            time_ms: sequence,
            command: vec![0; 200],
            authorization: None,
        })
        .collect()
}

fn file_bytes(path: &Path) -> u64 {
    std::fs::metadata(path).unwrap().len()
}

/// The journal's database file and its WAL.
fn journal_files(data_dir: &Path) -> (PathBuf, PathBuf) {
    let journal = database_path(data_dir, 1);
    let wal = PathBuf::from(format!("{}-wal", journal.display()));
    (journal, wal)
}

#[test]
fn a_checkpoint_moves_the_journal_into_its_file_and_the_wal_starts_over() {
    let data_dir = tempfile::tempdir().unwrap();
    let (mut writer, _projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    let (journal, wal) = journal_files(data_dir.path());
    // Five commits of 100 commands each, then the same again after the checkpoint.
    for first in (1..=500).step_by(100) {
        writer.append(&placeholder_entries(first)).unwrap();
    }
    let wal_bytes = file_bytes(&wal);
    let journal_bytes = file_bytes(&journal);
    writer.checkpoint().unwrap();
    assert!(
        file_bytes(&journal) > journal_bytes + 500 * 200,
        "the commands reached the file"
    );
    for first in (501..=1_000).step_by(100) {
        writer.append(&placeholder_entries(first)).unwrap();
    }
    assert_eq!(file_bytes(&wal), wal_bytes, "the WAL started over instead of growing");
}

#[test]
fn the_checkpointer_moves_the_bulk_and_the_writer_finishes_so_the_wal_starts_over() {
    let data_dir = tempfile::tempdir().unwrap();
    let (mut writer, _projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    let checkpointer = writer.checkpointer().unwrap();
    let (journal, wal) = journal_files(data_dir.path());
    for first in (1..=500).step_by(100) {
        writer.append(&placeholder_entries(first)).unwrap();
    }
    let wal_bytes = file_bytes(&wal);
    let journal_bytes = file_bytes(&journal);
    checkpointer.checkpoint().unwrap();
    assert!(
        file_bytes(&journal) > journal_bytes + 500 * 200,
        "the checkpointer's own connection moved the commands into the file"
    );
    // Appended while the checkpointer worked: the writer's short checkpoint takes it.
    writer.append(&placeholder_entries(501)).unwrap();
    writer.checkpoint().unwrap();
    for first in (601..=1_000).step_by(100) {
        writer.append(&placeholder_entries(first)).unwrap();
    }
    assert_eq!(file_bytes(&wal), wal_bytes, "the WAL started over instead of growing");
}

/// The schedule the writer runs between batches: nothing before the interval; after it, the
/// thread copies the bulk and a later step finishes, so the journal reaches its file.
#[test]
fn between_batches_the_journal_checkpoints_once_per_interval() {
    let data_dir = tempfile::tempdir().unwrap();
    let (mut writer, _projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    writer.checkpoint_in_background(1).unwrap();
    let (journal, _wal) = journal_files(data_dir.path());
    let interval = crate::JOURNAL_CHECKPOINT_INTERVAL_COMMANDS as u64;
    let journal_bytes = file_bytes(&journal);
    let mut first = 1;
    while first + 100 <= interval {
        writer.append(&placeholder_entries(first)).unwrap();
        Journal::between_batches(&mut writer).unwrap();
        first += 100;
    }
    assert_eq!(file_bytes(&journal), journal_bytes, "no checkpoint before the interval");
    let started = std::time::Instant::now();
    while file_bytes(&journal) < journal_bytes + interval * 200 {
        assert!(started.elapsed() < Duration::from_secs(30), "the checkpoint never came");
        writer.append(&placeholder_entries(first)).unwrap();
        Journal::between_batches(&mut writer).unwrap();
        first += 100;
        std::thread::sleep(Duration::from_millis(5));
    }
}
