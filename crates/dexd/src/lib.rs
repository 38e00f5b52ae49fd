//! dexd: an HTTP trading venue for asset pairs on blockchain networks.
//!
//! The crate wraps the pure engine of `dexd-core` in everything that touches the world: the
//! configuration ([`config`]), keys and signatures ([`crypto`]), the per-chain writer
//! ([`venue`]), the records behind the lists ([`history`]), the HTTP layer ([`api`]) and its
//! OpenAPI document ([`openapi`]). It does not match orders or move money itself: the engine does.

#![forbid(unsafe_code)]

pub mod api;
pub mod config;
pub mod crypto;
pub mod history;
pub mod openapi;
pub mod venue;

use std::future::Future;
use std::sync::Arc;

use tokio::net::TcpListener;

/// Serves the venue on a bound listener until `shutdown` completes, then finishes the requests
/// in flight.
pub async fn serve(
    config: config::Config,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> std::io::Result<()> {
    let venue = Arc::new(venue::Venue::start(config));
    axum::serve(listener, api::router(venue))
        .with_graceful_shutdown(shutdown)
        .await
}
