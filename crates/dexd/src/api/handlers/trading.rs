//! The trading extensions market makers use (`/order/batchOrders`, `batchCancel`, `cancelAll`,
//! `amendOrder`, `cancelAllAfter`): each one command, or for a batch one group of commands
//! journaled in one transaction, so it is atomic and durable before its answer.
//!
//! A batch refuses itself whole for a malformed request (a 400: its shape, an unknown field, a
//! second pair); any other refusal is one item's result and refuses no other item. Agents act
//! here as in placing one order: see [`crate::api::credential::Actor`].

use std::collections::HashSet;
use std::sync::Arc;

use dexd_core::{Address, Command, Event, NewOrder, OrderStatus, PairIndex, SwitchSetting};
use dexd_store::{Authorization, StoredOrder, WriteError};
use serde_json::value::RawValue;
use serde_json::{json, Value};

use super::order::{open_order_of, order_not_open, order_terms, placed_order, sign_placement};
use super::{account_write, credential_of, history, signing_domain, spend_write_budget, write_error, Answer};
use crate::api::credential::{Actor, Credential};
use crate::api::error::ApiError;
use crate::api::operations::{
    ItemList, Typed, BATCH_CANCEL_ITEMS, BATCH_ORDER_ITEMS, CANCEL_ALL_PAIR, MAX_BATCH_ITEMS, ORDER_ID, ORDER_OF_PAIR,
    ORDER_PAIR, PRIVATE_KEY, SIGNATURE, SIGNER, SUBACCOUNT, SWITCH_TIMEOUT,
};
use crate::api::params::Params;
use crate::api::render;
use crate::api::state::AppState;
use dexd_venue::Chain;

// One signature covers at most a batch's items, and the journal keeps a place among that many.
const _: () = assert!(
    dexd_crypto::MAX_ORDERS_PER_BATCH_SIGNATURE == MAX_BATCH_ITEMS
        && dexd_store::codec::MAX_BATCH_ORDER_HASHES == MAX_BATCH_ITEMS
);

/// A batch's credential: the top-level key (one for every item, derived once), the client's one
/// signature of a batch of orders (contract version 4), or each item's own signature.
enum BatchCredential {
    Key(Credential, Actor),
    SignedOnce(Credential, Actor),
    ItemSigned,
}

impl BatchCredential {
    /// The credential of a batch; `signs_once`: a batch of orders, which may be signed once.
    fn from_params(
        app: &AppState,
        chain: &Chain,
        params: &Params,
        signs_once: bool,
    ) -> Result<BatchCredential, ApiError> {
        // Any signed field at the top makes a batch of orders one signed once: the others are
        // then required (a missing one is named).
        let signed_at_top = params.signed_fields_given().next().is_some();
        if signs_once && !params.contains(PRIVATE_KEY.field.name) && signed_at_top {
            let (credential, actor) = credential_of(app, chain, params)?;
            return Ok(BatchCredential::SignedOnce(credential, actor));
        }
        if !params.contains(PRIVATE_KEY.field.name) {
            if params.contains(SUBACCOUNT.field.name) {
                return Err(ApiError::invalid(
                    SUBACCOUNT.field.name,
                    "goes with privateKey; signed items name the subaccount's address in account",
                ));
            }
            if params.contains(SIGNER.field.name) {
                return Err(ApiError::invalid(
                    "account",
                    "goes in each item of a signed batch, or at the top with nonce, expiry and signature for a batch \
                     of orders signed once (or beside privateKey, for an agent)",
                ));
            }
            return Ok(BatchCredential::ItemSigned);
        }
        let (credential, actor) = credential_of(app, chain, params)?;
        Ok(BatchCredential::Key(credential, actor))
    }

    /// An item's credential and who it acts for: the batch's key, or the item's own signature
    /// (its `account`, `nonce`, `expiry` and `signature` are required).
    fn for_item<'a>(
        &'a self,
        app: &AppState,
        chain: &Chain,
        item: &'a Params,
    ) -> Result<(ItemCredential<'a>, Actor), ApiError> {
        match self {
            BatchCredential::Key(credential, actor) | BatchCredential::SignedOnce(credential, actor) => {
                Ok((ItemCredential::Shared(credential), *actor))
            }
            BatchCredential::ItemSigned => {
                if !item.contains(SIGNATURE.field.name) {
                    return Err(ApiError::new(
                        axum::http::StatusCode::UNAUTHORIZED,
                        "UNAUTHENTICATED",
                        "a batch needs privateKey, or account, nonce, expiry and signature in every item",
                    )
                    .on("privateKey"));
                }
                let (credential, actor) = credential_of(app, chain, item)?;
                Ok((ItemCredential::Own(credential), actor))
            }
        }
    }
}

