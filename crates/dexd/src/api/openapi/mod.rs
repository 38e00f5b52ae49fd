//! The OpenAPI 3.1 document served at `/openapi.json`, generated from the operation table so
//! that its paths and parameters are the ones the router really serves.
//!
//! The paths, parameters and fields' schemas are built here from the operation table, the request
//! bodies in `bodies.rs`; the named schemas of the objects and responses are written by hand in
//! `schemas.rs`. This module serves nothing itself.

use serde_json::{json, Map, Value};

use crate::api::operations::MAX_EXPIRES_AT_MS;
use crate::api::operations::{self, Kind, Operation};
use dexd_venue::config::Config;

mod bodies;
mod other_paths;
mod schemas;

use self::bodies::{request_body, BodyContent};
use self::other_paths::{metrics_path, streams_path};
use self::schemas::schemas;

/// The whole document, for the venue's configuration: its assets' and pairs' decimals bound the
/// decimal parameters (see `DecimalRules`).
pub fn document(config: &Config) -> Value {
    let rules = DecimalRules::of(config);
    let mut paths = Map::new();
    let mut component_schemas = schemas();
    for operation in operations::ALL {
        // A body's schemas are built once, into the components; every path of the operation
        // refers to them.
        let body = operation
            .is_post
            .then(|| request_body(operation, &rules, &mut component_schemas));
        for (index, path) in operation.paths.iter().enumerate() {
            let method = if operation.is_post { "post" } else { "get" };
            let mut item = Map::new();
            item.insert(
                method.to_string(),
                operation_object(operation, index > 0, &rules, body.as_ref()),
            );
            paths.insert(path.to_string(), Value::Object(item));
        }
    }
    paths.insert("/ws".to_string(), streams_path());
    paths.insert("/metrics".to_string(), metrics_path());
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "dexd",
            "version": "2",
            "description": "A trading venue for asset pairs on blockchain networks. Every decimal is a string; every error is {\"error\": {\"code\", \"message\", \"field\"}}. State-changing calls carry either the account's privateKey, which the venue signs with (EIP-712) and never keeps, or the client's own EIP-712 signature with account, nonce and expiry (GET /account/eip712 gives the domain and types); the two forms exclude each other. Rules that JSON Schema cannot state are in the descriptions: a mixed-case address must carry a valid EIP-55 checksum; a decimal may not have more decimals than its asset (a price: than the quote asset), and must be on the pair's tick and step (422 otherwise); a signed request's expiry is at most one hour ahead."
        },
        "tags": [
            {"name": "order", "description": "Orders, order books, candles, trades and positions (the contract's /order group)."},
            {"name": "portfolio", "description": "Deposits and withdrawals (the contract's /portfolio group)."},
            {"name": "account", "description": "Assets, balances, pairs and tradable amounts (the contract's /account group)."},
            {"name": "extensions", "description": "What dexd adds: order detail with its typed data, the account's own fills, EIP-712 types for client signing, reserves, health, readiness, metrics, live streams and this document."},
        ],
        "paths": paths,
        "components": {
            "schemas": component_schemas,
            "responses": error_responses(),
            "headers": cluster_headers(),
            "parameters": {"MinSequence": min_sequence_parameter()},
        },
    })
}

/// How many decimals each decimal parameter may have, from the configuration: the most any
/// asset has (every decimal parameter), and per asset symbol and per pair symbol the asset's
/// own (a transfer's quantity; an order's amount by its base, its price by its quote). The
/// server answers more decimals than that with 400 `INVALID_NUMBER`, so the document says it
/// with conditions (`if` the symbol is this one, `then` this many decimals). A symbol that means
/// assets of different decimals on different chains gets the larger.
struct DecimalRules {
    max_decimals: u32,
    assets: std::collections::BTreeMap<String, u32>,
    pairs: std::collections::BTreeMap<String, (u32, u32)>,
}

