//! The public audit log: `GET /audit/journal`, the chain's journal as JSON lines in the format
//! of [`dexd_audit::format`], and `GET /audit/roots`, the liability roots the vault committed
//! with where their leaves are, a page at a time.
//!
//! A finished segment of the journal (`segment=N`) is rendered once into a file
//! ([`dexd_audit::segments`]) and served from it, the same bytes with the same strong `ETag`
//! for every reader; the unfinished tail is read a page at a time (`from`, `limit`). Both are
//! read off the async runtime through the chain's [`FairGate`]: a few at a time, and when
//! readers wait, one client address at a time in turn, so that nobody's flood keeps a guardian's
//! read from coming.

use std::net::IpAddr;
use std::sync::Arc;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::liabilities::root_object;
use super::{history, store_error};
use crate::api::error::ApiError;
use crate::api::fair_share::{FairPermit, Refusal};
use crate::api::operations::{JOURNAL_FROM, JOURNAL_LIMIT, JOURNAL_SEGMENT, ROOTS_FROM, ROOTS_LIMIT};
use crate::api::params::Params;
use crate::api::served_journals::ServedJournal;
use crate::api::state::AppState;
use dexd_audit::format::{
    JOURNAL_END_HEADER, JOURNAL_FORMAT_HEADER, JOURNAL_FORMAT_VERSION, MAX_JOURNAL_PAGE_BYTES, STATE_HASH_INTERVAL,
};
use dexd_audit::page::PageWriter;
use dexd_audit::segments::{segment_positions, segment_response, OpenSegment, SegmentFiles, SEGMENT_POSITIONS};

/// A reader's slot, or why none came.
async fn enter(served: &ServedJournal, params: &Params) -> Result<FairPermit, ApiError> {
    let address = params.reader().client.unwrap_or(IpAddr::from([0, 0, 0, 0]));
    served.readers.enter(address).await.map_err(|refusal| match refusal {
        Refusal::TooManyFromAddress => crate::api::error::too_many_requests(
            "this address already has as many journal reads waiting as one address may",
            std::time::Duration::from_secs(1),
        ),
        Refusal::Busy => ApiError::unavailable("the journal's readers are all busy; try again in a moment"),
    })
}

