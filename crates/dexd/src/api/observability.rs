//! The operator's endpoints: `GET /ready`, `GET /metrics`, and the router that answers while the
//! chains start (before the venue exists): `/health` 200, `/ready` 503, `/metrics`, the
//! OpenAPI document and the stream protocol's description; every other path 503.
//!
//! `/metrics` reads the levels it reports (queues, books, lags, snapshots, custody) from their
//! owners at scrape time and renders the server's [`Telemetry`]; it records nothing itself
//! beyond the request counters the edge middleware keeps.

use std::sync::Arc;

use axum::http::header::{CONTENT_TYPE, RETRY_AFTER};
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::error::ApiError;
use super::state::{AppState, ConnectionGauge};
use dexd_venue::telemetry::Telemetry;

/// The content type of the Prometheus text exposition format.
pub const PROMETHEUS_TEXT_CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// 503 with a Retry-After of one second: the venue is still starting.
fn starting() -> Response {
    let mut response =
        ApiError::unavailable("the venue is starting (rebuilding its chains' state); retry shortly").into_response();
    response
        .headers_mut()
        .insert(RETRY_AFTER, HeaderValue::from_static("1"));
    response
}

fn prometheus_text(text: String) -> Response {
    (
        [(CONTENT_TYPE, HeaderValue::from_static(PROMETHEUS_TEXT_CONTENT_TYPE))],
        text,
    )
        .into_response()
}

/// The router that answers until every chain has started.
pub fn starting_router(
    telemetry: Arc<Telemetry>,
    connections: ConnectionGauge,
    document: Arc<serde_json::Value>,
) -> Router {
    Router::new()
        .route(
            "/health",
            get(|| async { axum::Json(serde_json::json!({"status": "ok"})) }),
        )
        .route("/ready", get(|| async { starting() }))
        .route(
            "/metrics",
            get(move || {
                let (telemetry, connections) = (Arc::clone(&telemetry), connections.clone());
                async move {
                    prometheus_text(telemetry.render(|telemetry| {
                        telemetry.gauge("dexd_ready", &[]).set(0.0);
                        telemetry
                            .gauge("dexd_http_connections", &[])
                            .set(connections.open() as f64);
                    }))
                }
            }),
        )
        .route(
            "/openapi.json",
            get(move || {
                let document = Arc::clone(&document);
                async move { axum::Json(document.as_ref().clone()) }
            }),
        )
        .route(
            "/docs/streams.md",
            get(|| async {
                (
                    [(CONTENT_TYPE, HeaderValue::from_static("text/markdown; charset=utf-8"))],
                    super::page::STREAM_PROTOCOL_DOCUMENT,
                )
            }),
        )
        .fallback(|| async { starting() })
}

/// `GET /ready` once every chain has started: ready, with the vault chains whose custody is
/// halted (crediting stopped: an operator must look). A halt does not make the service unready:
/// trading and withdrawals go on, and a load balancer must not take the venue away for it.
pub fn ready(app: &AppState) -> serde_json::Value {
    let halted: Vec<serde_json::Value> = app
        .custody
        .halted()
        .into_iter()
        .map(|(chain_id, reason)| serde_json::json!({"chainId": chain_id.to_string(), "reason": reason}))
        .collect();
    serde_json::json!({"status": "ready", "custodyHalted": halted})
}

/// `GET /metrics`: the exposition, with every level read now.
pub async fn metrics(axum::extract::State(app): axum::extract::State<Arc<AppState>>) -> Response {
    prometheus_text(app.telemetry.render(|telemetry| update_levels(&app, telemetry)))
}

fn update_levels(app: &AppState, telemetry: &Telemetry) {
    telemetry.gauge("dexd_ready", &[]).set(1.0);
    telemetry
        .gauge("dexd_http_connections", &[])
        .set(app.connections.open() as f64);
    telemetry
        .gauge("dexd_stream_connections", &[])
        .set(app.streams.open_connections() as f64);
    telemetry
        .gauge("dexd_stream_queued_bytes", &[])
        .set(app.streams.queued_total.bytes() as f64);
    telemetry
        .counter("dexd_stream_slow_consumers_total", &[])
        .absolute(app.streams.queued_total.slow_connections());
    telemetry
        .counter("dexd_cluster_directory_reads_total", &[])
        .absolute(app.cluster.directory_reads());
    let now_ms = dexd_store::now_ms();
    for chain_config in &app.venue.config.chains {
        if let Some(chain) = app.venue.chain(chain_config.chain_id) {
            update_chain_levels(app, telemetry, &chain, now_ms);
        }
    }
}

/// What the engine holds that the levels show, read under one short read lock.
struct EngineLevels {
    resting_orders: usize,
    accounts: usize,
    pending_deposits: usize,
    pending_withdrawals: usize,
    foreign_root: bool,
    roots_recorded: u64,
    payments_stopped: bool,
}

