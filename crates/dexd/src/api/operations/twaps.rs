//! TWAP orders' rows of the table (contract version 5): start one, cancel one, list the
//! account's. No behaviour.

use dexd_core::Decimal;

use super::{
    decimal, label, whole_number, Field, Operation, Tag, Typed, ACCOUNT, AMOUNT, CHAIN_ID, DIRECTION, EXPIRY, NONCE,
    ORDER_PAIR, PRIVATE_KEY, READ_ERRORS, SIGNATURE, SIGNER, SUBACCOUNT, WRITE_ERRORS,
};

/// How long the TWAP runs.
pub(crate) const TWAP_DURATION: Typed<u64> = whole_number(
    "durationMs",
    true,
    "How long the TWAP runs, in ms: 300000 (5 minutes) to 86400000 (24 hours); outside, 422 TWAP_OUT_OF_BOUNDS.",
);
/// The time between slices.
pub(crate) const TWAP_INTERVAL: Typed<u64> = whole_number(
    "intervalMs",
    true,
    "The time between slices, in ms: 30000 to 3600000, dividing durationMs; otherwise 422 TWAP_OUT_OF_BOUNDS. \
     The first slice is placed at once, the last at durationMs - intervalMs.",
);
/// The TWAP's limit price.
pub(crate) const TWAP_LIMIT_PRICE: Typed<Decimal> = decimal(
    "limitPrice",
    false,
    "No slice buys above (sells below) this, on the pair's tick. Without it, a slice trades at most 3 % through \
     the best opposite price when it is placed.",
);
/// The account's own id of a TWAP.
pub(crate) const CLIENT_TWAP_ID: Typed<String> = label(
    "clientTwapId",
    "Your id of the TWAP: 1 to 64 of A-Z a-z 0-9 . _ : -. Sent again while the account keeps that TWAP, with the \
     same terms the TWAP is the answer and nothing starts again; with other terms, 409 DUPLICATE_CLIENT_TWAP_ID.",
);
/// Which TWAP a cancel names.
pub(crate) const TWAP_ID: Typed<u64> = whole_number("twapId", true, "The TWAP's id, as addTwap answered it.");

const ADD_TWAP_FIELDS: &[Field] = trading_write_fields![
    ORDER_PAIR.field,
    DIRECTION.field,
    AMOUNT.field,
    TWAP_DURATION.field,
    TWAP_INTERVAL.field,
    TWAP_LIMIT_PRICE.field,
    CLIENT_TWAP_ID.field,
];

/// Start a TWAP.
pub const ADD_TWAP: Operation = Operation {
    id: "addTwap",
    tag: Tag::Order,
    is_post: true,
    paths: &["/order/addTwap"],
    summary: "Start a TWAP: every intervalMs an immediate-or-cancel slice of the remaining amount over the slices \
              left (at most 3 planned slices), at limitPrice or within 3 % of the best price; at most 5 running \
              per account and pair.",
    fields: ADD_TWAP_FIELDS,
    response_schema: "TwapResponse",
    error_statuses: WRITE_ERRORS,
};

const CANCEL_TWAP_FIELDS: &[Field] = trading_write_fields![TWAP_ID.field];

/// Cancel a running TWAP.
pub const CANCEL_TWAP: Operation = Operation {
    id: "cancelTwap",
    tag: Tag::Order,
    is_post: true,
    paths: &["/order/cancelTwap"],
    summary: "Cancel a running TWAP of the account: no slice is placed after it.",
    fields: CANCEL_TWAP_FIELDS,
    response_schema: "TwapResponse",
    error_statuses: WRITE_ERRORS,
};

/// The account's TWAPs.
pub const TWAPS: Operation = Operation {
    id: "getTwaps",
    tag: Tag::Order,
    is_post: false,
    paths: &["/order/twaps"],
    summary: "The account's running TWAPs, then its last 20 finished ones, newest first.",
    fields: &[CHAIN_ID.field, ACCOUNT.field, SUBACCOUNT.field],
    response_schema: "TwapListResponse",
    error_statuses: READ_ERRORS,
};
