//! Batches of orders signed once (contract version 4), against the real server: a client's one
//! `OrderBatch` signature (made with alloy's typed-data hasher and k256, sharing no code with
//! dexd), an agent's, and the venue's with a `privateKey`. Each placed order is checked alone
//! from what `orderDetail` returns; equal orders in one batch each get their own id; a batch sent
//! again, one altered order, more than 50 orders or a credential in an item is refused whole and
//! changes nothing.

use crate::common;

use alloy_dyn_abi::TypedData;
use alloy_primitives::{keccak256, B256, U256};
use common::signer::{eip712, now_ms, Signer};
use common::{assert_error, TestServer, Trader};
use k256::ecdsa::{RecoveryId, Signature, VerifyingKey};
use serde_json::{json, Value};

fn item(direction: &str, price: &str, amount: &str, client_order_id: &str) -> Value {
    json!({"symbol": "ETH/USDC", "type": "limit", "direction": direction, "price": price, "amount": amount,
           "clientOrderId": client_order_id})
}

/// An item as the `Order` its batch signs: the batch's account, nonce and expiry, and every
/// field in its canonical form.
fn order_message(item: &Value, account: &str, nonce: &str, expiry: u64) -> Value {
    json!({
        "account": account, "symbol": item["symbol"], "orderType": item["type"], "direction": item["direction"],
        "timeInForce": item.get("timeInForce").cloned().unwrap_or(json!("GTC")), "postOnly": false, "price": item["price"], "amount": item["amount"],
        "clientOrderId": item["clientOrderId"], "nonce": nonce, "expiry": expiry.to_string(),
        "triggerPrice": "", "triggerCondition": "", "ocoGroup": "", "expiresAt": "0",
    })
}

/// The body of a batch `signer` signs once for `account`.
fn signed_batch(eip712: &Value, signer: &Signer, account: &str, items: &[Value], nonce: &str) -> Value {
    let expiry = now_ms() + 60_000;
    let orders: Vec<Value> = items
        .iter()
        .map(|item| order_message(item, account, nonce, expiry))
        .collect();
    let message = json!({"account": account, "orders": orders, "nonce": nonce, "expiry": expiry.to_string()});
    let (signature, _) = signer.sign(eip712, "OrderBatch", message);
    json!({"chainId": "1", "account": account, "nonce": nonce, "expiry": expiry, "signature": signature,
           "orders": items})
}

fn recover(digest: &[u8; 32], signature_hex: &str) -> String {
    let bytes = hex::decode(signature_hex.trim_start_matches("0x")).unwrap();
    let signature = Signature::from_slice(&bytes[..64]).unwrap();
    let recovery = RecoveryId::from_byte(bytes[64] - 27).unwrap();
    let key = VerifyingKey::recover_from_prehash(digest, &signature, recovery).unwrap();
    let point = key.to_encoded_point(false);
    alloy_primitives::Address::from_slice(&keccak256(&point.as_bytes()[1..])[12..]).to_checksum(None)
}

