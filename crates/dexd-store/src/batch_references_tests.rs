//! A batch's order hashes in the journal: written once per append (the batch's other rows name
//! the row that holds them) and read back whole from every starting row, on SQLite here and on
//! PostgreSQL through [`batch_hashes_are_written_once_and_read_back_whole`]
//! (`postgres/tests.rs`).

use std::time::Duration;

use dexd_core::{Address, OrderId};

use super::journal::JournalReader;
use super::journal_interface::{CommandRange, Journal, JournalRead};
use super::records::{Authorization, JournalEntry};
use super::tests::{deposit, store_with_deposits};
use super::{codec, open};

/// Two batches signed once, appended with a deposit between their orders: what
/// [`batch_hashes_are_written_once_and_read_back_whole`] appends, from `first`.
pub(crate) fn batched_entries(first: u64) -> Vec<JournalEntry> {
    let batch_of = |count: u8| -> std::sync::Arc<[[u8; 32]]> { (0..count).map(|index| [index + 1; 32]).collect() };
    let (twenty, two) = (batch_of(20), batch_of(2));
    let order = |hashes: &std::sync::Arc<[[u8; 32]]>, index: u8| Authorization {
        order_id: Some(OrderId::from_bytes([index; 32])),
        nonce: [hashes.len() as u8; 32],
        expiry_ms: 1_000,
        signature: [hashes.len() as u8; 65],
        client_signed: false,
        batch: Some(crate::BatchPlace {
            index,
            order_hashes: std::sync::Arc::clone(hashes),
        }),
        claims_batch_nonce: false,
        approved_at_block: None,
    };
    let mut authorizations: Vec<Option<Authorization>> = (0..20).map(|index| Some(order(&twenty, index))).collect();
    authorizations.insert(5, None);
    authorizations.insert(9, Some(order(&two, 0)));
    authorizations.push(Some(order(&two, 1)));
    authorizations
        .into_iter()
        .enumerate()
        .map(|(offset, authorization)| JournalEntry {
            sequence: first + offset as u64,
            time_ms: 1_000,
            command: codec::encode_command(&deposit(Address::from_bytes([0xb2; 20]), 1, offset as u128 + 1)),
            authorization,
        })
        .collect()
}

/// Appends [`batched_entries`] after `journal`'s last command and reads them back from every
/// starting point: each authorization whole, whichever row a read starts at.
pub(crate) fn batch_hashes_are_written_once_and_read_back_whole(journal: &mut dyn Journal) {
    let first = journal.last_sequence().unwrap() + 1;
    let entries = batched_entries(first);
    journal.append(&entries).unwrap();
    let last = first + entries.len() as u64 - 1;
    for start in first..=last {
        let mut read = Vec::new();
        journal
            .for_each_command(
                CommandRange {
                    through: last,
                    ..CommandRange::after(start - 1)
                },
                &mut |command| {
                    read.push((command.sequence, command.authorization));
                    Ok(())
                },
            )
            .unwrap();
        let expected: Vec<_> = entries[(start - first) as usize..]
            .iter()
            .map(|entry| (entry.sequence, entry.authorization.clone()))
            .collect();
        assert_eq!(read, expected, "read from {start}");
    }
}

#[test]
fn a_batch_s_hashes_are_stored_once_in_the_journal_and_read_back_whole() {
    let data_dir = tempfile::tempdir().unwrap();
    store_with_deposits(data_dir.path(), 3);
    let (mut writer, _projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    batch_hashes_are_written_once_and_read_back_whole(&mut writer);
    // Of the twenty orders of the first batch, only the first row holds its hashes.
    let connection = rusqlite::Connection::open(crate::database_path(data_dir.path(), 1)).unwrap();
    let sizes: Vec<i64> = connection
        .prepare("SELECT length(authorization) FROM commands WHERE sequence > 3 ORDER BY sequence")
        .unwrap()
        .query_map([], |row| row.get::<_, Option<i64>>(0).map(Option::unwrap_or_default))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let (holder, referring) = (sizes[0], sizes[1]);
    assert_eq!(holder - referring, 20 * 32 - 8, "{sizes:?}");
    assert_eq!(sizes.iter().filter(|size| **size == holder).count(), 1);
    // A read-only reader (the snapshots', the audit log's) reads them whole too.
    let mut reader = JournalReader::open(data_dir.path(), 1).unwrap();
    let mut authorizations = Vec::new();
    reader
        .for_each_command(CommandRange::after(4), &mut |command| {
            authorizations.push(command.authorization);
            Ok(())
        })
        .unwrap();
    let expected: Vec<_> = batched_entries(4)[1..]
        .iter()
        .map(|entry| entry.authorization.clone())
        .collect();
    assert_eq!(authorizations, expected);
}
