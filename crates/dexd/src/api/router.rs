//! The router of a running venue: every operation of the table at its paths, the page, the
//! metrics, the stream upgrade, and the edge every request passes first (its id, its client
//! address's budget, its log line), the body's limits and the wait for a journal position.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::body::Body;
use axum::extract::{RawQuery, Request, State};
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::Router;

use super::error::{self, ApiError};
use super::operations::Operation;
use super::params::Params;
use super::state::AppState;
use super::{
    cluster_channel, forwarding, observability, page, params, rate_limit, routes, stream_connections, written,
};

/// Builds the router for a running venue.
pub fn router(app: Arc<AppState>) -> Router {
    let app_for_limits = Arc::clone(&app);
    let body_limits = (
        app.venue.config.limits.max_body_bytes,
        app.venue.config.limits.body_read_timeout_ms,
    );
    let mut router = Router::new();
    for (operation, handler) in routes::ROUTES {
        router = add_operation(router, operation, body_limits, *handler);
    }
    router = page::routes(router, app.demo);
    router = router.route("/metrics", get(observability::metrics));
    router = router.route("/ws", get(stream_upgrade));
    router = router.route(
        "/docs/streams.md",
        get(|| async {
            (
                [(CONTENT_TYPE, HeaderValue::from_static("text/markdown; charset=utf-8"))],
                page::STREAM_PROTOCOL_DOCUMENT,
            )
        }),
    );
    router
        .fallback(|| async { ApiError::not_found("NOT_FOUND", "no such path; see /openapi.json") })
        .method_not_allowed_fallback(|| async {
            ApiError::new(
                StatusCode::METHOD_NOT_ALLOWED,
                "METHOD_NOT_ALLOWED",
                "this path does not take that method; see /openapi.json",
            )
        })
        .with_state(app)
        .layer(tower_http::catch_panic::CatchPanicLayer::custom(|_| {
            ApiError::internal().into_response()
        }))
        .layer(axum::middleware::from_fn_with_state(app_for_limits, request_edge))
}

/// `GET /ws`: upgrades to a stream connection, within the connection limits (429 past the
/// client address's, 503 past the server's). A request that is not an upgrade gets a JSON 400.
async fn stream_upgrade(State(app): State<Arc<AppState>>, request: Request) -> Response {
    use axum::extract::FromRequestParts;
    let ip = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |info| info.0.ip());
    let (mut parts, _) = request.into_parts();
    let upgrade = match axum::extract::ws::WebSocketUpgrade::from_request_parts(&mut parts, &app).await {
        Ok(upgrade) => upgrade,
        Err(_) => {
            return ApiError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_PARAMETER",
                "/ws is a WebSocket endpoint: send a GET with Connection: Upgrade and Upgrade: websocket",
            )
            .into_response()
        }
    };
    match app.streams.admit(ip) {
        Ok(()) => {}
        Err(super::streams::Refusal::TooManyFromAddress) => {
            return error::too_many_requests(
                "this address holds its limit of stream connections",
                Duration::from_secs(1),
            )
            .into_response()
        }
        Err(super::streams::Refusal::TooMany) => {
            return ApiError::unavailable("the server holds its limit of stream connections; retry later")
                .into_response()
        }
    }
    let app = Arc::clone(&app);
    upgrade
        .max_message_size(stream_connections::connection::MAX_INBOUND_MESSAGE_BYTES)
        .max_frame_size(stream_connections::connection::MAX_INBOUND_MESSAGE_BYTES)
        // Clients send small messages: the library's 128 KiB read buffer per connection was
        // most of a connection's memory. Outgoing frames gather in the write buffer until the
        // writer flushes what was queued.
        .read_buffer_size(stream_connections::connection::READ_BUFFER_BYTES)
        .write_buffer_size(stream_connections::connection::WRITE_BUFFER_BYTES)
        .on_failed_upgrade(move |_| {})
        .on_upgrade(move |socket| stream_connections::connection::serve(socket, app, ip))
}

/// What every request passes through first, in one middleware (each layer of its own cost an
/// allocation and a dispatch per request): its id, its client IP's budget, and its log line.
async fn request_edge(State(app): State<Arc<AppState>>, request: Request, next: Next) -> Response {
    let started = Instant::now();
    let number = REQUEST_COUNTER.fetch_add(1, Ordering::Relaxed);
    let request_id = format!("{:08x}-{number:x}", process_tag());
    let method = request.method().clone();
    // Only the path is logged: the query and the body may carry values that must not be kept.
    let path = request.uri().path().to_string();
    // The route's path, not the request's: a bounded set of label values.
    let operation = request
        .extensions()
        .get::<axum::extract::MatchedPath>()
        .map_or("unmatched", |matched| matched.as_str())
        .to_owned();
    let mut request = request;
    let ip = client_ip(&app, &request);
    request.extensions_mut().insert(ClientIp(ip));
    let mut response = rate_limit_by_ip(&app.rate_limits, ip, request, next).await;
    if let Ok(value) = HeaderValue::from_str(&request_id) {
        response.headers_mut().insert("x-request-id", value);
    }
    if let Some(node) = app
        .cluster
        .node_header()
        .and_then(|node| HeaderValue::from_str(node).ok())
    {
        response.headers_mut().insert("x-dexd-node", node);
    }
    app.telemetry
        .record_request(&operation, response.status().as_u16(), started.elapsed().as_secs_f64());
    tracing::info!(
        method = %method,
        path = %path,
        status = response.status().as_u16(),
        latency_us = started.elapsed().as_micros() as u64,
        request_id = %request_id,
        "request"
    );
    response
}

