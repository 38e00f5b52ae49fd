//! A batch of orders signed once (contract version 4): one `OrderBatch` signature over every
//! order of a `/order/batchOrders` request, the client's (`account`, `nonce`, `expiry` and
//! `signature` at the top) or the venue's with the request's `privateKey`.
//!
//! Each order is an `Order` with the batch's nonce and expiry; its id is that order's own digest,
//! as for an order signed alone, and it is journaled with the batch's signature, its index and
//! the struct hash of every order of the batch ([`BatchPlace`]), which is what anyone needs to
//! check it (`GET /order/orderDetail` returns them: `render::batch_proof`). The batch's nonce is
//! claimed once, by the writer (see `dexd_venue`'s `batch_nonce`). This module does not place
//! anything: the batch handler submits what it returns.

use std::sync::Arc;

use dexd_core::{Command, Decimal, NewOrder, OrderId, OrderType};
use dexd_crypto::eip712::{order_struct_hash, OrderMessage};
use dexd_store::{now_ms, Authorization, BatchPlace};
use serde_json::{json, Value};

use super::order::{default_time_in_force, order_terms, PlacedKey, Placement};
use super::{signing_domain, spend_write_budget};
use crate::api::credential::{Actor, Credential};
use crate::api::error::ApiError;
use crate::api::operations::{
    Field, Typed, AMOUNT, BATCH_ORDER_ITEMS, CLIENT_ORDER_ID, DIRECTION, EXPIRES_AT, LIMIT_PRICE, OCO_GROUP,
    ORDER_PAIR, ORDER_TYPE, POST_ONLY, TIME_IN_FORCE, TRIGGER_CONDITION, TRIGGER_PRICE,
};
use crate::api::params::Params;
use crate::api::state::AppState;
use dexd_venue::Chain;

/// The orders of a batch signed once, ready for the writer, and the result of each item the
/// venue refused before signing (`None` where a placement stands).
pub(super) struct SignedOnce {
    /// One per item, in order: the item's refusal, or `None` for the next placement.
    pub(super) refusals: Vec<Option<Value>>,
    /// The signed orders, in order.
    pub(super) placements: Vec<Placement>,
}

/// An item of a batch as the venue reads it: its order, or why the venue refuses it (a pair's
/// rule: a 422).
enum ReadItem {
    Order(Box<NewOrder>),
    Refused(ApiError),
}

/// Reads the orders of `items` and signs them once (with a key) or checks the client's one
/// signature of them.
///
/// A malformed item (a 400) refuses the batch. An item whose terms break a pair's rule (a 422: a
/// price off the tick) is that item's own result: with a key the venue signs the others; with a
/// client's signature, which covers every item, the refused item is hashed from its parameters'
/// canonical text as the client signed it. Two items that are the same order (the same terms
/// under one nonce) each get an id of their own ([`dexd_crypto::BatchProof::order_id`]).
pub(super) fn sign_once(
    app: &AppState,
    chain: &Chain,
    items: &[Params],
    credential: Credential,
    mut actor: Actor,
) -> Result<SignedOnce, ApiError> {
    let client_signed = matches!(credential, Credential::Signed { .. });
    let (refusals, covered) = read_items(chain, items, actor.account, client_signed)?;
    // A key proves the account at once, so its budget is spent before the signing; a client's
    // signature is checked first, or anyone could spend another account's budget.
    if !client_signed {
        spend_write_budget(app, chain, &actor.account)?;
    }
    if covered.iter().all(|(_, read)| matches!(read, ReadItem::Refused(_))) {
        // Nothing to place (and with a client's signature, nothing the venue could verify it
        // by): each item's refusal is the answer.
        return Ok(SignedOnce {
            refusals,
            placements: Vec::new(),
        });
    }
    let (nonce, expiry_ms) = credential.nonce_and_expiry(now_ms());
    let hashes = covered
        .iter()
        .map(|(index, read)| match read {
            ReadItem::Order(terms) => Ok(order_struct_hash(
                &chain.markets().messages.order(terms, nonce, expiry_ms),
            )),
            ReadItem::Refused(error) => refused_item_message(chain, &items[*index], actor.account, (nonce, expiry_ms))
                .map(|message| order_struct_hash(&message))
                .map_err(|_| error.clone().within(LIST, *index)),
        })
        .collect::<Result<Vec<[u8; 32]>, ApiError>>()?;
    let domain = signing_domain(chain);
    let digest = domain.order_batch_digest(&actor.account, &hashes, nonce, expiry_ms);
    let authorization = credential.authorize_actor(digest, &mut actor, (nonce, expiry_ms), None)?;
    drop(credential);
    if client_signed {
        spend_write_budget(app, chain, &actor.account)?;
    }
    let placements = placements_of(covered, hashes.into(), domain, (&authorization, actor));
    Ok(SignedOnce { refusals, placements })
}

/// The name of a batch's list of orders, which item errors name.
const LIST: &str = BATCH_ORDER_ITEMS.field.name;

