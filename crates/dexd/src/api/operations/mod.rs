//! The table of operations: paths, methods and parameters, in one place; the trading
//! extensions' (batches, cancel all, amend, the switch, agents) are in `trading`, the
//! liability proofs' in `liabilities`, the public audit log's in `audit`.
//!
//! The handlers check incoming parameters against it (unknown ones are refused) and the OpenAPI
//! document is generated from it, so the two cannot drift apart. It holds no behaviour.

/// The group an operation is listed under (the OpenAPI tag): the seed's three, and the
/// extensions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Tag {
    /// Orders, books, candles, trades, positions.
    Order,
    /// Deposits and withdrawals.
    Portfolio,
    /// Assets, balances, pairs, tradable amounts.
    Account,
    /// What dexd adds to the contract's seed.
    Extensions,
}

impl Tag {
    /// The tag's name in the OpenAPI document.
    pub fn name(self) -> &'static str {
        match self {
            Tag::Order => "order",
            Tag::Portfolio => "portfolio",
            Tag::Account => "account",
            Tag::Extensions => "extensions",
        }
    }
}

/// The fields of an account's write: its own, then the chain and the credential (the key, or the
/// signer, nonce, expiry and signature of a client's own signature).
macro_rules! account_write_fields {
    ($($field:expr),* $(,)?) => {
        &[$($field,)* CHAIN_ID.field, PRIVATE_KEY.field, SIGNER.field, NONCE.field, EXPIRY.field, SIGNATURE.field]
    };
}

/// The fields of a trading write (an order operation): an account write's, and the subaccount
/// it acts in (contract version 5).
macro_rules! trading_write_fields {
    ($($field:expr),* $(,)?) => {
        account_write_fields![$($field,)* $crate::api::operations::SUBACCOUNT.field]
    };
}

/// An order's terms (its pair first), then `$more`: `addOrder` and a batch's orders.
macro_rules! order_fields {
    ($($more:expr),* $(,)?) => {
        &[
            $crate::api::operations::ORDER_PAIR.field,
            $crate::api::operations::ORDER_TYPE.field,
            $crate::api::operations::DIRECTION.field,
            $crate::api::operations::LIMIT_PRICE.field,
            $crate::api::operations::AMOUNT.field,
            $crate::api::operations::TIME_IN_FORCE.field,
            $crate::api::operations::POST_ONLY.field,
            $crate::api::operations::CLIENT_ORDER_ID.field,
            $crate::api::operations::TRIGGER_PRICE.field,
            $crate::api::operations::TRIGGER_CONDITION.field,
            $crate::api::operations::OCO_GROUP.field,
            $crate::api::operations::EXPIRES_AT.field,
            $($more,)*
        ]
    };
}

mod audit;
mod field;
mod liabilities;
mod market_history;
mod order_terms;
mod subaccounts;
mod trading;
mod twaps;

use dexd_core::CandleInterval;
use dexd_store::MAX_PAGE_LIMIT;

pub(crate) use self::field::{
    address, agent_name, asset, chain_id, choice, count, cursor, decimal, expires_at, flag, group_name, items, label,
    milliseconds, order_id, pair, private_key, signature, subaccount, switch_timeout, transfer_id, uint256,
    whole_number,
};
pub use self::field::{Field, ItemList, Kind, Typed, WireWord};

pub(crate) use self::order_terms::*;

