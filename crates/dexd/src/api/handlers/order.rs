//! The order group (`/order/...`): placing and cancelling orders, the account's order lists,
//! the books, candles, trades and positions of a pair, and the order detail extension.

use std::sync::Arc;

use axum::http::StatusCode;
use dexd_core::{
    Address, Command, Decimal, Direction, Event, NewOrder, OrderConditions, OrderId, OrderStatus, OrderType, PairIndex,
    TimeInForce, Trigger, TriggerCondition,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{account_write, history, signing_domain, spend_write_budget, store_error, write_error, Answer};
use crate::api::credential::Credential;
use crate::api::error::ApiError;
use crate::api::operations::{
    AMOUNT, BOOK_DEPTH, CLIENT_ORDER_ID, DIRECTION, EXPIRES_AT, LIMIT_PRICE, OCO_GROUP, ORDER_ID, ORDER_OF_PAIR,
    ORDER_PAIR, ORDER_TYPE, PAIR, POST_ONLY, SYMBOL_FILTER, TIME_IN_FORCE, TRADE_PAIR_FILTER, TRIGGER_CONDITION,
    TRIGGER_PRICE,
};
use crate::api::params::Params;
use crate::api::render;
use crate::api::state::AppState;
use dexd_crypto::checksummed;
use dexd_store::StoredOrder;
use dexd_store::{now_ms, WriteError};

use dexd_venue::markets::Markets;
use dexd_venue::Chain;

/// POST /order/addOrder
pub async fn add_order(app: Arc<AppState>, params: Params) -> Result<Box<RawValue>, ApiError> {
    let (chain, credential, actor) = account_write(&app, &params)?;
    let terms = order_terms(&chain, &params, actor.account)?;
    // A key proves the account at once, so its budget is spent before the signing; a client's
    // signature is checked first, or anyone could spend another account's budget.
    let holds_key = matches!(credential, Credential::Key { .. });
    if holds_key {
        spend_write_budget(&app, &chain, &terms.account)?;
    }
    let Placement {
        command,
        authorization,
        account,
        key,
    } = sign_placement(&chain, terms, &credential, actor)?;
    drop(credential);
    if !holds_key {
        spend_write_budget(&app, &chain, &account)?;
    }
    let events = crate::api::written::submit(&chain, command, Some(authorization))
        .await
        .map_err(write_error)?;
    let stored = key.placed(&events)?;
    placement_answer(&chain, &stored, &events)
}

/// A new order signed and ready for the writer.
pub(super) struct Placement {
    /// The command (an agent's wrapped).
    pub(super) command: Command,
    /// Its signature, journaled with it.
    pub(super) authorization: dexd_store::Authorization,
    /// The account it is placed for.
    pub(super) account: Address,
    /// What finds the order among its command's events, with its signature.
    pub(super) key: PlacedKey,
}

/// A placed order's id and signature: what its answer needs besides the command's events.
#[derive(Clone)]
pub(super) struct PlacedKey {
    pub(super) order_id: OrderId,
    pub(super) nonce: [u8; 32],
    pub(super) expiry_ms: u64,
    pub(super) signature: [u8; 65],
    /// Its place in its batch, for an order of a batch signed once.
    pub(super) batch: Option<dexd_store::BatchPlace>,
}

impl PlacedKey {
    /// The order as the command's events leave it, with its signature.
    pub(super) fn placed(&self, events: &[Event]) -> Result<StoredOrder, ApiError> {
        let record = events
            .iter()
            .rev()
            .find_map(|event| match event {
                Event::OrderUpdated(record) if record.terms.order_id == self.order_id => Some(record.clone()),
                _ => None,
            })
            .ok_or_else(ApiError::internal)?;
        Ok(StoredOrder {
            record,
            nonce: self.nonce,
            expiry_ms: self.expiry_ms,
            signature: self.signature,
            batch: self.batch.clone(),
        })
    }
}

/// Signs a new order as EIP-712 typed data with the key, or checks the client's signature of
/// it (an agent's included, which `actor` then names); its id is the digest.
pub(super) fn sign_order(
    chain: &Chain,
    mut terms: NewOrder,
    credential: &Credential,
    actor: &mut crate::api::credential::Actor,
) -> Result<(NewOrder, dexd_store::Authorization), ApiError> {
    let (nonce, expiry_ms) = credential.nonce_and_expiry(now_ms());
    let digest = signing_domain(chain).order_digest(&chain.markets().messages.order(&terms, nonce, expiry_ms));
    terms.order_id = OrderId::from_bytes(digest);
    let authorization = credential.authorize_actor(digest, actor, (nonce, expiry_ms), Some(terms.order_id))?;
    Ok((terms, authorization))
}

/// [`sign_order`], ready for the writer.
pub(super) fn sign_placement(
    chain: &Chain,
    terms: NewOrder,
    credential: &Credential,
    mut actor: crate::api::credential::Actor,
) -> Result<Placement, ApiError> {
    let (terms, authorization) = sign_order(chain, terms, credential, &mut actor)?;
    Ok(Placement {
        key: PlacedKey {
            order_id: terms.order_id,
            nonce: authorization.nonce,
            expiry_ms: authorization.expiry_ms,
            signature: authorization.signature,
            batch: None,
        },
        account: actor.account,
        command: actor.command(Command::PlaceOrder(terms)),
        authorization,
    })
}

/// The terms of a placement as its parameters give them, checked against the pair's tick and
/// step; the order id is left for the signing to fill in.
pub(super) fn order_terms(chain: &Chain, params: &Params, account: Address) -> Result<NewOrder, ApiError> {
    let markets = chain.markets();
    // Every check of form (400) comes before the pair's rules (422), so that a malformed
    // request is always refused as malformed, whichever of its values breaks a rule too.
    let pair_index = params.require_pair(chain, &ORDER_PAIR)?;
    let pair = markets.config.pair_config(pair_index);
    let order_type = params.require(&ORDER_TYPE)?;
    let direction = params.require(&DIRECTION)?;
    let price = params.read(&LIMIT_PRICE)?;
    let amount = params.require(&AMOUNT)?;
    let time_in_force = params
        .read(&TIME_IN_FORCE)?
        .unwrap_or_else(|| default_time_in_force(order_type));
    let client_order_id = params.read(&CLIENT_ORDER_ID)?;
    let post_only = params.read(&POST_ONLY)?.unwrap_or(false);
    // A malformed number (zero, too many decimals) is refused here; one off the tick later.
    let trigger_price = params
        .read(&TRIGGER_PRICE)?
        .map(|price| trigger_price_on_tick(&pair.spec, price))
        .transpose()?;
    let (trigger, conditions) = order_conditions(
        trigger_price,
        params.read(&TRIGGER_CONDITION)?,
        params.read(&OCO_GROUP)?,
        params.read(&EXPIRES_AT)?,
    )?;
    let price = match (order_type, price) {
        (OrderType::Limit, None) => return Err(ApiError::missing("price")),
        (OrderType::Market, Some(_)) => return Err(ApiError::invalid("price", "must be left out for market orders")),
        (OrderType::Limit, Some(price)) => Some(
            pair.spec
                .price_from_decimal(price)
                .map_err(|error| ApiError::from_pair_value("price", error))?,
        ),
        (OrderType::Market, None) => None,
    };
    let quantity = pair
        .spec
        .quantity_from_decimal(amount)
        .map_err(|error| ApiError::from_pair_value("amount", error))?;
    let mut conditions = conditions;
    conditions.trigger = trigger
        .map(|(price, condition)| {
            Ok::<_, ApiError>(Trigger {
                price: price?,
                condition,
            })
        })
        .transpose()?;
    Ok(NewOrder {
        order_id: OrderId::default(),
        client_order_id,
        account,
        pair: pair_index,
        order_type,
        direction,
        time_in_force,
        post_only,
        price,
        quantity,
        conditions: conditions.boxed(),
    })
}

/// The time in force of an order that names none: IOC for a market order, GTC for a limit.
pub(super) fn default_time_in_force(order_type: OrderType) -> TimeInForce {
    match order_type {
        OrderType::Market => TimeInForce::ImmediateOrCancel,
        OrderType::Limit => TimeInForce::GoodTillCancelled,
    }
}

/// A trigger's price on the pair's tick: a malformed number is refused at once (400); one off
/// the tick (422) comes back apart, to be judged after every check of form.
fn trigger_price_on_tick(
    spec: &dexd_core::PairSpec,
    price: Decimal,
) -> Result<Result<dexd_core::Price, ApiError>, ApiError> {
    match spec.price_from_decimal(price) {
        Ok(price) => Ok(Ok(price)),
        Err(error @ dexd_core::PairValueError::NotOnTick) => {
            Ok(Err(ApiError::from_pair_value(TRIGGER_PRICE.field.name, error)))
        }
        Err(error) => Err(ApiError::from_pair_value(TRIGGER_PRICE.field.name, error)),
    }
}

/// An order's conditions as its parameters give them (contract version 4): a trigger (both
/// fields or neither, the price on the tick), a group's name, an expiry. Whether they fit the
/// book (a trigger already met, a group's other order, an expiry too near) is the engine's.
///
/// The trigger comes back apart: its price on the pair's tick or not (422) is judged after every
/// check of form.
#[allow(clippy::type_complexity)]
fn order_conditions(
    trigger_price: Option<Result<dexd_core::Price, ApiError>>,
    condition: Option<TriggerCondition>,
    oco_group: Option<String>,
    expires_at_ms: Option<u64>,
) -> Result<
    (
        Option<(Result<dexd_core::Price, ApiError>, TriggerCondition)>,
        OrderConditions,
    ),
    ApiError,
> {
    let trigger = match (trigger_price, condition) {
        (None, None) => None,
        // The contract calls one of the pair without the other malformed, not missing.
        (Some(_), None) => {
            return Err(ApiError::invalid(
                TRIGGER_CONDITION.field.name,
                "is required with triggerPrice: above or below",
            ))
        }
        (None, Some(_)) => {
            return Err(ApiError::invalid(
                TRIGGER_PRICE.field.name,
                "is required with triggerCondition",
            ))
        }
        (Some(price), Some(condition)) => Some((price, condition)),
    };
    // The trigger is set once its price is known to be on the tick.
    let conditions = OrderConditions {
        oco_group,
        expires_at_ms,
        ..OrderConditions::default()
    };
    Ok((trigger, conditions))
}

/// The answer to a placement, written out while the chain's configuration it borrows from is at
/// hand, straight from the typed objects: the busiest answer builds no JSON value.
fn placement_answer(chain: &Chain, stored: &StoredOrder, events: &[Event]) -> Result<Box<RawValue>, ApiError> {
    let markets = chain.markets();
    let placed = placed_order(&markets, stored, events);
    let order_id = stored.record.terms.order_id;
    serde_json::value::to_raw_value(&placed).map_err(|error| {
        // Strings and numbers always serialize; if that ever changed, the order is on disk
        // already and the answer must not say otherwise.
        tracing::error!(%error, %order_id, "writing a placement's answer failed");
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "internal error after the order was placed; read it back by its id",
        )
    })
}

