//! The liability proofs' rows of the table (contract version 3, "Liabilities and exit", with
//! version 4's "An exit that holds"): an account's proof against a committed root, the roots,
//! every leaf of a root, and the chain's custody as its payer and committer see it. No
//! behaviour.

use super::{whole_number, Field, Operation, Tag, Typed, ACCOUNT, CHAIN_ID, CURSOR, END_TIME, LIMIT, START_TIME};

/// The name of the leaves' response: JSON lines, one leaf each, not a JSON document.
pub const LIABILITY_LEAF_LINES: &str = "LiabilityLeafLine";

/// The root whose leaves are read.
pub(crate) const LEAVES_EPOCH: Typed<u64> =
    whole_number("epoch", true, "The root's epoch, from 0 (see liabilityRoots).");
const LEAVES_FIELDS: &[Field] = &[CHAIN_ID.field, LEAVES_EPOCH.field];

/// The root a proof is of, when one is named.
pub(crate) const PROOF_EPOCH: Typed<u64> = whole_number(
    "epoch",
    false,
    "The root's epoch (default: the newest root of the venue's that is not vetoed).",
);
const PROOF_FIELDS: &[Field] = &[CHAIN_ID.field, ACCOUNT.field, PROOF_EPOCH.field];

/// An account's leaves and proofs in a committed root.
pub const LIABILITY_PROOF: Operation = Operation {
    id: "getLiabilityProof",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/liabilityProof"],
    summary: "The account's leaves in a liability root the vault committed (the newest of the venue's not vetoed, or epoch), each with its Merkle proof and the vault's exit call, ready to send; served from the root's kept file, never rebuilt.",
    fields: PROOF_FIELDS,
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
    fields: &[
        CHAIN_ID.field,
        LIMIT.field,
        CURSOR.field,
        START_TIME.field,
        END_TIME.field,
    ],
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

/// The chain's custody: the vault, its root terms, where its roots stand, and what stops
/// payments.
pub const CUSTODY: Operation = Operation {
    id: "getCustody",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/account/custody"],
    summary: "The chain's custody as its payer and committer see it: the vault, its root terms, the newest roots of the venue's, a foreign root (one the venue did not make) that stops withdrawals, the freeze, and the node's state.",
    fields: &[CHAIN_ID.field],
    response_schema: "CustodyResponse",
    error_statuses: &[400, 404, 503],
};
