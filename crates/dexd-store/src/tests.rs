//! Unit tests of the store: migrations, the history's trust at start, open orders in memory,
//! the id index runs and the authorization encoding (the checkpoints' are in
//! `checkpoints_tests.rs`).

use std::path::Path;

use dexd_core::{Address, Command, Engine, EngineConfig, Event, OrderId, OrderStatus, PairIndex, TransferKind};
use rusqlite::{params, Connection};

use super::database::*;
use super::history::*;
use super::journal::*;
use super::*;
use crate::codec::{self, decode_authorization, encode_authorization};

#[test]
fn a_store_of_schema_version_2_migrates_and_its_orders_are_rebuilt_in_the_history() {
    let data_dir = tempfile::tempdir().unwrap();
    let path = database_path(data_dir.path(), 1);
    let engine_config = crate::test_config::engine_config();
    let account = Address::from_bytes([0xa1; 20]);
    let deposit = deposit(account, 1, 10u128.pow(12));
    let order = limit_order(account, OrderId::from_bytes([0x0d; 32]), dexd_core::Direction::Buy, 10);
    let record = {
        let mut engine = Engine::new(engine_config.clone()).unwrap();
        let mut events = Vec::new();
        engine.execute(deposit.clone(), 1, &mut events).unwrap();
        events.clear();
        engine.execute(order.clone(), 2, &mut events).unwrap();
        events
            .into_iter()
            .find_map(|event| match event {
                Event::OrderUpdated(record) => Some(record),
                _ => None,
            })
            .unwrap()
    };
    {
        // A database as dexd left it at schema version 2: a 16-byte salt, no expiry.
        // The journal holds the commands, the order's with the 113-byte authorization of
        // that version; the history tables share the file.
        let connection = Connection::open(&path).unwrap();
        for migration in &JOURNAL_MIGRATIONS[..2] {
            connection.execute_batch(migration).unwrap();
        }
        connection.pragma_update(None, "user_version", 2).unwrap();
        connection
            .execute("INSERT INTO meta (key, value) VALUES ('chain_id', '1')", [])
            .unwrap();
        let mut legacy_authorization = record.terms.order_id.as_bytes().to_vec();
        legacy_authorization.extend_from_slice(&42u128.to_be_bytes());
        legacy_authorization.extend_from_slice(&[0x1b; 65]);
        for (sequence, command, authorization) in [(1, &deposit, None), (2, &order, Some(legacy_authorization))] {
            connection
                .execute(
                    "INSERT INTO commands (sequence, time_ms, command, authorization) VALUES (?1, ?1, ?2, ?3)",
                    params![sequence, codec::encode_command(command), authorization],
                )
                .unwrap();
        }
        connection
            .execute(
                "INSERT INTO orders (order_id, account, pair, status, sequence, created_ms, record, salt, signature)
                 VALUES (?1, ?2, 0, ?3, ?4, 2, ?5, ?6, ?7)",
                params![
                    record.terms.order_id.as_bytes(),
                    record.terms.account.as_bytes(),
                    record.status as u8,
                    to_sql_integer(record.sequence),
                    codec::encode_order(&record),
                    42u128.to_be_bytes(),
                    &[0x1bu8; 65][..],
                ],
            )
            .unwrap();
    }
    let (mut writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    let replayed = writer.replay(&engine_config, Some(&mut projector)).unwrap();
    assert_eq!(replayed.reprojected_commands, 2);
    let stored = reader
        .order(&record.terms.order_id)
        .unwrap()
        .expect("the order survives the migration");
    assert_eq!(stored.record, record);
    assert_eq!(stored.nonce[31], 42);
    assert_eq!(stored.expiry_ms, 0);
    let page = reader
        .orders(
            &record.terms.account,
            OrderStatus::Open,
            None,
            PageRequest {
                limit: 10,
                cursor: None,
                start_ms: 0,
                end_ms: u64::MAX,
            },
        )
        .unwrap();
    assert_eq!(page.items.len(), 1);
    let journal = Connection::open(&path).unwrap();
    let version: usize = journal
        .pragma_query_value(None, "user_version", |row| row.get(0))
        .unwrap();
    assert_eq!(version, JOURNAL_MIGRATIONS.len());
    let history_tables_left: i64 = journal
        .query_row(
            "SELECT COUNT(*) FROM sqlite_schema WHERE type = 'table' AND name IN ('orders', 'trades', 'transfers')",
            [],
            |row| row.get(0),
        )
        .unwrap();
    assert_eq!(history_tables_left, 0, "the history left the journal's file");
}

/// A store with `count` journaled deposits of 1 to `count` units, all written to the history.
pub(crate) fn store_with_deposits(data_dir: &Path, count: u64) -> EngineConfig {
    let engine_config = crate::test_config::engine_config();
    let (mut writer, mut projector, _reader) = open(data_dir, 1, Duration::from_secs(1)).unwrap();
    let entries: Vec<JournalEntry> = (1..=count)
        .map(|sequence| JournalEntry {
            sequence,
            time_ms: sequence,
            command: codec::encode_command(&deposit(Address::from_bytes([0xa1; 20]), 1, u128::from(sequence))),
            authorization: None,
        })
        .collect();
    writer.append(&entries).unwrap();
    let replayed = writer.replay(&engine_config, Some(&mut projector)).unwrap();
    assert_eq!(replayed.reprojected_commands as u64, count);
    engine_config
}

fn deposit_amounts(reader: &StoreReader) -> Vec<u128> {
    let request = PageRequest {
        limit: 100,
        cursor: None,
        start_ms: 0,
        end_ms: u64::MAX,
    };
    let page = reader
        .transfers(&Address::from_bytes([0xa1; 20]), TransferKind::Deposit, request)
        .unwrap();
    page.items.iter().map(|transfer| transfer.amount.units()).collect()
}

/// Opens the store of [`store_with_deposits`] (3 deposits) whose history was made stale,
/// and checks that the history starts empty and is rebuilt from the journal, without the
/// rows [`double_the_transfer_rows`] added; returns the projector for further checks.
fn assert_the_history_is_rebuilt(data_dir: &Path, engine_config: &EngineConfig, gone: &str) -> Projector {
    let (mut writer, mut projector, reader) = open(data_dir, 1, Duration::from_secs(1)).unwrap();
    assert_eq!(projector.projected_sequence().unwrap(), 0);
    let replayed = writer.replay(engine_config, Some(&mut projector)).unwrap();
    assert_eq!(replayed.reprojected_commands, 3);
    assert_eq!(deposit_amounts(&reader), vec![3, 2, 1], "{gone}");
    projector
}

#[test]
fn a_history_built_from_another_journal_is_deleted_and_rebuilt() {
    let data_dir = tempfile::tempdir().unwrap();
    let engine_config = store_with_deposits(data_dir.path(), 3);
    let history = Connection::open(history_path(data_dir.path(), 1)).unwrap();
    history
        .execute("UPDATE meta SET value = 'another journal' WHERE key = 'journal_id'", [])
        .unwrap();
    double_the_transfer_rows(&history);
    drop(history);
    assert_the_history_is_rebuilt(data_dir.path(), &engine_config, "the stale rows are gone");
}

#[test]
fn a_history_of_an_older_schema_version_is_deleted_and_rebuilt() {
    let data_dir = tempfile::tempdir().unwrap();
    let engine_config = store_with_deposits(data_dir.path(), 3);
    let history = Connection::open(history_path(data_dir.path(), 1)).unwrap();
    history
        .pragma_update(None, "user_version", HISTORY_SCHEMA_VERSION - 1)
        .unwrap();
    double_the_transfer_rows(&history);
    drop(history);
    let projector = assert_the_history_is_rebuilt(data_dir.path(), &engine_config, "the stale rows are gone");
    assert_eq!(user_version(&projector.connection).unwrap(), HISTORY_SCHEMA_VERSION);
}

#[test]
fn closed_orders_whose_ids_and_accounts_share_their_leading_bytes_are_told_apart() {
    let mut engine = Engine::new(crate::test_config::engine_config()).unwrap();
    let mut second_account = [0xa1; 20];
    second_account[8..].fill(0xb2);
    let accounts = [Address::from_bytes([0xa1; 20]), Address::from_bytes(second_account)];
    let mut second_order_id = [0x0d; 32];
    second_order_id[8..].fill(0x0e);
    let order_ids = [OrderId::from_bytes([0x0d; 32]), OrderId::from_bytes(second_order_id)];
    assert_eq!(leading_key(accounts[0].as_bytes()), leading_key(accounts[1].as_bytes()));
    assert_eq!(
        leading_key(order_ids[0].as_bytes()),
        leading_key(order_ids[1].as_bytes())
    );
    let mut projections = Vec::new();
    for (account, order_id) in accounts.iter().zip(order_ids) {
        let deposit = deposit(*account, 1, 10u128.pow(12));
        let order = limit_order(*account, order_id, dexd_core::Direction::Buy, 10);
        let authorization = venue_signed(order_id, 0x1b);
        let cancel = Command::CancelOrder {
            account: *account,
            order_id,
            pair: None,
        };
        for (command, authorization) in [(deposit, None), (order, Some(authorization)), (cancel, None)] {
            let mut events = Vec::new();
            let sequence = projections.len() as u64 + 1;
            engine.execute(command, sequence, &mut events).unwrap();
            projections.push(Projection {
                sequence,
                events: std::sync::Arc::new(events),
                authorization,
            });
        }
    }
    let data_dir = tempfile::tempdir().unwrap();
    let (_writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    projector.project(&projections).unwrap();
    let everything = PageRequest {
        limit: 10,
        cursor: None,
        start_ms: 0,
        end_ms: u64::MAX,
    };
    for (account, order_id) in accounts.iter().zip(order_ids) {
        let stored = reader.order(&order_id).unwrap().expect("the order is stored");
        assert_eq!(stored.record.terms.order_id, order_id);
        assert_eq!(stored.record.terms.account, *account);
        assert_eq!(stored.record.status, OrderStatus::Cancelled);
        assert_eq!(stored.signature, [0x1b; 65], "the placement's signature is kept");
        let listed = reader
            .orders(account, OrderStatus::Cancelled, None, everything)
            .unwrap();
        let listed_ids: Vec<OrderId> = listed.items.iter().map(|order| order.record.terms.order_id).collect();
        assert_eq!(listed_ids, vec![order_id]);
        assert!(reader.open_orders_on_pair(account, PairIndex(0)).is_empty());
    }
}

/// Runs `command` through `engine`, journals it and projects it, as the writer and the
/// projector do.
pub(crate) fn journal_and_project(
    engine: &mut Engine,
    writer: &mut StoreWriter,
    projector: &mut Projector,
    command: Command,
    authorization: Option<Authorization>,
) {
    journal_and_project_together(engine, writer, projector, vec![(command, authorization)]);
}

/// Runs `commands` through `engine` in order, then journals them in one append and projects
/// them in one projector transaction, as the writer and the projector do with a batch.
pub(crate) fn journal_and_project_together(
    engine: &mut Engine,
    writer: &mut StoreWriter,
    projector: &mut Projector,
    commands: Vec<(Command, Option<Authorization>)>,
) {
    let first = projector.projected_sequence().unwrap() + 1;
    let mut entries = Vec::new();
    let mut projections = Vec::new();
    for ((command, authorization), sequence) in commands.into_iter().zip(first..) {
        let encoded = codec::encode_command(&command);
        let mut events = Vec::new();
        let claim = authorization.as_ref().map(Authorization::claim);
        engine.execute_signed(command, claim, sequence, &mut events).unwrap();
        entries.push(JournalEntry {
            sequence,
            time_ms: sequence,
            command: encoded,
            authorization: authorization.clone(),
        });
        projections.push(Projection {
            sequence,
            events: Arc::new(events),
            authorization,
        });
    }
    writer.append(&entries).unwrap();
    projector.project(&projections).unwrap();
}

/// A deposit of `units` of asset `asset` of the embedded default's first chain.
/// A ledger deposit whose id is made of its amount (the history keeps one row per id).
pub(crate) fn deposit(account: Address, asset: u16, units: u128) -> Command {
    let mut transfer_id = [0; 32];
    transfer_id[16..].copy_from_slice(&units.to_be_bytes());
    Command::Deposit(dexd_core::TransferRequest {
        transfer_id,
        account,
        asset: dexd_core::AssetIndex(asset),
        amount: dexd_core::Amount::from_units(units),
    })
}

/// A good-till-cancelled limit order on the first pair, at 100,000 ticks.
pub(crate) fn limit_order(account: Address, order_id: OrderId, direction: dexd_core::Direction, lots: u64) -> Command {
    Command::PlaceOrder(dexd_core::NewOrder {
        order_id,
        client_order_id: None,
        account,
        pair: PairIndex(0),
        order_type: dexd_core::OrderType::Limit,
        direction,
        time_in_force: dexd_core::TimeInForce::GoodTillCancelled,
        post_only: false,
        price: dexd_core::Price::from_ticks(100_000),
        quantity: dexd_core::Quantity::from_lots(lots),
        conditions: Default::default(),
    })
}

/// The venue's signature of a placement, every byte of it `signature_byte`.
pub(crate) fn venue_signed(order_id: OrderId, signature_byte: u8) -> Authorization {
    Authorization {
        order_id: Some(order_id),
        // Its own nonce, and an expiry in the venue's window of the test's early times.
        nonce: *order_id.as_bytes(),
        expiry_ms: 0,
        signature: [signature_byte; 65],
        client_signed: false,
        batch: None,
        claims_batch_nonce: false,
        approved_at_block: None,
    }
}

#[test]
fn an_open_order_lives_in_memory_survives_a_restart_and_is_written_once_when_it_fills() {
    let engine_config = crate::test_config::engine_config();
    let mut engine = Engine::new(engine_config.clone()).unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    let (mut writer, mut projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    let (maker, taker) = (Address::from_bytes([0xa1; 20]), Address::from_bytes([0xb2; 20]));
    let maker_order_id = OrderId::from_bytes([0x0d; 32]);
    // Each placement signed with every byte the first of its id, so a signature tells whose it is.
    let placement = |account: Address, order_id: OrderId, direction, lots| {
        (
            limit_order(account, order_id, direction, lots),
            Some(venue_signed(order_id, order_id.as_bytes()[0])),
        )
    };
    for (account, asset) in [(maker, 0), (taker, 1)] {
        let deposit = deposit(account, asset, 10u128.pow(30));
        journal_and_project(&mut engine, &mut writer, &mut projector, deposit, None);
    }
    let (sell, signed) = placement(maker, maker_order_id, dexd_core::Direction::Sell, 100);
    journal_and_project(&mut engine, &mut writer, &mut projector, sell, signed);
    let (buy, signed) = placement(taker, OrderId::from_bytes([0x0e; 32]), dexd_core::Direction::Buy, 40);
    journal_and_project(&mut engine, &mut writer, &mut projector, buy, signed);
    let history_rows = |data_dir: &Path| -> i64 {
        Connection::open(history_path(data_dir, 1))
            .unwrap()
            .query_row("SELECT COUNT(*) FROM orders", [], |row| row.get(0))
            .unwrap()
    };
    assert_eq!(history_rows(data_dir.path()), 1, "only the filled buy has a row");
    drop((writer, projector));

    // A restart: the history holds every command, so the open order comes back from the
    // journal into memory alone.
    let (mut writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    let replayed = writer.replay(&engine_config, Some(&mut projector)).unwrap();
    assert_eq!(replayed.reprojected_commands, 0);
    let everything = PageRequest {
        limit: 10,
        cursor: None,
        start_ms: 0,
        end_ms: u64::MAX,
    };
    let open = reader.orders(&maker, OrderStatus::Open, None, everything).unwrap();
    assert_eq!(open.items.len(), 1);
    assert_eq!(open.items[0].record.terms.order_id, maker_order_id);
    assert_eq!(open.items[0].record.filled, dexd_core::Quantity::from_lots(40));
    assert_eq!(open.items[0].signature, [0x0d; 65]);
    assert_eq!(reader.open_orders_on_pair(&maker, PairIndex(0)).len(), 1);

    let (buy, signed) = placement(taker, OrderId::from_bytes([0x0f; 32]), dexd_core::Direction::Buy, 60);
    journal_and_project(&mut engine, &mut writer, &mut projector, buy, signed);
    assert!(reader
        .orders(&maker, OrderStatus::Open, None, everything)
        .unwrap()
        .items
        .is_empty());
    let filled = reader
        .order(&maker_order_id)
        .unwrap()
        .expect("the filled order has its row");
    assert_eq!(filled.record.status, OrderStatus::Filled);
    assert_eq!(filled.signature, [0x0d; 65], "the placement's signature, from memory");
    assert_eq!(history_rows(data_dir.path()), 3);
}

#[test]
fn closed_orders_are_found_by_id_before_and_after_their_index_run_and_after_a_restart() {
    let engine_config = crate::test_config::engine_config();
    let mut engine = Engine::new(engine_config.clone()).unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    let (mut writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    projector.set_id_index_run(2);
    let account = Address::from_bytes([0xa1; 20]);
    let deposit = deposit(account, 1, 10u128.pow(30));
    journal_and_project(&mut engine, &mut writer, &mut projector, deposit, None);
    // Pairs of ids that share their first 8 bytes, so every lookup must compare whole ids.
    let order_ids: Vec<OrderId> = (0..5u8)
        .map(|index| {
            let mut id = [index / 2; 32];
            id[31] = index;
            OrderId::from_bytes(id)
        })
        .collect();
    for (closed_so_far, order_id) in order_ids.iter().enumerate() {
        let order = limit_order(account, *order_id, dexd_core::Direction::Buy, 10);
        let authorization = venue_signed(*order_id, 0x1b);
        journal_and_project(&mut engine, &mut writer, &mut projector, order, Some(authorization));
        let cancel = Command::CancelOrder {
            account,
            order_id: *order_id,
            pair: None,
        };
        journal_and_project(&mut engine, &mut writer, &mut projector, cancel, None);
        for earlier in &order_ids[..=closed_so_far] {
            let stored = reader.order(earlier).unwrap().expect("a closed order is found by id");
            assert_eq!(stored.record.terms.order_id, *earlier);
            assert_eq!(stored.record.status, OrderStatus::Cancelled);
        }
    }
    let indexed: i64 = projector
        .connection
        .query_row("SELECT COUNT(*) FROM order_ids", [], |row| row.get(0))
        .unwrap();
    assert_eq!(indexed, 4, "two runs of two, the fifth order waits in memory");
    drop((writer, projector, reader));

    let (mut writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    writer.replay(&engine_config, Some(&mut projector)).unwrap();
    assert_eq!(
        reader.unindexed_ids.read().len(),
        1,
        "the order past the last run, from its row"
    );
    for order_id in &order_ids {
        let stored = reader.order(order_id).unwrap().expect("found after a restart");
        assert_eq!(stored.record.terms.order_id, *order_id);
    }
    assert!(reader.order(&OrderId::from_bytes([9; 32])).unwrap().is_none());
}

/// Copies every transfer row of a history once more (under another id): rows a rebuild would
/// drop.
fn double_the_transfer_rows(history: &Connection) {
    history
        .execute(
            "INSERT INTO transfers (account, kind, time_ms, record, transfer_id)
             SELECT account, kind, time_ms, record, transfer_id || x'ff' FROM transfers",
            [],
        )
        .unwrap();
}

/// Rewrites the history's record of its last boot and clean close, and doubles its deposit
/// rows: rows a rebuild would drop, so that a test sees whether the history was kept.
fn pretend_the_history_was(data_dir: &Path, boot_id: &str, closed_cleanly: &str) {
    let history = Connection::open(history_path(data_dir, 1)).unwrap();
    history
        .execute("UPDATE meta SET value = ?1 WHERE key = 'boot_id'", [boot_id])
        .unwrap();
    history
        .execute(
            "UPDATE meta SET value = ?1 WHERE key = 'closed_cleanly'",
            [closed_cleanly],
        )
        .unwrap();
    double_the_transfer_rows(&history);
}

#[test]
fn a_history_written_before_a_restart_of_the_machine_and_not_closed_cleanly_is_rebuilt() {
    let data_dir = tempfile::tempdir().unwrap();
    let engine_config = store_with_deposits(data_dir.path(), 3);
    pretend_the_history_was(data_dir.path(), "an earlier boot", "0");
    assert_the_history_is_rebuilt(data_dir.path(), &engine_config, "the unsynced rows are gone");
}

#[test]
fn a_history_closed_cleanly_is_kept_after_a_restart_of_the_machine() {
    let data_dir = tempfile::tempdir().unwrap();
    store_with_deposits(data_dir.path(), 3);
    let (_writer, projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    projector.close_cleanly().unwrap();
    let history = Connection::open(history_path(data_dir.path(), 1)).unwrap();
    assert_eq!(meta_value(&history, "closed_cleanly").unwrap(), "1");
    drop(history);
    pretend_the_history_was(data_dir.path(), "an earlier boot", "1");
    let (_writer, projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    assert_eq!(projector.projected_sequence().unwrap(), 3);
    assert_eq!(deposit_amounts(&reader), vec![3, 2, 1, 3, 2, 1], "the history was kept");
    let history = Connection::open(history_path(data_dir.path(), 1)).unwrap();
    assert_eq!(
        meta_value(&history, "closed_cleanly").unwrap(),
        "0",
        "an open history is not closed cleanly"
    );
    assert_eq!(
        meta_value(&history, "boot_id").unwrap(),
        current_boot_id().unwrap_or_default()
    );
}

#[test]
fn a_history_not_closed_cleanly_in_this_boot_is_kept() {
    // The process crashed, the machine did not: the operating system has every write.
    let data_dir = tempfile::tempdir().unwrap();
    store_with_deposits(data_dir.path(), 3);
    let boot_id = current_boot_id().expect("this test runs where the boot has an identity");
    pretend_the_history_was(data_dir.path(), &boot_id, "0");
    let (_writer, projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    assert_eq!(projector.projected_sequence().unwrap(), 3);
    assert_eq!(deposit_amounts(&reader), vec![3, 2, 1, 3, 2, 1], "the history was kept");
}

#[test]
fn a_history_ahead_of_its_journal_is_refused() {
    let data_dir = tempfile::tempdir().unwrap();
    let engine_config = store_with_deposits(data_dir.path(), 3);
    Connection::open(history_path(data_dir.path(), 1))
        .unwrap()
        .execute("UPDATE meta SET value = '5' WHERE key = 'projected_sequence'", [])
        .unwrap();
    let (mut writer, mut projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    let error = writer.replay(&engine_config, Some(&mut projector)).err().unwrap();
    assert!(
        error.to_string().contains("the journal ends at 3"),
        "unexpected error: {error}"
    );
}

#[test]
fn authorizations_round_trip_and_legacy_ones_still_read() {
    // A client's signature of its own nonce, `byte` in every byte of its fields.
    let signed = |byte: u8| Authorization {
        order_id: None,
        nonce: [byte; 32],
        expiry_ms: u64::from(byte),
        signature: [byte; 65],
        client_signed: true,
        batch: None,
        claims_batch_nonce: false,
        approved_at_block: None,
    };
    let batch = |index, hashes: &[[u8; 32]]| {
        Some(crate::BatchPlace {
            index,
            order_hashes: hashes.to_vec().into(),
        })
    };
    for authorization in [
        Authorization {
            order_id: Some(OrderId::from_bytes([1; 32])),
            ..signed(2)
        },
        Authorization {
            expiry_ms: u64::MAX,
            ..signed(5)
        },
        // A withdrawal a contract account approved, with the block the vault was asked at.
        Authorization {
            approved_at_block: Some(123_456),
            ..signed(7)
        },
        // An order of a batch signed once, claiming the batch's nonce and not.
        Authorization {
            order_id: Some(OrderId::from_bytes([9; 32])),
            batch: batch(2, &[[13; 32], [14; 32], [15; 32]]),
            claims_batch_nonce: true,
            ..signed(10)
        },
        Authorization {
            order_id: Some(OrderId::from_bytes([16; 32])),
            client_signed: false,
            batch: batch(0, &[[20; 32]]),
            ..signed(17)
        },
    ] {
        let encoded = encode_authorization(&Some(authorization.clone()));
        assert_eq!(decode_authorization(encoded).unwrap(), Some(authorization));
    }
    // A batch place whose index is past its orders, or cut short, does not read.
    let mut bad_index = encode_authorization(&Some(Authorization {
        batch: batch(0, &[[1; 32]]),
        claims_batch_nonce: true,
        ..signed(0)
    }))
    .unwrap();
    let place_at = bad_index.len() - 34;
    bad_index[place_at] = 1;
    assert!(decode_authorization(Some(bad_index.clone())).is_err());
    bad_index[place_at] = 0;
    bad_index.pop();
    assert!(decode_authorization(Some(bad_index)).is_err());
    let mut legacy = vec![7u8; 32];
    legacy.extend_from_slice(&42u128.to_be_bytes());
    legacy.extend_from_slice(&[8; 65]);
    let decoded = decode_authorization(Some(legacy)).unwrap().unwrap();
    assert_eq!(decoded.order_id, Some(OrderId::from_bytes([7; 32])));
    assert_eq!(decoded.nonce[31], 42);
    assert!(!decoded.client_signed);
    assert!(decode_authorization(Some(vec![2, 9])).is_err());
}

/// A snapshot whose checksum is right but whose payload is not: written with `write_snapshot`,
/// which checksums whatever it is given.
fn load_crafted_snapshot(
    payload: &[u8],
    engine: &Engine,
    engine_config: &EngineConfig,
) -> Result<snapshots::LoadedSnapshot, snapshots::SnapshotError> {
    let folder = tempfile::tempdir().unwrap();
    let identity = snapshots::SnapshotIdentity {
        chain_id: 1,
        journal_id: "0123456789abcdef0123456789abcdef".to_owned(),
        configuration_fingerprint: snapshots::configuration_fingerprint(engine_config),
    };
    let file = snapshots::write_snapshot(folder.path(), &identity, 7, engine.state_hash(), payload).unwrap();
    snapshots::load_snapshot(&file, &identity, engine_config)
}

#[test]
fn a_snapshot_restores_its_orders_and_one_with_bytes_after_its_orders_is_refused() {
    let (engine, engine_config, signatures) = codec::snapshot::tests::engine_with_resting_orders();
    let state = engine.state();
    assert!(state.pairs.len() >= 2 && state.pairs.last().unwrap().orders.is_empty());
    let payload = codec::snapshot::encode_snapshot(&state, &signatures);
    let loaded = load_crafted_snapshot(&payload, &engine, &engine_config).unwrap();
    assert_eq!(loaded.engine.state_hash(), engine.state_hash());
    assert_eq!(loaded.open_orders.len(), signatures.len());
    let resting = state.pairs.iter().flat_map(|pair| pair.orders.iter());
    for (record, written) in resting.zip(&signatures) {
        let open = loaded.open_orders.by_id(&record.terms.order_id).unwrap();
        assert_eq!(open.record, *record);
        assert_eq!(
            (open.nonce, open.expiry_ms, open.signature),
            (written.nonce, written.expiry_ms, written.signature)
        );
    }

    // The last pair's section ends the payload: its length (0) and count (0). Say one byte
    // follows, and add it.
    let mut trailing = payload.clone();
    let length_at = trailing.len() - 16;
    trailing[length_at..length_at + 8].copy_from_slice(&1u64.to_be_bytes());
    trailing.push(0);
    match load_crafted_snapshot(&trailing, &engine, &engine_config) {
        Err(snapshots::SnapshotError::Damaged(reason)) => {
            assert!(reason.contains("bytes after a pair's resting orders"), "{reason}")
        }
        other => panic!("{:?}", other.map(|_| ())),
    }
    let mut beyond = payload.clone();
    beyond.push(0);
    assert!(matches!(
        load_crafted_snapshot(&beyond, &engine, &engine_config),
        Err(snapshots::SnapshotError::Damaged(_))
    ));
}

#[test]
fn a_journal_keeps_the_custody_it_was_first_bound_to() {
    let data_dir = tempfile::tempdir().unwrap();
    store_with_deposits(data_dir.path(), 3);
    let vault = "the vault 0x00000000000000000000000000000000000De7d1 on chain 1";
    {
        let (writer, _projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        // A journal from before bindings takes the first one it is given, then keeps it.
        writer.bind_custody(vault).unwrap();
        writer.bind_custody(vault).unwrap();
    }
    let (writer, _projector, _reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    let other = "the vault 0x0000000000000000000000000000000000000bad on chain 1";
    let refused = writer.bind_custody(other).unwrap_err().to_string();
    assert!(refused.contains(vault) && refused.contains(other), "{refused}");
    writer.bind_custody(vault).unwrap();
}
