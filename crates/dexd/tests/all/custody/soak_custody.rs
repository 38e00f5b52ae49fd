//! The custody soak: a vault chain on a real node (anvil) driven through random cycles of
//! faults — SIGKILL of dexd at random moments, reorganisations (`evm_snapshot`/`evm_revert`),
//! the node going away, withdrawals whose transaction is replaced, and bursts of hostile
//! withdrawals — with deposits (from wallets and through the API) and withdrawals in every
//! cycle. After each cycle, once the chain has settled, it checks against the chain itself:
//! - every `Deposited` event on chain is credited exactly once, and nothing else is credited;
//! - every acknowledged withdrawal is paid exactly once (one `Withdrawn` event) or failed and
//!   credited back (none);
//! - each account's balance is its deposits less its paid withdrawals, and the vault holds
//!   exactly what the venue owes.
//!
//! `DEXD_SOAK_CYCLES` (default 3, what the suite runs) and `DEXD_SOAK_SEED` set the run;
//! `scripts/soak-custody N` runs N cycles and prints the tally.

use crate::common;

use std::collections::{BTreeMap, HashMap};
use std::time::Duration;

use alloy::primitives::{Address as ChainAddress, B256, U256};
use alloy::providers::Provider;
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolEvent;
use common::chain::{NodeProxy, TestChain, USDC_UNIT};
use common::vault_venue::{deposit_body, signed_withdrawal_body, VaultVenue};
use dexd_custody::deploy;
use dexd_custody::vault::DexdVault;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// The faults a cycle injects, one per cycle.
const FAULTS: [&str; 5] = [
    "sigkill",
    "reorganisation",
    "node outage",
    "replaced transaction",
    "hostile withdrawals",
];

/// What a soak did, printed at its end.
#[derive(Default)]
struct Tally {
    deposits: usize,
    withdrawals: usize,
    refused_hostile: usize,
    vanished_in_reorganisations: usize,
    faults: BTreeMap<&'static str, usize>,
}

/// The vault's events of one kind: (account, token, amount, withdrawal id or deposit id).
async fn vault_events<Event: SolEvent>(venue: &VaultVenue) -> Vec<alloy::rpc::types::Log> {
    let provider = alloy::providers::ProviderBuilder::new().connect_http(venue.chain.anvil.endpoint_url());
    let filter = alloy::rpc::types::Filter::new()
        .address(venue.chain.vault)
        .event_signature(Event::SIGNATURE_HASH)
        .from_block(0);
    provider
        .get_logs(&filter)
        .await
        .unwrap()
        .into_iter()
        .filter(|log| !log.removed)
        .collect()
}

/// Each account's USDC deposits on chain: count and units.
async fn deposits_on_chain(venue: &VaultVenue) -> HashMap<ChainAddress, (usize, u128)> {
    let mut deposits: HashMap<ChainAddress, (usize, u128)> = HashMap::new();
    for log in vault_events::<DexdVault::Deposited>(venue).await {
        let event = DexdVault::Deposited::decode_log(&log.inner).unwrap();
        if event.token == venue.chain.usdc {
            let entry = deposits.entry(event.account).or_default();
            entry.0 += 1;
            entry.1 += u128::try_from(event.amount).unwrap();
        }
    }
    deposits
}

/// Every (account, withdrawal id) the vault paid, with how many times.
async fn withdrawals_on_chain(venue: &VaultVenue) -> HashMap<(ChainAddress, B256), usize> {
    let mut paid = HashMap::new();
    for log in vault_events::<DexdVault::Withdrawn>(venue).await {
        let event = DexdVault::Withdrawn::decode_log(&log.inner).unwrap();
        *paid.entry((event.account, B256::from(event.withdrawalId))).or_default() += 1;
    }
    paid
}

/// An account's transfers of one kind, all of them.
async fn all_transfers(venue: &VaultVenue, account: &PrivateKeySigner, kind: &str) -> Vec<Value> {
    let path = format!("/portfolio/{kind}Histories");
    let address = common::vault_venue::address_of(account);
    let (status, body) = venue.get(&path, &[("account", &address), ("limit", "1000")]).await;
    assert_eq!(status, 200, "{body}");
    let key = if kind == "deposit" { "deposits" } else { "withdrawals" };
    body[key].as_array().unwrap().clone()
}

