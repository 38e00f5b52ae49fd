//! dexd: an HTTP trading venue for asset pairs on blockchain networks.
//!
//! The crate serves the running venue of `dexd_venue` (each chain's writer, journal and
//! projector, and the configuration) over HTTP: the API ([`api`]) with its streams and OpenAPI
//! document, the public audit log (its format and auditor are `dexd_audit`'s, re-exported as
//! [`audit`]), the cluster's view of itself
//! (`cluster`) and the demo market ([`demo`]); the binary adds the operator's commands. Keys
//! and signatures are `dexd_crypto`'s, the journal and history `dexd_store`'s, custody on chain
//! `dexd_custody`'s. It does not match orders or move money itself: the engine of `dexd_core`
//! does.

#![forbid(unsafe_code)]

pub mod admin;
pub mod api;
/// The public journal's format and `dexd audit` (the `dexd-audit` crate).
pub use dexd_audit as audit;
pub(crate) mod cluster;
pub mod demo;
pub mod log_output;
pub mod tls;

use std::future::Future;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, OnceLock};
use std::time::{Duration, Instant};

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
    config: dexd_venue::config::Config,
    data_dir: &Path,
    listener: TcpListener,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    serve_with_tls(config, data_dir, listener, None, shutdown).await
}

/// What a started venue runs, for the shutdown.
struct Started {
    venue: Arc<dexd_venue::Venue>,
    custody: Arc<dexd_custody::Custodians>,
    streams: Arc<api::streams::Streams>,
    /// The dead man's switches' timers (stopped when dropped).
    switches: dexd_venue::switches::SwitchTimers,
    /// The keepers of the liability trees' files (stopped when dropped).
    _tree_keepers: dexd_venue::liabilities::TreeKeepers,
    /// The built-in demo market, when `--demo` asked for it.
    demo: Option<demo::Demo>,
}

/// How [`serve_with_options`] serves, besides the configuration.
#[derive(Default)]
pub struct ServeOptions {
    /// Serve HTTPS with this configuration instead of HTTP.
    pub tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    /// Run the built-in demo market ([`demo`]); refused unless every chain is a ledger chain on
    /// the embedded journal.
    pub demo: bool,
    /// Serve the operator's API ([`admin`]) on this listener, to requests bearing this token.
    pub admin: Option<(TcpListener, admin::AdminToken)>,
}

/// Starts every chain (journal replay, from the newest snapshot when there is one), then custody
/// and the streams, in the background; sets the full router once all are up. Until then the
/// server answers from the starting router (`/health`, `/ready` 503, `/metrics`).
fn start_in_background(
    config: dexd_venue::config::Config,
    data_dir: &Path,
    demo: bool,
    telemetry: Arc<dexd_venue::telemetry::Telemetry>,
    connections: api::ConnectionGauge,
    (ready, started): (Arc<OnceLock<axum::Router>>, Arc<OnceLock<Started>>),
    // The public listener's URL (the cluster's address of this node), and where the admin
    // listener finds the venue once it has started.
    (listening_url, admin_venue): (String, admin::StartedVenue),
) -> tokio::sync::mpsc::Receiver<Box<dyn std::error::Error + Send + Sync>> {
    // A channel rather than a oneshot: the accept loop polls it on every turn, also after the
    // start succeeded and dropped the sender (a closed channel answers `None` each time).
    let (failed, start_failure) = tokio::sync::mpsc::channel(1);
    let data_dir = data_dir.to_path_buf();
    tokio::spawn(async move {
        let began = Instant::now();
        let start_telemetry = Arc::clone(&telemetry);
        let started_venue =
            blocking_start(move || dexd_venue::Venue::start_with_telemetry(config, &data_dir, start_telemetry)).await;
        let venue = match started_venue {
            Ok(venue) => Arc::new(venue),
            Err(error) => {
                let _ = failed.send(error).await;
                return;
            }
        };
        let custody = match dexd_custody::Custodians::start(dexd_venue::vault_chain_setups(&venue)).await {
            Ok(custody) => Arc::new(custody),
            Err(error) => {
                let _ = failed
                    .send(Box::new(error) as Box<dyn std::error::Error + Send + Sync>)
                    .await;
                return;
            }
        };
        let streams = Arc::new(api::streams::Streams::start(&venue));
        let switches = dexd_venue::switches::SwitchTimers::start(&venue);
        let tree_keepers = dexd_venue::liabilities::TreeKeepers::start(&venue);
        let journal = venue.config.journal.clone();
        let cluster = match blocking_start(move || cluster::Cluster::join(&journal, listening_url)).await {
            Ok(cluster) => Arc::new(cluster),
            Err(error) => {
                let _ = failed.send(error).await;
                return;
            }
        };
        // The forwarder's TLS runs on the ring provider the server's TLS uses.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let app = Arc::new(api::AppState {
            cluster,
            forwarder: alloy_reqwest::Client::new(),
            venue: Arc::clone(&venue),
            custody: Arc::clone(&custody),
            streams: Arc::clone(&streams),
            addresses: dexd_crypto::AddressCache::default(),
            rate_limits: api::rate_limit::RateLimits::new(&venue.config.limits),
            telemetry,
            connections,
            demo,
            journals: api::served_journals::ServedJournals::new(&venue),
        });
        let router = api::router(Arc::clone(&app));
        let _ = admin_venue.set(Arc::clone(&venue));
        let _ = started.set(Started {
            venue,
            custody,
            streams,
            switches,
            _tree_keepers: tree_keepers,
            demo: demo.then(|| demo::Demo::start(&app)),
        });
        let _ = ready.set(router);
        tracing::info!(start_ms = began.elapsed().as_millis() as u64, "dexd ready");
    });
    start_failure
}

