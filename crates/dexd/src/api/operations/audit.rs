//! The public audit log's rows of the table (contract version 4, "Public audit log"): the
//! journal as JSON lines and the committed roots. No behaviour.

use super::{count, whole_number, Field, Operation, Tag, Typed, CHAIN_ID};

/// The name of the journal's response: JSON lines, one per command or state hash.
pub const AUDIT_JOURNAL_LINES: &str = "AuditJournalLine";

use dexd_audit::format::MAX_JOURNAL_PAGE_COMMANDS;

/// The most roots of a page of `/audit/roots`.
pub const MAX_AUDIT_ROOTS_PAGE: usize = 1_000;

/// The first journal position a page reads.
pub(crate) const JOURNAL_FROM: Typed<u64> = whole_number(
    "from",
    false,
    "The first journal position to read (default 1; past the journal's end: no lines).",
);
/// A journal page's length.
pub(crate) const JOURNAL_LIMIT: Typed<usize> = count(
    "limit",
    MAX_JOURNAL_PAGE_COMMANDS as u64,
    MAX_JOURNAL_PAGE_COMMANDS as u64,
    "The most command lines (default and maximum 10,000); state hash lines are not counted.",
);
/// A finished segment, read whole.
pub(crate) const JOURNAL_SEGMENT: Typed<u64> = whole_number(
    "segment",
    false,
    "A finished segment, read whole (from and limit are then not used): positions segment·10,000+1 to (segment+1)·10,000, the same bytes every time with a strong ETag (If-None-Match answers 304); 404 SEGMENT_NOT_FOUND until the journal reaches its end.",
);
const JOURNAL_FIELDS: &[Field] = &[
    CHAIN_ID.field,
    JOURNAL_FROM.field,
    JOURNAL_LIMIT.field,
    JOURNAL_SEGMENT.field,
];

/// The first epoch a page of roots lists.
pub(crate) const ROOTS_FROM: Typed<u64> = whole_number("from", false, "The first epoch to list (default 0).");
/// A page of roots' length.
pub(crate) const ROOTS_LIMIT: Typed<usize> = count(
    "limit",
    MAX_AUDIT_ROOTS_PAGE as u64,
    MAX_AUDIT_ROOTS_PAGE as u64,
    "The most roots (default and maximum 1,000); next names the epoch to ask from for the rest.",
);
const ROOTS_FIELDS: &[Field] = &[CHAIN_ID.field, ROOTS_FROM.field, ROOTS_LIMIT.field];

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
