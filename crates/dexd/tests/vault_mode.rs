//! Vault custody end to end: the real dexd binary on a vault chain of a real node (anvil), with
//! the vault deployed. Deposits through the API and straight from wallets are credited once
//! after their confirmations, across restarts and reorganisations; withdrawals are paid once
//! across SIGKILL at random moments, checked on chain; the node going away makes deposits 502
//! and withdrawals wait; bad input is refused; reserves cover liabilities after every scenario.

mod common;

use std::time::{Duration, Instant};

use alloy::primitives::{Address as ChainAddress, U256};
use alloy::signers::local::PrivateKeySigner;
use common::chain::{NodeProxy, TestChain, ETH_UNIT, USDC_UNIT};
use common::vault_venue::{
    address_of, deposit_body, key_of, native_withdrawal_digest, signed_withdrawal_body, VaultVenue,
};
use dexd_crypto::checksummed;
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

#[tokio::test]
async fn a_withdrawal_is_debited_at_once_then_paid_on_chain_and_confirmed() {
    let venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    venue
        .fund(&alice, Some(venue.chain.usdc), 500 * USDC_UNIT, "USDC", "500")
        .await;
    let before = venue.usdc_in_wallet(&alice).await;
    let (status, body) = venue
        .post("/portfolio/withdraw", deposit_body(&alice, "USDC", "120"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["withdrawal"]["status"], "pending");
    assert_eq!(body["balance"]["available"], "380", "debited before the answer");
    let id = body["withdrawal"]["id"].as_str().unwrap().to_string();
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    let withdrawal = venue.transfers(&alice, "withdraw").await.remove(0);
    assert_eq!(withdrawal["id"], id.as_str());
    assert!(withdrawal["txHash"].as_str().is_some());
    let after = venue.usdc_in_wallet(&alice).await;
    assert_eq!(after - before, U256::from(120 * USDC_UNIT), "paid once, to the account");
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

#[tokio::test]
async fn withdrawals_are_paid_exactly_once_across_sigkill_at_random_moments() {
    use rand::{Rng, SeedableRng};
    // One seed in the suite; `DEXD_VAULT_CRASH_SEEDS=50` soaks with 50, and
    // `DEXD_VAULT_CRASH_SEED=<n>` reruns the one a failure names.
    let seeds: Vec<u64> = match (
        std::env::var("DEXD_VAULT_CRASH_SEED"),
        std::env::var("DEXD_VAULT_CRASH_SEEDS"),
    ) {
        (Ok(seed), _) => vec![seed.parse().unwrap()],
        (_, Ok(count)) => (0..count.parse::<u64>().unwrap()).map(|seed| 1_000 + seed).collect(),
        _ => vec![20_261_123],
    };
    for seed in seeds {
        let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
        let mut venue = VaultVenue::start().await;
        let alice = venue.chain.users[0].clone();
        venue
            .fund(&alice, Some(venue.chain.usdc), 1_000 * USDC_UNIT, "USDC", "1000")
            .await;
        let before = venue.usdc_in_wallet(&alice).await;
        let _miner = common::chain::BackgroundMiner::start(venue.chain.node.clone());
        let mut withdrawals = Vec::new();
        for round in 0..6 {
            let units = rng.gen_range(1..=50u128);
            let (status, body) = venue
                .post("/portfolio/withdraw", deposit_body(&alice, "USDC", &units.to_string()))
                .await;
            assert_eq!(status, 200, "seed {seed} round {round}: {body}");
            withdrawals.push((body["withdrawal"]["id"].as_str().unwrap().to_string(), units));
            // Killed before the send, after it, or after its confirmation, as chance has it.
            tokio::time::sleep(Duration::from_millis(rng.gen_range(0..1_200))).await;
            venue.kill();
            tokio::time::sleep(Duration::from_millis(rng.gen_range(0..300))).await;
            venue.restart();
        }
        venue.wait_for_every_withdrawal_confirmed(&alice).await;
        venue
            .assert_usdc_withdrawals_paid_once(&alice, &withdrawals, before, &format!("seed {seed}"))
            .await;
        let paid: u128 = withdrawals.iter().map(|(_, units)| units).sum();
        assert_eq!(
            venue.balance(&alice, "USDC").await["total"],
            (1_000 - paid).to_string().as_str()
        );
        venue.assert_conserved().await;
    }
}

#[tokio::test]
async fn the_node_down_makes_deposits_502_while_withdrawals_wait_and_trading_goes_on() {
    let chain = TestChain::start().await;
    let proxy = NodeProxy::start(chain.anvil.endpoint().trim_start_matches("http://").to_string()).await;
    let mut venue = VaultVenue::start_on(chain, &proxy.url);
    let alice = venue.chain.users[0].clone();
    venue
        .fund(&alice, Some(venue.chain.usdc), 200 * USDC_UNIT, "USDC", "200")
        .await;
    proxy.down().await;
    let (status, body) = venue
        .post("/portfolio/deposit", deposit_body(&alice, "USDC", "5"))
        .await;
    assert_eq!(status, 502, "{body}");
    assert_eq!(body["error"]["code"], "CHAIN_UNAVAILABLE");
    // The node URL is a secret (providers put keys in it): no answer names it.
    let node_host = proxy
        .url
        .trim_start_matches("http://")
        .trim_end_matches('/')
        .to_string();
    assert!(!body.to_string().contains(&node_host), "the node URL leaked: {body}");
    let deposits = venue.transfers(&alice, "deposit").await;
    assert_eq!(deposits.len(), 1, "nothing was applied: {deposits:?}");
    let (status, body) = venue
        .post("/portfolio/withdraw", deposit_body(&alice, "USDC", "50"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["withdrawal"]["status"], "pending");
    let order = json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100", "amount": "0.5", "privateKey": key_of(&alice)});
    let (status, body) = venue.post("/order/addOrder", order).await;
    assert_eq!(status, 200, "trading goes on: {body}");
    let (status, body) = venue.get("/account/reserves", &[]).await;
    assert_eq!(
        (status, body["error"]["code"].as_str()),
        (502, Some("CHAIN_UNAVAILABLE")),
        "{body}"
    );
    assert!(!body.to_string().contains(&node_host), "the node URL leaked: {body}");
    venue.chain.mine(3).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        venue.transfers(&alice, "withdraw").await[0]["status"],
        "pending",
        "it waits for the node"
    );
    // A restart while the node is down changes nothing either.
    venue.restart();
    proxy.up();
    let before = venue.usdc_in_wallet(&alice).await;
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    let after = venue.usdc_in_wallet(&alice).await;
    assert_eq!(after - before, U256::from(50 * USDC_UNIT));
    venue.assert_conserved().await;
}

#[tokio::test]
async fn bad_deposits_and_withdrawals_on_a_vault_chain_are_refused_and_change_nothing() {
    let venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    // No key: dexd cannot send a deposit for the account.
    let signed = json!({"from": address_of(&alice), "symbol": "USDC", "quantity": "1", "nonce": "1",
        "expiry": (dexd_store::now_ms() + 60_000).to_string(), "signature": format!("0x{}", "11".repeat(65))});
    let body = venue
        .refused("/portfolio/deposit", signed, 400, "INVALID_PARAMETER")
        .await;
    assert!(
        body["error"]["message"].as_str().unwrap().contains("from the wallet"),
        "{body}"
    );
    // An account without the token; one with the token and no gas; more ETH than it has.
    let empty = PrivateKeySigner::random();
    venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&empty, "USDC", "1"),
            422,
            "INSUFFICIENT_FUNDS_ON_CHAIN",
        )
        .await;
    let no_gas = PrivateKeySigner::random();
    deploy::mint(
        &venue.chain.node,
        &venue.chain.deployer,
        venue.chain.usdc,
        no_gas.address(),
        U256::from(10 * USDC_UNIT),
    )
    .await
    .unwrap();
    let body = venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&no_gas, "USDC", "1"),
            422,
            "INSUFFICIENT_FUNDS_ON_CHAIN",
        )
        .await;
    assert!(body["error"]["message"].as_str().unwrap().contains("gas"), "{body}");
    venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&alice, "ETH", "1000000"),
            422,
            "INSUFFICIENT_FUNDS_ON_CHAIN",
        )
        .await;
    // Beyond the token's decimals, an unknown token, a withdrawal beyond the balance.
    venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&alice, "USDC", "1.0000001"),
            400,
            "INVALID_NUMBER",
        )
        .await;
    venue
        .refused(
            "/portfolio/deposit",
            deposit_body(&alice, "DAI", "1"),
            404,
            "UNKNOWN_ASSET",
        )
        .await;
    venue
        .refused(
            "/portfolio/withdraw",
            deposit_body(&alice, "USDC", "1"),
            422,
            "INSUFFICIENT_BALANCE",
        )
        .await;
    // Nothing was sent or recorded.
    for account in [&alice, &empty, &no_gas] {
        assert!(venue.transfers(account, "deposit").await.is_empty());
        assert!(venue.transfers(account, "withdraw").await.is_empty());
    }
    assert_eq!(venue.chain.vault_balance(Some(venue.chain.usdc)).await, U256::ZERO);
    assert_eq!(venue.chain.vault_balance(None).await, U256::ZERO);
}

