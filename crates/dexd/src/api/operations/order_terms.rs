//! The fields of an order's terms, as every operation that places one (add, batch items,
//! signed and agent forms) takes them: the contract's words, checked by the handlers, listed in
//! the OpenAPI document. The conditions of contract version 4 (trigger, group, expiry) are here.

use dexd_core::{Decimal, Direction, OrderType, PairIndex, TimeInForce, TriggerCondition};

use super::{choice, decimal, expires_at, flag, group_name, label, pair, Typed};

/// The largest `expiresAt` taken (13 digits: the year 2286); the engine refuses one more than
/// 366 days ahead of the time it applies the order.
pub const MAX_EXPIRES_AT_MS: u64 = 9_999_999_999_999;

/// The longest `clientOrderId` accepted.
pub const MAX_CLIENT_ORDER_ID_LENGTH: usize = 64;

/// The pair of an order placed (every order of a batch is on one pair).
pub(crate) const ORDER_PAIR: Typed<PairIndex> = pair(
    "symbol",
    true,
    "The pair, BASE/QUOTE (every order of a batch is on one pair).",
);
pub(crate) const ORDER_TYPE: Typed<OrderType> = choice("type", true, "limit or market.");
pub(crate) const DIRECTION: Typed<Direction> = choice("direction", true, "buy or sell.");
pub(crate) const LIMIT_PRICE: Typed<Decimal> = decimal(
    "price",
    false,
    "The limit price in quote per base, on the pair's tick; required for limit orders, absent for market orders.",
);
pub(crate) const AMOUNT: Typed<Decimal> = decimal("amount", true, "The amount of base, on the pair's step.");
pub(crate) const TIME_IN_FORCE: Typed<TimeInForce> = choice(
    "timeInForce",
    false,
    "GTC (default), IOC or FOK. Market orders act as IOC unless FOK is asked.",
);
pub(crate) const POST_ONLY: Typed<bool> = flag(
    "postOnly",
    "Refuse the order instead of trading on arrival. Default false.",
);
pub(crate) const CLIENT_ORDER_ID: Typed<String> = label(
    "clientOrderId",
    "Your label: 1 to 64 of A-Z a-z 0-9 . _ : -, unique among the account's open orders.",
);

pub(crate) const TRIGGER_PRICE: Typed<Decimal> = decimal(
    "triggerPrice",
    false,
    "Makes a trigger order: it waits, untriggered and locked, until a trade on the pair prints at or beyond this price \
     (on the pair's tick), then enters the book as its type says. Requires triggerCondition.",
);
pub(crate) const TRIGGER_CONDITION: Typed<TriggerCondition> = choice(
    "triggerCondition",
    false,
    "above (fires on a trade at or above triggerPrice) or below (at or below). Requires triggerPrice.",
);
pub(crate) const OCO_GROUP: Typed<String> = group_name(
    "ocoGroup",
    "One-cancels-other group: 1 to 36 of A-Z a-z 0-9 . _ : -. Two orders of one account, pair and side; when one \
     fills or fires the other is cancelled. They share one lock of the larger amount.",
);
pub(crate) const EXPIRES_AT: Typed<u64> = expires_at(
    "expiresAt",
    "When the order is cancelled if still open: ms since the epoch, at least 5 s ahead (422 EXPIRY_TOO_SOON) and at \
     most 366 days (422 EXPIRY_TOO_FAR); 0 or left out for none.",
);