/// The answer to a placement: the order and the trades it made.
#[derive(serde::Serialize)]
pub(super) struct PlacedOrder<'a> {
    order: render::OrderObject<'a>,
    trades: Vec<render::TradeObject<'a>>,
}

/// A placement's answer: the order and the trades its command's events hold.
pub(super) fn placed_order<'a>(markets: &'a Markets, stored: &'a StoredOrder, events: &'a [Event]) -> PlacedOrder<'a> {
    PlacedOrder {
        order: render::order(&markets.config, stored),
        trades: trades_of(markets, events),
    }
}

/// The trades among a command's events.
pub(super) fn trades_of<'a>(markets: &'a Markets, events: &'a [Event]) -> Vec<render::TradeObject<'a>> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TradeExecuted(trade) => Some(render::trade(&markets.config, trade)),
            _ => None,
        })
        .collect()
}

pub(super) fn order_not_open() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "ORDER_NOT_OPEN",
        "the order is already filled or cancelled",
    )
    .on("orderId")
}

/// The open order `order_id` of `account` on `pair`, with its signature: 404 `ORDER_NOT_FOUND`
/// when there is none (or it is another account's), 409 `ORDER_NOT_OPEN` when it is closed.
pub(super) fn open_order_of(
    reader: &dexd_store::StoreReader,
    account: &Address,
    pair: PairIndex,
    order_id: &OrderId,
) -> Result<StoredOrder, ApiError> {
    let stored = reader
        .order(order_id)
        .map_err(store_error)?
        .filter(|stored| stored.record.terms.account == *account && stored.record.terms.pair == pair)
        .ok_or_else(|| ApiError::from_rejection(dexd_core::Rejection::OrderNotFound))?;
    if !stored.record.status.is_open() {
        return Err(order_not_open());
    }
    Ok(stored)
}

