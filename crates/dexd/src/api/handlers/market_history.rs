//! The market's whole history (contract version 5): a pair's trades paged by time and cursor
//! (`/order/tradeHistories`), its candles of any interval from the first trade
//! (`/order/tradesOHCL`, folded from the history's kept candles), and every trade of a range as
//! CSV (`/market/trades.csv`), streamed a chunk at a time. Everything is read from the chain's
//! history once it holds what was acknowledged before the request; nothing here writes.

use std::sync::Arc;

use axum::body::Body;
use axum::http::header::{CONTENT_DISPOSITION, CONTENT_TYPE};
use axum::response::{IntoResponse, Response};
use dexd_core::CandleInterval;
use futures_util::StreamExt;
use serde_json::{json, Value};

use super::{history, store_error, Answer};
use crate::api::error::ApiError;
use crate::api::operations::{CANDLE_CURSOR, CANDLE_INTERVAL, CANDLE_LIMIT, HISTORY_FROM, PAIR};
use crate::api::params::Params;
use crate::api::render;
use crate::api::state::AppState;

/// Trades read and written to the CSV at a time: one read of the history, about 1.5 MB.
pub const CSV_TRADES_PER_CHUNK: usize = 10_000;

/// GET /order/tradesOHCL
pub async fn candles(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let markets = chain.markets();
    let pair_index = params.require_pair(&chain, &PAIR)?;
    let interval = params.read(&CANDLE_INTERVAL)?.unwrap_or(CandleInterval::OneMinute);
    let (start_ms, end_ms) = params.history_range()?;
    let limit = params.count(&CANDLE_LIMIT)?;
    // Paging forward from `from`, or from the cursor; else the newest in the range.
    let forward_from = params.read(&CANDLE_CURSOR)?.or(params.read(&HISTORY_FROM)?);
    let query = dexd_store::CandleQuery {
        start_ms,
        end_ms,
        limit,
        forward_from,
    };
    let page = history(&chain)
        .await?
        .candles(pair_index, interval, query)
        .map_err(store_error)?;
    let pair = markets.config.pair_config(pair_index);
    let candles: Vec<Value> = page
        .candles
        .iter()
        .map(|candle| render::candle(&markets.config, pair_index, candle))
        .collect();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "symbol": pair.symbol,
        "interval": interval.wire_name(),
        "candles": candles,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /order/tradeHistories
pub async fn trade_history(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let markets = chain.markets();
    let pair_index = params.require_pair(&chain, &PAIR)?;
    let (start_ms, end_ms) = params.history_range()?;
    let request = dexd_store::PageRequest {
        start_ms,
        end_ms,
        ..params.page()?
    };
    let page = history(&chain)
        .await?
        .trades(pair_index, request)
        .map_err(store_error)?;
    let trades: Vec<render::TradeObject> = page
        .items
        .iter()
        .map(|trade| render::trade(&markets.config, trade))
        .collect();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "symbol": markets.config.pair_config(pair_index).symbol,
        "trades": trades,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /market/trades.csv: every trade of a pair within `[from, to]`, oldest first, as CSV
/// (`tradeId,timestamp,price,amount,cost,takerDirection,makerOrderId,takerOrderId`), read
/// [`CSV_TRADES_PER_CHUNK`] at a time off the runtime and only as the client takes them, so a
/// range of any length is never held in memory.
pub async fn trades_csv(app: Arc<AppState>, params: Params) -> Result<Response, ApiError> {
    let chain = params.chain(&app.venue)?;
    let markets = chain.markets();
    let pair = params.require_pair(&chain, &PAIR)?;
    let (start_ms, end_ms) = params.history_range()?;
    // Waits once for the history to hold what was acknowledged before the request.
    history(&chain).await?;
    let header = "tradeId,timestamp,price,amount,cost,takerDirection,makerOrderId,takerOrderId\n";
    let chunks = futures_util::stream::unfold(Some(0u64), move |after| {
        let chain = Arc::clone(&chain);
        let markets = Arc::clone(&markets);
        async move {
            let after = after?;
            let read = tokio::task::spawn_blocking(move || {
                let trades = chain
                    .history_now()
                    .trades_from(pair, (start_ms, end_ms), after, CSV_TRADES_PER_CHUNK)
                    .map_err(|error| std::io::Error::other(error.to_string()))?;
                let mut text = String::with_capacity(trades.len() * 160);
                for trade in &trades {
                    let row = render::trade(&markets.config, trade);
                    text.push_str(&row.csv_line());
                }
                let next = (trades.len() == CSV_TRADES_PER_CHUNK).then(|| trades.last().map(|trade| trade.trade_id));
                Ok::<_, std::io::Error>((text, next.flatten()))
            })
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other("the trades' reader failed")));
            match read {
                Ok((text, next)) => Some((Ok(text), next)),
                Err(error) => Some((Err(error), None)),
            }
        }
    });
    let body = futures_util::stream::once(async move { Ok::<_, std::io::Error>(header.to_string()) }).chain(chunks);
    Ok((
        [
            (CONTENT_TYPE, "text/csv; charset=utf-8"),
            (CONTENT_DISPOSITION, "attachment; filename=\"trades.csv\""),
        ],
        Body::from_stream(body),
    )
        .into_response())
}
