//! Where the auditor reads the journal: a venue's `GET /audit/journal`, a page at a time, with
//! the journal's end from the page's header. It parses nothing and checks nothing but the
//! format's version.

use std::time::Duration;

use crate::audit::format::{JOURNAL_END_HEADER, JOURNAL_FORMAT_HEADER, JOURNAL_FORMAT_VERSION};

/// How long one page may take to arrive.
const PAGE_TIMEOUT: Duration = Duration::from_secs(60);

/// A page of the journal, as the venue sent it.
pub struct Page {
    /// The lines, as text.
    pub text: String,
    /// The journal's last position when the venue read the page.
    pub journal_end: u64,
}

/// Why a page could not be had.
#[derive(Debug)]
pub enum SourceError {
    /// The venue did not answer, or answered with an error: try again later.
    Unavailable(String),
    /// The venue answered in a format this auditor does not read.
    Format(String),
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Unavailable(message) | SourceError::Format(message) => formatter.write_str(message),
        }
    }
}

/// A venue's journal of one chain.
#[derive(Clone)]
pub struct JournalSource {
    client: alloy_reqwest::Client,
    journal_url: String,
}

impl JournalSource {
    /// The journal of chain `chain_id` at the venue `venue_url` (`http://host:port`).
    pub fn new(venue_url: &str, chain_id: u64) -> Result<JournalSource, String> {
        // The HTTP client's TLS uses the ring provider the server's does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = alloy_reqwest::Client::builder()
            .timeout(PAGE_TIMEOUT)
            .build()
            .map_err(|error| format!("cannot make an HTTP client: {error}"))?;
        let base = venue_url.trim_end_matches('/');
        url::Url::parse(base).map_err(|error| format!("--venue is not a URL: {error}"))?;
        Ok(JournalSource {
            client,
            journal_url: format!("{base}/audit/journal?chainId={chain_id}"),
        })
    }

    /// The page from position `from`, at most `limit` commands.
    pub async fn page(&self, from: u64, limit: usize) -> Result<Page, SourceError> {
        let unavailable = |error: alloy_reqwest::Error| SourceError::Unavailable(format!("the venue: {error}"));
        let response = self
            .client
            .get(format!("{}&from={from}&limit={limit}", self.journal_url))
            .send()
            .await
            .map_err(unavailable)?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(SourceError::Unavailable(format!(
                "the venue answered {status}: {}",
                body.chars().take(300).collect::<String>()
            )));
        }
        let header = |name: &str| {
            response
                .headers()
                .get(name)
                .and_then(|value| value.to_str().ok())
                .and_then(|value| value.parse::<u64>().ok())
        };
        match header(JOURNAL_FORMAT_HEADER) {
            Some(version) if version == u64::from(JOURNAL_FORMAT_VERSION) => {}
            other => {
                return Err(SourceError::Format(format!(
                    "the journal's format is {other:?}; this auditor reads version {JOURNAL_FORMAT_VERSION}"
                )))
            }
        }
        let journal_end = header(JOURNAL_END_HEADER)
            .ok_or_else(|| SourceError::Format(format!("the page has no {JOURNAL_END_HEADER} header")))?;
        let text = response.text().await.map_err(unavailable)?;
        Ok(Page { text, journal_end })
    }
}
