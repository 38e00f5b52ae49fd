//! Replays one of the harness's workload files (`orders_<scenario>_s<seed>_n<count>.bin`, made by
//! its `./generator`) through the adapter on this one thread, with no drainer and no transport:
//! the engine's own cost per message, steadier than the harness's two-thread figure and the
//! thing to profile (`perf record` this binary).
//!
//!   cargo run --release -p dexd-harness-adapter --example replay -- orders_static_s23_n1000000.bin [rounds]
//!
//! Prints messages per second per round and a digest of the reports, which must not change
//! between two builds that are meant to behave alike. It does not check the harness's
//! canonical hash (the harness does that, from its sorted text).

use std::time::Instant;

use dexd_harness_adapter::{Adapter, CancelMessage, ModifyMessage, NewOrderMessage, Report};

/// One 40-byte record of the workload file: type, side, ioc, pad, quantity, sequence number,
/// order id, price, reserved; little-endian, as the generator writes it on x86.
struct Record {
    kind: u8,
    side: u8,
    ioc: u8,
    quantity: u32,
    sequence_number: u64,
    order_id: u64,
    price_ticks: i64,
}

/// The workload file's magic number ("MEBW_001").
const WORKLOAD_MAGIC: u64 = 0x4D45_4257_5F30_3031;

fn read_workload(path: &str) -> Vec<Record> {
    let bytes = std::fs::read(path).unwrap_or_else(|error| panic!("read {path}: {error}"));
    assert!(bytes.len() >= 16, "{path} is shorter than its header");
    let magic = u64::from_le_bytes(bytes[0..8].try_into().expect("eight bytes"));
    assert_eq!(magic, WORKLOAD_MAGIC, "{path} is not a workload file");
    let count = u32::from_le_bytes(bytes[12..16].try_into().expect("four bytes")) as usize;
    let body = &bytes[16..];
    assert_eq!(body.len(), count * 40, "{path} holds {count} records of 40 bytes");
    body.chunks_exact(40)
        .map(|record| Record {
            kind: record[0],
            side: record[1],
            ioc: record[2],
            quantity: u32::from_le_bytes(record[4..8].try_into().expect("four bytes")),
            sequence_number: u64::from_le_bytes(record[8..16].try_into().expect("eight bytes")),
            order_id: u64::from_le_bytes(record[16..24].try_into().expect("eight bytes")),
            price_ticks: i64::from_le_bytes(record[24..32].try_into().expect("eight bytes")),
        })
        .collect()
}

fn main() {
    let mut arguments = std::env::args().skip(1);
    let path = arguments.next().expect("usage: replay <workload.bin> [rounds]");
    let rounds: u32 = arguments
        .next()
        .map_or(3, |rounds| rounds.parse().expect("a number of rounds"));
    let workload = read_workload(&path);
    for round in 1..=rounds {
        let mut adapter = Adapter::new();
        let mut reports: u64 = 0;
        let mut digest: u64 = 0xcbf2_9ce4_8422_2325;
        let mut emit = |report: &Report| {
            reports += 1;
            for value in [
                u64::from(report.kind),
                report.sequence_number,
                report.order_id,
                report.price_ticks as u64,
                u64::from(report.quantity),
                report.maker_order_id,
                report.taker_order_id,
            ] {
                digest = (digest ^ value).wrapping_mul(0x0000_0100_0000_01b3);
            }
        };
        let started = Instant::now();
        for record in &workload {
            match record.kind {
                0 => adapter.new_order(
                    &NewOrderMessage {
                        order_id: record.order_id,
                        sequence_number: record.sequence_number,
                        price_ticks: record.price_ticks,
                        quantity: record.quantity,
                        side: record.side,
                        ioc: record.ioc,
                        reserved: [0; 2],
                    },
                    &mut emit,
                ),
                1 => adapter.cancel_order(
                    &CancelMessage {
                        order_id: record.order_id,
                        sequence_number: record.sequence_number,
                    },
                    &mut emit,
                ),
                _ => adapter.modify_order(
                    &ModifyMessage {
                        order_id: record.order_id,
                        sequence_number: record.sequence_number,
                        new_price_ticks: record.price_ticks,
                        new_quantity: record.quantity,
                        side: record.side,
                        reserved: [0; 3],
                    },
                    &mut emit,
                ),
            }
        }
        let seconds = started.elapsed().as_secs_f64();
        println!(
            "round {round}: {:.2} M msgs/s ({} messages, {reports} reports, digest {digest:016x})",
            workload.len() as f64 / seconds / 1e6,
            workload.len()
        );
    }
}