/// GET /audit/journal
pub async fn audit_journal(app: Arc<AppState>, params: Params) -> Result<Response, ApiError> {
    let chain = params.chain(&app.venue)?;
    let served = app
        .journals
        .chains
        .get(&chain.chain_id)
        .ok_or_else(ApiError::internal)?;
    // A segment is read whole: with `segment`, `from` and `limit` are checked but not used.
    let from = params.read(&JOURNAL_FROM)?;
    let limit = params.count(&JOURNAL_LIMIT)?;
    if let Some(segment) = params.read(&JOURNAL_SEGMENT)? {
        return journal_segment(&chain, served, &params, segment).await;
    }
    let from = match from {
        None | Some(0) => 1,
        Some(from) => from,
    };
    let permit = enter(served, &params).await?;
    // Reading and rendering (about 12 µs a line) both run off the async runtime.
    let reading = Arc::clone(&chain);
    let (body, end) = tokio::task::spawn_blocking(move || render_page(&reading, from, limit as u64))
        .await
        .map_err(|_| ApiError::internal())??;
    drop(permit);
    let mut response = ([(CONTENT_TYPE, "application/x-ndjson")], Body::from(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(JOURNAL_FORMAT_HEADER, HeaderValue::from(JOURNAL_FORMAT_VERSION));
    headers.insert(JOURNAL_END_HEADER, HeaderValue::from(end));
    Ok(response)
}

/// A finished segment, from its file (rendered into it by the first reader that asks).
async fn journal_segment(
    chain: &Arc<dexd_venue::Chain>,
    served: &ServedJournal,
    params: &Params,
    segment: u64,
) -> Result<Response, ApiError> {
    if segment > u64::MAX / SEGMENT_POSITIONS - 1 {
        return Err(segment_not_found(segment, u64::MAX, chain.journaled_sequence()));
    }
    let permit = enter(served, params).await?;
    let files = Arc::clone(&served.segments);
    let opened = tokio::task::spawn_blocking(move || files.open(segment))
        .await
        .map_err(|_| ApiError::internal())?
        .map_err(segment_file_error)?;
    let opened = match opened {
        Some(opened) => opened,
        None => {
            // One build at a time: a reader that waited finds the file its predecessor wrote.
            let _building = served.building.lock().await;
            let (chain, files) = (Arc::clone(chain), Arc::clone(&served.segments));
            tokio::task::spawn_blocking(move || build_segment(&chain, &files, segment))
                .await
                .map_err(|_| ApiError::internal())??
        }
    };
    drop(permit);
    Ok(segment_response(
        opened,
        params.reader().if_none_match.as_deref(),
        chain.journaled_sequence(),
    ))
}

fn segment_not_found(segment: u64, last: u64, end: u64) -> ApiError {
    ApiError::not_found(
        "SEGMENT_NOT_FOUND",
        format!(
            "segment {segment} ends at position {last}; the journal is at {end}: read the tail with from and limit"
        ),
    )
}

fn segment_file_error(error: std::io::Error) -> ApiError {
    tracing::error!(%error, "a journal segment's file is not readable");
    ApiError::unavailable("the segment cannot be read right now; read its positions with from and limit")
}

/// Renders segment `segment` into its file (blocking) and opens it: 404 while the journal has
/// not reached its end, 503 while its state hash is not known yet.
fn build_segment(chain: &dexd_venue::Chain, files: &SegmentFiles, segment: u64) -> Result<OpenSegment, ApiError> {
    let markets = chain.markets();
    if let Some(opened) = files.open(segment).map_err(segment_file_error)? {
        return Ok(opened);
    }
    let (first, last) = segment_positions(segment);
    let (commands, end) = chain.read_journal(first - 1, SEGMENT_POSITIONS).map_err(store_error)?;
    if end < last {
        return Err(segment_not_found(segment, last, end));
    }
    let mut page = PageWriter::new(&markets.messages);
    for (expected, command) in (first..=last).zip(&commands) {
        assert_eq!(command.sequence, expected, "a journal has no gaps");
        page.command(
            command.sequence,
            command.time_ms,
            &command.command,
            command.authorization.as_ref(),
        );
        if command.sequence.is_multiple_of(STATE_HASH_INTERVAL) {
            let Some(hash) = chain.state_hashes.at(command.sequence) else {
                return Err(ApiError::unavailable(
                    "the segment's state hash is being computed; try again in a moment",
                ));
            };
            page.state_hash(command.sequence, &hash);
        }
    }
    assert_eq!(
        commands.len() as u64,
        SEGMENT_POSITIONS,
        "a finished segment holds all its positions"
    );
    let bytes = page.into_bytes();
    if bytes.len() > MAX_JOURNAL_PAGE_BYTES {
        tracing::error!(
            segment,
            bytes = bytes.len(),
            "a journal segment is over the size a segment may have"
        );
        return Err(ApiError::unavailable(
            "this segment is over the size a segment may have; read its positions with from and limit",
        ));
    }
    files.store(segment, &bytes).map_err(segment_file_error)?;
    files
        .open(segment)
        .map_err(segment_file_error)?
        .ok_or_else(ApiError::internal)
}

/// Reads and renders the page of `limit` commands from `from`; the body and the journal's end.
fn render_page(chain: &dexd_venue::Chain, from: u64, limit: u64) -> Result<(Vec<u8>, u64), ApiError> {
    let markets = chain.markets();
    let (commands, end) = chain.read_journal(from - 1, limit).map_err(store_error)?;
    let mut page = PageWriter::new(&markets.messages);
    for command in &commands {
        let sequence = command.sequence;
        let at_interval = sequence.is_multiple_of(STATE_HASH_INTERVAL);
        // A command at a multiple goes out with the state hash after it: a page stops before
        // one whose hash is not known yet, and the next page starts with it.
        let hash = if at_interval {
            match chain.state_hashes.at(sequence) {
                Some(hash) => Some(hash),
                None => break,
            }
        } else {
            None
        };
        page.command(
            sequence,
            command.time_ms,
            &command.command,
            command.authorization.as_ref(),
        );
        if let Some(hash) = hash {
            page.state_hash(sequence, &hash);
        }
    }
    Ok((page.into_bytes(), end))
}

/// GET /audit/roots: the roots from epoch `from` (default the first), oldest first, at most
/// `limit` (default and maximum [`crate::api::operations::MAX_AUDIT_ROOTS_PAGE`]); `next` is the epoch to ask from for
/// the rest, or null.
pub async fn audit_roots(app: Arc<AppState>, params: Params) -> Result<Value, ApiError> {
    let chain = params.chain(&app.venue)?;
    let from = params.read(&ROOTS_FROM)?.unwrap_or(0);
    let limit = params.count(&ROOTS_LIMIT)?;
    let reader = history(&chain).await?;
    let (roots, next) = reader.liability_roots_from(from, limit).map_err(store_error)?;
    let chain_id = chain.chain_id;
    let roots: Vec<Value> = roots
        .iter()
        .map(|root| {
            let mut object = root_object(&chain, root);
            object["leaves"] = json!(format!(
                "/account/liabilityLeaves?chainId={chain_id}&epoch={}",
                root.record.epoch
            ));
            object
        })
        .collect();
    Ok(json!({"chainId": chain_id.to_string(), "roots": roots, "next": next}))
}
