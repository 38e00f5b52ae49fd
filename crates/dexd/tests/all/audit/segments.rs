//! The public journal's finished segments and its readers' fair shares: a segment is the same
//! bytes every time (from its file, with a strong ETag, the same lines the pages give), an
//! auditor reads it and the tail; a flood of readers from other addresses does not keep a
//! guardian's page from coming; an auditor whose venue withholds a segment reads it from
//! another auditor's `--serve`.

use crate::common;

use std::net::{IpAddr, SocketAddr};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::journal::audit_once_with as audit_once;
use common::auditor::RunningAuditor;
use common::{TestServer, Trader};
use serde_json::{json, Value};

/// Trades until the journal of chain 1 holds at least `positions`: batches of 50 sells that
/// rest and 50 buys that take them.
async fn fill_journal(server: &TestServer, positions: u64) -> u64 {
    let (alice, bob) = (Trader::new(0xa1), Trader::new(0xb2));
    server.deposit(&alice, "ETH", "1000").await;
    server.deposit(&bob, "USDC", "100000000").await;
    let mut client_order_id = 0u64;
    loop {
        let end = journal_end(server).await;
        if end >= positions {
            return end;
        }
        for (trader, direction) in [(&alice, "sell"), (&bob, "buy")] {
            let orders: Vec<Value> = (0..50)
                .map(|_| {
                    client_order_id += 1;
                    json!({"symbol": "ETH/USDC", "type": "limit", "direction": direction, "price": "2000", "amount": "0.01",
                           "clientOrderId": format!("c-{client_order_id}")})
                })
                .collect();
            server.batch_orders(trader, orders).await;
        }
    }
}

async fn journal_end(server: &TestServer) -> u64 {
    common::journal_end::journal_end(&server.client, &server.base_url, 1).await
}

