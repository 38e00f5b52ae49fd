//! Blobs from a beacon node (`GET /eth/v1/beacon/blobs/{block_id}`, the beacon API's way since
//! the Fusaka upgrade, or `/eth/v1/beacon/blob_sidecars/{block_id}` where a node serves only that): the blobs of one block, of which those whose versioned hashes the chain
//! recorded for a root are picked, in that order, and checked ([`super::root_blobs`]). The node
//! is trusted for nothing: it can withhold a blob, never alter one.
//!
//! It does not know which block or which hashes to ask for (the caller read them from the vault)
//! and keeps nothing (an auditor archives what it checked).

use alloy::eips::eip4844::{Blob, BYTES_PER_BLOB};
use alloy::primitives::B256;
use serde_json::Value;

use super::root_blobs::{decode_checked, versioned_hash_of, RootBlobsError};

/// The most bytes a beacon node's answer may take (64 MiB: a block's blobs, hex-encoded, are far
/// less); a longer answer is refused unread.
pub const MAX_BEACON_ANSWER_BYTES: usize = 64 << 20;
/// How long one request to the beacon node may take.
pub const BEACON_TIMEOUT_MS: u64 = 30_000;

/// Why a root's blobs could not be had from the beacon node.
#[derive(Debug)]
pub enum BeaconError {
    /// The node did not answer, or answered with an error status.
    Unavailable(String),
    /// The answer was not the beacon API's.
    Malformed(String),
    /// The block's blobs lack one the chain recorded (pruned, or withheld).
    Missing(B256),
    /// The blobs found do not decode to data.
    Blobs(RootBlobsError),
}

impl std::fmt::Display for BeaconError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            BeaconError::Unavailable(error) => write!(formatter, "the beacon node did not answer: {error}"),
            BeaconError::Malformed(error) => write!(formatter, "the beacon node's answer is malformed: {error}"),
            BeaconError::Missing(hash) => write!(formatter, "the beacon node has no blob {hash}"),
            BeaconError::Blobs(error) => write!(formatter, "{error}"),
        }
    }
}

impl std::error::Error for BeaconError {}

/// The data carried by the blobs with `recorded` versioned hashes, in that order, from the
/// blobs of block `block_id` (a slot, a beacon block root, or where the node takes it, as
/// anvil's does, an execution block number).
pub async fn root_data_from_beacon(
    client: &alloy_reqwest::Client,
    beacon_url: &str,
    block_id: &str,
    recorded: &[B256],
) -> Result<Vec<u8>, BeaconError> {
    let base = beacon_url.trim_end_matches('/');
    // `/blobs` since the Fusaka upgrade; `/blob_sidecars` where a node still serves only that.
    let body = match get_bounded(client, &format!("{base}/eth/v1/beacon/blobs/{block_id}")).await {
        Ok(body) => body,
        Err(BeaconError::Unavailable(first)) => {
            get_bounded(client, &format!("{base}/eth/v1/beacon/blob_sidecars/{block_id}"))
                .await
                .map_err(|second| BeaconError::Unavailable(format!("{first}; blob_sidecars: {second}")))?
        }
        Err(other) => return Err(other),
    };
    let mut blobs = blobs_of_answer(&body)?;
    drop(body);
    let mut hashes: Vec<B256> = blobs
        .iter()
        .map(versioned_hash_of)
        .collect::<Result<_, _>>()
        .map_err(BeaconError::Blobs)?;
    // The blobs recorded moved to the front in their order, in place (a blob is 128 KiB).
    for (target, wanted) in recorded.iter().enumerate() {
        let position = hashes
            .iter()
            .skip(target)
            .position(|hash| hash == wanted)
            .ok_or(BeaconError::Missing(*wanted))?
            + target;
        blobs.swap(target, position);
        hashes.swap(target, position);
    }
    blobs.truncate(recorded.len());
    // Each blob kept is the one of its recorded hash, matched above: decoded without a second
    // commitment.
    if blobs.is_empty() {
        return Err(BeaconError::Blobs(RootBlobsError::Count { recorded: 0, given: 0 }));
    }
    decode_checked(&blobs).map_err(BeaconError::Blobs)
}

/// The beacon chain's clock, `(genesis time, seconds per slot)`, when the node serves its
/// genesis and its spec (`None` otherwise: anvil serves no spec, and knows its blocks by number).
pub async fn slot_clock(client: &alloy_reqwest::Client, beacon_url: &str) -> Option<(u64, u64)> {
    let base = beacon_url.trim_end_matches('/');
    let number = |value: &Value| value.as_str().and_then(|text| text.parse::<u64>().ok());
    let genesis: Value = serde_json::from_slice(
        &get_bounded(client, &format!("{base}/eth/v1/beacon/genesis"))
            .await
            .ok()?,
    )
    .ok()?;
    let spec: Value =
        serde_json::from_slice(&get_bounded(client, &format!("{base}/eth/v1/config/spec")).await.ok()?).ok()?;
    let seconds_per_slot = number(&spec["data"]["SECONDS_PER_SLOT"]).filter(|seconds| *seconds > 0)?;
    Some((number(&genesis["data"]["genesis_time"])?, seconds_per_slot))
}

/// The body of a GET, refused past [`MAX_BEACON_ANSWER_BYTES`].
async fn get_bounded(client: &alloy_reqwest::Client, url: &str) -> Result<Vec<u8>, BeaconError> {
    let mut answer = client
        .get(url)
        .timeout(std::time::Duration::from_millis(BEACON_TIMEOUT_MS))
        .send()
        .await
        .map_err(|error| BeaconError::Unavailable(error.without_url().to_string()))?;
    if !answer.status().is_success() {
        return Err(BeaconError::Unavailable(format!("status {}", answer.status())));
    }
    let mut body = Vec::new();
    while let Some(chunk) = answer
        .chunk()
        .await
        .map_err(|error| BeaconError::Unavailable(error.without_url().to_string()))?
    {
        if body.len() + chunk.len() > MAX_BEACON_ANSWER_BYTES {
            return Err(BeaconError::Malformed(format!(
                "more than {MAX_BEACON_ANSWER_BYTES} bytes"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    Ok(body)
}

/// The blobs of a `GET /eth/v1/beacon/blobs` answer, `{"data": ["0x<blob>", ...]}`, or of a
/// `blob_sidecars` answer, `{"data": [{"blob": "0x<blob>", ...}, ...]}`.
fn blobs_of_answer(body: &[u8]) -> Result<Vec<Blob>, BeaconError> {
    let answer: Value = serde_json::from_slice(body).map_err(|error| BeaconError::Malformed(error.to_string()))?;
    let items = answer["data"]
        .as_array()
        .ok_or_else(|| BeaconError::Malformed("no data array".to_string()))?;
    let mut blobs = vec![Blob::ZERO; items.len()];
    for (item, blob) in items.iter().zip(blobs.iter_mut()) {
        let text = item
            .as_str()
            .or_else(|| item["blob"].as_str())
            .ok_or_else(|| BeaconError::Malformed("a blob that is not a string".to_string()))?;
        let digits = text.strip_prefix("0x").unwrap_or(text);
        if digits.len() != 2 * BYTES_PER_BLOB {
            return Err(BeaconError::Malformed(format!("a blob of {} hex digits", digits.len())));
        }
        alloy::hex::decode_to_slice(digits, &mut blob.0[..])
            .map_err(|error| BeaconError::Malformed(error.to_string()))?;
    }
    Ok(blobs)
}
