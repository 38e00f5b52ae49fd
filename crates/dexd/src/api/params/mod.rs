//! Request parameters: one shape for a query string, a JSON object or form data
//! (`arrival`), and every read of them, typed by the field the operation table declares
//! ([`Params::read`]): a field's kind decides how it is parsed, which error answers it and
//! which type the handler gets, so no handler reads a parameter by its name.
//!
//! Strings held here are erased when the parameters are dropped, because one of them may be a
//! private key. This module does not know which operation is running: the caller passes the
//! operation's field list. It checks form (400) and what the chain's configuration names (an
//! unknown chain, pair or asset); the rules of a pair or an account are the handlers' and the
//! engine's.

mod arrival;
mod numbers;
mod typed;

use std::sync::Arc;

use dexd_core::{Address, AssetIndex, Decimal, PairIndex};
use zeroize::Zeroize;

use self::numbers::integral_digits;
use self::typed::wrong_kind;

use super::error::ApiError;
use super::operations::{
    Field, ItemList, Kind, Operation, Typed, CHAIN_ID, CURSOR, END_TIME, EXPIRY, LIMIT, NONCE, SIGNATURE,
    SIGNED_REQUEST_FIELDS, SIGNER, START_TIME, SUBACCOUNT,
};
use axum::http::StatusCode;
use dexd_crypto::PrivateKey;
use dexd_store::PageRequest;
use dexd_venue::{Chain, Venue};

/// One parameter's value as it arrived.
#[derive(Debug)]
enum Value {
    Text(String),
    Bool(bool),
    Number(String),
    /// A JSON array (a batch's items, read by [`Params::items`]).
    List(Vec<serde_json::Value>),
    /// A JSON object, which no parameter takes.
    Structured,
}

/// Every parameter of one request, in arrival order.
pub struct Params {
    entries: Vec<(String, Value)>,
    /// The fields a JSON body gave as `null`, which the operations of the seed read as absent.
    null_fields: Vec<String>,
    /// Who asks, for the reads that share by client address or answer conditionally.
    reader: Reader,
}

/// What a read knows of its request besides its parameters.
#[derive(Debug, Clone, Default)]
pub struct Reader {
    /// The client's address (see `api::ClientIp`); unspecified in process.
    pub client: Option<std::net::IpAddr>,
    /// The `If-None-Match` header, when given and readable.
    pub if_none_match: Option<String>,
}

impl Drop for Params {
    fn drop(&mut self) {
        for (_, value) in &mut self.entries {
            match value {
                Value::Text(text) => text.zeroize(),
                Value::List(items) => items.iter_mut().for_each(erase_strings),
                _ => {}
            }
        }
    }
}

impl Params {
    /// The parameters with what is known of the reader.
    pub fn with_reader(mut self, reader: Reader) -> Params {
        self.reader = reader;
        self
    }

    /// What is known of the reader.
    pub fn reader(&self) -> &Reader {
        &self.reader
    }

    /// Refuses any parameter the operation does not take.
    pub fn check_allowed(&self, operation: &Operation) -> Result<(), ApiError> {
        self.check_fields(operation.fields)
    }

