//! The trading extensions' rows of the table (contract version 3): batches, cancel all, amend,
//! the dead man's switch and agents, with their batch items' fields. No behaviour.

use super::{
    field, Field, Kind, Operation, Tag, ACCOUNT, AMOUNT, CHAIN_ID, CLIENT_ORDER_ID, DIRECTION, EXPIRY, LIMIT_PRICE,
    NONCE, ORDER_PAIR, ORDER_TYPE, POST_ONLY, PRIVATE_KEY, READ_ERRORS, SIGNATURE, SIGNER, TIME_IN_FORCE, WRITE_ERRORS,
};

/// The fields of one order of a batch: an add order's, without the chain and the key.
pub const BATCH_ORDER_ITEM_FIELDS: &[Field] = order_fields![SIGNER, NONCE, EXPIRY, SIGNATURE];

/// The fields of one cancel of a batch.
pub const BATCH_CANCEL_ITEM_FIELDS: &[Field] = &[
    field("symbol", true, Kind::Pair, "The order's pair."),
    field("orderId", true, Kind::OrderId, "The order id."),
    SIGNER,
    NONCE,
    EXPIRY,
    SIGNATURE,
];

const BATCH_ORDERS_FIELDS: &[Field] = &[
    field(
        "orders",
        true,
        Kind::Items {
            fields: BATCH_ORDER_ITEM_FIELDS,
            max: 50,
        },
        "1 to 50 orders of one pair, placed in this order. With privateKey, or with one signature of the \
         whole batch (account, nonce, expiry and signature at the top: an OrderBatch), the items carry no \
         credential; otherwise each item carries its own account, nonce, expiry and signature (an Order).",
    ),
    CHAIN_ID,
    PRIVATE_KEY,
    SIGNER,
    NONCE,
    EXPIRY,
    SIGNATURE,
];

const BATCH_CANCEL_FIELDS: &[Field] = &[
    field(
        "cancels",
        true,
        Kind::Items {
            fields: BATCH_CANCEL_ITEM_FIELDS,
            max: 50,
        },
        "1 to 50 cancels. With privateKey the items carry no credential; without it each item carries its own \
         account, nonce, expiry and signature (a CancelOrder).",
    ),
    CHAIN_ID,
    PRIVATE_KEY,
    SIGNER,
];

const CANCEL_ALL_FIELDS: &[Field] = account_write_fields![field(
    "symbol",
    false,
    Kind::Pair,
    "Only this pair's orders; every pair's when left out.",
),];

const AMEND_ORDER_FIELDS: &[Field] = account_write_fields![
    field("symbol", true, Kind::Pair, "The order's pair."),
    field("orderId", true, Kind::OrderId, "The open order to replace."),
    field(
        "price",
        false,
        Kind::Decimal,
        "The new limit price, on the pair's tick; the old one's when left out.",
    ),
    field(
        "amount",
        false,
        Kind::Decimal,
        "The new order's whole amount of base, on the pair's step; when left out, what the old order has left \
         to fill. At least one of price and amount.",
    ),
];

const CANCEL_ALL_AFTER_FIELDS: &[Field] = account_write_fields![field(
    "timeoutMs",
    true,
    Kind::SwitchTimeout,
    "0 turns the switch off; 5000 to 86400000 arms it: unless set again within this many ms, every open \
         order of the account on the chain is cancelled.",
),];

const APPROVE_AGENT_FIELDS: &[Field] = account_write_fields![
    field("agent", true, Kind::Address, "The agent's address (the bot's key's)."),
    field(
        "name",
        true,
        Kind::AgentName,
        "The agent's name, 1 to 32 of A-Z a-z 0-9 . _ -.",
    ),
    field(
        "validUntil",
        false,
        Kind::Milliseconds,
        "When the approval ends, ms since the epoch; until revoked when left out.",
    ),
];

const REVOKE_AGENT_FIELDS: &[Field] =
    account_write_fields![field("agent", true, Kind::Address, "The agent to revoke."),];

/// Batch add.
pub const BATCH_ORDERS: Operation = Operation {
    id: "batchOrders",
    tag: Tag::Order,
    is_post: true,
    paths: &["/order/batchOrders"],
    summary: "Place 1 to 50 orders of one pair in one journaled step; each gets its own result.",
    fields: BATCH_ORDERS_FIELDS,
    response_schema: "BatchOrdersResponse",
    error_statuses: WRITE_ERRORS,
};
/// Batch cancel.
pub const BATCH_CANCEL: Operation = Operation {
    id: "batchCancel",
    tag: Tag::Order,
    is_post: true,
    paths: &["/order/batchCancel"],
    summary: "Cancel 1 to 50 orders in one journaled step; each gets its own result.",
    fields: BATCH_CANCEL_FIELDS,
    response_schema: "BatchCancelResponse",
    error_statuses: WRITE_ERRORS,
};
/// Cancel all.
pub const CANCEL_ALL: Operation = Operation {
    id: "cancelAll",
    tag: Tag::Order,
    is_post: true,
    paths: &["/order/cancelAll"],
    summary: "Cancel every open order of the account on the chain, or on one pair.",
    fields: CANCEL_ALL_FIELDS,
    response_schema: "CancelAllResponse",
    error_statuses: WRITE_ERRORS,
};
/// Amend.
pub const AMEND_ORDER: Operation = Operation {
    id: "amendOrder",
    tag: Tag::Order,
    is_post: true,
    paths: &["/order/amendOrder"],
    summary: "Cancel an open order and place its replacement in one step; if the new one is refused the old one stays.",
    fields: AMEND_ORDER_FIELDS,
    response_schema: "AmendOrderResponse",
    error_statuses: WRITE_ERRORS,
};
/// The dead man's switch.
pub const CANCEL_ALL_AFTER: Operation = Operation {
    id: "cancelAllAfter",
    tag: Tag::Order,
    is_post: true,
    paths: &["/order/cancelAllAfter"],
    summary: "Arm (or turn off) the dead man's switch: every open order is cancelled unless it is set again in time.",
    fields: CANCEL_ALL_AFTER_FIELDS,
    response_schema: "CancelAllAfterResponse",
    error_statuses: WRITE_ERRORS,
};
/// Approve an agent.
pub const APPROVE_AGENT: Operation = Operation {
    id: "approveAgent",
    tag: Tag::Account,
    is_post: true,
    paths: &["/account/approveAgent"],
    summary: "Approve another key to trade (never to move funds) for the account; at most 10.",
    fields: APPROVE_AGENT_FIELDS,
    response_schema: "AgentResponse",
    error_statuses: WRITE_ERRORS,
};
/// Revoke an agent.
pub const REVOKE_AGENT: Operation = Operation {
    id: "revokeAgent",
    tag: Tag::Account,
    is_post: true,
    paths: &["/account/revokeAgent"],
    summary: "End an agent's approval at once.",
    fields: REVOKE_AGENT_FIELDS,
    response_schema: "RevokeAgentResponse",
    error_statuses: WRITE_ERRORS,
};
/// The account's agents.
pub const AGENTS: Operation = Operation {
    id: "getAgents",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/agents"],
    summary: "The agents the account approved that have not ended.",
    fields: &[CHAIN_ID, ACCOUNT],
    response_schema: "AgentsResponse",
    error_statuses: READ_ERRORS,
};