/// POST /order/cancelOrder
pub async fn cancel_order(app: Arc<AppState>, params: Params) -> Answer {
    let (chain, credential, mut actor) = account_write(&app, &params)?;
    let account = actor.account;
    let pair_index = params.require_pair(&chain, &ORDER_OF_PAIR)?;
    let order_id = params.require(&ORDER_ID)?;
    let authorization = credential.authorize_actor_client_signature(&mut actor, |signed| {
        signing_domain(&chain).digest(&chain.markets().messages.cancel(&account, pair_index, &order_id, signed))
    })?;
    spend_write_budget(&app, &chain, &account)?;
    let stored = open_order_of(history(&chain).await?, &account, pair_index, &order_id)?;
    let command = actor.command(Command::CancelOrder {
        account,
        order_id,
        pair: Some(pair_index),
    });
    let events = match crate::api::written::submit(&chain, command, Some(authorization)).await {
        Ok(events) => events,
        // The order filled or was cancelled between the check and the writer.
        Err(WriteError::Rejected(dexd_core::Rejection::OrderNotFound)) => return Err(order_not_open()),
        Err(error) => return Err(write_error(error)),
    };
    let record = events
        .iter()
        .find_map(|event| match event {
            Event::OrderUpdated(record) if record.terms.order_id == order_id => Some(record.clone()),
            _ => None,
        })
        .ok_or_else(ApiError::internal)?;
    let stored = StoredOrder { record, ..stored };
    Ok(json!({"order": render::order(&chain.markets().config, &stored)}))
}

