//! A TWAP's schedule on a vault chain, whose clock the test moves instead of waiting (the
//! venue's clock follows the chain's block times): a slice each interval, a catch-up after
//! intervals missed (bounded by three planned slices), a restart in the middle that goes on
//! where it was (the slices are journaled commands), and a cancel after which no slice runs.

use alloy::signers::local::PrivateKeySigner;
use serde_json::{json, Value};

use crate::common::vault_venue::{address_of, key_of, VaultVenue};

async fn twap(venue: &VaultVenue, account: &PrivateKeySigner) -> Value {
    let address = address_of(account);
    let (status, body) = venue.get("/order/twaps", &[("account", &address)]).await;
    assert_eq!(status, 200, "{body}");
    body["twaps"][0].clone()
}

async fn wait_for_slices(venue: &VaultVenue, account: &PrivateKeySigner, slices: u64) -> Value {
    venue
        .eventually(&format!("{slices} slices run"), || async {
            twap(venue, account).await["slices"] == slices
        })
        .await;
    twap(venue, account).await
}

fn decimal(value: &Value) -> f64 {
    value.as_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn a_twap_runs_on_the_venues_clock_through_a_catch_up_a_restart_and_a_cancel() {
    let mut venue = VaultVenue::start().await;
    let [alice, bob] = [0, 1].map(|index| venue.chain.users[index].clone());
    venue.fund_a_wbtc_seller_and_a_usdc_buyer(&alice, &bob).await;
    let (status, placed) = venue
        .post(
            "/order/addOrder",
            json!({"symbol": "WBTC/USDC", "type": "limit", "direction": "sell", "price": "60000", "amount": "0.5",
                   "privateKey": key_of(&alice)}),
        )
        .await;
    assert_eq!(status, 200, "{placed}");
    // Bob buys 0.1 WBTC in ten slices of 30 s, at most at 60,000.
    let (status, started) = venue
        .post(
            "/order/addTwap",
            json!({"symbol": "WBTC/USDC", "direction": "buy", "amount": "0.1", "durationMs": 300_000,
                   "intervalMs": 30_000, "limitPrice": "60000", "privateKey": key_of(&bob)}),
        )
        .await;
    assert_eq!(status, 200, "{started}");
    let twap_id = started["twap"]["twapId"].clone();
    let first = wait_for_slices(&venue, &bob, 1).await;
    assert_eq!(first["filled"], "0.01", "{first}");

    venue.chain.advance_time(30).await;
    let second = wait_for_slices(&venue, &bob, 2).await;
    assert_eq!(second["filled"], "0.02", "{second}");

    // Two intervals missed (the venue saw no time pass): the next slice takes more than a
    // planned slice, and never more than three.
    venue.chain.advance_time(90).await;
    let caught_up = wait_for_slices(&venue, &bob, 3).await;
    let third_slice = decimal(&caught_up["filled"]) - 0.02;
    assert!(
        third_slice > 0.010_000_1 && third_slice <= 0.030_000_1,
        "a catch-up slice of {third_slice}: {caught_up}"
    );

    // A restart in the middle: the TWAP comes back from the journal and goes on.
    venue.restart();
    venue.client().wait_until_ready().await;
    let restored = twap(&venue, &bob).await;
    assert_eq!(
        (&restored["status"], &restored["slices"], &restored["filled"]),
        (&json!("running"), &json!(3), &caught_up["filled"])
    );
    venue.chain.advance_time(30).await;
    let after_restart = wait_for_slices(&venue, &bob, 4).await;
    assert!(decimal(&after_restart["filled"]) > decimal(&caught_up["filled"]));

    // Every slice is one of Bob's filled orders, marked with the TWAP.
    let bob_address = address_of(&bob);
    let (status, filled) = venue.get("/order/filledOrders", &[("account", &bob_address)]).await;
    assert_eq!(status, 200, "{filled}");
    let slices: Vec<&Value> = filled["orders"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|order| order["twapId"] == twap_id)
        .collect();
    assert_eq!(slices.len(), 4, "{filled}");

    // Cancelled: time passes and nothing more is bought.
    let (status, cancelled) = venue
        .post(
            "/order/cancelTwap",
            json!({"twapId": twap_id, "privateKey": key_of(&bob)}),
        )
        .await;
    assert_eq!(
        (status, &cancelled["twap"]["status"]),
        (200, &json!("cancelled")),
        "{cancelled}"
    );
    venue.chain.advance_time(120).await;
    venue.chain.mine(5).await;
    tokio::time::sleep(std::time::Duration::from_millis(500)).await;
    let after_cancel = twap(&venue, &bob).await;
    assert_eq!(
        (&after_cancel["slices"], &after_cancel["filled"]),
        (&json!(4), &after_restart["filled"])
    );
}