enum ItemCredential<'a> {
    Shared(&'a Credential),
    Own(Credential),
}

impl ItemCredential<'_> {
    fn get(&self) -> &Credential {
        match self {
            ItemCredential::Shared(credential) => credential,
            ItemCredential::Own(credential) => credential,
        }
    }
}

/// The items of a batch, each checked for unknown fields against the list's item fields.
fn batch_items(params: &Params, list: &Typed<ItemList>) -> Result<Vec<Params>, ApiError> {
    let name = list.field.name;
    let items = params.items(list)?.ok_or_else(|| ApiError::missing(name))?;
    let crate::api::operations::Kind::Items { fields, .. } = list.field.kind else {
        return Err(ApiError::internal());
    };
    for (index, item) in items.iter().enumerate() {
        item.check_fields(fields).map_err(|error| error.within(name, index))?;
    }
    Ok(items)
}

/// Refuses the batch for the first item that is malformed (a 400 of its terms, `terms_of`, or of
/// its credential's form), before any item's rules or signature are looked at: an item both
/// malformed and against a rule refuses the batch as malformed.
fn refuse_malformed_items(
    items: &[Params],
    list: &str,
    signed_items: bool,
    terms_of: impl Fn(&Params) -> Result<(), ApiError>,
) -> Result<(), ApiError> {
    let malformed = |result: Result<(), ApiError>| match result {
        Err(error) if error.status == axum::http::StatusCode::BAD_REQUEST => Some(error),
        _ => None,
    };
    for (index, item) in items.iter().enumerate() {
        if let Some(error) = malformed(terms_of(item)) {
            return Err(error.within(list, index));
        }
        if signed_items {
            // The credential's form only: its expiry (401) is not a malformed request.
            if let Some(error) = malformed(item.credential(None).map(drop)) {
                return Err(error.within(list, index));
            }
        }
    }
    Ok(())
}

/// Every item on the first item's pair, or 422 `BATCH_MIXES_PAIRS` naming the first that is not
/// (a rule of batches, which the document's schema cannot state).
fn one_pair(chain: &Chain, items: &[Params], list: &str) -> Result<PairIndex, ApiError> {
    let mut pair = None;
    for (index, item) in items.iter().enumerate() {
        let this = item
            .require_pair(chain, &ORDER_PAIR)
            .map_err(|error| error.within(list, index))?;
        match pair {
            None => pair = Some(this),
            Some(first) if first != this => {
                return Err(crate::api::error::unprocessable(
                    "BATCH_MIXES_PAIRS",
                    format!(
                        "a batch holds orders of one pair; this one is not on the first order's pair, {}",
                        chain.markets().config.pair_config(first).symbol
                    ),
                )
                .on("symbol")
                .within(list, index))
            }
            Some(_) => {}
        }
    }
    pair.ok_or_else(|| ApiError::missing(list))
}

/// A batch item's refusal: a malformed item (400) or one without a credential refuses the whole
/// batch; any other refusal is the item's own result.
fn item_refusal(error: ApiError, list: &str, index: usize) -> Result<Value, ApiError> {
    if error.status == axum::http::StatusCode::BAD_REQUEST || error.code == "UNAUTHENTICATED" {
        return Err(error.within(list, index));
    }
    Ok(json!({"error": error.object()}))
}

/// Takes one state change from each account's budget, once per account of the batch.
fn spend_budgets(app: &AppState, chain: &Chain, accounts: impl IntoIterator<Item = Address>) -> Result<(), ApiError> {
    let mut spent = HashSet::new();
    for account in accounts {
        if spent.insert(account) {
            spend_write_budget(app, chain, &account)?;
        }
    }
    Ok(())
}

/// One order's result in a batch's answer: written straight from the typed objects, as a single
/// placement's answer is (a batch of 20 builds no JSON value per order).
// Each variant is serialized once, right away; boxing the common one would cost an allocation per
// order for nothing.
#[allow(clippy::large_enum_variant)]
#[derive(serde::Serialize)]
#[serde(untagged)]
enum PlacementResult<'a> {
    Placed(super::order::PlacedOrder<'a>),
    Refused { error: Value },
}