pub use self::audit::{AUDIT_JOURNAL, AUDIT_JOURNAL_LINES, AUDIT_ROOTS, MAX_AUDIT_ROOTS_PAGE};
pub(crate) use self::audit::{JOURNAL_FROM, JOURNAL_LIMIT, JOURNAL_SEGMENT, ROOTS_FROM, ROOTS_LIMIT};
pub use self::liabilities::{CUSTODY, LIABILITY_LEAF_LINES, LIABILITY_LEAVES, LIABILITY_PROOF, LIABILITY_ROOTS};
pub(crate) use self::liabilities::{LEAVES_EPOCH, PROOF_EPOCH};
pub use self::market_history::{TRADES_CSV, TRADE_CSV_ROWS};
pub(crate) use self::subaccounts::{CLIENT_TRANSFER_ID, FROM_SUBACCOUNT, TO_SUBACCOUNT};
pub use self::subaccounts::{SUBACCOUNTS, SUBACCOUNT_TRANSFER, SUBACCOUNT_TRANSFERS};
pub use self::trading::{
    AGENTS, AMEND_ORDER, APPROVE_AGENT, BATCH_CANCEL, BATCH_CANCEL_ITEM_FIELDS, BATCH_ORDERS, BATCH_ORDER_ITEM_FIELDS,
    CANCEL_ALL, CANCEL_ALL_AFTER, MAX_BATCH_ITEMS, REVOKE_AGENT,
};
pub(crate) use self::trading::{
    AGENT_NAME, AGENT_VALID_UNTIL, AMENDED_AMOUNT, AMENDED_ORDER_ID, AMENDED_PRICE, APPROVED_AGENT, BATCH_CANCEL_ITEMS,
    BATCH_ORDER_ITEMS, CANCEL_ALL_PAIR, REVOKED_AGENT, SWITCH_TIMEOUT,
};
pub use self::twaps::{ADD_TWAP, CANCEL_TWAP, TWAPS};
pub(crate) use self::twaps::{CLIENT_TWAP_ID, TWAP_DURATION, TWAP_ID, TWAP_INTERVAL, TWAP_LIMIT_PRICE};

/// One operation of the contract.
#[derive(Debug, Clone, Copy)]
pub struct Operation {
    /// A stable identifier that reads as a method name, used as the OpenAPI `operationId`.
    pub id: &'static str,
    /// Its group.
    pub tag: Tag,
    /// POST (body) or GET (query string).
    pub is_post: bool,
    /// Its paths, the contract's first.
    pub paths: &'static [&'static str],
    /// One line on what it does.
    pub summary: &'static str,
    /// Its parameters.
    pub fields: &'static [Field],
    /// The name of its 200 body's schema.
    pub response_schema: &'static str,
    /// The error statuses it may answer, besides 500.
    pub error_statuses: &'static [u16],
}

pub(crate) const CHAIN_ID: Typed<u64> = chain_id("The chain, as decimal digits (\"1\").");
pub(crate) const PRIVATE_KEY: Typed<dexd_crypto::PrivateKey> = private_key(
    "The account's secp256k1 secret key, 0x + 64 hex digits; the venue signs with it for this request only and \
     never stores or logs it. Required unless the request carries account, nonce, expiry and signature instead.",
);
pub(crate) const SIGNER: Typed<dexd_core::Address> = address(
    "account",
    false,
    "The account the request acts for, 0x + 40 hex digits. Signed requests: the signing account (for deposit and \
     withdraw it defaults to from); a signature by an agent the account approved acts for it. With privateKey: \
     left out, the key's own account; another account, the key acts as that account's agent (orders only: \
     AGENT_NOT_ALLOWED for funds and agents).",
);
pub(crate) const NONCE: Typed<[u8; 32]> = uint256(
    "nonce",
    "Signed requests: any uint256 in decimal digits, used once per account while the request is live.",
);
pub(crate) const EXPIRY: Typed<u64> = milliseconds(
    "expiry",
    false,
    "Signed requests: ms since the epoch after which the signature is void; at most one hour ahead.",
);
pub(crate) const SIGNATURE: Typed<[u8; 65]> = signature(
    "signature",
    "Signed requests: the account's EIP-712 signature (0x + 130 hex, r ‖ s ‖ v) over the request's typed data \
     (GET /account/eip712).",
);
/// The parameters of a client-signed request, besides the operation's own.
pub const SIGNED_REQUEST_FIELDS: [&str; 4] = [
    SIGNER.field.name,
    NONCE.field.name,
    EXPIRY.field.name,
    SIGNATURE.field.name,
];

