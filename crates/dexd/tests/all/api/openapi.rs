//! The OpenAPI document against the contract and against the routes the server really has.

use crate::common;

use std::collections::BTreeSet;

use common::TestServer;
use serde_json::{json, Value};

/// Every path of the interface (`docs/api.md`) with its method, and the extensions (`orderDetail`, `eip712`,
/// `reserves`, `chains`, `cluster`, `health`, `ready`, `metrics`, `openapi.json`).
const CONTRACT_ROUTES: &[(&str, &str)] = &[
    ("post", "/order/addOrder"),
    ("post", "/order/add"),
    ("post", "/order/cancelOrder"),
    ("post", "/order/cancel"),
    ("get", "/order/openOrders"),
    ("get", "/order/filledOrders"),
    ("get", "/order/cancelledOrders"),
    ("get", "/order/buyOrderbooks"),
    ("get", "/order/sellOrderbooks"),
    ("get", "/order/tradesOHCL"),
    ("get", "/order/tradeOHCL"),
    ("get", "/order/tradeHistories"),
    ("get", "/market/trades.csv"),
    ("get", "/order/openPositions"),
    ("get", "/order/accountTrades"),
    ("post", "/portfolio/deposit"),
    ("post", "/portfolio/withdraw"),
    ("get", "/portfolio/depositHistories"),
    ("get", "/portfolio/withdrawHistories"),
    ("get", "/account/assetsInfo"),
    ("get", "/account/assetBalances"),
    ("get", "/account/assetPairs"),
    ("get", "/account/tradableAmounts"),
    ("get", "/account/rateLimits"),
    ("post", "/order/batchOrders"),
    ("post", "/order/batchCancel"),
    ("post", "/order/cancelAll"),
    ("post", "/order/amendOrder"),
    ("post", "/order/cancelAllAfter"),
    ("post", "/account/approveAgent"),
    ("post", "/account/revokeAgent"),
    ("get", "/account/agents"),
    ("post", "/order/addTwap"),
    ("post", "/order/cancelTwap"),
    ("get", "/order/twaps"),
    ("post", "/account/transfer"),
    ("get", "/account/transfers"),
    ("get", "/account/subaccounts"),
    ("get", "/order/orderDetail"),
    ("get", "/account/eip712"),
    ("get", "/account/reserves"),
    ("get", "/account/liabilityProof"),
    ("get", "/account/liabilityRoots"),
    ("get", "/account/custody"),
    ("get", "/account/liabilityLeaves"),
    ("get", "/audit/journal"),
    ("get", "/audit/roots"),
    ("get", "/chains"),
    ("get", "/cluster"),
    ("get", "/health"),
    ("get", "/ready"),
    ("get", "/metrics"),
    ("get", "/ws"),
    ("get", "/openapi.json"),
];

#[tokio::test]
async fn the_document_lists_exactly_the_contract_routes_and_the_server_serves_each() {
    let server = TestServer::start().await;
    let (status, document) = server.get("/openapi.json", &[]).await;
    assert_eq!(status, 200);
    assert_eq!(document["openapi"], "3.1.0");
    let mut documented = BTreeSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for method in item.as_object().unwrap().keys() {
            documented.insert((method.clone(), path.clone()));
        }
    }
    let contract: BTreeSet<(String, String)> = CONTRACT_ROUTES
        .iter()
        .map(|(m, p)| (m.to_string(), p.to_string()))
        .collect();
    assert_eq!(documented, contract);
    for (method, path) in &contract {
        let url = format!("{}{path}", server.base_url);
        let response = match method.as_str() {
            "get" => server.client.get(&url).send().await.unwrap(),
            _ => server
                .client
                .post(&url)
                .header("content-type", "application/json")
                .body("{}")
                .send()
                .await
                .unwrap(),
        };
        let status = response.status().as_u16();
        let is_json = response
            .headers()
            .get("content-type")
            .is_some_and(|value| value.as_bytes().starts_with(b"application/json"));
        let body: Value = if is_json {
            response.json().await.unwrap()
        } else {
            assert_eq!(path, "/metrics", "only /metrics answers in another format");
            Value::Null
        };
        assert!(
            status != 404 || body["error"]["code"] != "NOT_FOUND",
            "{method} {path} is documented but not served"
        );
        assert_ne!(status, 405, "{method} {path} is documented with the wrong method");
    }
}