/// Each item's refusal (`None` where it reads as an order) and the items the signature covers,
/// with their indexes: a malformed item (a 400) refuses the batch.
#[allow(clippy::type_complexity)]
fn read_items(
    chain: &Chain,
    items: &[Params],
    account: dexd_core::Address,
    client_signed: bool,
) -> Result<(Vec<Option<Value>>, Vec<(usize, ReadItem)>), ApiError> {
    let mut refusals: Vec<Option<Value>> = Vec::with_capacity(items.len());
    let mut covered: Vec<(usize, ReadItem)> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        if client_signed {
            if let Some(name) = item.signed_fields_given().next() {
                return Err(ApiError::invalid(
                    name,
                    "an order of a batch signed once carries no credential: account, nonce, expiry and signature \
                     go at the top, once",
                )
                .within(LIST, index));
            }
        }
        match order_terms(chain, item, account) {
            Ok(terms) => {
                refusals.push(None);
                covered.push((index, ReadItem::Order(Box::new(terms))));
            }
            Err(error) if error.status == axum::http::StatusCode::BAD_REQUEST => return Err(error.within(LIST, index)),
            Err(error) => {
                refusals.push(Some(json!({"error": error.object()})));
                if client_signed {
                    covered.push((index, ReadItem::Refused(error)));
                }
            }
        }
    }
    Ok((refusals, covered))
}

/// The covered orders placed, each with its id (the digest of its struct hash), its place in
/// the batch and the batch's one authorization; the refused items are left out.
fn placements_of(
    covered: Vec<(usize, ReadItem)>,
    order_hashes: Arc<[[u8; 32]]>,
    domain: &dexd_crypto::SigningDomain,
    (authorization, actor): (&Authorization, Actor),
) -> Vec<Placement> {
    covered
        .into_iter()
        .enumerate()
        .filter_map(|(place, (_, read))| match read {
            ReadItem::Order(terms) => Some((place, terms)),
            ReadItem::Refused(_) => None,
        })
        .map(|(place, terms)| {
            let mut terms = *terms;
            let proof = dexd_crypto::BatchProof {
                index: place,
                order_hashes: Arc::clone(&order_hashes),
            };
            terms.order_id = OrderId::from_bytes(proof.order_id(domain));
            let batch = BatchPlace {
                index: u8::try_from(place).expect("a batch holds at most 50 orders"),
                order_hashes: Arc::clone(&order_hashes),
            };
            Placement {
                key: PlacedKey {
                    order_id: terms.order_id,
                    nonce: authorization.nonce,
                    expiry_ms: authorization.expiry_ms,
                    signature: authorization.signature,
                    batch: Some(batch.clone()),
                },
                account: actor.account,
                authorization: Authorization {
                    order_id: Some(terms.order_id),
                    batch: Some(batch),
                    ..authorization.clone()
                },
                command: actor.command(Command::PlaceOrder(terms)),
            }
        })
        .collect()
}

/// The `Order` a client signed for an item the venue refuses for a pair's rule, from the
/// canonical text of its parameters (their form was checked): what the client's batch signature
/// covers, although no order comes of it.
fn refused_item_message(
    chain: &Chain,
    item: &Params,
    account: dexd_core::Address,
    (nonce, expiry_ms): ([u8; 32], u64),
) -> Result<OrderMessage, ApiError> {
    let markets = chain.markets();
    let pair = markets.config.pair_config(item.require_pair(chain, &ORDER_PAIR)?);
    // The texts as the client gave them, which its signature covers.
    let text =
        |field: &Field| -> Result<String, ApiError> { Ok(item.text(field.name)?.unwrap_or_default().to_string()) };
    let canonical = |field: &Typed<Decimal>| -> Result<String, ApiError> {
        Ok(item.read(field)?.map(|decimal| decimal.to_string()).unwrap_or_default())
    };
    let order_type = text(&ORDER_TYPE.field)?;
    let time_in_force = match (
        item.text(TIME_IN_FORCE.field.name)?,
        OrderType::from_wire_name(&order_type),
    ) {
        (Some(chosen), _) => chosen.to_string(),
        (None, Some(order_type)) => default_time_in_force(order_type).wire_name().to_string(),
        (None, None) => String::new(),
    };
    Ok(OrderMessage {
        account,
        symbol: pair.symbol.clone(),
        direction: text(&DIRECTION.field)?,
        order_type,
        time_in_force,
        post_only: item.read(&POST_ONLY)?.unwrap_or(false),
        price: canonical(&LIMIT_PRICE)?,
        amount: canonical(&AMOUNT)?,
        client_order_id: text(&CLIENT_ORDER_ID.field)?,
        nonce,
        expiry_ms,
        trigger_price: canonical(&TRIGGER_PRICE)?,
        trigger_condition: text(&TRIGGER_CONDITION.field)?,
        oco_group: text(&OCO_GROUP.field)?,
        expires_at_ms: item.read(&EXPIRES_AT)?.unwrap_or(0),
        without_conditions: false,
    })
}