/// The subaccount an order operation or an account read is about (contract version 5).
pub(crate) const SUBACCOUNT: Typed<u32> = subaccount(
    "subaccount",
    false,
    "The subaccount, 0 (the account itself, the default) to 1000: with privateKey, the account's (or, for \
     an agent's key, the named account's) subaccount of this number acts, at its own address \
     (GET /account/subaccounts); reads show that subaccount. Signed requests name the subaccount's address \
     in account instead and leave this out.",
);

pub(crate) const ACCOUNT: Typed<dexd_core::Address> = address(
    "account",
    true,
    "The account, 0x + 40 hex digits (EIP-55 checksum if mixed case).",
);
pub(crate) const PAIR: Typed<dexd_core::PairIndex> = pair("pair", true, "The pair, BASE/QUOTE, case-insensitive.");
pub(crate) const SYMBOL_FILTER: Typed<dexd_core::PairIndex> = pair("symbol", false, "Only orders on this pair.");
pub(crate) const LIMIT: Typed<usize> = count(
    "limit",
    MAX_PAGE_LIMIT as u64,
    DEFAULT_PAGE_LIMIT,
    "Records per page: 1 to 1000, default 100.",
);
pub(crate) const CURSOR: Typed<u64> = cursor("The nextCursor of the previous page (opaque; digits today).");
pub(crate) const START_TIME: Typed<u64> = milliseconds(
    "startTime",
    false,
    "Only records at or after this time (ms, inclusive).",
);
pub(crate) const END_TIME: Typed<u64> =
    milliseconds("endTime", false, "Only records at or before this time (ms, inclusive).");
pub(crate) const FROM: Typed<dexd_core::Address> =
    address("from", true, "The account; must be the address of privateKey.");
pub(crate) const ASSET: Typed<dexd_core::AssetIndex> = asset("symbol", "The asset symbol, case-insensitive.");
pub(crate) const QUANTITY: Typed<dexd_core::Decimal> = decimal(
    "quantity",
    true,
    "How much, as a decimal string; positive, at most the asset's decimals.",
);
/// An order's pair when it is named to find the order.
pub(crate) const ORDER_OF_PAIR: Typed<dexd_core::PairIndex> = pair("symbol", true, "The order's pair.");
/// An order, by its id.
pub(crate) const ORDER_ID: Typed<dexd_core::OrderId> = order_id("orderId", "The order id.");
/// A book page's depth.
pub(crate) const BOOK_DEPTH: Typed<usize> = count(
    "depth",
    MAX_BOOK_DEPTH as u64,
    DEFAULT_BOOK_DEPTH,
    "Levels: 1 to 1000, default 50.",
);
/// A candle's length.
pub(crate) const CANDLE_INTERVAL: Typed<CandleInterval> = choice("interval", false, "Candle length, default 1m.");
/// How many candles.
pub(crate) const CANDLE_LIMIT: Typed<usize> = count(
    "limit",
    MAX_CANDLE_LIMIT as u64,
    DEFAULT_CANDLE_LIMIT,
    "Candles: 1 to 1000, default 500.",
);
/// The start of a market history's range (contract version 5): `startTime`'s other name.
pub(crate) const HISTORY_FROM: Typed<u64> = milliseconds(
    "from",
    false,
    "Only records at or after this time (ms, inclusive); startTime's other name (given both, the later counts). \
     On /order/tradesOHCL it pages \
     forward: the first limit candles from here, oldest first, with nextCursor while more remain.",
);
/// The end of a market history's range: `endTime`'s other name.
pub(crate) const HISTORY_TO: Typed<u64> = milliseconds(
    "to",
    false,
    "Only records at or before this time (ms, inclusive); endTime's other name (given both, the earlier counts).",
);
/// A candle page's cursor.
pub(crate) const CANDLE_CURSOR: Typed<u64> =
    cursor("The nextCursor of the previous page: the opening time of the next candle (paging forward, oldest first).");

/// Only an account's trades on this pair.
pub(crate) const TRADE_PAIR_FILTER: Typed<dexd_core::PairIndex> = pair("pair", false, "Only trades on this pair.");

