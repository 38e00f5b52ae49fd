//! One function per operation: read the parameters, ask the venue, render the contract's body.
//!
//! Parameters are checked in a fixed order (unknown fields, chain, credential, the rest), and
//! every check happens before a command reaches the writer, so a refused request changes
//! nothing. A private key is turned into an address and a signature, then dropped before the
//! command is queued. These functions hold no state of their own.

use std::sync::Arc;

use alloy_primitives::keccak256;
use axum::http::StatusCode;
use dexd_core::decimal::DecimalError;
use dexd_core::{
    Address, AssetIndex, CandleInterval, Command, Direction, Event, NewOrder, OrderId, OrderStatus, OrderType,
    PairIndex, TimeInForce, TransferKind, TransferRequest,
};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::credential::Credential;
use super::error::ApiError;
use super::params::Params;
use super::render;
use crate::crypto::{checksummed, parse_address, parse_hex_bytes, SigningDomain};
use crate::crypto::{FieldValue, TypedMessage, CANCEL_ORDER_TYPE, DEPOSIT_TYPE, WITHDRAW_TYPE};
use crate::store::{PageRequest, StoreError, StoredOrder, MAX_PAGE_LIMIT};
use crate::venue::{now_ms, Chain, Venue, WriteError};

/// The longest `clientOrderId` accepted.
pub const MAX_CLIENT_ORDER_ID_LENGTH: usize = 64;
/// The deepest book page.
pub const MAX_BOOK_DEPTH: usize = 1_000;
const DEFAULT_BOOK_DEPTH: usize = 50;
const DEFAULT_PAGE_LIMIT: usize = 100;
const DEFAULT_CANDLE_LIMIT: usize = 500;
const MAX_CANDLE_LIMIT: usize = 1_000;

type Answer = Result<Value, ApiError>;

fn chain_of(venue: &Venue, params: &Params) -> Result<Arc<Chain>, ApiError> {
    let chain_id = params.integer("chainId")?.ok_or_else(|| ApiError::missing("chainId"))?;
    venue.chain(chain_id).ok_or_else(|| {
        ApiError::not_found("UNKNOWN_CHAIN", format!("chain {chain_id} is not configured")).on("chainId")
    })
}

fn address_param(params: &Params, name: &str) -> Result<Address, ApiError> {
    parse_address(params.required_text(name)?).map_err(|_| {
        ApiError::invalid(
            name,
            "must be 0x + 40 hex digits, with a valid EIP-55 checksum if mixed case",
        )
    })
}

fn pair_param(chain: &Chain, params: &Params, name: &str) -> Result<PairIndex, ApiError> {
    pair_of(chain, name, params.required_text(name)?)
}

fn pair_of(chain: &Chain, name: &str, text: &str) -> Result<PairIndex, ApiError> {
    let well_formed = text.split_once('/').is_some_and(|(base, quote)| {
        let symbol_ok = |part: &str| {
            !part.is_empty()
                && part.len() <= crate::config::MAX_SYMBOL_LENGTH
                && part
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-')
        };
        symbol_ok(base) && symbol_ok(quote)
    });
    if !well_formed {
        return Err(ApiError::invalid(name, "must be a pair such as ETH/USDC"));
    }
    chain.config.pair(text).ok_or_else(|| {
        ApiError::not_found(
            "UNKNOWN_PAIR",
            format!("{} is not a pair of this chain", text.to_ascii_uppercase()),
        )
        .on(name)
    })
}

fn choice<'a>(params: &Params, name: &str, allowed: &[&'a str]) -> Result<Option<&'a str>, ApiError> {
    let Some(text) = params.text(name)? else {
        return Ok(None);
    };
    allowed
        .iter()
        .find(|candidate| candidate.eq_ignore_ascii_case(text))
        .copied()
        .map(Some)
        .ok_or_else(|| ApiError::invalid(name, format!("must be one of {}", allowed.join(", "))))
}

