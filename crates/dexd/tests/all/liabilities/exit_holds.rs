//! The review's reproductions against the exit, each run against the real dexd binary on a real
//! node (anvil) and the vault, and each now failing to harm:
//!
//! - a trader who sold a token after a root and was paid the proceeds cannot exit the token
//!   again: the payment waits for a final root covering it, and the vault ends owing nobody more
//!   than it holds;
//! - a deposit made after the last root (the venue gone) leaves by `dexd exit` with no proof;
//! - a root planted with the operator's key is reported, stops withdrawals, is never served,
//!   and once vetoed the venue's roots and payments go on;
//! - clients looping on proofs and leaves never hold up a withdrawal.

use crate::common;

use std::time::Duration;

use alloy::primitives::{FixedBytes, TxKind, U256};
use alloy::sol_types::SolCall;
use common::chain::{TEST_ROOT_TERMS, USDC_UNIT, WBTC_UNIT};
use common::vault_calls::{token_balance, view};
use common::vault_venue::{address_of, key_of, VaultVenue};
use dexd_custody::deploy;
use dexd_custody::vault::DexdVaultV2;
use serde_json::{json, Value};

async fn send(venue: &VaultVenue, from: &alloy::signers::local::PrivateKeySigner, input: Vec<u8>) {
    deploy::send_and_wait(
        &venue.chain.node,
        from,
        TxKind::Call(venue.chain.vault),
        input,
        U256::ZERO,
    )
    .await
    .unwrap();
}