/// One chain's levels: its queue, journal, history, streams, engine, snapshots and custody.
fn update_chain_levels(app: &AppState, telemetry: &Telemetry, chain: &dexd_venue::Chain, now_ms: u64) {
    let chain_id = chain.chain_id;
    let labels = [("chain_id", chain_id.to_string())];
    let gauge = |name: &'static str, value: f64| telemetry.gauge(name, &labels).set(value);
    let journaled = chain.journaled_sequence();
    gauge("dexd_write_queue_depth", chain.write_queue_depth() as f64);
    gauge(
        "dexd_write_queue_capacity",
        app.venue.config.limits.write_queue_capacity as f64,
    );
    gauge("dexd_journal_sequence", journaled as f64);
    gauge(
        "dexd_projector_lag_commands",
        journaled.saturating_sub(chain.projected_sequence()) as f64,
    );
    gauge("dexd_stream_subscriptions", app.streams.subscriptions(chain_id) as f64);
    telemetry
        .counter("dexd_stream_engine_copies_total", &labels)
        .absolute(chain.stream_reads_requested());
    let levels = chain.read_engine(|engine| {
        let custody = engine.custody();
        let liabilities = custody.liabilities();
        EngineLevels {
            resting_orders: engine.resting_order_count(),
            accounts: engine.account_count(),
            pending_deposits: custody.pending_deposits().len(),
            pending_withdrawals: custody.pending_withdrawals().count(),
            foreign_root: liabilities.unresolved_foreign_root().is_some(),
            roots_recorded: liabilities.roots_recorded(),
            payments_stopped: liabilities.payable_through().is_none() && custody.pending_withdrawals().next().is_some(),
        }
    });
    gauge("dexd_resting_orders", levels.resting_orders as f64);
    gauge("dexd_accounts", levels.accounts as f64);
    update_snapshot_levels(telemetry, &labels, &chain.snapshots, journaled, now_ms);
    if let Some(vault) = app.custody.chain(chain_id) {
        update_custody_levels(telemetry, chain, &vault.status(), &levels);
    }
}

/// A chain's snapshot levels: the newest one's position, how far behind it is, its age, and the
/// counts written and failed.
fn update_snapshot_levels(
    telemetry: &Telemetry,
    labels: &[(&'static str, String)],
    snapshots: &dexd_venue::snapshotter::SnapshotStatus,
    journaled: u64,
    now_ms: u64,
) {
    let gauge = |name: &'static str, value: f64| telemetry.gauge(name, labels).set(value);
    let ordering = std::sync::atomic::Ordering::Acquire;
    let newest_sequence = snapshots.newest_sequence.load(ordering);
    let written_ms = snapshots.newest_written_unix_ms.load(ordering);
    gauge("dexd_snapshot_sequence", newest_sequence as f64);
    gauge(
        "dexd_snapshot_commands_behind",
        journaled.saturating_sub(newest_sequence) as f64,
    );
    if written_ms > 0 {
        gauge(
            "dexd_snapshot_age_seconds",
            now_ms.saturating_sub(written_ms) as f64 / 1_000.0,
        );
    }
    telemetry
        .counter("dexd_snapshots_written_total", labels)
        .absolute(snapshots.written_total.load(ordering));
    telemetry
        .counter("dexd_snapshots_failed_total", labels)
        .absolute(snapshots.failed_total.load(ordering));
}

/// A vault chain's custody levels: pending transfers, roots, the watcher and the reserves.
fn update_custody_levels(
    telemetry: &Telemetry,
    chain: &dexd_venue::Chain,
    status: &dexd_custody::CustodyStatus,
    levels: &EngineLevels,
) {
    let markets = chain.markets();
    let chain_id = chain.chain_id;
    let labels = [("chain_id", chain_id.to_string())];
    let gauge = |name: &'static str, value: f64| telemetry.gauge(name, &labels).set(value);
    let flag = |on: bool| if on { 1.0 } else { 0.0 };
    gauge("dexd_custody_pending_deposits", levels.pending_deposits as f64);
    gauge("dexd_custody_pending_withdrawals", levels.pending_withdrawals as f64);
    gauge("dexd_liability_foreign_root", flag(levels.foreign_root));
    gauge("dexd_liability_roots_recorded", levels.roots_recorded as f64);
    gauge("dexd_custody_withdrawals_unpayable", flag(levels.payments_stopped));
    gauge("dexd_custody_halted", flag(status.halted.is_some()));
    gauge("dexd_custody_node_up", flag(status.node_error.is_none()));
    if let (Some(head), Some(scanned)) = (status.head_block, status.scanned_block) {
        gauge("dexd_custody_watcher_lag_blocks", head.saturating_sub(scanned) as f64);
    }
    for (asset, surplus) in &status.reserves_surplus {
        let config = markets.config.asset_config(*asset);
        let whole_units = *surplus as f64 / 10f64.powi(config.decimals.min(77) as i32);
        telemetry
            .gauge(
                "dexd_custody_reserves_surplus",
                &[("chain_id", chain_id.to_string()), ("asset", config.symbol.clone())],
            )
            .set(whole_units);
    }
}
