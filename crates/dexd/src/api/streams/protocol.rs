//! The stream protocol (`docs/streams.md`): reading a client's message (`subscribe`,
//! `unsubscribe`, `ping`) with the same validation and error codes as REST, and writing the
//! server's messages (acknowledgments, errors, and the frame every subscription message shares:
//! its event, channel, the client's `id` and the parameters that name it).
//!
//! It holds no state: the connection keeps its subscriptions, the hub delivers.

use dexd_core::{Address, CandleInterval, PairIndex};
use serde_json::{json, Map, Value};

use crate::api::error::ApiError;
use crate::api::operations::{
    address, chain_id, choice, count, pair, subaccount, whole_number, Field, Operation, Typed,
};
use crate::api::params::Params;
use dexd_crypto::checksummed;
use dexd_venue::Venue;

/// The longest client `id` accepted, as JSON text.
pub const MAX_CLIENT_ID_BYTES: usize = 128;
/// The default depth of a book subscription, as REST's.
pub const DEFAULT_STREAM_BOOK_DEPTH: usize = 50;
/// The shallowest book subscription: the checksum covers 25 levels of each side.
pub const MIN_STREAM_BOOK_DEPTH: usize = super::book::CHECKSUM_LEVELS;
/// The deepest book subscription.
pub const MAX_STREAM_BOOK_DEPTH: usize = 1_000;

/// The levels of each side a `depth` subscription may ask for.
pub const DEPTH_CHANNEL_LEVELS: [u16; 3] = [5, 10, 20];
/// The paces a `depth` subscription may ask for, in ms.
pub const DEPTH_CHANNEL_INTERVALS_MS: [u16; 2] = [100, 1_000];
/// A `depth` subscription's pace when it names none, in ms.
pub const DEFAULT_DEPTH_CHANNEL_INTERVAL_MS: u16 = 1_000;

/// A subscription's channel and the parameters that name it: one subscription per key per
/// connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ChannelKey {
    /// A pair's book.
    Book {
        /// The chain.
        chain_id: u64,
        /// The pair.
        pair: PairIndex,
    },
    /// A pair's best bid and ask.
    Bbo {
        /// The chain.
        chain_id: u64,
        /// The pair.
        pair: PairIndex,
    },
    /// The top levels of a pair's book, whole, at a fixed pace.
    Depth {
        /// The chain.
        chain_id: u64,
        /// The pair.
        pair: PairIndex,
        /// Levels of each side: one of [`DEPTH_CHANNEL_LEVELS`].
        levels: u16,
        /// At most one message per this many ms: one of [`DEPTH_CHANNEL_INTERVALS_MS`].
        interval_ms: u16,
    },
    /// A pair's trades.
    Trades {
        /// The chain.
        chain_id: u64,
        /// The pair.
        pair: PairIndex,
    },
    /// A pair's candles of one interval.
    Candles {
        /// The chain.
        chain_id: u64,
        /// The pair.
        pair: PairIndex,
        /// The interval.
        interval: CandleInterval,
    },
    /// An account's orders.
    Orders {
        /// The chain.
        chain_id: u64,
        /// The account whose changes it carries (a subaccount's own address).
        account: Address,
        /// The owner and number the subscription named, for a subaccount (contract version 5).
        subaccount: Option<(Address, u32)>,
    },
    /// An account's balances and transfers.
    Balances {
        /// The chain.
        chain_id: u64,
        /// The account whose changes it carries (a subaccount's own address).
        account: Address,
        /// The owner and number the subscription named, for a subaccount (contract version 5).
        subaccount: Option<(Address, u32)>,
    },
}

impl ChannelKey {
    /// The chain it is on.
    pub fn chain_id(&self) -> u64 {
        match self {
            ChannelKey::Book { chain_id, .. }
            | ChannelKey::Bbo { chain_id, .. }
            | ChannelKey::Depth { chain_id, .. }
            | ChannelKey::Trades { chain_id, .. }
            | ChannelKey::Candles { chain_id, .. }
            | ChannelKey::Orders { chain_id, .. }
            | ChannelKey::Balances { chain_id, .. } => *chain_id,
        }
    }

