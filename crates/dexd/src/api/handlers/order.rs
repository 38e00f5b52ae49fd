//! The order group (`/order/...`): placing and cancelling orders, the account's order lists,
//! the books, candles, trades and positions of a pair, and the order detail extension.

use std::sync::Arc;

use axum::http::StatusCode;
use dexd_core::{
    Address, Command, Direction, Event, NewOrder, OrderConditions, OrderId, OrderStatus, OrderType, PairIndex,
    TimeInForce, Trigger, TriggerCondition, DIRECTION_NAMES, MAX_OCO_GROUP_CHARS, ORDER_TYPE_NAMES,
    TIME_IN_FORCE_NAMES, TRIGGER_CONDITION_NAMES,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::{
    account_write, address_param, bounded, candle_interval_param, chain_of, client_order_id, history,
    optional_pair_param, page_request, pair_param, signing_domain, spend_write_budget, store_error, time_range, word,
    write_error, Answer, DEFAULT_BOOK_DEPTH, DEFAULT_CANDLE_LIMIT, MAX_BOOK_DEPTH, MAX_CANDLE_LIMIT,
};
use crate::api::credential::Credential;
use crate::api::error::ApiError;
use crate::api::params::Params;
use crate::api::render;
use crate::api::AppState;
use dexd_crypto::{checksummed, parse_hex_bytes};
use dexd_store::StoredOrder;
use dexd_store::{now_ms, WriteError};

use dexd_venue::Chain;

/// POST /order/addOrder
pub async fn add_order(app: Arc<AppState>, params: Params) -> Result<Box<RawValue>, ApiError> {
    let (chain, credential, actor) = account_write(&app, &params)?;
    let terms = order_terms(&chain, &params, actor.account)?;
    // A key proves the account at once, so its budget is spent before the signing; a client's
    // signature is checked first, or anyone could spend another account's budget.
    let holds_key = matches!(credential, Credential::Key(_));
    if holds_key {
        spend_write_budget(&app, &terms.account)?;
    }
    let Placement {
        command,
        authorization,
        account,
        key,
    } = sign_placement(&chain, terms, &credential, actor)?;
    drop(credential);
    if !holds_key {
        spend_write_budget(&app, &account)?;
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
    let digest = signing_domain(chain).order_digest(&chain.messages.order(&terms, nonce, expiry_ms));
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
    // Every check of form (400) comes before the pair's rules (422), so that a malformed
    // request is always refused as malformed, whichever of its values breaks a rule too.
    let pair_index = pair_param(chain, params, "symbol")?;
    let pair = chain.config.pair_config(pair_index);
    let order_type =
        word(params, "type", ORDER_TYPE_NAMES, OrderType::from_wire_name)?.ok_or_else(|| ApiError::missing("type"))?;
    let direction = word(params, "direction", DIRECTION_NAMES, Direction::from_wire_name)?
        .ok_or_else(|| ApiError::missing("direction"))?;
    let price = params.decimal("price")?;
    let amount = params.required_decimal("amount")?;
    let time_in_force = match word(params, "timeInForce", TIME_IN_FORCE_NAMES, TimeInForce::from_wire_name)? {
        Some(chosen) => chosen,
        None => default_time_in_force(order_type),
    };
    let client_order_id = client_order_id(params)?;
    let post_only = params.bool("postOnly")?.unwrap_or(false);
    let (trigger, conditions) = order_conditions(params, &pair.spec)?;
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

/// An order's conditions as its parameters give them (contract version 4): a trigger (both
/// fields or neither, the price on the tick), a group's name, an expiry. Whether they fit the
/// book (a trigger already met, a group's other order, an expiry too near) is the engine's.
///
/// The trigger comes back apart: its price on the pair's tick or not (422) is judged after every
/// check of form.
#[allow(clippy::type_complexity)]
fn order_conditions(
    params: &Params,
    spec: &dexd_core::PairSpec,
) -> Result<
    (
        Option<(Result<dexd_core::Price, ApiError>, TriggerCondition)>,
        OrderConditions,
    ),
    ApiError,
> {
    // A malformed number (zero, too many decimals) is refused here; one off the tick later.
    let trigger_price = match params.decimal("triggerPrice")? {
        None => None,
        Some(price) => Some(match spec.price_from_decimal(price) {
            Ok(price) => Ok(price),
            Err(error @ dexd_core::PairValueError::NotOnTick) => Err(ApiError::from_pair_value("triggerPrice", error)),
            Err(error) => return Err(ApiError::from_pair_value("triggerPrice", error)),
        }),
    };
    let condition = word(
        params,
        "triggerCondition",
        TRIGGER_CONDITION_NAMES,
        TriggerCondition::from_wire_name,
    )?;
    let trigger = match (trigger_price, condition) {
        (None, None) => None,
        // The contract calls one of the pair without the other malformed, not missing.
        (Some(_), None) => {
            return Err(ApiError::invalid(
                "triggerCondition",
                "is required with triggerPrice: above or below",
            ))
        }
        (None, Some(_)) => return Err(ApiError::invalid("triggerPrice", "is required with triggerCondition")),
        (Some(price), Some(condition)) => Some((price, condition)),
    };
    let oco_group = match params.text("ocoGroup")? {
        None => None,
        Some(name) => {
            let valid = !name.is_empty()
                && name.chars().count() <= MAX_OCO_GROUP_CHARS
                && name
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || b"._:-".contains(&byte));
            if !valid {
                return Err(ApiError::invalid(
                    "ocoGroup",
                    format!("must be 1 to {MAX_OCO_GROUP_CHARS} of A-Z a-z 0-9 . _ : -"),
                ));
            }
            Some(name.to_string())
        }
    };
    // 0 is no expiry, as in the signed message. Too near or too far is the engine's to judge
    // at the time it applies the order (422); beyond 13 digits (the year 2286) is malformed.
    let expires_at_ms = params.integer("expiresAt")?.filter(|expires_at_ms| *expires_at_ms != 0);
    if expires_at_ms.is_some_and(|expires_at_ms| expires_at_ms > MAX_EXPIRES_AT_MS) {
        return Err(ApiError::invalid(
            "expiresAt",
            "must be ms since the epoch, at most 13 digits",
        ));
    }
    let conditions = OrderConditions {
        trigger: None,
        oco_group,
        expires_at_ms,
        signed_without_conditions: false,
    };
    Ok((trigger, conditions))
}

/// The largest `expiresAt` taken (13 digits: the year 2286); the engine refuses one more than
/// 366 days ahead of the time it applies the order.
const MAX_EXPIRES_AT_MS: u64 = 9_999_999_999_999;

/// The answer to a placement, written out while the chain's configuration it borrows from is at
/// hand, straight from the typed objects: the busiest answer builds no JSON value.
fn placement_answer(chain: &Chain, stored: &StoredOrder, events: &[Event]) -> Result<Box<RawValue>, ApiError> {
    let placed = placed_order(chain, stored, events);
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
pub(super) fn placed_order<'a>(chain: &'a Chain, stored: &'a StoredOrder, events: &'a [Event]) -> PlacedOrder<'a> {
    PlacedOrder {
        order: render::order(&chain.config, stored),
        trades: trades_of(chain, events),
    }
}

/// The trades among a command's events.
pub(super) fn trades_of<'a>(chain: &'a Chain, events: &'a [Event]) -> Vec<render::TradeObject<'a>> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TradeExecuted(trade) => Some(render::trade(&chain.config, trade)),
            _ => None,
        })
        .collect()
}

