//! Request parameters: read from a query string, a JSON object or form data into one shape, and
//! typed accessors that answer with the contract's errors.
//!
//! Strings held here are erased when the parameters are dropped, because one of them may be a
//! private key. This module does not know which operation is running: the caller passes the
//! operation's field list.

use dexd_core::Decimal;
use zeroize::Zeroize;

use super::error::ApiError;
use super::operations::{Field, Operation};
use axum::http::StatusCode;
use dexd_crypto::PrivateKey;

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
    /// Reads a query string (GET).
    pub fn from_query(query: Option<&str>) -> Result<Params, ApiError> {
        Params::from_pairs(query.unwrap_or("").as_bytes())
    }

    /// Reads a POST body by its content type: JSON object or form data.
    pub fn from_body(content_type: Option<&str>, body: &[u8]) -> Result<Params, ApiError> {
        let media_type = content_type
            .and_then(|value| value.split(';').next())
            .map(|value| value.trim().to_ascii_lowercase())
            .unwrap_or_default();
        match media_type.as_str() {
            "application/json" => Params::from_json(body),
            "application/x-www-form-urlencoded" => Params::from_pairs(body),
            _ => Err(ApiError::new(
                StatusCode::UNSUPPORTED_MEDIA_TYPE,
                "UNSUPPORTED_MEDIA_TYPE",
                "send the body as application/json or application/x-www-form-urlencoded",
            )),
        }
    }

    fn from_pairs(bytes: &[u8]) -> Result<Params, ApiError> {
        if std::str::from_utf8(bytes).is_err() {
            return Err(ApiError::new(
                StatusCode::BAD_REQUEST,
                "MALFORMED_BODY",
                "parameters must be UTF-8",
            ));
        }
        let mut params = Params {
            entries: Vec::new(),
            null_fields: Vec::new(),
            reader: Reader::default(),
        };
        for (name, value) in form_urlencoded::parse(bytes) {
            params.push(name.into_owned(), Value::Text(value.into_owned()))?;
        }
        Ok(params)
    }

    fn from_json(body: &[u8]) -> Result<Params, ApiError> {
        let malformed = |message: &str| ApiError::new(StatusCode::BAD_REQUEST, "MALFORMED_BODY", message.to_string());
        let value: serde_json::Value =
            serde_json::from_slice(body).map_err(|_| malformed("the body is not valid JSON"))?;
        let serde_json::Value::Object(object) = value else {
            return Err(malformed("the body must be a JSON object"));
        };
        Params::from_json_object(object)
    }

    /// Reads the fields of a JSON object (a stream message's, for one).
    pub fn from_json_object(object: serde_json::Map<String, serde_json::Value>) -> Result<Params, ApiError> {
        let mut params = Params {
            entries: Vec::new(),
            null_fields: Vec::new(),
            reader: Reader::default(),
        };
        for (name, value) in object {
            let value = match value {
                serde_json::Value::Null => {
                    params.null_fields.push(name);
                    continue;
                }
                serde_json::Value::String(text) => Value::Text(text),
                serde_json::Value::Bool(flag) => Value::Bool(flag),
                serde_json::Value::Number(number) => Value::Number(number.to_string()),
                serde_json::Value::Array(items) => Value::List(items),
                serde_json::Value::Object(_) => Value::Structured,
            };
            params.push(name, value)?;
        }
        Ok(params)
    }

    /// The parameters with what is known of the reader.
    pub fn with_reader(mut self, reader: Reader) -> Params {
        self.reader = reader;
        self
    }

    /// What is known of the reader.
    pub fn reader(&self) -> &Reader {
        &self.reader
    }

    fn push(&mut self, name: String, value: Value) -> Result<(), ApiError> {
        if self.entries.iter().any(|(existing, _)| *existing == name) {
            return Err(ApiError::invalid(&name, "is given more than once"));
        }
        self.entries.push((name, value));
        Ok(())
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
    pub fn uint256(&self, name: &str) -> Result<Option<[u8; 32]>, ApiError> {
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
    pub fn text(&self, name: &str) -> Result<Option<&str>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Text(text)) if text.is_empty() => Err(ApiError::invalid(name, "must not be empty")),
            Some(Value::Text(text)) => Ok(Some(text)),
            Some(_) => Err(ApiError::invalid(name, "must be a string")),
        }
    }

    /// A required string parameter.
    pub fn required_text(&self, name: &str) -> Result<&str, ApiError> {
        self.text(name)?.ok_or_else(|| ApiError::missing(name))
    }

    /// A decimal given as a string; a JSON number is refused because floats lose precision.
    pub fn decimal(&self, name: &str) -> Result<Option<Decimal>, ApiError> {
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

    /// A required decimal.
    pub fn required_decimal(&self, name: &str) -> Result<Decimal, ApiError> {
        self.decimal(name)?.ok_or_else(|| ApiError::missing(name))
    }

    /// A boolean: JSON `true`/`false` or the strings `"true"`/`"false"`.
    pub fn bool(&self, name: &str) -> Result<Option<bool>, ApiError> {
        match self.get(name) {
            None => Ok(None),
            Some(Value::Bool(flag)) => Ok(Some(*flag)),
            Some(Value::Text(text)) if text == "true" => Ok(Some(true)),
            Some(Value::Text(text)) if text == "false" => Ok(Some(false)),
            Some(_) => Err(ApiError::invalid(name, "must be true or false")),
        }
    }

    /// A non-negative integer: a string of decimal digits or a JSON integer.
    pub fn integer(&self, name: &str) -> Result<Option<u64>, ApiError> {
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
    pub fn list_length(&self, name: &str) -> usize {
        match self.get(name) {
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
    pub fn items(&self, name: &str, max: usize) -> Result<Option<Vec<Params>>, ApiError> {
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
    pub fn private_key(&self) -> Result<PrivateKey, ApiError> {
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

/// Erases every string inside a JSON value (a batch item may carry a key where none belongs).
fn erase_strings(value: &mut serde_json::Value) {
    match value {
        serde_json::Value::String(text) => text.zeroize(),
        serde_json::Value::Array(items) => items.iter_mut().for_each(erase_strings),
        serde_json::Value::Object(object) => object.values_mut().for_each(erase_strings),
        _ => {}
    }
}

/// The decimal digits of a JSON number that is a whole number, whatever its form: JSON (and JSON
/// Schema's `integer`) counts `22976.0` and `2.5e3` as the integers 22976 and 2500. `None` for a
/// number with a fraction, a sign, or an exponent beyond what any parameter could hold.
fn integral_digits(number: &str) -> Option<String> {
    if number.bytes().all(|byte| byte.is_ascii_digit()) {
        return Some(number.to_string());
    }
    let (mantissa, exponent) = match number.find(['e', 'E']) {
        Some(index) => (&number[..index], number[index + 1..].parse::<i32>().ok()?),
        None => (number, 0),
    };
    if !(-100..=100).contains(&exponent) {
        return None;
    }
    let (whole, fraction) = mantissa.split_once('.').unwrap_or((mantissa, ""));
    if whole.is_empty() || !whole.bytes().chain(fraction.bytes()).all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    let digits = format!("{whole}{fraction}");
    let point = i64::try_from(whole.len()).ok()? + i64::from(exponent);
    let point = usize::try_from(point.max(0)).ok()?;
    let (integer, rest) = if point >= digits.len() {
        (format!("{digits}{}", "0".repeat(point - digits.len())), "")
    } else {
        (digits[..point].to_string(), &digits[point..])
    };
    if !rest.bytes().all(|byte| byte == b'0') {
        return None;
    }
    let trimmed = integer.trim_start_matches('0');
    Some(if trimmed.is_empty() {
        "0".to_string()
    } else {
        trimmed.to_string()
    })
}

#[cfg(test)]
mod tests {
    use super::integral_digits;

    #[test]
    fn json_numbers_that_are_whole_are_integers() {
        assert_eq!(integral_digits("22976").as_deref(), Some("22976"));
        assert_eq!(integral_digits("22976.0").as_deref(), Some("22976"));
        assert_eq!(integral_digits("510509.000").as_deref(), Some("510509"));
        assert_eq!(integral_digits("2.5e3").as_deref(), Some("2500"));
        assert_eq!(integral_digits("1E2").as_deref(), Some("100"));
        assert_eq!(integral_digits("0.0").as_deref(), Some("0"));
        assert_eq!(integral_digits("1.5"), None);
        assert_eq!(integral_digits("1.5e0"), None);
        assert_eq!(integral_digits("-1"), None);
        assert_eq!(integral_digits("-1.0"), None);
        assert_eq!(integral_digits("1e-1"), None);
        assert_eq!(integral_digits("1e400"), None);
    }
}
