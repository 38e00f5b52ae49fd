//! POST `/order/amendOrder`: an open order cancelled and its replacement placed in one journaled
//! command. The replacement keeps the old order's terms; an amount left out is the old order's
//! remaining amount, read from the engine and sent with the command, which the engine refuses
//! if the old order filled in between (so nothing filled is sold again): the handler then reads
//! the new remaining amount and tries again, a few times.

use std::sync::Arc;

use dexd_core::{Amend, Command, Event, NewOrder, OrderId, PairIndex, Quantity, Rejection};
use dexd_store::{now_ms, Authorization, StoredOrder, WriteError};
use serde_json::json;

use super::order::{open_order_of, order_not_open, sign_order, trades_of};
use super::{account_write, history, signing_domain, spend_write_budget, write_error, Answer};
use crate::api::credential::{Actor, Credential};
use crate::api::error::ApiError;
use crate::api::operations::{AMENDED_AMOUNT, AMENDED_ORDER_ID, AMENDED_PRICE, ORDER_OF_PAIR};
use crate::api::params::Params;
use crate::api::render;
use crate::api::state::AppState;
use dexd_venue::Chain;

/// How many times an amend whose old order filled while it was prepared is prepared again.
pub const AMEND_ATTEMPTS: usize = 3;

/// What the client asked to change.
struct AmendTerms {
    pair: PairIndex,
    order_id: OrderId,
    price: Option<dexd_core::Price>,
    quantity: Option<Quantity>,
}

fn amend_terms(chain: &Chain, params: &Params) -> Result<AmendTerms, ApiError> {
    let markets = chain.markets();
    let pair_index = params.require_pair(chain, &ORDER_OF_PAIR)?;
    let order_id = params.require(&AMENDED_ORDER_ID)?;
    let pair = markets.config.pair_config(pair_index);
    let price = params
        .read(&AMENDED_PRICE)?
        .map(|price| pair.spec.price_from_decimal(price))
        .transpose()
        .map_err(|error| ApiError::from_pair_value(AMENDED_PRICE.field.name, error))?;
    let quantity = params
        .read(&AMENDED_AMOUNT)?
        .map(|amount| pair.spec.quantity_from_decimal(amount))
        .transpose()
        .map_err(|error| ApiError::from_pair_value(AMENDED_AMOUNT.field.name, error))?;
    if price.is_none() && quantity.is_none() {
        return Err(ApiError::new(
            axum::http::StatusCode::BAD_REQUEST,
            "MISSING_PARAMETER",
            "give price, amount or both: what the new order changes",
        )
        .on("price"));
    }
    Ok(AmendTerms {
        pair: pair_index,
        order_id,
        price,
        quantity,
    })
}

/// The replacement of `old` by `terms`, signed (with the key) or authorized (by the client's
/// signature of the `AmendOrder` type, whose digest is the new order's id).
fn authorized_replacement(
    chain: &Chain,
    credential: &Credential,
    actor: &mut Actor,
    terms: &AmendTerms,
    replacement: NewOrder,
) -> Result<(NewOrder, Authorization), ApiError> {
    if let Credential::Key { .. } = credential {
        // The venue signs the new order as any order, so that it verifies like one.
        return sign_order(chain, replacement, credential, actor);
    }
    let (nonce, expiry_ms) = credential.nonce_and_expiry(now_ms());
    let message = chain.markets().messages.amend(
        &actor.account,
        &terms.order_id,
        &replacement,
        (terms.price.is_some(), terms.quantity.is_some()),
        (nonce, expiry_ms),
    );
    let digest = signing_domain(chain).digest(&message);
    let new_id = OrderId::from_bytes(digest);
    let authorization = credential.authorize_actor(digest, actor, (nonce, expiry_ms), Some(new_id))?;
    Ok((
        NewOrder {
            order_id: new_id,
            ..replacement
        },
        authorization,
    ))
}

/// POST /order/amendOrder
pub async fn amend_order(app: Arc<AppState>, params: Params) -> Answer {
    params.refuse_nulls()?;
    let (chain, credential, mut actor) = account_write(&app, &params)?;
    let account = actor.account;
    let terms = amend_terms(&chain, &params)?;
    // The old order's signature, for its rendering; its remaining amount is the engine's.
    let old = open_order_of(history(&chain).await?, &account, terms.pair, &terms.order_id)?;
    if old.record.terms.price.is_none() {
        return Err(ApiError::invalid("orderId", "names a market order, which never rests"));
    }
    spend_write_budget(&app, &chain, &account)?;
    for attempt in 1..=AMEND_ATTEMPTS {
        let remaining = chain
            .read_engine(|engine| engine.open_order(&terms.order_id).map(|record| record.remaining()))
            .ok_or_else(order_not_open)?;
        let mut replacement = NewOrder {
            price: terms.price.or(old.record.terms.price),
            quantity: terms.quantity.unwrap_or(remaining),
            ..old.record.terms.clone()
        };
        // The replacement keeps the old order's trigger, group and expiry, and is signed as an
        // order is now, whenever the old one was placed.
        if let Some(mut conditions) = replacement.conditions.take() {
            conditions.signed_without_conditions = false;
            replacement.conditions = conditions.boxed();
        }
        let (replacement, authorization) =
            authorized_replacement(&chain, &credential, &mut actor, &terms, replacement)?;
        let new_id = replacement.order_id;
        let command = actor.command(Command::AmendOrder(Amend {
            account,
            order_id: terms.order_id,
            replacement,
            amount_from_remaining: terms.quantity.is_none().then_some(remaining),
            keeps_price: terms.price.is_none(),
        }));
        match crate::api::written::submit(&chain, command, Some(authorization.clone())).await {
            Ok(events) => return amended(&chain, &events, old, new_id, authorization),
            Err(WriteError::Rejected(Rejection::OrderChanged)) if attempt < AMEND_ATTEMPTS => continue,
            Err(WriteError::Rejected(Rejection::OrderNotFound)) => return Err(order_not_open()),
            Err(error) => return Err(write_error(error)),
        }
    }
    Err(write_error(WriteError::Rejected(Rejection::OrderChanged)))
}

/// The answer: the old order cancelled, the new one, and the trades it made.
fn amended(
    chain: &Chain,
    events: &[Event],
    old: StoredOrder,
    new_id: OrderId,
    authorization: Authorization,
) -> Result<serde_json::Value, ApiError> {
    let cancelled_id = old.record.terms.order_id;
    let record_of = |id: OrderId| {
        events.iter().rev().find_map(|event| match event {
            Event::OrderUpdated(record) if record.terms.order_id == id => Some(record.clone()),
            _ => None,
        })
    };
    let cancelled = StoredOrder {
        record: record_of(cancelled_id).ok_or_else(ApiError::internal)?,
        ..old
    };
    let placed = StoredOrder {
        record: record_of(new_id).ok_or_else(ApiError::internal)?,
        nonce: authorization.nonce,
        expiry_ms: authorization.expiry_ms,
        signature: authorization.signature,
        batch: None,
    };
    let markets = chain.markets();
    Ok(json!({
        "cancelled": render::order(&markets.config, &cancelled),
        "order": render::order(&markets.config, &placed),
        "trades": trades_of(&markets, events),
    }))
}
