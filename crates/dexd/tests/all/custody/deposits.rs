//! Vault deposits end to end: the real dexd binary on a vault chain of a real node (anvil).
//! Deposits through the API and straight from wallets are credited once after their
//! confirmations, across crashes and reorganisations; a deposit the logs never showed halts
//! crediting; one account waiting for its approve holds up no other.

use crate::common;

use std::time::Duration;

use alloy::primitives::U256;
use alloy::signers::local::PrivateKeySigner;
use common::chain::{ETH_UNIT, USDC_UNIT};
use common::vault_venue::{deposit_body, key_of, VaultVenue};
use dexd_custody::deploy;
use dexd_custody::vault::venue_address;
use serde_json::{json, Value};

#[tokio::test]
async fn a_deposit_through_the_api_is_pending_then_credited_once_after_its_confirmations() {
    // No roots: their transactions would mine the blocks this test counts.
    let mut venue = VaultVenue::start_with_roots(86_400_000).await;
    let alice = venue.chain.users[0].clone();
    let (status, body) = venue
        .post("/portfolio/deposit", deposit_body(&alice, "USDC", "150.5"))
        .await;
    assert_eq!(status, 200, "{body}");
    let deposit = &body["deposit"];
    assert_eq!(deposit["status"], "pending", "{body}");
    assert_eq!(deposit["quantity"], "150.5");
    assert_eq!(deposit["id"], deposit["txHash"]);
    assert_eq!(
        body["balance"]["total"], "0",
        "nothing is credited before the confirmations"
    );
    let tx_hash = deposit["txHash"].as_str().unwrap().to_string();
    // Mined in one block; credited only with two more on top.
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(venue.balance(&alice, "USDC").await["total"], "0");
    venue.chain.mine(1).await;
    tokio::time::sleep(Duration::from_millis(600)).await;
    assert_eq!(
        venue.balance(&alice, "USDC").await["total"],
        "0",
        "one confirmation is not enough"
    );
    venue.chain.mine(1).await;
    venue.wait_for_available(&alice, "USDC", "150.5").await;
    let deposits = venue.transfers(&alice, "deposit").await;
    assert_eq!(deposits.len(), 1, "{deposits:?}");
    assert_eq!(deposits[0]["id"], tx_hash.as_str());
    assert_eq!(deposits[0]["status"], "confirmed");
    assert!(deposits[0]["blockNumber"].as_u64().is_some());
    // Restarts and more blocks never credit it again.
    for _ in 0..2 {
        venue.restart();
        venue.chain.mine(3).await;
        tokio::time::sleep(Duration::from_millis(500)).await;
        assert_eq!(venue.balance(&alice, "USDC").await["total"], "150.5");
        assert_eq!(venue.transfers(&alice, "deposit").await.len(), 1);
    }
    assert_eq!(
        venue.chain.vault_balance(Some(venue.chain.usdc)).await,
        U256::from(150_500_000u64)
    );
    venue.assert_conserved().await;
}

#[tokio::test]
async fn deposits_straight_from_wallets_are_credited_and_listed_and_a_native_deposit_too() {
    let venue = VaultVenue::start().await;
    let bob = venue.chain.users[1].clone();
    let usdc = venue
        .deposit_from_wallet(&bob, Some(venue.chain.usdc), 75 * USDC_UNIT)
        .await;
    venue.deposit_from_wallet(&bob, None, ETH_UNIT / 4).await;
    venue.wait_for_available(&bob, "USDC", "75").await;
    venue.wait_for_available(&bob, "ETH", "0.25").await;
    let deposits = venue.transfers(&bob, "deposit").await;
    assert_eq!(deposits.len(), 2);
    assert_eq!(deposits[0]["symbol"], "ETH", "newest first");
    assert_eq!(deposits[1]["blockNumber"], usdc.block_number);
    assert!(deposits.iter().all(|deposit| deposit["status"] == "confirmed"));
    venue.assert_conserved().await;
}

async fn snapshot(venue: &VaultVenue) -> Value {
    venue.chain.node.raw_request("evm_snapshot", json!([])).await.unwrap()
}

async fn revert(venue: &VaultVenue, snapshot: &Value) {
    let reverted = venue
        .chain
        .node
        .raw_request("evm_revert", json!([snapshot]))
        .await
        .unwrap();
    assert_eq!(reverted, json!(true));
}

