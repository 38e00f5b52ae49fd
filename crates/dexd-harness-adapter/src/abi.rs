//! The C layout of the harness's messages, reports and report transport
//! (`api/matching_engine_api.h`), field for field; sizes checked at compile time.

use std::os::raw::{c_uint, c_void};

/// `ME_ORDER_ACK`.
pub const ME_ORDER_ACK: u8 = 0;
/// `ME_TRADE`.
pub const ME_TRADE: u8 = 1;
/// `ME_CANCEL_ACK`.
pub const ME_CANCEL_ACK: u8 = 2;
/// `ME_MODIFY_ACK`.
pub const ME_MODIFY_ACK: u8 = 3;
/// `ME_CANCEL_REJECT`.
pub const ME_CANCEL_REJECT: u8 = 4;
/// `ME_MODIFY_REJECT`.
pub const ME_MODIFY_REJECT: u8 = 5;

/// `new_order_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct NewOrderMessage {
    /// The order's id.
    pub order_id: u64,
    /// The message's place in the workload.
    pub sequence_number: u64,
    /// Its limit, in ticks.
    pub price_ticks: i64,
    /// How much.
    pub quantity: u32,
    /// 0 buy, 1 sell.
    pub side: u8,
    /// 1 for immediate-or-cancel.
    pub ioc: u8,
    /// Padding.
    pub reserved: [u8; 2],
}

/// `cancel_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CancelMessage {
    /// The order to cancel.
    pub order_id: u64,
    /// The message's place in the workload.
    pub sequence_number: u64,
}

/// `modify_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct ModifyMessage {
    /// The order to modify.
    pub order_id: u64,
    /// The message's place in the workload.
    pub sequence_number: u64,
    /// Its new limit, in ticks.
    pub new_price_ticks: i64,
    /// Its new quantity.
    pub new_quantity: u32,
    /// The order's side.
    pub side: u8,
    /// Padding.
    pub reserved: [u8; 3],
}

/// `me_report_t`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Report {
    /// `me_report_type_t`.
    pub kind: u8,
    /// The originating order's side.
    pub side: u8,
    /// Padding.
    pub reserved: [u8; 6],
    /// The aggressive (originating) message's sequence number.
    pub sequence_number: u64,
    /// The order the report concerns.
    pub order_id: u64,
    /// For a trade, the maker's price.
    pub price_ticks: i64,
    /// How much.
    pub quantity: u32,
    /// Padding.
    pub reserved2: u32,
    /// For a trade, the resting order.
    pub maker_order_id: u64,
    /// For a trade, the incoming order.
    pub taker_order_id: u64,
    /// Padding to 64 bytes.
    pub reserved3: u64,
}

const _: () = assert!(std::mem::size_of::<NewOrderMessage>() == 32);
const _: () = assert!(std::mem::size_of::<CancelMessage>() == 16);
const _: () = assert!(std::mem::size_of::<ModifyMessage>() == 32);
const _: () = assert!(std::mem::size_of::<Report>() == 64);

/// `me_transport_t`.
#[repr(C)]
struct TransportTable {
    create: extern "C" fn(capacity: c_uint) -> *mut c_void,
    push: extern "C" fn(handle: *mut c_void, report: *const Report) -> i32,
    drain: extern "C" fn(handle: *mut c_void, out: *mut Report, max: c_uint) -> c_uint,
    flush: extern "C" fn(handle: *mut c_void),
    destroy: extern "C" fn(handle: *mut c_void),
}

/// The harness's report transport and the sink this engine pushes into; `None` in tests, which
/// collect the reports instead.
pub struct Transport {
    table: *const TransportTable,
    sink: *mut c_void,
    /// What was pushed, without a harness (tests).
    pub collected: Vec<Report>,
}

impl Transport {
    /// The harness's transport `table` and `sink` (a null table collects the reports).
    pub fn new(table: *const c_void, sink: *mut c_void) -> Transport {
        Transport {
            table: table.cast(),
            sink,
            collected: Vec::new(),
        }
    }

    /// Pushes one report, waiting while the transport is full.
    pub fn push(&mut self, report: &Report) {
        if self.table.is_null() {
            self.collected.push(*report);
            return;
        }
        // SAFETY: the harness hands a valid table and sink to engine_init and keeps them until
        // engine_shutdown; the push is called from the thread the harness drives.
        let push = unsafe { (*self.table).push };
        while push(self.sink, report) == 0 {
            std::hint::spin_loop();
        }
    }
}
