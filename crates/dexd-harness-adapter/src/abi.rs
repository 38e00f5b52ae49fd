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

/// How many reports the adapter holds, by default, before it hands them to the harness's queue
/// together (see [`Transport`]).
pub const PUBLICATION_BURST_REPORTS: usize = 256;
/// The most reports a burst may hold, whatever `DEXD_PUBLICATION_BURST_REPORTS` says.
pub const MAX_PUBLICATION_BURST_REPORTS: usize = 65_536;
/// The environment variable that sets the burst (1: each report handed over as it is made).
pub const PUBLICATION_BURST_VARIABLE: &str = "DEXD_PUBLICATION_BURST_REPORTS";

/// The burst size `DEXD_PUBLICATION_BURST_REPORTS` asks for, within 1 and
/// [`MAX_PUBLICATION_BURST_REPORTS`]; [`PUBLICATION_BURST_REPORTS`] when unset or unreadable.
pub fn publication_burst_reports(value: Option<&str>) -> usize {
    value
        .and_then(|text| text.trim().parse::<usize>().ok())
        .map_or(PUBLICATION_BURST_REPORTS, |reports| {
            reports.clamp(1, MAX_PUBLICATION_BURST_REPORTS)
        })
}

/// The harness's report transport and the sink this engine pushes into (a null table collects
/// the reports instead, in tests).
///
/// Reports are handed to the harness's queue in bursts, as dexd's venue hands a group of
/// commands' events to its projector and streams after each journal commit, and all that are
/// held are handed over in `engine_flush`, inside the harness's timed window. One report at a
/// time, an engine slower than the queue's consumer meets it waiting on every push: the
/// consumer has just moved the queue's read index, and the push's check for room reads that
/// line back from the other core (BENCHMARKS.md, "The reports handed over in bursts").
pub struct Transport {
    table: *const TransportTable,
    sink: *mut c_void,
    /// How many reports a burst holds.
    burst_reports: usize,
    /// Reports not yet handed to the harness's queue (fewer than `burst_reports`).
    pending: Vec<Report>,
    /// What was pushed, without a harness (tests).
    pub collected: Vec<Report>,
}

impl Transport {
    /// The harness's transport `table` and `sink` (a null table collects the reports), handed
    /// reports `burst_reports` at a time (at least one, at most
    /// [`MAX_PUBLICATION_BURST_REPORTS`]).
    pub fn new(table: *const c_void, sink: *mut c_void, burst_reports: usize) -> Transport {
        let burst_reports = burst_reports.clamp(1, MAX_PUBLICATION_BURST_REPORTS);
        Transport {
            table: table.cast(),
            sink,
            burst_reports,
            pending: Vec::with_capacity(burst_reports),
            collected: Vec::new(),
        }
    }

    /// Queues one report; a full burst is handed to the harness's queue.
    pub fn push(&mut self, report: &Report) {
        self.pending.push(*report);
        if self.pending.len() >= self.burst_reports {
            self.publish();
        }
    }

    /// Hands every queued report to the harness's queue, in order, waiting while it is full.
    pub fn publish(&mut self) {
        if self.table.is_null() {
            self.collected.append(&mut self.pending);
            return;
        }
        // SAFETY: the harness hands a valid table and sink to engine_init and keeps them until
        // engine_shutdown; the push is called from the thread the harness drives.
        let push = unsafe { (*self.table).push };
        for report in &self.pending {
            while push(self.sink, report) == 0 {
                std::hint::spin_loop();
            }
        }
        self.pending.clear();
    }
}

#[cfg(test)]
mod tests {
    use std::cell::RefCell;

    use super::*;

    thread_local! {
        /// What the fake queue took, and whether it refuses the next push (a full queue).
        static TAKEN: RefCell<(Vec<u64>, bool)> = const { RefCell::new((Vec::new(), false)) };
    }

    extern "C" fn create(_capacity: c_uint) -> *mut c_void {
        std::ptr::null_mut()
    }

    /// A queue that is full on every other push: it refuses one, then takes the next.
    extern "C" fn push_when_not_full(_handle: *mut c_void, report: *const Report) -> i32 {
        TAKEN.with(|taken| {
            let mut taken = taken.borrow_mut();
            taken.1 = !taken.1;
            if taken.1 {
                return 0;
            }
            // SAFETY: the transport hands a valid report.
            taken.0.push(unsafe { (*report).order_id });
            1
        })
    }

    extern "C" fn drain(_handle: *mut c_void, _out: *mut Report, _max: c_uint) -> c_uint {
        0
    }

    extern "C" fn nothing(_handle: *mut c_void) {}

    fn taken() -> Vec<u64> {
        TAKEN.with(|taken| taken.borrow().0.clone())
    }

    fn report(order_id: u64) -> Report {
        Report {
            order_id,
            ..Report::default()
        }
    }

    #[test]
    fn a_burst_is_handed_over_whole_in_order_waiting_while_the_queue_is_full() {
        let table = TransportTable {
            create,
            push: push_when_not_full,
            drain,
            flush: nothing,
            destroy: nothing,
        };
        let mut transport = Transport::new(std::ptr::from_ref(&table).cast(), std::ptr::null_mut(), 3);
        transport.push(&report(1));
        transport.push(&report(2));
        assert!(taken().is_empty(), "two reports are held: a burst is three");
        transport.push(&report(3));
        assert_eq!(
            taken(),
            vec![1, 2, 3],
            "each once, in order, though every other push was refused"
        );
        transport.push(&report(4));
        assert_eq!(taken(), vec![1, 2, 3]);
        transport.publish();
        assert_eq!(
            taken(),
            vec![1, 2, 3, 4],
            "the flush hands over what a burst did not fill"
        );
        transport.publish();
        assert_eq!(taken(), vec![1, 2, 3, 4], "and nothing twice");
    }

    #[test]
    fn a_burst_holds_at_least_one_report_and_at_most_the_bound() {
        let mut transport = Transport::new(std::ptr::null(), std::ptr::null_mut(), 0);
        transport.push(&report(9));
        assert_eq!(transport.collected.len(), 1, "a burst of none is a burst of one");
        let transport = Transport::new(std::ptr::null(), std::ptr::null_mut(), usize::MAX);
        assert_eq!(transport.burst_reports, MAX_PUBLICATION_BURST_REPORTS);
    }
}