/// The deepest book page.
pub const MAX_BOOK_DEPTH: usize = 1_000;
/// A book page's depth when none is asked.
pub const DEFAULT_BOOK_DEPTH: u64 = 50;
/// A page's length when none is asked.
pub const DEFAULT_PAGE_LIMIT: u64 = 100;
/// A candle list's length when none is asked.
pub const DEFAULT_CANDLE_LIMIT: u64 = 500;
/// The longest candle list.
pub const MAX_CANDLE_LIMIT: usize = 1_000;

pub(crate) const ADD_ORDER_FIELDS: &[Field] = order_fields![
    CHAIN_ID.field,
    PRIVATE_KEY.field,
    SIGNER.field,
    NONCE.field,
    EXPIRY.field,
    SIGNATURE.field,
    SUBACCOUNT.field
];

pub(crate) const CANCEL_ORDER_FIELDS: &[Field] = trading_write_fields![ORDER_OF_PAIR.field, ORDER_ID.field];

/// A page of a list: its length, where it starts and the time range.
macro_rules! page_fields {
    ($($field:expr),* $(,)?) => {
        &[$($field,)* LIMIT.field, CURSOR.field, START_TIME.field, END_TIME.field]
    };
}

const ORDER_LIST_FIELDS: &[Field] = page_fields![CHAIN_ID.field, ACCOUNT.field, SUBACCOUNT.field, SYMBOL_FILTER.field];
const BOOK_FIELDS: &[Field] = &[CHAIN_ID.field, PAIR.field, BOOK_DEPTH.field];
const OHLC_FIELDS: &[Field] = &[
    CHAIN_ID.field,
    PAIR.field,
    CANDLE_INTERVAL.field,
    START_TIME.field,
    END_TIME.field,
    CANDLE_LIMIT.field,
    HISTORY_FROM.field,
    HISTORY_TO.field,
    CANDLE_CURSOR.field,
];
const TRADE_HISTORY_FIELDS: &[Field] = page_fields![CHAIN_ID.field, PAIR.field, HISTORY_FROM.field, HISTORY_TO.field];
const ACCOUNT_TRADE_FIELDS: &[Field] =
    page_fields![CHAIN_ID.field, ACCOUNT.field, SUBACCOUNT.field, TRADE_PAIR_FILTER.field];
const POSITION_FIELDS: &[Field] = &[CHAIN_ID.field, PAIR.field, ACCOUNT.field, SUBACCOUNT.field];
const TRANSFER_FIELDS: &[Field] = &[
    FROM.field,
    ASSET.field,
    QUANTITY.field,
    PRIVATE_KEY.field,
    CHAIN_ID.field,
    SIGNER.field,
    NONCE.field,
    EXPIRY.field,
    SIGNATURE.field,
];
const TRANSFER_HISTORY_FIELDS: &[Field] = page_fields![CHAIN_ID.field, ACCOUNT.field, SUBACCOUNT.field];
const CHAIN_FIELDS: &[Field] = &[CHAIN_ID.field];
/// An account read's: the account and, optionally, which of its subaccounts.
pub(crate) const ACCOUNT_READ_FIELDS: &[Field] = &[CHAIN_ID.field, ACCOUNT.field, SUBACCOUNT.field];
const ORDER_DETAIL_FIELDS: &[Field] = &[CHAIN_ID.field, ORDER_ID.field];

pub(crate) const WRITE_ERRORS: &[u16] = &[400, 401, 403, 404, 409, 413, 415, 422, 429, 502, 503, 504];
/// A read's errors; 503 when the history cannot catch up in time, or a position named with
/// `X-Dexd-Min-Sequence` is not reached.
pub(crate) const READ_ERRORS: &[u16] = &[400, 404, 503];

