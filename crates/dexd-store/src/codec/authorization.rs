//! The journal's encoding of a command's [`Authorization`]: who signed it, and how.
//!
//! It is written beside each journaled command and read back at replay, so every version ever
//! written stays readable. This module does no IO.

use dexd_core::OrderId;

use super::CodecError;
use crate::records::Authorization;

/// The journal's encoding of an [`Authorization`]: a version byte (2), a flags byte (1: client
/// signed, 2: places an order), the order id if any, the nonce, the expiry and the signature.
/// Schema version 2 stored `order id ‖ 128-bit salt ‖ signature` (113 bytes), read as a venue
/// signature with the salt as nonce and no expiry.
pub const AUTHORIZATION_ENCODING_VERSION: u8 = 2;
pub const LEGACY_AUTHORIZATION_BYTES: usize = 32 + 16 + 65;

pub fn encode_authorization(authorization: &Option<Authorization>) -> Option<Vec<u8>> {
    authorization.map(|authorization| {
        let mut bytes = Vec::with_capacity(2 + 32 + 32 + 8 + 65);
        bytes.push(AUTHORIZATION_ENCODING_VERSION);
        bytes.push(u8::from(authorization.client_signed) | (u8::from(authorization.order_id.is_some()) << 1));
        if let Some(order_id) = authorization.order_id {
            bytes.extend_from_slice(order_id.as_bytes());
        }
        bytes.extend_from_slice(&authorization.nonce);
        bytes.extend_from_slice(&authorization.expiry_ms.to_be_bytes());
        bytes.extend_from_slice(&authorization.signature);
        bytes
    })
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
        }));
    }
    let (&[version, flags], rest) = bytes.split_first_chunk::<2>().ok_or_else(bad)?;
    if version != AUTHORIZATION_ENCODING_VERSION || flags > 3 {
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
    let signature: [u8; 65] = rest.try_into().map_err(|_| bad())?;
    Ok(Some(Authorization {
        order_id,
        nonce: *nonce,
        expiry_ms: u64::from_be_bytes(*expiry),
        signature,
        client_signed: flags & 1 != 0,
    }))
}