    /// Refuses any parameter not among `fields` (an operation's, or a batch item's).
    pub fn check_fields(&self, fields: &[Field]) -> Result<(), ApiError> {
        for (name, _) in &self.entries {
            if !fields.iter().any(|field| field.name == name) {
                let allowed: Vec<&str> = fields.iter().map(|field| field.name).collect();
                return Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "UNKNOWN_PARAMETER",
                    format!(
                        "{name} is not a parameter of this operation; it takes {}",
                        allowed.join(", ")
                    ),
                )
                .on(name));
            }
        }
        Ok(())
    }

    fn get(&self, name: &str) -> Option<&Value> {
        self.entries
            .iter()
            .find(|(existing, _)| existing == name)
            .map(|(_, value)| value)
    }

    /// Whether a parameter was given at all (an empty string counts; JSON null does not).
    pub fn contains(&self, name: &str) -> bool {
        self.get(name).is_some()
    }

    /// The text of a whole number given as a string or a JSON integer (its digits not yet
    /// checked); `None` when absent.
    fn whole_number_text(&self, name: &str) -> Result<Option<std::borrow::Cow<'_, str>>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Text(text)) => Ok(Some(std::borrow::Cow::Borrowed(text.as_str()))),
            Some(Value::Number(text)) => integral_digits(text)
                .map(|digits| Some(std::borrow::Cow::Owned(digits)))
                .ok_or_else(|| ApiError::invalid(name, "must be a whole number")),
            Some(_) => Err(ApiError::invalid(name, "must be a whole number")),
        }
    }

    /// A uint256 in decimal digits, as a string or a JSON integer; big-endian bytes.
    fn uint256(&self, name: &str) -> Result<Option<[u8; 32]>, ApiError> {
        let Some(digits) = self.whole_number_text(name)? else {
            return Ok(None);
        };
        let digits = digits.as_ref();
        // Most JSON libraries lose the digits of a number beyond 64 bits: a larger value comes as
        // a string of digits, as the document says.
        if matches!(self.get(name), Some(Value::Number(_))) && digits.parse::<u64>().is_err() {
            return Err(ApiError::invalid(
                name,
                "as a JSON number must be at most 2^64 - 1; send larger values as a string of digits",
            ));
        }
        dexd_crypto::parse_uint256(digits)
            .map(Some)
            .ok_or_else(|| ApiError::invalid(name, "must be a uint256 in decimal digits (0 to 2^256 - 1)"))
    }

    /// A string parameter, if present; other JSON types are refused.
    ///
    /// (The text as given is what a client's signature covers: a batch item refused for a rule
    /// is answered with it.)
    pub(crate) fn text(&self, name: &str) -> Result<Option<&str>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Text(text)) if text.is_empty() => Err(ApiError::invalid(name, "must not be empty")),
            Some(Value::Text(text)) => Ok(Some(text)),
            Some(_) => Err(ApiError::invalid(name, "must be a string")),
        }
    }

    /// A required string parameter.
    fn required_text(&self, name: &str) -> Result<&str, ApiError> {
        self.text(name)?.ok_or_else(|| ApiError::missing(name))
    }

    /// A decimal given as a string; a JSON number is refused because floats lose precision.
    fn decimal(&self, name: &str) -> Result<Option<Decimal>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Text(text)) => Decimal::parse(text).map(Some).map_err(|error| {
                ApiError::invalid_number(name, format!("{error}; send a decimal string such as \"1.5\""))
            }),
            Some(Value::Number(_)) => Err(ApiError::invalid_number(
                name,
                "must be a string such as \"1.5\", not a JSON number",
            )),
            Some(_) => Err(ApiError::invalid_number(
                name,
                "must be a decimal string such as \"1.5\"",
            )),
        }
    }

    /// A boolean: JSON `true`/`false` or the strings `"true"`/`"false"`.
    fn bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(Value::Text(text)) if text == "true" => Ok(Some(true)),
            Some(Value::Text(text)) if text == "false" => Ok(Some(false)),
            Some(_) => Err(ApiError::invalid(name, "must be true or false")),
        }
    }

    /// A non-negative integer: a string of decimal digits or a JSON integer.
    fn integer(&self, name: &str) -> Result<Option<u64>, ApiError> {
        let Some(digits) = self.whole_number_text(name)? else {
            return Ok(None);
        };
        let digits = digits.as_ref();
        if digits.is_empty() || digits.len() > 20 || !digits.bytes().all(|byte| byte.is_ascii_digit()) {
            return Err(ApiError::invalid(name, "must be a whole number of decimal digits"));
        }
        digits
            .parse::<u64>()
            .map(Some)
            .map_err(|_| ApiError::invalid(name, "is too large"))
    }

    /// How many items a list parameter holds (a JSON array, or in form data a string holding
    /// one); 0 when it is absent or not a list. Nothing is checked: [`Self::items`] does that.
    pub fn list_length(&self, field: &Typed<ItemList>) -> usize {
        match self.get(field.field.name) {
            Some(Value::List(items)) => items.len(),
            Some(Value::Text(text)) => match serde_json::from_str::<serde_json::Value>(text) {
                Ok(serde_json::Value::Array(items)) => items.len(),
                _ => 0,
            },
            _ => 0,
        }
    }

    /// A list of 1 to `max` objects (a batch's items), each read as parameters of its own: a JSON
    /// array, or in form data a string holding one. `None` when absent.
    pub fn items(&self, field: &Typed<ItemList>) -> Result<Option<Vec<Params>>, ApiError> {
        let Kind::Items { max, .. } = field.field.kind else {
            return Err(wrong_kind(&field.field));
        };
        self.item_list(field.field.name, max)
    }

    fn item_list(&self, name: &str, max: usize) -> Result<Option<Vec<Params>>, ApiError> {
        let shape = || ApiError::invalid(name, format!("must be an array of 1 to {max} objects"));
        let parsed;
        let items = match self.get(name) {
            None => return Ok(None),
            Some(Value::List(items)) => items,
            Some(Value::Text(text)) => {
                parsed = match serde_json::from_str::<serde_json::Value>(text) {
                    Ok(serde_json::Value::Array(items)) => items,
                    _ => return Err(shape()),
                };
                &parsed
            }
            Some(_) => return Err(shape()),
        };
        if items.is_empty() || items.len() > max {
            return Err(ApiError::invalid(
                name,
                format!("must hold 1 to {max} items; it holds {}", items.len()),
            ));
        }
        items
            .iter()
            .enumerate()
            .map(|(index, item)| match item {
                serde_json::Value::Object(object) => {
                    // An item's null is refused rather than read as absent: a batch's item says
                    // each of its fields or leaves it out.
                    if let Some((field, _)) = object.iter().find(|(_, value)| value.is_null()) {
                        return Err(
                            ApiError::invalid(field, "must not be null; leave it out instead").within(name, index)
                        );
                    }
                    Params::from_json_object(object.clone()).map_err(|error| error.within(name, index))
                }
                _ => Err(ApiError::new(
                    StatusCode::BAD_REQUEST,
                    "INVALID_PARAMETER",
                    "each item must be a JSON object",
                )
                .within(name, index)),
            })
            .collect::<Result<Vec<Params>, ApiError>>()
            .map(Some)
    }

    /// 400 for a field given as JSON `null`: the trading extensions take a field or its absence,
    /// never a null (the seed's operations read a null as absent, as they always did).
    pub fn refuse_nulls(&self) -> Result<(), ApiError> {
        match self.null_fields.first() {
            Some(name) => Err(ApiError::invalid(name, "must not be null; leave it out instead")),
            None => Ok(()),
        }
    }

    /// The `privateKey`: 401 `UNAUTHENTICATED` when absent, 401 `INVALID_PRIVATE_KEY` when it is
    /// not a valid key. The error never repeats the value.
    fn private_key(&self) -> Result<PrivateKey, ApiError> {
        let unauthenticated = || {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "UNAUTHENTICATED",
                "this operation needs privateKey",
            )
            .on("privateKey")
        };
        let invalid = || {
            ApiError::new(
                StatusCode::UNAUTHORIZED,
                "INVALID_PRIVATE_KEY",
                "privateKey must be 0x + 64 hex digits forming a valid secp256k1 secret key",
            )
            .on("privateKey")
        };
        match self.get("privateKey") {
            None => Err(unauthenticated()),
            Some(Value::Text(text)) if text.is_empty() => Err(unauthenticated()),
            Some(Value::Text(text)) => PrivateKey::parse(text).map_err(|_| invalid()),
            Some(_) => Err(invalid()),
        }
    }
}