/// A batch's answer.
#[derive(serde::Serialize)]
struct BatchOrdersAnswer<'a> {
    results: Vec<PlacementResult<'a>>,
}

/// Each order of a batch: its terms, credential and actor, or the item's refusal (an error that
/// refuses the whole batch is returned as such).
#[allow(clippy::type_complexity)]
fn batch_order_terms<'a>(
    app: &AppState,
    chain: &Chain,
    batch_credential: &'a BatchCredential,
    items: &'a [Params],
    list: &str,
) -> Result<Vec<Result<(NewOrder, ItemCredential<'a>, Actor), Value>>, ApiError> {
    let mut terms = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        // The terms first: a malformed order refuses the batch even when its signature is bad.
        let read = order_terms(chain, item, Address::from_bytes([0; 20])).and_then(|terms| {
            let (credential, actor) = batch_credential.for_item(app, chain, item)?;
            Ok((
                NewOrder {
                    account: actor.account,
                    ..terms
                },
                credential,
                actor,
            ))
        });
        terms.push(match read {
            Ok(read) => Ok(read),
            Err(error) => Err(item_refusal(error, list, index)?),
        });
    }
    Ok(terms)
}

/// POST /order/batchOrders
pub async fn batch_orders(app: Arc<AppState>, params: Params) -> Result<Box<RawValue>, ApiError> {
    params.refuse_nulls()?;
    const LIST: &str = BATCH_ORDER_ITEMS.field.name;
    let chain = params.chain(&app.venue)?;
    let batch_credential = BatchCredential::from_params(&app, &chain, &params, true)?;
    let items = batch_items(&params, &BATCH_ORDER_ITEMS)?;
    one_pair(&chain, &items, LIST)?;
    let signed_items = matches!(batch_credential, BatchCredential::ItemSigned);
    refuse_malformed_items(&items, LIST, signed_items, |item| {
        order_terms(&chain, item, Address::from_bytes([0; 20])).map(drop)
    })?;
    let signed_once = matches!(batch_credential, BatchCredential::SignedOnce(..));
    let (results, placements) = match batch_credential {
        // One signature over every order (contract version 4): the key's, or the client's.
        BatchCredential::Key(credential, actor) | BatchCredential::SignedOnce(credential, actor) => {
            let signed = super::batch_signing::sign_once(&app, &chain, &items, credential, actor)?;
            (signed.refusals, signed.placements)
        }
        BatchCredential::ItemSigned => each_item_signed(&app, &chain, &batch_credential, &items)?,
    };
    let keys: Vec<super::order::PlacedKey> = placements.iter().map(|placement| placement.key.clone()).collect();
    let commands: Vec<_> = placements
        .into_iter()
        .map(|placement| (placement.command, Some(placement.authorization)))
        .collect();
    let outcomes = if commands.is_empty() {
        Vec::new()
    } else {
        crate::api::written::submit_group(&chain, commands)
            .await
            .map_err(write_error)?
    };
    // A batch the client signed once whose signature was refused (its nonce used before or
    // expired, or a signer that is neither the account nor an agent it approved: an altered
    // order recovers to another address) placed none of its orders: the refusal is the answer,
    // as for one signed request.
    let refuses_the_signature = |outcome: &Result<_, WriteError>| {
        matches!(
            outcome,
            Err(WriteError::Rejected(
                dexd_core::Rejection::Nonce(_) | dexd_core::Rejection::AgentNotAllowed
            ))
        )
    };
    if signed_once && !outcomes.is_empty() && outcomes.iter().all(refuses_the_signature) {
        if let Some(Err(refusal)) = outcomes.into_iter().next() {
            return Err(write_error(refusal));
        }
        return Err(ApiError::internal());
    }
    // The placed orders and their events, kept while the answer borrows from them.
    let mut placed: Vec<Result<(StoredOrder, dexd_store::Events), Value>> = Vec::with_capacity(keys.len());
    for (key, outcome) in keys.iter().zip(outcomes) {
        placed.push(match outcome {
            Ok(events) => Ok((key.placed(&events)?, events)),
            Err(error) => Err(write_error(error).object()),
        });
    }
    let mut placed = placed.iter();
    let markets = chain.markets();
    let results = results
        .into_iter()
        .map(|result| match result {
            Some(Value::Object(mut refused)) => Ok(PlacementResult::Refused {
                error: refused.remove("error").unwrap_or(Value::Null),
            }),
            Some(_) => Err(ApiError::internal()),
            None => match placed.next().ok_or_else(ApiError::internal)? {
                Ok((stored, events)) => Ok(PlacementResult::Placed(placed_order(&markets, stored, events))),
                Err(error) => Ok(PlacementResult::Refused { error: error.clone() }),
            },
        })
        .collect::<Result<Vec<_>, ApiError>>()?;
    serde_json::value::to_raw_value(&BatchOrdersAnswer { results }).map_err(|error| {
        tracing::error!(%error, "writing a batch's answer failed");
        ApiError::internal()
    })
}