/// The account's signature, `r ‖ s ‖ v`, of the vault's `Withdrawal` of 0.2 ETH with this id
/// and expiry, made with alloy from the contract's own type (not dexd's code).
fn sign_fifth_of_an_eth_withdrawal(
    venue: &VaultVenue,
    account: &PrivateKeySigner,
    id: u64,
    expiry_ms: u64,
) -> [u8; 65] {
    use alloy::signers::SignerSync;
    let digest = native_withdrawal_digest(venue, account.address(), ETH_UNIT / 5, id, expiry_ms);
    account.sign_hash_sync(&digest).unwrap().as_bytes()
}

#[tokio::test]
async fn a_withdrawal_signed_by_the_client_with_the_vaults_typed_data_is_paid() {
    let venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    venue.fund(&alice, None, ETH_UNIT, "ETH", "1").await;
    let (_, types) = venue.get("/account/eip712", &[]).await;
    assert_eq!(types["primaryTypes"]["withdraw"], "Withdrawal", "{types}");
    assert_eq!(
        types["domain"]["verifyingContract"],
        address_of_chain(&venue.chain.vault)
    );
    let expiry = dexd_store::now_ms() + 600_000;
    let signature = sign_fifth_of_an_eth_withdrawal(&venue, &alice, 77, expiry);
    let body = signed_withdrawal_body(&alice, "ETH", "0.2", 77, expiry, &signature);
    let (status, answer) = venue.post("/portfolio/withdraw", body.clone()).await;
    assert_eq!(status, 200, "{answer}");
    assert_eq!(answer["withdrawal"]["id"], format!("0x{:064x}", 77));
    // The same signed request again: its nonce is taken.
    venue.refused("/portfolio/withdraw", body, 409, "NONCE_REUSED").await;
    // A signature over other terms is refused.
    let tampered = signed_withdrawal_body(&alice, "ETH", "0.3", 78, expiry, &signature);
    venue
        .refused("/portfolio/withdraw", tampered, 401, "INVALID_SIGNATURE")
        .await;
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    assert_eq!(
        venue.withdrawn_events(alice.address(), &format!("0x{:064x}", 77)).await,
        1
    );
    venue.assert_conserved().await;
}

