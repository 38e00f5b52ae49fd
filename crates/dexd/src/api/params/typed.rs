//! How each type a handler gets reads from a parameter ([`FromParam`]): which kinds of field it
//! serves, how their text is parsed and which error answers a bad one. The parameters themselves
//! and their arrival are `mod.rs`'s; this file does not know which operation is running.

use dexd_core::{Address, Decimal, OrderId, MAX_CANCEL_ALL_AFTER_MS, MAX_OCO_GROUP_CHARS, MIN_CANCEL_ALL_AFTER_MS};
use dexd_crypto::{parse_address, parse_hex_bytes};

use super::{FromParam, Params};
use crate::api::error::ApiError;
use crate::api::operations::{Field, Kind, WireWord, MAX_CLIENT_ORDER_ID_LENGTH, MAX_EXPIRES_AT_MS};

/// A field read as a type its kind is not (a table built wrongly): an internal error, logged.
pub(super) fn wrong_kind(field: &Field) -> ApiError {
    tracing::error!(field = field.name, kind = ?field.kind, "a field was read as a type its kind is not");
    ApiError::internal()
}

/// 1 to `max_chars` of `A-Z a-z 0-9` and `punctuation`.
fn is_name(text: &str, max_chars: usize, punctuation: &[u8]) -> bool {
    !text.is_empty()
        && text.chars().count() <= max_chars
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || punctuation.contains(&byte))
}

impl FromParam for u64 {
    fn from_param(params: &Params, field: &Field) -> Result<Option<u64>, ApiError> {
        let name = field.name;
        match field.kind {
            Kind::ChainId | Kind::Integer | Kind::Milliseconds => params.integer(name),
            Kind::Cursor => match params.text(name)? {
                None => Ok(None),
                // Cursors this service gives are row numbers and sequences, under 10^19.
                Some(text) if text.len() <= 19 && text.bytes().all(|byte| byte.is_ascii_digit()) => text
                    .parse::<u64>()
                    .map(Some)
                    .map_err(|_| ApiError::invalid(name, "is not a cursor this service gave")),
                Some(_) => Err(ApiError::invalid(name, "is not a cursor this service gave")),
            },
            Kind::SwitchTimeout => match params.integer(name)? {
                Some(timeout_ms)
                    if timeout_ms != 0
                        && !(MIN_CANCEL_ALL_AFTER_MS..=MAX_CANCEL_ALL_AFTER_MS).contains(&timeout_ms) =>
                {
                    Err(ApiError::invalid(
                        name,
                        format!("must be 0 (off) or {MIN_CANCEL_ALL_AFTER_MS} to {MAX_CANCEL_ALL_AFTER_MS} ms"),
                    ))
                }
                timeout_ms => Ok(timeout_ms),
            },
            // 0 is no expiry, as in the signed message. Too near or too far is the engine's to
            // judge at the time it applies the order (422); beyond 13 digits is malformed.
            Kind::ExpiresAt => match params.integer(name)?.filter(|expires_at_ms| *expires_at_ms != 0) {
                Some(expires_at_ms) if expires_at_ms > MAX_EXPIRES_AT_MS => {
                    Err(ApiError::invalid(name, "must be ms since the epoch, at most 13 digits"))
                }
                expires_at_ms => Ok(expires_at_ms),
            },
            _ => Err(wrong_kind(field)),
        }
    }
}

impl FromParam for u32 {
    fn from_param(params: &Params, field: &Field) -> Result<Option<u32>, ApiError> {
        let Kind::Subaccount = field.kind else {
            return Err(wrong_kind(field));
        };
        match params.integer(field.name)? {
            None => Ok(None),
            Some(number) if number <= u64::from(dexd_core::MAX_SUBACCOUNT_NUMBER) => Ok(Some(number as u32)),
            Some(_) => Err(ApiError::invalid(
                field.name,
                format!(
                    "must be a subaccount number, 0 (the owner) to {}",
                    dexd_core::MAX_SUBACCOUNT_NUMBER
                ),
            )),
        }
    }
}

