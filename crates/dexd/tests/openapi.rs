//! The OpenAPI document against the contract and against the routes the server really has.

mod common;

use std::collections::BTreeSet;

use common::TestServer;
use serde_json::Value;

/// Every path of CONTRACT.md with its method, and the extensions (`orderDetail`, `eip712`,
/// `reserves`, `health`, `ready`, `metrics`, `openapi.json`).
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
    ("get", "/order/openPositions"),
    ("post", "/portfolio/deposit"),
    ("post", "/portfolio/withdraw"),
    ("get", "/portfolio/depositHistories"),
    ("get", "/portfolio/withdrawHistories"),
    ("get", "/account/assetsInfo"),
    ("get", "/account/assetBalances"),
    ("get", "/account/assetPairs"),
    ("get", "/account/tradableAmounts"),
    ("get", "/order/orderDetail"),
    ("get", "/account/eip712"),
    ("get", "/account/reserves"),
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
        .map(|parameter| parameter["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        BTreeSet::from(["chainId", "pair", "limit", "cursor", "startTime", "endTime"])
    );
    let body = &document["paths"]["/order/addOrder"]["post"]["requestBody"]["content"]["application/json"]["schema"];
    let fields: BTreeSet<&str> = body["properties"]
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
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
            "clientOrderId"
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