/// A type a field's kind is read as: [`Params::read`] takes a [`Typed`] field of it, and the
/// operation table's constructors fix which kinds each type serves.
pub trait FromParam: Sized {
    /// The field's value, `None` when it is left out.
    fn from_param(params: &Params, field: &Field) -> Result<Option<Self>, ApiError>;
}

impl Params {
    /// A field, read as its kind says: `None` when it is left out.
    pub fn read<T: FromParam>(&self, field: &Typed<T>) -> Result<Option<T>, ApiError> {
        T::from_param(self, &field.field)
    }

    /// A field that must be given: 400 `MISSING_PARAMETER` when it is not.
    pub fn require<T: FromParam>(&self, field: &Typed<T>) -> Result<T, ApiError> {
        self.read(field)?.ok_or_else(|| ApiError::missing(field.field.name))
    }

    /// A count, its kind's default when it is left out.
    pub fn count(&self, field: &Typed<usize>) -> Result<usize, ApiError> {
        let Kind::Count { default, .. } = field.field.kind else {
            return Err(wrong_kind(&field.field));
        };
        Ok(self.read(field)?.unwrap_or(default as usize))
    }

    /// The request's chain (`chainId`): 404 `UNKNOWN_CHAIN` when the venue has none of that id.
    pub fn chain(&self, venue: &Venue) -> Result<Arc<Chain>, ApiError> {
        let chain_id = self.require(&CHAIN_ID)?;
        venue.chain(chain_id).ok_or_else(|| {
            ApiError::not_found("UNKNOWN_CHAIN", format!("chain {chain_id} is not configured")).on(CHAIN_ID.field.name)
        })
    }

