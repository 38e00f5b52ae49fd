//! The public audit log: `GET /audit/journal`, a page of the chain's journal as JSON lines in
//! the format of [`crate::audit::format`], and `GET /audit/roots`, every liability root the
//! vault committed with where its leaves are.
//!
//! A page is read through a connection of its own off the async runtime, at most
//! `venue::MAX_CONCURRENT_JOURNAL_READS` at a time per chain (more are told to come back), so that
//! readers of the journal never hold up the writer, the payer or the other requests.

use std::sync::Arc;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::http::HeaderValue;
use axum::response::{IntoResponse, Response};
use serde_json::{json, Value};

use super::liabilities::root_object;
use super::{bounded, chain_of, history, store_error};
use crate::api::error::ApiError;
use crate::api::params::Params;
use crate::api::AppState;
use crate::audit::format::{
    command_line, state_hash_line, JOURNAL_END_HEADER, JOURNAL_FORMAT_HEADER, JOURNAL_FORMAT_VERSION,
    MAX_JOURNAL_PAGE_COMMANDS, STATE_HASH_INTERVAL,
};
use dexd_store::PageRequest;

/// The most roots `/audit/roots` lists (a root an hour is 8,760 a year).
pub const MAX_AUDIT_ROOTS: usize = 100_000;

/// GET /audit/journal
pub async fn audit_journal(app: Arc<AppState>, params: Params) -> Result<Response, ApiError> {
    let chain = chain_of(&app.venue, &params)?;
    let from = match params.integer("from")? {
        None | Some(0) => 1,
        Some(from) => from,
    };
    let limit = bounded(&params, "limit", MAX_JOURNAL_PAGE_COMMANDS, MAX_JOURNAL_PAGE_COMMANDS)?;
    let Ok(_permit) = chain.journal_reads.try_acquire() else {
        return Err(ApiError::unavailable(
            "the journal is being read by as many readers as it serves at once; try again in a moment",
        ));
    };
    // Reading and rendering (about 12 µs a line) both run off the async runtime.
    let reading = Arc::clone(&chain);
    let (body, end) = tokio::task::spawn_blocking(move || render_page(&reading, from, limit as u64))
        .await
        .map_err(|_| ApiError::internal())??;
    let mut response = ([(CONTENT_TYPE, "application/x-ndjson")], Body::from(body)).into_response();
    let headers = response.headers_mut();
    headers.insert(JOURNAL_FORMAT_HEADER, HeaderValue::from(JOURNAL_FORMAT_VERSION));
    headers.insert(JOURNAL_END_HEADER, HeaderValue::from(end));
    Ok(response)
}

/// Reads and renders the page of `limit` commands from `from`; the body and the journal's end.
fn render_page(chain: &dexd_venue::Chain, from: u64, limit: u64) -> Result<(Vec<u8>, u64), ApiError> {
    let (commands, end) = chain.read_journal(from - 1, limit).map_err(store_error)?;
    let mut body = Vec::with_capacity(commands.len() * 512);
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
        let line = command_line(
            sequence,
            command.time_ms,
            &command.command,
            command.authorization.as_ref(),
            &chain.messages,
        );
        serde_json::to_writer(&mut body, &line).map_err(|_| ApiError::internal())?;
        body.push(b'\n');
        if let Some(hash) = hash {
            serde_json::to_writer(&mut body, &state_hash_line(sequence, &hash)).map_err(|_| ApiError::internal())?;
            body.push(b'\n');
        }
    }
    Ok((body, end))
}

/// GET /audit/roots
pub async fn audit_roots(app: Arc<AppState>, params: Params) -> Result<Value, ApiError> {
    let chain = chain_of(&app.venue, &params)?;
    let reader = history(&chain).await?;
    let mut roots = Vec::new();
    let mut cursor = None;
    loop {
        let page = reader
            .liability_roots(PageRequest {
                limit: dexd_store::MAX_PAGE_LIMIT,
                cursor,
                start_ms: 0,
                end_ms: u64::MAX,
            })
            .map_err(store_error)?;
        roots.extend(page.items);
        match page.next_cursor {
            Some(next) if roots.len() < MAX_AUDIT_ROOTS => cursor = Some(next),
            _ => break,
        }
    }
    roots.reverse();
    let chain_id = chain.config.chain_id;
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
    Ok(json!({"chainId": chain_id.to_string(), "roots": roots}))
}
