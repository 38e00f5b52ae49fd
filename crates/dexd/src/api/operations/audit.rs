//! The public audit log's rows of the table (contract version 4, "Public audit log"): the
//! journal as JSON lines and the committed roots. No behaviour.

use super::{field, Field, Kind, Operation, Tag, CHAIN_ID};

/// The name of the journal's response: JSON lines, one per command or state hash.
pub const AUDIT_JOURNAL_LINES: &str = "AuditJournalLine";

const JOURNAL_FIELDS: &[Field] = &[
    CHAIN_ID,
    field(
        "from",
        false,
        Kind::Integer,
        "The first journal position to read (default 1; past the journal's end: no lines).",
    ),
    field(
        "limit",
        false,
        Kind::Count { max: 10_000 },
        "The most command lines (default and maximum 10,000); state hash lines are not counted.",
    ),
    field(
        "segment",
        false,
        Kind::Integer,
        "A finished segment, read whole (from and limit are then not used): positions segment·10,000+1 to (segment+1)·10,000, the same bytes every time with a strong ETag (If-None-Match answers 304); 404 SEGMENT_NOT_FOUND until the journal reaches its end.",
    ),
];

const ROOTS_FIELDS: &[Field] = &[
    CHAIN_ID,
    field("from", false, Kind::Integer, "The first epoch to list (default 0)."),
    field(
        "limit",
        false,
        Kind::Count { max: 1_000 },
        "The most roots (default and maximum 1,000); next names the epoch to ask from for the rest.",
    ),
];

/// The chain's journal, every command with what authorizes it.
pub const AUDIT_JOURNAL: Operation = Operation {
    id: "getAuditJournal",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/audit/journal"],
    summary: "The chain's journal from position from, one JSON object per line (application/x-ndjson): each journaled command with its time, its exact bytes and what authorizes it (the account's EIP-712 signature and the signed fields, the vault's deposit event, or system), and after every multiple of 10,000 the engine's state hash. Finished segments (segment=N) are served whole from a file with a strong ETag; the tail with from and limit. A batch's order hashes are given once per batch in a page. Format version in X-Dexd-Journal-Format (2), the journal's end in X-Dexd-Journal-End; docs/audit.md describes it.",
    fields: JOURNAL_FIELDS,
    response_schema: AUDIT_JOURNAL_LINES,
    error_statuses: &[400, 404, 429, 503],
};

/// Every liability root the vault committed, oldest first.
pub const AUDIT_ROOTS: Operation = Operation {
    id: "getAuditRoots",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/audit/roots"],
    summary: "The liability roots the vault committed from epoch from, oldest first, at most limit (1,000), each with its epoch, journal position, root, totals and the URL of its leaves; next is the epoch to ask from for the rest, or null.",
    fields: ROOTS_FIELDS,
    response_schema: "AuditRootsResponse",
    error_statuses: &[400, 404, 503],
};
