//! The trading extensions' rows of the table (contract version 3): batches, cancel all, amend,
//! the dead man's switch and agents, with their batch items' fields. No behaviour.

use dexd_core::{Address, Decimal, PairIndex};

use super::{
    address, agent_name, decimal, items, milliseconds, pair, switch_timeout, Field, ItemList, Operation, Tag, Typed,
    ACCOUNT, CHAIN_ID, EXPIRY, NONCE, ORDER_ID, ORDER_OF_PAIR, PRIVATE_KEY, READ_ERRORS, SIGNATURE, SIGNER, SUBACCOUNT,
    WRITE_ERRORS,
};

/// The fields of one order of a batch: an add order's, without the chain and the key.
pub const BATCH_ORDER_ITEM_FIELDS: &[Field] = order_fields![SIGNER.field, NONCE.field, EXPIRY.field, SIGNATURE.field];

/// The fields of one cancel of a batch.
pub const BATCH_CANCEL_ITEM_FIELDS: &[Field] = &[
    ORDER_OF_PAIR.field,
    ORDER_ID.field,
    SIGNER.field,
    NONCE.field,
    EXPIRY.field,
    SIGNATURE.field,
];

/// The most orders or cancels in one batch.
pub const MAX_BATCH_ITEMS: usize = 50;

/// A batch's orders.
pub(crate) const BATCH_ORDER_ITEMS: Typed<ItemList> = items(
    "orders",
    BATCH_ORDER_ITEM_FIELDS,
    MAX_BATCH_ITEMS,
    "1 to 50 orders of one pair, placed in this order. With privateKey, or with one signature of the \
         whole batch (account, nonce, expiry and signature at the top: an OrderBatch), the items carry no \
         credential; otherwise each item carries its own account, nonce, expiry and signature (an Order).",
);

const BATCH_ORDERS_FIELDS: &[Field] = &[
    BATCH_ORDER_ITEMS.field,
    CHAIN_ID.field,
    PRIVATE_KEY.field,
    SIGNER.field,
    NONCE.field,
    EXPIRY.field,
    SIGNATURE.field,
    SUBACCOUNT.field,
];

/// A batch's cancels.
pub(crate) const BATCH_CANCEL_ITEMS: Typed<ItemList> = items(
    "cancels",
    BATCH_CANCEL_ITEM_FIELDS,
    MAX_BATCH_ITEMS,
    "1 to 50 cancels. With privateKey the items carry no credential; without it each item carries its own \
     account, nonce, expiry and signature (a CancelOrder).",
);

const BATCH_CANCEL_FIELDS: &[Field] = &[
    BATCH_CANCEL_ITEMS.field,
    CHAIN_ID.field,
    PRIVATE_KEY.field,
    SIGNER.field,
    SUBACCOUNT.field,
];

/// Cancel all's pair, when it names one.
pub(crate) const CANCEL_ALL_PAIR: Typed<PairIndex> =
    pair("symbol", false, "Only this pair's orders; every pair's when left out.");
const CANCEL_ALL_FIELDS: &[Field] = trading_write_fields![CANCEL_ALL_PAIR.field];

/// The order an amend replaces.
pub(crate) const AMENDED_ORDER_ID: Typed<dexd_core::OrderId> = super::order_id("orderId", "The open order to replace.");
/// An amend's new price.
pub(crate) const AMENDED_PRICE: Typed<Decimal> = decimal(
    "price",
    false,
    "The new limit price, on the pair's tick; the old one's when left out.",
);
/// An amend's new amount.
pub(crate) const AMENDED_AMOUNT: Typed<Decimal> = decimal(
    "amount",
    false,
    "The new order's whole amount of base, on the pair's step; when left out, what the old order has left \
     to fill. At least one of price and amount.",
);
const AMEND_ORDER_FIELDS: &[Field] = trading_write_fields![
    ORDER_OF_PAIR.field,
    AMENDED_ORDER_ID.field,
    AMENDED_PRICE.field,
    AMENDED_AMOUNT.field,
];

/// The dead man's switch's timeout.
pub(crate) const SWITCH_TIMEOUT: Typed<u64> = switch_timeout(
    "timeoutMs",
    "0 turns the switch off; 5000 to 86400000 arms it: unless set again within this many ms, every open \
     order of the account on the chain is cancelled.",
);
const CANCEL_ALL_AFTER_FIELDS: &[Field] = trading_write_fields![SWITCH_TIMEOUT.field];

/// The agent an approval names.
pub(crate) const APPROVED_AGENT: Typed<Address> = address("agent", true, "The agent's address (the bot's key's).");
/// The agent's name.
pub(crate) const AGENT_NAME: Typed<String> = agent_name("name", "The agent's name, 1 to 32 of A-Z a-z 0-9 . _ -.");
/// When the approval ends.
pub(crate) const AGENT_VALID_UNTIL: Typed<u64> = milliseconds(
    "validUntil",
    false,
    "When the approval ends, ms since the epoch; until revoked when left out.",
);
const APPROVE_AGENT_FIELDS: &[Field] =
    account_write_fields![APPROVED_AGENT.field, AGENT_NAME.field, AGENT_VALID_UNTIL.field];

/// The agent a revocation names.
pub(crate) const REVOKED_AGENT: Typed<Address> = address("agent", true, "The agent to revoke.");
const REVOKE_AGENT_FIELDS: &[Field] = account_write_fields![REVOKED_AGENT.field];

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
    fields: &[CHAIN_ID.field, ACCOUNT.field],
    response_schema: "AgentsResponse",
    error_statuses: READ_ERRORS,
};