impl DecimalRules {
    fn of(config: &Config) -> DecimalRules {
        let mut assets = std::collections::BTreeMap::new();
        let mut pairs = std::collections::BTreeMap::new();
        for chain in &config.chains {
            for asset in &chain.assets {
                let decimals = assets.entry(asset.symbol.to_ascii_uppercase()).or_insert(0);
                *decimals = asset.decimals.max(*decimals);
            }
            for pair in &chain.pairs {
                let entry = pairs.entry(pair.symbol.to_ascii_uppercase()).or_insert((0, 0));
                entry.0 = pair.spec.base_decimals().max(entry.0);
                entry.1 = pair.spec.quote_decimals().max(entry.1);
            }
        }
        DecimalRules {
            max_decimals: config.max_asset_decimals(),
            assets,
            pairs,
        }
    }

    /// A positive decimal string with at most `decimals` decimals and at most 38 digits in all
    /// (so that every value the pattern allows parses).
    fn schema(&self, decimals: u32) -> Value {
        let integer = 38u32.saturating_sub(self.max_decimals).max(1);
        let pattern = if decimals == 0 {
            format!("^[0-9]{{1,{integer}}}$")
        } else {
            format!("^[0-9]{{1,{integer}}}(\\.[0-9]{{1,{decimals}}})?$")
        };
        json!({
            "type": "string",
            "pattern": pattern,
            "not": {"pattern": "^[0.]*$"},
        })
    }

    /// The schema of every decimal parameter, with the rule in words.
    fn any_decimal(&self) -> Value {
        let mut schema = self.schema(self.max_decimals);
        schema["description"] = json!(
            "A positive decimal string (no sign, exponent or spaces). At most as many decimals as its asset has (a price: its quote asset; 400 INVALID_NUMBER beyond), stated per symbol by the body's conditions; on the pair's tick and step (422 otherwise)."
        );
        schema
    }

    /// `if symbol is S then field has at most D decimals`, for every symbol, case-insensitively;
    /// and for a new order (`type` among `fields`), that a limit order has a price and a market
    /// order none.
    fn conditions(&self, fields: &[operations::Field]) -> Vec<Value> {
        let mut conditions = Vec::new();
        let is_order = fields.iter().any(|field| field.name == "price");
        let is_transfer = fields.iter().any(|field| field.name == "quantity");
        if fields.iter().any(|field| field.name == "triggerPrice") {
            // Both trigger fields, or neither.
            conditions.push(json!({
                "if": {"required": ["triggerPrice"]},
                "then": {"required": ["triggerCondition"]},
                "else": {"not": {"required": ["triggerCondition"]}}
            }));
        }
        if fields.iter().any(|field| field.name == "type") {
            conditions.push(json!({
                "if": {"properties": {"type": {"const": "market"}}, "required": ["type"]},
                "then": {"not": {"required": ["price"]}},
                "else": {"required": ["price"]}
            }));
        }
        if is_order {
            for (symbol, (base_decimals, quote_decimals)) in &self.pairs {
                conditions.push(json!({
                    "if": {"properties": {"symbol": {"pattern": case_insensitive(symbol)}}, "required": ["symbol"]},
                    "then": {"properties": {
                        "price": self.schema(*quote_decimals),
                        "triggerPrice": self.schema(*quote_decimals),
                        "amount": self.schema(*base_decimals)
                    }}
                }));
            }
        } else if is_transfer {
            for (symbol, decimals) in &self.assets {
                conditions.push(json!({
                    "if": {"properties": {"symbol": {"pattern": case_insensitive(symbol)}}, "required": ["symbol"]},
                    "then": {"properties": {"quantity": self.schema(*decimals)}}
                }));
            }
        }
        conditions
    }
}

/// A pattern matching `symbol` in any case (`ETH/USDC` → `^[Ee][Tt][Hh]/[Uu][Ss][Dd][Cc]$`).
fn case_insensitive(symbol: &str) -> String {
    let mut pattern = String::from("^");
    for character in symbol.chars() {
        if character.is_ascii_alphabetic() {
            pattern.push('[');
            pattern.push(character.to_ascii_uppercase());
            pattern.push(character.to_ascii_lowercase());
            pattern.push(']');
        } else if character == '.' {
            pattern.push_str("\\.");
        } else {
            pattern.push(character);
        }
    }
    pattern.push('$');
    pattern
}