fn bounded(params: &Params, name: &str, default: usize, max: usize) -> Result<usize, ApiError> {
    match params.integer(name)? {
        None => Ok(default),
        Some(value) if value >= 1 && value <= max as u64 => Ok(value as usize),
        Some(_) => Err(ApiError::invalid(name, format!("must be between 1 and {max}"))),
    }
}

fn time_range(params: &Params) -> Result<(u64, u64), ApiError> {
    let start = params.integer("startTime")?.unwrap_or(0);
    let end = params.integer("endTime")?.unwrap_or(u64::MAX);
    if start > end {
        return Err(ApiError::invalid("startTime", "must not be after endTime"));
    }
    Ok((start, end))
}

fn page_request(params: &Params) -> Result<PageRequest, ApiError> {
    let limit = bounded(params, "limit", DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT)?;
    let cursor = match params.text("cursor")? {
        None => None,
        Some(text) => Some(
            text.parse::<u64>()
                .map_err(|_| ApiError::invalid("cursor", "is not a cursor this service gave"))?,
        ),
    };
    let (start_ms, end_ms) = time_range(params)?;
    Ok(PageRequest {
        limit,
        cursor,
        start_ms,
        end_ms,
    })
}

/// The chain's history, once it holds everything acknowledged before this request.
async fn history(chain: &Chain) -> Result<&crate::store::StoreReader, ApiError> {
    chain
        .history()
        .await
        .map_err(|_| ApiError::unavailable("the history is catching up; retry shortly"))
}

/// Takes one state change from the account's budget.
fn spend_write_budget(venue: &Venue, account: &Address) -> Result<(), ApiError> {
    venue.rate_limits.check_account(account).map_err(|wait| {
        super::error::too_many_requests("this account is making state changes faster than allowed", wait)
    })
}

/// A store that cannot be read is an internal fault: logged here, answered as an opaque 500.
fn store_error(error: StoreError) -> ApiError {
    tracing::error!(%error, "reading the store failed");
    ApiError::internal()
}

fn write_error(error: WriteError) -> ApiError {
    match error {
        WriteError::Rejected(rejection) => ApiError::from_rejection(rejection),
        WriteError::QueueFull => {
            ApiError::unavailable("the chain's write queue is full; nothing was applied, retry shortly")
        }
        WriteError::NotDurable => {
            ApiError::unavailable("the change could not be written to disk; nothing was applied, retry later")
        }
        WriteError::HistoryBehind => {
            ApiError::unavailable("the history has not caught up with the latest changes; retry shortly")
        }
    }
}

fn signing_domain(chain: &Chain) -> &SigningDomain {
    &chain.signing_domain
}

fn client_order_id(params: &Params) -> Result<Option<String>, ApiError> {
    let Some(text) = params.text("clientOrderId")? else {
        return Ok(None);
    };
    let valid = text.len() <= MAX_CLIENT_ORDER_ID_LENGTH
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"._:-".contains(&byte));
    if !valid {
        return Err(ApiError::invalid(
            "clientOrderId",
            format!("must be 1 to {MAX_CLIENT_ORDER_ID_LENGTH} of A-Z a-z 0-9 . _ : -"),
        ));
    }
    Ok(Some(text.to_string()))
}

