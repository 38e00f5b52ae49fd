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
