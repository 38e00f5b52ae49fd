//! The trading page as the server serves it: `/` and its assets from the embedded bundle, with
//! the headers a page that signs should have, and JSON errors for everything else. What the page
//! does in a browser is tested in `web/tests` (Chromium, playwright-core, axe).

use crate::common;

use common::TestServer;
use serde_json::json;

#[tokio::test]
async fn the_page_and_its_assets_are_served_from_the_binary_with_strict_headers() {
    let server = TestServer::start().await;
    let page = server.client.get(format!("{}/", server.base_url)).send().await.unwrap();
    assert_eq!(page.status(), 200);
    let headers = page.headers().clone();
    assert_eq!(headers["content-type"], "text/html; charset=utf-8");
    assert_eq!(
        headers["content-security-policy"],
        dexd::api::page::CONTENT_SECURITY_POLICY
    );
    assert!(dexd::api::page::CONTENT_SECURITY_POLICY.contains("script-src 'self'"));
    assert_eq!(headers["x-frame-options"], "DENY");
    assert_eq!(headers["x-content-type-options"], "nosniff");
    assert_eq!(headers["referrer-policy"], "no-referrer");
    assert_eq!(headers["cache-control"], "no-cache");
    assert!(headers.contains_key("x-request-id"));
    let html = page.text().await.unwrap();
    assert!(html.contains("<title>dexd</title>"));
    // Every asset the page names is served, with its type.
    let mut assets = 0;
    for reference in html.split('"').filter(|part| part.starts_with("./assets/")) {
        let response = server
            .client
            .get(format!("{}/{}", server.base_url, &reference[2..]))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "{reference}");
        let kind = response.headers()["content-type"].to_str().unwrap().to_string();
        assert!(
            (reference.ends_with(".js") && kind.starts_with("text/javascript"))
                || (reference.ends_with(".css") && kind.starts_with("text/css")),
            "{reference}: {kind}"
        );
        assets += 1;
    }
    assert_eq!(assets, 2, "one script and one style sheet");
    // A page already held is not sent again.
    let etag = headers["etag"].clone();
    let again = server
        .client
        .get(format!("{}/", server.base_url))
        .header("if-none-match", etag)
        .send()
        .await
        .unwrap();
    assert_eq!(again.status(), 304);
}

#[tokio::test]
async fn what_is_not_the_page_stays_a_json_error() {
    let server = TestServer::start().await;
    common::assert_error(&server.get("/assets/missing.js", &[]).await, 404, "NOT_FOUND", None);
    common::assert_error(&server.get("/assets/../Cargo.toml", &[]).await, 404, "NOT_FOUND", None);
    common::assert_error(&server.get("/index.html", &[]).await, 404, "NOT_FOUND", None);
    common::assert_error(&server.post_json("/", json!({})).await, 405, "METHOD_NOT_ALLOWED", None);
}

#[tokio::test]
async fn chains_lists_the_configured_chains_for_the_page() {
    let server = TestServer::start().await;
    let (status, body) = server.get("/chains", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(
        body,
        json!({"chains": [
            {"chainId": "1", "name": "Ethereum", "custody": "ledger"},
            {"chainId": "11155111", "name": "Sepolia", "custody": "ledger"},
            {"chainId": "42161", "name": "Arbitrum One", "custody": "ledger"}
        ]})
    );
    common::assert_error(
        &server.get("/chains", &[("chainId", "1")]).await,
        400,
        "UNKNOWN_PARAMETER",
        Some("chainId"),
    );
}
