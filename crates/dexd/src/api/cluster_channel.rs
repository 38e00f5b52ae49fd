//! The cluster's own channel: a write forwarded by a follower to its chain's leader carries the
//! forwarding node, the client's address and the time, signed with the secret the nodes share
//! (`[cluster] secret_env`, HMAC-SHA-256). The leader believes the client's address only from a
//! request so signed, within [`MAX_CLOCK_SKEW_MS`] of its own clock, and then counts the request
//! against the client's own budget rather than the follower's: clients keep their own rate
//! limits whichever node they reach. A forged or stale signature is ignored (the request counts
//! against the address it came from, as any request does).
//!
//! It does not carry the request: the body still travels as the client sent it, over TLS or on
//! loopback only (see [`super::forwarding`]). It does not decide what is forwarded.

use std::net::IpAddr;

use axum::http::{HeaderMap, HeaderValue};
use hmac::{Hmac, Mac};
use sha2::Sha256;

use dexd_venue::config::ClusterSecret;

/// The forwarding node's id.
pub const NODE_HEADER: &str = "x-dexd-forwarded-by";
/// The address of the client whose request was forwarded.
pub const CLIENT_IP_HEADER: &str = "x-dexd-client-ip";
/// When the request was forwarded, in ms since the Unix epoch.
pub const TIME_HEADER: &str = "x-dexd-forwarded-at";
/// The signature of the three, and of the path, in hex.
pub const SIGNATURE_HEADER: &str = "x-dexd-cluster-signature";
/// How far a signed forward's time may be from the leader's clock: a signature is good for this
/// long, which bounds the replay of one the leader has seen.
pub const MAX_CLOCK_SKEW_MS: u64 = 30_000;

/// What a forward signs: each part on its own line, under a fixed label.
fn signed_text(node_id: &str, client_ip: IpAddr, time_ms: u64, path: &str) -> String {
    format!("dexd-forward-v1\n{node_id}\n{client_ip}\n{time_ms}\n{path}")
}

fn mac(secret: &ClusterSecret) -> Hmac<Sha256> {
    Hmac::<Sha256>::new_from_slice(secret.bytes()).expect("HMAC takes a key of any length")
}

/// The headers a follower adds to a write it forwards for `client_ip` to `path`.
pub fn signed_headers(
    secret: &ClusterSecret,
    node_id: &str,
    client_ip: IpAddr,
    time_ms: u64,
    path: &str,
) -> [(&'static str, String); 4] {
    let mut mac = mac(secret);
    mac.update(signed_text(node_id, client_ip, time_ms, path).as_bytes());
    [
        (NODE_HEADER, node_id.to_string()),
        (CLIENT_IP_HEADER, client_ip.to_string()),
        (TIME_HEADER, time_ms.to_string()),
        (SIGNATURE_HEADER, hex::encode(mac.finalize().into_bytes())),
    ]
}

/// The client's address a request to `path` was forwarded for, if it carries a good signature
/// made within [`MAX_CLOCK_SKEW_MS`] of `now_ms`; `None` otherwise.
pub fn signed_client_ip(secret: &ClusterSecret, headers: &HeaderMap, path: &str, now_ms: u64) -> Option<IpAddr> {
    let text = |name: &str| headers.get(name).and_then(|value: &HeaderValue| value.to_str().ok());
    let node_id = text(NODE_HEADER)?;
    let client_ip: IpAddr = text(CLIENT_IP_HEADER)?.parse().ok()?;
    let time_ms: u64 = text(TIME_HEADER)?.parse().ok()?;
    if time_ms.abs_diff(now_ms) > MAX_CLOCK_SKEW_MS {
        return None;
    }
    let signature = hex::decode(text(SIGNATURE_HEADER)?).ok()?;
    let mut mac = mac(secret);
    mac.update(signed_text(node_id, client_ip, time_ms, path).as_bytes());
    // `verify_slice` compares in constant time.
    mac.verify_slice(&signature).ok()?;
    Some(client_ip)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers_of(pairs: &[(&'static str, String)]) -> HeaderMap {
        let mut headers = HeaderMap::new();
        for (name, value) in pairs {
            headers.insert(*name, HeaderValue::from_str(value).unwrap());
        }
        headers
    }

    #[test]
    fn only_a_fresh_signature_of_the_same_secret_path_and_address_is_believed() {
        let secret = ClusterSecret::new(b"0123456789abcdef0123456789abcdef".to_vec());
        let client: IpAddr = "203.0.113.7".parse().unwrap();
        let now_ms = 1_800_000_000_000;
        let signed = signed_headers(&secret, "node-b", client, now_ms, "/order/addOrder");
        let headers = headers_of(&signed);
        assert_eq!(
            signed_client_ip(&secret, &headers, "/order/addOrder", now_ms + 1_000),
            Some(client)
        );
        assert_eq!(
            signed_client_ip(&secret, &headers, "/portfolio/withdraw", now_ms),
            None,
            "another path"
        );
        assert_eq!(
            signed_client_ip(&secret, &headers, "/order/addOrder", now_ms + MAX_CLOCK_SKEW_MS + 1),
            None,
            "stale"
        );
        let other = ClusterSecret::new(b"another secret, just as long as it".to_vec());
        assert_eq!(signed_client_ip(&other, &headers, "/order/addOrder", now_ms), None);
        let mut forged = signed.clone();
        forged[1].1 = "198.51.100.1".to_string();
        assert_eq!(
            signed_client_ip(&secret, &headers_of(&forged), "/order/addOrder", now_ms),
            None,
            "another client address"
        );
        assert_eq!(
            signed_client_ip(&secret, &HeaderMap::new(), "/order/addOrder", now_ms),
            None
        );
    }
}
