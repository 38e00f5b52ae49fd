//! The operator's API on its own listener (contract version 5, "Markets at run time"): only the
//! operator's bearer token is admitted, never on the public listener; a halted pair takes
//! cancels only, and says so in `GET /account/assetPairs`; `dexd admin` calls it; the halt is
//! journaled (it survives a restart) and the auditor checks the journal that holds it.

use crate::common;

use common::stream_client::StreamClient;
use common::{alice_with_dollars_and_bob_offering, assert_error, BinaryServer, TestServer, Trader};
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

/// One pair of `GET /account/assetPairs`.
async fn listed_pair(server: &TestServer, symbol: &str) -> Option<Value> {
    let (status, pairs) = server.get("/account/assetPairs", &[("chainId", "1")]).await;
    assert_eq!(status, 200, "{pairs}");
    pairs["pairs"]
        .as_array()
        .unwrap()
        .iter()
        .find(|pair| pair["symbol"] == symbol)
        .cloned()
}

async fn halted(server: &TestServer) -> bool {
    listed_pair(server, "ETH/USDC").await.unwrap()["halted"]
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

#[tokio::test]
async fn the_operator_lists_an_asset_and_a_pair_that_trade_and_stream_without_a_restart() {
    let folder = tempfile::tempdir().unwrap();
    let data = folder.path().join("data");
    let (binary, admin_url) = BinaryServer::start_with_admin(&data, TOKEN);
    let server = TestServer::at(&binary.base_url);
    let link = json!({"chainId": "1", "symbol": "LINK", "decimals": 18,
                      "token": "0x514910771AF9Ca656af840dff83E8264EcF986CA"});
    let pair = json!({"chainId": "1", "base": "LINK", "quote": "USDC", "tickSize": "0.001", "stepSize": "0.01",
                      "minAmount": "0.1", "minNotional": "1", "makerFee": "0.001", "takerFee": "0.002"});

    // Nothing without the token, nor on the public listener; a pair of an unknown asset is 404.
    assert_error(
        &admin_call(&admin_url, "/admin/listAsset", None, Some(link.clone())).await,
        401,
        "UNAUTHENTICATED",
        None,
    );
    assert_eq!(server.post_json("/admin/listAsset", link.clone()).await.0, 404);
    assert_error(
        &admin_call(&admin_url, "/admin/listPair", Some(TOKEN), Some(pair.clone())).await,
        404,
        "UNKNOWN_ASSET",
        Some("base"),
    );
    let (status, before) = server.get("/account/assetsInfo", &[("chainId", "1")]).await;
    assert_eq!(status, 200);
    assert!(!before.to_string().contains("LINK"), "{before}");

    // The asset and the pair listed, each once: the second of each is refused.
    let (status, listed) = admin_call(&admin_url, "/admin/listAsset", Some(TOKEN), Some(link.clone())).await;
    assert_eq!((status, &listed["symbol"]), (200, &json!("LINK")), "{listed}");
    assert_error(
        &admin_call(&admin_url, "/admin/listAsset", Some(TOKEN), Some(link.clone())).await,
        409,
        "CONFIGURATION_REFUSED",
        None,
    );
    let mut crooked = pair.clone();
    crooked["tickSize"] = json!("0.0000000001");
    assert_error(
        &admin_call(&admin_url, "/admin/listPair", Some(TOKEN), Some(crooked)).await,
        400,
        "INVALID_PARAMETER",
        None,
    );
    let output = dexd_admin(
        &admin_url,
        &[
            "list-pair",
            "--chain-id",
            "1",
            "--base",
            "LINK",
            "--quote",
            "USDC",
            "--tick-size",
            "0.001",
            "--step-size",
            "0.01",
            "--min-amount",
            "0.1",
            "--min-notional",
            "1",
            "--maker-fee",
            "0.001",
            "--taker-fee",
            "0.002",
        ],
    );
    assert!(output.status.success(), "{}", String::from_utf8_lossy(&output.stderr));
    assert_error(
        &admin_call(&admin_url, "/admin/listPair", Some(TOKEN), Some(pair.clone())).await,
        409,
        "CONFIGURATION_REFUSED",
        None,
    );
    let listed = listed_pair(&server, "LINK/USDC")
        .await
        .expect("the pair is listed at once");
    assert_eq!(
        (&listed["base"], &listed["tickSize"]),
        (&json!("LINK"), &json!("0.001")),
        "{listed}"
    );

    // It streams and trades: a book subscription sees the resting order, the trade is in the
    // trades and the balances moved by the exact amounts and fees.
    let alice = Trader::new(0xa1);
    let bob = Trader::new(0xb0);
    server.deposit(&alice, "USDC", "1000").await;
    server.deposit(&bob, "LINK", "50").await;
    let mut stream = StreamClient::connect(&server.base_url).await;
    let subscribed = stream
        .ask(json!({"op": "subscribe", "id": "b", "channel": "book", "chainId": "1", "pair": "LINK/USDC", "depth": 25}))
        .await;
    assert_eq!(subscribed["event"], "subscribed", "{subscribed}");
    let order = |trader: &Trader, direction: &str, price: &str, amount: &str| {
        json!({"chainId": "1", "symbol": "LINK/USDC", "type": "limit", "direction": direction, "price": price,
               "amount": amount, "privateKey": trader.key})
    };
    let (status, resting) = server
        .post_json("/order/addOrder", order(&bob, "sell", "14.5", "10"))
        .await;
    assert_eq!(status, 200, "{resting}");
    let mut seen_in_stream = false;
    for _ in 0..10 {
        let message = stream.next().await;
        if message.to_string().contains("14.5") {
            seen_in_stream = true;
            break;
        }
    }
    assert!(seen_in_stream, "the new pair's book streams its order");
    let (status, taken) = server
        .post_json("/order/addOrder", order(&alice, "buy", "14.5", "4"))
        .await;
    assert_eq!(
        (status, taken["trades"].as_array().map(Vec::len)),
        (200, Some(1)),
        "{taken}"
    );
    let balance = |balances: &Value, symbol: &str| {
        balances["balances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|balance| balance["symbol"] == symbol)
            .map(|balance| balance["available"].clone())
    };
    let (_, balances) = server
        .get(
            "/account/assetBalances",
            &[("chainId", "1"), ("account", &alice.address)],
        )
        .await;
    // 4 LINK less the taker's 0.2 %; 58 USDC paid.
    assert_eq!(balance(&balances, "LINK"), Some(json!("3.992")), "{balances}");
    assert_eq!(balance(&balances, "USDC"), Some(json!("942")), "{balances}");

    // Fees: a cut applies at once; a raise is announced after the chain's notice.
    let (status, cut) = admin_call(
        &admin_url,
        "/admin/setFees",
        Some(TOKEN),
        Some(json!({"chainId": "1", "symbol": "LINK/USDC", "makerFee": "0.0005", "takerFee": "0.001"})),
    )
    .await;
    assert_eq!(
        (status, &cut["takerFee"], &cut["feeRaise"]),
        (200, &json!("0.001"), &Value::Null),
        "{cut}"
    );
    let asked_at_ms = dexd_store::now_ms();
    let (status, raised) = admin_call(
        &admin_url,
        "/admin/setFees",
        Some(TOKEN),
        Some(json!({"chainId": "1", "symbol": "ETH/USDC", "makerFee": "0.001", "takerFee": "0.003"})),
    )
    .await;
    assert_eq!(
        (status, &raised["takerFee"]),
        (200, &json!("0.002")),
        "a raise is not in force at once: {raised}"
    );
    let effective_at_ms = raised["feeRaise"]["effectiveAt"].as_u64().unwrap();
    assert!(effective_at_ms >= asked_at_ms + 86_400_000, "{raised}");
    assert_eq!(listed_pair(&server, "LINK/USDC").await.unwrap()["takerFee"], "0.001");
    // A later listing keeps the announced raise as it is.
    let (status, _) = admin_call(
        &admin_url,
        "/admin/listAsset",
        Some(TOKEN),
        Some(json!({"chainId": "1", "symbol": "UNI", "decimals": 18, "token": "0x1f9840a85d5aF5bf1D1762F925BDADdC4201F984"})),
    )
    .await;
    assert_eq!(status, 200);
    let eth = listed_pair(&server, "ETH/USDC").await.unwrap();
    assert_eq!(eth["feeRaise"]["effectiveAt"].as_u64(), Some(effective_at_ms), "{eth}");

    // A restart with the same configuration file keeps the listings and the cut.
    drop(stream);
    drop(binary);
    let (binary, admin_url) = BinaryServer::start_with_admin(&data, TOKEN);
    let server = TestServer::at(&binary.base_url);
    let kept = listed_pair(&server, "LINK/USDC")
        .await
        .expect("the listed pair survives a restart");
    assert_eq!(kept["takerFee"], "0.001", "{kept}");
    let eth = listed_pair(&server, "ETH/USDC").await.unwrap();
    assert_eq!(eth["feeRaise"]["effectiveAt"].as_u64(), Some(effective_at_ms), "{eth}");
    let open = server.account_list("/order/openOrders", &bob, "orders").await;
    assert_eq!(open.len(), 1, "{open:?}");
    let (status, _) = server
        .post_json("/order/addOrder", order(&alice, "buy", "14.5", "1"))
        .await;
    assert_eq!(status, 200);
    let (status, pairs) = admin_call(&admin_url, "/admin/pairs?chainId=1", Some(TOKEN), None).await;
    assert!(status == 200 && pairs.to_string().contains("LINK/USDC"), "{pairs}");

    // The auditor replays the listings with the rest.
    let audit_directory = tempfile::tempdir().unwrap();
    let (held, output, errors) = crate::audit::journal::audit_once(&server.base_url, audit_directory.path()).await;
    assert!(held && !output.contains("FAIL"), "{output}\n{errors}");
}

#[tokio::test]
async fn a_fee_changed_at_run_time_stands_until_the_configuration_file_is_edited() {
    let folder = tempfile::tempdir().unwrap();
    let data = folder.path().join("data");
    let file = folder.path().join("dexd.toml");
    std::fs::write(&file, dexd_venue::config::DEFAULT_CONFIG_TOML).unwrap();
    let (binary, admin_url) = BinaryServer::start_with_admin_and_config(&data, Some(&file), TOKEN);
    let server = TestServer::at(&binary.base_url);
    let cut = json!({"chainId": "1", "symbol": "ETH/USDC", "makerFee": "0.0002", "takerFee": "0.0004"});
    let (status, answer) = admin_call(&admin_url, "/admin/setFees", Some(TOKEN), Some(cut)).await;
    assert_eq!(status, 200, "{answer}");

    // The same file: the cut stands.
    drop(binary);
    let (binary, _) = BinaryServer::start_with_admin_and_config(&data, Some(&file), TOKEN);
    let server_again = TestServer::at(&binary.base_url);
    let eth = listed_pair(&server_again, "ETH/USDC").await.unwrap();
    assert_eq!(
        (&eth["makerFee"], &eth["takerFee"], &eth["feeRaise"]),
        (&json!("0.0002"), &json!("0.0004"), &Value::Null),
        "the cut stands, with no raise back to the file's fees: {eth}"
    );
    drop(server);

    // An edited file (WBTC/USDC's fees cut in it): its values apply, to every pair it lists; the
    // ETH/USDC fees it gives are above the run-time cut, so they come back as an announced raise.
    let edited = dexd_venue::config::DEFAULT_CONFIG_TOML.replacen(
        "base = \"WBTC\"\nquote = \"USDC\"\ntick_size = \"0.01\"\nstep_size = \"0.0001\"\nmin_amount = \"0.0001\"\nmin_notional = \"1\"\nmaker_fee = \"0.001\"",
        "base = \"WBTC\"\nquote = \"USDC\"\ntick_size = \"0.01\"\nstep_size = \"0.0001\"\nmin_amount = \"0.0001\"\nmin_notional = \"1\"\nmaker_fee = \"0.0005\"",
        1,
    );
    assert_ne!(
        edited,
        dexd_venue::config::DEFAULT_CONFIG_TOML,
        "the edit applies to the file"
    );
    std::fs::write(&file, edited).unwrap();
    drop(binary);
    let (binary, _) = BinaryServer::start_with_admin_and_config(&data, Some(&file), TOKEN);
    let server = TestServer::at(&binary.base_url);
    let wbtc = listed_pair(&server, "WBTC/USDC").await.unwrap();
    assert_eq!(wbtc["makerFee"], "0.0005", "{wbtc}");
    let eth = listed_pair(&server, "ETH/USDC").await.unwrap();
    assert_eq!(eth["takerFee"], "0.0004", "a raise waits for its notice: {eth}");
    assert_eq!(eth["feeRaise"]["takerFee"], "0.002", "{eth}");
}

#[tokio::test]
async fn listings_sent_at_once_each_act_once_and_never_overwrite_each_other() {
    let folder = tempfile::tempdir().unwrap();
    let (binary, admin_url) = BinaryServer::start_with_admin(&folder.path().join("data"), TOKEN);
    let server = TestServer::at(&binary.base_url);
    // Twenty copies of one listing: one is listed, the rest refused.
    let same = json!({"chainId": "1", "symbol": "AAVE", "decimals": 18, "token": "0x7Fc66500c84A76Ad7e9c93437bFc5Ac33E2DDaE9"});
    let answers = futures_util::future::join_all(
        (0..20).map(|_| admin_call(&admin_url, "/admin/listAsset", Some(TOKEN), Some(same.clone()))),
    )
    .await;
    let statuses: Vec<u16> = answers.iter().map(|(status, _)| *status).collect();
    assert_eq!(
        statuses.iter().filter(|status| **status == 200).count(),
        1,
        "{answers:?}"
    );
    assert!(
        statuses.iter().all(|status| *status == 200 || *status == 409),
        "{answers:?}"
    );
    // Ten different ones at once: every one listed, none lost to another's change.
    let answers = futures_util::future::join_all((0..10u8).map(|index| {
        let token = format!("0x{}", format!("{:02x}", 0x30 + index).repeat(20));
        let body = json!({"chainId": "1", "symbol": format!("T{index}"), "decimals": 6, "token": token});
        admin_call(&admin_url, "/admin/listAsset", Some(TOKEN), Some(body))
    }))
    .await;
    assert!(answers.iter().all(|(status, _)| *status == 200), "{answers:?}");
    let (_, assets) = server.get("/account/assetsInfo", &[("chainId", "1")]).await;
    for index in 0..10 {
        assert!(
            assets.to_string().contains(&format!("\"T{index}\"")),
            "T{index} is listed: {assets}"
        );
    }
    // Another asset of a listed token, or of the chain's native asset again, is refused.
    let twin =
        json!({"chainId": "1", "symbol": "TWIN", "decimals": 6, "token": "0x3030303030303030303030303030303030303030"});
    assert_error(
        &admin_call(&admin_url, "/admin/listAsset", Some(TOKEN), Some(twin)).await,
        409,
        "CONFIGURATION_REFUSED",
        None,
    );
    let native = json!({"chainId": "1", "symbol": "NATIVE", "decimals": 18});
    assert_error(
        &admin_call(&admin_url, "/admin/listAsset", Some(TOKEN), Some(native)).await,
        409,
        "CONFIGURATION_REFUSED",
        None,
    );
    for symbol in ["", "A-B", "ABCDEFGHIJKLMNOPQ"] {
        let crooked = json!({"chainId": "1", "symbol": symbol, "decimals": 6});
        assert_error(
            &admin_call(&admin_url, "/admin/listAsset", Some(TOKEN), Some(crooked)).await,
            400,
            "INVALID_PARAMETER",
            Some("symbol"),
        );
    }
    let malformed = json!({"chainId": "1", "symbol": "BAD", "decimals": "eighteen"});
    assert_error(
        &admin_call(&admin_url, "/admin/listAsset", Some(TOKEN), Some(malformed)).await,
        400,
        "MALFORMED_BODY",
        None,
    );
}