fn units(quantity: &Value) -> u128 {
    let text = quantity.as_str().unwrap();
    let (whole, fraction) = text.split_once('.').unwrap_or((text, ""));
    let fraction = format!("{fraction:0<6}");
    whole.parse::<u128>().unwrap() * USDC_UNIT + fraction.parse::<u128>().unwrap()
}

fn id_of(transfer: &Value) -> B256 {
    let id = transfer["id"].as_str().unwrap().trim_start_matches("0x");
    B256::from(U256::from_str_radix(id, 16).unwrap())
}

/// Waits, mining, until every transfer is settled and every deposit on chain is credited; then
/// checks the venue against the chain.
async fn settle_and_check(venue: &VaultVenue, accounts: &[PrivateKeySigner], context: &str) {
    venue
        .eventually(&format!("{context}: everything settled"), || async {
            let on_chain = deposits_on_chain(venue).await;
            for account in accounts {
                let deposits = all_transfers(venue, account, "deposit").await;
                let withdrawals = all_transfers(venue, account, "withdraw").await;
                let settled = deposits
                    .iter()
                    .chain(&withdrawals)
                    .all(|transfer| transfer["status"] == "confirmed" || transfer["status"] == "failed");
                let credited = deposits
                    .iter()
                    .filter(|deposit| deposit["status"] == "confirmed")
                    .count();
                let expected = on_chain.get(&account.address()).map_or(0, |(count, _)| *count);
                if !settled || credited != expected {
                    return false;
                }
            }
            true
        })
        .await;
    let on_chain = deposits_on_chain(venue).await;
    let paid = withdrawals_on_chain(venue).await;
    for account in accounts {
        let deposits = all_transfers(venue, account, "deposit").await;
        let withdrawals = all_transfers(venue, account, "withdraw").await;
        let credited: Vec<&Value> = deposits
            .iter()
            .filter(|deposit| deposit["status"] == "confirmed")
            .collect();
        let credited_units: u128 = credited.iter().map(|deposit| units(&deposit["quantity"])).sum();
        let (count, deposited_units) = on_chain.get(&account.address()).copied().unwrap_or_default();
        assert_eq!(
            (credited.len(), credited_units),
            (count, deposited_units),
            "{context}: {:?}'s deposits on chain are credited exactly once",
            account.address()
        );
        let mut withdrawn_units = 0;
        for withdrawal in &withdrawals {
            let times = paid.get(&(account.address(), id_of(withdrawal))).copied().unwrap_or(0);
            match withdrawal["status"].as_str().unwrap() {
                "confirmed" => {
                    assert_eq!(times, 1, "{context}: {withdrawal} is paid exactly once");
                    withdrawn_units += units(&withdrawal["quantity"]);
                }
                "failed" => assert_eq!(times, 0, "{context}: {withdrawal} failed and was never paid"),
                other => panic!("{context}: {withdrawal} is still {other}"),
            }
        }
        let total = venue.balance(account, "USDC").await["total"].clone();
        assert_eq!(
            units(&total),
            credited_units - withdrawn_units,
            "{context}: the balance is deposits less paid withdrawals"
        );
    }
    let accounts_paid: usize = paid.values().sum();
    let acknowledged_paid = {
        let mut count = 0;
        for account in accounts {
            count += all_transfers(venue, account, "withdraw")
                .await
                .iter()
                .filter(|withdrawal| withdrawal["status"] == "confirmed")
                .count();
        }
        count
    };
    assert_eq!(
        accounts_paid, acknowledged_paid,
        "{context}: the vault paid nothing it was not asked to"
    );
    venue.assert_conserved().await;
}

