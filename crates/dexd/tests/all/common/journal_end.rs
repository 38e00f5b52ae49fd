//! A venue's public journal end (`X-Dexd-Journal-End`), for the tests and the audit benchmark.

/// The position of the last command of chain `chain_id`'s journal, as the venue at `base_url`
/// says it now.
pub async fn journal_end(client: &reqwest::Client, base_url: &str, chain_id: u64) -> u64 {
    let response = client
        .get(format!("{base_url}/audit/journal?chainId={chain_id}&from=1&limit=1"))
        .send()
        .await
        .unwrap();
    response.headers()["x-dexd-journal-end"]
        .to_str()
        .unwrap()
        .parse()
        .unwrap()
}