async fn order_list(app: Arc<AppState>, params: Params, status: OrderStatus) -> Answer {
    let chain = params.chain(&app.venue)?;
    let markets = chain.markets();
    let account = params.account_read()?;
    let pair = params.pair(&chain, &SYMBOL_FILTER)?;
    let request = params.page()?;
    let page = history(&chain)
        .await?
        .orders(&account, status, pair, request)
        .map_err(store_error)?;
    let orders: Vec<render::OrderObject> = page
        .items
        .iter()
        .map(|stored| render::order(&markets.config, stored))
        .collect();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&account),
        "orders": orders,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /order/openOrders
pub async fn open_orders(app: Arc<AppState>, params: Params) -> Answer {
    order_list(app, params, OrderStatus::Open).await
}

/// GET /order/filledOrders
pub async fn filled_orders(app: Arc<AppState>, params: Params) -> Answer {
    order_list(app, params, OrderStatus::Filled).await
}

/// GET /order/cancelledOrders
pub async fn cancelled_orders(app: Arc<AppState>, params: Params) -> Answer {
    order_list(app, params, OrderStatus::Cancelled).await
}

async fn order_book(app: Arc<AppState>, params: Params, direction: Direction) -> Answer {
    let chain = params.chain(&app.venue)?;
    let markets = chain.markets();
    let pair_index = params.require_pair(&chain, &PAIR)?;
    let depth = params.count(&BOOK_DEPTH)?;
    let pair = markets.config.pair_config(pair_index);
    let (levels, sequence) = chain
        .read_engine(|engine| engine.book_levels(pair_index, direction, depth))
        .ok_or_else(ApiError::internal)?;
    let levels: Vec<Value> = levels
        .iter()
        .map(|level| render::book_level(&markets.config, pair_index, level.price, level.quantity, level.orders))
        .collect();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "symbol": pair.symbol,
        "direction": direction.wire_name(),
        "levels": levels,
        "sequence": sequence,
        "timestamp": now_ms(),
    }))
}