    /// The channel's name.
    pub fn channel(&self) -> &'static str {
        match self {
            ChannelKey::Book { .. } => "book",
            ChannelKey::Bbo { .. } => "bbo",
            ChannelKey::Depth { .. } => "depth",
            ChannelKey::Trades { .. } => "trades",
            ChannelKey::Candles { .. } => "candles",
            ChannelKey::Orders { .. } => "orders",
            ChannelKey::Balances { .. } => "balances",
        }
    }

    /// The channel and the parameters that name the subscription, as its messages carry them.
    pub fn parameters(&self, venue: &Venue) -> Map<String, Value> {
        let mut parameters = Map::new();
        parameters.insert("channel".into(), json!(self.channel()));
        parameters.insert("chainId".into(), json!(self.chain_id().to_string()));
        let pair_symbol = |chain_id: u64, pair: PairIndex| {
            venue
                .chain(chain_id)
                .map(|chain| chain.markets().config.pair_config(pair).symbol.clone())
                .unwrap_or_default()
        };
        match self {
            ChannelKey::Book { chain_id, pair }
            | ChannelKey::Bbo { chain_id, pair }
            | ChannelKey::Trades { chain_id, pair } => {
                parameters.insert("pair".into(), json!(pair_symbol(*chain_id, *pair)));
            }
            ChannelKey::Candles {
                chain_id,
                pair,
                interval,
            } => {
                parameters.insert("pair".into(), json!(pair_symbol(*chain_id, *pair)));
                parameters.insert("interval".into(), json!(interval.wire_name()));
            }
            ChannelKey::Depth {
                chain_id,
                pair,
                levels,
                interval_ms,
            } => {
                parameters.insert("pair".into(), json!(pair_symbol(*chain_id, *pair)));
                parameters.insert("levels".into(), json!(levels));
                parameters.insert("intervalMs".into(), json!(interval_ms));
            }
            ChannelKey::Orders {
                account, subaccount, ..
            }
            | ChannelKey::Balances {
                account, subaccount, ..
            } => match subaccount {
                Some((owner, number)) => {
                    parameters.insert("account".into(), json!(checksummed(owner)));
                    parameters.insert("subaccount".into(), json!(number));
                }
                None => {
                    parameters.insert("account".into(), json!(checksummed(account)));
                }
            },
        }
        parameters
    }
}

/// A subscription asked for.
#[derive(Debug, Clone)]
pub struct SubscribeRequest {
    /// What to subscribe to.
    pub key: ChannelKey,
    /// Levels per side, for a book.
    pub depth: usize,
    /// The client's `id`, as JSON text.
    pub id_json: String,
}

/// The fields of an order message besides `op`, `id` and `action` (run by `super::orders`):
/// they may hold a private key, so they never print.
#[derive(Clone)]
pub struct OrderFields(pub Map<String, Value>);

impl std::fmt::Debug for OrderFields {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("OrderFields(..)")
    }
}

/// A client's message.
#[derive(Debug, Clone)]
pub enum ClientMessage {
    /// Subscribe.
    Subscribe(SubscribeRequest),
    /// Unsubscribe.
    Unsubscribe {
        /// From what.
        key: ChannelKey,
        /// The client's `id`, as JSON text.
        id_json: String,
    },
    /// Ping.
    Ping {
        /// The client's `id`, as JSON text.
        id_json: String,
    },
    /// An order operation (`op: "order"`), run as its REST operation.
    Order {
        /// The client's `id`, as JSON text.
        id_json: String,
        /// Which operation (`add`, `cancel`, ...).
        action: String,
        /// The rest of the message: the operation's fields.
        fields: OrderFields,
    },
}