pub(super) fn order_id_param(params: &Params) -> Result<OrderId, ApiError> {
    parse_hex_bytes::<32>(params.required_text("orderId")?)
        .map(OrderId::from_bytes)
        .ok_or_else(|| ApiError::invalid("orderId", "must be 0x + 64 hex digits"))
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
    let pair_index = pair_param(&chain, &params, "symbol")?;
    let order_id = order_id_param(&params)?;
    let authorization = credential.authorize_actor_client_signature(&mut actor, |signed| {
        signing_domain(&chain).digest(&chain.messages.cancel(&account, pair_index, &order_id, signed))
    })?;
    spend_write_budget(&app, &account)?;
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
    Ok(json!({"order": render::order(&chain.config, &stored)}))
}

async fn order_list(app: Arc<AppState>, params: Params, status: OrderStatus) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let account = address_param(&params, "account")?;
    let pair = optional_pair_param(&chain, &params, "symbol")?;
    let request = page_request(&params)?;
    let page = history(&chain)
        .await?
        .orders(&account, status, pair, request)
        .map_err(store_error)?;
    let orders: Vec<render::OrderObject> = page
        .items
        .iter()
        .map(|stored| render::order(&chain.config, stored))
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
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
    let chain = chain_of(&app.venue, &params)?;
    let pair_index = pair_param(&chain, &params, "pair")?;
    let depth = bounded(&params, "depth", DEFAULT_BOOK_DEPTH, MAX_BOOK_DEPTH)?;
    let pair = chain.config.pair_config(pair_index);
    let (levels, sequence) = chain
        .read_engine(|engine| engine.book_levels(pair_index, direction, depth))
        .ok_or_else(ApiError::internal)?;
    let levels: Vec<Value> = levels
        .iter()
        .map(|level| render::book_level(&chain.config, pair_index, level.price, level.quantity, level.orders))
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
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

