//! The operator's API on its own listener (contract version 5, "Markets at run time"): only the
//! operator's bearer token is admitted, never on the public listener; a halted pair takes
//! cancels only, and says so in `GET /account/assetPairs`; `dexd admin` calls it; the halt is
//! journaled (it survives a restart) and the auditor checks the journal that holds it.

use crate::common;

use common::{alice_with_dollars_and_bob_offering, assert_error, BinaryServer, TestServer};
use serde_json::{json, Value};

const TOKEN: &str = "0123456789abcdef0123456789abcdef-operator";

async fn admin_call(admin_url: &str, path: &str, token: Option<&str>, body: Option<Value>) -> (u16, Value) {
    let client = reqwest::Client::new();
    let mut request = match body {
        Some(body) => client.post(format!("{admin_url}{path}")).json(&body),
        None => client.get(format!("{admin_url}{path}")),
    };
    if let Some(token) = token {
        request = request.header("authorization", format!("Bearer {token}"));
    }
    let response = request.send().await.unwrap();
    let status = response.status().as_u16();
    (status, response.json().await.unwrap_or(Value::Null))
}

fn dexd_admin(admin_url: &str, arguments: &[&str]) -> std::process::Output {
    std::process::Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args(["admin", "--url", admin_url])
        .args(arguments)
        .env("DEXD_ADMIN_TOKEN", TOKEN)
        .output()
        .unwrap()
}

async fn halted(server: &TestServer) -> bool {
    let (status, pairs) = server.get("/account/assetPairs", &[("chainId", "1")]).await;
    assert_eq!(status, 200, "{pairs}");
    pairs["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|pair| pair["symbol"] == "ETH/USDC")
        .unwrap()["halted"]
        .as_bool()
        .unwrap()
}

#[tokio::test]
async fn the_operator_halts_and_resumes_a_pair_and_nobody_else_can() {
    let folder = tempfile::tempdir().unwrap();
    let data = folder.path().join("data");
    let (binary, admin_url) = BinaryServer::start_with_admin(&data, TOKEN);
    let server = TestServer::at(&binary.base_url);
    let (alice, bob) = alice_with_dollars_and_bob_offering(&server).await;
    let halt = json!({"chainId": "1", "symbol": "ETH/USDC"});

    // Not on the public listener; not without the token, nor with another.
    let (status, _) = server.post_json("/admin/haltPair", halt.clone()).await;
    assert_eq!(status, 404);
    for token in [None, Some("0123456789abcdef0123456789abcdef-intruder"), Some("")] {
        let answer = admin_call(&admin_url, "/admin/haltPair", token, Some(halt.clone())).await;
        assert_error(&answer, 401, "UNAUTHENTICATED", None);
    }
    assert!(!halted(&server).await, "nothing refused halted the pair");
    assert_error(
        &admin_call(
            &admin_url,
            "/admin/haltPair",
            Some(TOKEN),
            Some(json!({"chainId": "1", "symbol": "DOGE/USDC"})),
        )
        .await,
        404,
        "UNKNOWN_PAIR",
        Some("symbol"),
    );

    // Halted with `dexd admin`: orders are refused, cancels taken, the book stays as it was.
    let output = dexd_admin(&admin_url, &["halt-pair", "--chain-id", "1", "--symbol", "ETH/USDC"]);
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert!(String::from_utf8_lossy(&output.stdout).contains("\"halted\": true"));
    assert!(halted(&server).await);
    let order = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "2100",
                       "amount": "0.5", "privateKey": alice.key});
    assert_error(
        &server.post_json("/order/addOrder", order.clone()).await,
        422,
        "PAIR_HALTED",
        Some("symbol"),
    );
    let open = server.account_list("/order/openOrders", &bob, "orders").await;
    let (status, cancelled) = server
        .post_json(
            "/order/cancelOrder",
            json!({"chainId": "1", "symbol": "ETH/USDC", "orderId": open[0]["orderId"], "privateKey": bob.key}),
        )
        .await;
    assert_eq!(
        (status, &cancelled["order"]["status"]),
        (200, &json!("cancelled")),
        "{cancelled}"
    );
    let (status, pairs) = admin_call(&admin_url, "/admin/pairs?chainId=1", Some(TOKEN), None).await;
    assert_eq!(status, 200, "{pairs}");
    assert!(pairs["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .any(|pair| pair["symbol"] == "ETH/USDC" && pair["halted"] == true));

    // The halt is journaled: a restart keeps it.
    drop(binary);
    let (binary, admin_url) = BinaryServer::start_with_admin(&data, TOKEN);
    let server = TestServer::at(&binary.base_url);
    assert!(halted(&server).await, "the halt survives a restart");
    let (status, resumed) = admin_call(&admin_url, "/admin/resumePair", Some(TOKEN), Some(halt.clone())).await;
    assert_eq!((status, &resumed["halted"]), (200, &json!(false)), "{resumed}");
    server.limit(&bob, "sell", "2100", "1").await;
    let (status, placed) = server.post_json("/order/addOrder", order).await;
    assert_eq!(
        (status, placed["trades"].as_array().map(Vec::len)),
        (200, Some(1)),
        "{placed}"
    );

    // The auditor replays the halt and the resume with the rest.
    let audit_directory = tempfile::tempdir().unwrap();
    let (held, output, errors) = crate::audit::journal::audit_once(&server.base_url, audit_directory.path()).await;
    assert!(held && !output.contains("FAIL"), "{output}\n{errors}");
}

#[test]
fn a_short_or_missing_token_refuses_the_start() {
    let folder = tempfile::tempdir().unwrap();
    for environment in [vec![], vec![("DEXD_ADMIN_TOKEN", "short")]] {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_dexd"))
            .args([
                "serve",
                "--listen",
                "127.0.0.1:0",
                "--admin-listen",
                "127.0.0.1:0",
                "--data-dir",
            ])
            .arg(folder.path().join("data"))
            .env_remove("DEXD_ADMIN_TOKEN")
            .envs(environment)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2));
        let errors = String::from_utf8_lossy(&output.stderr);
        assert!(errors.contains("DEXD_ADMIN_TOKEN"), "{errors}");
        assert!(!errors.contains("short"), "the token never shows: {errors}");
    }
}