#[tokio::test]
async fn every_documented_parameter_is_accepted_and_no_other() {
    let server = TestServer::start().await;
    let (_, document) = server.get("/openapi.json", &[]).await;
    let parameters = document["paths"]["/order/tradeHistories"]["get"]["parameters"]
        .as_array()
        .unwrap();
    let names: BTreeSet<&str> = parameters
        .iter()
        .map(|parameter| resolve(&document, parameter)["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from([
            "chainId",
            "pair",
            "limit",
            "cursor",
            "startTime",
            "endTime",
            "from",
            "to",
            "X-Dexd-Min-Sequence"
        ])
    );
    // The cluster's headers: on every read that names a chain, and on every answer.
    let min_sequence = resolve(&document, parameters.last().unwrap());
    assert_eq!(min_sequence["in"], "header");
    assert!(document["paths"]["/order/tradeHistories"]["get"]["responses"]["503"].is_object());
    let write = &document["paths"]["/order/addOrder"]["post"]["responses"]["200"]["headers"];
    for header in ["X-Dexd-Node", "X-Dexd-Sequence", "X-Dexd-Leader"] {
        assert!(resolve(&document, &write[header])["schema"].is_object(), "{header}");
    }
    let read = &document["paths"]["/chains"]["get"];
    assert!(read["responses"]["200"]["headers"]["X-Dexd-Node"].is_object());
    assert!(read["responses"]["200"]["headers"].get("X-Dexd-Sequence").is_none());
    // The two credential forms are alternatives that exclude each other: closed objects, one
    // with privateKey, the other with account, nonce, expiry and signature.
    let body = &document["paths"]["/order/addOrder"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let forms: Vec<Value> = body["oneOf"]
        .as_array()
        .unwrap()
        .iter()
        .map(|alternative| resolve(&document, alternative).clone())
        .collect();
    assert_eq!(forms.len(), 2);
    let properties =
        |form: &Value| -> BTreeSet<String> { form["properties"].as_object().unwrap().keys().cloned().collect() };
    let required = |form: &Value| -> BTreeSet<String> {
        form["required"]
            .as_array()
            .unwrap()
            .iter()
            .map(|name| name.as_str().unwrap().to_string())
            .collect()
    };
    for form in &forms {
        assert_eq!(form["additionalProperties"], false);
    }
    assert!(properties(&forms[0]).contains("privateKey") && !properties(&forms[0]).contains("signature"));
    assert!(required(&forms[0]).contains("privateKey"));
    assert!(!properties(&forms[1]).contains("privateKey"));
    for name in ["account", "nonce", "expiry", "signature"] {
        assert!(required(&forms[1]).contains(name), "{name}");
    }
    let fields: BTreeSet<String> = properties(&forms[0]).union(&properties(&forms[1])).cloned().collect();
    let fields: BTreeSet<&str> = fields.iter().map(String::as_str).collect();
    assert_eq!(
        fields,
        BTreeSet::from([
            "symbol",
            "type",
            "direction",
            "price",
            "amount",
            "chainId",
            "privateKey",
            "account",
            "nonce",
            "expiry",
            "signature",
            "timeInForce",
            "postOnly",
            "clientOrderId",
            "triggerPrice",
            "triggerCondition",
            "ocoGroup",
            "expiresAt",
            "subaccount"
        ])
    );
    for responses in document["paths"]
        .as_object()
        .unwrap()
        .values()
        .flat_map(|item| item.as_object().unwrap().values())
    {
        for reference in responses["responses"]
            .as_object()
            .unwrap()
            .values()
            .filter_map(|response| response["$ref"].as_str())
        {
            let name = reference.rsplit('/').next().unwrap();
            assert!(
                document["components"]["responses"].get(name).is_some(),
                "{reference} is not defined"
            );
        }
    }
}

#[tokio::test]
async fn the_document_mentions_the_streams_and_links_to_their_protocol_which_the_server_serves() {
    let server = TestServer::start().await;
    let (_, document) = server.get("/openapi.json", &[]).await;
    let streams = &document["paths"]["/ws"]["get"];
    assert!(streams["responses"].get("101").is_some(), "{streams}");
    let link = streams["externalDocs"]["url"].as_str().unwrap();
    let response = server
        .client
        .get(format!("{}{link}", server.base_url))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    assert!(response.headers()["content-type"]
        .to_str()
        .unwrap()
        .starts_with("text/markdown"));
    let text = response.text().await.unwrap();
    assert!(text.contains("SLOW_CONSUMER") && text.contains("previousSequence"));
}

/// The schema `value` stands for: itself, or what its `$ref` names in the document.
fn resolve<'a>(document: &'a Value, value: &'a Value) -> &'a Value {
    match value["$ref"].as_str() {
        Some(reference) => {
            let pointer = reference.strip_prefix('#').expect("a local reference");
            document
                .pointer(pointer)
                .unwrap_or_else(|| panic!("{reference} is not defined"))
        }
        None => value,
    }
}

