//! A batch of orders signed once (contract version 4): one `OrderBatch` signature over every
//! order of a `/order/batchOrders` request, the client's (`account`, `nonce`, `expiry` and
//! `signature` at the top) or the venue's with the request's `privateKey`.
//!
//! Each order is an `Order` with the batch's nonce and expiry; its id is that order's own digest,
//! as for an order signed alone, and it is journaled with the batch's signature, its index and
//! the struct hash of every order of the batch ([`BatchPlace`]), which is what anyone needs to
//! check it (`GET /order/orderDetail` returns them). The batch's nonce is claimed once, by the
//! writer (see `dexd_venue`'s `batch_nonce`). This module does not place anything: the batch
//! handler submits what it returns.

use std::sync::Arc;

use dexd_core::{Command, NewOrder, OrderId};
use dexd_crypto::eip712::order_struct_hash;
use dexd_crypto::order_batch::order_hashes_json;
use dexd_crypto::{hex_prefixed, SigningDomain};
use dexd_store::{now_ms, Authorization, BatchPlace, StoredOrder};
use serde_json::{json, Value};

use super::order::{order_terms, PlacedKey, Placement};
use super::{signing_domain, spend_write_budget};
use crate::api::credential::{Actor, Credential, SIGNED_REQUEST_FIELDS};
use crate::api::error::ApiError;
use crate::api::params::Params;
use crate::api::AppState;
use dexd_venue::Chain;

/// The orders of a batch signed once, ready for the writer, and the result of each item the
/// venue refused before signing (`None` where a placement stands).
pub(super) struct SignedOnce {
    /// One per item, in order: the item's refusal, or `None` for the next placement.
    pub(super) refusals: Vec<Option<Value>>,
    /// The signed orders, in order.
    pub(super) placements: Vec<Placement>,
}

/// Reads the orders of `items` and signs them once (with a key) or checks the client's one
/// signature of them.
///
/// With a key, an item whose terms break a pair's rule (a 422) is that item's result and the
/// venue signs the others. With the client's signature, every item must be read into its
/// order, since the signature covers them all: any refusal of an item's terms refuses the batch.
/// Two items that are the same order (the same terms, hence the same id) refuse the batch.
pub(super) fn sign_once(
    app: &AppState,
    chain: &Chain,
    items: &[Params],
    credential: Credential,
    mut actor: Actor,
) -> Result<SignedOnce, ApiError> {
    const LIST: &str = "orders";
    let client_signed = matches!(credential, Credential::Signed { .. });
    let mut refusals = Vec::with_capacity(items.len());
    let mut orders: Vec<(usize, NewOrder)> = Vec::with_capacity(items.len());
    for (index, item) in items.iter().enumerate() {
        if client_signed {
            if let Some(name) = SIGNED_REQUEST_FIELDS.into_iter().find(|name| item.contains(name)) {
                return Err(ApiError::invalid(
                    name,
                    "an order of a batch signed once carries no credential: account, nonce, expiry and signature \
                     go at the top, once",
                )
                .within(LIST, index));
            }
        }
        match order_terms(chain, item, actor.account) {
            Ok(terms) => {
                refusals.push(None);
                orders.push((index, terms));
            }
            Err(error) if client_signed || error.status == axum::http::StatusCode::BAD_REQUEST => {
                return Err(error.within(LIST, index))
            }
            Err(error) => refusals.push(Some(json!({"error": error.object()}))),
        }
    }
    // A key proves the account at once, so its budget is spent before the signing; a client's
    // signature is checked first, or anyone could spend another account's budget.
    if !client_signed {
        spend_write_budget(app, &actor.account)?;
    }
    if orders.is_empty() {
        return Ok(SignedOnce {
            refusals,
            placements: Vec::new(),
        });
    }
    let (nonce, expiry_ms) = credential.nonce_and_expiry(now_ms());
    let hashes: Vec<[u8; 32]> = orders
        .iter()
        .map(|(_, terms)| order_struct_hash(&chain.messages.order(terms, nonce, expiry_ms)))
        .collect();
    refuse_repeated_orders(&orders, &hashes)?;
    let domain = signing_domain(chain);
    let digest = domain.order_batch_digest(&actor.account, &hashes, nonce, expiry_ms);
    let authorization = credential.authorize_actor(digest, &mut actor, (nonce, expiry_ms), None)?;
    drop(credential);
    if client_signed {
        spend_write_budget(app, &actor.account)?;
    }
    let order_hashes: Arc<[[u8; 32]]> = hashes.into();
    let placements = orders
        .into_iter()
        .enumerate()
        .map(|(index, (_, mut terms))| {
            terms.order_id = OrderId::from_bytes(domain.digest_of_struct_hash(&order_hashes[index]));
            let batch = BatchPlace {
                index: u8::try_from(index).expect("a batch holds at most 50 orders"),
                order_hashes: Arc::clone(&order_hashes),
            };
            Placement {
                key: PlacedKey {
                    order_id: terms.order_id,
                    nonce,
                    expiry_ms,
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
        .collect();
    Ok(SignedOnce { refusals, placements })
}

/// 400 for the second of two items that are the same order: under one nonce they would have one
/// id.
fn refuse_repeated_orders(orders: &[(usize, NewOrder)], hashes: &[[u8; 32]]) -> Result<(), ApiError> {
    let mut seen = std::collections::HashMap::with_capacity(hashes.len());
    for ((index, _), hash) in orders.iter().zip(hashes) {
        if let Some(first) = seen.insert(*hash, *index) {
            return Err(ApiError::invalid(
                "clientOrderId",
                format!(
                    "the same order as orders[{first}]: the orders of a batch signed once share its nonce, so two \
                     orders with the same terms would have the same id; give them different clientOrderIds"
                ),
            )
            .within("orders", *index));
        }
    }
    Ok(())
}

/// What `GET /order/orderDetail` adds for an order of a batch signed once: enough to check its
/// signature without the venue. The order's own `Order` struct hash is `orderHashes[index]`;
/// `hashStruct(OrderBatch)` is `keccak256(typeHash ‖ account ‖ keccak256(orderHashes…) ‖ nonce ‖
/// expiry)`; the signature recovers, over `digest`, to the account or an agent it approved.
pub(super) fn batch_proof_json(domain: &SigningDomain, stored: &StoredOrder, batch: &BatchPlace) -> Value {
    let digest = domain.order_batch_digest(
        &stored.record.terms.account,
        &batch.order_hashes,
        stored.nonce,
        stored.expiry_ms,
    );
    json!({
        "primaryType": dexd_crypto::ORDER_BATCH_TYPE.name,
        "encodedType": dexd_crypto::ORDER_BATCH_TYPE.encode_type(),
        "index": batch.index,
        "orderHashes": order_hashes_json(&batch.order_hashes),
        "account": dexd_crypto::checksummed(&stored.record.terms.account),
        "nonce": alloy_primitives::U256::from_be_bytes(stored.nonce).to_string(),
        "expiry": stored.expiry_ms,
        "digest": hex_prefixed(&digest),
        "signature": hex_prefixed(&stored.signature),
    })
}
