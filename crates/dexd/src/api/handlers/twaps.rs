//! TWAP orders (contract version 5): `POST /order/addTwap`, `POST /order/cancelTwap` and `GET
//! /order/twaps`. The handlers read and sign the terms; the bounds, the running limits and the
//! slices are the engine's, and the venue's timer journals each slice.

use std::sync::Arc;

use dexd_core::{Command, Event, NewTwap, Rejection, TwapRecord, TwapRejection};
use dexd_crypto::checksummed;
use dexd_store::WriteError;
use serde_json::{json, Value};

use super::{account_write, signing_domain, spend_write_budget, write_error, Answer};
use crate::api::error::ApiError;
use crate::api::operations::{
    AMOUNT, CLIENT_TWAP_ID, DIRECTION, ORDER_PAIR, TWAP_DURATION, TWAP_ID, TWAP_INTERVAL, TWAP_LIMIT_PRICE,
};
use crate::api::params::Params;
use crate::api::render;
use crate::api::state::AppState;
use dexd_venue::Chain;

fn twap_answer(chain: &Chain, twap: &TwapRecord) -> Value {
    json!({ "twap": render::twap(&chain.markets().config, twap) })
}

/// The account's kept TWAP with the same `clientTwapId` and the same terms: what a request sent
/// again is answered with.
fn same_twap(chain: &Chain, terms: &NewTwap) -> Option<TwapRecord> {
    let client_twap_id = terms.client_twap_id.as_deref()?;
    chain.read_engine(|engine| {
        engine
            .twap_by_client_id(&terms.account, client_twap_id)
            .filter(|kept| kept.terms == *terms)
            .cloned()
    })
}

/// POST /order/addTwap
pub async fn add_twap(app: Arc<AppState>, params: Params) -> Answer {
    params.refuse_nulls()?;
    let (chain, credential, mut actor) = account_write(&app, &params)?;
    let markets = chain.markets();
    // Every check of form (400) comes before the pair's rules and the bounds (422).
    let pair_index = params.require_pair(&chain, &ORDER_PAIR)?;
    let direction = params.require(&DIRECTION)?;
    let amount = params.require(&AMOUNT)?;
    let duration_ms = params.require(&TWAP_DURATION)?;
    let interval_ms = params.require(&TWAP_INTERVAL)?;
    let limit_price = params.read(&TWAP_LIMIT_PRICE)?;
    let client_twap_id = params.read(&CLIENT_TWAP_ID)?;
    let spec = &markets.config.pair_config(pair_index).spec;
    let quantity = spec
        .quantity_from_decimal(amount)
        .map_err(|error| ApiError::from_pair_value(AMOUNT.field.name, error))?;
    let limit_price = limit_price
        .map(|price| spec.price_from_decimal(price))
        .transpose()
        .map_err(|error| ApiError::from_pair_value(TWAP_LIMIT_PRICE.field.name, error))?;
    let terms = NewTwap {
        account: actor.account,
        pair: pair_index,
        direction,
        quantity,
        duration_ms,
        interval_ms,
        limit_price,
        client_twap_id,
    };
    terms
        .check_bounds()
        .map_err(|message| ApiError::from_rejection(Rejection::Twap(TwapRejection::Invalid(message))))?;
    let authorization = credential.authorize_actor_client_signature(&mut actor, |signed| {
        signing_domain(&chain).digest(&markets.messages.twap(&terms, signed))
    })?;
    if let Some(kept) = same_twap(&chain, &terms) {
        return Ok(twap_answer(&chain, &kept));
    }
    spend_write_budget(&app, &chain, &terms.account)?;
    let command = actor.command(Command::StartTwap(terms.clone()));
    match crate::api::written::submit(&chain, command, Some(authorization)).await {
        Ok(events) => Ok(twap_answer(&chain, &updated_twap(&events)?)),
        // Two copies raced: the one applied first is the answer.
        Err(WriteError::Rejected(Rejection::Twap(TwapRejection::ClientIdReused))) => match same_twap(&chain, &terms) {
            Some(kept) => Ok(twap_answer(&chain, &kept)),
            None => Err(write_error(WriteError::Rejected(Rejection::Twap(
                TwapRejection::ClientIdReused,
            )))),
        },
        Err(error) => Err(write_error(error)),
    }
}

fn updated_twap(events: &[Event]) -> Result<TwapRecord, ApiError> {
    events
        .iter()
        .rev()
        .find_map(|event| match event {
            Event::TwapUpdated(twap) => Some(twap.clone()),
            _ => None,
        })
        .ok_or_else(ApiError::internal)
}

/// POST /order/cancelTwap
pub async fn cancel_twap(app: Arc<AppState>, params: Params) -> Answer {
    params.refuse_nulls()?;
    let (chain, credential, mut actor) = account_write(&app, &params)?;
    let account = actor.account;
    let twap_id = params.require(&TWAP_ID)?;
    let authorization = credential.authorize_actor_client_signature(&mut actor, |signed| {
        signing_domain(&chain).digest(&chain.markets().messages.cancel_twap(&account, twap_id, signed))
    })?;
    spend_write_budget(&app, &chain, &account)?;
    let command = actor.command(Command::CancelTwap { account, twap_id });
    let events = crate::api::written::submit(&chain, command, Some(authorization))
        .await
        .map_err(write_error)?;
    Ok(twap_answer(&chain, &updated_twap(&events)?))
}

/// GET /order/twaps
pub async fn twaps(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let account = params.account_read()?;
    let twaps: Vec<Value> = chain.read_engine(|engine| {
        engine
            .twaps_of(&account)
            .iter()
            .map(|twap| render::twap(&chain.markets().config, twap))
            .collect()
    });
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&account),
        "twaps": twaps,
    }))
}