/// An operation's object; `body` is its `requestBody` (a POST's, from [`request_body`]).
fn operation_object(operation: &Operation, is_alias: bool, rules: &DecimalRules, body: Option<&Value>) -> Value {
    let mut object = json!({
        "operationId": if is_alias { format!("{}Alias", operation.id) } else { operation.id.to_string() },
        "summary": operation.summary,
        "tags": [operation.tag.name()],
        "responses": responses(operation),
    });
    if is_alias {
        object["description"] = Value::String(format!(
            "The same operation as {} (the contract names both paths).",
            operation.paths[0]
        ));
    }
    if let Some(body) = body {
        object["requestBody"] = body.clone();
    } else {
        let parameters: Vec<Value> = operation
            .fields
            .iter()
            .map(|field| {
                json!({
                    "name": field.name,
                    "in": "query",
                    "required": field.required,
                    "description": field.description,
                    "schema": query_schema_with_examples(field.kind, rules),
                })
            })
            .collect();
        let mut parameters = parameters;
        if operation.fields.iter().any(|field| field.name == "chainId") {
            parameters.push(json!({"$ref": "#/components/parameters/MinSequence"}));
        }
        object["parameters"] = Value::Array(parameters);
    }
    object
}

/// The headers of the contract's cluster, on every answer of a node sharing a PostgreSQL
/// journal (none on the embedded journal).
fn cluster_headers() -> Value {
    json!({
        "XDexdNode": {
            "description": "The node that answered (a cluster on PostgreSQL; absent on the embedded journal).",
            "schema": {"type": "string"}
        },
        "XDexdSequence": {
            "description": "The journal position of the change this write made (absent when it changed nothing). Send it as X-Dexd-Min-Sequence to read the change back from any node.",
            "schema": {"type": "string", "pattern": "^[0-9]{1,19}$"}
        },
        "XDexdLeader": {
            "description": "The node that applied this write, when the node that answered forwarded it to the chain's leader.",
            "schema": {"type": "string"}
        }
    })
}

/// `X-Dexd-Min-Sequence`, on every read that names a chain.
fn min_sequence_parameter() -> Value {
    json!({
        "name": "X-Dexd-Min-Sequence",
        "in": "header",
        "required": false,
        "description": "Read only once this node has applied this journal position of the chain (a write's X-Dexd-Sequence): waits up to 5 s, then 503; 503 at once for a position the journal does not reach; 400 if it is not a number.",
        "schema": {"type": "string", "pattern": "^[0-9]{1,19}$"}
    })
}

/// Where an answer leads: from an order to its detail and its cancel, from a transfer to its
/// history.
fn links(operation: &Operation) -> Option<Value> {
    let links = match operation.id {
        "addOrder" | "cancelOrder" => json!({
            "GetOrderDetail": {
                "operationId": "getOrderDetail",
                "description": "The order with the typed data its signature covers.",
                "parameters": {"chainId": "$response.body#/order/chainId", "orderId": "$response.body#/order/orderId"}
            },
            "GetOpenOrders": {
                "operationId": "getOpenOrders",
                "description": "The account's open orders.",
                "parameters": {"chainId": "$response.body#/order/chainId", "account": "$response.body#/order/account"}
            },
            "CancelOrder": {
                "operationId": "cancelOrder",
                "description": "Cancel the order (with the same credential).",
                "requestBody": {
                    "chainId": "$response.body#/order/chainId",
                    "symbol": "$response.body#/order/symbol",
                    "orderId": "$response.body#/order/orderId"
                }
            }
        }),
        "deposit" => transfer_links("deposit", "DepositHistory", "deposits"),
        "withdraw" => transfer_links("withdrawal", "WithdrawalHistory", "withdrawals"),
        _ => return None,
    };
    Some(links)
}

