//! Exits from the chain's data alone: the venue trades, commits a root and is SIGKILLed right
//! after it, before anyone fetched a proof of it; its data directory is deleted; no auditor runs
//! anywhere. Every account then exits with `dexd exit` and nothing but the node (and its beacon
//! API, for blobs), and is paid exactly its balance; the vault ends empty. Once with the roots'
//! data in blobs (anvil 1.7.1 takes them and serves them back), once in calldata with the
//! address space cut into four slices, so that the rebuild walks back only as far as a full set.

use crate::common;

use alloy::primitives::{Address as ChainAddress, U256};
use alloy::signers::local::PrivateKeySigner;
use common::chain::{TEST_ROOT_TERMS, USDC_UNIT};
use common::vault_calls::{token_balance, view};
use common::vault_venue::{address_of, key_of, VaultVenue};
use dexd_custody::vault::DexdVaultV2;
use serde_json::json;

/// The venue's fee account, where every fee is credited.
const FEE_ACCOUNT: &str = "0x000000000000000000000000000000000000fee1";

/// A decimal amount of an asset of `decimals` places, in smallest units.
fn units(amount: &str, decimals: u32) -> U256 {
    let (whole, fraction) = amount.split_once('.').unwrap_or((amount, ""));
    assert!(fraction.len() <= decimals as usize, "{amount}");
    let padded = format!("{whole}{fraction:0<width$}", width = decimals as usize);
    U256::from_str_radix(&padded, 10).unwrap()
}

/// `account`'s total (available and locked) of `symbol` at the venue, in smallest units.
async fn total(venue: &VaultVenue, account: &str, symbol: &str, decimals: u32) -> U256 {
    let (status, body) = venue.get("/account/assetBalances", &[("account", account)]).await;
    assert_eq!(status, 200, "{body}");
    let balance = body["balances"]
        .as_array()
        .unwrap()
        .iter()
        .find(|balance| balance["symbol"] == symbol)
        .map(|balance| balance["total"].as_str().unwrap().to_string())
        .unwrap_or_else(|| "0".to_string());
    units(&balance, decimals)
}

/// The epochs whose data `dexd exit` says it rebuilt the exit root from.
fn epochs_read(error_output: &str) -> Vec<u64> {
    let list = error_output
        .split("rebuilt from the data of roots [")
        .nth(1)
        .and_then(|rest| rest.split(']').next())
        .unwrap_or_else(|| panic!("no rebuild reported: {error_output}"));
    list.split(", ").map(|epoch| epoch.parse().unwrap()).collect()
}

