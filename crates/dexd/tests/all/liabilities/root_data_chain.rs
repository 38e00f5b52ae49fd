//! Root data on a real node: a blob transaction carrying a root's data is taken by anvil, and the
//! data comes back from the node's beacon API, checked against the versioned hashes the chain
//! recorded.

use alloy::network::{EthereumWallet, TransactionBuilder, TransactionBuilder4844};
use alloy::providers::{Provider, ProviderBuilder};
use alloy::rpc::types::TransactionRequest;

use dexd_custody::liabilities::beacon::{root_data_from_beacon, BeaconError};

use crate::common::chain::TestChain;

#[tokio::test]
async fn blobs_sent_with_a_transaction_come_back_from_the_beacon_api() {
    let chain = TestChain::start().await;
    let sender = chain.users[0].clone();
    let provider = ProviderBuilder::new()
        .wallet(EthereumWallet::from(sender.clone()))
        .connect_http(chain.anvil.endpoint_url());
    let data: Vec<u8> = (0..200_000u32).map(|index| (index % 251) as u8).collect();
    let sidecar = dexd_custody::liabilities::root_blobs::sidecar_of(&data).unwrap();
    let hashes: Vec<_> = sidecar.versioned_hashes().collect();
    let request = TransactionRequest::default()
        .with_to(sender.address())
        .with_blob_sidecar(sidecar.into());
    let receipt = provider
        .send_transaction(request)
        .await
        .unwrap()
        .get_receipt()
        .await
        .unwrap();
    assert!(receipt.status());
    let block = receipt.block_number.unwrap();
    let client = alloy_reqwest::Client::new();
    let beacon = chain.anvil.endpoint();
    let fetched = root_data_from_beacon(&client, &beacon, &block.to_string(), &hashes)
        .await
        .unwrap();
    assert_eq!(fetched, data, "the data comes back whole");
    // Another block's blobs do not hold them: the blob is reported missing, never replaced.
    assert!(matches!(
        root_data_from_beacon(&client, &beacon, &(block - 1).to_string(), &hashes).await,
        Err(BeaconError::Missing(hash)) if hash == hashes[0]
    ));
    // A hash the chain did not record with them is missing too.
    let mut other = hashes.clone();
    other[1].0[5] ^= 1;
    assert!(matches!(
        root_data_from_beacon(&client, &beacon, &block.to_string(), &other).await,
        Err(BeaconError::Missing(_))
    ));
}

/// A beacon node that answers without end is cut off at the bound, its answer refused unread.
#[tokio::test]
async fn a_beacon_answer_past_its_bound_is_refused() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let beacon = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move {
        let (mut socket, _) = listener.accept().await.unwrap();
        let mut request = [0u8; 4096];
        let _ = socket.read(&mut request).await;
        let _ = socket
            .write_all(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n")
            .await;
        let chunk = vec![b'0'; 1 << 20];
        let framed = [format!("{:x}\r\n", chunk.len()).into_bytes(), chunk, b"\r\n".to_vec()].concat();
        // Far past the bound, and never the end.
        for _ in 0..((2 * dexd_custody::liabilities::beacon::MAX_BEACON_ANSWER_BYTES) >> 20) {
            if socket.write_all(&framed).await.is_err() {
                return;
            }
        }
    });
    // The HTTP client's TLS runs on the provider the service installs at start.
    let _ = rustls::crypto::ring::default_provider().install_default();
    let refused = root_data_from_beacon(&alloy_reqwest::Client::new(), &beacon, "1", &[Default::default()]).await;
    assert!(
        matches!(&refused, Err(BeaconError::Malformed(what)) if what.starts_with("more than")),
        "{refused:?}"
    );
}

/// A beacon node that serves only the older `blob_sidecars` endpoint (404 on `/blobs`) still
/// gives the data; the blob is checked the same way.
#[tokio::test]
async fn a_beacon_node_with_only_blob_sidecars_still_gives_the_data() {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let data: Vec<u8> = (0..5_000u32).map(|index| (index % 13) as u8).collect();
    let sidecar = dexd_custody::liabilities::root_blobs::sidecar_of(&data).unwrap();
    let hashes: Vec<_> = sidecar.versioned_hashes().collect();
    let answer = serde_json::json!({"data": [{"index": "0", "blob": format!("0x{}", alloy::hex::encode(sidecar.blobs[0].as_slice()))}]}).to_string();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let beacon = format!("http://{}", listener.local_addr().unwrap());
    let paths = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let seen = paths.clone();
    tokio::spawn(async move {
        loop {
            let (mut socket, _) = listener.accept().await.unwrap();
            let mut request = vec![0u8; 8192];
            let read = socket.read(&mut request).await.unwrap();
            let line = String::from_utf8_lossy(&request[..read])
                .lines()
                .next()
                .unwrap_or("")
                .to_string();
            let path = line.split(' ').nth(1).unwrap_or("").to_string();
            seen.lock().unwrap().push(path.clone());
            let response = if path.contains("/blob_sidecars/") {
                format!(
                    "HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{answer}",
                    answer.len()
                )
            } else {
                "HTTP/1.1 404 Not Found\r\ncontent-length: 0\r\nconnection: close\r\n\r\n".to_string()
            };
            let _ = socket.write_all(response.as_bytes()).await;
        }
    });
    let _ = rustls::crypto::ring::default_provider().install_default();
    let fetched = root_data_from_beacon(&alloy_reqwest::Client::new(), &beacon, "7", &hashes)
        .await
        .unwrap();
    assert_eq!(fetched, data);
    assert_eq!(
        *paths.lock().unwrap(),
        vec![
            "/eth/v1/beacon/blobs/7".to_string(),
            "/eth/v1/beacon/blob_sidecars/7".to_string()
        ]
    );
}