#[tokio::test]
async fn a_reorganisation_before_the_confirmations_credits_only_what_survives_and_a_deeper_one_halts_crediting() {
    let venue = VaultVenue::start().await;
    let [alice, bob, carol, dave] = [0, 1, 2, 3].map(|index| venue.chain.users[index].clone());
    // Alice's deposit is mined, then reorganised away before it has its confirmations; Bob's is
    // mined in its place.
    let before_alice = snapshot(&venue).await;
    venue
        .deposit_from_wallet(&alice, Some(venue.chain.usdc), 50 * USDC_UNIT)
        .await;
    tokio::time::sleep(Duration::from_millis(300)).await;
    revert(&venue, &before_alice).await;
    venue
        .fund(&bob, Some(venue.chain.usdc), 70 * USDC_UNIT, "USDC", "70")
        .await;
    venue.chain.mine(5).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(
        venue.balance(&alice, "USDC").await["total"],
        "0",
        "a vanished deposit is never credited"
    );
    assert!(venue.transfers(&alice, "deposit").await.is_empty());
    venue.assert_conserved().await;
    // Carol's deposit is credited with its confirmations, then the chain is reorganised deeper
    // than that: crediting stops, loudly, and nothing after is credited; trading goes on.
    let before_carol = snapshot(&venue).await;
    venue
        .fund(&carol, Some(venue.chain.usdc), 30 * USDC_UNIT, "USDC", "30")
        .await;
    revert(&venue, &before_carol).await;
    venue.chain.mine(6).await;
    let reason = venue.wait_for_halt().await;
    assert!(reason.contains("reorganised"), "{reason}");
    venue
        .deposit_from_wallet(&dave, Some(venue.chain.usdc), 10 * USDC_UNIT)
        .await;
    venue.chain.mine(5).await;
    tokio::time::sleep(Duration::from_millis(800)).await;
    assert_eq!(
        venue.balance(&dave, "USDC").await["total"],
        "0",
        "nothing is credited after the halt"
    );
    let order = json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100", "amount": "0.1", "privateKey": key_of(&bob)});
    let (status, body) = venue.post("/order/addOrder", order).await;
    assert_eq!(status, 200, "trading goes on: {body}");
}