/// Runs a blocking part of the start (it opens databases) off the runtime's threads; its error,
/// or its panic, as the start's failure.
async fn blocking_start<T: Send + 'static, E: std::error::Error + Send + Sync + 'static>(
    start: impl FnOnce() -> Result<T, E> + Send + 'static,
) -> Result<T, Box<dyn std::error::Error + Send + Sync>> {
    match tokio::task::spawn_blocking(start).await {
        Ok(Ok(started)) => Ok(started),
        Ok(Err(error)) => Err(Box::new(error)),
        Err(panic) => Err(format!("the start failed: {panic}").into()),
    }
}

/// Like [`serve`], over TLS when `tls` is given: each connection's handshake must finish within
/// the header read timeout, like its headers.
///
/// The listener answers at once; the chains start in the background, and until every chain has
/// (see `start_in_background`) only `/health`, `/ready` (503), `/metrics`, `/openapi.json` and
/// the stream protocol's description are served, everything else 503. A chain that cannot
/// start ends the server with its error.
///
/// Each connection is served by hyper's HTTP/1 server with a header read timeout, so a client
/// that sends its headers slowly cannot hold a connection open; at most `max_connections` are
/// served at once, and further ones wait in the listen queue until one closes.
pub async fn serve_with_tls(
    config: dexd_venue::config::Config,
    data_dir: &Path,
    listener: TcpListener,
    tls: Option<Arc<tokio_rustls::rustls::ServerConfig>>,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    serve_with_options(
        config,
        data_dir,
        listener,
        ServeOptions {
            tls,
            demo: false,
            admin: None,
        },
        shutdown,
    )
    .await
}

/// Like [`serve_with_tls`], with every option of [`ServeOptions`]; a demo on a configuration
/// [`demo::refusal`] refuses ends at once with its reason.
pub async fn serve_with_options(
    config: dexd_venue::config::Config,
    data_dir: &Path,
    listener: TcpListener,
    options: ServeOptions,
    shutdown: impl Future<Output = ()> + Send + 'static,
) -> Result<(), Box<dyn std::error::Error + Send + Sync>> {
    if options.demo {
        if let Some(reason) = demo::refusal(&config) {
            return Err(reason.into());
        }
    }
    let tls = options.tls.map(tokio_rustls::TlsAcceptor::from);
    let handshake_timeout = Duration::from_millis(config.limits.header_read_timeout_ms);
    let limits = config.limits;
    let telemetry = dexd_venue::telemetry::Telemetry::new();
    dexd_venue::telemetry::Telemetry::spawn_upkeep(&telemetry);
    let connections = Arc::new(tokio::sync::Semaphore::new(limits.max_connections));
    let connection_gauge = api::ConnectionGauge {
        semaphore: Arc::clone(&connections),
        capacity: limits.max_connections,
    };
    let starting_router = api::starting_router(
        Arc::clone(&telemetry),
        connection_gauge.clone(),
        Arc::new(api::openapi::document(&config)),
    );
    let ready: Arc<OnceLock<axum::Router>> = Arc::new(OnceLock::new());
    let started: Arc<OnceLock<Started>> = Arc::new(OnceLock::new());
    let listening_url = match listener.local_addr() {
        Ok(address) => format!("{}://{address}", if tls.is_some() { "https" } else { "http" }),
        Err(_) => String::new(),
    };
    let admin_venue: admin::StartedVenue = Arc::new(OnceLock::new());
    // The operator's API on its own listener: stopped with the server.
    let admin_server = options.admin.map(|(admin_listener, token)| {
        if let Ok(address) = admin_listener.local_addr() {
            tracing::info!(address = %address, "dexd admin listening");
        }
        let router = admin::router(token, Arc::clone(&admin_venue));
        tokio::spawn(async move {
            if let Err(error) = axum::serve(admin_listener, router).await {
                tracing::error!(%error, "the admin listener stopped");
            }
        })
    });
    let mut start_failure = start_in_background(
        config,
        data_dir,
        options.demo,
        telemetry,
        connection_gauge,
        (Arc::clone(&ready), Arc::clone(&started)),
        (listening_url, admin_venue),
    );
    // Every connection task holds a clone of `alive`; when all are dropped, `all_closed` ends.
    let (stop_connections, stopping) = tokio::sync::watch::channel(false);
    let (alive, all_closed) = tokio::sync::mpsc::channel::<()>(1);
    let accepting = Accepting {
        http: http_server(handshake_timeout),
        tls,
        handshake_timeout,
        stopping,
        alive: alive.clone(),
        ready: Arc::clone(&ready),
        starting_router,
    };
    tokio::pin!(shutdown);
    loop {
        let permit = tokio::select! {
            permit = Arc::clone(&connections).acquire_owned() => permit.expect("the semaphore is never closed"),
            () = &mut shutdown => break,
            Some(error) = start_failure.recv() => return Err(error),
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
            Some(error) = start_failure.recv() => return Err(error),
        };
        spawn_connection(&accepting, stream, remote, permit);
    }
    if let Some(admin_server) = admin_server {
        admin_server.abort();
    }
    // Its `alive` must go too, or the shutdown would wait out its grace for nothing.
    drop(accepting);
    shut_down(&started, stop_connections, alive, all_closed).await;
    Ok(())
}