const CHAIN_ID: Field = chain_id("The chain.").field;
const PAIR: Typed<PairIndex> = pair("pair", true, "The pair.");
const ACCOUNT: Typed<Address> = address("account", true, "The account.");
const DEPTH: Typed<usize> = count(
    "depth",
    MAX_STREAM_BOOK_DEPTH as u64,
    DEFAULT_STREAM_BOOK_DEPTH as u64,
    "Levels per side.",
);
const INTERVAL: Typed<CandleInterval> = choice("interval", false, "The candle interval.");

const fn channel_operation(id: &'static str, fields: &'static [Field]) -> Operation {
    Operation {
        id,
        tag: crate::api::operations::Tag::Extensions,
        is_post: false,
        paths: &[],
        summary: "",
        fields,
        response_schema: "",
        error_statuses: &[],
    }
}

/// Each channel's parameters, checked like an operation's (unknown ones are refused).
const BOOK_CHANNEL: Operation = channel_operation("book", &[CHAIN_ID, PAIR.field, DEPTH.field]);
const BBO_CHANNEL: Operation = channel_operation("bbo", &[CHAIN_ID, PAIR.field]);
const LEVELS: Typed<u64> = whole_number("levels", true, "Levels of each side: 5, 10 or 20.");
const INTERVAL_MS: Typed<u64> = whole_number(
    "intervalMs",
    false,
    "At most one message per this many ms: 100 or 1000 (default).",
);
const DEPTH_CHANNEL: Operation = channel_operation("depth", &[CHAIN_ID, PAIR.field, LEVELS.field, INTERVAL_MS.field]);
const TRADES_CHANNEL: Operation = channel_operation("trades", &[CHAIN_ID, PAIR.field]);
const CANDLES_CHANNEL: Operation = channel_operation("candles", &[CHAIN_ID, PAIR.field, INTERVAL.field]);
const SUBACCOUNT: Typed<u32> = subaccount("subaccount", false, "The account's subaccount, 0 (itself) to 1000.");
const ORDERS_CHANNEL: Operation = channel_operation("orders", &[CHAIN_ID, ACCOUNT.field, SUBACCOUNT.field]);
const BALANCES_CHANNEL: Operation = channel_operation("balances", &[CHAIN_ID, ACCOUNT.field, SUBACCOUNT.field]);

/// The `id` of a message, as JSON text: a string, a number or null, short.
fn client_id(object: &Map<String, Value>) -> Result<String, ApiError> {
    let id = object.get("id").cloned().unwrap_or(Value::Null);
    if !matches!(id, Value::String(_) | Value::Number(_) | Value::Null) {
        return Err(ApiError::invalid("id", "must be a string or a number"));
    }
    let text = id.to_string();
    if text.len() > MAX_CLIENT_ID_BYTES {
        return Err(ApiError::invalid(
            "id",
            format!("must be at most {MAX_CLIENT_ID_BYTES} bytes of JSON"),
        ));
    }
    Ok(text)
}

/// Reads a client's text message. An error comes with the message's `id` when it had a
/// readable one (`null` otherwise).
pub fn parse(venue: &Venue, text: &str) -> Result<ClientMessage, (String, ApiError)> {
    let malformed = |message: &str| {
        (
            "null".to_string(),
            ApiError::new(
                axum::http::StatusCode::BAD_REQUEST,
                "MALFORMED_BODY",
                message.to_string(),
            ),
        )
    };
    let value: Value = serde_json::from_str(text).map_err(|_| malformed("the message is not valid JSON"))?;
    let Value::Object(mut object) = value else {
        return Err(malformed("the message must be a JSON object"));
    };
    let id_json = client_id(&object).map_err(|error| ("null".to_string(), error))?;
    let fail = |error: ApiError| (id_json.clone(), error);
    let op = match object.remove("op") {
        None => return Err(fail(ApiError::missing("op"))),
        Some(Value::String(op)) => op,
        Some(_) => return Err(fail(invalid_op())),
    };
    object.remove("id");
    if op == "order" {
        let action = match object.remove("action") {
            None => return Err(fail(ApiError::missing("action"))),
            Some(Value::String(action)) => action,
            Some(_) => return Err(fail(ApiError::invalid("action", "must be a string"))),
        };
        return Ok(ClientMessage::Order {
            id_json,
            action,
            fields: OrderFields(object),
        });
    }
    if op == "ping" {
        if let Some(name) = object.keys().next() {
            return Err(fail(unknown(name, &["op", "id"])));
        }
        return Ok(ClientMessage::Ping { id_json });
    }
    if op != "subscribe" && op != "unsubscribe" {
        return Err(fail(invalid_op()));
    }
    let channel = match object.remove("channel") {
        None => return Err(fail(ApiError::missing("channel"))),
        Some(Value::String(channel)) => channel,
        Some(_) => return Err(fail(invalid_channel())),
    };
    let (key, depth) = channel_key(venue, &channel, object).map_err(fail)?;
    Ok(if op == "subscribe" {
        ClientMessage::Subscribe(SubscribeRequest { key, depth, id_json })
    } else {
        ClientMessage::Unsubscribe { key, id_json }
    })
}