#[tokio::test]
async fn a_withdrawal_signature_the_vault_would_refuse_is_refused_at_the_door() {
    let venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    venue.fund(&alice, None, ETH_UNIT, "ETH", "1").await;
    let expiry = dexd_store::now_ms() + 600_000;
    let signature = sign_fifth_of_an_eth_withdrawal(&venue, &alice, 91, expiry);
    let body = |signature: &[u8; 65]| signed_withdrawal_body(&alice, "ETH", "0.2", 91, expiry, signature);
    // The same signer, in the two forms OpenZeppelin's ECDSA refuses: v as 0/1, and the high-s
    // twin (s' = n - s, v flipped). Either would be debited and then never paid.
    let mut zero_one = signature;
    zero_one[64] -= 27;
    let order = U256::from_str_radix("fffffffffffffffffffffffffffffffebaaedce6af48a03bbfd25e8cd0364141", 16).unwrap();
    let mut high_s = signature;
    high_s[32..64].copy_from_slice(&(order - U256::from_be_slice(&signature[32..64])).to_be_bytes::<32>());
    high_s[64] = if signature[64] == 27 { 28 } else { 27 };
    for refused in [zero_one, high_s] {
        let answer = venue
            .refused("/portfolio/withdraw", body(&refused), 401, "INVALID_SIGNATURE")
            .await;
        assert!(
            answer["error"]["message"].as_str().unwrap().contains("low-s"),
            "{answer}"
        );
    }
    assert!(
        venue.transfers(&alice, "withdraw").await.is_empty(),
        "nothing was debited"
    );
    assert_eq!(venue.balance(&alice, "ETH").await["available"], "1");
    // An expiry closer than the payment margin (five minutes by default) is refused too.
    let soon = dexd_store::now_ms() + 60_000;
    let hurried = sign_fifth_of_an_eth_withdrawal(&venue, &alice, 92, soon);
    let answer = venue
        .refused(
            "/portfolio/withdraw",
            signed_withdrawal_body(&alice, "ETH", "0.2", 92, soon, &hurried),
            400,
            "INVALID_PARAMETER",
        )
        .await;
    assert_eq!(answer["error"]["field"], "expiry", "{answer}");
    // The canonical signature of the same terms is taken: the refusals claimed no nonce.
    let (status, answer) = venue.post("/portfolio/withdraw", body(&signature)).await;
    assert_eq!(status, 200, "{answer}");
}

