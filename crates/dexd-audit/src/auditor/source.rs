//! Where the auditor reads the journal: a finished segment whole (`segment=N`) from the venue
//! or, when the venue does not give it, from the mirrors (other auditors' `--serve`, or any
//! copy: a segment is checked by its content, so any source will do); the unfinished tail from
//! the venue a page at a time (`from`, `limit`), never past a segment's end, so that the next
//! read is a segment again. The journal's end comes from the venue's header. It parses nothing
//! and checks nothing but the format's version and the size bound.

use std::time::Duration;

use crate::format::{JOURNAL_END_HEADER, JOURNAL_FORMAT_HEADER, JOURNAL_FORMAT_VERSION};
use crate::segments::{segment_of, segment_positions};

/// How long one page may take to arrive.
const PAGE_TIMEOUT: Duration = Duration::from_secs(60);

pub use crate::format::MAX_JOURNAL_PAGE_BYTES;

/// The body of `response`, read a chunk at a time and given up past `max_bytes` (a page is at
/// most that: a larger one is not obtained, and never held whole in memory), as UTF-8.
async fn read_bounded(mut response: alloy_reqwest::Response, max_bytes: usize) -> Result<String, SourceError> {
    let length = response.content_length();
    if length.is_some_and(|length| length > max_bytes as u64) {
        return Err(SourceError::TooLarge(format!(
            "the page is over the {max_bytes} bytes a page may have"
        )));
    }
    // Sized once when the length is given (a segment's is): no copies as it grows.
    let mut body = Vec::with_capacity(length.map_or(0, |length| length as usize));
    while let Some(chunk) = response
        .chunk()
        .await
        .map_err(|error| SourceError::Unavailable(format!("the venue: {error}")))?
    {
        if body.len() + chunk.len() > max_bytes {
            return Err(SourceError::TooLarge(format!(
                "the page is over the {max_bytes} bytes a page may have"
            )));
        }
        body.extend_from_slice(&chunk);
    }
    String::from_utf8(body).map_err(|_| SourceError::Format("the page is not UTF-8".into()))
}

/// A page of the journal, as the venue sent it.
pub struct Page {
    /// The lines, as text.
    pub text: String,
    /// The journal's last position when the venue read the page (for a segment from a mirror:
    /// the segment's last, the least the journal has).
    pub journal_end: u64,
    /// The segment, when the page is one whole.
    pub segment: Option<u64>,
    /// Whether the venue sent it (not a mirror): only then does it say where the journal ends.
    pub from_venue: bool,
}

/// Why a page could not be had.
#[derive(Debug)]
pub enum SourceError {
    /// The venue did not answer, or answered with an error: try again later.
    Unavailable(String),
    /// The venue answered in a format this auditor does not read.
    Format(String),
    /// The page was over the size bound: fewer commands may fit.
    TooLarge(String),
}

impl std::fmt::Display for SourceError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SourceError::Unavailable(message) | SourceError::Format(message) | SourceError::TooLarge(message) => {
                formatter.write_str(message)
            }
        }
    }
}

/// A venue's journal of one chain, and its mirrors.
#[derive(Clone)]
pub struct JournalSource {
    client: alloy_reqwest::Client,
    journal_url: String,
    /// The journal's URL at each mirror.
    mirror_urls: Vec<String>,
}

/// `base`'s journal of chain `chain_id`, checked to be a URL.
fn journal_url(base: &str, chain_id: u64, what: &str) -> Result<String, String> {
    let base = base.trim_end_matches('/');
    url::Url::parse(base).map_err(|error| format!("{what} is not a URL: {error}"))?;
    Ok(format!("{base}/audit/journal?chainId={chain_id}"))
}

impl JournalSource {
    /// The journal of chain `chain_id` at the venue `venue_url` (`http://host:port`), with
    /// segments also read from `mirror_urls`.
    pub fn new(venue_url: &str, mirror_urls: &[String], chain_id: u64) -> Result<JournalSource, String> {
        // The HTTP client's TLS uses the ring provider the server's does.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let client = alloy_reqwest::Client::builder()
            .timeout(PAGE_TIMEOUT)
            .build()
            .map_err(|error| format!("cannot make an HTTP client: {error}"))?;
        Ok(JournalSource {
            client,
            journal_url: journal_url(venue_url, chain_id, "--venue")?,
            mirror_urls: mirror_urls
                .iter()
                .map(|mirror| journal_url(mirror, chain_id, "--mirror"))
                .collect::<Result<_, _>>()?,
        })
    }

    /// What comes next from position `from`, the journal being known to reach `journal_end`
    /// (0: not known yet): the whole segment `from` is in once it is finished (or may be), from
    /// the venue, else a mirror; else a page of at most `limit` commands from the venue that
    /// stops at the segment's end; when the venue gives no page either, the segment from a
    /// mirror that has it.
    pub async fn next(&self, from: u64, limit: usize, journal_end: u64) -> Result<Page, SourceError> {
        let segment = segment_of(from);
        let (_, last) = segment_positions(segment);
        let tried_segment = journal_end >= last || journal_end == 0;
        if tried_segment {
            match self.segment(segment).await {
                Ok(page) => return Ok(page),
                Err(error) if journal_end >= last => {
                    tracing::warn!(segment, %error, "no source gave the segment; reading it in pages")
                }
                Err(_) => {}
            }
        }
        let to_segment_end = usize::try_from(last - from + 1).unwrap_or(usize::MAX);
        // A page over the size bound (lines larger than most) is asked for again with half as
        // many commands, down to one, so that no line size can stop the auditor.
        let mut limit = limit.min(to_segment_end).max(1);
        let read = loop {
            match self.page(from, limit).await {
                Err(SourceError::TooLarge(_)) if limit > 1 => limit /= 2,
                read => break read,
            }
        };
        match read {
            Err(error) if !tried_segment && !self.mirror_urls.is_empty() => {
                self.segment(segment).await.map_err(|_| error)
            }
            read => read,
        }
    }

    /// Segment `segment`, from the first source that gives it.
    async fn segment(&self, segment: u64) -> Result<Page, SourceError> {
        let mut last_error = None;
        for (index, url) in std::iter::once(&self.journal_url).chain(&self.mirror_urls).enumerate() {
            match self.read(&format!("{url}&segment={segment}")).await {
                Ok(mut page) => {
                    if index > 0 {
                        page.journal_end = segment_positions(segment).1;
                        page.from_venue = false;
                    }
                    page.segment = Some(segment);
                    return Ok(page);
                }
                Err(error) => last_error = Some(error),
            }
        }
        Err(last_error.unwrap_or_else(|| SourceError::Unavailable("no source".into())))
    }

    /// The page from position `from`, at most `limit` commands, from the venue.
    pub async fn page(&self, from: u64, limit: usize) -> Result<Page, SourceError> {
        self.read(&format!("{}&from={from}&limit={limit}", self.journal_url))
            .await
    }

    async fn read(&self, url: &str) -> Result<Page, SourceError> {
        let unavailable =
            |error: alloy_reqwest::Error| SourceError::Unavailable(format!("the journal's source: {error}"));
        let response = self.client.get(url).send().await.map_err(unavailable)?;
        let status = response.status();
        if !status.is_success() {
            let body = response.text().await.unwrap_or_default();
            return Err(SourceError::Unavailable(format!(
                "the journal's source answered {status}: {}",
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
        let text = read_bounded(response, MAX_JOURNAL_PAGE_BYTES).await?;
        Ok(Page {
            text,
            journal_end,
            segment: None,
            from_venue: true,
        })
    }
}
