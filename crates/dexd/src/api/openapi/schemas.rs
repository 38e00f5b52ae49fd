//! The named schemas of the OpenAPI document's components (the objects and every response),
//! written by hand from the interface (`docs/api.md`), and the small builders they are made of.
//! The paths and parameters are generated in the module above; this one knows no operation.

use dexd_core::{
    CANCEL_REASON_NAMES, DIRECTION_NAMES, ORDER_STATUS_NAMES, ORDER_TYPE_NAMES, ROOT_ORIGIN_NAMES, ROOT_STANDING_NAMES,
    TIME_IN_FORCE_NAMES, TRANSFER_STATUS_NAMES, TRIGGER_CONDITION_NAMES,
};
use serde_json::{json, Map, Value};

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

pub(super) fn reference(name: &str) -> Value {
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

/// Every named schema of the components, in groups of one concern each.
pub(super) fn schemas() -> Map<String, Value> {
    let mut all = Map::new();
    for group in [
        object_schemas(),
        trading_schemas(),
        extension_schemas(),
        portfolio_schemas(),
        venue_schemas(),
        liability_schemas(),
        audit_schemas(),
        subaccount_schemas(),
    ] {
        if let Value::Object(map) = group {
            all.extend(map);
        }
    }
    all
}

/// The objects that responses carry: errors, orders, trades, transfers, balances.
fn object_schemas() -> Value {
    // null unless the order was cancelled.
    let cancel_reason =
        json!({"enum": CANCEL_REASON_NAMES.iter().map(|name| json!(name)).chain([Value::Null]).collect::<Vec<_>>()});
    let trigger_condition = json!({"enum": TRIGGER_CONDITION_NAMES.iter().map(|name| json!(name)).chain([Value::Null]).collect::<Vec<_>>()});
    let integer = json!({"type": "integer", "minimum": 0});
    json!({
        "Error": object(json!({"error": object(json!({"code": string(), "message": string(), "field": nullable(string())}))})),
        "Order": object(json!({
            "orderId": string(), "clientOrderId": nullable(string()), "chainId": string(), "account": string(),
            "symbol": string(), "type": {"enum": ORDER_TYPE_NAMES}, "direction": {"enum": DIRECTION_NAMES},
            "timeInForce": {"enum": TIME_IN_FORCE_NAMES}, "postOnly": {"type": "boolean"}, "price": nullable(decimal()),
            "amount": decimal(), "filled": decimal(), "remaining": decimal(), "cost": decimal(), "average": nullable(decimal()),
            "fee": decimal(), "feeAsset": string(), "status": {"enum": ORDER_STATUS_NAMES}, "cancelReason": cancel_reason,
            "triggerPrice": nullable(decimal()), "triggerCondition": trigger_condition,
            "ocoGroup": nullable(string()), "expiresAt": nullable(integer.clone()),
            "twapId": nullable(string()),
            "timestamp": integer, "updatedAt": integer, "signature": string()
        })),
        "Trade": object(json!({
            "tradeId": string(), "chainId": string(), "symbol": string(), "price": decimal(), "amount": decimal(),
            "cost": decimal(), "takerDirection": {"enum": DIRECTION_NAMES}, "makerOrderId": string(), "takerOrderId": string(),
            "timestamp": integer
        })),
        "Transfer": object(json!({
            "id": string(), "chainId": string(), "account": string(), "symbol": string(), "quantity": decimal(),
            "status": {"enum": TRANSFER_STATUS_NAMES},
            "txHash": nullable(string()), "blockNumber": nullable(integer.clone()),
            "timestamp": integer, "updatedAt": integer
        })),
        "ListedWithdrawal": object(json!({
            "id": string(), "chainId": string(), "account": string(), "symbol": string(), "quantity": decimal(),
            "status": {"enum": TRANSFER_STATUS_NAMES},
            "txHash": nullable(string()), "blockNumber": nullable(integer.clone()),
            "timestamp": integer, "updatedAt": integer,
            "waitingFor": {"enum": ["root", "challenge", "payment", "confirmations", null], "description": "What a withdrawal not yet paid waits for: a liability root covering its debit, that root's challenge period, the payment, the payment's confirmations; null once settled."},
            "payableAfter": {"type": ["integer", "null"], "minimum": 0, "description": "When the covering root's challenge period ends (ms since the Unix epoch), while it waits for it."},
            "requested": {"enum": ["api", "chain"], "description": "How it was asked for: signed through the API, or with the vault's requestWithdrawal on chain (served within the vault's requestPeriod, or anyone may freeze the vault)."},
            "requestId": {"type": ["integer", "null"], "minimum": 0, "description": "The vault's number of the request, for one asked for on chain."}
        })),
        "Balance": object(json!({"symbol": string(), "total": decimal(), "available": decimal(), "locked": decimal()})),
        "AccountTrade": {"allOf": [reference("Trade"), object(json!({
            "orderId": string(), "role": {"enum": ["maker", "taker"]}, "fee": decimal(), "feeAsset": string()
        }))]},
        "Custody": {"oneOf": [
            object(json!({"mode": {"const": "ledger"}})),
            object(json!({
                "mode": {"const": "vault"}, "vault": string(), "operator": string(), "confirmations": {"oneOf": [integer.clone(), {"const": "finalized"}]},
                "crediting": {"enum": ["running", "halted"]}, "haltReason": nullable(string()),
                "frozen": {"type": "boolean", "description": "Whether the vault (version 2) is frozen: it pays exits only, and the venue sends it nothing."}
            })),
        ]},
    })
}

/// The responses of the order and market operations.
fn trading_schemas() -> Value {
    let integer = json!({"type": "integer", "minimum": 0});
    let cursor = nullable(string());
    json!({
        "AddOrderResponse": object(json!({"order": reference("Order"), "trades": array_of("Trade")})),
        "OrderResponse": object(json!({"order": reference("Order")})),
        "OrderListResponse": object(json!({"chainId": string(), "account": string(), "orders": array_of("Order"), "nextCursor": cursor})),
        "OrderBookResponse": object(json!({
            "chainId": string(), "symbol": string(), "direction": {"enum": DIRECTION_NAMES},
            "levels": {"type": "array", "items": object(json!({"price": decimal(), "amount": decimal(), "orders": integer}))},
            "sequence": integer, "timestamp": integer
        })),
        "CandleResponse": object(json!({
            "chainId": string(), "symbol": string(), "interval": string(),
            "candles": {"type": "array", "items": object(json!({
                "openTime": integer, "open": decimal(), "high": decimal(), "low": decimal(), "close": decimal(),
                "volume": decimal(), "quoteVolume": decimal(), "trades": integer
            }))},
            "nextCursor": cursor.clone()
        })),
        "AccountTradeListResponse": object(json!({"chainId": string(), "account": string(), "trades": array_of("AccountTrade"), "nextCursor": cursor})),
        "TradeListResponse": object(json!({"chainId": string(), "symbol": string(), "trades": array_of("Trade"), "nextCursor": cursor})),
        "PositionResponse": object(json!({
            "chainId": string(), "symbol": string(), "account": string(),
            "position": object(json!({
                "netAmount": signed_decimal(), "averageEntryPrice": decimal(), "markPrice": nullable(decimal()),
                "realizedPnl": signed_decimal(), "unrealizedPnl": signed_decimal(), "base": reference("Balance"), "quote": reference("Balance")
            })),
            "openOrders": array_of("Order")
        })),
        "OrderDetailResponse": {
            "type": "object",
            "required": ["order", "typedData"],
            "properties": {
                "order": reference("Order"),
                "typedData": object(json!({"types": {"type": "object"}, "primaryType": {"const": "Order"}, "domain": {"type": "object"}, "message": {"type": "object"}})),
                "batch": batch_proof_schema(),
            },
        },
    })
}

/// An order of a batch signed once (contract version 4): what ties it to its batch's signature.
fn batch_proof_schema() -> Value {
    let hash = json!({"type": "string", "pattern": "^0x[0-9a-f]{64}$"});
    let mut proof = object(json!({
        "primaryType": {"const": "OrderBatch"},
        "encodedType": string(),
        "index": {"type": "integer", "minimum": 0, "maximum": 49},
        "orderHashes": {"type": "array", "items": hash, "minItems": 1, "maxItems": 50},
        "account": string(),
        "nonce": {"type": "string", "pattern": "^[0-9]+$"},
        "expiry": {"type": "integer", "minimum": 0},
        "digest": hash,
        "signature": {"type": "string", "pattern": "^0x[0-9a-f]{130}$"},
    }));
    proof["description"] = json!(
        "Present for an order of a batch signed once: its struct hash is orderHashes[index], and the signature \
         recovers over digest (hashStruct(OrderBatch) under the chain's domain) to the account or its agent."
    );
    proof
}

/// The responses of the trading extensions: batches, cancel all, amend, the switch, agents.
fn extension_schemas() -> Value {
    let error_result = json!({
        "type": "object",
        "properties": {"error": reference("ErrorObject")},
        "required": ["error"],
        "additionalProperties": false
    });
    let agent = object(json!({
        "agent": string(),
        "name": string(),
        "validUntil": {"type": ["integer", "null"], "minimum": 0},
        "approvedAt": {"type": "integer", "minimum": 0}
    }));
    json!({
        "ErrorObject": object(json!({"code": string(), "message": string(), "field": {"type": ["string", "null"]}})),
        "BatchOrdersResponse": object(json!({
            "results": {"type": "array", "items": {"oneOf": [reference("AddOrderResponse"), error_result.clone()]}}
        })),
        "BatchCancelResponse": object(json!({
            "results": {"type": "array", "items": {"oneOf": [reference("OrderResponse"), error_result]}}
        })),
        "CancelAllResponse": object(json!({"orders": array_of("Order")})),
        "AmendOrderResponse": object(json!({"cancelled": reference("Order"), "order": reference("Order"), "trades": array_of("Trade")})),
        "CancelAllAfterResponse": object(json!({
            "triggerAt": {"type": ["integer", "null"], "minimum": 0, "description": "When the switch fires, ms since the Unix epoch; null when off."}
        })),
        "Agent": agent,
        "AgentResponse": object(json!({"chainId": string(), "account": string(), "agent": reference("Agent")})),
        "RevokeAgentResponse": object(json!({"chainId": string(), "account": string(), "agent": string(), "revoked": {"const": true}})),
        "AgentsResponse": object(json!({"chainId": string(), "account": string(), "agents": array_of("Agent")})),
    })
}

/// The responses of the subaccount operations (contract version 5).
fn subaccount_schemas() -> Value {
    let number = json!({"type": "integer", "minimum": 0, "maximum": dexd_core::MAX_SUBACCOUNT_NUMBER});
    json!({
        "SubaccountTransfer": object(json!({
            "transferId": {"type": "string", "pattern": "^[0-9]+$"}, "clientTransferId": string(), "chainId": string(),
            "account": string(), "fromSubaccount": number.clone(), "toSubaccount": number.clone(),
            "from": string(), "to": string(), "symbol": string(), "quantity": decimal(),
            "timestamp": {"type": "integer", "minimum": 0}
        })),
        "Twap": object(json!({
            "twapId": {"type": "string", "pattern": "^[0-9]+$"}, "clientTwapId": nullable(string()), "chainId": string(),
            "account": string(), "symbol": string(), "direction": {"enum": dexd_core::DIRECTION_NAMES},
            "amount": decimal(), "filled": decimal(), "remaining": decimal(), "cost": decimal(),
            "average": nullable(decimal()), "limitPrice": nullable(decimal()),
            "durationMs": {"type": "integer", "minimum": 0}, "intervalMs": {"type": "integer", "minimum": 0},
            "status": {"enum": ["running", "completed", "cancelled"]},
            "slices": {"type": "integer", "minimum": 0}, "slicesPlanned": {"type": "integer", "minimum": 1},
            "nextSliceAt": nullable(json!({"type": "integer", "minimum": 0})),
            "startedAt": {"type": "integer", "minimum": 0}, "endsAt": {"type": "integer", "minimum": 0},
            "updatedAt": {"type": "integer", "minimum": 0}
        })),
        "TwapResponse": object(json!({"twap": reference("Twap")})),
        "TwapListResponse": object(json!({"chainId": string(), "account": string(), "twaps": array_of("Twap")})),
        "SubaccountTransferResponse": object(json!({"transfer": reference("SubaccountTransfer")})),
        "SubaccountTransferListResponse": object(json!({
            "chainId": string(), "account": string(), "transfers": array_of("SubaccountTransfer"),
            "nextCursor": nullable(string())
        })),
        "SubaccountsResponse": object(json!({
            "chainId": string(), "account": string(),
            "subaccounts": {"type": "array", "items": object(json!({
                "subaccount": number, "address": string(), "openOrders": {"type": "integer", "minimum": 0},
                "balances": array_of("Balance")
            }))}
        })),
    })
}

/// The responses of the portfolio operations: transfers, reserves, balances, tradable amounts.
fn portfolio_schemas() -> Value {
    let integer = json!({"type": "integer", "minimum": 0});
    let cursor = nullable(string());
    json!({
        "DepositResponse": object(json!({"deposit": reference("Transfer"), "balance": reference("Balance")})),
        "WithdrawResponse": object(json!({"withdrawal": reference("Transfer"), "balance": reference("Balance")})),
        "DepositListResponse": object(json!({"chainId": string(), "account": string(), "deposits": array_of("Transfer"), "nextCursor": cursor})),
        "WithdrawalListResponse": object(json!({"chainId": string(), "account": string(), "withdrawals": array_of("ListedWithdrawal"), "nextCursor": cursor})),
        "ReservesResponse": object(json!({
            "chainId": string(), "custody": reference("Custody"),
            "assets": {"type": "array", "items": object(json!({
                "symbol": string(), "onChain": nullable(decimal()), "liabilities": decimal(),
                "pendingWithdrawals": decimal(), "surplus": nullable(json!({"type": "string", "pattern": "^-?[0-9]+(\\.[0-9]*[1-9])?$"}))
            }))},
            "blockNumber": nullable(integer.clone()),
            "readAt": integer.clone()
        })),
        "BalancesResponse": object(json!({"chainId": string(), "account": string(), "balances": array_of("Balance")})),
        "RateLimitsResponse": object(json!({
            "writesPerSecond": {"type": "integer", "minimum": 1},
            "writesUsed": {"type": "integer", "minimum": 0},
            "resetAt": {"type": "integer", "minimum": 0, "description": "When no write is spent any more, in ms since the Unix epoch."},
            "openOrders": {"type": "integer", "minimum": 0},
            "maxOpenOrders": {"type": "integer", "minimum": 1}
        })),
        "TradableResponse": object(json!({
            "chainId": string(), "account": string(),
            "tradable": {"type": "array", "items": object(json!({
                "symbol": string(), "buy": object(json!({"maxAmount": decimal(), "maxCost": decimal()})), "sell": object(json!({"maxAmount": decimal()}))
            }))}
        })),
    })
}

/// The liability proofs: an account's leaves and proofs, the roots, and one line of the leaves.
fn liability_schemas() -> Value {
    let integer = json!({"type": "integer", "minimum": 0});
    let units = json!({"type": "string", "pattern": "^[0-9]{1,78}$", "description": "An amount in the token's smallest units."});
    let bytes32 = json!({"type": "string", "pattern": "^0x[0-9a-f]{64}$"});
    let leaf = json!({"symbol": nullable(string()), "token": string(), "balance": units, "creditedDeposits": units, "debitedWithdrawals": units});
    let standing = json!({"enum": ROOT_STANDING_NAMES});
    let mut proof_leaf = leaf.clone();
    proof_leaf["proof"] = json!({"type": "array", "items": bytes32});
    proof_leaf["exitCalldata"] = json!({"type": "string", "pattern": "^0x([0-9a-f]{2})+$"});
    let mut line = leaf;
    line["account"] = string();
    json!({
        "LiabilityProofResponse": object(json!({
            "chainId": string(), "account": string(), "epoch": integer, "root": bytes32, "journalSequence": integer,
            "depositCount": integer, "txHash": bytes32, "committedAt": integer, "standing": standing,
            "leaves": {"type": "array", "items": object(proof_leaf)}
        })),
        "LiabilityRootsResponse": object(json!({
            "chainId": string(),
            "roots": {"type": "array", "items": object(json!({
                "epoch": integer, "root": bytes32, "journalSequence": integer, "depositCount": integer, "txHash": bytes32,
                "blockNumber": integer, "committedAt": integer, "finalAfter": integer,
                "origin": {"enum": ROOT_ORIGIN_NAMES}, "standing": standing,
                "totals": {"type": "array", "items": object(json!({"symbol": string(), "token": string(), "total": units}))}
            }))},
            "nextCursor": nullable(string())
        })),
        "CustodyResponse": object(json!({
            "chainId": string(), "custody": reference("Custody"),
            "roots": nullable(object(json!({
                "challengePeriodS": integer, "maxRootAgeS": integer, "rootIntervalMs": integer,
                "withdrawalWaitMs": integer,
                "newestVenueRoot": nullable(integer.clone()), "newestFinalRoot": nullable(integer.clone()),
                "payableThrough": nullable(integer.clone()),
                "foreignRoot": nullable(object(json!({"epoch": integer, "root": bytes32, "journalSequence": integer, "txHash": bytes32, "standing": standing}))),
            }))),
            "frozen": {"type": "boolean"},
            "exitEpoch": nullable(integer.clone()),
            "withdrawalsStopped": nullable(string()),
            "status": object(json!({
                "headBlock": nullable(integer.clone()), "scannedBlock": nullable(integer.clone()), "nodeError": nullable(string()),
                "halted": nullable(string()), "payerError": nullable(string())
            }))
        })),
        "LiabilityLeafLine": object(line),
    })
}

/// The public audit log: a line of the journal, and the roots (`docs/audit.md`).
fn audit_schemas() -> Value {
    let integer = json!({"type": "integer", "minimum": 0});
    let bytes32 = json!({"type": "string", "pattern": "^0x[0-9a-f]{64}$"});
    let authorization = json!({
        "type": "object",
        "description": "What authorizes the command: kind eip712 (primaryType, signer, message, nonce, expiry, signature, clientSigned), vaultDeposit (depositId, txHash, logIndex, blockNumber), accountTransaction (txHash), system, or unsigned (journaled before commands carried their signature).",
        "properties": {"kind": {"enum": ["eip712", "vaultDeposit", "accountTransaction", "system", "unsigned"]}},
        "required": ["kind"]
    });
    let command_line = json!({
        "type": "object",
        "description": "A journaled command.",
        "properties": {
            "sequence": integer, "time": integer,
            "command": {"type": "object", "properties": {"type": string()}, "required": ["type"]},
            "encoded": {"type": "string", "pattern": "^0x([0-9a-f]{2})+$"},
            "authorization": authorization
        },
        "required": ["sequence", "time", "command", "encoded", "authorization"]
    });
    let hash_line = json!({
        "type": "object",
        "description": "The engine's state hash after a journal position (every multiple of 10,000).",
        "properties": {"sequence": integer, "stateHash": bytes32},
        "required": ["sequence", "stateHash"]
    });
    let mut root = json!({
        "epoch": integer, "root": bytes32, "journalSequence": integer, "depositCount": integer, "txHash": bytes32,
        "blockNumber": integer, "committedAt": integer, "finalAfter": integer,
        "origin": {"enum": ROOT_ORIGIN_NAMES}, "standing": {"enum": ROOT_STANDING_NAMES},
        "totals": {"type": "array", "items": object(json!({"symbol": string(), "token": string(), "total": string()}))},
    });
    root["leaves"] = string();
    json!({
        "AuditJournalLine": {"oneOf": [command_line, hash_line]},
        "AuditRootsResponse": object(json!({
            "chainId": string(), "roots": {"type": "array", "items": object(root)}, "next": nullable(integer)
        })),
    })
}

/// The responses that describe the venue: assets, pairs, signing, health, chains.
fn venue_schemas() -> Value {
    let integer = json!({"type": "integer", "minimum": 0});
    json!({
        "AssetsResponse": object(json!({
            "chainId": string(), "custody": reference("Custody"),
            "assets": {"type": "array", "items": object(json!({"symbol": string(), "name": string(), "decimals": integer, "address": nullable(string()), "native": {"type": "boolean"}}))}
        })),
        "PairsResponse": object(json!({
            "chainId": string(),
            "pairs": {"type": "array", "items": object(json!({
                "symbol": string(), "base": string(), "quote": string(), "tickSize": decimal(), "stepSize": decimal(),
                "minAmount": decimal(), "minNotional": decimal(), "makerFee": decimal(), "takerFee": decimal(),
                "feeRaise": nullable(object(json!({"makerFee": decimal(), "takerFee": decimal(), "effectiveAt": integer}))),
                "lastPrice": nullable(decimal()),
                "halted": {"type": "boolean"}
            }))}
        })),
        "Eip712Response": {
            "type": "object",
            "properties": {
                "chainId": string(),
                "domain": object(json!({"name": {"const": "dexd"}, "version": {"const": "1"}, "chainId": integer, "verifyingContract": string()})),
                "types": {"type": "object", "additionalProperties": {"type": "array", "items": object(json!({"name": string(), "type": string()}))}},
                "primaryTypes": object(json!({"addOrder": {"const": "Order"}, "cancelOrder": {"const": "CancelOrder"}, "deposit": {"const": "Deposit"}, "withdraw": {"enum": ["Withdraw", "Withdrawal"]}})),
                "maxLifetimeMs": integer,
                "maxWithdrawalLifetimeMs": integer,
                "minWithdrawalLifetimeMs": integer
            },
            "required": ["chainId", "domain", "types", "primaryTypes", "maxLifetimeMs"],
            "description": "maxWithdrawalLifetimeMs and minWithdrawalLifetimeMs are given on a vault chain only."
        },
        "HealthResponse": object(json!({"status": {"const": "ok"}})),
        "ChainsResponse": object(json!({
            "chains": {"type": "array", "items": object(json!({
                "chainId": string(), "name": string(), "custody": {"enum": ["ledger", "vault"]}
            }))}
        })),
        "ReadyResponse": object(json!({
            "status": {"const": "ready"},
            "custodyHalted": {"type": "array", "items": object(json!({"chainId": string(), "reason": string()}))}
        })),
        "ClusterResponse": object(json!({
            "node": string(),
            "nodes": {"type": "array", "items": object(json!({
                "id": string(), "url": string(), "alive": {"type": "boolean"}
            }))},
            "chains": {"type": "array", "items": object(json!({
                "chainId": string(),
                "leader": {"type": ["string", "null"]},
                "epoch": {"type": "integer", "minimum": 0},
                "sequence": {"type": "integer", "minimum": 0},
                "appliedSequence": {"type": "integer", "minimum": 0}
            }))}
        })),
        "OpenApiDocument": {"type": "object"},
    })
}
