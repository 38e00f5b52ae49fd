//! The OpenAPI 3.1 document served at `/openapi.json`, generated from the operation table so
//! that its paths and parameters are the ones the router really serves.
//!
//! The schemas of the bodies are written here by hand from `CONTRACT.md`. This module serves
//! nothing itself.

use serde_json::{json, Map, Value};

use crate::api::operations::{self, Kind, Operation};

/// The whole document.
pub fn document() -> Value {
    let mut paths = Map::new();
    for operation in operations::ALL {
        for (index, path) in operation.paths.iter().enumerate() {
            let method = if operation.is_post { "post" } else { "get" };
            let mut item = Map::new();
            item.insert(method.to_string(), operation_object(operation, index > 0));
            paths.insert(path.to_string(), Value::Object(item));
        }
    }
    paths.insert("/ws".to_string(), streams_path());
    paths.insert("/metrics".to_string(), metrics_path());
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": "dexd",
            "version": "1",
            "description": "A trading venue for asset pairs on blockchain networks. Every decimal is a string; every error is {\"error\": {\"code\", \"message\", \"field\"}}. State-changing calls carry the account's privateKey, which signs (EIP-712) and is never kept."
        },
        "paths": paths,
        "components": {"schemas": schemas(), "responses": error_responses()},
    })
}

fn operation_object(operation: &Operation, is_alias: bool) -> Value {
    let mut object = json!({
        "operationId": if is_alias { format!("{}Alias", operation.id) } else { operation.id.to_string() },
        "summary": operation.summary,
        "responses": responses(operation),
    });
    if operation.is_post {
        let properties: Map<String, Value> = operation
            .fields
            .iter()
            .map(|field| (field.name.to_string(), field_schema(field.kind, field.description)))
            .collect();
        let required: Vec<&str> = operation
            .fields
            .iter()
            .filter(|field| field.required)
            .map(|field| field.name)
            .collect();
        let body_schema =
            json!({"type": "object", "additionalProperties": false, "properties": properties, "required": required});
        object["requestBody"] = json!({
            "required": true,
            "content": {
                "application/json": {"schema": body_schema},
                "application/x-www-form-urlencoded": {"schema": body_schema},
            }
        });
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
                    "schema": query_schema_with_examples(field.kind),
                })
            })
            .collect();
        object["parameters"] = Value::Array(parameters);
    }
    object
}