/// `slices`: how many slices the settings cut the address space into (`None`: one a week, so
/// that every root of the test lists only changes after the first).
async fn every_account_exits_from_the_chain_alone(custody_settings: Option<&str>, slices: Option<u64>) {
    let mut venue = VaultVenue::start().await;
    if let Some(settings) = custody_settings {
        venue.restart_with_custody_setting(settings);
    }
    let [alice, bob, carol] = [0, 1, 2].map(|index| venue.chain.users[index].clone());
    venue.fund_a_wbtc_seller_and_a_usdc_buyer(&alice, &bob).await;
    venue
        .fund(&carol, Some(venue.chain.usdc), 500 * USDC_UNIT, "USDC", "500")
        .await;
    let order = |account: &PrivateKeySigner, direction: &str, price: &str, amount: &str| {
        json!({"symbol": "WBTC/USDC", "type": "limit", "direction": direction, "price": price, "amount": amount,
            "privateKey": key_of(account)})
    };
    let (status, placed) = venue
        .post("/order/addOrder", order(&alice, "sell", "60000", "0.5"))
        .await;
    assert_eq!(status, 200, "{placed}");
    let (status, taken) = venue.post("/order/addOrder", order(&bob, "buy", "60000", "0.5")).await;
    assert_eq!((status, taken["trades"].as_array().unwrap().len()), (200, 1), "{taken}");
    // Carol's order rests: its USDC is locked, and still hers in the root.
    let (status, resting) = venue
        .post("/order/addOrder", order(&carol, "buy", "50000", "0.002"))
        .await;
    assert_eq!(status, 200, "{resting}");

    let accounts: Vec<(String, Option<&PrivateKeySigner>)> = vec![
        (address_of(&alice), Some(&alice)),
        (address_of(&bob), Some(&bob)),
        (address_of(&carol), Some(&carol)),
        (FEE_ACCOUNT.to_string(), None),
    ];
    let mut owed = Vec::new();
    for (account, _) in &accounts {
        owed.push((
            total(&venue, account, "USDC", 6).await,
            total(&venue, account, "WBTC", 8).await,
        ));
    }
    assert!(
        owed[3].0 > U256::ZERO && owed[3].1 > U256::ZERO,
        "fees were charged: {owed:?}"
    );

    // Two roots more: the second was built after everything above was acknowledged. The venue
    // dies the moment it is in the vault, before anyone asked for a proof of it.
    // With slices, more roots than slices: the walk back then stops before the first root.
    let count: u64 = view(&venue.chain, DexdVaultV2::rootCountCall {}).await.saturating_to();
    let wanted = (count + 2).max(slices.map_or(0, |slices| slices + 3));
    venue
        .eventually("two more roots", || async {
            view(&venue.chain, DexdVaultV2::rootCountCall {}).await >= U256::from(wanted)
        })
        .await;
    venue.kill();
    let roots_at_exit: u64 = view(&venue.chain, DexdVaultV2::rootCountCall {}).await.saturating_to();
    venue.remove_data();

    venue.chain.advance_time(TEST_ROOT_TERMS.max_root_age_s + 1).await;
    let (usdc, wbtc) = (venue.chain.usdc, venue.chain.wbtc);
    for (index, (account, signer)) in accounts.iter().enumerate() {
        let holder: ChainAddress = account.parse().unwrap();
        let before = (
            token_balance(&venue.chain, usdc, holder).await,
            token_balance(&venue.chain, wbtc, holder).await,
        );
        let mut arguments = vec!["--account", account.as_str()];
        if index == 0 {
            arguments.push("--freeze");
        }
        let (paid, output, error) = venue.dexd_exit(&arguments, signer.unwrap_or(&carol));
        assert!(paid, "{account}: {output} {error}");
        let epochs = epochs_read(&error);
        match slices {
            // The first root lists every account: the walk goes back to it.
            None => assert_eq!(epochs[0], 0, "{error}"),
            // A full set is the last four slices, each in one root after the first.
            Some(slices) => {
                assert!(epochs[0] > 0 && epochs.len() as u64 <= slices + 1, "{error}");
                assert_eq!(*epochs.last().unwrap() + 1, roots_at_exit, "{error}");
            }
        }
        let after = (
            token_balance(&venue.chain, usdc, holder).await,
            token_balance(&venue.chain, wbtc, holder).await,
        );
        assert_eq!(
            (after.0 - before.0, after.1 - before.1),
            owed[index],
            "{account} is paid its balance at the exit root, exactly: {output}"
        );
    }
    // Nobody was paid twice, and nothing is left owed: the vault is empty.
    assert_eq!(venue.chain.vault_balance(Some(usdc)).await, U256::ZERO);
    assert_eq!(venue.chain.vault_balance(Some(wbtc)).await, U256::ZERO);
}

#[tokio::test]
async fn every_account_exits_from_blobs_alone_after_the_venue_and_its_data_are_gone() {
    every_account_exits_from_the_chain_alone(None, None).await;
}

/// Calldata, as on a chain without blobs. (On the node itself: the vault is built for Cancun,
/// whose opcodes it uses, and an anvil at Shanghai, before blobs, refuses to run it.)
#[tokio::test]
async fn every_account_exits_from_calldata_alone_with_the_space_in_four_slices() {
    every_account_exits_from_the_chain_alone(Some("data = \"calldata\"\nsnapshot_interval_ms = 8000"), Some(4)).await;
}