/// The channel a subscription names and its book depth (the default but for the book), from
/// the message's remaining fields.
fn channel_key(venue: &Venue, channel: &str, object: Map<String, Value>) -> Result<(ChannelKey, usize), ApiError> {
    let operation = match channel {
        "book" => &BOOK_CHANNEL,
        "bbo" => &BBO_CHANNEL,
        "depth" => &DEPTH_CHANNEL,
        "trades" => &TRADES_CHANNEL,
        "candles" => &CANDLES_CHANNEL,
        "orders" => &ORDERS_CHANNEL,
        "balances" => &BALANCES_CHANNEL,
        _ => return Err(invalid_channel()),
    };
    let params = Params::from_json_object(object)?;
    params.check_allowed(operation)?;
    let chain = params.chain(venue)?;
    let chain_id = chain.chain_id;
    let mut depth = DEFAULT_STREAM_BOOK_DEPTH;
    let key = match channel {
        "book" => {
            let pair = params.require_pair(&chain, &PAIR)?;
            depth = params.count(&DEPTH)?;
            if depth < MIN_STREAM_BOOK_DEPTH {
                return Err(ApiError::invalid(
                    "depth",
                    format!(
                        "must be between {MIN_STREAM_BOOK_DEPTH} and {MAX_STREAM_BOOK_DEPTH} on a stream (the checksum covers \
                         the top {MIN_STREAM_BOOK_DEPTH} levels of each side)"
                    ),
                ));
            }
            ChannelKey::Book { chain_id, pair }
        }
        "bbo" => ChannelKey::Bbo {
            chain_id,
            pair: params.require_pair(&chain, &PAIR)?,
        },
        "depth" => {
            let pair = params.require_pair(&chain, &PAIR)?;
            let levels = one_of(&LEVELS, params.read(&LEVELS)?, &DEPTH_CHANNEL_LEVELS, None)?;
            let interval_ms = one_of(
                &INTERVAL_MS,
                params.read(&INTERVAL_MS)?,
                &DEPTH_CHANNEL_INTERVALS_MS,
                Some(DEFAULT_DEPTH_CHANNEL_INTERVAL_MS),
            )?;
            ChannelKey::Depth {
                chain_id,
                pair,
                levels,
                interval_ms,
            }
        }
        "trades" => ChannelKey::Trades {
            chain_id,
            pair: params.require_pair(&chain, &PAIR)?,
        },
        "candles" => {
            let pair = params.require_pair(&chain, &PAIR)?;
            let interval = params.read(&INTERVAL)?.unwrap_or(CandleInterval::OneMinute);
            ChannelKey::Candles {
                chain_id,
                pair,
                interval,
            }
        }
        "orders" => {
            let (account, subaccount) = account_of(&params)?;
            ChannelKey::Orders {
                chain_id,
                account,
                subaccount,
            }
        }
        _ => {
            let (account, subaccount) = account_of(&params)?;
            ChannelKey::Balances {
                chain_id,
                account,
                subaccount,
            }
        }
    };
    Ok((key, depth))
}