/// A transfer's links: to the account's history of that kind (`getDepositHistory`) and its
/// balances, from the answer's `field` (`deposit`).
fn transfer_links(field: &str, history: &str, plural: &str) -> Value {
    let parameters = json!({
        "chainId": format!("$response.body#/{field}/chainId"),
        "account": format!("$response.body#/{field}/account"),
    });
    json!({
        format!("Get{history}"): {
            "operationId": format!("get{history}"),
            "description": format!("The account's {plural}, this one first."),
            "parameters": parameters.clone()
        },
        "GetBalances": {
            "operationId": "getBalances",
            "parameters": parameters
        }
    })
}

fn responses(operation: &Operation) -> Value {
    let mut responses = Map::new();
    let schema = json!({"$ref": format!("#/components/schemas/{}", operation.response_schema)});
    let lines = [operations::LIABILITY_LEAF_LINES, operations::AUDIT_JOURNAL_LINES];
    let mut success = if operation.response_schema == operations::TRADE_CSV_ROWS {
        json!({"description": "Success: a header line, then one trade per line, oldest first.", "content": {"text/csv": {
            "schema": {"type": "string"}
        }}})
    } else if lines.contains(&operation.response_schema) {
        // JSON lines: one object of the schema per line (OpenAPI 3.1 has no JSON-lines schema;
        // the line's schema is named in the description and `x-itemSchema`).
        json!({"description": format!("Success: one {} per line.", operation.response_schema), "content": {"application/x-ndjson": {
            "schema": {"type": "string"}, "x-itemSchema": schema
        }}})
    } else {
        json!({"description": "Success.", "content": {"application/json": {"schema": schema}}})
    };
    let mut headers = json!({"X-Dexd-Node": {"$ref": "#/components/headers/XDexdNode"}});
    if operation.response_schema == operations::AUDIT_JOURNAL_LINES {
        headers["X-Dexd-Journal-Format"] =
            json!({"description": "The journal format's version (1).", "schema": {"type": "integer"}});
        headers["X-Dexd-Journal-End"] = json!({"description": "The journal's last position when the page was read.", "schema": {"type": "integer"}});
    }
    if operation.is_post {
        headers["X-Dexd-Sequence"] = json!({"$ref": "#/components/headers/XDexdSequence"});
        headers["X-Dexd-Leader"] = json!({"$ref": "#/components/headers/XDexdLeader"});
    }
    success["headers"] = headers;
    if let Some(links) = links(operation) {
        success["links"] = links;
    }
    responses.insert("200".to_string(), success);
    let common: &[u16] = if operation.is_post {
        &[405, 408, 429, 500]
    } else {
        &[405, 429, 500]
    };
    for status in operation.error_statuses.iter().chain(common.iter()) {
        responses.insert(
            status.to_string(),
            json!({"$ref": format!("#/components/responses/Error{status}")}),
        );
    }
    Value::Object(responses)
}

/// 0, or 5000 to 86400000, in decimal digits.
/// A subaccount's number as digits: 0 to 1000, no leading zero.
const SUBACCOUNT_PATTERN: &str = "^(0|[1-9][0-9]{0,2}|1000)$";
const SWITCH_TIMEOUT_PATTERN: &str =
    "^(0|[5-9][0-9]{3}|[1-9][0-9]{4,6}|[1-7][0-9]{7}|8[0-5][0-9]{6}|86[0-3][0-9]{5}|86400000)$";

/// The largest 64-bit number, the bound of every whole-number parameter.
const MAX_U64: u64 = u64::MAX;

