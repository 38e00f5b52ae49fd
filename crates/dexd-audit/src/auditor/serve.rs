//! `dexd audit --serve ADDRESS`: the segments this auditor has checked, served as the venue
//! serves them (`GET /audit/journal?chainId&segment=N`, the same bytes, `ETag` and headers), so
//! that auditors can read each other's when the venue is flooded or gone. It serves nothing
//! else: no tail pages, no roots.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::RawQuery;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use serde_json::json;

use crate::segments::{segment_positions, segment_response, SegmentFiles};

/// Starts serving `files` (chain `chain_id`'s checked segments) on `address`.
pub async fn serve_segments(address: SocketAddr, chain_id: u64, files: Arc<SegmentFiles>) -> Result<(), String> {
    let listener = tokio::net::TcpListener::bind(address)
        .await
        .map_err(|error| format!("--serve {address}: {error}"))?;
    let router = axum::Router::new()
        .route(
            "/audit/journal",
            axum::routing::get(move |RawQuery(query): RawQuery, headers: HeaderMap| {
                let files = Arc::clone(&files);
                let query: HashMap<String, String> = form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                    .into_owned()
                    .collect();
                async move { answer(&files, chain_id, &query, &headers).await }
            }),
        )
        .fallback(|| async {
            error(
                StatusCode::NOT_FOUND,
                "NOT_FOUND",
                "this auditor serves /audit/journal?chainId&segment=N only",
            )
        });
    tokio::spawn(async move {
        if let Err(error) = axum::serve(listener, router).await {
            tracing::warn!(%error, "the segment server stopped");
        }
    });
    Ok(())
}

fn error(status: StatusCode, code: &str, message: &str) -> Response {
    (
        status,
        Json(json!({"error": {"code": code, "message": message, "field": null}})),
    )
        .into_response()
}

async fn answer(
    files: &Arc<SegmentFiles>,
    chain_id: u64,
    query: &HashMap<String, String>,
    headers: &HeaderMap,
) -> Response {
    if query.get("chainId").map(String::as_str) != Some(chain_id.to_string().as_str()) {
        return error(
            StatusCode::NOT_FOUND,
            "UNKNOWN_CHAIN",
            "this auditor checks another chain",
        );
    }
    let Some(segment) = query.get("segment").and_then(|segment| segment.parse::<u64>().ok()) else {
        return error(
            StatusCode::BAD_REQUEST,
            "INVALID_PARAMETER",
            "this auditor serves whole segments only: give segment=N",
        );
    };
    let reading = Arc::clone(files);
    match tokio::task::spawn_blocking(move || reading.open(segment)).await {
        Ok(Ok(Some(opened))) => segment_response(
            opened,
            headers
                .get(axum::http::header::IF_NONE_MATCH)
                .and_then(|value| value.to_str().ok()),
            segment_positions(segment).1,
        ),
        Ok(Ok(None)) => error(
            StatusCode::NOT_FOUND,
            "SEGMENT_NOT_FOUND",
            "this auditor has not checked that segment whole",
        ),
        _ => error(
            StatusCode::SERVICE_UNAVAILABLE,
            "UNAVAILABLE",
            "the segment cannot be read right now",
        ),
    }
}