    /// A pair of `chain`: 404 `UNKNOWN_PAIR` when it has none of that name; `None` when left out.
    pub fn pair(&self, chain: &Chain, field: &Typed<PairIndex>) -> Result<Option<PairIndex>, ApiError> {
        let name = field.field.name;
        self.text(name)?.map(|text| pair_of(chain, name, text)).transpose()
    }

    /// A pair of `chain` that must be given.
    pub fn require_pair(&self, chain: &Chain, field: &Typed<PairIndex>) -> Result<PairIndex, ApiError> {
        self.pair(chain, field)?
            .ok_or_else(|| ApiError::missing(field.field.name))
    }

    /// An asset of `chain`, which must be given: 404 `UNKNOWN_ASSET` when it has none of that
    /// symbol.
    pub fn asset(&self, chain: &Chain, field: &Typed<AssetIndex>) -> Result<AssetIndex, ApiError> {
        let name = field.field.name;
        let symbol = self.required_text(name)?;
        if !is_symbol(symbol) {
            return Err(ApiError::invalid(name, "must be an asset symbol such as USDC"));
        }
        chain.markets().config.asset(symbol).ok_or_else(|| {
            ApiError::not_found(
                "UNKNOWN_ASSET",
                format!("{} is not an asset of this chain", symbol.to_ascii_uppercase()),
            )
            .on(name)
        })
    }

    /// A list's page: `limit`, `cursor`, `startTime` and `endTime`.
    pub fn page(&self) -> Result<PageRequest, ApiError> {
        let limit = self.count(&LIMIT)?;
        let cursor = self.read(&CURSOR)?;
        let (start_ms, end_ms) = self.time_range()?;
        Ok(PageRequest {
            limit,
            cursor,
            start_ms,
            end_ms,
        })
    }

    /// A market history's range: `from` and `to`, or their other names `startTime` and
    /// `endTime`; where a request names both of a pair, the range is where they overlap (the
    /// later start, the earlier end). Every time when left out.
    pub fn history_range(&self) -> Result<(u64, u64), ApiError> {
        use crate::api::operations::{HISTORY_FROM, HISTORY_TO};
        let (start, end) = self.time_range()?;
        Ok((
            self.read(&HISTORY_FROM)?.map_or(start, |from| from.max(start)),
            self.read(&HISTORY_TO)?.map_or(end, |to| to.min(end)),
        ))
    }

    /// `startTime` and `endTime`, every time when left out. A start after the end is an empty
    /// range (an empty list), not an error: every pair of times the document allows is a request
    /// the server answers.
    pub fn time_range(&self) -> Result<(u64, u64), ApiError> {
        let start = self.read(&START_TIME)?.unwrap_or(0);
        let end = self.read(&END_TIME)?.unwrap_or(u64::MAX);
        Ok((start, end))
    }

    /// The account a read is about: `account`, or with `subaccount` (1 to 1000), that
    /// subaccount's address.
    pub fn account_read(&self) -> Result<Address, ApiError> {
        let account = self.require(&crate::api::operations::ACCOUNT)?;
        Ok(dexd_core::subaccount_address(
            &account,
            self.read(&SUBACCOUNT)?.unwrap_or(0),
        ))
    }

