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
use super::state::AppState;

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
    let chain = params.chain(&app.venue).ok()?;
    let chain_id = chain.chain_id;
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
        Err(error) => {
            app.cluster.forget_leader(chain_id);
            return Some(Err(forward_failed(&error, chain_id, &leader.node_id)));
        }
    };
    let status = StatusCode::from_u16(answer.status().as_u16()).unwrap_or(StatusCode::BAD_GATEWAY);
    let header = |name: &str| answer.headers().get(name).map(|value| value.as_bytes().to_vec());
    let (content_type, written_at) = (header("content-type"), header("x-dexd-sequence"));
    let bytes = match answer.bytes().await {
        Ok(bytes) if bytes.len() <= MAX_FORWARDED_ANSWER_BYTES => bytes,
        // The leader answered: whatever it did is done, and its answer is lost.
        _ => return Some(Err(outcome_unknown(chain_id, &leader.node_id))),
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
    url::Url::parse(url).is_ok_and(|parsed| parsed.scheme() == "https") || dexd_venue::config::is_loopback_url(url)
}

/// Why a forward failed, for the client: 503 (nothing was applied) only when the request never
/// reached the leader; once sent, the leader may have applied it before its answer was lost, and
/// a retry of a `privateKey` write would apply it again, so the answer says the outcome is
/// unknown instead.
fn forward_failed(error: &alloy_reqwest::Error, chain_id: u64, leader: &str) -> ApiError {
    if error.is_connect() {
        ApiError::unavailable(format!(
            "this node does not lead chain {chain_id}, and its leader {leader} cannot be reached; nothing was \
             applied, retry"
        ))
    } else {
        outcome_unknown(chain_id, leader)
    }
}

/// 504 `OUTCOME_UNKNOWN`: the leader had the request and its answer did not come back.
fn outcome_unknown(chain_id: u64, leader: &str) -> ApiError {
    ApiError::new(
        StatusCode::GATEWAY_TIMEOUT,
        "OUTCOME_UNKNOWN",
        format!(
            "this node forwarded the write to chain {chain_id}'s leader {leader}, whose answer did not come back: it \
             may or may not have been applied. Look it up (the order by its clientOrderId, the account's orders or \
             transfers) before sending it again; a client-signed request sent again is refused as a repeat if it was \
             applied"
        ),
    )
}

#[cfg(test)]
mod tests {
    /// A forward that never reached the leader is 503 (nothing applied); one the leader took and
    /// never answered is 504 `OUTCOME_UNKNOWN`, never an invitation to send a key's write again.
    #[tokio::test]
    async fn a_forward_the_leader_took_and_never_answered_is_an_unknown_outcome_not_a_503() {
        let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let silent_url = format!("http://{}/order/addOrder", silent.local_addr().unwrap());
        let held = tokio::spawn(async move {
            let (connection, _) = silent.accept().await.unwrap();
            tokio::time::sleep(std::time::Duration::from_secs(5)).await;
            drop(connection);
        });
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = alloy_reqwest::Client::new();
        let timed_out = client
            .post(&silent_url)
            .timeout(std::time::Duration::from_millis(200))
            .body("{}")
            .send()
            .await
            .unwrap_err();
        let answer = super::forward_failed(&timed_out, 1, "node-a");
        assert_eq!((answer.status.as_u16(), answer.code), (504, "OUTCOME_UNKNOWN"));
        held.abort();
        let closed = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let closed_url = format!("http://{}/order/addOrder", closed.local_addr().unwrap());
        drop(closed);
        let refused = client.post(&closed_url).body("{}").send().await.unwrap_err();
        let answer = super::forward_failed(&refused, 1, "node-a");
        assert_eq!((answer.status.as_u16(), answer.code), (503, "UNAVAILABLE"));
    }

    #[test]
    fn keys_travel_only_over_tls_or_on_this_machine() {
        for (url, allowed) in [
            ("https://node-a.example:8080", true),
            ("http://127.0.0.1:4000", true),
            ("http://[::1]:4000", true),
            ("http://localhost:4000/", true),
            ("http://10.0.0.7:4000", false),
            ("http://127.0.0.1.evil.example:4000", false),
            ("http://localhost:1@evil.example", false),
            ("http://127.0.0.1:1@evil.example:4000/", false),
            ("http://user@127.0.0.1:4000", true),
            ("ftp://127.0.0.1", false),
        ] {
            assert_eq!(super::may_carry_keys(url), allowed, "{url}");
        }
    }
}
