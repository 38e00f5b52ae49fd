//! The liability proofs' rows of the table (contract version 3, "Liabilities and exit"): an
//! account's proof against the newest committed root, the roots, and every leaf of a root. No
//! behaviour.

use super::{field, Field, Kind, Operation, Tag, ACCOUNT, CHAIN_ID, CURSOR, END_TIME, LIMIT, START_TIME};

/// The name of the leaves' response: JSON lines, one leaf each, not a JSON document.
pub const LIABILITY_LEAF_LINES: &str = "LiabilityLeafLine";

const LEAVES_FIELDS: &[Field] = &[
    CHAIN_ID,
    field(
        "epoch",
        true,
        Kind::Integer,
        "The root's epoch, from 0 (see liabilityRoots).",
    ),
];

/// An account's leaves and proofs in the newest committed root.
pub const LIABILITY_PROOF: Operation = Operation {
    id: "getLiabilityProof",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/liabilityProof"],
    summary: "The account's leaves in the newest liability root the vault committed, each with its Merkle proof and the vault's exit call, ready to send.",
    fields: &[CHAIN_ID, ACCOUNT],
    response_schema: "LiabilityProofResponse",
    error_statuses: &[400, 404, 503],
};

/// The liability roots the vault committed.
pub const LIABILITY_ROOTS: Operation = Operation {
    id: "getLiabilityRoots",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/liabilityRoots"],
    summary:
        "The liability roots the vault committed, newest first, each with its journal position and totals per token.",
    fields: &[CHAIN_ID, LIMIT, CURSOR, START_TIME, END_TIME],
    response_schema: "LiabilityRootsResponse",
    error_statuses: &[400, 404, 503],
};

/// Every leaf of a committed root, as JSON lines.
pub const LIABILITY_LEAVES: Operation = Operation {
    id: "getLiabilityLeaves",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/liabilityLeaves"],
    summary: "Every leaf of a committed liability root, one JSON object per line (application/x-ndjson), so anyone can rebuild the tree and check its root and totals.",
    fields: LEAVES_FIELDS,
    response_schema: LIABILITY_LEAF_LINES,
    error_statuses: &[400, 404, 503],
};
