//! The adapter's reports on small workloads, as the harness's oracle renders them.

use super::*;

fn new(order_id: u64, sequence_number: u64, side: u8, price_ticks: i64, quantity: u32, ioc: bool) -> NewOrderMessage {
    NewOrderMessage {
        order_id,
        sequence_number,
        price_ticks,
        quantity,
        side,
        ioc: u8::from(ioc),
        reserved: [0; 2],
    }
}

fn run(adapter: &mut Adapter, work: impl FnOnce(&mut Adapter, &mut dyn FnMut(&Report))) -> Vec<Report> {
    let mut reports = Vec::new();
    work(adapter, &mut |report| reports.push(*report));
    reports
}

#[test]
fn a_cross_reports_the_ack_the_trades_at_the_makers_prices_and_the_ioc_remainder() {
    let mut adapter = Adapter::new();
    run(&mut adapter, |adapter, emit| {
        adapter.new_order(&new(1, 1, 1, 100, 5, false), &mut |r| emit(r))
    });
    run(&mut adapter, |adapter, emit| {
        adapter.new_order(&new(2, 2, 1, 101, 5, false), &mut |r| emit(r))
    });
    assert_eq!((adapter.best_bid(), adapter.best_ask()), (i64::MIN, 100));
    assert_eq!(adapter.depth_at(101, 1), 5);
    let reports = run(&mut adapter, |adapter, emit| {
        adapter.new_order(&new(3, 3, 0, 101, 12, true), &mut |r| emit(r))
    });
    let kinds: Vec<u8> = reports.iter().map(|report| report.kind).collect();
    assert_eq!(kinds, vec![ME_ORDER_ACK, ME_TRADE, ME_TRADE, ME_CANCEL_ACK]);
    assert_eq!(
        (
            reports[1].price_ticks,
            reports[1].quantity,
            reports[1].maker_order_id,
            reports[1].taker_order_id
        ),
        (100, 5, 1, 3)
    );
    assert_eq!((reports[2].price_ticks, reports[2].maker_order_id), (101, 2));
    assert_eq!(
        (reports[3].order_id, reports[3].price_ticks, reports[3].sequence_number),
        (3, 101, 3)
    );
    assert_eq!(adapter.best_ask(), i64::MAX, "both asks filled, the remainder dropped");
}

#[test]
fn cancels_and_modifies_of_resting_orders_ack_and_of_others_reject() {
    let mut adapter = Adapter::new();
    run(&mut adapter, |adapter, emit| {
        adapter.new_order(&new(7, 1, 0, 90, 3, false), &mut |r| emit(r))
    });
    let modify = ModifyMessage {
        order_id: 7,
        sequence_number: 2,
        new_price_ticks: 91,
        new_quantity: 4,
        side: 0,
        reserved: [0; 3],
    };
    let reports = run(&mut adapter, |adapter, emit| {
        adapter.modify_order(&modify, &mut |r| emit(r))
    });
    assert_eq!(reports.len(), 1);
    assert_eq!(
        (reports[0].kind, reports[0].price_ticks, reports[0].quantity),
        (ME_MODIFY_ACK, 91, 4)
    );
    assert_eq!(
        (adapter.best_bid(), adapter.depth_at(91, 0), adapter.depth_at(90, 0)),
        (91, 4, 0)
    );
    let cancel = CancelMessage {
        order_id: 7,
        sequence_number: 3,
    };
    let reports = run(&mut adapter, |adapter, emit| {
        adapter.cancel_order(&cancel, &mut |r| emit(r))
    });
    assert_eq!(
        (reports[0].kind, reports[0].side, reports[0].price_ticks),
        (ME_CANCEL_ACK, 0, 91)
    );
    let again = run(&mut adapter, |adapter, emit| {
        adapter.cancel_order(&cancel, &mut |r| emit(r))
    });
    assert_eq!(again[0].kind, ME_CANCEL_REJECT);
    let reports = run(&mut adapter, |adapter, emit| {
        adapter.modify_order(&modify, &mut |r| emit(r))
    });
    assert_eq!(reports[0].kind, ME_MODIFY_REJECT);
    assert_eq!(adapter.best_bid(), i64::MIN);
}

#[test]
fn the_c_entry_points_hold_reports_until_the_flush_without_a_harness() {
    let collected_kinds = || -> Vec<u8> {
        STATE.with(|state| {
            let state = state.borrow();
            let transport = &state.as_ref().unwrap().1;
            transport.collected.iter().map(|report| report.kind).collect()
        })
    };
    // SAFETY: a null table makes the transport collect; the messages are valid.
    unsafe {
        engine_init(0, std::ptr::null(), std::ptr::null_mut());
        engine_on_new_order(&new(1, 1, 1, 50, 2, false));
        engine_on_new_order(&new(2, 2, 0, 50, 1, false));
    }
    assert_eq!((engine_query_best_ask(), engine_query_depth_at(50, 1)), (50, 1));
    assert!(
        collected_kinds().is_empty(),
        "three reports are fewer than a burst: held until the flush"
    );
    engine_flush();
    assert_eq!(collected_kinds(), vec![ME_ORDER_ACK, ME_ORDER_ACK, ME_TRADE]);
    engine_flush();
    assert_eq!(collected_kinds().len(), 3, "a second flush hands nothing over twice");
    engine_shutdown();
}

#[test]
fn the_burst_is_read_from_the_environment_within_its_bounds() {
    assert_eq!(publication_burst_reports(None), PUBLICATION_BURST_REPORTS);
    assert_eq!(publication_burst_reports(Some("1")), 1);
    assert_eq!(publication_burst_reports(Some(" 64 ")), 64);
    assert_eq!(publication_burst_reports(Some("0")), 1, "at least one report a burst");
    assert_eq!(
        publication_burst_reports(Some("100000000")),
        MAX_PUBLICATION_BURST_REPORTS
    );
    assert_eq!(publication_burst_reports(Some("many")), PUBLICATION_BURST_REPORTS);
    assert_eq!(publication_burst_reports(Some("-3")), PUBLICATION_BURST_REPORTS);
}