fn responses(operation: &Operation) -> Value {
    let mut responses = Map::new();
    responses.insert(
        "200".to_string(),
        json!({"description": "Success.", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{}", operation.response_schema)}}}}),
    );
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

fn field_schema(kind: Kind, description: &str) -> Value {
    let mut schema = match kind {
        Kind::ChainId => {
            json!({"oneOf": [{"type": "string", "pattern": "^[0-9]{1,20}$"}, {"type": "integer", "minimum": 0}]})
        }
        Kind::Bool => json!({"oneOf": [{"type": "boolean"}, {"type": "string", "enum": ["true", "false"]}]}),
        Kind::Integer => {
            json!({"oneOf": [{"type": "string", "pattern": "^[0-9]{1,20}$"}, {"type": "integer", "minimum": 0}]})
        }
        Kind::Uint256 => {
            json!({"oneOf": [{"type": "string", "pattern": "^[0-9]{1,78}$"}, {"type": "integer", "minimum": 0}]})
        }
        other => query_schema(other),
    };
    schema["description"] = Value::String(description.to_string());
    add_examples(&mut schema, kind);
    schema
}

fn query_schema_with_examples(kind: Kind) -> Value {
    let mut schema = query_schema(kind);
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
        _ => return,
    };
    schema["examples"] = examples;
}

fn query_schema(kind: Kind) -> Value {
    match kind {
        Kind::ChainId | Kind::Integer => json!({"type": "string", "pattern": "^[0-9]{1,20}$"}),
        Kind::Address => json!({"type": "string", "pattern": "^0x[0-9a-fA-F]{40}$"}),
        Kind::Asset => json!({"type": "string", "pattern": "^[A-Za-z0-9.-]{1,16}$"}),
        Kind::Pair => json!({"type": "string", "pattern": "^[A-Za-z0-9.-]{1,16}/[A-Za-z0-9.-]{1,16}$"}),
        Kind::Decimal => json!({"type": "string", "pattern": "^[0-9]+(\\.[0-9]+)?$"}),
        Kind::Bool => json!({"type": "string", "enum": ["true", "false"]}),
        Kind::Text => json!({"type": "string", "minLength": 1, "maxLength": 64}),
        Kind::PrivateKey | Kind::OrderId => json!({"type": "string", "pattern": "^0x[0-9a-fA-F]{64}$"}),
        Kind::Uint256 => json!({"type": "string", "pattern": "^[0-9]{1,78}$"}),
        Kind::Signature => json!({"type": "string", "pattern": "^0x[0-9a-fA-F]{130}$"}),
        Kind::Choice(values) => json!({"type": "string", "enum": values}),
    }
}

/// `GET /ws`: documented here for completeness; the protocol is in docs/streams.md.
fn streams_path() -> Value {
    json!({"get": {
        "operationId": "streams",
        "summary": "Live streams: upgrade to a WebSocket (book, trades, candles, orders, balances).",
        "description": "A WebSocket upgrade (Connection: Upgrade, Upgrade: websocket). Messages are JSON text frames: {\"op\": \"subscribe\" | \"unsubscribe\" | \"ping\", \"id\", \"channel\", ...}; each subscription gets a snapshot where its channel has one, then every durable change, none left out. The protocol, its guarantees and limits are described in docs/streams.md of the repository, which the server also serves at /docs/streams.md. A request that is not an upgrade is answered 400.",
        "externalDocs": {"description": "The stream protocol (docs/streams.md)", "url": "/docs/streams.md"},
        "responses": {
            "101": {"description": "Switching Protocols: the connection is a WebSocket from here on."},
            "400": {"$ref": "#/components/responses/Error400"},
            "429": {"$ref": "#/components/responses/Error429"},
            "503": {"$ref": "#/components/responses/Error503"},
        }
    }})
}

fn metrics_path() -> Value {
    json!({"get": {
        "operationId": "metrics",
        "summary": "The service's metrics in the Prometheus text exposition format (version 0.0.4).",
        "description": "Requests by operation and status with latency histograms, write queue depth, group-commit batch sizes, journal commit latency, projector lag, resting orders, accounts, connections, stream subscriptions, snapshot age and custody figures; the README lists every metric.",
        "responses": {
            "200": {"description": "The exposition.", "content": {"text/plain": {"schema": {"type": "string"}}}},
            "429": {"$ref": "#/components/responses/Error429"},
        }
    }})
}

fn error_responses() -> Value {
    let codes: &[(u16, &str)] = &[
        (400, "MISSING_PARAMETER, INVALID_PARAMETER, INVALID_NUMBER, UNKNOWN_PARAMETER or MALFORMED_BODY"),
        (401, "UNAUTHENTICATED, INVALID_PRIVATE_KEY, INVALID_SIGNATURE or SIGNATURE_EXPIRED"),
        (403, "ACCOUNT_MISMATCH"),
        (404, "UNKNOWN_CHAIN, UNKNOWN_PAIR, UNKNOWN_ASSET, ORDER_NOT_FOUND or NOT_FOUND"),
        (405, "METHOD_NOT_ALLOWED"),
        (408, "REQUEST_TIMEOUT: the body did not arrive in time"),
        (409, "ORDER_NOT_OPEN, DUPLICATE_CLIENT_ORDER_ID or NONCE_REUSED"),
        (413, "PAYLOAD_TOO_LARGE"),
        (415, "UNSUPPORTED_MEDIA_TYPE"),
        (422, "INSUFFICIENT_BALANCE, INVALID_TICK, INVALID_STEP, BELOW_MIN_AMOUNT, BELOW_MIN_NOTIONAL, POST_ONLY_WOULD_TAKE, FOK_NOT_FILLABLE, NO_LIQUIDITY, TOO_MANY_OPEN_ORDERS, AMOUNT_TOO_LARGE or INSUFFICIENT_FUNDS_ON_CHAIN"),
        (429, "RATE_LIMITED, with Retry-After"),
        (500, "INTERNAL"),
        (502, "CHAIN_UNAVAILABLE: a vault chain's node cannot be used now; nothing was applied"),
        (503, "UNAVAILABLE: nothing was applied"),
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

fn string() -> Value {
    json!({"type": "string"})
}

fn decimal() -> Value {
    json!({"type": "string", "pattern": "^[0-9]+(\\.[0-9]*[1-9])?$", "description": "A canonical decimal string."})
}

fn signed_decimal() -> Value {
    json!({"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]*[1-9])?$"})
}

fn nullable(schema: Value) -> Value {
    json!({"oneOf": [schema, {"type": "null"}]})
}

fn reference(name: &str) -> Value {
    json!({"$ref": format!("#/components/schemas/{name}")})
}

fn array_of(name: &str) -> Value {
    json!({"type": "array", "items": reference(name)})
}

fn object(properties: Value) -> Value {
    let required: Vec<String> = properties
        .as_object()
        .map(|map| map.keys().cloned().collect())
        .unwrap_or_default();
    json!({"type": "object", "properties": properties, "required": required})
}

fn schemas() -> Value {
    let integer = json!({"type": "integer", "minimum": 0});
    let cursor = nullable(string());
    json!({
        "Error": object(json!({"error": object(json!({"code": string(), "message": string(), "field": nullable(string())}))})),
        "Order": object(json!({
            "orderId": string(), "clientOrderId": nullable(string()), "chainId": string(), "account": string(),
            "symbol": string(), "type": {"enum": ["limit", "market"]}, "direction": {"enum": ["buy", "sell"]},
            "timeInForce": {"enum": ["GTC", "IOC", "FOK"]}, "postOnly": {"type": "boolean"}, "price": nullable(decimal()),
            "amount": decimal(), "filled": decimal(), "remaining": decimal(), "cost": decimal(), "average": nullable(decimal()),
            "fee": decimal(), "feeAsset": string(), "status": {"enum": ["open", "filled", "cancelled"]},
            "timestamp": integer, "updatedAt": integer, "signature": string()
        })),
        "Trade": object(json!({
            "tradeId": string(), "chainId": string(), "symbol": string(), "price": decimal(), "amount": decimal(),
            "cost": decimal(), "takerDirection": {"enum": ["buy", "sell"]}, "makerOrderId": string(), "takerOrderId": string(),
            "timestamp": integer
        })),
        "Transfer": object(json!({
            "id": string(), "chainId": string(), "account": string(), "symbol": string(), "quantity": decimal(),
            "status": {"enum": ["pending", "sent", "confirmed", "failed"]},
            "txHash": nullable(string()), "blockNumber": nullable(integer.clone()),
            "timestamp": integer, "updatedAt": integer
        })),
        "Balance": object(json!({"symbol": string(), "total": decimal(), "available": decimal(), "locked": decimal()})),
        "AddOrderResponse": object(json!({"order": reference("Order"), "trades": array_of("Trade")})),
        "OrderResponse": object(json!({"order": reference("Order")})),
        "OrderListResponse": object(json!({"chainId": string(), "account": string(), "orders": array_of("Order"), "nextCursor": cursor})),
        "OrderBookResponse": object(json!({
            "chainId": string(), "symbol": string(), "direction": {"enum": ["buy", "sell"]},
            "levels": {"type": "array", "items": object(json!({"price": decimal(), "amount": decimal(), "orders": integer}))},
            "sequence": integer, "timestamp": integer
        })),
        "CandleResponse": object(json!({
            "chainId": string(), "symbol": string(), "interval": string(),
            "candles": {"type": "array", "items": object(json!({
                "openTime": integer, "open": decimal(), "high": decimal(), "low": decimal(), "close": decimal(),
                "volume": decimal(), "quoteVolume": decimal(), "trades": integer
            }))}
        })),
        "TradeListResponse": object(json!({"chainId": string(), "symbol": string(), "trades": array_of("Trade"), "nextCursor": cursor})),
        "PositionResponse": object(json!({
            "chainId": string(), "symbol": string(), "account": string(),
            "position": object(json!({
                "netAmount": signed_decimal(), "averageEntryPrice": decimal(), "markPrice": nullable(decimal()),
                "realizedPnl": signed_decimal(), "unrealizedPnl": signed_decimal(), "base": reference("Balance"), "quote": reference("Balance")
            })),
            "openOrders": array_of("Order")
        })),
        "DepositResponse": object(json!({"deposit": reference("Transfer"), "balance": reference("Balance")})),
        "WithdrawResponse": object(json!({"withdrawal": reference("Transfer"), "balance": reference("Balance")})),
        "DepositListResponse": object(json!({"chainId": string(), "account": string(), "deposits": array_of("Transfer"), "nextCursor": cursor})),
        "WithdrawalListResponse": object(json!({"chainId": string(), "account": string(), "withdrawals": array_of("Transfer"), "nextCursor": cursor})),
        "Custody": {"oneOf": [
            object(json!({"mode": {"const": "ledger"}})),
            object(json!({
                "mode": {"const": "vault"}, "vault": string(), "operator": string(), "confirmations": integer,
                "crediting": {"enum": ["running", "halted"]}, "haltReason": nullable(string())
            })),
        ]},
        "ReservesResponse": object(json!({
            "chainId": string(), "custody": reference("Custody"),
            "assets": {"type": "array", "items": object(json!({
                "symbol": string(), "onChain": nullable(decimal()), "liabilities": decimal(),
                "pendingWithdrawals": decimal(), "surplus": nullable(json!({"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]*[1-9])?$"}))
            }))},
            "blockNumber": nullable(integer.clone())
        })),
        "AssetsResponse": object(json!({
            "chainId": string(), "custody": reference("Custody"),
            "assets": {"type": "array", "items": object(json!({"symbol": string(), "name": string(), "decimals": integer, "address": nullable(string()), "native": {"type": "boolean"}}))}
        })),
        "BalancesResponse": object(json!({"chainId": string(), "account": string(), "balances": array_of("Balance")})),
        "PairsResponse": object(json!({
            "chainId": string(),
            "pairs": {"type": "array", "items": object(json!({
                "symbol": string(), "base": string(), "quote": string(), "tickSize": decimal(), "stepSize": decimal(),
                "minAmount": decimal(), "minNotional": decimal(), "makerFee": decimal(), "takerFee": decimal(), "lastPrice": nullable(decimal())
            }))}
        })),
        "TradableResponse": object(json!({
            "chainId": string(), "account": string(),
            "tradable": {"type": "array", "items": object(json!({
                "symbol": string(), "buy": object(json!({"maxAmount": decimal(), "maxCost": decimal()})), "sell": object(json!({"maxAmount": decimal()}))
            }))}
        })),
        "OrderDetailResponse": object(json!({
            "order": reference("Order"),
            "typedData": object(json!({"types": {"type": "object"}, "primaryType": {"const": "Order"}, "domain": {"type": "object"}, "message": {"type": "object"}}))
        })),
        "Eip712Response": object(json!({
            "chainId": string(),
            "domain": object(json!({"name": {"const": "dexd"}, "version": {"const": "1"}, "chainId": integer, "verifyingContract": string()})),
            "types": {"type": "object", "additionalProperties": {"type": "array", "items": object(json!({"name": string(), "type": string()}))}},
            "primaryTypes": object(json!({"addOrder": {"const": "Order"}, "cancelOrder": {"const": "CancelOrder"}, "deposit": {"const": "Deposit"}, "withdraw": {"enum": ["Withdraw", "Withdrawal"]}})),
            "maxLifetimeMs": integer
        })),
        "HealthResponse": object(json!({"status": {"const": "ok"}})),
        "ReadyResponse": object(json!({"status": {"const": "ready"}})),
        "OpenApiDocument": {"type": "object"},
    })
}