/// Add order.
pub const ADD_ORDER: Operation = Operation {
    id: "addOrder",
    tag: Tag::Order,
    is_post: true,
    paths: &["/order/addOrder", "/order/add"],
    summary: "Place an order; it is signed as EIP-712 typed data with the account's key.",
    fields: ADD_ORDER_FIELDS,
    response_schema: "AddOrderResponse",
    error_statuses: WRITE_ERRORS,
};
/// Cancel order.
pub const CANCEL_ORDER: Operation = Operation {
    id: "cancelOrder",
    tag: Tag::Order,
    is_post: true,
    paths: &["/order/cancelOrder", "/order/cancel"],
    summary: "Cancel an open order of the key's account.",
    fields: CANCEL_ORDER_FIELDS,
    response_schema: "OrderResponse",
    error_statuses: WRITE_ERRORS,
};
/// Open orders.
pub const OPEN_ORDERS: Operation = Operation {
    id: "getOpenOrders",
    tag: Tag::Order,
    is_post: false,
    paths: &["/order/openOrders"],
    summary: "An account's open orders (partly filled included), newest first.",
    fields: ORDER_LIST_FIELDS,
    response_schema: "OrderListResponse",
    error_statuses: READ_ERRORS,
};
/// Filled orders.
pub const FILLED_ORDERS: Operation = Operation {
    id: "getFilledOrders",
    tag: Tag::Order,
    is_post: false,
    paths: &["/order/filledOrders"],
    summary: "An account's completely filled orders, newest first.",
    fields: ORDER_LIST_FIELDS,
    response_schema: "OrderListResponse",
    error_statuses: READ_ERRORS,
};
/// Cancelled orders.
pub const CANCELLED_ORDERS: Operation = Operation {
    id: "getCancelledOrders",
    tag: Tag::Order,
    is_post: false,
    paths: &["/order/cancelledOrders"],
    summary: "An account's cancelled orders (partly filled included), newest first.",
    fields: ORDER_LIST_FIELDS,
    response_schema: "OrderListResponse",
    error_statuses: READ_ERRORS,
};
/// Buy side of the book.
pub const BUY_BOOK: Operation = Operation {
    id: "getBuyOrderBook",
    tag: Tag::Order,
    is_post: false,
    paths: &["/order/buyOrderbooks"],
    summary: "The bid levels of a pair, best price first.",
    fields: BOOK_FIELDS,
    response_schema: "OrderBookResponse",
    error_statuses: READ_ERRORS,
};
/// Sell side of the book.
pub const SELL_BOOK: Operation = Operation {
    id: "getSellOrderBook",
    tag: Tag::Order,
    is_post: false,
    paths: &["/order/sellOrderbooks"],
    summary: "The ask levels of a pair, best price first.",
    fields: BOOK_FIELDS,
    response_schema: "OrderBookResponse",
    error_statuses: READ_ERRORS,
};
/// OHLC candles.
pub const OHLC: Operation = Operation {
    id: "getCandles",
    tag: Tag::Order,
    is_post: false,
    paths: &["/order/tradesOHCL", "/order/tradeOHCL"],
    summary: "OHLC candles of a pair from its first trade, oldest first; periods without trades are left out. The \
              newest limit in the range, or with from (or cursor) the first limit from there, with nextCursor.",
    fields: OHLC_FIELDS,
    response_schema: "CandleResponse",
    error_statuses: READ_ERRORS,
};
/// Trade history.
pub const TRADE_HISTORY: Operation = Operation {
    id: "getTradeHistory",
    tag: Tag::Order,
    is_post: false,
    paths: &["/order/tradeHistories"],
    summary:
        "A pair's trades, newest first, its whole history by time range (from/to or startTime/endTime) and cursor.",
    fields: TRADE_HISTORY_FIELDS,
    response_schema: "TradeListResponse",
    error_statuses: READ_ERRORS,
};
/// Account trades (extension).
pub const ACCOUNT_TRADES: Operation = Operation {
    id: "getAccountTrades",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/order/accountTrades"],
    summary: "An account's own fills (maker or taker) with order id, role and fee, newest first.",
    fields: ACCOUNT_TRADE_FIELDS,
    response_schema: "AccountTradeListResponse",
    error_statuses: READ_ERRORS,
};
/// Open positions.
pub const OPEN_POSITIONS: Operation = Operation {
    id: "getOpenPosition",
    tag: Tag::Order,
    is_post: false,
    paths: &["/order/openPositions"],
    summary: "An account's average-cost position and open orders on a pair.",
    fields: POSITION_FIELDS,
    response_schema: "PositionResponse",
    error_statuses: READ_ERRORS,
};
/// Deposit.
pub const DEPOSIT: Operation = Operation {
    id: "deposit",
    tag: Tag::Portfolio,
    is_post: true,
    paths: &["/portfolio/deposit"],
    summary: "Credit the key's account; confirmed at once in the built-in ledger mode.",
    fields: TRANSFER_FIELDS,
    response_schema: "DepositResponse",
    error_statuses: WRITE_ERRORS,
};
/// Withdraw.
pub const WITHDRAW: Operation = Operation {
    id: "withdraw",
    tag: Tag::Portfolio,
    is_post: true,
    paths: &["/portfolio/withdraw"],
    summary: "Debit the key's account's available balance.",
    fields: TRANSFER_FIELDS,
    response_schema: "WithdrawResponse",
    error_statuses: WRITE_ERRORS,
};
/// Deposit history.
pub const DEPOSIT_HISTORY: Operation = Operation {
    id: "getDepositHistory",
    tag: Tag::Portfolio,
    is_post: false,
    paths: &["/portfolio/depositHistories"],
    summary: "An account's deposits, newest first.",
    fields: TRANSFER_HISTORY_FIELDS,
    response_schema: "DepositListResponse",
    error_statuses: READ_ERRORS,
};
/// Withdraw history.
pub const WITHDRAW_HISTORY: Operation = Operation {
    id: "getWithdrawalHistory",
    tag: Tag::Portfolio,
    is_post: false,
    paths: &["/portfolio/withdrawHistories"],
    summary: "An account's withdrawals, newest first.",
    fields: TRANSFER_HISTORY_FIELDS,
    response_schema: "WithdrawalListResponse",
    error_statuses: READ_ERRORS,
};
/// Assets info.
pub const ASSETS_INFO: Operation = Operation {
    id: "getAssets",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/assetsInfo"],
    summary: "The chain's assets.",
    fields: CHAIN_FIELDS,
    response_schema: "AssetsResponse",
    error_statuses: READ_ERRORS,
};
/// Asset balances.
pub const ASSET_BALANCES: Operation = Operation {
    id: "getBalances",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/assetBalances"],
    summary: "An account's balance in every asset of the chain, zeros included.",
    fields: ACCOUNT_READ_FIELDS,
    response_schema: "BalancesResponse",
    error_statuses: READ_ERRORS,
};
/// Tradable pairs.
pub const ASSET_PAIRS: Operation = Operation {
    id: "getPairs",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/assetPairs"],
    summary: "The chain's pairs and their rules.",
    fields: CHAIN_FIELDS,
    response_schema: "PairsResponse",
    error_statuses: READ_ERRORS,
};
/// Tradable amounts.
pub const TRADABLE_AMOUNTS: Operation = Operation {
    id: "getTradableAmounts",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/tradableAmounts"],
    summary: "What an account can buy and sell on each pair now.",
    fields: ACCOUNT_READ_FIELDS,
    response_schema: "TradableResponse",
    error_statuses: READ_ERRORS,
};
/// An account's rate limits and open orders (the contract's trading extensions).
pub const RATE_LIMITS: Operation = Operation {
    id: "getRateLimits",
    tag: Tag::Account,
    is_post: false,
    paths: &["/account/rateLimits"],
    summary: "The account's write budget (state changes per second, how many are spent, when it is full again) and its open orders against the limit.",
    fields: ACCOUNT_READ_FIELDS,
    response_schema: "RateLimitsResponse",
    error_statuses: READ_ERRORS,
};
/// Order detail (extension).
pub const ORDER_DETAIL: Operation = Operation {
    id: "getOrderDetail",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/order/orderDetail"],
    summary: "An order with the EIP-712 typed data its signature covers.",
    fields: ORDER_DETAIL_FIELDS,
    response_schema: "OrderDetailResponse",
    error_statuses: READ_ERRORS,
};
/// The EIP-712 domain and types of signed requests (extension).
pub const EIP712_TYPES: Operation = Operation {
    id: "getEip712Types",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/account/eip712"],
    summary: "The EIP-712 domain and types a client signs requests with instead of sending privateKey.",
    fields: CHAIN_FIELDS,
    response_schema: "Eip712Response",
    error_statuses: READ_ERRORS,
};
/// Reserves (extension).
pub const RESERVES: Operation = Operation {
    id: "getReserves",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/account/reserves"],
    summary: "Per asset, what the chain's vault holds on chain against what the venue owes (ledger chains: owed only).",
    fields: CHAIN_FIELDS,
    response_schema: "ReservesResponse",
    error_statuses: &[400, 404, 502, 503],
};
/// Health (extension).
pub const HEALTH: Operation = Operation {
    id: "getHealth",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/health"],
    summary: "Whether the service is up.",
    fields: &[],
    response_schema: "HealthResponse",
    error_statuses: &[],
};
/// Readiness (extension): 200 once every chain has started, 503 before.
pub const READY: Operation = Operation {
    id: "getReadiness",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/ready"],
    summary: "Whether every chain has finished its start (journal replay); 503 until then.",
    fields: &[],
    response_schema: "ReadyResponse",
    error_statuses: &[503],
};
/// The OpenAPI document (extension).
pub const OPENAPI: Operation = Operation {
    id: "getOpenApiDocument",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/openapi.json"],
    summary: "This OpenAPI 3.1 document.",
    fields: &[],
    response_schema: "OpenApiDocument",
    error_statuses: &[],
};

