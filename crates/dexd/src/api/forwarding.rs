//! Writes sent to a node that does not lead their chain, forwarded to the chain's leader and
//! answered with its answer, as if local (the contract's cluster: every node serves every
//! operation).
//!
//! A forwarded request is the client's own body, private key included, sent to the leader's
//! public API: only over TLS, or to a leader on this machine (loopback); never to a plain
//! `http://` URL elsewhere. It carries `X-Dexd-Forwarded`, and a node never forwards such a
//! request again (it answers it itself, 503 when it does not lead), so a request makes at most
//! one hop. With the cluster's secret, it is signed ([`super::cluster_channel`]) and the leader
//! counts it against the client's address; without, against the follower's.
//!
//! This module does not find the leader (the cluster's directory does) and does not apply
//! anything itself.

use std::time::Duration;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::Response;

use super::error::ApiError;
use super::params::Params;
use super::AppState;

/// The header a forwarded request carries.
pub const FORWARDED_HEADER: &str = "x-dexd-forwarded";
/// How long a forwarded write may take, answer included.
pub const FORWARD_TIMEOUT_MS: u64 = 10_000;
/// The largest answer taken back from a leader.
pub const MAX_FORWARDED_ANSWER_BYTES: usize = 1 << 20;

/// Forwards a write to its chain's leader when this node does not lead the chain and another
/// node does; `None` when the write is this node's to answer (it leads, it is on the embedded
/// journal, the request was forwarded already, or no node leads: the writer then answers 503).
pub async fn forward_if_not_leading(
    app: &AppState,
    (path, client): (&str, std::net::IpAddr),
    headers: &HeaderMap,
    body: &[u8],
    params: &Params,
) -> Option<Result<Response, ApiError>> {
    if headers.contains_key(FORWARDED_HEADER) {
        return None;
    }
    let chain_id = params.text("chainId").ok().flatten()?.parse::<u64>().ok()?;
    let chain = app.venue.chain(chain_id)?;
    if chain.is_leading() {
        return None;
    }
    let leader = app.cluster.leader(chain_id).await?;
    if !may_carry_keys(&leader.url) {
        return Some(Err(ApiError::unavailable(format!(
            "this node does not lead chain {chain_id}, and its leader {} is not reachable over TLS, so the request \
             is not forwarded; send it to the leader",
            leader.node_id
        ))));
    }
    let mut request = app
        .forwarder
        .post(format!("{}{path}", leader.url.trim_end_matches('/')))
        .header(FORWARDED_HEADER, "1")
        .timeout(Duration::from_millis(FORWARD_TIMEOUT_MS))
        .body(body.to_vec());
    if let Some(content_type) = headers.get(CONTENT_TYPE) {
        request = request.header(CONTENT_TYPE, content_type.as_bytes());
    }
    if let Some(secret) = &app.venue.config.cluster_secret {
        for (name, value) in
            super::cluster_channel::signed_headers(secret, app.cluster.node_id(), client, dexd_store::now_ms(), path)
        {
            request = request.header(name, value);
        }
    }
    let answer = match request.send().await {
        Ok(answer) => answer,
        Err(_) => {
            app.cluster.forget_leader(chain_id);
            return Some(Err(leader_unreachable(chain_id, &leader.node_id)));
        }
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let header = |name: &str| answer.headers().get(name).map(|value| value.as_bytes().to_vec());
    let (content_type, written_at) = (header("content-type"), header("x-dexd-sequence"));
    let bytes = match answer.bytes().await {
        Ok(bytes) if bytes.len() <= MAX_FORWARDED_ANSWER_BYTES => bytes,
        _ => return Some(Err(leader_unreachable(chain_id, &leader.node_id))),
    };
    let mut response = Response::new(Body::from(bytes));
    *response.status_mut() = status;
    if let Some(value) = content_type.and_then(|value| HeaderValue::from_bytes(&value).ok()) {
        response.headers_mut().insert(CONTENT_TYPE, value);
    }
    if let Some(value) = written_at.and_then(|value| HeaderValue::from_bytes(&value).ok()) {
        response.headers_mut().insert("x-dexd-sequence", value);
    }
    if let Ok(value) = HeaderValue::from_str(&leader.node_id) {
        response.headers_mut().insert("x-dexd-leader", value);
    }
    Some(Ok(response))
}

/// Whether a request carrying a private key may be sent to `url`: over TLS, or on this machine.
fn may_carry_keys(url: &str) -> bool {
    if url.starts_with("https://") {
        return true;
    }
    let Some(rest) = url.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split('/').next().unwrap_or_default();
    let host = host.rsplit_once(':').map_or(host, |(host, _)| host);
    matches!(host, "127.0.0.1" | "[::1]" | "localhost")
}

fn leader_unreachable(chain_id: u64, leader: &str) -> ApiError {
    ApiError::unavailable(format!(
        "this node does not lead chain {chain_id}, and its leader {leader} did not answer; nothing is known to be \
         applied: retry (the same signed request is refused as a repeat if it was)"
    ))
}

#[cfg(test)]
mod tests {
    #[test]
    fn keys_travel_only_over_tls_or_on_this_machine() {
        for (url, allowed) in [
            ("https://node-a.example:8080", true),
            ("http://127.0.0.1:4000", true),
            ("http://[::1]:4000", true),
            ("http://localhost:4000/", true),
            ("http://10.0.0.7:4000", false),
            ("http://127.0.0.1.evil.example:4000", false),
            ("ftp://127.0.0.1", false),
        ] {
            assert_eq!(super::may_carry_keys(url), allowed, "{url}");
        }
    }
}
