//! The service's metrics, for `/metrics` in the Prometheus text exposition format.
//!
//! Each server owns its own recorder (the `metrics` crate's API with
//! `metrics-exporter-prometheus` behind it), not the process-wide one, so that several servers
//! in one process (the tests) keep apart. Hot paths hold handles registered once (a counter or a
//! histogram is an atomic add); everything that is a level rather than an event (queue depths,
//! resting orders, the projector's lag, snapshot age, custody) is read when `/metrics` is
//! scraped, by whoever owns it ([`Telemetry::render`] takes a closure), so nothing on the path of
//! a request pays for it.
//!
//! Names follow Prometheus's conventions: a `dexd_` prefix, base units (`_seconds`), `_total`
//! on counters. This module records and renders; it reads no state of the venue itself.

use std::collections::HashMap;
use std::sync::Arc;

use metrics::{Counter, Gauge, Histogram, Key, KeyName, Label, Metadata, Recorder, SharedString, Unit};
use metrics_exporter_prometheus::{Matcher, PrometheusBuilder, PrometheusHandle, PrometheusRecorder};
use parking_lot::RwLock;

/// Bucket bounds of the latency histograms, in seconds (100 µs to 10 s).
pub const LATENCY_BUCKETS_SECONDS: &[f64] = &[
    0.0001, 0.00025, 0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0,
];
/// Bucket bounds of the group-commit batch sizes, in commands.
pub const BATCH_BUCKETS_COMMANDS: &[f64] = &[1.0, 2.0, 4.0, 8.0, 16.0, 32.0, 64.0, 128.0, 256.0, 512.0, 1024.0];
/// The most distinct (operation, status) pairs the request counters keep; beyond, requests are
/// counted under the operation `other` (the routes and statuses are fixed, so this is a guard).
pub const MAX_REQUEST_SERIES: usize = 1_024;

/// How often the recorded histogram samples are folded into their buckets. The exporter keeps
/// each sample (8 bytes) until then: without this, a server nobody scrapes would grow by about
/// 70 KB a second at 9,000 requests a second.
pub const UPKEEP_INTERVAL_MS: u64 = 5_000;

/// The handles of one operation's request metrics.
struct OperationMetrics {
    duration_seconds: Histogram,
    by_status: HashMap<u16, Counter>,
}

/// A server's metrics: its recorder and the handles of the request metrics.
pub struct Telemetry {
    recorder: PrometheusRecorder,
    handle: PrometheusHandle,
    operations: RwLock<HashMap<Box<str>, OperationMetrics>>,
}

impl std::fmt::Debug for Telemetry {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("Telemetry")
    }
}

fn metadata() -> Metadata<'static> {
    Metadata::new(module_path!(), metrics::Level::INFO, Some(module_path!()))
}

fn key(name: &'static str, labels: &[(&'static str, String)]) -> Key {
    let labels: Vec<Label> = labels
        .iter()
        .map(|(label, value)| Label::new(*label, value.clone()))
        .collect();
    Key::from_parts(name, labels)
}

impl Telemetry {
    /// A new recorder with the service's metrics described.
    pub fn new() -> Arc<Telemetry> {
        let recorder = PrometheusBuilder::new()
            .set_buckets_for_metric(Matcher::Suffix("_seconds".into()), LATENCY_BUCKETS_SECONDS)
            .and_then(|builder| {
                builder.set_buckets_for_metric(Matcher::Suffix("_commands".into()), BATCH_BUCKETS_COMMANDS)
            })
            .expect("the bucket lists are not empty")
            .build_recorder();
        let handle = recorder.handle();
        let telemetry = Telemetry {
            recorder,
            handle,
            operations: RwLock::new(HashMap::new()),
        };
        for (name, unit, description) in DESCRIPTIONS {
            telemetry
                .recorder
                .describe_histogram(KeyName::from(*name), *unit, SharedString::from(*description));
        }
        Arc::new(telemetry)
    }