    /// Which of the signed request's fields (`account`, `nonce`, `expiry`, `signature`) are
    /// given.
    pub fn signed_fields_given(&self) -> impl Iterator<Item = &'static str> + '_ {
        SIGNED_REQUEST_FIELDS.into_iter().filter(|name| self.contains(name))
    }

    /// The request's credential as its fields give it, checked for form: the `privateKey`, or the
    /// `account`, `nonce`, `expiry` and `signature` of the client's own signature. A transfer
    /// names its account in `from`, so for it `account` may be left out (`account_fallback`).
    /// 401 `UNAUTHENTICATED` when it carries neither.
    pub fn credential(&self, account_fallback: Option<Address>) -> Result<CredentialFields, ApiError> {
        if self.contains("privateKey") {
            // With a key, `account` names the account an agent's key acts for.
            if let Some(name) = self.signed_fields_given().find(|name| *name != SIGNER.field.name) {
                return Err(ApiError::invalid(
                    name,
                    "give either privateKey, or account, nonce, expiry and signature; not both",
                ));
            }
            let key = self.private_key()?;
            return Ok(CredentialFields::Key {
                key,
                acting_for: self.read(&SIGNER)?,
                subaccount: self.read(&SUBACCOUNT)?.unwrap_or(0),
            });
        }
        if self.contains(SUBACCOUNT.field.name) {
            return Err(ApiError::invalid(
                SUBACCOUNT.field.name,
                "goes with privateKey; a signed request names the subaccount's address in account (GET \
                 /account/subaccounts) and is signed by its owner or the owner's agent",
            ));
        }
        if self.signed_fields_given().next().is_none() {
            return Err(ApiError::new(
                StatusCode::UNAUTHORIZED,
                "UNAUTHENTICATED",
                "this operation needs privateKey, or account, nonce, expiry and a signature",
            )
            .on("privateKey"));
        }
        let account = match self.read(&SIGNER)? {
            Some(account) => account,
            None => account_fallback.ok_or_else(|| ApiError::missing(SIGNER.field.name))?,
        };
        Ok(CredentialFields::Signed {
            account,
            nonce: self.require(&NONCE)?,
            expiry_ms: self.require(&EXPIRY)?,
            signature: self.require(&SIGNATURE)?,
        })
    }
}

/// A request's credential as its fields give it, before its signature is checked or its
/// expiry compared with the time (`api::credential::Credential::from_fields`).
pub enum CredentialFields {
    /// The account's key.
    Key {
        /// The key.
        key: PrivateKey,
        /// The account it acts for as an agent (`account` beside `privateKey`), when one is named.
        acting_for: Option<Address>,
        /// The subaccount of that account (or of the key's) that acts: 0, the account itself.
        subaccount: u32,
    },
    /// The client's own signature and what it signed.
    Signed {
        /// The account that claims to have signed.
        account: Address,
        /// The signed nonce.
        nonce: [u8; 32],
        /// The signed expiry, in ms since the epoch.
        expiry_ms: u64,
        /// The 65-byte `r ‖ s ‖ v` signature.
        signature: [u8; 65],
    },
}

/// Whether `text` is written as an asset symbol is: 1 to 16 of `A-Z a-z 0-9 . -`.
fn is_symbol(text: &str) -> bool {
    !text.is_empty()
        && text.len() <= dexd_venue::config::MAX_SYMBOL_LENGTH
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-')
}

/// The pair `text` names on `chain`.
fn pair_of(chain: &Chain, name: &str, text: &str) -> Result<PairIndex, ApiError> {
    let well_formed = text
        .split_once('/')
        .is_some_and(|(base, quote)| is_symbol(base) && is_symbol(quote));
    if !well_formed {
        return Err(ApiError::invalid(name, "must be a pair such as ETH/USDC"));
    }
    chain.markets().config.pair(text).ok_or_else(|| {
        ApiError::not_found(
            "UNKNOWN_PAIR",
            format!("{} is not a pair of this chain", text.to_ascii_uppercase()),
        )
        .on(name)
    })
}

/// Erases every string inside a JSON value (a batch item may carry a key where none belongs).
fn erase_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => text.zeroize(),
        serde_json::Value::Array(items) => items.iter_mut().for_each(erase_strings),
        serde_json::Value::Object(object) => object.values_mut().for_each(erase_strings),
        _ => {}
    }
}