/// Some traffic: deposits from wallets and through the API, withdrawals with the key.
async fn traffic(venue: &VaultVenue, accounts: &[PrivateKeySigner], rng: &mut StdRng, tally: &mut Tally) {
    for _ in 0..rng.gen_range(1..=2) {
        let account = &accounts[rng.gen_range(0..accounts.len())];
        let amount = rng.gen_range(50..=200u128);
        deploy::deposit_from_wallet(
            &venue.chain.node,
            account,
            Some(venue.chain.usdc),
            U256::from(amount * USDC_UNIT),
        )
        .await
        .unwrap();
        tally.deposits += 1;
    }
    if rng.gen_bool(0.5) {
        let account = &accounts[rng.gen_range(0..accounts.len())];
        let (status, body) = venue
            .post(
                "/portfolio/deposit",
                deposit_body(account, "USDC", &rng.gen_range(10..=60).to_string()),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        tally.deposits += 1;
    }
    withdraw_some(venue, accounts, rng, tally).await;
}

/// Withdrawals of what the accounts have available, with the key.
async fn withdraw_some(venue: &VaultVenue, accounts: &[PrivateKeySigner], rng: &mut StdRng, tally: &mut Tally) {
    for account in accounts {
        let available = units(&venue.balance(account, "USDC").await["available"]) / USDC_UNIT;
        if available == 0 || rng.gen_bool(0.3) {
            continue;
        }
        let quantity = rng.gen_range(1..=available.min(40));
        let (status, body) = venue
            .post(
                "/portfolio/withdraw",
                deposit_body(account, "USDC", &quantity.to_string()),
            )
            .await;
        assert_eq!(status, 200, "{body}");
        tally.withdrawals += 1;
    }
}

/// Requests an attacker would send: each is refused with a 4xx error and changes nothing.
async fn hostile_burst(venue: &VaultVenue, accounts: &[PrivateKeySigner], rng: &mut StdRng, tally: &mut Tally) {
    let account = &accounts[rng.gen_range(0..accounts.len())];
    let before = venue.balance(account, "USDC").await;
    let now_ms = dexd_store::now_ms();
    let mut garbage = [0u8; 65];
    rng.fill(&mut garbage[..]);
    garbage[64] = 27;
    let requests = [
        // A signature of nothing.
        signed_withdrawal_body(account, "USDC", "1", rng.gen(), now_ms + 600_000, &garbage),
        // An expiry the payer could not meet, and one long past.
        signed_withdrawal_body(account, "USDC", "1", rng.gen(), now_ms + 1_000, &garbage),
        signed_withdrawal_body(account, "USDC", "1", rng.gen(), now_ms - 1_000, &garbage),
        // More than the account has, with its key.
        deposit_body(account, "USDC", "100000000"),
        // Amounts that are not amounts.
        deposit_body(account, "USDC", "-5"),
        deposit_body(account, "USDC", "0.0000001"),
        json!({"from": common::vault_venue::address_of(account), "symbol": "USDC", "quantity": "1"}),
    ];
    for request in requests {
        let (status, body) = venue.post("/portfolio/withdraw", request.clone()).await;
        assert!(
            (400..500).contains(&status) && body["error"]["code"].is_string(),
            "{request} was answered {status}: {body}"
        );
        tally.refused_hostile += 1;
    }
    assert_eq!(
        venue.balance(account, "USDC").await,
        before,
        "hostile requests changed nothing"
    );
}

#[tokio::test]
async fn custody_loses_and_doubles_nothing_through_random_faults() {
    let cycles: usize = std::env::var("DEXD_SOAK_CYCLES").map_or(3, |text| text.parse().unwrap());
    let seed: u64 = std::env::var("DEXD_SOAK_SEED").map_or(20_261_124, |text| text.parse().unwrap());
    let mut rng = StdRng::seed_from_u64(seed);
    let chain = TestChain::start().await;
    let proxy = NodeProxy::start(chain.anvil.endpoint().trim_start_matches("http://").to_string()).await;
    let mut venue = VaultVenue::start_on(chain, &proxy.url);
    // Eight confirmations: a reorganisation fault (a deposit's approve and transfer, and the
    // liability roots and payments the venue sends meanwhile, each a block) stays shallower
    // than them, as the fault means it to; a deeper one halts custody, by design.
    venue.kill();
    venue.edit_config("confirmations = 2", "confirmations = 8");
    venue.restart();
    let accounts: Vec<PrivateKeySigner> = venue.chain.users.clone();
    let node = venue.chain.node.clone();
    let mut tally = Tally::default();
    for cycle in 0..cycles {
        let fault = FAULTS[rng.gen_range(0..FAULTS.len())];
        let context = format!("seed {seed}, cycle {cycle} ({fault})");
        *tally.faults.entry(fault).or_default() += 1;
        match fault {
            "sigkill" => {
                traffic(&venue, &accounts, &mut rng, &mut tally).await;
                venue.chain.mine(rng.gen_range(0..3)).await;
                tokio::time::sleep(Duration::from_millis(rng.gen_range(0..1_000))).await;
                venue.kill();
                venue.chain.mine(rng.gen_range(0..3)).await;
                venue.restart();
            }
            "reorganisation" => {
                // Shallower than the confirmations (2): what vanishes was never credited.
                let snapshot = node.raw_request("evm_snapshot", json!([])).await.unwrap();
                let account = &accounts[rng.gen_range(0..accounts.len())];
                deploy::deposit_from_wallet(&node, account, Some(venue.chain.usdc), U256::from(77 * USDC_UNIT))
                    .await
                    .unwrap();
                tokio::time::sleep(Duration::from_millis(rng.gen_range(0..300))).await;
                let reverted = node.raw_request("evm_revert", json!([snapshot])).await.unwrap();
                assert_eq!(reverted, json!(true));
                tally.vanished_in_reorganisations += 1;
                traffic(&venue, &accounts, &mut rng, &mut tally).await;
            }
            "node outage" => {
                proxy.down().await;
                let account = &accounts[rng.gen_range(0..accounts.len())];
                let (status, body) = venue
                    .post("/portfolio/deposit", deposit_body(account, "USDC", "5"))
                    .await;
                assert_eq!(
                    (status, body["error"]["code"].as_str()),
                    (502, Some("CHAIN_UNAVAILABLE")),
                    "{context}"
                );
                // Withdrawals are debited and wait for the node.
                withdraw_some(&venue, &accounts, &mut rng, &mut tally).await;
                tokio::time::sleep(Duration::from_millis(rng.gen_range(200..1_500))).await;
                proxy.up();
            }
            "replaced transaction" => {
                node.raw_request("evm_setAutomine", json!([false])).await.unwrap();
                withdraw_some(&venue, &accounts, &mut rng, &mut tally).await;
                // Past replace_after_ms (2 s): the payer sends again at the nonce with higher fees.
                tokio::time::sleep(Duration::from_millis(rng.gen_range(2_500..4_000))).await;
                node.raw_request("evm_setAutomine", json!([true])).await.unwrap();
                venue.chain.mine(1).await;
            }
            _ => {
                hostile_burst(&venue, &accounts, &mut rng, &mut tally).await;
                traffic(&venue, &accounts, &mut rng, &mut tally).await;
            }
        }
        settle_and_check(&venue, &accounts, &context).await;
    }
    // Anyone can check it all: an auditor replays the venue's public journal, checks every
    // credit against the vault's events, and finds every root the vault holds good.
    let directory = tempfile::tempdir().unwrap();
    let audit = tokio::process::Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args(["audit", "--once", "--venue", &venue.client().base_url])
        .args([
            "--chain-id",
            &venue.chain_id(),
            "--rpc-url",
            &venue.chain.anvil.endpoint(),
        ])
        .args(["--vault", &venue.chain.vault.to_string(), "--confirmations", "8"])
        .args(["--poll-interval-ms", "100", "--dir"])
        .arg(directory.path())
        .output()
        .await
        .unwrap();
    let audited = String::from_utf8_lossy(&audit.stdout);
    let roots: Vec<&str> = audited.lines().filter(|line| line.starts_with("root ")).collect();
    assert!(
        audit.status.success() && !roots.is_empty() && roots.iter().all(|line| line.contains(" ok ")),
        "seed {seed}: the audit of the soak: {audited}\n{}",
        String::from_utf8_lossy(&audit.stderr)
    );
    let faults: Vec<String> = tally
        .faults
        .iter()
        .map(|(fault, count)| format!("{fault} {count}"))
        .collect();
    println!(
        "custody soak: seed {seed}, {cycles} cycles; {} deposits and {} withdrawals acknowledged, {} deposits \
         reorganised away, {} hostile requests refused; faults: {}; lost 0, credited twice 0, paid twice 0; the auditor: {} roots ok",
        tally.deposits,
        tally.withdrawals,
        tally.vanished_in_reorganisations,
        tally.refused_hostile,
        faults.join(", "),
        roots.len()
    );
}