    /// A counter, registered once by its owner.
    pub fn counter(&self, name: &'static str, labels: &[(&'static str, String)]) -> Counter {
        self.recorder.register_counter(&key(name, labels), &metadata())
    }

    /// A gauge, registered once by its owner.
    pub fn gauge(&self, name: &'static str, labels: &[(&'static str, String)]) -> Gauge {
        self.recorder.register_gauge(&key(name, labels), &metadata())
    }

    /// A histogram, registered once by its owner.
    pub fn histogram(&self, name: &'static str, labels: &[(&'static str, String)]) -> Histogram {
        self.recorder.register_histogram(&key(name, labels), &metadata())
    }

    /// Records one answered request: `operation` is the route's path (or `unmatched`).
    pub fn record_request(&self, operation: &str, status: u16, seconds: f64) {
        {
            let operations = self.operations.read();
            if let Some(metrics) = operations.get(operation) {
                if let Some(counter) = metrics.by_status.get(&status) {
                    counter.increment(1);
                    metrics.duration_seconds.record(seconds);
                    return;
                }
            }
        }
        let mut operations = self.operations.write();
        let series: usize = operations.values().map(|metrics| metrics.by_status.len()).sum();
        let operation = if series >= MAX_REQUEST_SERIES && !operations.contains_key(operation) {
            "other"
        } else {
            operation
        };
        let metrics = operations.entry(operation.into()).or_insert_with(|| OperationMetrics {
            duration_seconds: self.histogram(
                "dexd_http_request_duration_seconds",
                &[("operation", operation.to_owned())],
            ),
            by_status: HashMap::new(),
        });
        let counter = metrics.by_status.entry(status).or_insert_with(|| {
            self.recorder.register_counter(
                &key(
                    "dexd_http_requests_total",
                    &[("operation", operation.to_owned()), ("status", status.to_string())],
                ),
                &metadata(),
            )
        });
        counter.increment(1);
        metrics.duration_seconds.record(seconds);
    }

    /// Folds the recorded histogram samples into their buckets (`UPKEEP_INTERVAL_MS`).
    pub fn run_upkeep(&self) {
        self.handle.run_upkeep();
    }

    /// Runs [`Telemetry::run_upkeep`] every `UPKEEP_INTERVAL_MS` on the current Tokio runtime
    /// for as long as the telemetry lives.
    pub fn spawn_upkeep(telemetry: &Arc<Telemetry>) {
        let telemetry = Arc::downgrade(telemetry);
        tokio::spawn(async move {
            let mut interval = tokio::time::interval(std::time::Duration::from_millis(UPKEEP_INTERVAL_MS));
            interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                interval.tick().await;
                let Some(telemetry) = telemetry.upgrade() else { return };
                telemetry.run_upkeep();
            }
        });
    }

    /// The exposition: `update_levels` sets the gauges that are read at scrape time first.
    pub fn render(&self, update_levels: impl FnOnce(&Telemetry)) -> String {
        update_levels(self);
        self.handle.run_upkeep();
        self.handle.render()
    }

    /// Describes a gauge or counter (its `# HELP` line).
    pub fn describe(&self, name: &'static str, unit: Option<Unit>, description: &'static str) {
        self.recorder
            .describe_gauge(KeyName::from(name), unit, SharedString::from(description));
    }
}