/// The HTTP/1 server of every connection: its headers must arrive within `header_read_timeout`.
fn http_server(header_read_timeout: Duration) -> hyper::server::conn::http1::Builder {
    let mut http = hyper::server::conn::http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(header_read_timeout);
    http
}

/// What the accept loop hands each connection's task.
struct Accepting {
    http: hyper::server::conn::http1::Builder,
    tls: Option<tokio_rustls::TlsAcceptor>,
    handshake_timeout: Duration,
    stopping: tokio::sync::watch::Receiver<bool>,
    /// Held by every connection's task, so that the shutdown knows when all have ended.
    alive: tokio::sync::mpsc::Sender<()>,
    /// The full router once every chain has started; `starting_router` until then.
    ready: Arc<OnceLock<axum::Router>>,
    starting_router: axum::Router,
}

/// Serves one accepted connection on a task of its own (after its TLS handshake, when TLS is
/// on), holding its place under the connection limit until it ends.
fn spawn_connection(
    accepting: &Accepting,
    stream: tokio::net::TcpStream,
    remote: SocketAddr,
    permit: tokio::sync::OwnedSemaphorePermit,
) {
    let (ready, starting_router) = (Arc::clone(&accepting.ready), accepting.starting_router.clone());
    let service = hyper::service::service_fn(move |mut request: hyper::Request<hyper::body::Incoming>| {
        request.extensions_mut().insert(ConnectInfo::<SocketAddr>(remote));
        let router = ready.get().unwrap_or(&starting_router).clone();
        router.oneshot(request.map(axum::body::Body::new))
    });
    let (stopping, alive) = (accepting.stopping.clone(), accepting.alive.clone());
    match &accepting.tls {
        None => {
            let connection = accepting
                .http
                .serve_connection(TokioIo::new(stream), service)
                .with_upgrades();
            tokio::spawn(async move {
                serve_until_stopped(connection, stopping).await;
                drop((permit, alive));
            });
        }
        Some(acceptor) => {
            let handshake = tokio::time::timeout(accepting.handshake_timeout, acceptor.accept(stream));
            let http = accepting.http.clone();
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

/// The graceful stop, once the listener accepts no more: streams are told, HTTP connections get
/// [`SHUTDOWN_GRACE_MS`] to finish what is in flight, then custody stops and the venue closes.
async fn shut_down(
    started: &OnceLock<Started>,
    stop_connections: tokio::sync::watch::Sender<bool>,
    alive: tokio::sync::mpsc::Sender<()>,
    mut all_closed: tokio::sync::mpsc::Receiver<()>,
) {
    // The demo first, while the venue still takes its makers' cancels; then the streams, which
    // were upgraded out of the HTTP server, are told and closed here.
    if let Some(started) = started.get() {
        if let Some(demo) = &started.demo {
            demo.stop().await;
        }
        started.streams.shut_down();
    }
    let _ = stop_connections.send(true);
    drop(alive);
    if tokio::time::timeout(Duration::from_millis(SHUTDOWN_GRACE_MS), all_closed.recv())
        .await
        .is_err()
    {
        tracing::warn!("requests still in flight after the grace period were dropped");
    }
    // A stop during the start leaves the chains to the start's thread, which the process's exit
    // ends: nothing has been acknowledged yet, and a replay writes only derived data.
    let Some(started) = started.get() else {
        return;
    };
    // The chain tasks stop first, so that nothing new is journaled behind the writers' stop;
    // what they were doing is journaled or is redone after a restart.
    started.switches.stop();
    started.custody.stop().await;
    // Everything acknowledged is in the journals already; closing puts the histories on disk
    // too, so that they are trusted after a restart of the machine instead of rebuilt.
    started.venue.close().await;
}
