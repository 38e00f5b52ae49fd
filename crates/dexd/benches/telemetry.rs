//! What recording a request's metrics costs, to hold it against the cost of a placement.
//!
//! `cargo bench -p dexd --bench telemetry`. The request path records one counter and one
//! histogram sample per request (`Telemetry::record_request`); the writer records two samples
//! per group commit, which are fewer. A placement over HTTP costs about 200 µs of CPU on the
//! 2-core machine (9,000 placements a second use both cores, see BENCHMARKS.md), so 3 % of it is
//! 6 µs: this measures how far under that the recording is, on one thread and with two threads
//! recording into the same series at once (the contended case).

use std::sync::Arc;
use std::time::Instant;

use criterion::{criterion_group, criterion_main, Criterion, Throughput};
use dexd_venue::telemetry::Telemetry;

fn record_request(criterion: &mut Criterion) {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let _guard = runtime.enter();
    let telemetry = Telemetry::new();
    Telemetry::spawn_upkeep(&telemetry);
    let mut group = criterion.benchmark_group("telemetry");
    group.throughput(Throughput::Elements(1));
    group.bench_function("record_request, one thread", |bencher| {
        let mut seconds = 0.0001;
        bencher.iter(|| {
            seconds = if seconds > 0.05 { 0.0001 } else { seconds * 1.01 };
            telemetry.record_request("/order/addOrder", 200, seconds);
        });
        telemetry.run_upkeep();
    });
    group.bench_function("record_request, two threads on one series", |bencher| {
        bencher.iter_custom(|iterations| {
            let started = Instant::now();
            std::thread::scope(|scope| {
                for _ in 0..2 {
                    let telemetry = Arc::clone(&telemetry);
                    scope.spawn(move || {
                        for index in 0..iterations {
                            telemetry.record_request("/order/addOrder", 200, (index % 1000) as f64 * 1e-5);
                        }
                    });
                }
            });
            telemetry.run_upkeep();
            // Time per recording, two recording at once.
            started.elapsed() / 2
        });
    });
    group.finish();
    let text = telemetry.render(|_| {});
    assert!(text.contains("dexd_http_requests_total"), "the recordings are rendered");
}

criterion_group!(benches, record_request);
criterion_main!(benches);