/// Segment `segment` once it is ready (503 while its state hash is computed): the response.
async fn segment(server: &TestServer, segment: u64) -> reqwest::Response {
    loop {
        let response = server
            .client
            .get(format!("{}/audit/journal?chainId=1&segment={segment}", server.base_url))
            .send()
            .await
            .unwrap();
        if response.status() != 503 {
            return response;
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_finished_segment_is_the_same_bytes_every_time_and_an_auditor_reads_it() {
    let data_dir = tempfile::tempdir().unwrap();
    let server = TestServer::start_in(dexd_venue::config::Config::embedded_default(), data_dir.path()).await;
    let end = fill_journal(&server, 10_050).await;

    // Not finished, or past any journal: 404.
    for segment in ["1", "18446744073709551614"] {
        let (status, body) = server
            .get("/audit/journal", &[("chainId", "1"), ("segment", segment)])
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (404, Some("SEGMENT_NOT_FOUND")),
            "{body}"
        );
    }

    let first = segment(&server, 0).await;
    assert_eq!(first.status(), 200);
    assert_eq!(first.headers()["x-dexd-journal-format"], "2");
    let tag = first.headers()["etag"].to_str().unwrap().to_string();
    assert!(tag.starts_with('"') && tag.ends_with('"'), "a strong tag: {tag}");
    let bytes = first.bytes().await.unwrap();
    assert!(bytes.len() <= 16 * 1024 * 1024);
    let lines: Vec<Value> = bytes
        .split(|byte| *byte == b'\n')
        .filter(|line| !line.is_empty())
        .map(|line| serde_json::from_slice(line).unwrap())
        .collect();
    let commands: Vec<u64> = lines
        .iter()
        .filter(|line| line.get("stateHash").is_none())
        .map(|line| line["sequence"].as_u64().unwrap())
        .collect();
    assert_eq!(commands, (1..=10_000).collect::<Vec<u64>>());
    assert_eq!(lines.last().unwrap()["sequence"], 10_000);
    assert!(lines.last().unwrap()["stateHash"].is_string());
    // The same bytes and tag again, from the file; 304 to a reader that has them.
    let again = segment(&server, 0).await;
    assert_eq!(again.headers()["etag"].to_str().unwrap(), tag);
    assert_eq!(again.bytes().await.unwrap(), bytes);
    let unchanged = server
        .client
        .get(format!("{}/audit/journal?chainId=1&segment=0", server.base_url))
        .header("if-none-match", &tag)
        .send()
        .await
        .unwrap();
    assert_eq!(unchanged.status(), 304);
    assert!(data_dir
        .path()
        .join("journal-segments/chain-1/segment-0000000000.ndjson")
        .is_file());
    // The pages say the same.
    let page = server
        .client
        .get(format!(
            "{}/audit/journal?chainId=1&from=1&limit=10000",
            server.base_url
        ))
        .send()
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap();
    assert_eq!(page, bytes, "a page of the same positions is the segment");

    let directory = tempfile::tempdir().unwrap();
    let output = audit_once(&server.base_url, directory.path(), &[]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let copy = dexd_store::JournalReader::open(directory.path(), 1).unwrap();
    let mut copy: Box<dyn dexd_store::JournalRead> = Box::new(copy);
    assert!(copy.last_sequence().unwrap() >= end);
}

/// A client whose connections come from `address` (any of 127.0.0.0/8 reaches the server).
fn client_from(address: IpAddr) -> reqwest::Client {
    reqwest::Client::builder().local_address(address).build().unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_flood_of_journal_readers_from_other_addresses_does_not_keep_a_guardians_page_from_coming() {
    let server = TestServer::start().await;
    fill_journal(&server, 3_000).await;
    let flooding = Arc::new(AtomicBool::new(true));
    let (served, refused) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let mut flood = Vec::new();
    // Six addresses, six readers each, asking for whole pages back to back.
    for last in 2..8u8 {
        let client = client_from(IpAddr::from([127, 0, 0, last]));
        for _ in 0..6 {
            let (client, url) = (
                client.clone(),
                format!("{}/audit/journal?chainId=1&from=1", server.base_url),
            );
            let (flooding, served, refused) = (Arc::clone(&flooding), Arc::clone(&served), Arc::clone(&refused));
            flood.push(tokio::spawn(async move {
                while flooding.load(Ordering::Relaxed) {
                    match client.get(&url).send().await {
                        Ok(response) if response.status() == 200 => {
                            let _ = response.bytes().await;
                            served.fetch_add(1, Ordering::Relaxed);
                        }
                        _ => {
                            refused.fetch_add(1, Ordering::Relaxed);
                        }
                    }
                }
            }));
        }
    }
    // The flood is on: readers beyond an address's share are being turned away.
    while refused.load(Ordering::Relaxed) < 20 || served.load(Ordering::Relaxed) < 4 {
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
    }
    let guardian = client_from(IpAddr::from([127, 0, 0, 1]));
    for round in 0..5 {
        let response = guardian
            .get(format!(
                "{}/audit/journal?chainId=1&from={}",
                server.base_url,
                1 + round * 100
            ))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200, "the guardian's page {round} came");
        let text = response.text().await.unwrap();
        assert!(text.lines().count() > 1_000);
    }
    flooding.store(false, Ordering::Relaxed);
    for reader in flood {
        reader.await.unwrap();
    }
    assert!(refused.load(Ordering::Relaxed) > 0, "the flood was more than its share");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auditor_reads_a_segment_the_venue_withholds_from_another_auditors_copy() {
    let server = TestServer::start().await;
    fill_journal(&server, 10_050).await;
    assert_eq!(segment(&server, 0).await.status(), 200);

    // A first auditor checks the venue and serves the segments it checked.
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let serve_address: SocketAddr = listener.local_addr().unwrap();
    drop(listener);
    let first = tempfile::tempdir().unwrap();
    let output = audit_once(&server.base_url, first.path(), &["--serve", &serve_address.to_string()]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    // Its --once run has ended; a follower keeps serving (`--once` serves until it stops): a
    // second run of the same directory serves what it checked.
    let serve_at = serve_address.to_string();
    let mut server_of_first = RunningAuditor::start(&server.base_url, 1, first.path(), &["--serve", &serve_at], &[]);
    let mirror = format!("http://{serve_address}");
    let reqwest = reqwest::Client::new();
    let served = loop {
        if let Ok(response) = reqwest
            .get(format!("{mirror}/audit/journal?chainId=1&segment=0"))
            .send()
            .await
        {
            if response.status() == 200 {
                break response.bytes().await.unwrap();
            }
        }
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
    };
    assert_eq!(
        served,
        segment(&server, 0).await.bytes().await.unwrap(),
        "the same bytes"
    );

    // A venue that withholds its first segment (whole or in pages) but serves the tail.
    let withholding = withholding_proxy(server.base_url.clone()).await;
    let second = tempfile::tempdir().unwrap();
    let output = audit_once(&withholding, second.path(), &["--mirror", &mirror]).await;
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    let copy = dexd_store::JournalReader::open(second.path(), 1).unwrap();
    let mut copy: Box<dyn dexd_store::JournalRead> = Box::new(copy);
    assert!(copy.last_sequence().unwrap() > 10_000);
    server_of_first.kill();
}

/// A proxy of the venue at `venue` that answers 503 to any read of positions up to 10,000.
async fn withholding_proxy(venue: String) -> String {
    let client = reqwest::Client::new();
    let router = axum::Router::new().route(
        "/audit/journal",
        axum::routing::get(move |axum::extract::RawQuery(query): axum::extract::RawQuery| {
            let (client, venue) = (client.clone(), venue.clone());
            async move {
                let query = query.unwrap_or_default();
                let fields: std::collections::HashMap<String, String> =
                    form_urlencoded::parse(query.as_bytes()).into_owned().collect();
                let from: u64 = fields.get("from").and_then(|from| from.parse().ok()).unwrap_or(1);
                if fields.contains_key("segment") || from <= 10_000 {
                    return (
                        axum::http::StatusCode::SERVICE_UNAVAILABLE,
                        axum::http::HeaderMap::new(),
                        Vec::new(),
                    );
                }
                let response = client
                    .get(format!("{venue}/audit/journal?{query}"))
                    .send()
                    .await
                    .unwrap();
                let mut headers = axum::http::HeaderMap::new();
                for name in ["x-dexd-journal-format", "x-dexd-journal-end"] {
                    headers.insert(name, response.headers()[name].to_str().unwrap().parse().unwrap());
                }
                (
                    axum::http::StatusCode::OK,
                    headers,
                    response.bytes().await.unwrap().to_vec(),
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{address}")
}