fn field_schema(kind: Kind, description: &str, rules: &DecimalRules, content: BodyContent) -> Value {
    let mut schema = match (kind, content) {
        (Kind::Items { fields, max }, BodyContent::Json) => {
            let properties: Map<String, Value> = fields
                .iter()
                .map(|field| {
                    (
                        field.name.to_string(),
                        field_schema(field.kind, field.description, rules, content),
                    )
                })
                .collect();
            let required: Vec<&str> = fields
                .iter()
                .filter(|field| field.required)
                .map(|field| field.name)
                .collect();
            let mut item = json!({"type": "object", "additionalProperties": false, "properties": properties, "required": required});
            let conditions = rules.conditions(fields);
            if !conditions.is_empty() {
                item["allOf"] = Value::Array(conditions);
            }
            json!({"type": "array", "minItems": 1, "maxItems": max, "items": item})
        }
        // Form data is text: the query forms (strings only) are exact.
        (_, BodyContent::Form) => query_schema(kind, rules),
        (Kind::ChainId, BodyContent::Json) => json!({"oneOf": [
            {"type": "string", "pattern": "^[0-9]{1,19}$"},
            {"type": "integer", "minimum": 0, "maximum": 9_999_999_999_999_999_999u64}
        ]}),
        (Kind::Bool, BodyContent::Json) => {
            json!({"oneOf": [{"type": "boolean"}, {"type": "string", "enum": ["true", "false"]}]})
        }
        (Kind::ExpiresAt, BodyContent::Json) => json!({"oneOf": [
            {"type": "string", "pattern": "^[0-9]{1,13}$"},
            {"type": "integer", "minimum": 0, "maximum": MAX_EXPIRES_AT_MS}
        ]}),
        (Kind::Integer | Kind::Milliseconds, BodyContent::Json) => json!({"oneOf": [
            {"type": "string", "pattern": "^[0-9]{1,19}$"},
            {"type": "integer", "minimum": 0, "maximum": MAX_U64}
        ]}),
        (Kind::SwitchTimeout, BodyContent::Json) => json!({"oneOf": [
            {"type": "string", "pattern": SWITCH_TIMEOUT_PATTERN},
            {"type": "integer", "enum": [0]},
            {"type": "integer", "minimum": 5_000, "maximum": 86_400_000}
        ]}),
        (Kind::Subaccount, BodyContent::Json) => json!({"oneOf": [
            {"type": "string", "pattern": SUBACCOUNT_PATTERN},
            {"type": "integer", "minimum": 0, "maximum": dexd_core::MAX_SUBACCOUNT_NUMBER}
        ]}),
        (Kind::Uint256, BodyContent::Json) => {
            json!({"oneOf": [{"type": "string", "pattern": "^[0-9]{1,77}$"}, {"type": "integer", "minimum": 0, "maximum": MAX_U64}]})
        }
        (other, BodyContent::Json) => query_schema(other, rules),
    };
    let description = match schema.get("description").and_then(Value::as_str) {
        Some(rule) => format!("{description} {rule}"),
        None => description.to_string(),
    };
    schema["description"] = Value::String(description);
    add_examples(&mut schema, kind);
    schema
}

fn query_schema_with_examples(kind: Kind, rules: &DecimalRules) -> Value {
    let mut schema = query_schema(kind, rules);
    add_examples(&mut schema, kind);
    schema
}

/// Values of the embedded configuration, so that tools generating requests from the document
/// (schemathesis) reach past chain and pair lookup into each operation's own checks.
fn add_examples(schema: &mut Value, kind: Kind) {
    let examples = match kind {
        Kind::ChainId => json!(["1", "42161"]),
        Kind::Pair => json!(["ETH/USDC", "WBTC/USDC"]),
        Kind::Asset => json!(["USDC", "ETH"]),
        Kind::Address => json!(["0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A"]),
        _ => return,
    };
    schema["examples"] = examples;
}