/// The `# HELP` lines of the service's metrics.
const DESCRIPTIONS: &[(&str, Option<Unit>, &str)] = &[
    (
        "dexd_http_requests_total",
        None,
        "HTTP requests answered, by operation (route path) and status.",
    ),
    (
        "dexd_http_request_duration_seconds",
        Some(Unit::Seconds),
        "Time from a request's arrival to its answer, by operation.",
    ),
    (
        "dexd_http_connections",
        None,
        "HTTP connections open now (stream connections included until they upgrade).",
    ),
    (
        "dexd_stream_connections",
        None,
        "WebSocket stream connections open now.",
    ),
    (
        "dexd_stream_queued_bytes",
        Some(Unit::Bytes),
        "Bytes waiting to be written to stream clients, all connections together.",
    ),
    (
        "dexd_stream_slow_consumers_total",
        None,
        "Stream connections that fell behind their messages and were told SLOW_CONSUMER and closed.",
    ),
    (
        "dexd_cluster_directory_reads_total",
        None,
        "Reads of the cluster's directory in PostgreSQL (leaders, journal ends): reads waiting for a journal position share one at a time.",
    ),
    (
        "dexd_stream_engine_copies_total",
        None,
        "Copies of the engine the streams took from the writer, by chain: one at the start and one after each overflow; subscriptions take none.",
    ),
    (
        "dexd_stream_subscriptions",
        None,
        "Stream subscriptions live now, by chain.",
    ),
    (
        "dexd_ready",
        None,
        "1 once every chain has finished its start, 0 before.",
    ),
    (
        "dexd_write_queue_depth",
        None,
        "State changes waiting for the chain's writer.",
    ),
    (
        "dexd_write_queue_capacity",
        None,
        "The chain's write queue capacity (past it, 503).",
    ),
    (
        "dexd_journal_batch_commands",
        None,
        "Commands per group commit of the chain's journal.",
    ),
    (
        "dexd_journal_commit_duration_seconds",
        Some(Unit::Seconds),
        "Time of one journal append (one synced transaction).",
    ),
    (
        "dexd_journal_sequence",
        None,
        "The sequence of the chain's last journaled command.",
    ),
    (
        "dexd_projector_lag_commands",
        None,
        "Journaled commands the history does not hold yet.",
    ),
    ("dexd_resting_orders", None, "Orders resting in the chain's books."),
    ("dexd_accounts", None, "Accounts the chain holds."),
    (
        "dexd_snapshot_age_seconds",
        Some(Unit::Seconds),
        "Time since the chain's newest snapshot was written (absent without one).",
    ),
    (
        "dexd_snapshot_sequence",
        None,
        "The journal sequence of the chain's newest snapshot (0 without one).",
    ),
    (
        "dexd_snapshot_commands_behind",
        None,
        "Journaled commands after the newest snapshot: what a start would replay.",
    ),
    (
        "dexd_snapshots_written_total",
        None,
        "Snapshots written since the start.",
    ),
    (
        "dexd_snapshots_failed_total",
        None,
        "Snapshots that failed since the start.",
    ),
    (
        "dexd_custody_watcher_lag_blocks",
        None,
        "Blocks between the node's head and the last block the deposit watcher scanned.",
    ),
    (
        "dexd_custody_pending_deposits",
        None,
        "Deposits sent through the venue and not yet confirmed.",
    ),
    (
        "dexd_custody_pending_withdrawals",
        None,
        "Withdrawals debited and not yet confirmed paid.",
    ),
    (
        "dexd_custody_halted",
        None,
        "1 when crediting stopped for good (see /account/assetsInfo's custody.haltReason).",
    ),
    (
        "dexd_custody_node_up",
        None,
        "1 when the last use of the chain's node succeeded.",
    ),
    (
        "dexd_liability_foreign_root",
        None,
        "1 while the vault holds a liability root the venue did not make that could still become the exit root: no withdrawal is paid (see /account/custody).",
    ),
    (
        "dexd_liability_roots_recorded",
        None,
        "Liability roots recorded from the vault (the next epoch).",
    ),
    (
        "dexd_custody_withdrawals_unpayable",
        None,
        "1 while withdrawals wait and no final root of the venue's lets any be paid (no root yet, a foreign root, or a frozen vault).",
    ),
    (
        "dexd_custody_reserves_surplus",
        None,
        "What the vault holds minus what the venue owes, in whole units of the asset (at the last check).",
    ),
];
