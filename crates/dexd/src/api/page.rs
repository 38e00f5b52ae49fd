//! The trading page at `GET /`: the bundle in `crates/dexd/page` (built from `web/` by Vite and
//! committed), embedded in the binary with rust-embed so that `dexd serve` needs no other
//! file and `cargo build` needs no Node. This module only serves those bytes, with headers that
//! suit a page that signs with the user's key: a strict content security policy (scripts,
//! styles and connections to this origin only), no framing, no referrer, and `no-cache` with an
//! ETag so a new binary's page is picked up at once.
//!
//! When the built-in demo market runs, the page's demo banner (in the HTML, hidden) is shown:
//! the server drops its `hidden` attribute, so the page says it is a demo before any script runs.
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

/// The stream protocol's description (docs/streams.md), served at `/docs/streams.md` so that
/// the OpenAPI document's link to it works wherever the server runs.
pub const STREAM_PROTOCOL_DOCUMENT: &str = include_str!("../../../../docs/streams.md");

#[derive(RustEmbed)]
#[folder = "page/"]
struct PageFiles;

/// The page's content security policy: everything from this origin, nothing inline, no frames.
pub const CONTENT_SECURITY_POLICY: &str = "default-src 'self'; script-src 'self'; style-src 'self'; \
     img-src 'self' data:; connect-src 'self'; font-src 'self'; object-src 'none'; base-uri 'none'; \
     form-action 'none'; frame-ancestors 'none'";

/// The page's demo banner as built, hidden; the demo serves it without `hidden`.
pub const HIDDEN_DEMO_BANNER: &str = r#"<p id="demo-banner" class="demo-banner" hidden>"#;
/// The banner as the demo serves it.
const SHOWN_DEMO_BANNER: &str = r#"<p id="demo-banner" class="demo-banner">"#;

/// Adds `GET /` and `GET /assets/{file}` to `router`; with `demo`, the page shows its demo banner.
pub fn routes<S: Clone + Send + Sync + 'static>(router: Router<S>, demo: bool) -> Router<S> {
    router
        .route(
            "/",
            get(move |headers: HeaderMap| async move { serve("index.html", &headers, demo) }),
        )
        .route(
            "/assets/{file}",
            get(|Path(file): Path<String>, headers: HeaderMap| async move {
                serve(&format!("assets/{file}"), &headers, false)
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

fn serve(path: &str, request_headers: &HeaderMap, demo: bool) -> Response {
    let Some(file) = PageFiles::get(path) else {
        return ApiError::not_found("NOT_FOUND", "no such path; see /openapi.json").into_response();
    };
    // The demo's page differs from the plain one, and so does its tag.
    let demo_tag = if demo { "-demo" } else { "" };
    let etag = format!("\"{}{demo_tag}\"", hex::encode(&file.metadata.sha256_hash()[..16]));
    let etag_value = HeaderValue::from_str(&etag).expect("hex is a valid header value");
    let mut response = if request_headers
        .get(IF_NONE_MATCH)
        .is_some_and(|value| value.as_bytes() == etag.as_bytes())
    {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let mut bytes = file.data.into_owned();
        if demo {
            bytes = show_demo_banner(&bytes);
        }
        let mut response = Response::new(Body::from(bytes));
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

/// The page with its demo banner shown.
fn show_demo_banner(page: &[u8]) -> Vec<u8> {
    String::from_utf8_lossy(page)
        .replacen(HIDDEN_DEMO_BANNER, SHOWN_DEMO_BANNER, 1)
        .into_bytes()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_built_page_has_a_hidden_demo_banner_that_the_demo_shows() {
        let page = PageFiles::get("index.html").expect("the page is built");
        let plain = String::from_utf8(page.data.to_vec()).unwrap();
        assert_eq!(
            plain.matches(HIDDEN_DEMO_BANNER).count(),
            1,
            "rebuild the page: npm run build in web/"
        );
        let shown = String::from_utf8(show_demo_banner(plain.as_bytes())).unwrap();
        assert!(!shown.contains(HIDDEN_DEMO_BANNER) && shown.contains(SHOWN_DEMO_BANNER));
    }
}