/// A withdrawal's journal position, from `X-Dexd-Sequence`, and its answer.
async fn withdraw(
    venue: &VaultVenue,
    account: &alloy::signers::local::PrivateKeySigner,
    symbol: &str,
    quantity: &str,
) -> (u64, Value) {
    let response = reqwest::Client::new()
        .post(format!("{}/portfolio/withdraw", venue.client().base_url))
        .json(
            &json!({"chainId": venue.chain_id(), "from": address_of(account), "symbol": symbol,
            "quantity": quantity, "privateKey": key_of(account)}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let sequence = response.headers()["x-dexd-sequence"].to_str().unwrap().parse().unwrap();
    (sequence, response.json().await.unwrap())
}

async fn custody(venue: &VaultVenue) -> Value {
    let (status, body) = venue.get("/account/custody", &[]).await;
    assert_eq!(status, 200, "{body}");
    body
}

#[tokio::test]
async fn a_trader_paid_for_a_token_sold_after_a_root_cannot_exit_the_token_again() {
    let mut venue = VaultVenue::start().await;
    let [alice, bob, carol] = [0, 1, 2].map(|index| venue.chain.users[index].clone());
    venue.fund_a_wbtc_seller_and_a_usdc_buyer(&alice, &bob).await;
    // A root with Alice's 1 WBTC in it, final.
    venue
        .eventually("a final root of both deposits", || async {
            custody(&venue).await["roots"]["newestFinalRoot"].is_u64()
        })
        .await;
    let (_, old_proof) = venue
        .get("/account/liabilityProof", &[("account", &address_of(&alice))])
        .await;
    assert!(old_proof["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .any(|leaf| leaf["symbol"] == "WBTC" && leaf["balance"] == "100000000"));
    // After it, Alice sells her WBTC to Bob and withdraws the proceeds at once.
    let order = |account: &alloy::signers::local::PrivateKeySigner, direction: &str| {
        json!({"symbol": "WBTC/USDC", "type": "limit", "direction": direction, "price": "60000", "amount": "1",
            "privateKey": key_of(account)})
    };
    let (status, placed) = venue.post("/order/addOrder", order(&alice, "sell")).await;
    assert_eq!(status, 200, "{placed}");
    let (status, taken) = venue.post("/order/addOrder", order(&bob, "buy")).await;
    assert_eq!((status, taken["trades"].as_array().unwrap().len()), (200, 1), "{taken}");
    let proceeds = venue.balance(&alice, "USDC").await["available"]
        .as_str()
        .unwrap()
        .to_string();
    let (debited_at, answer) = withdraw(&venue, &alice, "USDC", &proceeds).await;
    assert_eq!(answer["withdrawal"]["status"], "pending");
    // No root covers the debit yet: nothing is paid before one is committed and final.
    let listed = &venue.transfers(&alice, "withdraw").await[0];
    assert_eq!(listed["waitingFor"], "root", "{listed}");
    assert!(custody(&venue).await["roots"]["payableThrough"].as_u64().unwrap() < debited_at);
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    assert!(
        custody(&venue).await["roots"]["payableThrough"].as_u64().unwrap() >= debited_at,
        "paid only through a final root at or after the debit"
    );

    // The operator vanishes right after paying; Carol deposits after the last root.
    venue.kill();
    venue
        .deposit_from_wallet(&carol, Some(venue.chain.usdc), 25 * USDC_UNIT)
        .await;
    venue.chain.advance_time(TEST_ROOT_TERMS.max_root_age_s + 1).await;
    send(&venue, &carol, DexdVaultV2::freezeCall {}.abi_encode()).await;
    let exit_epoch: u64 = view(&venue.chain, DexdVaultV2::exitEpochCall {}).await.saturating_to();

    // Alice's proof of the old root no longer passes; the exit root has her WBTC sold and her
    // proceeds debited and paid, so nothing of either is owed to her.
    let old_file = venue.folder.path().join("alice-old.json");
    std::fs::write(&old_file, old_proof.to_string()).unwrap();
    let (paid, output, _) = venue.dexd_exit(&["--proof", old_file.to_str().unwrap()], &alice);
    assert!(!paid, "{output}");
    assert!(output.contains("not in the vault's exit root"), "{output}");
    // The venue back for its files only (a frozen vault gets nothing from it): each account's
    // proof of the exit root, from the venue.
    venue.restart();
    let venue_url = venue.client().base_url.clone();
    let (paid, output, error) = venue.dexd_exit(&["--venue", &venue_url], &alice);
    assert!(!paid, "Alice is owed nothing: {output} {error}");
    let wbtc_before = token_balance(&venue.chain, venue.chain.wbtc, bob.address()).await;
    let (paid, output, error) = venue.dexd_exit(&["--venue", &venue_url], &bob);
    assert!(paid, "{output} {error}");
    let bob_wbtc = token_balance(&venue.chain, venue.chain.wbtc, bob.address()).await - wbtc_before;
    assert_eq!(
        bob_wbtc,
        U256::from(WBTC_UNIT - WBTC_UNIT * 2 / 1_000),
        "the 1 WBTC Bob bought, less his 0.2 % fee"
    );
    // Carol's deposit came after every root: it leaves with no proof at all.
    let usdc_before = token_balance(&venue.chain, venue.chain.usdc, carol.address()).await;
    let (paid, output, error) = venue.dexd_exit(&[], &carol);
    assert!(paid, "{output} {error}");
    assert_eq!(
        token_balance(&venue.chain, venue.chain.usdc, carol.address()).await - usdc_before,
        U256::from(25 * USDC_UNIT)
    );
    // What is left in the vault is exactly what the exit root still owes the fee account (60
    // USDC of Alice's maker fee, 0.002 WBTC of Bob's taker fee): nobody was paid twice. Its exit
    // empties the vault.
    assert_eq!(
        venue.chain.vault_balance(Some(venue.chain.usdc)).await,
        U256::from(60 * USDC_UNIT)
    );
    assert_eq!(
        venue.chain.vault_balance(Some(venue.chain.wbtc)).await,
        U256::from(WBTC_UNIT * 2 / 1_000)
    );
    let fees = "0x000000000000000000000000000000000000fee1";
    let (paid, output, error) = venue.dexd_exit(&["--venue", &venue_url, "--account", fees], &carol);
    assert!(paid, "{output} {error}");
    assert_eq!(venue.chain.vault_balance(Some(venue.chain.usdc)).await, U256::ZERO);
    assert_eq!(venue.chain.vault_balance(Some(venue.chain.wbtc)).await, U256::ZERO);
    let _ = exit_epoch;
}

#[tokio::test]
async fn a_root_planted_with_the_operator_key_stops_withdrawals_until_vetoed_and_is_never_served() {
    // A challenge period long enough for the test to veto in it; time is moved after the veto.
    const CHALLENGE_PERIOD_S: u64 = 30;
    let (venue, alice) = VaultVenue::start_with_alice_funded(CHALLENGE_PERIOD_S).await;
    venue
        .eventually("a root of the venue's", || async {
            custody(&venue).await["roots"]["newestVenueRoot"].is_u64()
        })
        .await;
    // The stolen key's root: the tokens the vault asks for, Mallory owed everything, at the last
    // journal position there is, so that the venue's next roots are refused behind it.
    let planted_epoch: u64 = view(&venue.chain, DexdVaultV2::rootCountCall {}).await.saturating_to();
    let deposit_count = view(&venue.chain, DexdVaultV2::depositCountCall {}).await;
    let tokens = view(&venue.chain, DexdVaultV2::depositedTokensCall {}).await;
    let mut tokens = tokens.clone();
    tokens.sort();
    let plant = DexdVaultV2::commitRootWithDataCall {
        root: FixedBytes([0x66; 32]),
        journalSequence: u64::MAX,
        depositCount_: deposit_count,
        totals: vec![U256::ZERO; tokens.len()],
        tokens,
        data: crate::common::vault_calls::TEST_ROOT_DATA.to_vec().into(),
    };
    send(&venue, &venue.chain.operator, plant.abi_encode()).await;
    venue
        .eventually("the planted root reported", || async {
            custody(&venue).await["roots"]["foreignRoot"]["epoch"] == planted_epoch
        })
        .await;
    let reported = custody(&venue).await;
    assert!(
        reported["withdrawalsStopped"]
            .as_str()
            .unwrap()
            .contains("did not make"),
        "{reported}"
    );
    let metrics = venue.client().get_text("/metrics").await;
    let gauge = format!("dexd_liability_foreign_root{{chain_id=\"{}\"}} 1", venue.chain_id());
    assert!(metrics.lines().any(|line| line == gauge), "{metrics}");
    let epoch = planted_epoch.to_string();
    let (status, body) = venue
        .get(
            "/account/liabilityProof",
            &[("account", &address_of(&alice)), ("epoch", &epoch)],
        )
        .await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("ROOT_NOT_FOUND")),
        "{body}"
    );
    // A withdrawal now waits: no root of the venue's can be committed behind the planted one.
    let (debited_at, _) = withdraw(&venue, &alice, "USDC", "10").await;
    for _ in 0..10 {
        venue.chain.mine(1).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    let waiting = &venue.transfers(&alice, "withdraw").await[0];
    assert_eq!(
        (waiting["status"].as_str(), waiting["waitingFor"].as_str()),
        (Some("pending"), Some("root")),
        "{waiting}"
    );

    // The guardian vetoes it: the venue's roots go in again, and once one is final the
    // withdrawal is paid.
    send(
        &venue,
        &venue.chain.guardian,
        DexdVaultV2::vetoCall {
            epoch: U256::from(planted_epoch),
        }
        .abi_encode(),
    )
    .await;
    venue
        .eventually("a root of the venue's after the veto", || async {
            custody(&venue).await["roots"]["newestVenueRoot"]
                .as_u64()
                .is_some_and(|epoch| epoch > planted_epoch)
        })
        .await;
    venue.chain.advance_time(CHALLENGE_PERIOD_S + 1).await;
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    let resolved = custody(&venue).await;
    assert!(resolved["roots"]["foreignRoot"].is_null(), "{resolved}");
    assert!(resolved["roots"]["payableThrough"].as_u64().unwrap() >= debited_at);
    let (_, roots) = venue.get("/account/liabilityRoots", &[]).await;
    let planted = roots["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|root| root["epoch"] == planted_epoch)
        .unwrap()
        .clone();
    assert_eq!(
        (planted["origin"].as_str(), planted["standing"].as_str()),
        (Some("foreign"), Some("vetoed")),
        "{planted}"
    );
    venue.assert_conserved().await;
}

#[tokio::test]
async fn clients_looping_on_proofs_and_leaves_never_hold_up_a_withdrawal() {
    let venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    venue
        .fund(&alice, Some(venue.chain.usdc), 100 * USDC_UNIT, "USDC", "100")
        .await;
    venue
        .eventually("a root with Alice in it", || async {
            let (status, proof) = venue
                .get("/account/liabilityProof", &[("account", &address_of(&alice))])
                .await;
            status == 200 && !proof["leaves"].as_array().unwrap().is_empty()
        })
        .await;
    // An epoch the venue does not keep is refused at once, never rebuilt.
    let started = std::time::Instant::now();
    let (status, body) = venue.get("/account/liabilityLeaves", &[("epoch", "999999")]).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (404, Some("ROOT_NOT_FOUND")),
        "{body}"
    );
    assert!(started.elapsed() < Duration::from_secs(1));
    // Fifty clients loop on the newest root's leaves and proofs and on the oldest epoch...
    let base_url = venue.client().base_url.clone();
    let chain_id = venue.chain_id();
    let account = address_of(&alice);
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let loops: Vec<_> = (0..50)
        .map(|index| {
            let (base_url, chain_id, account, stop) =
                (base_url.clone(), chain_id.clone(), account.clone(), stop.clone());
            tokio::spawn(async move {
                let client = reqwest::Client::new();
                let mut answered = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    let url = match index % 3 {
                        0 => format!("{base_url}/account/liabilityLeaves?chainId={chain_id}&epoch=0"),
                        1 => format!("{base_url}/account/liabilityProof?chainId={chain_id}&account={account}"),
                        _ => format!("{base_url}/account/liabilityProof?chainId={chain_id}&account={account}&epoch=0"),
                    };
                    if client
                        .get(url)
                        .send()
                        .await
                        .is_ok_and(|response| response.status() != 500)
                    {
                        answered += 1;
                    }
                }
                answered
            })
        })
        .collect();
    // ... while Alice withdraws: paid as it would be without them.
    let (status, answer) = venue
        .post(
            "/portfolio/withdraw",
            json!({"from": account, "symbol": "USDC", "quantity": "40", "privateKey": key_of(&alice)}),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    let asked = std::time::Instant::now();
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    let took = asked.elapsed();
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    let mut answered = 0;
    for task in loops {
        answered += task.await.unwrap();
    }
    assert!(answered > 100, "the loops were answered ({answered})");
    assert!(took < Duration::from_secs(20), "the withdrawal took {took:?}");
}

#[tokio::test]
async fn a_root_committed_before_a_crash_is_recorded_from_its_event_found_by_its_time() {
    // No root is due until the test wants one; roots need two confirmations.
    let mut venue = VaultVenue::start_with_roots(86_400_000).await;
    let alice = venue.chain.users[0].clone();
    venue
        .fund(&alice, Some(venue.chain.usdc), 10 * USDC_UNIT, "USDC", "10")
        .await;
    venue.kill();
    venue.edit_config("root_interval_ms = 86400000", "root_interval_ms = 1000");
    venue.restart();
    // A root goes into the vault (nothing mines after it); the venue dies before it has its
    // confirmations.
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let count: u64 = view(&venue.chain, DexdVaultV2::rootCountCall {}).await.saturating_to();
        let recorded = custody(&venue).await["roots"]["newestVenueRoot"].clone();
        if count > 0 && recorded.is_null() {
            break;
        }
        assert!(
            recorded.is_null() && std::time::Instant::now() < deadline,
            "a root committed and not yet recorded"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    venue.kill();
    // Blocks on top, more than one log query spans: the root's event is found by the block of
    // its time, however far back (a look back from the head once stopped at 100,000 blocks;
    // anvil mines a few thousand blocks a second, so the test stays at a few thousand).
    // In requests of 100 blocks: a thousand at once can outlast the node client's timeout on a
    // machine busy with the other tests.
    for _ in 0..30 {
        venue
            .chain
            .node
            .raw_request("anvil_mine", json!([format!("0x{:x}", 100)]))
            .await
            .unwrap();
    }
    venue.restart();
    venue
        .eventually("the root recorded after the restart", || async {
            custody(&venue).await["roots"]["newestVenueRoot"].is_u64()
        })
        .await;
    let (_, roots) = venue.get("/account/liabilityRoots", &[]).await;
    let first = roots["roots"].as_array().unwrap().last().unwrap().clone();
    assert_eq!(
        (first["epoch"].as_u64(), first["origin"].as_str()),
        (Some(0), Some("venue")),
        "{first}"
    );
}
