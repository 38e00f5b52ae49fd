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

/// The version byte of an order of a batch whose order hashes an earlier row of the same
/// journal holds: the layout of [`AUTHORIZATION_ENCODING_VERSION`] up to the signature (and the
/// block), then the order's index, the batch's count of orders and the sequence of that row (8
/// bytes), instead of the hashes. A batch's 20 orders carried the same 20 hashes 20 times,
/// two thirds of a batched order's row (BENCHMARKS.md, "What a batched order writes to disk").
pub const AUTHORIZATION_BY_REFERENCE_VERSION: u8 = 3;

/// An authorization as a journal row holds it: whole, or an order of a batch whose hashes are in
/// the row of `holder_sequence` ([`super::BatchHashesSeen`] puts them back).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum StoredAuthorization {
    /// Everything is in the row (or the command carries no authorization).
    Whole(Option<Authorization>),
    /// An order of a batch; its batch place is read from the row of `holder_sequence`.
    BatchReference {
        /// Everything but the batch place (`batch` is `None`).
        authorization: Authorization,
        /// The order's index in its batch.
        index: u8,
        /// How many orders the batch holds.
        count: u8,
        /// The journal position whose row holds the batch's hashes.
        holder_sequence: u64,
    },
}

/// The most orders a batch's place may list: a batch's limit.
pub const MAX_BATCH_ORDER_HASHES: usize = 50;

pub fn encode_authorization(authorization: &Option<Authorization>) -> Option<Vec<u8>> {
    encode_authorization_referring(authorization, None)
}

/// [`encode_authorization`], or, for an order of a batch whose hashes the row of
/// `holder_sequence` holds, the [`AUTHORIZATION_BY_REFERENCE_VERSION`] encoding that names that
/// row instead of repeating them (`holder_sequence` is ignored for a command of no batch).
pub fn encode_authorization_referring(
    authorization: &Option<Authorization>,
    holder_sequence: Option<u64>,
) -> Option<Vec<u8>> {
    authorization.as_ref().map(|authorization| {
        let holder_sequence = holder_sequence.filter(|_| authorization.batch.is_some());
        let batch_bytes = match (&authorization.batch, holder_sequence) {
            (None, _) => 0,
            (Some(_), Some(_)) => 2 + 8,
            (Some(batch), None) => 2 + 32 * batch.order_hashes.len(),
        };
        let mut bytes = Vec::with_capacity(2 + 32 + 32 + 8 + 65 + 8 + batch_bytes);
        bytes.push(if holder_sequence.is_some() {
            AUTHORIZATION_BY_REFERENCE_VERSION
        } else {
            AUTHORIZATION_ENCODING_VERSION
        });
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
        match (&authorization.batch, holder_sequence) {
            (Some(batch), Some(holder_sequence)) => {
                assert_batch_place(batch);
                bytes.push(batch.index);
                bytes.push(batch.order_hashes.len() as u8);
                bytes.extend_from_slice(&holder_sequence.to_be_bytes());
            }
            (Some(batch), None) => bytes.extend_from_slice(&encode_batch_place(batch)),
            (None, _) => {}
        }
        bytes
    })
}

/// A batch place as bytes: the order's index, the batch's count of orders and each order's struct
/// hash (the journal's authorization ends with it; the history keeps the hashes once per batch,
/// [`encode_batch_order_hashes`]).
pub fn encode_batch_place(batch: &BatchPlace) -> Vec<u8> {
    assert_batch_place(batch);
    let mut bytes = Vec::with_capacity(2 + 32 * batch.order_hashes.len());
    bytes.push(batch.index);
    bytes.push(batch.order_hashes.len() as u8);
    bytes.extend_from_slice(batch.order_hashes.as_flattened());
    bytes
}

/// What every stored batch place holds: 1 to 50 orders, the order one of them.
fn assert_batch_place(batch: &BatchPlace) {
    assert!(
        (1..=MAX_BATCH_ORDER_HASHES).contains(&batch.order_hashes.len())
            && usize::from(batch.index) < batch.order_hashes.len(),
        "invariant: a batch lists 1 to 50 orders and the order is one of them"
    );
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

/// An authorization whole, as [`encode_authorization`] wrote it; a row that refers to its
/// batch's hashes elsewhere ([`AUTHORIZATION_BY_REFERENCE_VERSION`]) is refused here: a journal
/// read goes through [`decode_stored_authorization`] and [`super::BatchHashesSeen`].
pub fn decode_authorization(bytes: Option<Vec<u8>>) -> Result<Option<Authorization>, CodecError> {
    match decode_stored_authorization(bytes)? {
        StoredAuthorization::Whole(authorization) => Ok(authorization),
        StoredAuthorization::BatchReference { .. } => Err(CodecError("a batch place stored in another row")),
    }
}

/// An authorization as a journal row stores it ([`StoredAuthorization`]).
pub fn decode_stored_authorization(bytes: Option<Vec<u8>>) -> Result<StoredAuthorization, CodecError> {
    let Some(bytes) = bytes else {
        return Ok(StoredAuthorization::Whole(None));
    };
    let bad = || CodecError("bad stored authorization");
    if bytes.len() == LEGACY_AUTHORIZATION_BYTES {
        let mut nonce = [0u8; 32];
        nonce[16..].copy_from_slice(&bytes[32..48]);
        return Ok(StoredAuthorization::Whole(Some(Authorization {
            order_id: Some(OrderId::from_bytes(bytes[..32].try_into().expect("32 bytes"))),
            nonce,
            expiry_ms: 0,
            signature: bytes[48..].try_into().expect("65 bytes"),
            client_signed: false,
            batch: None,
            claims_batch_nonce: false,
            approved_at_block: None,
        })));
    }
    let (&[version, flags], rest) = bytes.split_first_chunk::<2>().ok_or_else(bad)?;
    let by_reference = version == AUTHORIZATION_BY_REFERENCE_VERSION;
    if !(version == AUTHORIZATION_ENCODING_VERSION || by_reference) || flags > 31 || (flags & 12 == 8) {
        return Err(bad());
    }
    if by_reference && flags & 4 == 0 {
        // Only an order of a batch refers to another row.
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
    let mut authorization = Authorization {
        order_id,
        nonce: *nonce,
        expiry_ms: u64::from_be_bytes(*expiry),
        signature: *signature,
        client_signed: flags & 1 != 0,
        batch: None,
        claims_batch_nonce: flags & 8 != 0,
        approved_at_block,
    };
    if by_reference {
        let (&[index, count], rest) = rest.split_first_chunk::<2>().ok_or_else(bad)?;
        let holder: [u8; 8] = rest.try_into().map_err(|_| bad())?;
        if count == 0 || usize::from(count) > MAX_BATCH_ORDER_HASHES || index >= count {
            return Err(bad());
        }
        return Ok(StoredAuthorization::BatchReference {
            authorization,
            index,
            count,
            holder_sequence: u64::from_be_bytes(holder),
        });
    }
    authorization.batch = if flags & 4 != 0 {
        Some(decode_batch_place(rest)?)
    } else if rest.is_empty() {
        None
    } else {
        return Err(bad());
    };
    Ok(StoredAuthorization::Whole(Some(authorization)))
}
