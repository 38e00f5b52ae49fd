//! The history's batches: the order hashes of a batch signed once are kept once per projector
//! transaction, two batches with one signature keep their own, and every closed order of a batch
//! reads back its place in it, before and after the history is rebuilt from the journal.

use std::sync::Arc;
use std::time::Duration;

use dexd_core::{Address, Command, Engine, OrderId, OrderStatus};

use super::tests::{deposit, journal_and_project, journal_and_project_together, limit_order, venue_signed};
use super::*;

/// A batch's order hashes, as a batch place shares them.
type OrderHashes = Arc<[[u8; 32]]>;

#[test]
fn a_batchs_hashes_are_kept_once_per_transaction_and_every_closed_order_reads_its_place() {
    let engine_config = crate::test_config::engine_config();
    let mut engine = Engine::new(engine_config.clone()).unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    let (mut writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    let account = Address::from_bytes([0xa1; 20]);
    journal_and_project(
        &mut engine,
        &mut writer,
        &mut projector,
        deposit(account, 1, 10u128.pow(30)),
        None,
    );
    // Three batches signed once, by (signature, nonce): three orders under (0x31, 0x31), two
    // under (0x32, 0x32), and two under (0x31, 0x33): another batch with the first one's
    // signature bytes. Anyone can make that: the same bytes recover, over another batch's digest,
    // to another address, which its maker can then approve as its own account's agent. Its
    // orders must keep their own hashes, never the first batch's.
    let batches: [(u8, u8, OrderHashes); 3] = [
        (0x31, 0x31, Arc::from(vec![[1; 32], [2; 32], [3; 32]])),
        (0x32, 0x32, Arc::from(vec![[4; 32], [5; 32]])),
        (0x31, 0x33, Arc::from(vec![[6; 32], [7; 32]])),
    ];
    let mut orders = Vec::new();
    for (signature_byte, nonce_byte, hashes) in &batches {
        for index in 0..hashes.len() {
            let order_id = OrderId::from_bytes([nonce_byte + index as u8 * 16; 32]);
            let authorization = Authorization {
                // The batch's nonce, claimed by its first order.
                nonce: [*nonce_byte; 32],
                batch: Some(BatchPlace {
                    index: index as u8,
                    order_hashes: hashes.clone(),
                }),
                claims_batch_nonce: index == 0,
                ..venue_signed(order_id, *signature_byte)
            };
            let order = limit_order(account, order_id, dexd_core::Direction::Buy, 10);
            journal_and_project(&mut engine, &mut writer, &mut projector, order, Some(authorization));
            orders.push((order_id, index as u8, hashes.clone()));
        }
    }
    // Cancels of orders of both batches projected in one transaction, then the rest in another.
    let cancels = |cancelled: &[OrderId]| -> Vec<(Command, Option<Authorization>)> {
        cancelled
            .iter()
            .map(|order_id| {
                let cancel = Command::CancelOrder {
                    account,
                    order_id: *order_id,
                    pair: None,
                };
                (cancel, None)
            })
            .collect()
    };
    let ids: Vec<OrderId> = orders.iter().map(|(order_id, _, _)| *order_id).collect();
    // The first batch's orders and the one with its signature close in one transaction too.
    journal_and_project_together(
        &mut engine,
        &mut writer,
        &mut projector,
        cancels(&[ids[0], ids[1], ids[3], ids[5]]),
    );
    journal_and_project_together(
        &mut engine,
        &mut writer,
        &mut projector,
        cancels(&[ids[2], ids[4], ids[6]]),
    );
    let batch_rows: i64 = projector
        .connection
        .query_row("SELECT COUNT(*) FROM batches", [], |row| row.get(0))
        .unwrap();
    assert_eq!(batch_rows, 6, "each batch once in each of the two transactions");
    let check = |reader: &StoreReader| {
        for (order_id, index, hashes) in &orders {
            let stored = reader.order(order_id).unwrap().expect("a closed order is found by id");
            let place = stored.batch.expect("an order of a batch keeps its place");
            assert_eq!((place.index, &place.order_hashes), (*index, hashes));
        }
        let everything = PageRequest {
            limit: 10,
            cursor: None,
            start_ms: 0,
            end_ms: u64::MAX,
        };
        let listed = reader
            .orders(&account, OrderStatus::Cancelled, None, everything)
            .unwrap();
        assert_eq!(listed.items.len(), orders.len());
        for stored in &listed.items {
            let (_, index, hashes) = orders
                .iter()
                .find(|(order_id, _, _)| *order_id == stored.record.terms.order_id)
                .expect("one of the orders");
            let place = stored.batch.as_ref().expect("listed with its place");
            assert_eq!((place.index, &place.order_hashes), (*index, hashes));
        }
    };
    check(&reader);
    drop((writer, projector, reader));

    // Rebuilt from the journal alone, the history reads the same.
    std::fs::remove_file(history_path(data_dir.path(), 1)).unwrap();
    let (mut writer, mut projector, reader) = open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
    writer.replay(&engine_config, Some(&mut projector)).unwrap();
    check(&reader);
}