fn query_schema(kind: Kind, rules: &DecimalRules) -> Value {
    match kind {
        Kind::ChainId => json!({"type": "string", "pattern": "^[0-9]{1,19}$"}),
        Kind::Integer | Kind::Milliseconds => json!({"type": "integer", "minimum": 0, "maximum": MAX_U64}),
        Kind::Count { max, default } => json!({"type": "integer", "minimum": 1, "maximum": max, "default": default}),
        Kind::Cursor => json!({"type": "string", "pattern": "^[0-9]{1,19}$"}),
        Kind::Address => json!({
            "type": "string",
            "pattern": "^0x[0-9a-fA-F]{40}$",
            "description": "0x + 40 hex digits. Not expressible in the pattern: a mixed-case address must carry a valid EIP-55 checksum (all lower or all upper case needs none)."
        }),
        Kind::Asset => json!({"type": "string", "pattern": "^[A-Za-z0-9.-]{1,16}$"}),
        Kind::Pair => json!({"type": "string", "pattern": "^[A-Za-z0-9.-]{1,16}/[A-Za-z0-9.-]{1,16}$"}),
        Kind::Decimal => rules.any_decimal(),
        Kind::Bool => json!({"type": "string", "enum": ["true", "false"]}),
        Kind::Text => json!({"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,64}$"}),
        Kind::PrivateKey | Kind::OrderId => json!({"type": "string", "pattern": "^0x[0-9a-fA-F]{64}$"}),
        Kind::Uint256 => json!({"type": "string", "pattern": "^[0-9]{1,77}$"}),
        Kind::Signature => json!({"type": "string", "pattern": "^0x[0-9a-fA-F]{130}$"}),
        Kind::Choice(values) => json!({"type": "string", "enum": values}),
        Kind::SwitchTimeout => json!({"type": "string", "pattern": SWITCH_TIMEOUT_PATTERN}),
        Kind::AgentName => json!({"type": "string", "pattern": "^[A-Za-z0-9._-]{1,32}$"}),
        Kind::GroupName => json!({"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,36}$"}),
        Kind::ExpiresAt => json!({"type": "string", "pattern": "^[0-9]{1,13}$"}),
        Kind::Subaccount => json!({"type": "integer", "minimum": 0, "maximum": dexd_core::MAX_SUBACCOUNT_NUMBER}),
        Kind::TransferId => json!({"type": "string", "pattern": "^[A-Za-z0-9._:-]{1,64}$"}),
        Kind::Items { max, .. } => json!({
            "type": "string",
            "contentMediaType": "application/json",
            "minLength": 2,
            "description": format!("A JSON array of 1 to {max} objects, as in the JSON body.")
        }),
    }
}

fn error_responses() -> Value {
    let codes: &[(u16, &str)] = &[
        (400, "MISSING_PARAMETER, INVALID_PARAMETER, INVALID_NUMBER, UNKNOWN_PARAMETER or MALFORMED_BODY"),
        (401, "UNAUTHENTICATED, INVALID_PRIVATE_KEY, INVALID_SIGNATURE or SIGNATURE_EXPIRED"),
        (403, "ACCOUNT_MISMATCH"),
        (404, "UNKNOWN_CHAIN, UNKNOWN_PAIR, UNKNOWN_ASSET, ORDER_NOT_FOUND, ACCOUNT_NOT_FOUND, ROOT_NOT_FOUND or NOT_FOUND"),
        (405, "METHOD_NOT_ALLOWED"),
        (408, "REQUEST_TIMEOUT: the body did not arrive in time"),
        (409, "ORDER_NOT_OPEN, DUPLICATE_CLIENT_ORDER_ID, NONCE_REUSED, ORDER_CHANGED, TRANSFER_ID_REUSED or VAULT_FROZEN"),
        (413, "PAYLOAD_TOO_LARGE"),
        (415, "UNSUPPORTED_MEDIA_TYPE"),
        (422, "INSUFFICIENT_BALANCE, INVALID_TICK, INVALID_STEP, BELOW_MIN_AMOUNT, BELOW_MIN_NOTIONAL, POST_ONLY_WOULD_TAKE, FOK_NOT_FILLABLE, NO_LIQUIDITY, TOO_MANY_OPEN_ORDERS, AMOUNT_TOO_LARGE, TRIGGER_ALREADY_MET, EXPIRY_TOO_SOON, EXPIRY_TOO_FAR, OCO_GROUP_INVALID, TOO_MANY_TRANSFERS or INSUFFICIENT_FUNDS_ON_CHAIN"),
        (429, "RATE_LIMITED, with Retry-After"),
        (500, "INTERNAL"),
        (502, "CHAIN_UNAVAILABLE: a vault chain's node cannot be used now; nothing was applied"),
        (503, "UNAVAILABLE: nothing was applied"),
        (504, "OUTCOME_UNKNOWN: a write this node forwarded to the chain's leader, whose answer did not come back; it may or may not have been applied: look it up before sending it again"),
    ];
    let mut responses = Map::new();
    for (status, description) in codes {
        responses.insert(
            format!("Error{status}"),
            json!({"description": description, "content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}),
        );
    }
    Value::Object(responses)
}
