//! Vault withdrawals end to end: the real dexd binary on a vault chain of a real node (anvil).
//! A withdrawal is debited at once and paid once on chain, across SIGKILL at random moments and
//! replaced transactions; the client's own typed-data signature is checked as the vault would;
//! withdrawals the vault refuses are set aside without holding up the others.

use crate::common;

use std::time::{Duration, Instant};

use alloy::primitives::{Address as ChainAddress, U256};
use alloy::signers::local::PrivateKeySigner;
use common::chain::{BackgroundMiner, ETH_UNIT, USDC_UNIT};
use common::vault_venue::{deposit_body, native_withdrawal_digest, signed_withdrawal_body, VaultVenue};
use dexd_crypto::checksummed;
use dexd_custody::vault::venue_address;
use serde_json::json;

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
    // The first root on a fresh node waits seconds more than the next (anvil loads its KZG
    // setup at its first blob transaction): the short expiry below is measured from a venue
    // whose roots already come every second.
    venue
        .eventually("the venue's first root recorded", || async {
            let (_, custody) = venue.get("/account/custody", &[]).await;
            custody["roots"]["newestVenueRoot"].is_u64()
        })
        .await;
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

/// Moves the chain's clock ten minutes ahead of the wall clock and waits until the venue has
/// seen it: a root committed at the chain's new time (the newest root is then ten minutes ahead).
async fn ten_minutes_ahead_and_seen(venue: &VaultVenue) {
    let newest_root = || async {
        let (_, custody) = venue.get("/account/custody", &[]).await;
        custody["roots"]["newestVenueRoot"].as_u64()
    };
    venue
        .eventually("a first root recorded", || async { newest_root().await.is_some() })
        .await;
    venue.chain.advance_time(600).await;
    let ahead = newest_root().await.unwrap() + 2;
    venue
        .eventually("a root committed on the chain's new time", || async {
            newest_root().await.is_some_and(|newest| newest >= ahead)
        })
        .await;
}

/// A chain whose block times run ahead of the wall clock (by minutes here, as on a devnet that
/// moves its time) once delayed every later root until the wall clock caught up, and with it
/// every withdrawal. Roots are due by the chain's clock now.
#[tokio::test]
async fn a_chain_clock_ahead_of_the_wall_clock_does_not_hold_roots_back() {
    let (venue, alice) = VaultVenue::start_with_alice_funded(2).await;
    ten_minutes_ahead_and_seen(&venue).await;
    venue.withdraw_usdc_and_see_it_paid(&alice, "10", 10 * USDC_UNIT).await;
}

/// A request made with a key was signed to expire a few seconds after the wall clock, while the
/// engine judged it by the venue's clock, which follows a chain whose blocks run ahead: on such
/// a chain every key's order, cancel and TWAP was refused as expired. The venue signs by its
/// own clock now.
#[tokio::test]
async fn a_keys_requests_apply_on_a_chain_whose_clock_runs_ahead() {
    let (venue, alice) = VaultVenue::start_with_alice_funded(2).await;
    ten_minutes_ahead_and_seen(&venue).await;
    let (status, placed) = venue
        .post(
            "/order/addOrder",
            json!({"symbol": "WBTC/USDC", "type": "limit", "direction": "buy", "price": "10000", "amount": "0.001",
                   "privateKey": common::vault_venue::key_of(&alice)}),
        )
        .await;
    assert_eq!(status, 200, "{placed}");
    let order_id = placed["order"]["orderId"].clone();
    let (status, cancelled) = venue
        .post(
            "/order/cancelOrder",
            json!({"symbol": "WBTC/USDC", "orderId": order_id, "privateKey": common::vault_venue::key_of(&alice)}),
        )
        .await;
    assert_eq!(
        (status, &cancelled["order"]["status"]),
        (200, &json!("cancelled")),
        "{cancelled}"
    );
}

/// Roots committed more often than one takes to be mined and confirmed (an interval shorter
/// than the confirmations, here a block every 20 ms and a root due every 50 ms) were each
/// recorded in the same poll as the next fell due: roots took every turn of the payer and no
/// withdrawal was ever paid. Roots and withdrawals take turns now.
#[tokio::test]
async fn roots_due_faster_than_they_confirm_never_take_every_turn_from_withdrawals() {
    let venue = VaultVenue::start_with_roots(50).await;
    let alice = venue.chain.users[0].clone();
    let _miner = BackgroundMiner::start_every(venue.chain.node.clone(), Duration::from_millis(20));
    venue
        .fund(&alice, Some(venue.chain.usdc), 100 * USDC_UNIT, "USDC", "100")
        .await;
    venue.withdraw_usdc_and_see_it_paid(&alice, "10", 10 * USDC_UNIT).await;
    venue.assert_conserved().await;
}
