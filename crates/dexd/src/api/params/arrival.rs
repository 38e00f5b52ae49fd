//! How parameters arrive: a query string, a JSON object or form data, read into one shape.
//! Nothing here checks a value: the typed reads (`Params::read` and its kin) do.

use axum::http::StatusCode;

use super::{Params, Reader, Value};
use crate::api::error::ApiError;

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

    fn push(&mut self, name: String, value: Value) -> Result<(), ApiError> {
        if self.entries.iter().any(|(existing, _)| *existing == name) {
            return Err(ApiError::invalid(&name, "is given more than once"));
        }
        self.entries.push((name, value));
        Ok(())
    }
}
