//! dexd: an HTTP trading venue for asset pairs on blockchain networks.
//!
//! The crate wraps the pure engine of `dexd-core` in everything that touches the world: the
//! configuration ([`config`]), keys and signatures ([`crypto`]), the per-chain writer
//! ([`venue`]), the embedded store ([`store`], [`codec`]), the HTTP layer ([`api`]) and its
//! OpenAPI document ([`openapi`]). It does not match orders or move money itself: the engine does.

#![forbid(unsafe_code)]

pub mod api;
pub mod codec;
pub mod config;
pub mod crypto;
pub mod openapi;
pub mod rate_limit;
pub mod store;
pub mod venue;

use std::future::Future;
use std::path::Path;
use std::sync::Arc;

use tokio::net::TcpListener;

/// Opens the venue's stores in `data_dir`, rebuilds every chain, and serves on a bound listener
/// until `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    config: config::Config,
    data_dir: &Path,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let venue = Arc::new(venue::Venue::start(config, data_dir)?);
    let service = api::router(venue).into_make_service_with_connect_info::<std::net::SocketAddr>();
    axum::serve(listener, service).with_graceful_shutdown(shutdown).await?;
    Ok(())
}