/// POST /order/addOrder
pub async fn add_order(venue: Arc<Venue>, params: Params) -> Result<Box<RawValue>, ApiError> {
    let chain = chain_of(&venue, &params)?;
    let credential = Credential::from_params(&params, None, now_ms())?;
    let pair_index = pair_param(&chain, &params, "symbol")?;
    let pair = chain.config.pair_config(pair_index);
    let order_type = match choice(&params, "type", &["limit", "market"])?.ok_or_else(|| ApiError::missing("type"))? {
        "limit" => OrderType::Limit,
        _ => OrderType::Market,
    };
    let direction =
        match choice(&params, "direction", &["buy", "sell"])?.ok_or_else(|| ApiError::missing("direction"))? {
            "buy" => Direction::Buy,
            _ => Direction::Sell,
        };
    let price = match (order_type, params.decimal("price")?) {
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
        .quantity_from_decimal(params.required_decimal("amount")?)
        .map_err(|error| ApiError::from_pair_value("amount", error))?;
    let time_in_force = match choice(&params, "timeInForce", &["GTC", "IOC", "FOK"])? {
        Some("FOK") => TimeInForce::FillOrKill,
        Some("IOC") => TimeInForce::ImmediateOrCancel,
        _ if order_type == OrderType::Market => TimeInForce::ImmediateOrCancel,
        _ => TimeInForce::GoodTillCancelled,
    };
    let mut terms = NewOrder {
        order_id: OrderId::default(),
        client_order_id: client_order_id(&params)?,
        account: credential.account(&venue.addresses),
        pair: pair_index,
        order_type,
        direction,
        time_in_force,
        post_only: params.bool("postOnly")?.unwrap_or(false),
        price,
        quantity,
    };
    // A key proves the account at once, so its budget is spent before the signing; a client's
    // signature is checked first, or anyone could spend another account's budget.
    let holds_key = matches!(credential, Credential::Key(_));
    if holds_key {
        spend_write_budget(&venue, &terms.account)?;
    }
    let signed = credential.nonce_and_expiry(now_ms());
    let (nonce, expiry_ms) = signed;
    let digest = signing_domain(&chain).order_digest(&render::order_message(&chain.config, &terms, nonce, expiry_ms));
    terms.order_id = OrderId::from_bytes(digest);
    let authorization = credential.authorize(digest, &terms.account, signed, Some(terms.order_id))?;
    if !holds_key {
        spend_write_budget(&venue, &terms.account)?;
    }
    let order_id = terms.order_id;
    let events = chain
        .submit(Command::PlaceOrder(terms), Some(authorization))
        .await
        .map_err(write_error)?;
    let record = events
        .iter()
        .rev()
        .find_map(|event| match event {
            Event::OrderUpdated(record) if record.terms.order_id == order_id => Some(record.clone()),
            _ => None,
        })
        .ok_or_else(ApiError::internal)?;
    let trades: Vec<render::TradeObject> = events
        .iter()
        .filter_map(|event| match event {
            Event::TradeExecuted(trade) => Some(render::trade(&chain.config, trade)),
            _ => None,
        })
        .collect();
    let stored = StoredOrder {
        record,
        nonce,
        expiry_ms,
        signature: authorization.signature,
    };
    let placed = PlacedOrder {
        order: render::order(&chain.config, &stored),
        trades,
    };
    // Written out here, while the chain's configuration it borrows from is at hand, straight
    // from the typed objects: the busiest answer builds no JSON value.
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
struct PlacedOrder<'a> {
    order: render::OrderObject<'a>,
    trades: Vec<render::TradeObject<'a>>,
}

/// The typed data of a cancel: `CancelOrder(account, symbol, orderId, nonce, expiry)`.
fn cancel_message(
    chain: &Chain,
    account: &Address,
    pair: PairIndex,
    order_id: &OrderId,
    signed: ([u8; 32], u64),
) -> TypedMessage {
    TypedMessage {
        struct_type: &CANCEL_ORDER_TYPE,
        values: vec![
            FieldValue::Address(*account),
            FieldValue::Text(chain.config.pair_config(pair).symbol.clone()),
            FieldValue::Bytes32(*order_id.as_bytes()),
            FieldValue::Uint(signed.0),
            FieldValue::uint(signed.1),
        ],
    }
}

/// The typed data of a transfer: `Deposit` or `Withdraw(account, symbol, quantity, nonce, expiry)`.
fn transfer_message(
    chain: &Chain,
    account: &Address,
    asset: AssetIndex,
    units: u128,
    kind: TransferKind,
    signed: ([u8; 32], u64),
) -> TypedMessage {
    TypedMessage {
        struct_type: match kind {
            TransferKind::Deposit => &DEPOSIT_TYPE,
            TransferKind::Withdrawal => &WITHDRAW_TYPE,
        },
        values: vec![
            FieldValue::Address(*account),
            FieldValue::Text(chain.config.asset_config(asset).symbol.clone()),
            FieldValue::Text(render::asset_amount(&chain.config, asset, units)),
            FieldValue::Uint(signed.0),
            FieldValue::uint(signed.1),
        ],
    }
}

fn order_id_param(params: &Params) -> Result<OrderId, ApiError> {
    parse_hex_bytes::<32>(params.required_text("orderId")?)
        .map(OrderId::from_bytes)
        .ok_or_else(|| ApiError::invalid("orderId", "must be 0x + 64 hex digits"))
}

fn order_not_open() -> ApiError {
    ApiError::new(
        StatusCode::CONFLICT,
        "ORDER_NOT_OPEN",
        "the order is already filled or cancelled",
    )
    .on("orderId")
}

/// POST /order/cancelOrder
pub async fn cancel_order(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let credential = Credential::from_params(&params, None, now_ms())?;
    let account = credential.account(&venue.addresses);
    let pair_index = pair_param(&chain, &params, "symbol")?;
    let order_id = order_id_param(&params)?;
    let authorization = credential.authorize_client_signature(&account, |signed| {
        signing_domain(&chain).digest(&cancel_message(&chain, &account, pair_index, &order_id, signed))
    })?;
    spend_write_budget(&venue, &account)?;
    let not_found = || ApiError::from_rejection(dexd_core::Rejection::OrderNotFound);
    let stored = history(&chain)
        .await?
        .order(&order_id)
        .map_err(store_error)?
        .filter(|stored| stored.record.terms.account == account && stored.record.terms.pair == pair_index)
        .ok_or_else(not_found)?;
    if stored.record.status != OrderStatus::Open {
        return Err(order_not_open());
    }
    let command = Command::CancelOrder { account, order_id };
    let events = match chain.submit(command, authorization).await {
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

async fn order_list(venue: Arc<Venue>, params: Params, status: OrderStatus) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let account = address_param(&params, "account")?;
    let pair = match params.text("symbol")? {
        Some(text) => Some(pair_of(&chain, "symbol", text)?),
        None => None,
    };
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
pub async fn open_orders(venue: Arc<Venue>, params: Params) -> Answer {
    order_list(venue, params, OrderStatus::Open).await
}

/// GET /order/filledOrders
pub async fn filled_orders(venue: Arc<Venue>, params: Params) -> Answer {
    order_list(venue, params, OrderStatus::Filled).await
}

/// GET /order/cancelledOrders
pub async fn cancelled_orders(venue: Arc<Venue>, params: Params) -> Answer {
    order_list(venue, params, OrderStatus::Cancelled).await
}

async fn order_book(venue: Arc<Venue>, params: Params, direction: Direction) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let pair_index = pair_param(&chain, &params, "pair")?;
    let depth = bounded(&params, "depth", DEFAULT_BOOK_DEPTH, MAX_BOOK_DEPTH)?;
    let pair = chain.config.pair_config(pair_index);
    let (levels, sequence) = chain
        .read_engine(|engine| engine.book_levels(pair_index, direction, depth))
        .ok_or_else(ApiError::internal)?;
    let levels: Vec<Value> = levels
        .iter()
        .map(|level| {
            let base_units = level.quantity.saturating_mul(pair.spec.step_units());
            json!({
                "price": pair.spec.format_price(level.price),
                "amount": render::asset_amount(&chain.config, pair.spec.base(), base_units),
                "orders": level.orders,
            })
        })
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "symbol": pair.symbol,
        "direction": render::direction_name(direction),
        "levels": levels,
        "sequence": sequence,
        "timestamp": now_ms(),
    }))
}

