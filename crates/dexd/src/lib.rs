//! dexd: an HTTP trading venue for asset pairs on blockchain networks.
//!
//! The crate wraps the pure engine of `dexd-core` in everything that touches the world: the
//! configuration ([`config`]), keys and signatures ([`crypto`]), the per-chain writer
//! ([`venue`]), the embedded store ([`store`], [`codec`]), the HTTP layer ([`api`]) and its
//! OpenAPI document ([`api::openapi`]). It does not match orders or move money itself: the engine does.

#![forbid(unsafe_code)]

pub mod api;
pub mod codec;
pub mod config;
pub mod crypto;
pub mod log_output;
pub mod rate_limit;
pub mod settlement;
pub mod store;
pub mod tls;
pub mod venue;

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::ConnectInfo;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tower::ServiceExt;

/// Serves one HTTP connection (upgrades to streams included) until it ends; when the server
/// stops, it finishes the request in flight and closes.
async fn serve_until_stopped<I, S, B>(
    connection: hyper::server::conn::http1::UpgradeableConnection<I, S>,
    mut stopping: tokio::sync::watch::Receiver<bool>,
) where
    S: hyper::service::HttpService<hyper::body::Incoming, ResBody = B>,
    S::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    B: hyper::body::Body + 'static,
    B::Error: Into<Box<dyn std::error::Error + Send + Sync>>,
{
    tokio::pin!(connection);
    // A client that closes or times out mid-request is not an error of the service.
    tokio::select! {
        _ = connection.as_mut() => return,
        _ = stopping.wait_for(|stopped| *stopped) => {}
    }
    connection.as_mut().graceful_shutdown();
    let _ = connection.await;
}

/// How long a graceful shutdown waits for requests in flight before it closes what is left.
pub const SHUTDOWN_GRACE_MS: u64 = 10_000;

/// Opens the venue's stores in `data_dir`, rebuilds every chain, and serves plain HTTP on a bound
/// listener until `shutdown` completes, then finishes the requests in flight.
pub async fn serve(
    config: config::Config,
    data_dir: &Path,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    serve_with_tls(config, data_dir, listener, None, shutdown).await
}

/// Like [`serve`], over TLS when `tls` is given: each connection's handshake must finish within
/// the header read timeout, like its headers.
///
/// Each connection is served by hyper's HTTP/1 server with a header read timeout, so a client
/// that sends its headers slowly cannot hold a connection open; at most `max_connections` are
/// served at once, and further ones wait in the listen queue until one closes.
pub async fn serve_with_tls(
    config: config::Config,
    data_dir: &Path,
    listener: TcpListener,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    let tls = tls.map(tokio_rustls::TlsAcceptor::from);
    let handshake_timeout = Duration::from_millis(config.limits.header_read_timeout_ms);
    let venue = Arc::new(venue::Venue::start(config, data_dir)?);
    let custody = Arc::new(settlement::Custodians::start(&venue)?);
    let limits = venue.config.limits;
    let streams = Arc::new(api::streams::Streams::start(&venue));
    let router = api::router(Arc::new(api::AppState {
        venue: Arc::clone(&venue),
        custody: Arc::clone(&custody),
        streams: Arc::clone(&streams),
    }));
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(Duration::from_millis(limits.header_read_timeout_ms));
    // Every connection task holds a clone of `alive`; when all are dropped, `all_closed` ends.
    let (stop_connections, stopping) = tokio::sync::watch::channel(false);
    let (alive, mut all_closed) = tokio::sync::mpsc::channel::<()>(1);
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&connections).acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
        };
        let (stream, remote) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(error) => {
                    tracing::warn!(%error, "accepting a connection failed");
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let router = router.clone();
        let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
            request.extensions_mut().insert(ConnectInfo::<SocketAddr>(remote));
            router.clone().oneshot(request.map(axum::body::Body::new))
        });
        let (stopping, alive) = (stopping.clone(), alive.clone());
        match &tls {
            None => {
                let connection = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
                tokio::spawn(async move {
                    serve_until_stopped(connection, stopping).await;
                    drop((permit, alive));
                });
            }
            Some(acceptor) => {
                let handshake = tokio::time::timeout(handshake_timeout, acceptor.accept(stream));
                let http = http.clone();
                tokio::spawn(async move {
                    // A failed or slow handshake closes the connection; it is the client's fault.
                    if let Ok(Ok(stream)) = handshake.await {
                        let connection = http.serve_connection(TokioIo::new(stream), service).with_upgrades();
                        serve_until_stopped(connection, stopping).await;
                    }
                    drop((permit, alive));
                });
            }
        }
    }
    // Stream connections were upgraded out of the HTTP server: they are told and closed here.
    streams.shut_down();
    let _ = stop_connections.send(true);
    drop(alive);
    if tokio::time::timeout(Duration::from_millis(SHUTDOWN_GRACE_MS), all_closed.recv())
        .await
        .is_err()
    {
        tracing::warn!("requests still in flight after the grace period were dropped");
    }
    // The chain tasks stop first, so that nothing new is journaled behind the writers' stop;
    // what they were doing is journaled or is redone after a restart.
    custody.stop().await;
    // Everything acknowledged is in the journals already; closing puts the histories on disk
    // too, so that they are trusted after a restart of the machine instead of rebuilt.
    venue.close().await;
    Ok(())
}
