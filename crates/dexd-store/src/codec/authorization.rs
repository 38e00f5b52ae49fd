//! The journal's encoding of a command's [`Authorization`]: who signed it, and how.
//!
//! It is written beside each journaled command and read back at replay, so every version ever
//! written stays readable. This module does no IO.

use dexd_core::OrderId;

use super::CodecError;
use crate::records::{Authorization, BatchPlace};

/// The journal's encoding of an [`Authorization`]: a version byte (2), a flags byte (1: client
/// signed, 2: places an order, 4: an order of a batch signed once, 8: and it claims the batch's
/// nonce, 16: a contract account's approval with the block it was asked at), the order id if
/// any, the nonce, the expiry and the signature; then that block (8 bytes) if flagged; for an
/// order of a batch, then its index, the batch's count of orders and each order's struct hash.
/// Schema version 2 stored `order id ‖ 128-bit salt ‖ signature` (113 bytes), read as a venue
/// signature with the salt as nonce and no expiry.
pub const AUTHORIZATION_ENCODING_VERSION: u8 = 2;
pub const LEGACY_AUTHORIZATION_BYTES: usize = 32 + 16 + 65;

/// The most orders a batch's place may list: a batch's limit.
pub const MAX_BATCH_ORDER_HASHES: usize = 50;

pub fn encode_authorization(authorization: &Option<Authorization>) -> Option<Vec<u8>> {
    authorization.as_ref().map(|authorization| {
        let batch_bytes = authorization
            .batch
            .as_ref()
            .map_or(0, |batch| 2 + 32 * batch.order_hashes.len());
        let mut bytes = Vec::with_capacity(2 + 32 + 32 + 8 + 65 + batch_bytes);
        bytes.push(AUTHORIZATION_ENCODING_VERSION);
        bytes.push(
            u8::from(authorization.client_signed)
                | (u8::from(authorization.order_id.is_some()) << 1)
                | (u8::from(authorization.batch.is_some()) << 2)
                | (u8::from(authorization.claims_batch_nonce) << 3)
                | (u8::from(authorization.approved_at_block.is_some()) << 4),
        );
        if let Some(order_id) = authorization.order_id {
            bytes.extend_from_slice(order_id.as_bytes());
        }
        bytes.extend_from_slice(&authorization.nonce);
        bytes.extend_from_slice(&authorization.expiry_ms.to_be_bytes());
        bytes.extend_from_slice(&authorization.signature);
        if let Some(block) = authorization.approved_at_block {
            bytes.extend_from_slice(&block.to_be_bytes());
        }
        if let Some(batch) = &authorization.batch {
            bytes.extend_from_slice(&encode_batch_place(batch));
        }
        bytes
    })
}

/// A batch place as bytes: the order's index, the batch's count of orders and each order's struct
/// hash (the journal's authorization ends with it; the history keeps the hashes once per batch,
/// [`encode_batch_order_hashes`]).
pub fn encode_batch_place(batch: &BatchPlace) -> Vec<u8> {
    assert!(
        (1..=MAX_BATCH_ORDER_HASHES).contains(&batch.order_hashes.len())
            && usize::from(batch.index) < batch.order_hashes.len(),
        "invariant: a batch lists 1 to 50 orders and the order is one of them"
    );
    let mut bytes = Vec::with_capacity(2 + 32 * batch.order_hashes.len());
    bytes.push(batch.index);
    bytes.push(batch.order_hashes.len() as u8);
    bytes.extend_from_slice(batch.order_hashes.as_flattened());
    bytes
}

/// [`encode_batch_place`]'s bytes read back, all of them.
pub fn decode_batch_place(bytes: &[u8]) -> Result<BatchPlace, CodecError> {
    let bad = || CodecError("bad stored batch place");
    let (&[index, count], rest) = bytes.split_first_chunk::<2>().ok_or_else(bad)?;
    if rest.len() != 32 * usize::from(count) {
        return Err(bad());
    }
    decode_batch_place_in(index, rest)
}

/// A batch's order hashes as the history keeps them, once per batch (`batches`): each order's
/// struct hash, in order.
pub fn encode_batch_order_hashes(order_hashes: &[[u8; 32]]) -> &[u8] {
    assert!(
        (1..=MAX_BATCH_ORDER_HASHES).contains(&order_hashes.len()),
        "invariant: a batch lists 1 to 50 orders"
    );
    order_hashes.as_flattened()
}

/// An order's place in its batch, from its index and its batch's hashes as
/// [`encode_batch_order_hashes`] wrote them.
pub fn decode_batch_place_in(index: u8, order_hashes: &[u8]) -> Result<BatchPlace, CodecError> {
    let count = order_hashes.len() / 32;
    if count == 0
        || usize::from(index) >= count
        || count > MAX_BATCH_ORDER_HASHES
        || !order_hashes.len().is_multiple_of(32)
    {
        return Err(CodecError("bad stored batch place"));
    }
    let order_hashes = order_hashes
        .chunks_exact(32)
        .map(|hash| hash.try_into().expect("32 bytes"))
        .collect();
    Ok(BatchPlace { index, order_hashes })
}

pub fn decode_authorization(bytes: Option<Vec<u8>>) -> Result<Option<Authorization>, CodecError> {
    let Some(bytes) = bytes else {
        return Ok(None);
    };
    let bad = || CodecError("bad stored authorization");
    if bytes.len() == LEGACY_AUTHORIZATION_BYTES {
        let mut nonce = [0u8; 32];
        nonce[16..].copy_from_slice(&bytes[32..48]);
        return Ok(Some(Authorization {
            order_id: Some(OrderId::from_bytes(bytes[..32].try_into().expect("32 bytes"))),
            nonce,
            expiry_ms: 0,
            signature: bytes[48..].try_into().expect("65 bytes"),
            client_signed: false,
            batch: None,
            claims_batch_nonce: false,
            approved_at_block: None,
        }));
    }
    let (&[version, flags], rest) = bytes.split_first_chunk::<2>().ok_or_else(bad)?;
    if version != AUTHORIZATION_ENCODING_VERSION || flags > 31 || (flags & 12 == 8) {
        return Err(bad());
    }
    let (order_id, rest) = if flags & 2 != 0 {
        let (order_id, rest) = rest.split_first_chunk::<32>().ok_or_else(bad)?;
        (Some(OrderId::from_bytes(*order_id)), rest)
    } else {
        (None, rest)
    };
    let (nonce, rest) = rest.split_first_chunk::<32>().ok_or_else(bad)?;
    let (expiry, rest) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
    let (signature, rest) = rest.split_first_chunk::<65>().ok_or_else(bad)?;
    let (approved_at_block, rest) = if flags & 16 != 0 {
        let (block, rest) = rest.split_first_chunk::<8>().ok_or_else(bad)?;
        (Some(u64::from_be_bytes(*block)), rest)
    } else {
        (None, rest)
    };
    let batch = if flags & 4 != 0 {
        Some(decode_batch_place(rest)?)
    } else if rest.is_empty() {
        None
    } else {
        return Err(bad());
    };
    Ok(Some(Authorization {
        order_id,
        nonce: *nonce,
        expiry_ms: u64::from_be_bytes(*expiry),
        signature: *signature,
        client_signed: flags & 1 != 0,
        batch,
        claims_batch_nonce: flags & 8 != 0,
        approved_at_block,
    }))
}