fn address_of_chain(address: &ChainAddress) -> String {
    checksummed(&venue_address(address))
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

/// The newest withdrawal's transaction hash once it has one, waiting for it to differ from
/// `other` (mining nothing: automine may be off).
async fn withdrawal_tx_hash_other_than(venue: &VaultVenue, account: &PrivateKeySigner, other: Option<&str>) -> String {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let withdrawals = venue.transfers(account, "withdraw").await;
        if let Some(hash) = withdrawals.first().and_then(|withdrawal| withdrawal["txHash"].as_str()) {
            if Some(hash) != other {
                return hash.to_string();
            }
        }
        assert!(Instant::now() < deadline, "no new withdrawal transaction");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test]
async fn a_replaced_withdrawal_whose_first_transaction_is_mined_is_confirmed() {
    let mut venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    venue
        .fund(&alice, Some(venue.chain.usdc), 100 * USDC_UNIT, "USDC", "100")
        .await;
    let before = venue.usdc_in_wallet(&alice).await;
    let (status, body) = venue
        .post("/portfolio/withdraw", deposit_body(&alice, "USDC", "40"))
        .await;
    assert_eq!(status, 200, "{body}");
    // A root covering the withdrawal is committed and recorded; then no more roots, and blocks
    // only when the test mines them.
    venue
        .eventually("a root covers the withdrawal", || async {
            venue.transfers(&alice, "withdraw").await[0]["waitingFor"] == "challenge"
        })
        .await;
    venue.kill();
    let config = std::fs::read_to_string(&venue.config).unwrap();
    std::fs::write(
        &venue.config,
        config.replace("root_interval_ms = 1000", "root_interval_ms = 86400000"),
    )
    .unwrap();
    venue
        .chain
        .node
        .raw_request("evm_setAutomine", json!([false]))
        .await
        .unwrap();
    venue.restart();
    let node = &venue.chain.node;
    // The root's challenge period passes in blocks the test mines (with nothing in them).
    tokio::time::sleep(Duration::from_millis(2_500)).await;
    for _ in 0..3 {
        node.raw_request("evm_mine", json!([])).await.unwrap();
    }
    // The first transaction waits unmined until the payer replaces it with higher fees.
    let first = withdrawal_tx_hash_other_than(&venue, &alice, None).await;
    let first_raw = node
        .raw_request("eth_getRawTransactionByHash", json!([first]))
        .await
        .unwrap();
    let replacement = withdrawal_tx_hash_other_than(&venue, &alice, Some(&first)).await;
    // Then the first one is mined after all, as when a miner had it before the replacement.
    node.raw_request("anvil_dropTransaction", json!([replacement]))
        .await
        .unwrap();
    node.raw_request("eth_sendRawTransaction", json!([first_raw]))
        .await
        .unwrap();
    node.raw_request("evm_mine", json!([])).await.unwrap();
    node.raw_request("evm_setAutomine", json!([true])).await.unwrap();
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    let withdrawal = venue.transfers(&alice, "withdraw").await.remove(0);
    assert_eq!(
        withdrawal["txHash"],
        first.as_str(),
        "confirmed by the transaction that paid it"
    );
    assert_eq!(venue.usdc_in_wallet(&alice).await - before, U256::from(40 * USDC_UNIT));
    venue.assert_conserved().await;
}

#[tokio::test]
async fn withdrawals_the_vault_refuses_are_set_aside_and_never_hold_up_the_others() {
    let mut venue = VaultVenue::start().await;
    let [alice, bob] = [0, 1].map(|index| venue.chain.users[index].clone());
    venue.fund(&alice, None, ETH_UNIT, "ETH", "1").await;
    venue.fund(&bob, None, ETH_UNIT, "ETH", "1").await;
    // Batches of two; and Alice's address gets code that reverts whatever it is sent, so the
    // vault can never pay her the native asset.
    venue.restart_with_custody_setting("max_withdrawals_per_transaction = 2");
    venue
        .chain
        .node
        .raw_request("anvil_setCode", json!([alice.address(), "0x60006000fd"]))
        .await
        .unwrap();
    for _ in 0..2 {
        let (status, body) = venue
            .post("/portfolio/withdraw", deposit_body(&alice, "ETH", "0.1"))
            .await;
        assert_eq!(status, 200, "{body}");
    }
    // Bob's comes after two that fill a batch and can never be paid: it is paid all the same.
    let (status, body) = venue
        .post("/portfolio/withdraw", deposit_body(&bob, "ETH", "0.25"))
        .await;
    assert_eq!(status, 200, "{body}");
    venue.wait_for_newest_withdrawal_confirmed(&bob).await;
    let alices = venue.transfers(&alice, "withdraw").await;
    assert_eq!(alices.len(), 2);
    assert!(
        alices.iter().all(|withdrawal| withdrawal["status"] == "pending"),
        "{alices:?}"
    );
    assert_eq!(venue.balance(&alice, "ETH").await["total"], "0.8");
}

#[tokio::test]
async fn a_withdrawal_id_is_the_accounts_once_even_after_its_request_expired() {
    let mut venue = VaultVenue::start().await;
    // A margin short enough for a request that expires within the test.
    venue.restart_with_custody_setting("withdrawal_expiry_margin_ms = 1000");
    let [alice, bob] = [0, 1].map(|index| venue.chain.users[index].clone());
    venue.fund(&alice, None, ETH_UNIT, "ETH", "1").await;
    venue.fund(&bob, None, ETH_UNIT, "ETH", "1").await;
    // A short expiry (the withdrawal wait is a 1 s root interval, the vault's 2 s challenge
    // period and the 1 s margin), so that the request expires (and its nonce is forgotten) once
    // paid.
    let expiry = dexd_store::now_ms() + 6_000;
    let signature = sign_fifth_of_an_eth_withdrawal(&venue, &alice, 5, expiry);
    let (status, answer) = venue
        .post(
            "/portfolio/withdraw",
            signed_withdrawal_body(&alice, "ETH", "0.2", 5, expiry, &signature),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    tokio::time::sleep(Duration::from_millis(
        expiry.saturating_sub(dexd_store::now_ms()) + 1_000,
    ))
    .await;
    // Another signed request after the expiry: the venue forgets the expired nonces then.
    let bobs_expiry = dexd_store::now_ms() + 600_000;
    let bobs = sign_fifth_of_an_eth_withdrawal(&venue, &bob, 9, bobs_expiry);
    let (status, answer) = venue
        .post(
            "/portfolio/withdraw",
            signed_withdrawal_body(&bob, "ETH", "0.2", 9, bobs_expiry, &bobs),
        )
        .await;
    assert_eq!(status, 200, "{answer}");
    // The same id under a new signature and a later expiry: the vault would take the old
    // payment for it, so it is refused.
    let later = dexd_store::now_ms() + 600_000;
    let again = sign_fifth_of_an_eth_withdrawal(&venue, &alice, 5, later);
    let body = venue
        .refused(
            "/portfolio/withdraw",
            signed_withdrawal_body(&alice, "ETH", "0.2", 5, later, &again),
            409,
            "NONCE_REUSED",
        )
        .await;
    assert_eq!(body["error"]["field"], "nonce", "{body}");
    assert_eq!(venue.balance(&alice, "ETH").await["total"], "0.8");
    assert_eq!(venue.transfers(&alice, "withdraw").await.len(), 1);
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

#[tokio::test]
async fn reserves_readings_are_shared_so_callers_cannot_multiply_the_nodes_load() {
    let venue = VaultVenue::start().await;
    // Twenty callers at once, with a block mined among them: one reading serves them all.
    let mine = async {
        venue.chain.mine(1).await;
    };
    let calls = futures_util::future::join_all((0..20).map(|_| venue.get("/account/reserves", &[])));
    let (answers, ()) = tokio::join!(calls, mine);
    let readings: std::collections::BTreeSet<(String, String)> = answers
        .iter()
        .map(|(status, body)| {
            assert_eq!(*status, 200, "{body}");
            (body["readAt"].to_string(), body["blockNumber"].to_string())
        })
        .collect();
    assert_eq!(readings.len(), 1, "one reading for twenty callers: {readings:?}");
    let (read_at, block) = readings.into_iter().next().unwrap();
    // A reading older than a second is replaced by a fresh one, at the newer block.
    venue.chain.mine(1).await;
    tokio::time::sleep(Duration::from_millis(1_100)).await;
    let (status, body) = venue.get("/account/reserves", &[]).await;
    assert_eq!(status, 200, "{body}");
    assert!(body["readAt"].as_u64() > read_at.parse().ok(), "{body}");
    assert!(body["blockNumber"].as_u64() > block.parse().ok(), "{body}");
}