/// A batch whose items each carry their own signature: each item's order checked against its
/// signature, then each account's budget spent once its signature is known good.
#[allow(clippy::type_complexity)]
fn each_item_signed(
    app: &AppState,
    chain: &Chain,
    batch_credential: &BatchCredential,
    items: &[Params],
) -> Result<(Vec<Option<Value>>, Vec<super::order::Placement>), ApiError> {
    // Every item's terms first: a malformed one refuses the batch before anything is checked.
    let terms = batch_order_terms(app, chain, batch_credential, items, "orders")?;
    let mut results: Vec<Option<Value>> = Vec::with_capacity(terms.len());
    let mut placements = Vec::new();
    for read in terms {
        match read.and_then(|(terms, credential, actor)| {
            sign_placement(chain, terms, credential.get(), actor).map_err(|error| json!({"error": error.object()}))
        }) {
            Ok(placement) => {
                results.push(None);
                placements.push(placement);
            }
            Err(refused) => results.push(Some(refused)),
        }
    }
    spend_budgets(app, chain, placements.iter().map(|placement| placement.account))?;
    Ok((results, placements))
}

/// POST /order/batchCancel
pub async fn batch_cancel(app: Arc<AppState>, params: Params) -> Answer {
    params.refuse_nulls()?;
    const LIST: &str = BATCH_CANCEL_ITEMS.field.name;
    let chain = params.chain(&app.venue)?;
    let batch_credential = BatchCredential::from_params(&app, &chain, &params, false)?;
    let items = batch_items(&params, &BATCH_CANCEL_ITEMS)?;
    let signed_items = matches!(batch_credential, BatchCredential::ItemSigned);
    refuse_malformed_items(&items, LIST, signed_items, |item| {
        item.require_pair(&chain, &ORDER_OF_PAIR)?;
        item.require(&ORDER_ID).map(drop)
    })?;
    let reader = history(&chain).await?;
    let mut results: Vec<Option<Value>> = Vec::with_capacity(items.len());
    let mut cancels: Vec<(Command, Option<Authorization>, StoredOrder)> = Vec::new();
    for (index, item) in items.iter().enumerate() {
        let prepared = prepare_cancel(&app, &chain, reader, &batch_credential, item);
        match prepared {
            Ok(cancel) => {
                results.push(None);
                cancels.push(cancel);
            }
            Err(error) => results.push(Some(item_refusal(error, LIST, index)?)),
        }
    }
    drop(batch_credential);
    let accounts: Vec<Address> = cancels
        .iter()
        .map(|(_, _, stored)| stored.record.terms.account)
        .collect();
    spend_budgets(&app, &chain, accounts)?;
    let commands = cancels
        .iter()
        .map(|(command, authorization, _)| (command.clone(), authorization.clone()))
        .collect();
    let outcomes = if cancels.is_empty() {
        Vec::new()
    } else {
        crate::api::written::submit_group(&chain, commands)
            .await
            .map_err(write_error)?
    };
    let mut outcomes = cancels.into_iter().zip(outcomes);
    let results: Vec<Value> = results
        .into_iter()
        .map(|result| match result {
            Some(refused) => Ok(refused),
            None => {
                let ((_, _, stored), outcome) = outcomes.next().ok_or_else(ApiError::internal)?;
                Ok(match outcome {
                    Ok(events) => {
                        let record = cancelled_record(&events, &stored).ok_or_else(ApiError::internal)?;
                        let stored = StoredOrder { record, ..stored };
                        json!({"order": render::order(&chain.markets().config, &stored)})
                    }
                    Err(WriteError::Rejected(dexd_core::Rejection::OrderNotFound)) => {
                        json!({"error": order_not_open().object()})
                    }
                    Err(error) => json!({"error": write_error(error).object()}),
                })
            }
        })
        .collect::<Result<_, ApiError>>()?;
    Ok(json!({ "results": results }))
}

