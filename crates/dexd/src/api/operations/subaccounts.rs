//! Subaccounts' rows of the table (contract version 5): a transfer between two of an owner's
//! subaccounts, the owner's transfers, and its subaccounts. The `subaccount` field that order
//! operations and account reads take is `super::SUBACCOUNT`. No behaviour.

use super::{
    subaccount, transfer_id, Field, Operation, Tag, Typed, ACCOUNT, ASSET, CHAIN_ID, CURSOR, END_TIME, EXPIRY, FROM,
    LIMIT, NONCE, PRIVATE_KEY, QUANTITY, READ_ERRORS, SIGNATURE, SIGNER, START_TIME, SUBACCOUNT, WRITE_ERRORS,
};

/// The subaccount a transfer takes funds from.
pub(crate) const FROM_SUBACCOUNT: Typed<u32> = subaccount(
    "fromSubaccount",
    true,
    "The subaccount the funds leave, 0 (the owner) to 1000.",
);
/// The subaccount a transfer brings them to.
pub(crate) const TO_SUBACCOUNT: Typed<u32> = subaccount(
    "toSubaccount",
    true,
    "The subaccount the funds reach, 0 (the owner) to 1000, not fromSubaccount.",
);
/// The owner's id of a transfer.
pub(crate) const CLIENT_TRANSFER_ID: Typed<String> = transfer_id(
    "clientTransferId",
    "The owner's id of the transfer, 1 to 64 of A-Z a-z 0-9 . _ : -. Sent again within 24 hours with the same \
     terms, the first result is the answer and nothing moves again; with other terms, 409 TRANSFER_ID_REUSED.",
);

const TRANSFER_FIELDS: &[Field] = account_write_fields![
    FROM.field,
    FROM_SUBACCOUNT.field,
    TO_SUBACCOUNT.field,
    ASSET.field,
    QUANTITY.field,
    CLIENT_TRANSFER_ID.field,
];

/// A transfer between two subaccounts of one owner.
pub const SUBACCOUNT_TRANSFER: Operation = Operation {
    id: "transferBetweenSubaccounts",
    tag: Tag::Account,
    is_post: true,
    paths: &["/account/transfer"],
    summary: "Move available funds between two of the owner's subaccounts (0, the owner, to 1000), at once and \
              free; the owner's own key or signature (a Transfer), never an agent's.",
    fields: TRANSFER_FIELDS,
    response_schema: "SubaccountTransferResponse",
    error_statuses: WRITE_ERRORS,
};

const TRANSFER_LIST_FIELDS: &[Field] = &[
    CHAIN_ID.field,
    ACCOUNT.field,
    SUBACCOUNT.field,
    LIMIT.field,
    CURSOR.field,
    START_TIME.field,
    END_TIME.field,
];

/// The owner's transfers between its subaccounts.
pub const SUBACCOUNT_TRANSFERS: Operation = Operation {
    id: "getSubaccountTransfers",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/transfers"],
    summary: "The owner's transfers between its subaccounts (with subaccount, only those from or to it), newest \
              first.",
    fields: TRANSFER_LIST_FIELDS,
    response_schema: "SubaccountTransferListResponse",
    error_statuses: READ_ERRORS,
};

/// The owner's subaccounts.
pub const SUBACCOUNTS: Operation = Operation {
    id: "getSubaccounts",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/subaccounts"],
    summary: "The owner (number 0) and every subaccount that ever received funds, with its address and balances.",
    fields: &[CHAIN_ID.field, ACCOUNT.field],
    response_schema: "SubaccountsResponse",
    error_statuses: READ_ERRORS,
};
