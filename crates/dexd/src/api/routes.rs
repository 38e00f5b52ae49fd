//! Which function answers each operation of the table: the router is built from [`ROUTES`], so
//! an operation is routed, checked for unknown parameters and documented from one entry.
//!
//! It holds no logic: the handlers answer, [`super::router()`] reads the body or the query and
//! checks the parameters against the operation before calling them.

use std::future::Future;
use std::pin::Pin;
use std::sync::Arc;

use axum::response::{IntoResponse, Response};
use axum::Json;

use super::error::ApiError;
use super::operations::{self, Operation};
use super::params::Params;
use super::state::AppState;
use super::{handlers, observability, openapi};

/// A handler's answer, already turned into a response.
pub type Answered = Pin<Box<dyn Future<Output = Result<Response, ApiError>> + Send>>;

/// The function that answers an operation.
pub type Handler = fn(Arc<AppState>, Params) -> Answered;

/// A handler function as a [`Handler`]: its answer is serialized as the JSON body.
macro_rules! answered_by {
    ($function:expr) => {
        |app, params| Box::pin(async move { $function(app, params).await.map(|answer| Json(answer).into_response()) })
    };
}

/// Every operation of [`operations::ALL`] with the function that answers it.
pub const ROUTES: &[(&Operation, Handler)] = &[
    (&operations::ADD_ORDER, answered_by!(handlers::add_order)),
    (&operations::CANCEL_ORDER, answered_by!(handlers::cancel_order)),
    (&operations::BATCH_ORDERS, answered_by!(handlers::batch_orders)),
    (&operations::BATCH_CANCEL, answered_by!(handlers::batch_cancel)),
    (&operations::CANCEL_ALL, answered_by!(handlers::cancel_all)),
    (&operations::AMEND_ORDER, answered_by!(handlers::amend_order)),
    (&operations::CANCEL_ALL_AFTER, answered_by!(handlers::cancel_all_after)),
    (&operations::APPROVE_AGENT, answered_by!(handlers::approve_agent)),
    (&operations::REVOKE_AGENT, answered_by!(handlers::revoke_agent)),
    (&operations::AGENTS, answered_by!(handlers::agents)),
    (
        &operations::SUBACCOUNT_TRANSFER,
        answered_by!(handlers::subaccount_transfer),
    ),
    (
        &operations::SUBACCOUNT_TRANSFERS,
        answered_by!(handlers::subaccount_transfers),
    ),
    (&operations::SUBACCOUNTS, answered_by!(handlers::subaccounts)),
    (&operations::ADD_TWAP, answered_by!(handlers::twaps::add_twap)),
    (&operations::CANCEL_TWAP, answered_by!(handlers::twaps::cancel_twap)),
    (&operations::TWAPS, answered_by!(handlers::twaps::twaps)),
    (&operations::DEPOSIT, answered_by!(handlers::deposit)),
    (&operations::WITHDRAW, answered_by!(handlers::withdraw)),
    (&operations::OPEN_ORDERS, answered_by!(handlers::open_orders)),
    (&operations::FILLED_ORDERS, answered_by!(handlers::filled_orders)),
    (&operations::CANCELLED_ORDERS, answered_by!(handlers::cancelled_orders)),
    (&operations::BUY_BOOK, answered_by!(handlers::buy_order_book)),
    (&operations::SELL_BOOK, answered_by!(handlers::sell_order_book)),
    (&operations::OHLC, answered_by!(handlers::candles)),
    (&operations::TRADE_HISTORY, answered_by!(handlers::trade_history)),
    (&operations::ACCOUNT_TRADES, answered_by!(handlers::account_trades)),
    (&operations::OPEN_POSITIONS, answered_by!(handlers::open_positions)),
    (&operations::DEPOSIT_HISTORY, answered_by!(handlers::deposit_history)),
    (&operations::WITHDRAW_HISTORY, answered_by!(handlers::withdraw_history)),
    (&operations::ASSETS_INFO, answered_by!(handlers::assets_info)),
    (&operations::ASSET_BALANCES, answered_by!(handlers::asset_balances)),
    (&operations::ASSET_PAIRS, answered_by!(handlers::asset_pairs)),
    (&operations::TRADABLE_AMOUNTS, answered_by!(handlers::tradable_amounts)),
    (&operations::ORDER_DETAIL, answered_by!(handlers::order_detail)),
    (&operations::EIP712_TYPES, answered_by!(handlers::eip712_types)),
    (&operations::RESERVES, answered_by!(handlers::reserves)),
    (&operations::LIABILITY_PROOF, answered_by!(handlers::liability_proof)),
    (&operations::CUSTODY, answered_by!(handlers::custody)),
    (&operations::LIABILITY_ROOTS, answered_by!(handlers::liability_roots)),
    (&operations::TRADES_CSV, |app, params| {
        Box::pin(handlers::market_history::trades_csv(app, params))
    }),
    (&operations::LIABILITY_LEAVES, |app, params| {
        Box::pin(handlers::liability_leaves(app, params))
    }),
    (&operations::AUDIT_JOURNAL, |app, params| {
        Box::pin(handlers::audit_journal(app, params))
    }),
    (&operations::AUDIT_ROOTS, answered_by!(handlers::audit_roots)),
    (&operations::RATE_LIMITS, answered_by!(handlers::rate_limits)),
    (&operations::HEALTH, answered_by!(handlers::health)),
    (&operations::OPENAPI, answered_by!(openapi_document)),
    (&operations::READY, answered_by!(ready)),
    (&operations::CHAINS, answered_by!(handlers::chains)),
    (&operations::CLUSTER, answered_by!(handlers::cluster)),
];

async fn openapi_document(app: Arc<AppState>, _params: Params) -> Result<serde_json::Value, ApiError> {
    Ok(openapi::document(&app.venue.config))
}

async fn ready(app: Arc<AppState>, _params: Params) -> Result<serde_json::Value, ApiError> {
    Ok(observability::ready(&app))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_operation_of_the_table_has_exactly_one_route() {
        for operation in operations::ALL {
            let routes = ROUTES.iter().filter(|(routed, _)| routed.id == operation.id).count();
            assert_eq!(routes, 1, "operation {} has {routes} routes", operation.id);
        }
        assert_eq!(ROUTES.len(), operations::ALL.len());
    }
}