/// Checks one placed order from its `orderDetail` alone, as a third party would: the order's own
/// typed data hashes to its id and its struct hash is the batch's at its index; the batch's
/// digest, rebuilt from the hashes, recovers to the signer. Returns the batch's details.
async fn check_alone(server: &TestServer, order_id: &str, signer: &str) -> Value {
    let (status, detail) = server
        .get("/order/orderDetail", &[("chainId", "1"), ("orderId", order_id)])
        .await;
    assert_eq!(status, 200, "{detail}");
    let order: TypedData = serde_json::from_value(detail["typedData"].clone()).unwrap();
    assert_eq!(format!("{}", order.eip712_signing_hash().unwrap()), order_id);
    let batch = &detail["batch"];
    let hashes: Vec<B256> = batch["orderHashes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|hash| hash.as_str().unwrap().parse().unwrap())
        .collect();
    let index = batch["index"].as_u64().unwrap() as usize;
    assert_eq!(hashes[index], order.hash_struct().unwrap(), "{detail}");
    let type_hash = keccak256(batch["encodedType"].as_str().unwrap());
    let account = batch["account"]
        .as_str()
        .unwrap()
        .parse::<alloy_primitives::Address>()
        .unwrap();
    let nonce = U256::from_str_radix(batch["nonce"].as_str().unwrap(), 10).unwrap();
    let expiry = U256::from(batch["expiry"].as_u64().unwrap());
    let mut encoded = type_hash.to_vec();
    encoded.extend_from_slice(account.into_word().as_slice());
    encoded.extend_from_slice(keccak256(hashes.concat()).as_slice());
    encoded.extend_from_slice(&nonce.to_be_bytes::<32>());
    encoded.extend_from_slice(&expiry.to_be_bytes::<32>());
    let mut preimage = vec![0x19, 0x01];
    preimage.extend_from_slice(order.domain().separator().as_slice());
    preimage.extend_from_slice(keccak256(&encoded).as_slice());
    let digest = keccak256(&preimage);
    assert_eq!(format!("{digest}"), batch["digest"], "{detail}");
    assert_eq!(recover(&digest.0, batch["signature"].as_str().unwrap()), signer);
    assert_eq!(detail["order"]["signature"], batch["signature"]);
    batch.clone()
}

async fn open_orders(server: &TestServer, trader: &Trader) -> Vec<Value> {
    server.account_list("/order/openOrders", trader, "orders").await
}

#[tokio::test]
async fn a_batch_signed_once_places_its_orders_and_each_is_checkable_alone() {
    let server = TestServer::start().await;
    let alice = Signer::new(0xa1);
    server.deposit(&alice.trader, "USDC", "3000").await;
    let eip712 = eip712(&server).await;
    assert_eq!(
        eip712["types"]["OrderBatch"][1],
        json!({"name": "orders", "type": "Order[]"})
    );
    let account = alice.trader.address.clone();
    // The first order is more than Alice holds: refused alone, and the next claims the nonce.
    let items = [
        item("buy", "1000", "100", "too-big"),
        item("buy", "1000", "1", "q-1"),
        item("buy", "990", "0.5", "q-2"),
    ];
    let body = signed_batch(&eip712, &alice, &account, &items, "7001");
    let (status, answer) = server.post_json("/order/batchOrders", body.clone()).await;
    assert_eq!(status, 200, "{answer}");
    let results = answer["results"].as_array().unwrap();
    assert_eq!(results[0]["error"]["code"], "INSUFFICIENT_BALANCE", "{answer}");
    for (position, result) in results.iter().enumerate().skip(1) {
        let order_id = result["order"]["orderId"].as_str().unwrap();
        let batch = check_alone(&server, order_id, &account).await;
        assert_eq!(batch["index"], position, "{batch}");
        assert_eq!(batch["orderHashes"].as_array().unwrap().len(), 3);
    }
    let before = open_orders(&server, &alice.trader).await;
    assert_eq!(before.len(), 2);

    // The same batch again: its nonce is used, so it is refused whole.
    let again = server.post_json("/order/batchOrders", body.clone()).await;
    assert_error(&again, 409, "NONCE_REUSED", Some("nonce"));
    assert_eq!(open_orders(&server, &alice.trader).await, before);

    // One order altered after signing: the signature is of another batch, so it recovers to
    // another address, which is no agent of Alice's (as for one altered order).
    let mut altered = signed_batch(&eip712, &alice, &account, &items[1..], "7002");
    altered["orders"][1]["price"] = json!("980");
    let refused = server.post_json("/order/batchOrders", altered).await;
    assert_error(&refused, 403, "AGENT_NOT_ALLOWED", Some("account"));
    assert_eq!(open_orders(&server, &alice.trader).await, before);

    // More than 50 orders, an item with a credential of its own, two items that are one order.
    let many: Vec<Value> = (0..51).map(|n| item("buy", "100", "0.01", &format!("m-{n}"))).collect();
    let too_many = server
        .post_json(
            "/order/batchOrders",
            signed_batch(&eip712, &alice, &account, &many, "7003"),
        )
        .await;
    assert_error(&too_many, 400, "INVALID_PARAMETER", Some("orders"));
    let mut with_credential = signed_batch(&eip712, &alice, &account, &items[1..], "7004");
    with_credential["orders"][0]["nonce"] = json!("1");
    let refused = server.post_json("/order/batchOrders", with_credential).await;
    assert_error(&refused, 400, "INVALID_PARAMETER", Some("orders[0].nonce"));
    assert_eq!(open_orders(&server, &alice.trader).await, before);

    // Three equal child orders (no client order id) in one batch: each placed, each with its
    // own id: the first its digest, a repeat keccak256(digest ‖ its index).
    let child = json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "900", "amount": "0.1"});
    let children = [child.clone(), child.clone(), child.clone()];
    let mut body = signed_batch(
        &eip712,
        &alice,
        &account,
        &children.clone().map(|mut item| {
            item["clientOrderId"] = json!("");
            item
        }),
        "7005",
    );
    body["orders"] = json!(children);
    let (status, answer) = server.post_json("/order/batchOrders", body.clone()).await;
    assert_eq!(status, 200, "{answer}");
    let ids: Vec<String> = (0..3)
        .map(|index| {
            answer["results"][index]["order"]["orderId"]
                .as_str()
                .unwrap()
                .to_string()
        })
        .collect();
    let (_, detail) = server
        .get("/order/orderDetail", &[("chainId", "1"), ("orderId", &ids[0])])
        .await;
    let order: TypedData = serde_json::from_value(detail["typedData"].clone()).unwrap();
    let digest = order.eip712_signing_hash().unwrap();
    assert_eq!(ids[0], format!("{digest}"));
    for index in 1..3u8 {
        let mut preimage = digest.to_vec();
        preimage.push(index);
        assert_eq!(ids[usize::from(index)], format!("{}", keccak256(&preimage)), "{answer}");
    }
    assert_eq!(open_orders(&server, &alice.trader).await.len(), before.len() + 3);
    // Sent again: refused whole, nothing placed twice.
    let again = server.post_json("/order/batchOrders", body).await;
    assert_error(&again, 409, "NONCE_REUSED", Some("nonce"));
    assert_eq!(open_orders(&server, &alice.trader).await.len(), before.len() + 3);

    // An order whose price is off the tick is refused alone; the signature, which covers it as
    // the client signed it, still places the other.
    let off_tick = [item("buy", "990.001", "0.5", "q-3"), item("buy", "980", "0.5", "q-4")];
    let (status, answer) = server
        .post_json(
            "/order/batchOrders",
            signed_batch(&eip712, &alice, &account, &off_tick, "7006"),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["results"][0]["error"]["field"], "price", "{answer}");
    let placed = answer["results"][1]["order"]["orderId"].as_str().unwrap();
    let batch = check_alone(&server, placed, &account).await;
    assert_eq!(
        (batch["index"].as_u64(), batch["orderHashes"].as_array().unwrap().len()),
        (Some(1), 2)
    );
}