/// The venue's chains (extension): what a client (the trading page) can pick from.
pub const CHAINS: Operation = Operation {
    id: "getChains",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/chains"],
    summary: "The venue's chains: id, name and custody mode.",
    fields: &[],
    response_schema: "ChainsResponse",
    error_statuses: &[],
};

/// The cluster (contract version 3): the nodes and who leads each chain.
pub const CLUSTER: Operation = Operation {
    id: "getCluster",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/cluster"],
    summary: "The cluster's nodes and, per chain, its leader, epoch, journal position and this node's position.",
    fields: &[],
    response_schema: "ClusterResponse",
    error_statuses: &[503],
};

/// Every operation.
pub const ALL: &[Operation] = &[
    ADD_ORDER,
    CANCEL_ORDER,
    BATCH_ORDERS,
    BATCH_CANCEL,
    CANCEL_ALL,
    AMEND_ORDER,
    CANCEL_ALL_AFTER,
    APPROVE_AGENT,
    REVOKE_AGENT,
    AGENTS,
    SUBACCOUNT_TRANSFER,
    SUBACCOUNT_TRANSFERS,
    SUBACCOUNTS,
    ADD_TWAP,
    CANCEL_TWAP,
    TWAPS,
    OPEN_ORDERS,
    FILLED_ORDERS,
    CANCELLED_ORDERS,
    BUY_BOOK,
    SELL_BOOK,
    OHLC,
    TRADE_HISTORY,
    TRADES_CSV,
    ACCOUNT_TRADES,
    OPEN_POSITIONS,
    DEPOSIT,
    WITHDRAW,
    DEPOSIT_HISTORY,
    WITHDRAW_HISTORY,
    ASSETS_INFO,
    ASSET_BALANCES,
    ASSET_PAIRS,
    TRADABLE_AMOUNTS,
    RATE_LIMITS,
    ORDER_DETAIL,
    EIP712_TYPES,
    RESERVES,
    LIABILITY_PROOF,
    LIABILITY_ROOTS,
    LIABILITY_LEAVES,
    CUSTODY,
    AUDIT_JOURNAL,
    AUDIT_ROOTS,
    HEALTH,
    READY,
    OPENAPI,
    CHAINS,
    CLUSTER,
];