/// GET /order/buyOrderbooks
pub async fn buy_order_book(venue: Arc<Venue>, params: Params) -> Answer {
    order_book(venue, params, Direction::Buy).await
}

/// GET /order/sellOrderbooks
pub async fn sell_order_book(venue: Arc<Venue>, params: Params) -> Answer {
    order_book(venue, params, Direction::Sell).await
}

/// GET /order/tradesOHCL
pub async fn candles(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let pair_index = pair_param(&chain, &params, "pair")?;
    let names: Vec<&str> = CandleInterval::ALL.iter().map(|interval| interval.name()).collect();
    let interval = match params.text("interval")? {
        None => CandleInterval::OneMinute,
        Some(text) => CandleInterval::parse(text)
            .ok_or_else(|| ApiError::invalid("interval", format!("must be one of {}", names.join(", "))))?,
    };
    let (start_ms, end_ms) = time_range(&params)?;
    let limit = bounded(&params, "limit", DEFAULT_CANDLE_LIMIT, MAX_CANDLE_LIMIT)?;
    let pair = chain.config.pair_config(pair_index);
    let candles = chain.read_engine(|engine| engine.candles(pair_index, interval, start_ms, end_ms, limit));
    let candles: Vec<Value> = candles
        .iter()
        .map(|candle| {
            json!({
                "openTime": candle.open_time_ms,
                "open": pair.spec.format_price(candle.open),
                "high": pair.spec.format_price(candle.high),
                "low": pair.spec.format_price(candle.low),
                "close": pair.spec.format_price(candle.close),
                "volume": render::asset_amount(&chain.config, pair.spec.base(), candle.volume.units()),
                "quoteVolume": render::asset_amount(&chain.config, pair.spec.quote(), candle.quote_volume.units()),
                "trades": candle.trades,
            })
        })
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "symbol": pair.symbol,
        "interval": interval.name(),
        "candles": candles,
    }))
}