impl FromParam for usize {
    fn from_param(params: &Params, field: &Field) -> Result<Option<usize>, ApiError> {
        let Kind::Count { max, .. } = field.kind else {
            return Err(wrong_kind(field));
        };
        match params.integer(field.name)? {
            None => Ok(None),
            Some(value) if (1..=max).contains(&value) => Ok(Some(value as usize)),
            Some(_) => Err(ApiError::invalid(field.name, format!("must be between 1 and {max}"))),
        }
    }
}

impl FromParam for String {
    fn from_param(params: &Params, field: &Field) -> Result<Option<String>, ApiError> {
        let (max_chars, punctuation, refusal) = match field.kind {
            Kind::Text | Kind::TransferId => (MAX_CLIENT_ORDER_ID_LENGTH, b"._:-".as_slice(), "of A-Z a-z 0-9 . _ : -"),
            Kind::GroupName => (MAX_OCO_GROUP_CHARS, b"._:-".as_slice(), "of A-Z a-z 0-9 . _ : -"),
            Kind::AgentName => (
                dexd_core::agents::MAX_AGENT_NAME_CHARACTERS,
                b"._-".as_slice(),
                "of the characters A-Z a-z 0-9 . _ -",
            ),
            _ => return Err(wrong_kind(field)),
        };
        let Some(text) = params.text(field.name)? else {
            return Ok(None);
        };
        if !is_name(text, max_chars, punctuation) {
            return Err(ApiError::invalid(
                field.name,
                format!("must be 1 to {max_chars} {refusal}"),
            ));
        }
        Ok(Some(text.to_string()))
    }
}

impl FromParam for Decimal {
    fn from_param(params: &Params, field: &Field) -> Result<Option<Decimal>, ApiError> {
        params.decimal(field.name)
    }
}

impl FromParam for bool {
    fn from_param(params: &Params, field: &Field) -> Result<Option<bool>, ApiError> {
        params.bool(field.name)
    }
}

impl FromParam for Address {
    fn from_param(params: &Params, field: &Field) -> Result<Option<Address>, ApiError> {
        let Some(text) = params.text(field.name)? else {
            return Ok(None);
        };
        parse_address(text).map(Some).map_err(|_| {
            ApiError::invalid(
                field.name,
                "must be 0x + 40 hex digits, with a valid EIP-55 checksum if mixed case",
            )
        })
    }
}

impl FromParam for OrderId {
    fn from_param(params: &Params, field: &Field) -> Result<Option<OrderId>, ApiError> {
        let Some(text) = params.text(field.name)? else {
            return Ok(None);
        };
        parse_hex_bytes::<32>(text)
            .map(|bytes| Some(OrderId::from_bytes(bytes)))
            .ok_or_else(|| ApiError::invalid(field.name, "must be 0x + 64 hex digits"))
    }
}

impl FromParam for [u8; 32] {
    fn from_param(params: &Params, field: &Field) -> Result<Option<[u8; 32]>, ApiError> {
        params.uint256(field.name)
    }
}

impl FromParam for [u8; 65] {
    fn from_param(params: &Params, field: &Field) -> Result<Option<[u8; 65]>, ApiError> {
        let Some(text) = params.text(field.name)? else {
            return Ok(None);
        };
        parse_hex_bytes::<65>(text)
            .map(Some)
            .ok_or_else(|| ApiError::invalid(field.name, "must be 0x + 130 hex digits (r ‖ s ‖ v)"))
    }
}

impl<T: WireWord> FromParam for T {
    fn from_param(params: &Params, field: &Field) -> Result<Option<T>, ApiError> {
        let Some(text) = params.text(field.name)? else {
            return Ok(None);
        };
        T::from_word(text)
            .map(Some)
            .ok_or_else(|| ApiError::invalid(field.name, format!("must be one of {}", T::NAMES.join(", "))))
    }
}
