//! The paths of the document that are not the contract's operations: the stream's WebSocket
//! upgrade and the metrics. Their behaviour is described in docs/streams.md and
//! docs/operating.md; this only describes them for the OpenAPI document.

use serde_json::{json, Value};

/// `GET /ws`: documented here for completeness; the protocol is in docs/streams.md.
pub(super) fn streams_path() -> Value {
    json!({"get": {
        "operationId": "openStream",
        "tags": ["extensions"],
        "summary": "Live streams: upgrade to a WebSocket (book, trades, candles, orders, balances).",
        "description": "A WebSocket upgrade (Connection: Upgrade, Upgrade: websocket). Messages are JSON text frames: {\"op\": \"subscribe\" | \"unsubscribe\" | \"ping\", \"id\", \"channel\", ...}; each subscription gets a snapshot where its channel has one, then every durable change, none left out. The protocol, its guarantees and limits are described in docs/streams.md of the repository, which the server also serves at /docs/streams.md. A request that is not an upgrade is answered 400.",
        "externalDocs": {"description": "The stream protocol (docs/streams.md)", "url": "/docs/streams.md"},
        "parameters": [
            {"name": "Connection", "in": "header", "required": true, "schema": {"const": "Upgrade"}, "description": "The WebSocket handshake (RFC 6455)."},
            {"name": "Upgrade", "in": "header", "required": true, "schema": {"const": "websocket"}},
            {"name": "Sec-WebSocket-Version", "in": "header", "required": true, "schema": {"const": "13"}},
            {"name": "Sec-WebSocket-Key", "in": "header", "required": true, "schema": {"type": "string", "minLength": 1}, "description": "16 random bytes in base64 (RFC 6455; the server does not check them)."},
        ],
        "responses": {
            "101": {"description": "Switching Protocols: the connection is a WebSocket from here on."},
            "400": {"$ref": "#/components/responses/Error400"},
            "429": {"$ref": "#/components/responses/Error429"},
            "503": {"$ref": "#/components/responses/Error503"},
        }
    }})
}

/// `GET /metrics`: the Prometheus exposition (docs/operating.md lists every metric).
pub(super) fn metrics_path() -> Value {
    json!({"get": {
        "operationId": "getMetrics",
        "tags": ["extensions"],
        "summary": "The service's metrics in the Prometheus text exposition format (version 0.0.4).",
        "description": "Requests by operation and status with latency histograms, write queue depth, group-commit batch sizes, journal commit latency, projector lag, resting orders, accounts, connections, stream subscriptions, snapshot age and custody figures; docs/operating.md lists every metric.",
        "responses": {
            "200": {"description": "The exposition.", "content": {"text/plain": {"schema": {"type": "string"}}}},
            "429": {"$ref": "#/components/responses/Error429"},
        }
    }})
}