#[tokio::test]
async fn form_bodies_have_their_own_schemas_of_text_values() {
    // Form data carries every value as text; its schemas are named apart from the JSON ones so
    // that a client generator (openapi-python-client) can tell which encoding to send.
    let server = TestServer::start().await;
    let (_, document) = server.get("/openapi.json", &[]).await;
    for path in [
        "/order/addOrder",
        "/order/add",
        "/order/cancelOrder",
        "/portfolio/deposit",
        "/portfolio/withdraw",
    ] {
        let content = &document["paths"][path]["post"]["requestBody"]["content"];
        let names = |media: &str| -> Vec<String> {
            content[media]["schema"]["oneOf"]
                .as_array()
                .unwrap()
                .iter()
                .map(|alternative| alternative["$ref"].as_str().unwrap().to_string())
                .collect()
        };
        let json_names = names("application/json");
        let form_names = names("application/x-www-form-urlencoded");
        assert_eq!(json_names.len(), 2, "{path}");
        assert_eq!(form_names.len(), 2, "{path}");
        assert!(json_names.iter().all(|name| !form_names.contains(name)), "{path}");
        for name in json_names.iter().chain(&form_names) {
            let reference = json!({ "$ref": name });
            let schema = resolve(&document, &reference);
            assert_eq!(schema["additionalProperties"], false, "{name}");
            assert_eq!(
                schema["title"],
                name.rsplit('/').next().unwrap(),
                "{name}: a title is its schema's name"
            );
        }
        let form = resolve(
            &document,
            &content["application/x-www-form-urlencoded"]["schema"]["oneOf"][1],
        );
        assert_eq!(
            form["properties"]["chainId"],
            json!({"type": "string", "pattern": "^[0-9]{1,19}$", "description": form["properties"]["chainId"]["description"], "examples": ["1", "42161"]})
        );
        if path.contains("add") {
            assert_eq!(
                form["properties"]["postOnly"]["enum"],
                json!(["true", "false"]),
                "{path}"
            );
        }
    }
}

#[tokio::test]
async fn operations_are_grouped_named_as_methods_bounded_and_linked() {
    let server = TestServer::start().await;
    let (_, document) = server.get("/openapi.json", &[]).await;
    let tags: Vec<&str> = document["tags"]
        .as_array()
        .unwrap()
        .iter()
        .map(|tag| tag["name"].as_str().unwrap())
        .collect();
    assert_eq!(tags, ["order", "portfolio", "account", "extensions"]);
    let mut operation_ids = BTreeSet::new();
    for (path, item) in document["paths"].as_object().unwrap() {
        for operation in item.as_object().unwrap().values() {
            let tag = operation["tags"][0].as_str().unwrap_or("extensions");
            let id = operation["operationId"].as_str().unwrap();
            assert!(operation_ids.insert(id.to_string()), "{id} twice");
            assert!(
                id.chars().next().unwrap().is_ascii_lowercase() && id.chars().all(|c| c.is_ascii_alphanumeric()),
                "{id}"
            );
            let expected_tag = match path.split('/').nth(1) {
                _ if [
                    "/order/orderDetail",
                    "/order/accountTrades",
                    "/account/eip712",
                    "/account/reserves",
                    "/account/custody",
                ]
                .contains(&path.as_str()) =>
                {
                    "extensions"
                }
                Some("order") => "order",
                Some("portfolio") => "portfolio",
                Some("account") => "account",
                _ => "extensions",
            };
            if path != "/ws" && path != "/metrics" {
                assert_eq!(tag, expected_tag, "{path}");
            }
        }
    }
    assert!(operation_ids.contains("getOpenOrders") && operation_ids.contains("getAccountTrades"));
    // Every bound the server enforces on a list is in the schema.
    let parameter = |path: &str, name: &str| -> Value {
        document["paths"][path]["get"]["parameters"]
            .as_array()
            .unwrap()
            .iter()
            .find(|parameter| parameter["name"] == name)
            .unwrap()["schema"]
            .clone()
    };
    assert_eq!(
        parameter("/order/buyOrderbooks", "depth"),
        json!({"type": "integer", "minimum": 1, "maximum": 1000, "default": 50})
    );
    // A count's default is the one the server takes when the field is left out.
    assert_eq!(parameter("/order/tradesOHCL", "limit")["default"], 500);
    assert_eq!(parameter("/order/openOrders", "limit")["default"], 100);
    assert_eq!(parameter("/order/openOrders", "limit")["minimum"], 1);
    assert_eq!(parameter("/order/openOrders", "chainId")["pattern"], "^[0-9]{1,19}$");
    // Links: from a new order to its detail and cancel, from transfers to their histories.
    let links = |path: &str| document["paths"][path]["post"]["responses"]["200"]["links"].clone();
    assert_eq!(
        links("/order/addOrder")["GetOrderDetail"]["operationId"],
        "getOrderDetail"
    );
    assert_eq!(links("/order/addOrder")["CancelOrder"]["operationId"], "cancelOrder");
    assert_eq!(
        links("/portfolio/deposit")["GetDepositHistory"]["operationId"],
        "getDepositHistory"
    );
    assert_eq!(
        links("/portfolio/withdraw")["GetWithdrawalHistory"]["operationId"],
        "getWithdrawalHistory"
    );
    // Each asset's decimals bound its transfers' quantity (USDC: 6).
    let deposit = resolve(
        &document,
        &document["paths"]["/portfolio/deposit"]["post"]["requestBody"]["content"]["application/json"]["schema"]
            ["oneOf"][0],
    );
    let usdc = deposit["allOf"]
        .as_array()
        .unwrap()
        .iter()
        .find(|condition| condition["if"]["properties"]["symbol"]["pattern"] == "^[Uu][Ss][Dd][Cc]$")
        .unwrap();
    assert_eq!(
        usdc["then"]["properties"]["quantity"]["pattern"],
        "^[0-9]{1,20}(\\.[0-9]{1,6})?$"
    );
}
