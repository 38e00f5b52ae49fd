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