/// GET /order/tradesOHCL
pub async fn candles(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let pair_index = pair_param(&chain, &params, "pair")?;
    let interval = candle_interval_param(&params)?;
    let (start_ms, end_ms) = time_range(&params)?;
    let limit = bounded(&params, "limit", DEFAULT_CANDLE_LIMIT, MAX_CANDLE_LIMIT)?;
    let pair = chain.config.pair_config(pair_index);
    let candles = chain.read_engine(|engine| engine.candles(pair_index, interval, start_ms, end_ms, limit));
    let candles: Vec<Value> = candles
        .iter()
        .map(|candle| render::candle(&chain.config, pair_index, candle))
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "symbol": pair.symbol,
        "interval": interval.wire_name(),
        "candles": candles,
    }))
}

/// GET /order/tradeHistories
pub async fn trade_history(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let pair_index = pair_param(&chain, &params, "pair")?;
    let request = page_request(&params)?;
    let page = history(&chain)
        .await?
        .trades(pair_index, request)
        .map_err(store_error)?;
    let trades: Vec<render::TradeObject> = page
        .items
        .iter()
        .map(|trade| render::trade(&chain.config, trade))
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "symbol": chain.config.pair_config(pair_index).symbol,
        "trades": trades,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /order/accountTrades (extension): the account's own fills, newest first.
pub async fn account_trades(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let account = address_param(&params, "account")?;
    let pair = optional_pair_param(&chain, &params, "pair")?;
    let request = page_request(&params)?;
    let page = history(&chain)
        .await?
        .account_trades(&account, pair, request)
        .map_err(store_error)?;
    let trades: Vec<render::AccountTradeObject> = page
        .items
        .iter()
        .map(|trade| render::account_trade(&chain.config, trade, &account))
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "account": checksummed(&account),
        "trades": trades,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /order/openPositions
pub async fn open_positions(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let pair_index = pair_param(&chain, &params, "pair")?;
    let account = address_param(&params, "account")?;
    let pair = chain.config.pair_config(pair_index);
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
        .map(|stored| render::order(&chain.config, stored))
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "symbol": pair.symbol,
        "account": checksummed(&account),
        "position": {
            "netAmount": render::signed_amount(position.net_base, spec.base_decimals()),
            "averageEntryPrice": render::average_price(pair, position.open_cost_quote, open_amount).unwrap_or_else(|| "0".to_string()),
            "markPrice": mark.map(|price| spec.format_price(price)),
            "realizedPnl": render::signed_amount(position.realized_pnl_quote, quote_decimals),
            "unrealizedPnl": render::signed_amount(unrealized, quote_decimals),
            "base": render::balance(&chain.config, spec.base(), base_balance),
            "quote": render::balance(&chain.config, spec.quote(), quote_balance),
        },
        "openOrders": open_orders,
    }))
}

/// GET /order/orderDetail
pub async fn order_detail(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let order_id = order_id_param(&params)?;
    let stored = history(&chain)
        .await?
        .order(&order_id)
        .map_err(store_error)?
        .ok_or_else(|| ApiError::not_found("ORDER_NOT_FOUND", "no such order on this chain").on("orderId"))?;
    let message = chain
        .messages
        .order(&stored.record.terms, stored.nonce, stored.expiry_ms);
    let domain = signing_domain(&chain);
    let mut detail = json!({
        "order": render::order(&chain.config, &stored),
        "typedData": domain.order_typed_data(&message),
    });
    if let Some(batch) = &stored.batch {
        detail["batch"] = render::batch_proof(domain, &stored, batch);
    }
    Ok(detail)
}
