//! The trading page at `GET /`: the bundle in `crates/dexd/page` (built from `web/` by Vite and
//! committed), embedded in the binary with rust-embed so that `dexd serve` needs no other
//! file and `cargo build` needs no Node. This module only serves those bytes, with headers that
//! suit a page that signs with the user's key: a strict content security policy (scripts,
//! styles and connections to this origin only), no framing, no referrer, and `no-cache` with an
//! ETag so a new binary's page is picked up at once.
//!
//! It does not build the page (`web/`, `npm run build`) and knows nothing of the API.

use axum::body::Body;
use axum::extract::Path;
use axum::http::header::{CACHE_CONTROL, CONTENT_TYPE, ETAG, IF_NONE_MATCH};
use axum::http::{HeaderMap, HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;
use rust_embed::RustEmbed;

use super::error::ApiError;

#[derive(RustEmbed)]
#[folder = "page/"]
struct PageFiles;

/// The page's content security policy: everything from this origin, nothing inline, no frames.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// Adds `GET /` and `GET /assets/{file}` to `router`.
pub fn routes<S: Clone + Send + Sync + 'static>(router: Router<S>) -> Router<S> {
    router
        .route("/", get(|headers: HeaderMap| async move { serve("index.html", &headers) }))
        .route(
            "/assets/{file}",
            get(|Path(file): Path<String>, headers: HeaderMap| async move {
                serve(&format!("assets/{file}"), &headers)
            }),
        )
}

fn content_type(path: &str) -> &'static str {
    match path.rsplit('.').next() {
        Some("html") => "text/html; charset=utf-8",
        Some("js") => "text/javascript; charset=utf-8",
        Some("css") => "text/css; charset=utf-8",
        Some("svg") => "image/svg+xml",
        Some("png") => "image/png",
        Some("ico") => "image/x-icon",
        Some("json") => "application/json",
        _ => "application/octet-stream",
    }
}

fn serve(path: &str, request_headers: &HeaderMap) -> Response {
    let Some(file) = PageFiles::get(path) else {
        return ApiError::not_found("NOT_FOUND", "no such path; see /openapi.json").into_response();
    };
    let etag = format!("\"{}\"", hex::encode(&file.metadata.sha256_hash()[..16]));
    let etag_value = HeaderValue::from_str(&etag).expect("hex is a valid header value");
    let mut response = if request_headers
        .get(IF_NONE_MATCH)
        .is_some_and(|value| value.as_bytes() == etag.as_bytes())
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut response = Response::new(Body::from(file.data.into_owned()));
        response
            .headers_mut()
            .insert(CONTENT_TYPE, HeaderValue::from_static(content_type(path)));
        response
    };
    let headers = response.headers_mut();
    headers.insert(ETAG, etag_value);
    headers.insert(CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        "content-security-policy",
        HeaderValue::from_static(CONTENT_SECURITY_POLICY),
    );
    headers.insert("x-content-type-options", HeaderValue::from_static("nosniff"));
    headers.insert("x-frame-options", HeaderValue::from_static("DENY"));
    headers.insert("referrer-policy", HeaderValue::from_static("no-referrer"));
    response
}
