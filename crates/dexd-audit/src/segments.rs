//! The journal's immutable segments as files: segment `N` holds positions `N·10,000+1 …
//! (N+1)·10,000` in the public format, written once (to a temporary file, synced, renamed) and
//! then served as the same bytes every time, with a strong `ETag` that is a hash of them.
//!
//! The venue keeps the segments it has rendered (`GET /audit/journal?segment=N`), and an
//! auditor with `--serve` keeps those it has checked, in the same layout, so that auditors can
//! read each other. This module stores and opens files and answers with them; it renders
//! nothing and checks nothing.

use std::collections::HashMap;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use sha2::{Digest, Sha256};

/// The positions one segment holds.
pub const SEGMENT_POSITIONS: u64 = 10_000;

/// The segment a position (from 1) is in.
pub fn segment_of(sequence: u64) -> u64 {
    sequence.saturating_sub(1) / SEGMENT_POSITIONS
}

/// The first and last positions of segment `segment`.
pub fn segment_positions(segment: u64) -> (u64, u64) {
    let first = segment.saturating_mul(SEGMENT_POSITIONS).saturating_add(1);
    (first, first.saturating_add(SEGMENT_POSITIONS - 1))
}

/// The strong entity tag of a segment's bytes: a quoted prefix of their SHA-256.
pub fn entity_tag(bytes: &[u8]) -> String {
    let digest = Sha256::digest(bytes);
    format!("\"{}\"", hex::encode(&digest[..16]))
}

/// A stored segment, opened.
pub struct OpenSegment {
    /// The file, at its start.
    pub file: std::fs::File,
    /// Its length in bytes.
    pub length_bytes: u64,
    /// Its entity tag.
    pub entity_tag: Arc<str>,
}

/// The most entity tags kept in memory per chain (a tag is about 40 bytes; a segment a day
/// for 100 years is under this).
const MAX_CACHED_TAGS: usize = 65_536;

/// One chain's segment files in a folder.
pub struct SegmentFiles {
    directory: PathBuf,
    /// The tags of the segments opened or stored so far (a file's tag is computed once).
    tags: parking_lot::Mutex<HashMap<u64, Arc<str>>>,
}

impl SegmentFiles {
    /// The segments of chain `chain_id` under `root` (`<root>/journal-segments/chain-<id>`).
    pub fn new(root: &Path, chain_id: u64) -> SegmentFiles {
        SegmentFiles {
            directory: root.join("journal-segments").join(format!("chain-{chain_id}")),
            tags: parking_lot::Mutex::new(HashMap::new()),
        }
    }

    fn path(&self, segment: u64) -> PathBuf {
        self.directory.join(format!("segment-{segment:010}.ndjson"))
    }

    /// Whether segment `segment` is stored.
    pub fn has(&self, segment: u64) -> bool {
        self.path(segment).is_file()
    }

    /// Segment `segment`, when it is stored (a blocking read: call it off the async runtime;
    /// the first open after a start reads the file once for its tag).
    pub fn open(&self, segment: u64) -> std::io::Result<Option<OpenSegment>> {
        let path = self.path(segment);
        let file = match std::fs::File::open(&path) {
            Ok(file) => file,
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        let length_bytes = file.metadata()?.len();
        let known = self.tags.lock().get(&segment).cloned();
        let entity_tag = match known {
            Some(tag) => tag,
            None => {
                let tag: Arc<str> = entity_tag(&std::fs::read(&path)?).into();
                self.remember(segment, &tag);
                tag
            }
        };
        Ok(Some(OpenSegment {
            file,
            length_bytes,
            entity_tag,
        }))
    }

    /// Stores segment `segment` (blocking), unless it already is: a segment's bytes never
    /// change once written. Its tag.
    pub fn store(&self, segment: u64, bytes: &[u8]) -> std::io::Result<Arc<str>> {
        let path = self.path(segment);
        if let Some(stored) = self.open(segment)? {
            return Ok(stored.entity_tag);
        }
        std::fs::create_dir_all(&self.directory)?;
        let temporary = self.directory.join(format!("segment-{segment:010}.ndjson.partial"));
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, &path)?;
        if let Ok(directory) = std::fs::File::open(&self.directory) {
            let _ = directory.sync_all();
        }
        let tag: Arc<str> = entity_tag(bytes).into();
        self.remember(segment, &tag);
        Ok(tag)
    }

    fn remember(&self, segment: u64, tag: &Arc<str>) {
        let mut tags = self.tags.lock();
        if tags.len() >= MAX_CACHED_TAGS {
            tags.clear();
        }
        tags.insert(segment, Arc::clone(tag));
    }
}

/// The answer with a stored segment: its bytes streamed from the file (or `304` when
/// `if_none_match` names its tag), its strong `ETag`, the format's version and `journal_end`.
pub fn segment_response(
    opened: OpenSegment,
    if_none_match: Option<&str>,
    journal_end: u64,
) -> axum::response::Response {
    use axum::http::header::{CACHE_CONTROL, CONTENT_LENGTH, CONTENT_TYPE, ETAG};
    use axum::http::{HeaderValue, StatusCode};
    use axum::response::IntoResponse;

    use super::format::{JOURNAL_END_HEADER, JOURNAL_FORMAT_HEADER, JOURNAL_FORMAT_VERSION};

    let unchanged = if_none_match.is_some_and(|tags| {
        tags.split(',')
            .map(str::trim)
            .any(|given| given == &*opened.entity_tag || given == "*")
    });
    let tag = HeaderValue::from_str(&opened.entity_tag).expect("a tag is quoted hex digits");
    let mut response = if unchanged {
        StatusCode::NOT_MODIFIED.into_response()
    } else {
        let length = opened.length_bytes;
        let stream = tokio_util::io::ReaderStream::new(tokio::fs::File::from_std(opened.file));
        let mut response = (
            [(CONTENT_TYPE, "application/x-ndjson")],
            axum::body::Body::from_stream(stream),
        )
            .into_response();
        response.headers_mut().insert(CONTENT_LENGTH, HeaderValue::from(length));
        response
    };
    let headers = response.headers_mut();
    headers.insert(ETAG, tag);
    headers.insert(
        CACHE_CONTROL,
        HeaderValue::from_static("public, max-age=31536000, immutable"),
    );
    headers.insert(JOURNAL_FORMAT_HEADER, HeaderValue::from(JOURNAL_FORMAT_VERSION));
    headers.insert(JOURNAL_END_HEADER, HeaderValue::from(journal_end));
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_and_segments_agree() {
        assert_eq!(segment_positions(0), (1, 10_000));
        assert_eq!(segment_positions(3), (30_001, 40_000));
        assert_eq!(segment_of(1), 0);
        assert_eq!(segment_of(10_000), 0);
        assert_eq!(segment_of(10_001), 1);
    }

    #[test]
    fn a_stored_segment_keeps_its_first_bytes_and_its_tag() {
        let directory = tempfile::tempdir().unwrap();
        let files = SegmentFiles::new(directory.path(), 7);
        assert!(files.open(0).unwrap().is_none());
        let tag = files.store(0, b"first\n").unwrap();
        assert_eq!(&*tag, entity_tag(b"first\n"));
        // A second store of other bytes changes nothing.
        assert_eq!(files.store(0, b"second\n").unwrap(), tag);
        let reopened = SegmentFiles::new(directory.path(), 7);
        let open = reopened.open(0).unwrap().unwrap();
        assert_eq!(open.length_bytes, 6);
        assert_eq!(open.entity_tag, tag);
        assert_ne!(entity_tag(b"first\n"), entity_tag(b"second\n"));
    }
}