/// GET /order/buyOrderbooks
pub async fn buy_order_book(app: Arc<AppState>, params: Params) -> Answer {
    order_book(app, params, Direction::Buy).await
}

/// GET /order/sellOrderbooks
pub async fn sell_order_book(app: Arc<AppState>, params: Params) -> Answer {
    order_book(app, params, Direction::Sell).await
}

/// GET /order/accountTrades (extension): the account's own fills, newest first.
pub async fn account_trades(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let markets = chain.markets();
    let account = params.account_read()?;
    let pair = params.pair(&chain, &TRADE_PAIR_FILTER)?;
    let request = params.page()?;
    let page = history(&chain)
        .await?
        .account_trades(&account, pair, request)
        .map_err(store_error)?;
    let trades: Vec<render::AccountTradeObject> = page
        .items
        .iter()
        .map(|trade| render::account_trade(&markets.config, trade, &account))
        .collect();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&account),
        "trades": trades,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /order/openPositions
pub async fn open_positions(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let markets = chain.markets();
    let pair_index = params.require_pair(&chain, &PAIR)?;
    let account = params.account_read()?;
    let pair = markets.config.pair_config(pair_index);
    let spec = &pair.spec;
    let (position, mark, base_balance, quote_balance) = chain.read_engine(|engine| {
        (
            engine.position(&account, pair_index),
            engine.last_price(pair_index),
            engine.balance(&account, spec.base()),
            engine.balance(&account, spec.quote()),
        )
    });
    let open_amount = position.net_base.unsigned_abs();
    let mark_value = mark.map(|price| {
        let lots = open_amount / spec.step_units();
        (u128::from(price.ticks()).saturating_mul(lots)).saturating_mul(spec.quote_units_per_tick_lot())
    });
    let unrealized = mark_value.map_or(0, |value| position.unrealized_pnl_quote(value));
    let quote_decimals = spec.quote_decimals();
    let open_orders = history(&chain).await?.open_orders_on_pair(&account, pair_index);
    let open_orders: Vec<render::OrderObject> = open_orders
        .iter()
        .map(|stored| render::order(&markets.config, stored))
        .collect();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "symbol": pair.symbol,
        "account": checksummed(&account),
        "position": {
            "netAmount": render::signed_amount(position.net_base, spec.base_decimals()),
            "averageEntryPrice": render::average_price(pair, position.open_cost_quote, open_amount).unwrap_or_else(|| "0".to_string()),
            "markPrice": mark.map(|price| spec.format_price(price)),
            "realizedPnl": render::signed_amount(position.realized_pnl_quote, quote_decimals),
            "unrealizedPnl": render::signed_amount(unrealized, quote_decimals),
            "base": render::balance(&markets.config, spec.base(), base_balance),
            "quote": render::balance(&markets.config, spec.quote(), quote_balance),
        },
        "openOrders": open_orders,
    }))
}

/// GET /order/orderDetail
pub async fn order_detail(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let order_id = params.require(&ORDER_ID)?;
    let stored = history(&chain)
        .await?
        .order(&order_id)
        .map_err(store_error)?
        .ok_or_else(|| ApiError::not_found("ORDER_NOT_FOUND", "no such order on this chain").on("orderId"))?;
    let message = chain
        .markets()
        .messages
        .order(&stored.record.terms, stored.nonce, stored.expiry_ms);
    let domain = signing_domain(&chain);
    let mut detail = json!({
        "order": render::order(&chain.markets().config, &stored),
        "typedData": domain.order_typed_data(&message),
    });
    if let Some(batch) = &stored.batch {
        detail["batch"] = render::batch_proof(domain, &stored, batch);
    }
    Ok(detail)
}