/// The address a request is counted against: the connection's, or, for a write another node
/// of the cluster forwarded and signed ([`cluster_channel`]), its client's. Without connection
/// information (a router used in process) one unspecified address.
fn client_ip(app: &AppState, request: &Request) -> std::net::IpAddr {
    let connection = request
        .extensions()
        .get::<axum::extract::ConnectInfo<std::net::SocketAddr>>()
        .map_or(std::net::IpAddr::from([0, 0, 0, 0]), |info| info.0.ip());
    app.venue
        .config
        .cluster_secret
        .as_ref()
        .and_then(|secret| {
            cluster_channel::signed_client_ip(secret, request.headers(), request.uri().path(), dexd_store::now_ms())
        })
        .unwrap_or(connection)
}

/// The address a request is counted against (see `client_ip`), for the handlers.
#[derive(Clone, Copy, Debug)]
pub struct ClientIp(pub std::net::IpAddr);

/// Takes the request from its client IP's budget: 429 past it, and the `RateLimit-*` headers
/// on every answer.
async fn rate_limit_by_ip(
    rate_limits: &rate_limit::RateLimits,
    ip: std::net::IpAddr,
    request: Request,
    next: Next,
) -> Response {
    match rate_limits.check_ip(ip) {
        Ok(allowance) => {
            let mut response = next.run(request).await;
            let headers = response.headers_mut();
            for (name, value) in [
                ("ratelimit-limit", u64::from(allowance.limit)),
                ("ratelimit-remaining", u64::from(allowance.remaining)),
                ("ratelimit-reset", allowance.reset_seconds),
            ] {
                headers.insert(name, HeaderValue::from(value));
            }
            response
        }
        Err(wait) => {
            error::too_many_requests("this address is sending requests faster than allowed", wait).into_response()
        }
    }
}

/// Routes every path of an operation, with the method its table entry names.
fn add_operation(
    router: Router<Arc<AppState>>,
    operation: &'static Operation,
    (body_limit, body_timeout_ms): (usize, u64),
    handler: routes::Handler,
) -> Router<Arc<AppState>> {
    let body_timeout = Duration::from_millis(body_timeout_ms);
    let mut router = router;
    for path in operation.paths {
        let method_router = if operation.is_post {
            post(
                move |State(app): State<Arc<AppState>>,
                      axum::Extension(ClientIp(client)): axum::Extension<ClientIp>,
                      headers: HeaderMap,
                      body: Body| async move {
                    let content_type = headers.get(CONTENT_TYPE).and_then(|value| value.to_str().ok());
                    let body = read_body(body, body_limit, body_timeout).await?;
                    let params = Params::from_body(content_type, &body)?;
                    params.check_allowed(operation)?;
                    app.charge_batch_items(client, &params)?;
                    if let Some(answer) =
                        forwarding::forward_if_not_leading(&app, (path, client), &headers, &body, &params).await
                    {
                        return answer;
                    }
                    let (answer, written_at) = written::recording(handler(app, params)).await;
                    let mut response = answer?;
                    if let Some(sequence) = written_at {
                        response
                            .headers_mut()
                            .insert("x-dexd-sequence", HeaderValue::from(sequence));
                    }
                    Ok::<_, ApiError>(response)
                },
            )
        } else {
            get(
                move |State(app): State<Arc<AppState>>,
                      client: Option<axum::Extension<ClientIp>>,
                      headers: HeaderMap,
                      RawQuery(query): RawQuery| async move {
                    let reader = params::Reader {
                        client: client.map(|axum::Extension(ClientIp(client))| client),
                        if_none_match: headers
                            .get(axum::http::header::IF_NONE_MATCH)
                            .and_then(|value| value.to_str().ok())
                            .map(str::to_owned),
                    };
                    let params = Params::from_query(query.as_deref())?.with_reader(reader);
                    params.check_allowed(operation)?;
                    wait_for_min_sequence(&app, &headers, &params).await?;
                    handler(app, params).await
                },
            )
        };
        router = router.route(path, method_router);
    }
    router
}

/// How long a read with `X-Dexd-Min-Sequence` waits for its chain to reach that position.
pub const MIN_SEQUENCE_WAIT_MS: u64 = 5_000;