/// Mines the native deposits of `accounts` (a quarter ETH each) in one block, with automine
/// off meanwhile; returns that block's number.
async fn native_deposits_in_one_block(venue: &VaultVenue, accounts: &[PrivateKeySigner]) -> u64 {
    let node = &venue.chain.node;
    node.raw_request("evm_setAutomine", json!([false])).await.unwrap();
    let sent: Vec<_> = accounts
        .iter()
        .map(|account| {
            let (node, account) = (node.clone(), account.clone());
            tokio::spawn(async move {
                deploy::deposit_from_wallet(&node, &account, None, U256::from(ETH_UNIT / 4))
                    .await
                    .unwrap()
            })
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(500)).await;
    node.raw_request("evm_mine", json!([])).await.unwrap();
    node.raw_request("evm_setAutomine", json!([true])).await.unwrap();
    let mut blocks = Vec::new();
    for receipt in sent {
        blocks.push(receipt.await.unwrap().block_number);
    }
    blocks.dedup();
    assert_eq!(blocks.len(), 1, "the deposits were mined in one block: {blocks:?}");
    blocks[0]
}

#[tokio::test]
async fn a_block_credited_in_part_before_a_crash_is_credited_in_full_after_it() {
    let mut venue = VaultVenue::start().await;
    let [alice, bob, carol] = [0, 1, 2].map(|index| venue.chain.users[index].clone());
    venue.kill();
    let block = native_deposits_in_one_block(&venue, &[alice.clone(), bob.clone()]).await;
    venue.chain.mine(3).await;
    // The journal takes the block's first deposit and then the process dies: written here as
    // the watcher writes it, by the venue in process on the same data directory.
    let logs = venue.chain.node.deposit_logs(block, block).await.unwrap();
    assert_eq!(logs.len(), 2);
    let first = &logs[0];
    {
        let config = dexd_venue::config::Config::load(&venue.config).unwrap();
        let eth = config.chains[0]
            .assets
            .iter()
            .position(|asset| asset.address.is_none())
            .unwrap();
        let in_process = dexd_venue::Venue::start(config, &venue.folder.path().join("data")).unwrap();
        let credit = dexd_core::Command::CreditChainDeposit(dexd_core::ChainDeposit {
            deposit_id: 0,
            account: venue_address(&first.account),
            token: venue_address(&first.token),
            asset: Some(dexd_core::AssetIndex(eth as u16)),
            amount: Some(dexd_core::Amount::from_units(ETH_UNIT / 4)),
            tx_hash: first.tx_hash.0,
            log_index: first.log_index,
            block_number: first.block_number,
            block_hash: first.block_hash.0,
        });
        in_process
            .chain(venue.chain.chain_id)
            .unwrap()
            .submit(credit, None)
            .await
            .unwrap();
    }
    venue.restart();
    // The rest of the block is credited, and crediting goes on after it.
    let second = if first.account == alice.address() { &bob } else { &alice };
    venue.wait_for_available(second, "ETH", "0.25").await;
    venue.fund(&carol, None, ETH_UNIT / 2, "ETH", "0.5").await;
    let (_, info) = venue.get("/account/assetsInfo", &[]).await;
    assert_eq!(info["custody"]["crediting"], "running", "{info}");
    for account in [&alice, &bob] {
        assert_eq!(venue.balance(account, "ETH").await["total"], "0.25");
        assert_eq!(venue.transfers(account, "deposit").await.len(), 1);
    }
    venue.assert_conserved().await;
}

#[tokio::test]
async fn a_vault_deposit_the_logs_never_showed_halts_crediting_with_the_counts() {
    let mut venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    venue.kill();
    // `start_block` applies to a journal that has scanned nothing; the first start may have
    // journaled a scan already (it does when the machine is slow), so the venue starts afresh.
    venue.remove_data();
    // A deposit before the configured start: its event is never read, but the vault counts it.
    let receipt = venue.deposit_from_wallet(&alice, None, ETH_UNIT / 4).await;
    let config = std::fs::read_to_string(&venue.config).unwrap();
    let start_line = format!("start_block = {}", venue.chain.vault_block);
    assert!(config.contains(&start_line), "{config}");
    let later_start = format!("start_block = {}", receipt.block_number + 1);
    std::fs::write(&venue.config, config.replace(&start_line, &later_start)).unwrap();
    venue.restart();
    venue.chain.mine(3).await;
    let reason = venue.wait_for_halt().await;
    assert!(
        reason.contains("taken 1 deposits") && reason.contains("0 were read"),
        "{reason}"
    );
    assert_eq!(venue.balance(&alice, "ETH").await["total"], "0");
    // The halt shows where operators look: /ready (still ready: trading goes on) and /metrics.
    let (status, ready) = venue.client().get("/ready", &[]).await;
    assert_eq!(status, 200, "{ready}");
    assert_eq!(
        ready["custodyHalted"],
        json!([{"chainId": venue.chain_id(), "reason": reason}])
    );
    let metrics = venue.client().get_text("/metrics").await;
    let halted_line = format!("dexd_custody_halted{{chain_id=\"{}\"}} 1", venue.chain_id());
    assert!(metrics.lines().any(|line| line == halted_line), "{metrics}");
}

#[tokio::test]
async fn one_accounts_deposit_waiting_for_its_approve_does_not_hold_up_anothers() {
    let venue = VaultVenue::start().await;
    let (alice, bob) = (venue.chain.users[0].clone(), venue.chain.users[1].clone());
    let node = &venue.chain.node;
    node.raw_request("evm_setAutomine", json!([false])).await.unwrap();
    // Alice has allowed the vault nothing: her deposit sends an approve and waits for it, which
    // is not mined while automine is off.
    let alice_deposit = venue.post("/portfolio/deposit", deposit_body(&alice, "USDC", "10"));
    tokio::pin!(alice_deposit);
    tokio::select! {
        answer = &mut alice_deposit => panic!("alice's deposit answered before its approve was mined: {answer:?}"),
        _ = tokio::time::sleep(Duration::from_secs(1)) => {}
    }
    // Bob's native deposit needs no approve: it is answered while Alice's still waits.
    let bob_answer = tokio::select! {
        answer = venue.post("/portfolio/deposit", deposit_body(&bob, "ETH", "0.5")) => answer,
        answer = &mut alice_deposit => panic!("alice's deposit answered first: {answer:?}"),
        _ = tokio::time::sleep(Duration::from_secs(20)) => panic!("bob's deposit waited for alice's approve"),
    };
    assert_eq!(bob_answer.0, 200, "{}", bob_answer.1);
    assert_eq!(bob_answer.1["deposit"]["status"], "pending");
    node.raw_request("evm_setAutomine", json!([true])).await.unwrap();
    venue.chain.mine(1).await;
    let (status, body) = alice_deposit.await;
    assert_eq!(status, 200, "{body}");
    venue.wait_for_available(&alice, "USDC", "10").await;
    venue.wait_for_available(&bob, "ETH", "0.5").await;
    venue.assert_conserved().await;
}