/// GET /order/tradeHistories
pub async fn trade_history(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
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

/// GET /order/openPositions
pub async fn open_positions(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
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

async fn transfer(venue: Arc<Venue>, params: Params, kind: TransferKind) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let from = address_param(&params, "from")?;
    let credential = Credential::from_params(&params, params.text("from")?, now_ms())?;
    let signer = credential.account(&venue.addresses);
    if from != signer {
        let message = match credential {
            Credential::Key(_) => "from is not the address of privateKey",
            Credential::Signed { .. } => "from is not the signing account",
        };
        return Err(ApiError::new(StatusCode::FORBIDDEN, "ACCOUNT_MISMATCH", message).on("from"));
    }
    let asset = asset_param(&chain, &params)?;
    let decimals = chain.config.asset_config(asset).decimals;
    let units = params
        .required_decimal("quantity")?
        .to_scaled_units(decimals)
        .map_err(|error| match error {
            DecimalError::TooPrecise => {
                ApiError::invalid_number("quantity", format!("has more than the asset's {decimals} decimals"))
            }
            _ => error_too_large("quantity"),
        })?;
    if units == 0 {
        return Err(ApiError::invalid_number("quantity", "must be positive"));
    }
    let authorization = credential.authorize_client_signature(&from, |signed| {
        signing_domain(&chain).digest(&transfer_message(&chain, &from, asset, units, kind, signed))
    })?;
    spend_write_budget(&venue, &from)?;
    let transfer_id = transaction_hash(&chain, &from, asset, units, kind);
    let request = TransferRequest {
        transfer_id,
        account: from,
        asset,
        amount: dexd_core::Amount::from_units(units),
    };
    let command = match kind {
        TransferKind::Deposit => Command::Deposit(request),
        TransferKind::Withdrawal => Command::Withdraw(request),
    };
    let events = chain.submit(command, authorization).await.map_err(write_error)?;
    let transfer = events.iter().find_map(|event| match event {
        Event::TransferApplied(transfer) => Some(render::transfer(&chain.config, transfer)),
        _ => None,
    });
    let balance = chain.read_engine(|engine| engine.balance(&from, asset));
    let name = match kind {
        TransferKind::Deposit => "deposit",
        TransferKind::Withdrawal => "withdrawal",
    };
    Ok(
        json!({name: transfer.ok_or_else(ApiError::internal)?, "balance": render::balance(&chain.config, asset, balance)}),
    )
}

fn error_too_large(field: &str) -> ApiError {
    super::error::unprocessable("AMOUNT_TOO_LARGE", format!("{field} is larger than the venue accepts")).on(field)
}

fn asset_param(chain: &Chain, params: &Params) -> Result<AssetIndex, ApiError> {
    let symbol = params.required_text("symbol")?;
    if symbol.len() > crate::config::MAX_SYMBOL_LENGTH
        || !symbol
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-')
    {
        return Err(ApiError::invalid("symbol", "must be an asset symbol such as USDC"));
    }
    chain.config.asset(symbol).ok_or_else(|| {
        ApiError::not_found(
            "UNKNOWN_ASSET",
            format!("{} is not an asset of this chain", symbol.to_ascii_uppercase()),
        )
        .on("symbol")
    })
}

/// The built-in ledger mode has no real chain transaction: the id is a keccak-256 hash over
/// the transfer's terms and a random salt, shaped like a transaction hash and unique.
fn transaction_hash(chain: &Chain, account: &Address, asset: AssetIndex, units: u128, kind: TransferKind) -> [u8; 32] {
    let salt: [u8; 16] = rand::random();
    let mut preimage = Vec::with_capacity(80);
    preimage.extend_from_slice(&chain.config.chain_id.to_be_bytes());
    preimage.extend_from_slice(account.as_bytes());
    preimage.extend_from_slice(&asset.0.to_be_bytes());
    preimage.extend_from_slice(&units.to_be_bytes());
    preimage.push(kind as u8);
    preimage.extend_from_slice(&salt);
    keccak256(&preimage).0
}

/// POST /portfolio/deposit
pub async fn deposit(venue: Arc<Venue>, params: Params) -> Answer {
    transfer(venue, params, TransferKind::Deposit).await
}

/// POST /portfolio/withdraw
pub async fn withdraw(venue: Arc<Venue>, params: Params) -> Answer {
    transfer(venue, params, TransferKind::Withdrawal).await
}

async fn transfer_history(venue: Arc<Venue>, params: Params, kind: TransferKind) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let account = address_param(&params, "account")?;
    let request = page_request(&params)?;
    let page = history(&chain)
        .await?
        .transfers(&account, kind, request)
        .map_err(store_error)?;
    let transfers: Vec<Value> = page
        .items
        .iter()
        .map(|transfer| render::transfer(&chain.config, transfer))
        .collect();
    let name = match kind {
        TransferKind::Deposit => "deposits",
        TransferKind::Withdrawal => "withdrawals",
    };
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "account": checksummed(&account),
        name: transfers,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /portfolio/depositHistories
pub async fn deposit_history(venue: Arc<Venue>, params: Params) -> Answer {
    transfer_history(venue, params, TransferKind::Deposit).await
}

/// GET /portfolio/withdrawHistories
pub async fn withdraw_history(venue: Arc<Venue>, params: Params) -> Answer {
    transfer_history(venue, params, TransferKind::Withdrawal).await
}

/// GET /account/assetsInfo
pub async fn assets_info(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let assets: Vec<Value> = chain
        .config
        .assets
        .iter()
        .map(|asset| {
            json!({
                "symbol": asset.symbol,
                "name": asset.name,
                "decimals": asset.decimals,
                "address": asset.address.as_ref().map(checksummed),
                "native": asset.address.is_none(),
            })
        })
        .collect();
    Ok(json!({"chainId": chain.config.chain_id.to_string(), "assets": assets}))
}

/// GET /account/assetBalances
pub async fn asset_balances(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let account = address_param(&params, "account")?;
    let balances: Vec<Value> = chain.read_engine(|engine| {
        (0..chain.config.assets.len())
            .map(|index| {
                let asset = AssetIndex(index as u16);
                render::balance(&chain.config, asset, engine.balance(&account, asset))
            })
            .collect()
    });
    Ok(json!({"chainId": chain.config.chain_id.to_string(), "account": checksummed(&account), "balances": balances}))
}

/// GET /account/assetPairs
pub async fn asset_pairs(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let fee =
        |rate: dexd_core::FeeRate| dexd_core::decimal::format_scaled_units(u128::from(rate.parts_per_million()), 6);
    let pairs: Vec<Value> = chain
        .config
        .pairs
        .iter()
        .enumerate()
        .map(|(index, pair)| {
            let last_price = chain.read_engine(|engine| engine.last_price(PairIndex(index as u16)));
            let definition = &pair.definition;
            json!({
                "symbol": pair.symbol,
                "base": chain.config.asset_config(definition.base).symbol,
                "quote": chain.config.asset_config(definition.quote).symbol,
                "tickSize": definition.tick_size.to_string(),
                "stepSize": definition.step_size.to_string(),
                "minAmount": definition.min_amount.to_string(),
                "minNotional": definition.min_notional.to_string(),
                "makerFee": fee(definition.maker_fee),
                "takerFee": fee(definition.taker_fee),
                "lastPrice": last_price.map(|price| pair.spec.format_price(price)),
            })
        })
        .collect();
    Ok(json!({"chainId": chain.config.chain_id.to_string(), "pairs": pairs}))
}

/// GET /account/tradableAmounts
pub async fn tradable_amounts(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let account = address_param(&params, "account")?;
    let tradable: Vec<Value> = chain.read_engine(|engine| {
        chain
            .config
            .pairs
            .iter()
            .enumerate()
            .filter_map(|(index, pair)| {
                let amounts = engine.tradable_amounts(&account, PairIndex(index as u16))?;
                let spec = &pair.spec;
                Some(json!({
                    "symbol": pair.symbol,
                    "buy": {
                        "maxAmount": render::asset_amount(&chain.config, spec.base(), spec.base_amount(amounts.buy_quantity).units()),
                        "maxCost": render::asset_amount(&chain.config, spec.quote(), amounts.buy_cost.units()),
                    },
                    "sell": {"maxAmount": render::asset_amount(&chain.config, spec.base(), amounts.sell_amount.units())},
                }))
            })
            .collect()
    });
    Ok(json!({"chainId": chain.config.chain_id.to_string(), "account": checksummed(&account), "tradable": tradable}))
}

/// GET /order/orderDetail
pub async fn order_detail(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let order_id = order_id_param(&params)?;
    let stored = history(&chain)
        .await?
        .order(&order_id)
        .map_err(store_error)?
        .ok_or_else(|| ApiError::not_found("ORDER_NOT_FOUND", "no such order on this chain").on("orderId"))?;
    let message = render::order_message(&chain.config, &stored.record.terms, stored.nonce, stored.expiry_ms);
    Ok(json!({
        "order": render::order(&chain.config, &stored),
        "typedData": signing_domain(&chain).order_typed_data(&message),
    }))
}

/// GET /account/eip712
pub async fn eip712_types(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let mut description = crate::crypto::request_types_json(signing_domain(&chain));
    description["chainId"] = json!(chain.config.chain_id.to_string());
    description["primaryTypes"] = json!({
        "addOrder": "Order",
        "cancelOrder": "CancelOrder",
        "deposit": "Deposit",
        "withdraw": "Withdraw",
    });
    description["maxLifetimeMs"] = json!(dexd_core::MAX_SIGNED_REQUEST_LIFETIME_MS);
    Ok(description)
}

/// GET /health
pub async fn health(_venue: Arc<Venue>, _params: Params) -> Answer {
    Ok(json!({"status": "ok"}))
}