/// A read with `X-Dexd-Min-Sequence: n` waits until the node has applied (and written to its
/// history) position `n` of the read's chain, so that a client reads its own writes from any
/// node: 400 for a header that is not a number, 503 after [`MIN_SEQUENCE_WAIT_MS`], or at once
/// when the chain's journal does not reach `n` (no write was ever answered with it). Reads that
/// name no chain ignore it.
async fn wait_for_min_sequence(app: &AppState, headers: &HeaderMap, params: &Params) -> Result<(), ApiError> {
    let Some(value) = headers.get("x-dexd-min-sequence") else {
        return Ok(());
    };
    let minimum: u64 = value
        .to_str()
        .ok()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| ApiError::invalid("X-Dexd-Min-Sequence", "must be a journal position, decimal digits"))?;
    let Ok(chain) = params.chain(&app.venue) else {
        return Ok(());
    };
    if chain.projected_sequence() >= minimum {
        return Ok(());
    }
    // A position is answered to a client only once journaled: on the node that leads the chain
    // (or is its only node) the journal's end is known here, elsewhere the database has it.
    let journal_end = if chain.is_leading() {
        Some(chain.journaled_sequence())
    } else {
        app.cluster.journal_end(chain.chain_id, minimum).await
    };
    if let Some(end) = journal_end.filter(|end| *end < minimum) {
        return Err(ApiError::unavailable(format!(
            "chain {}'s journal ends at position {end}: position {minimum} was never written",
            chain.chain_id
        )));
    }
    if chain
        .wait_for_position(minimum, Duration::from_millis(MIN_SEQUENCE_WAIT_MS))
        .await
    {
        return Ok(());
    }
    Err(ApiError::unavailable(format!(
        "this node has not reached journal position {minimum} of chain {} within {MIN_SEQUENCE_WAIT_MS} ms; retry, \
         or read from the chain's leader",
        chain.chain_id
    )))
}

async fn read_body(body: Body, limit: usize, timeout: Duration) -> Result<zeroize::Zeroizing<Vec<u8>>, ApiError> {
    match tokio::time::timeout(timeout, collect_erasing(body, limit)).await {
        Ok(Ok(bytes)) => Ok(bytes),
        Ok(Err(())) => Err(ApiError::new(
            StatusCode::PAYLOAD_TOO_LARGE,
            "PAYLOAD_TOO_LARGE",
            format!("the body is larger than {limit} bytes"),
        )),
        Err(_) => Err(ApiError::new(
            StatusCode::REQUEST_TIMEOUT,
            "REQUEST_TIMEOUT",
            format!("the body did not arrive within {} ms", timeout.as_millis()),
        )),
    }
}

/// The body's bytes, at most `limit` (else `Err`, as for a body that breaks off), in memory that
/// is erased on drop. The body may hold a private key: each chunk the server handed over is
/// erased once copied, when nothing else holds it (the connection's own read buffer is the HTTP
/// library's, out of reach).
async fn collect_erasing(mut body: Body, limit: usize) -> Result<zeroize::Zeroizing<Vec<u8>>, ()> {
    use http_body_util::BodyExt;
    use zeroize::Zeroize;
    let mut collected = zeroize::Zeroizing::new(Vec::new());
    while let Some(frame) = body.frame().await {
        let Ok(chunk) = frame.map_err(|_| ())?.into_data() else {
            continue;
        };
        let fits = collected
            .len()
            .checked_add(chunk.len())
            .is_some_and(|length| length <= limit);
        if fits {
            if collected.capacity() < collected.len() + chunk.len() {
                // Grown by hand into erased memory: a Vec's own growth would free its old
                // buffer with the key in it.
                let mut grown = zeroize::Zeroizing::new(Vec::with_capacity(
                    (collected.len() + chunk.len()).max(collected.capacity() * 2).min(limit),
                ));
                grown.extend_from_slice(&collected);
                collected = grown;
            }
            collected.extend_from_slice(&chunk);
        }
        if let Ok(mut unique) = chunk.try_into_mut() {
            unique.as_mut().zeroize();
        }
        if !fits {
            return Err(());
        }
    }
    Ok(collected)
}

static REQUEST_COUNTER: AtomicU64 = AtomicU64::new(0);

fn process_tag() -> u32 {
    static TAG: std::sync::OnceLock<u32> = std::sync::OnceLock::new();
    *TAG.get_or_init(rand::random)
}

#[cfg(test)]
mod body_tests {
    use axum::body::{Body, Bytes};

    fn body_of(chunks: &[(u8, usize)]) -> Body {
        let chunks: Vec<Result<Bytes, std::io::Error>> = chunks
            .iter()
            .map(|(byte, length)| Ok(Bytes::from(vec![*byte; *length])))
            .collect();
        Body::from_stream(futures_util::stream::iter(chunks))
    }

    #[tokio::test]
    async fn a_body_is_collected_whole_within_its_limit_and_refused_past_it() {
        let collected = super::collect_erasing(body_of(&[(1, 700), (2, 700), (3, 48)]), 1_448)
            .await
            .unwrap();
        assert_eq!(collected.len(), 1_448);
        assert!(collected[..700].iter().all(|byte| *byte == 1));
        assert!(collected[700..1_400].iter().all(|byte| *byte == 2));
        assert!(collected[1_400..].iter().all(|byte| *byte == 3));
        assert!(super::collect_erasing(body_of(&[(1, 700), (2, 700), (3, 49)]), 1_448)
            .await
            .is_err());
        assert!(super::collect_erasing(body_of(&[]), 10).await.unwrap().is_empty());
    }
}