/// One cancel of a batch: its credential checked, its order found open and the account's.
fn prepare_cancel(
    app: &AppState,
    chain: &Chain,
    reader: &dexd_store::StoreReader,
    batch_credential: &BatchCredential,
    item: &Params,
) -> Result<(Command, Option<Authorization>, StoredOrder), ApiError> {
    // The terms first: a malformed cancel refuses the batch even when its signature is bad.
    let pair_index = item.require_pair(chain, &ORDER_OF_PAIR)?;
    let order_id = item.require(&ORDER_ID)?;
    let (credential, mut actor) = batch_credential.for_item(app, chain, item)?;
    let account = actor.account;
    let authorization = credential
        .get()
        .authorize_actor_client_signature(&mut actor, |signed| {
            signing_domain(chain).digest(&chain.markets().messages.cancel(&account, pair_index, &order_id, signed))
        })?;
    let stored = open_order_of(reader, &account, pair_index, &order_id)?;
    let command = actor.command(Command::CancelOrder {
        account,
        order_id,
        pair: Some(pair_index),
    });
    Ok((command, Some(authorization), stored))
}

/// The state a command's events leave an order in.
fn cancelled_record(events: &[Event], stored: &StoredOrder) -> Option<dexd_core::OrderRecord> {
    events.iter().rev().find_map(|event| match event {
        Event::OrderUpdated(record) if record.terms.order_id == stored.record.terms.order_id => Some(record.clone()),
        _ => None,
    })
}

/// POST /order/cancelAll
pub async fn cancel_all(app: Arc<AppState>, params: Params) -> Answer {
    params.refuse_nulls()?;
    let (chain, credential, mut actor) = account_write(&app, &params)?;
    let account = actor.account;
    let pair = params.pair(&chain, &CANCEL_ALL_PAIR)?;
    let authorization = credential.authorize_actor_client_signature(&mut actor, |signed| {
        signing_domain(&chain).digest(&chain.markets().messages.cancel_all(&account, pair, signed))
    })?;
    spend_write_budget(&app, &chain, &account)?;
    let command = actor.command(Command::CancelAll { account, pair });
    let events = crate::api::written::submit(&chain, command, Some(authorization))
        .await
        .map_err(write_error)?;
    let orders = cancelled_orders_answer(&chain, &events).await?;
    Ok(json!({ "orders": orders }))
}

/// The orders a command cancelled, each with its signature (read back from the history).
async fn cancelled_orders_answer(chain: &Chain, events: &[Event]) -> Result<Vec<Value>, ApiError> {
    let reader = history(chain).await?;
    let mut orders = Vec::new();
    for event in events {
        if let Event::OrderUpdated(record) = event {
            if record.status != OrderStatus::Cancelled {
                continue;
            }
            let stored = reader
                .order(&record.terms.order_id)
                .map_err(super::store_error)?
                .ok_or_else(ApiError::internal)?;
            let stored = StoredOrder {
                record: record.clone(),
                ..stored
            };
            orders.push(
                serde_json::to_value(render::order(&chain.markets().config, &stored))
                    .map_err(|_| ApiError::internal())?,
            );
        }
    }
    Ok(orders)
}

/// POST /order/cancelAllAfter
pub async fn cancel_all_after(app: Arc<AppState>, params: Params) -> Answer {
    params.refuse_nulls()?;
    let (chain, credential, mut actor) = account_write(&app, &params)?;
    let account = actor.account;
    let timeout_ms = params.require(&SWITCH_TIMEOUT)?;
    let authorization = credential.authorize_actor_client_signature(&mut actor, |signed| {
        signing_domain(&chain).digest(&chain.markets().messages.cancel_all_after(&account, timeout_ms, signed))
    })?;
    spend_write_budget(&app, &chain, &account)?;
    // The engine arms it for the time it applies the command plus the timeout, which is what
    // the account signed: the trigger follows from the journal alone.
    let setting = if timeout_ms == 0 {
        SwitchSetting::Off
    } else {
        SwitchSetting::AfterMs(timeout_ms)
    };
    let command = actor.command(Command::SetCancelAllAfter { account, setting });
    crate::api::written::submit(&chain, command, Some(authorization))
        .await
        .map_err(write_error)?;
    // Read after the write: only this account's own later request could have changed it since.
    let trigger_at_ms = match setting {
        SwitchSetting::Off => None,
        _ => chain.read_engine(|engine| engine.cancel_all_after_trigger(&account)),
    };
    Ok(json!({ "triggerAt": trigger_at_ms }))
}
