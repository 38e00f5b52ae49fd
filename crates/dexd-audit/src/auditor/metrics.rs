//! The auditor's metrics (`--metrics-listen`): its position and lag, the commands and roots it
//! checked by verdict, its vetoes that failed, and whether a check failed; served at `/metrics`.
//! It decides nothing; the auditor updates them as it goes.

use std::net::SocketAddr;
use std::sync::Arc;

use dexd_venue::telemetry::Telemetry;

/// The auditor's metrics (`--metrics-listen`).
pub(super) struct AuditMetrics {
    pub(super) telemetry: Arc<Telemetry>,
    pub(super) position: metrics::Gauge,
    pub(super) lag: metrics::Gauge,
    pub(super) commands: metrics::Counter,
    pub(super) roots_ok: metrics::Counter,
    pub(super) roots_mismatched: metrics::Counter,
    pub(super) roots_data_mismatched: metrics::Counter,
    pub(super) roots_unavailable: metrics::Counter,
    pub(super) roots_unverified: metrics::Counter,
    pub(super) roots_unverified_warnings: metrics::Counter,
    pub(super) veto_failures: metrics::Counter,
    pub(super) failures: metrics::Gauge,
}

impl AuditMetrics {
    pub(super) fn new() -> AuditMetrics {
        let telemetry = Telemetry::new();
        telemetry.describe(
            "dexd_audit_position",
            None,
            "The last journal position the auditor checked.",
        );
        telemetry.describe(
            "dexd_audit_lag_commands",
            None,
            "How far the auditor is behind the venue's journal, in commands.",
        );
        telemetry.describe(
            "dexd_audit_commands_checked_total",
            None,
            "Commands checked since the start.",
        );
        telemetry.describe("dexd_audit_roots_checked_total", None, "Roots checked, by verdict.");
        telemetry.describe(
            "dexd_audit_roots_unverified_warnings_total",
            None,
            "Roots not verified a quarter into their challenge period.",
        );
        telemetry.describe(
            "dexd_audit_veto_failures_total",
            None,
            "Vetoes that failed and were tried again.",
        );
        telemetry.describe(
            "dexd_audit_failures",
            None,
            "1 once a command of the journal failed a check (the auditor stops there).",
        );
        let root =
            |verdict: &str| telemetry.counter("dexd_audit_roots_checked_total", &[("verdict", verdict.to_string())]);
        AuditMetrics {
            position: telemetry.gauge("dexd_audit_position", &[]),
            lag: telemetry.gauge("dexd_audit_lag_commands", &[]),
            commands: telemetry.counter("dexd_audit_commands_checked_total", &[]),
            roots_ok: root("ok"),
            roots_mismatched: root("mismatch"),
            roots_data_mismatched: root("data-mismatch"),
            roots_unavailable: root("unavailable"),
            roots_unverified: root("unverified"),
            roots_unverified_warnings: telemetry.counter("dexd_audit_roots_unverified_warnings_total", &[]),
            veto_failures: telemetry.counter("dexd_audit_veto_failures_total", &[]),
            failures: telemetry.gauge("dexd_audit_failures", &[]),
            telemetry,
        }
    }
}

/// Serves the auditor's `/metrics` on `address`.
pub(super) async fn serve_metrics(address: SocketAddr, telemetry: Arc<Telemetry>) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("--metrics-listen {address}: {error}"))?;
    let router = axum::Router::new().route(
        "/metrics",
        axum::routing::get(move || {
            let telemetry = Arc::clone(&telemetry);
            async move { telemetry.render(|_| {}) }
        }),
    );
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::warn!(%error, "the metrics server stopped");
        }
    });
    Ok(())
}
