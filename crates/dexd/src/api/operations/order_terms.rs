//! The fields of an order's terms, as every operation that places one (add, batch items,
//! signed and agent forms) takes them: the contract's words, checked by the handlers, listed in
//! the OpenAPI document. The conditions of contract version 4 (trigger, group, expiry) are here.

use dexd_core::{DIRECTION_NAMES, ORDER_TYPE_NAMES, TIME_IN_FORCE_NAMES, TRIGGER_CONDITION_NAMES};

use super::{field, Field, Kind};

pub(crate) const ORDER_TYPE: Field = field("type", true, Kind::Choice(ORDER_TYPE_NAMES), "limit or market.");
pub(crate) const DIRECTION: Field = field("direction", true, Kind::Choice(DIRECTION_NAMES), "buy or sell.");
pub(crate) const LIMIT_PRICE: Field = field(
    "price",
    false,
    Kind::Decimal,
    "The limit price in quote per base, on the pair's tick; required for limit orders, absent for market orders.",
);
pub(crate) const AMOUNT: Field = field("amount", true, Kind::Decimal, "The amount of base, on the pair's step.");
pub(crate) const TIME_IN_FORCE: Field = field(
    "timeInForce",
    false,
    Kind::Choice(TIME_IN_FORCE_NAMES),
    "GTC (default), IOC or FOK. Market orders act as IOC unless FOK is asked.",
);
pub(crate) const POST_ONLY: Field = field(
    "postOnly",
    false,
    Kind::Bool,
    "Refuse the order instead of trading on arrival. Default false.",
);
pub(crate) const CLIENT_ORDER_ID: Field = field(
    "clientOrderId",
    false,
    Kind::Text,
    "Your label: 1 to 64 of A-Z a-z 0-9 . _ : -, unique among the account's open orders.",
);

pub(crate) const TRIGGER_PRICE: Field = field(
    "triggerPrice",
    false,
    Kind::Decimal,
    "Makes a trigger order: it waits, untriggered and locked, until a trade on the pair prints at or beyond this price \
     (on the pair's tick), then enters the book as its type says. Requires triggerCondition.",
);
pub(crate) const TRIGGER_CONDITION: Field = field(
    "triggerCondition",
    false,
    Kind::Choice(TRIGGER_CONDITION_NAMES),
    "above (fires on a trade at or above triggerPrice) or below (at or below). Requires triggerPrice.",
);
pub(crate) const OCO_GROUP: Field = field(
    "ocoGroup",
    false,
    Kind::GroupName,
    "One-cancels-other group: 1 to 36 of A-Z a-z 0-9 . _ : -. Two orders of one account, pair and side; when one \
     fills or fires the other is cancelled. They share one lock of the larger amount.",
);
pub(crate) const EXPIRES_AT: Field = field(
    "expiresAt",
    false,
    Kind::ExpiresAt,
    "When the order is cancelled if still open: ms since the epoch, at least 5 s ahead (422 EXPIRY_TOO_SOON) and at \
     most 366 days (422 EXPIRY_TOO_FAR); 0 or left out for none.",
);