#[tokio::test]
async fn a_key_signs_its_batch_once_and_an_agent_may_sign_one_for_the_account() {
    let server = TestServer::start().await;
    let alice = Trader::new(0xa1);
    let bot = Signer::new(0xb7);
    server.deposit(&alice, "USDC", "3000").await;
    // With a key, one signature of the venue's covers every order it placed; a refused item is
    // not among them.
    let items = [
        item("buy", "1000", "0.5", "k-1"),
        item("buy", "999.999", "0.5", "k-off-tick"),
        item("buy", "990", "0.5", "k-2"),
    ];
    let results = server.batch_orders(&alice, items.to_vec()).await;
    assert_eq!(results[1]["error"]["field"], "price", "{results:?}");
    let first = check_alone(
        &server,
        results[0]["order"]["orderId"].as_str().unwrap(),
        &alice.address,
    )
    .await;
    let second = check_alone(
        &server,
        results[2]["order"]["orderId"].as_str().unwrap(),
        &alice.address,
    )
    .await;
    assert_eq!((first["index"].as_u64(), second["index"].as_u64()), (Some(0), Some(1)));
    assert_eq!(first["signature"], second["signature"]);
    assert_eq!(first["orderHashes"].as_array().unwrap().len(), 2);

    // An approved agent signs a batch once for Alice; the signature recovers to the agent.
    let (status, body) = server
        .post_json(
            "/account/approveAgent",
            json!({"chainId": "1", "privateKey": alice.key, "agent": bot.trader.address, "name": "bot"}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    let eip712 = eip712(&server).await;
    let body = signed_batch(&eip712, &bot, &alice.address, &[item("buy", "980", "0.5", "a-1")], "42");
    let (status, answer) = server.post_json("/order/batchOrders", body).await;
    assert_eq!(status, 200, "{answer}");
    let order = &answer["results"][0]["order"];
    assert_eq!(order["account"], alice.address);
    check_alone(&server, order["orderId"].as_str().unwrap(), &bot.trader.address).await;
    // A key the account never approved signs for nothing.
    let stranger = Signer::new(0xc0);
    let body = signed_batch(
        &eip712,
        &stranger,
        &alice.address,
        &[item("buy", "970", "0.5", "s-1")],
        "43",
    );
    let refused = server.post_json("/order/batchOrders", body).await;
    assert_error(&refused, 403, "AGENT_NOT_ALLOWED", Some("account"));
    assert_eq!(open_orders(&server, &alice).await.len(), 3);
}

/// A client's retry must never fill a batch twice. Reproduced black box before the fix: the same
/// body of two IOC buys POSTed 30 times at once, while other writes kept the writer busy, was
/// answered 200 thirty times and filled 40 asks through the same two order ids (two copies
/// in one batch of writes followed one claim).
#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn a_batch_sent_thirty_times_at_once_to_a_busy_writer_fills_once() {
    let server = std::sync::Arc::new(TestServer::start().await);
    let alice = Signer::new(0xa1);
    let bob = Trader::new(0xb0);
    let busy = Trader::new(0xc3);
    server.deposit(&alice.trader, "USDC", "200000").await;
    server.deposit(&bob, "ETH", "100").await;
    server.deposit(&busy, "USDC", "100000").await;
    for _ in 0..60 {
        server.limit(&bob, "sell", "2000", "1").await;
    }
    let eip712 = eip712(&server).await;
    let account = alice.trader.address.clone();
    let buy = |client_order_id: &str| {
        let mut buy = item("buy", "2000", "1", client_order_id);
        buy["timeInForce"] = json!("IOC");
        buy
    };
    // Other writes keep the writer's queue full of work while the copies arrive.
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let mut background = Vec::new();
    for worker in 0..16 {
        let (server, stop, key) = (server.clone(), stop.clone(), busy.key.clone());
        background.push(tokio::spawn(async move {
            let mut placed = 0;
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                let price = format!("{}", 1000 + worker * 10 + placed % 10);
                let (status, body) = server
                    .post_json(
                        "/order/addOrder",
                        json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit",
                        "direction": "buy", "price": price, "amount": "0.01", "privateKey": key}),
                    )
                    .await;
                assert!(
                    status == 200 || status == 422 || status == 429 || status == 503,
                    "{status} {body}"
                );
                placed += 1;
            }
        }));
    }
    tokio::time::sleep(std::time::Duration::from_millis(200)).await;
    // Several rounds, each a new batch sent 30 times at once: two copies of one round reaching
    // the writer in one batch of writes is what filled twice, and a round does not always get
    // it.
    const ROUNDS: usize = 8;
    for round in 0..ROUNDS {
        let items = [buy(&format!("retry-{round}-a")), buy(&format!("retry-{round}-b"))];
        let body = signed_batch(&eip712, &alice, &account, &items, &format!("4242{round}"));
        let copies: Vec<_> = (0..30)
            .map(|_| {
                let (server, body) = (server.clone(), body.clone());
                tokio::spawn(async move { server.post_json("/order/batchOrders", body).await })
            })
            .collect();
        let mut answers = Vec::new();
        for copy in copies {
            answers.push(copy.await.unwrap());
        }
        let placed: Vec<&Value> = answers
            .iter()
            .filter(|(status, _)| *status == 200)
            .map(|(_, body)| body)
            .collect();
        assert_eq!(placed.len(), 1, "round {round}: one copy places the batch: {answers:?}");
        for (status, answer) in answers.iter().filter(|(status, _)| *status != 200) {
            assert_eq!(
                (*status, answer["error"]["code"].as_str()),
                (409, Some("NONCE_REUSED")),
                "{answer}"
            );
        }
        for result in placed[0]["results"].as_array().unwrap() {
            assert_eq!(result["order"]["status"], "filled", "{result}");
        }
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for worker in background {
        worker.await.unwrap();
    }

    // Two asks a round were taken, no more: Bob's book lost exactly that, Alice holds that
    // less the taker's fee.
    let (status, book) = server
        .get(
            "/order/sellOrderbooks",
            &[("chainId", "1"), ("pair", "ETH/USDC"), ("depth", "1000")],
        )
        .await;
    assert_eq!(status, 200, "{book}");
    let resting: Vec<&str> = book["levels"]
        .as_array()
        .unwrap()
        .iter()
        .map(|level| level["amount"].as_str().unwrap())
        .collect();
    assert_eq!(resting, [(60 - 2 * ROUNDS).to_string()], "{book}");
    let bought = 2 * ROUNDS as u64 * 998;
    assert_eq!(
        server.balance(&alice.trader, "ETH").await["total"],
        format!("{}.{:03}", bought / 1000, bought % 1000)
    );
    let (status, trades) = server
        .get(
            "/order/accountTrades",
            &[("chainId", "1"), ("account", &account), ("limit", "1000")],
        )
        .await;
    assert_eq!(status, 200, "{trades}");
    assert_eq!(trades["trades"].as_array().map(Vec::len), Some(2 * ROUNDS), "{trades}");
}
