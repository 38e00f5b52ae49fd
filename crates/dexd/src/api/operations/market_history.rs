//! The market history's own row of the table (contract version 5): every trade of a range as
//! CSV. The time range and cursor fields `/order/tradeHistories` and `/order/tradesOHCL` take
//! are `super`'s (`HISTORY_FROM`, `HISTORY_TO`, `CANDLE_CURSOR`). No behaviour.

use super::{Field, Operation, Tag, CHAIN_ID, HISTORY_FROM, HISTORY_TO, PAIR, READ_ERRORS};

/// The name of the CSV answer's rows, which the OpenAPI document describes as `text/csv`.
pub const TRADE_CSV_ROWS: &str = "TradeCsvRow";

const TRADES_CSV_FIELDS: &[Field] = &[CHAIN_ID.field, PAIR.field, HISTORY_FROM.field, HISTORY_TO.field];

/// Every trade of a pair within a time range, as CSV.
pub const TRADES_CSV: Operation = Operation {
    id: "getTradesCsv",
    tag: Tag::Extensions,
    is_post: false,
    paths: &["/market/trades.csv"],
    summary: "Every trade of a pair within [from, to] (ms, inclusive; the whole history when left out), oldest \
              first, as CSV: tradeId,timestamp,price,amount,cost,takerDirection,makerOrderId,takerOrderId.",
    fields: TRADES_CSV_FIELDS,
    response_schema: TRADE_CSV_ROWS,
    error_statuses: READ_ERRORS,
};