/// An account channel's account: `account`, or its subaccount `subaccount` (1 to 1000) with
/// the owner and number it was named by.
fn account_of(params: &Params) -> Result<(Address, Option<(Address, u32)>), ApiError> {
    let owner = params.require(&ACCOUNT)?;
    Ok(match params.read(&SUBACCOUNT)?.filter(|number| *number != 0) {
        Some(number) => (dexd_core::subaccount_address(&owner, number), Some((owner, number))),
        None => (owner, None),
    })
}

/// An integer parameter's `value` that must be one of `allowed` (`default` when absent, required
/// when there is none).
fn one_of(field: &Typed<u64>, value: Option<u64>, allowed: &[u16], default: Option<u16>) -> Result<u16, ApiError> {
    let name = field.field.name;
    let value = match (value, default) {
        (Some(value), _) => value,
        (None, Some(default)) => return Ok(default),
        (None, None) => return Err(ApiError::missing(name)),
    };
    allowed
        .iter()
        .copied()
        .find(|candidate| u64::from(*candidate) == value)
        .ok_or_else(|| {
            let names: Vec<String> = allowed.iter().map(u16::to_string).collect();
            ApiError::invalid(name, format!("must be {}", names.join(", ")))
        })
}

fn invalid_op() -> ApiError {
    ApiError::invalid("op", "must be subscribe, unsubscribe, ping or order")
}

fn invalid_channel() -> ApiError {
    ApiError::invalid(
        "channel",
        "must be book, bbo, depth, trades, candles, orders or balances",
    )
}

fn unknown(name: &str, allowed: &[&str]) -> ApiError {
    ApiError::new(
        axum::http::StatusCode::BAD_REQUEST,
        "UNKNOWN_PARAMETER",
        format!(
            "{name} is not a parameter of this message; it takes {}",
            allowed.join(", ")
        ),
    )
    .on(name)
}

/// A message of the server: `{"event": ..., "id": ..., ...fields}`, with the client's `id` as
/// given.
pub fn message(event: &str, id_json: &str, fields: Map<String, Value>) -> String {
    let rest = Value::Object(fields).to_string();
    frame(&format!("{{\"event\":\"{event}\",\"id\":"), id_json, &rest)
}

/// Splices a client's `id` into a message: `prefix` ends where the id goes, `rest` is a JSON
/// object whose fields follow it. One rendering of `rest` serves every subscriber.
pub fn frame(prefix: &str, id_json: &str, rest: &str) -> String {
    let fields = rest.strip_prefix('{').unwrap_or(rest);
    let mut text = String::with_capacity(prefix.len() + id_json.len() + fields.len() + 1);
    text.push_str(prefix);
    text.push_str(id_json);
    if fields != "}" {
        text.push(',');
    }
    text.push_str(fields);
    text
}

/// An error event: the REST error's code, message and field, with the subscription's
/// parameters when the error is about one.
pub fn error(id_json: &str, error: &ApiError, parameters: Option<Map<String, Value>>) -> String {
    let mut fields = parameters.unwrap_or_default();
    fields.insert("code".into(), json!(error.code));
    fields.insert("message".into(), json!(error.message));
    fields.insert("field".into(), json!(error.field));
    message("error", id_json, fields)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_frame_splices_the_id_before_the_fields() {
        assert_eq!(
            frame("{\"event\":\"pong\",\"id\":", "\"a\"", "{}"),
            "{\"event\":\"pong\",\"id\":\"a\"}"
        );
        assert_eq!(
            frame("{\"event\":\"update\",\"id\":", "7", "{\"x\":1}"),
            "{\"event\":\"update\",\"id\":7,\"x\":1}"
        );
        let parsed: Value = serde_json::from_str(&message("subscribed", "null", Map::new())).unwrap();
        assert_eq!(parsed, json!({"event": "subscribed", "id": null}));
    }
}
