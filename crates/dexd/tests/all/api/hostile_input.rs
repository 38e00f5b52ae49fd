//! Hostile input, generated from the operation table: for every operation and every parameter,
//! a battery of bad values (empty, huge, unicode, control characters, signs, exponents, spaces,
//! NaN, overflow, wrong JSON types) plus whole-request faults (missing, unknown and repeated
//! parameters, wrong content type, truncated and deeply nested JSON, bodies over the limit).
//! Each must get the contract's status and code naming the parameter, and the state (balances,
//! books, order lists, histories) must be unchanged after every one of them.

use crate::common;

use common::{TestServer, Trader};
use dexd::api::operations::{Field, Kind, Operation, ALL};
use serde_json::{json, Value};

/// What a refusal must look like.
struct Expected {
    status: u16,
    codes: &'static [&'static str],
}

const fn expect(status: u16, codes: &'static [&'static str]) -> Expected {
    Expected { status, codes }
}

/// A valid value for a parameter, against the scene [`setup`] builds.
fn valid_value(field: &Field, scene: &Scene) -> Option<String> {
    let value = match (field.name, field.kind) {
        ("chainId", _) => "1".to_string(),
        ("privateKey", _) => scene.alice.key.clone(),
        ("account" | "from", _) => scene.alice.address.clone(),
        ("orderId", _) => scene.open_order_id.clone(),
        (_, Kind::Pair) => "ETH/USDC".to_string(),
        (_, Kind::Asset) => "USDC".to_string(),
        ("type", _) => "limit".to_string(),
        ("direction", _) => "buy".to_string(),
        ("price", _) => "1000".to_string(),
        ("amount", _) => "0.01".to_string(),
        ("quantity", _) => "1".to_string(),
        ("orders", _) => {
            json!([{"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "1000", "amount": "0.01"}])
                .to_string()
        }
        ("cancels", _) => json!([{"symbol": "ETH/USDC", "orderId": scene.open_order_id}]).to_string(),
        ("timeoutMs", _) => "0".to_string(),
        ("agent", _) => scene.bob.address.clone(),
        ("name", _) => "bot".to_string(),
        ("epoch", _) => "0".to_string(),
        ("fromSubaccount", _) => "0".to_string(),
        ("toSubaccount", _) => "1".to_string(),
        ("clientTransferId", _) => "t-1".to_string(),
        ("durationMs", _) => "300000".to_string(),
        ("intervalMs", _) => "30000".to_string(),
        ("twapId", _) => "1".to_string(),
        _ => return None,
    };
    Some(value)
}

/// The bad values every parameter gets, whatever its kind, as JSON values.
fn universal_bad_values(valid: &str) -> Vec<Value> {
    vec![
        json!(""),
        json!("9".repeat(10_000)),
        json!("✓é漢"),
        json!("\u{0}\u{7}\n\r"),
        json!(format!(" {valid}")),
        json!(format!("{valid} ")),
        json!(format!("{valid}\u{0}")),
        json!({"nested": valid}),
        json!([valid]),
    ]
}

/// Bad values particular to a kind, with what each must get.
fn kind_bad_values(field: &Field) -> Vec<(Value, Expected)> {
    let numeric_text = [
        "-1",
        "+1",
        "1e3",
        "1E3",
        "0x10",
        "NaN",
        "Infinity",
        "-Infinity",
        "1,5",
        "١",
    ];
    let invalid = || expect(400, &["INVALID_PARAMETER"]);
    let mut cases: Vec<(Value, Expected)> = Vec::new();
    match field.kind {
        Kind::ChainId => {
            cases.extend(numeric_text.iter().map(|text| (json!(text), invalid())));
            cases.push((json!("1.5"), invalid()));
            cases.push((json!("18446744073709551616"), invalid()));
            cases.push((json!(1.5), invalid()));
            cases.push((json!(-1), invalid()));
            cases.push((json!("0"), expect(404, &["UNKNOWN_CHAIN"])));
            cases.push((json!("5"), expect(404, &["UNKNOWN_CHAIN"])));
        }
        Kind::Integer | Kind::Milliseconds | Kind::Count { .. } => {
            cases.extend(numeric_text.iter().map(|text| (json!(text), invalid())));
            cases.push((json!("1.5"), invalid()));
            cases.push((json!("18446744073709551616"), invalid()));
            cases.push((json!(1.5), invalid()));
            cases.push((json!(-1), invalid()));
            if let Kind::Count { max, .. } = field.kind {
                cases.push((json!("0"), invalid()));
                cases.push((json!((max + 1).to_string()), invalid()));
            }
        }
        Kind::Cursor => {
            cases.extend(numeric_text.iter().map(|text| (json!(text), invalid())));
            cases.push((json!("abc"), invalid()));
            cases.push((json!("12345678901234567890"), invalid()));
        }
        Kind::Decimal => {
            let number = || expect(400, &["INVALID_NUMBER"]);
            cases.extend(numeric_text.iter().map(|text| (json!(text), number())));
            cases.push((json!("0"), number()));
            cases.push((json!("0.000"), number()));
            cases.push((json!("1.2.3"), number()));
            cases.push((json!(".5"), number()));
            cases.push((json!(1.5), number()));
            cases.push((json!(true), number()));
            cases.push((
                json!("0.0000000000000000000001"),
                expect(0, &["INVALID_NUMBER", "INVALID_TICK", "INVALID_STEP"]),
            ));
            cases.push((
                json!("340282366920938463463374607431768211456"),
                expect(0, &["INVALID_NUMBER", "AMOUNT_TOO_LARGE"]),
            ));
        }
        Kind::Address => {
            for text in [
                "0x123",
                "0xZZZZ000000000000000000000000000000000000",
                "a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1",
                "0xa1A1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1a1",
            ] {
                cases.push((json!(text), invalid()));
            }
        }
        Kind::Pair => {
            for text in ["ETH/", "/USDC", "ETH USDC", "ETH/USDC/DAI", "ETH\\USDC"] {
                cases.push((json!(text), invalid()));
            }
            cases.push((json!("DOGE/USDC"), expect(404, &["UNKNOWN_PAIR"])));
        }
        Kind::Asset => {
            cases.push((json!("US DC"), invalid()));
            cases.push((json!("DOGE"), expect(404, &["UNKNOWN_ASSET"])));
        }
        Kind::Choice(_) => {
            cases.push((json!("limitx"), invalid()));
            cases.push((json!(true), invalid()));
        }
        Kind::Bool => {
            for value in [json!("yes"), json!("1"), json!("TRUE "), json!(1)] {
                cases.push((value, invalid()));
            }
        }
        Kind::PrivateKey => {
            let key = expect(401, &["INVALID_PRIVATE_KEY"]);
            cases.push((json!(format!("0x{}", "0".repeat(64))), key));
            cases.push((
                json!(format!("0x{}", "f".repeat(64))),
                expect(401, &["INVALID_PRIVATE_KEY"]),
            ));
            cases.push((json!("0x1234"), expect(401, &["INVALID_PRIVATE_KEY"])));
        }
        Kind::OrderId => {
            cases.push((json!("0x1234"), invalid()));
            cases.push((json!(format!("0x{}", "g".repeat(64))), invalid()));
        }
        Kind::Subaccount => {
            cases.extend(numeric_text.iter().map(|text| (json!(text), invalid())));
            for value in [json!("1001"), json!(1001), json!(1.5), json!(-1), json!("1.0")] {
                cases.push((value, invalid()));
            }
        }
        Kind::Text | Kind::TransferId => {
            cases.push((json!("a".repeat(65)), invalid()));
            cases.push((json!("a/b"), invalid()));
        }
        Kind::Uint256 | Kind::Signature => {
            cases.push((json!("-1"), invalid()));
            cases.push((json!("1".repeat(79)), invalid()));
        }
        Kind::SwitchTimeout => {
            cases.extend(numeric_text.iter().map(|text| (json!(text), invalid())));
            for value in [json!("4999"), json!(1), json!(86_400_001), json!("1.5"), json!(-5000)] {
                cases.push((value, invalid()));
            }
        }
        Kind::AgentName => {
            cases.push((json!("a".repeat(33)), invalid()));
            cases.push((json!("bot:1"), invalid()));
        }
        Kind::GroupName => {
            cases.push((json!("a".repeat(37)), invalid()));
            cases.push((json!("a/b"), invalid()));
        }
        Kind::ExpiresAt => {
            cases.extend(numeric_text.iter().map(|text| (json!(text), invalid())));
            cases.push((json!("1.5"), invalid()));
            cases.push((json!("10000000000000"), invalid()));
            cases.push((json!(1.5), invalid()));
            cases.push((json!(-1), invalid()));
        }
        Kind::Items { max, .. } => {
            let item = json!({"symbol": "ETH/USDC", "orderId": "0x00"});
            cases.push((json!([]), invalid()));
            cases.push((Value::Array(vec![item; max + 1]), invalid()));
            cases.push((json!("[1, 2"), invalid()));
            cases.push((json!(7), invalid()));
            cases.push((json!("{}"), invalid()));
        }
    }
    cases
}

/// What any bad value of this kind gets, unless the kind's own cases say otherwise.
fn universal_expectation(field: &Field, value: &Value) -> Expected {
    match field.kind {
        Kind::Decimal => expect(400, &["INVALID_NUMBER"]),
        Kind::PrivateKey if value == &json!("") => expect(401, &["UNAUTHENTICATED"]),
        Kind::PrivateKey => expect(401, &["INVALID_PRIVATE_KEY"]),
        _ => expect(400, &["INVALID_PARAMETER"]),
    }
}

struct Scene {
    server: TestServer,
    alice: Trader,
    bob: Trader,
    open_order_id: String,
}

async fn setup() -> Scene {
    let server = TestServer::start().await;
    let (alice, bob) = common::alice_with_dollars_and_bob_offering(&server).await;
    server.limit(&bob, "sell", "1900", "0.5").await;
    server.limit(&alice, "buy", "1950", "0.25").await;
    let open = server.limit(&alice, "buy", "1000", "0.5").await;
    let open_order_id = open["order"]["orderId"].as_str().unwrap().to_string();
    Scene {
        server,
        alice,
        bob,
        open_order_id,
    }
}

/// Everything a refused request must leave alone.
async fn state(scene: &Scene) -> Value {
    let server = &scene.server;
    let mut snapshot = Vec::new();
    for trader in [&scene.alice, &scene.bob] {
        let account = [("chainId", "1"), ("account", trader.address.as_str())];
        for path in [
            "/account/assetBalances",
            "/order/openOrders",
            "/order/filledOrders",
            "/order/cancelledOrders",
            "/portfolio/depositHistories",
            "/portfolio/withdrawHistories",
            "/account/agents",
        ] {
            snapshot.push(server.get(path, &account).await.1);
        }
    }
    for path in ["/order/buyOrderbooks", "/order/sellOrderbooks"] {
        let mut book = server.get(path, &[("chainId", "1"), ("pair", "ETH/USDC")]).await.1;
        book["timestamp"] = Value::Null;
        snapshot.push(book);
    }
    for path in ["/order/tradeHistories", "/order/tradesOHCL"] {
        snapshot.push(server.get(path, &[("chainId", "1"), ("pair", "ETH/USDC")]).await.1);
    }
    Value::Array(snapshot)
}

/// The operation's valid base request: every required parameter, the credential, and the price
/// that a limit order needs.
fn base_request(operation: &Operation, scene: &Scene) -> serde_json::Map<String, Value> {
    operation
        .fields
        .iter()
        .filter(|field| field.required || matches!(field.name, "privateKey" | "price"))
        .map(|field| {
            let value = valid_value(field, scene)
                .unwrap_or_else(|| panic!("no valid value for {} of {}", field.name, operation.id));
            (field.name.to_string(), json!(value))
        })
        .collect()
}

async fn send(scene: &Scene, operation: &Operation, request: &serde_json::Map<String, Value>) -> (u16, Value) {
    let path = operation.paths[0];
    if operation.is_post {
        return scene.server.post_json(path, Value::Object(request.clone())).await;
    }
    let query: Vec<(String, String)> = request
        .iter()
        .map(|(name, value)| {
            let text = match value {
                Value::String(text) => text.clone(),
                other => other.to_string(),
            };
            (name.clone(), text)
        })
        .collect();
    let response = scene
        .server
        .client
        .get(format!("{}{path}", scene.server.base_url))
        .query(&query)
        .send()
        .await
        .unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap())
}

fn check(answer: &(u16, Value), expected: &Expected, field: Option<&str>, context: &str) {
    let (status, body) = answer;
    let code = body["error"]["code"].as_str().unwrap_or_default();
    assert!(
        expected.codes.contains(&code),
        "{context}: expected one of {:?}, got {status} {body}",
        expected.codes
    );
    if expected.status != 0 {
        assert_eq!(*status, expected.status, "{context}: {body}");
    } else {
        assert!((400..500).contains(status), "{context}: {body}");
    }
    assert_eq!(body["error"]["field"].as_str(), field, "{context}: {body}");
    assert!(
        body["error"]["message"]
            .as_str()
            .is_some_and(|message| !message.is_empty()),
        "{context}: {body}"
    );
}

/// Every case of one parameter: the universal bad values and the kind's own (a list's items are
/// checked item by item in `trading_extensions.rs`: here, only what is wrong with the list).
fn parameter_cases(field: &Field, scene: &Scene) -> Vec<(Value, Expected)> {
    if let Kind::Items { .. } = field.kind {
        return kind_bad_values(field);
    }
    let valid = valid_value(field, scene).unwrap_or_else(|| "1".to_string());
    let mut cases: Vec<(Value, Expected)> = universal_bad_values(&valid)
        .into_iter()
        .map(|value| {
            let expected = universal_expectation(field, &value);
            (value, expected)
        })
        .collect();
    cases.extend(kind_bad_values(field));
    cases
}

#[tokio::test]
async fn every_parameter_of_every_operation_refuses_bad_values_and_nothing_changes() {
    let scene = setup().await;
    let before = state(&scene).await;
    let mut checked = 0;
    for operation in ALL.iter().filter(|operation| !operation.fields.is_empty()) {
        let base = base_request(operation, &scene);
        for field in operation.fields {
            for (value, expected) in parameter_cases(field, &scene) {
                if !operation.is_post && (value.is_object() || value.is_array()) {
                    continue; // A query string has no JSON types; its strings are covered.
                }
                let mut request = base.clone();
                request.insert(field.name.to_string(), value.clone());
                let answer = send(&scene, operation, &request).await;
                let context = format!("{} {}={}", operation.id, field.name, truncate(&value));
                // A signed-request parameter next to privateKey is refused for the mix, by name.
                check(&answer, &expected, Some(field.name), &context);
                checked += 1;
                if operation.is_post {
                    assert_eq!(state(&scene).await, before, "{context} changed the state");
                }
            }
            if field.required {
                let mut request = base.clone();
                request.remove(field.name);
                let answer = send(&scene, operation, &request).await;
                let expected = expect(400, &["MISSING_PARAMETER"]);
                check(
                    &answer,
                    &expected,
                    Some(field.name),
                    &format!("{} without {}", operation.id, field.name),
                );
                checked += 1;
            }
        }
    }
    assert!(checked > 1_000, "only {checked} cases ran");
    assert_eq!(state(&scene).await, before);
}

#[tokio::test]
async fn whole_request_faults_are_refused_on_every_operation_and_nothing_changes() {
    let scene = setup().await;
    let before = state(&scene).await;
    let server = &scene.server;
    for operation in ALL.iter().filter(|operation| !operation.fields.is_empty()) {
        let path = operation.paths[0];
        let base = base_request(operation, &scene);
        let context = operation.id;
        // An unknown parameter, and a parameter given twice.
        let mut unknown = base.clone();
        unknown.insert("colour".into(), json!("blue"));
        check(
            &send(&scene, operation, &unknown).await,
            &expect(400, &["UNKNOWN_PARAMETER"]),
            Some("colour"),
            context,
        );
        let mut pairs: Vec<(String, String)> = base
            .iter()
            .map(|(name, value)| (name.clone(), value.as_str().unwrap().to_string()))
            .collect();
        pairs.push(("chainId".into(), "1".into()));
        let form = form_urlencoded::Serializer::new(String::new())
            .extend_pairs(&pairs)
            .finish();
        let repeated = if operation.is_post {
            server
                .post_raw(path, "application/x-www-form-urlencoded", form.into_bytes())
                .await
        } else {
            server.get_raw(&format!("{path}?{form}")).await
        };
        check(
            &repeated,
            &expect(400, &["INVALID_PARAMETER"]),
            Some("chainId"),
            context,
        );
        if !operation.is_post {
            continue;
        }
        let body = serde_json::to_vec(&Value::Object(base.clone())).unwrap();
        for content_type in ["text/plain", "application/xml", "multipart/form-data"] {
            let answer = server.post_raw(path, content_type, body.clone()).await;
            check(&answer, &expect(415, &["UNSUPPORTED_MEDIA_TYPE"]), None, context);
        }
        let truncated = body[..body.len() / 2].to_vec();
        let nested = format!("{}{}", "[".repeat(30_000), "]".repeat(30_000)).into_bytes();
        let wrapped = format!("{{\"chainId\": {}}}", "[".repeat(60_000) + &"]".repeat(60_000)).into_bytes();
        for (name, bytes) in [
            ("truncated", truncated),
            ("nested", nested),
            ("not an object", b"[1, 2]".to_vec()),
            ("not UTF-8", vec![0xff, 0xfe, 0x7b, 0x7d]),
        ] {
            let answer = server.post_raw(path, "application/json", bytes).await;
            check(
                &answer,
                &expect(400, &["MALFORMED_BODY"]),
                None,
                &format!("{context} {name}"),
            );
        }
        let answer = server.post_raw(path, "application/json", wrapped).await;
        check(
            &answer,
            &expect(413, &["PAYLOAD_TOO_LARGE"]),
            None,
            &format!("{context} nested over the limit"),
        );
        let oversized = format!("{{\"chainId\": \"1\", \"clientOrderId\": \"{}\"}}", "a".repeat(70_000));
        let answer = server.post_raw(path, "application/json", oversized.into_bytes()).await;
        check(
            &answer,
            &expect(413, &["PAYLOAD_TOO_LARGE"]),
            None,
            &format!("{context} over the limit"),
        );
        assert_eq!(state(&scene).await, before, "{context} changed the state");
    }
}

fn truncate(value: &Value) -> String {
    let text = value.to_string();
    if text.len() > 40 {
        format!(
            "{}… ({} bytes)",
            &text[..text.char_indices().nth(30).map_or(text.len(), |(index, _)| index)],
            text.len()
        )
    } else {
        text
    }
}
