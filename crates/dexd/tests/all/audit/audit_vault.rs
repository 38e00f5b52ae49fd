//! `dexd audit` (the real binary) watching a venue on a real node (anvil) and vault:
//!
//! - a root forged with the operator's key (leaves unlike the journal's) is vetoed by the
//!   auditor acting as guardian within the challenge period, and the venue goes on: its later
//!   roots check and a withdrawal is paid;
//! - the venue SIGKILLed right after committing a root no client fetched: after the freeze,
//!   every account exits in full from the auditor's directory (`dexd exit --audit-dir`);
//! - a root whose journal the auditor cannot get is vetoed as unverified from half its challenge
//!   period;
//! - a withdrawal asked for on chain and left unserved past its deadline is reported, and the
//!   guardian freezes the vault;
//! - a contract account's approval that lapses after its withdrawal is no failure (checked at
//!   the block the venue asked).
//! - with three guardians, the one that runs an auditor, reading the venue only through a proxy
//!   that trickles every answer, vetoes the root it could never verify;
//! - on a chain whose blocks run ahead of the wall clock, the venue journals a deposit no earlier
//!   than its block, and a credit dated before its block is a failure.

use crate::common;

use std::time::Duration;

use alloy::primitives::{FixedBytes, U256};
use alloy::sol_types::SolCall;
use common::auditor::{free_local_address, RunningAuditor};
use common::chain::{BackgroundMiner, TEST_ROOT_TERMS, USDC_UNIT, WBTC_UNIT};
use common::vault_calls::{send, view};
use common::vault_venue::{address_of, key_of, VaultVenue};
use dexd_custody::vault::DexdVaultV2;
use serde_json::json;

pub(super) const GUARDIAN_KEY_ENV: &str = "DEXD_TEST_GUARDIAN_KEY";

/// The vault's root of `epoch`.
pub(super) async fn vault_root(venue: &VaultVenue, epoch: u64) -> DexdVaultV2::LiabilityRoot {
    view(
        &venue.chain,
        DexdVaultV2::liabilityRootCall {
            epoch: U256::from(epoch),
        },
    )
    .await
}

pub(super) async fn root_count(venue: &VaultVenue) -> u64 {
    view(&venue.chain, DexdVaultV2::rootCountCall {}).await.saturating_to()
}

/// The auditor's arguments for the venue's vault, checking roots with one confirmation.
pub(super) fn vault_arguments(venue: &VaultVenue) -> Vec<String> {
    vec![
        "--rpc-url".into(),
        venue.chain.anvil.endpoint(),
        "--vault".into(),
        venue.chain.vault.to_string(),
        "--confirmations".into(),
        "1".into(),
    ]
}

fn strings(arguments: &[String]) -> Vec<&str> {
    arguments.iter().map(String::as_str).collect()
}

/// Starts `dexd audit` on `venue`'s vault as the guardian whose key is `guardian_key`, reading
/// the journal from `journal_url` (the venue, or something in front of it), with `more`
/// arguments.
pub(super) fn start_guardian(
    venue: &VaultVenue,
    journal_url: &str,
    directory: &std::path::Path,
    guardian_key: &str,
    more: &[String],
) -> RunningAuditor {
    let mut arguments = vault_arguments(venue);
    arguments.extend(["--guardian-key-env".into(), GUARDIAN_KEY_ENV.into()]);
    arguments.extend(more.iter().cloned());
    RunningAuditor::start(
        journal_url,
        venue.chain.chain_id,
        directory,
        &strings(&arguments),
        &[(GUARDIAN_KEY_ENV, guardian_key)],
    )
}

/// Root 0, which `auditor` (a guardian) cannot verify, waits early in its challenge period of
/// `challenge_period_s` (no verdict, no veto), and from half of it is vetoed as unverified,
/// whatever the reason; returns the auditor's line.
async fn vetoed_as_unverified_from_half_its_period(
    venue: &VaultVenue,
    auditor: &RunningAuditor,
    challenge_period_s: u64,
) -> String {
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        auditor.output().iter().all(|line| !line.starts_with("root 0 ")),
        "{:#?}",
        auditor.output()
    );
    assert!(!vault_root(venue, 0).await.vetoed);
    venue.chain.advance_time(challenge_period_s / 2 + 1).await;
    let line = auditor
        .wait_for_line("the root vetoed as unverified", Duration::from_secs(30), |line| {
            line.starts_with("root 0 ")
        })
        .await;
    assert!(line.starts_with("root 0 UNVERIFIED vetoed 0x"), "{line}");
    assert!(vault_root(venue, 0).await.vetoed, "the veto is in the vault");
    line
}

/// Waits until the vault holds a root of the venue's at or past `position` (of the journal);
/// returns its epoch.
async fn wait_for_root_past(venue: &VaultVenue, position: u64) -> u64 {
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    loop {
        let count = root_count(venue).await;
        if count > 0 && vault_root(venue, count - 1).await.journalSequence >= position {
            return count - 1;
        }
        assert!(std::time::Instant::now() < deadline, "no root past {position} in time");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_forged_root_is_vetoed_by_an_auditor_as_guardian_and_the_venue_goes_on() {
    // Thirty seconds to veto; time is moved on only after the veto.
    const CHALLENGE_PERIOD_S: u64 = 30;
    let (venue, alice) = VaultVenue::start_with_alice_funded(CHALLENGE_PERIOD_S).await;
    // Blocks keep coming, so that roots get their confirmations.
    let _miner = BackgroundMiner::start(venue.chain.node.clone());
    let directory = tempfile::tempdir().unwrap();
    let metrics_address = free_local_address();
    let guardian_key = key_of(&venue.chain.guardian);
    let auditor = start_guardian(
        &venue,
        &venue.client().base_url,
        directory.path(),
        &guardian_key,
        &["--metrics-listen".into(), metrics_address.to_string()],
    );
    auditor
        .wait_for_line("the venue's first root checked", Duration::from_secs(60), |line| {
            line.starts_with("root 0 ok ")
        })
        .await;

    // The stolen key's root: at a position the journal has, the vault's deposits and tokens,
    // nobody owed anything (so no holdings check can refuse it).
    let planted_epoch = root_count(&venue).await;
    let newest = vault_root(&venue, planted_epoch - 1).await;
    let mut tokens = view(&venue.chain, DexdVaultV2::depositedTokensCall {}).await;
    tokens.sort();
    let plant = DexdVaultV2::commitRootWithDataCall {
        root: FixedBytes([0x66; 32]),
        journalSequence: newest.journalSequence,
        depositCount_: U256::from(newest.depositCount),
        totals: vec![U256::ZERO; tokens.len()],
        tokens,
        data: crate::common::vault_calls::TEST_ROOT_DATA.to_vec().into(),
    };
    send(&venue.chain, &venue.chain.operator, plant.abi_encode()).await;
    let vetoed_line = auditor
        .wait_for_line("the planted root vetoed", Duration::from_secs(30), |line| {
            line.starts_with(&format!("root {planted_epoch} "))
        })
        .await;
    assert!(
        vetoed_line.starts_with(&format!("root {planted_epoch} MISMATCH vetoed 0x")),
        "{vetoed_line}"
    );
    assert!(vetoed_line.contains("where the replay's is"), "{vetoed_line}");
    assert!(
        vault_root(&venue, planted_epoch).await.vetoed,
        "the veto is in the vault"
    );

    // The venue goes on: Alice's withdrawal is paid through a later root of the venue's, which
    // the auditor finds good.
    let response = reqwest::Client::new()
        .post(format!("{}/portfolio/withdraw", venue.client().base_url))
        .json(
            &json!({"chainId": venue.chain_id(), "from": address_of(&alice), "symbol": "USDC",
            "quantity": "40", "privateKey": key_of(&alice)}),
        )
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let debited_at: u64 = response.headers()["x-dexd-sequence"].to_str().unwrap().parse().unwrap();
    let covering = wait_for_root_past(&venue, debited_at).await;
    assert!(covering > planted_epoch);
    venue.chain.advance_time(CHALLENGE_PERIOD_S + 1).await;
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    assert_eq!(
        venue.usdc_in_wallet(&alice).await,
        U256::from((1_000_000 - 100 + 40) * USDC_UNIT)
    );
    auditor
        .wait_for_line("the covering root checked", Duration::from_secs(60), |line| {
            line.starts_with(&format!("root {covering} "))
        })
        .await;
    let output = auditor.output();
    let roots: Vec<&String> = output.iter().filter(|line| line.starts_with("root ")).collect();
    for line in &roots {
        let planted = line.starts_with(&format!("root {planted_epoch} "));
        assert_eq!(line.contains(" ok "), !planted, "{output:#?}");
    }
    venue.assert_conserved().await;

    // Its metrics say the same.
    let metrics = reqwest::get(format!("http://{metrics_address}/metrics"))
        .await
        .unwrap()
        .text()
        .await
        .unwrap();
    let sample = |name: &str| {
        metrics
            .lines()
            .find(|line| line.starts_with(name))
            .and_then(|line| line.rsplit(' ').next())
            .and_then(|value| value.parse::<f64>().ok())
            .unwrap_or_else(|| panic!("{name} in {metrics}"))
    };
    assert_eq!(sample("dexd_audit_roots_checked_total{verdict=\"mismatch\"}"), 1.0);
    assert!(sample("dexd_audit_roots_checked_total{verdict=\"ok\"}") >= (roots.len() - 1) as f64);
    assert!(sample("dexd_audit_position") >= debited_at as f64);
    assert_eq!(sample("dexd_audit_failures"), 0.0);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_venue_killed_right_after_a_root_leaves_every_account_an_exit_from_an_auditors_copy() {
    // A root every five seconds: the venue is killed between two.
    let mut venue = VaultVenue::start_with_roots(5_000).await;
    let [alice, bob, carol] = [0, 1, 2].map(|index| venue.chain.users[index].clone());
    venue
        .fund(&alice, Some(venue.chain.wbtc), 2 * WBTC_UNIT, "WBTC", "2")
        .await;
    venue
        .fund(&bob, Some(venue.chain.usdc), 100_000 * USDC_UNIT, "USDC", "100000")
        .await;
    venue
        .fund(&carol, Some(venue.chain.usdc), 7 * USDC_UNIT, "USDC", "7")
        .await;
    let directory = tempfile::tempdir().unwrap();
    let auditor = RunningAuditor::start(
        &venue.client().base_url,
        venue.chain.chain_id,
        directory.path(),
        &strings(&vault_arguments(&venue)),
        &[],
    );
    // Alice sells Bob 1 WBTC; a resting order of hers stays on the book.
    let order = |account: &alloy::signers::local::PrivateKeySigner, direction: &str, price: &str| {
        json!({"symbol": "WBTC/USDC", "type": "limit", "direction": direction, "price": price, "amount": "1",
            "privateKey": key_of(account)})
    };
    let (status, placed) = venue.post("/order/addOrder", order(&alice, "sell", "60000")).await;
    assert_eq!(status, 200, "{placed}");
    let (status, taken) = venue.post("/order/addOrder", order(&bob, "buy", "60000")).await;
    assert_eq!((status, taken["trades"].as_array().unwrap().len()), (200, 1), "{taken}");
    let (status, resting) = venue.post("/order/addOrder", order(&alice, "sell", "70000")).await;
    assert_eq!(status, 200, "{resting}");
    let chain_id: u64 = venue.chain_id().parse().unwrap();
    let traded_through =
        common::journal_end::journal_end(&reqwest::Client::new(), &venue.client().base_url, chain_id).await;
    // The next root covers the trades; once the auditor has the journal up to it, the venue is
    // killed: no client ever asked for its leaves or proofs.
    let last_epoch = wait_for_root_past(&venue, traded_through).await;
    let last_root = vault_root(&venue, last_epoch).await;
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while auditor.checked_through() < last_root.journalSequence {
        assert!(std::time::Instant::now() < deadline, "the auditor did not keep up");
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    venue.kill();
    assert_eq!(
        root_count(&venue).await,
        last_epoch + 1,
        "no root after the one waited for"
    );
    venue.chain.mine(2).await;
    let checked = auditor
        .wait_for_line("the last root checked", Duration::from_secs(60), |line| {
            line.starts_with(&format!("root {last_epoch} "))
        })
        .await;
    assert!(checked.starts_with(&format!("root {last_epoch} ok ")), "{checked}");

    // Nobody commits a root again: after the root's maximal age anyone freezes the vault, and
    // its exit root is the last one.
    venue.chain.advance_time(TEST_ROOT_TERMS.max_root_age_s + 1).await;
    send(&venue.chain, &carol, DexdVaultV2::freezeCall {}.abi_encode()).await;
    let exit_epoch: u64 = view(&venue.chain, DexdVaultV2::exitEpochCall {}).await.saturating_to();
    assert_eq!(exit_epoch, last_epoch);
    let audit_dir = directory.path().to_str().unwrap().to_string();
    let fees = "0x000000000000000000000000000000000000fee1";
    for (who, account) in [
        ("alice", address_of(&alice)),
        ("bob", address_of(&bob)),
        ("carol", address_of(&carol)),
        ("fees", fees.to_string()),
    ] {
        let (paid, output, error) = venue.dexd_exit(&["--audit-dir", &audit_dir, "--account", &account], &carol);
        assert!(paid, "{who}: {output} {error}");
    }
    // Every account left in full: the vault owes and holds nothing.
    assert_eq!(venue.chain.vault_balance(Some(venue.chain.usdc)).await, U256::ZERO);
    assert_eq!(venue.chain.vault_balance(Some(venue.chain.wbtc)).await, U256::ZERO);
    assert_eq!(
        venue.usdc_in_wallet(&carol).await,
        U256::from(1_000_000 * USDC_UNIT),
        "Carol's 7 USDC back"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_whose_journal_is_withheld_is_vetoed_as_unverified_from_half_its_challenge_period() {
    const CHALLENGE_PERIOD_S: u64 = 30;
    let (venue, _alice) = VaultVenue::start_with_alice_funded(CHALLENGE_PERIOD_S).await;
    let _miner = BackgroundMiner::start(venue.chain.node.clone());
    wait_for_root_past(&venue, 1).await;
    // The auditor is shown no journal at all (an address where nothing listens).
    let nowhere = format!("http://{}", free_local_address());
    let directory = tempfile::tempdir().unwrap();
    let guardian_key = key_of(&venue.chain.guardian);
    let auditor = start_guardian(&venue, &nowhere, directory.path(), &guardian_key, &[]);
    vetoed_as_unverified_from_half_its_period(&venue, &auditor, CHALLENGE_PERIOD_S).await;
}

/// The operator keeps an account in by doing nothing: the venue stops (here it is killed) and
/// never serves the withdrawal the account asked the vault for. Once the request is past its
/// deadline the guardian's auditor reports it and freezes the vault, so every account exits.
#[tokio::test]
async fn a_request_the_venue_leaves_unserved_is_reported_and_the_guardian_freezes_the_vault() {
    // Thirty seconds to veto: the guardian verifies the honest root well within half of it.
    let (mut venue, alice) = VaultVenue::start_with_alice_funded(30).await;
    let _miner = BackgroundMiner::start(venue.chain.node.clone());
    wait_for_root_past(&venue, 1).await;
    let directory = tempfile::tempdir().unwrap();
    let guardian_key = key_of(&venue.chain.guardian);
    let auditor = start_guardian(&venue, &venue.client().base_url, directory.path(), &guardian_key, &[]);
    auditor
        .wait_for_line("the first root checked", Duration::from_secs(60), |line| {
            line.starts_with("root 0 ok")
        })
        .await;
    venue.kill();
    let request = DexdVaultV2::requestWithdrawalCall {
        token: venue.chain.usdc,
        amount: alloy::primitives::U256::from(40 * USDC_UNIT),
    };
    send(&venue.chain, &alice, request.abi_encode()).await;
    // Before the deadline nothing is reported.
    tokio::time::sleep(Duration::from_secs(2)).await;
    assert!(
        auditor.output().iter().all(|line| !line.starts_with("request ")),
        "{:#?}",
        auditor.output()
    );
    venue.chain.advance_time(TEST_ROOT_TERMS.request_period_s + 5).await;
    let line = auditor
        .wait_for_line("the overdue request reported", Duration::from_secs(60), |line| {
            line.starts_with("request 0 ")
        })
        .await;
    assert!(line.starts_with("request 0 OVERDUE frozen 0x"), "{line}");
    assert!(line.contains("never journaled"), "{line}");
    assert!(
        view(&venue.chain, DexdVaultV2::frozenCall {}).await,
        "the vault is frozen"
    );
}

/// A contract account whose approval lapses after the venue took its withdrawal (its owner turns
/// it off, or it was only ever valid until some time): the auditor asks the vault at the block
/// the venue asked (the line's `approvedAtBlock`), so the lapse is no failure and the roots past
/// the withdrawal check. Asked at the chain's latest state, as before, a third party could make
/// every honest root after its withdrawal a mismatch.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_contract_accounts_approval_that_lapses_after_its_withdrawal_is_no_failure() {
    use alloy::signers::SignerSync;
    use common::chain::ETH_UNIT;
    use dexd_custody::deploy;
    use dexd_custody::vault::{venue_address, DexdVault};

    let (venue, _alice) = VaultVenue::start_with_alice_funded(30).await;
    let _miner = BackgroundMiner::start(venue.chain.node.clone());
    let node = &venue.chain.node;
    let owner = venue.chain.users[2].clone();
    let wallet = deploy::deploy_fickle_wallet(node, &venue.chain.deployer, owner.address(), (0, 0))
        .await
        .unwrap()
        .address;
    deploy::send_native(node, &owner, wallet, U256::from(ETH_UNIT))
        .await
        .unwrap();
    let deposit = DexdVault::depositNativeCall {}.abi_encode();
    deploy::execute_from_smart_wallet(node, &owner, wallet, (venue.chain.vault, U256::from(ETH_UNIT), deposit))
        .await
        .unwrap();
    let address = dexd_crypto::checksummed(&venue_address(&wallet));
    venue
        .eventually("the wallet's deposit credited", || async {
            let (_, body) = venue.get("/account/assetBalances", &[("account", &address)]).await;
            common::balance_in(&body, "ETH")["available"] == "1"
        })
        .await;
    let expiry_ms = dexd_store::now_ms() + 600_000;
    let digest = common::vault_venue::native_withdrawal_digest(&venue, wallet, ETH_UNIT / 10, 78, expiry_ms);
    let signature = owner.sign_hash_sync(&digest).unwrap().as_bytes();
    let (status, body) = venue
        .post(
            "/portfolio/withdraw",
            json!({"from": address, "symbol": "ETH", "quantity": "0.1", "nonce": "78",
                   "expiry": expiry_ms.to_string(), "signature": format!("0x{}", alloy::hex::encode(signature))}),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    // The journal line records where the venue asked.
    let base_url = venue.client().base_url;
    let page = reqwest::get(format!(
        "{base_url}/audit/journal?chainId={}&from=1",
        venue.chain.chain_id
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    let line: serde_json::Value = page
        .lines()
        .map(|line| serde_json::from_str::<serde_json::Value>(line).unwrap())
        .find(|line| line["command"]["type"] == "requestWithdrawal" && line["command"]["account"] == address)
        .expect("the withdrawal is journaled");
    let asked_at = line["authorization"]["approvedAtBlock"]
        .as_u64()
        .expect("approvedAtBlock");
    let position = line["sequence"].as_u64().unwrap();

    // The owner turns the wallet's approval off: at the latest block the vault now refuses it.
    let never = deploy::FickleWallet::setModeCall {
        mode_: 3,
        until_: U256::ZERO,
    };
    deploy::send_and_wait(
        node,
        &owner,
        alloy::primitives::TxKind::Call(wallet),
        never.abi_encode(),
        U256::ZERO,
    )
    .await
    .unwrap();
    let signature_bytes = alloy::primitives::Bytes::copy_from_slice(&signature);
    let chain = &venue.chain;
    let authorized = |block: alloy::eips::BlockId| {
        let call = DexdVault::isAuthorizedCall {
            account: wallet,
            digest,
            signature: signature_bytes.clone(),
        };
        async move { chain.node.view(chain.vault, call, block).await.unwrap() }
    };
    assert!(
        !authorized(alloy::eips::BlockId::latest()).await,
        "the approval has lapsed"
    );
    assert!(
        authorized(alloy::eips::BlockId::number(asked_at)).await,
        "it held where the venue asked"
    );

    let epoch = wait_for_root_past(&venue, position).await;
    let directory = tempfile::tempdir().unwrap();
    let arguments = vault_arguments(&venue);
    let auditor = RunningAuditor::start(
        &base_url,
        venue.chain.chain_id,
        directory.path(),
        &strings(&arguments),
        &[],
    );
    let line = auditor
        .wait_for_line(
            "the root past the withdrawal checked",
            Duration::from_secs(60),
            |line| line.starts_with(&format!("root {epoch} ")) || line.starts_with("FAIL "),
        )
        .await;
    assert!(
        line.starts_with(&format!("root {epoch} ok")),
        "{line}\n{:#?}",
        auditor.output()
    );
}

/// A confirmation of a withdrawal names the transaction that paid it; one that names another
/// (what a venue would journal to confirm a second debit of an id the vault paid long ago) is a
/// `FAIL` at its line: the vault's `Withdrawn` event must come from that transaction.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_withdrawal_confirmed_by_a_transaction_that_did_not_pay_it_is_a_failure() {
    let (venue, alice) = VaultVenue::start_with_alice_funded(TEST_ROOT_TERMS.challenge_period_s).await;
    let _miner = BackgroundMiner::start(venue.chain.node.clone());
    let (status, body) = venue
        .post(
            "/portfolio/withdraw",
            common::vault_venue::deposit_body(&alice, "USDC", "10"),
        )
        .await;
    assert_eq!(status, 200, "{body}");
    venue.wait_for_every_withdrawal_confirmed(&alice).await;
    let mut journal = ServedJournal::read(&venue).await;
    // The deposit's transaction, named as the payment's instead.
    let deposit_tx = journal
        .commands()
        .find_map(|line| match line.command {
            dexd_core::Command::CreditChainDeposit(deposit) => Some(deposit.tx_hash),
            _ => None,
        })
        .expect("alice's deposit");
    let mut line = journal
        .command_where(|command| matches!(command, dexd_core::Command::ConfirmWithdrawals { .. }))
        .expect("the withdrawal's confirmation");
    let dexd_core::Command::ConfirmWithdrawals { tx_hash, .. } = &mut line.command else {
        unreachable!()
    };
    *tx_hash = deposit_tx;
    journal.replace(&line);
    assert_eq!(
        journal.first_failure(&venue).await,
        format!(
            "FAIL {} a withdrawal confirmed as paid by a transaction that did not pay it",
            line.sequence
        )
    );
}

/// A venue's journal as `/audit/journal` serves it, to forge and serve again.
struct ServedJournal {
    lines: Vec<String>,
    end: u64,
    messages: dexd_crypto::RequestMessages,
}

impl ServedJournal {
    /// The venue's whole journal.
    async fn read(venue: &VaultVenue) -> ServedJournal {
        let base_url = venue.client().base_url;
        let response = reqwest::get(format!(
            "{base_url}/audit/journal?chainId={}&from=1",
            venue.chain.chain_id
        ))
        .await
        .unwrap();
        let end: u64 = response.headers()["x-dexd-journal-end"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let lines: Vec<String> = response.text().await.unwrap().lines().map(str::to_string).collect();
        let Some(dexd_core::Command::Configure(configuration)) = parsed(&lines[0]).map(|line| line.command) else {
            panic!("the journal starts with its configuration")
        };
        let messages = dexd_crypto::RequestMessages::new(&configuration).unwrap();
        ServedJournal { lines, end, messages }
    }

    /// Its command lines, parsed.
    fn commands(&self) -> impl Iterator<Item = dexd::audit::format::CommandLine> + '_ {
        self.lines.iter().filter_map(|line| parsed(line))
    }

    /// The first command line whose command `wanted` accepts.
    fn command_where(&self, wanted: impl Fn(&dexd_core::Command) -> bool) -> Option<dexd::audit::format::CommandLine> {
        self.commands().find(|line| wanted(&line.command))
    }

    /// Puts `line` in place of the line at its position, rendered as a venue that changed it
    /// would serve it: its fields and bytes agree, its signature is the original one.
    fn replace(&mut self, line: &dexd::audit::format::CommandLine) {
        let position = self
            .lines
            .iter()
            .position(|served| parsed(served).is_some_and(|served| served.sequence == line.sequence))
            .expect("the line's position is served");
        self.lines[position] = dexd::audit::format::command_line(
            line.sequence,
            line.time_ms,
            &line.command,
            line.journal_authorization().as_ref(),
            &self.messages,
        )
        .to_string();
    }

    /// Serves the journal as it now is to an auditor of `venue`'s chain and vault: the first
    /// `FAIL` line it prints.
    async fn first_failure(self, venue: &VaultVenue) -> String {
        let forged = super::journal::serve_journal(self.lines, self.end).await;
        let directory = tempfile::tempdir().unwrap();
        let auditor = RunningAuditor::start(
            &forged,
            venue.chain.chain_id,
            directory.path(),
            &strings(&vault_arguments(venue)),
            &[],
        );
        auditor
            .wait_for_line("the forged line reported", Duration::from_secs(60), |line| {
                line.starts_with("FAIL ")
            })
            .await
    }
}

/// A served line's command, or `None` for a state hash's line.
fn parsed(line: &str) -> Option<dexd::audit::format::CommandLine> {
    match dexd::audit::format::parse_line(line).unwrap() {
        dexd::audit::format::JournalLine::Command(command) => Some(*command),
        dexd::audit::format::JournalLine::StateHash { .. } => None,
    }
}

/// Serves `upstream` at a local address, answering a byte every 200 ms: a venue that keeps its
/// pages coming, too slowly for a guardian ever to read one whole.
async fn slow_proxy(upstream: std::net::SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move {
        while let Ok((client, _)) = listener.accept().await {
            tokio::spawn(async move {
                let Ok(server) = tokio::net::TcpStream::connect(upstream).await else {
                    return;
                };
                let (mut client_reads, mut client_writes) = client.into_split();
                let (mut server_reads, mut server_writes) = server.into_split();
                tokio::spawn(async move { tokio::io::copy(&mut client_reads, &mut server_writes).await });
                let mut buffer = [0u8; 4096];
                while let Ok(read) = server_reads.read(&mut buffer).await {
                    if read == 0 {
                        return;
                    }
                    for byte in &buffer[..read] {
                        tokio::time::sleep(Duration::from_millis(200)).await;
                        if client_writes.write_all(&[*byte]).await.is_err() {
                            return;
                        }
                    }
                }
            });
        }
    });
    format!("http://{address}")
}

/// Three guardians, of whom only the third runs an auditor, reading the venue through a proxy
/// that trickles every answer: the root is never verified, and that one guardian vetoes it from
/// half its challenge period. Any one guardian is enough, and a slow venue is not let through.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn one_guardian_of_three_vetoes_a_root_it_reads_only_through_a_slow_proxy() {
    const CHALLENGE_PERIOD_S: u64 = 30;
    let (second, third) = (
        alloy::signers::local::PrivateKeySigner::random(),
        alloy::signers::local::PrivateKeySigner::random(),
    );
    let venue = VaultVenue::start_with_guardians(CHALLENGE_PERIOD_S, vec![second.address(), third.address()]).await;
    let guardians = view(&venue.chain, DexdVaultV2::guardiansCall {}).await;
    assert_eq!(
        guardians,
        vec![venue.chain.guardian.address(), second.address(), third.address()]
    );
    venue
        .chain
        .node
        .raw_request("anvil_setBalance", json!([third.address(), "0x056bc75e2d63100000"]))
        .await
        .unwrap();
    let _miner = BackgroundMiner::start(venue.chain.node.clone());
    wait_for_root_past(&venue, 1).await;

    let venue_address: std::net::SocketAddr = venue.client().base_url.trim_start_matches("http://").parse().unwrap();
    let slow = slow_proxy(venue_address).await;
    let directory = tempfile::tempdir().unwrap();
    let third_key = format!("0x{}", alloy::primitives::hex::encode(third.to_bytes()));
    let auditor = start_guardian(&venue, &slow, directory.path(), &third_key, &[]);
    let line = vetoed_as_unverified_from_half_its_period(&venue, &auditor, CHALLENGE_PERIOD_S).await;
    let veto_hash = line.split(' ').nth(4).unwrap();
    let transaction = venue
        .chain
        .node
        .raw_request("eth_getTransactionByHash", json!([veto_hash]))
        .await
        .unwrap();
    assert_eq!(
        transaction["from"].as_str().unwrap().to_lowercase(),
        format!("{:#x}", third.address()),
        "the third guardian vetoed"
    );
}

/// A chain whose blocks run an hour ahead of the wall clock (a devnet that warps its time): the
/// venue journals its deposit no earlier than the deposit's block, as its clock follows the
/// chain's; a journal whose credit is dated before its block (what a venue with its clock set
/// back, or one that made the deposit up, would serve) is a `FAIL` at that line.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_chain_event_journaled_before_its_block_is_a_failure() {
    let venue = VaultVenue::start_with_challenge_period(TEST_ROOT_TERMS.challenge_period_s).await;
    venue.chain.advance_time(3_600).await;
    let alice = venue.chain.users[0].clone();
    venue
        .fund(&alice, Some(venue.chain.usdc), 100 * USDC_UNIT, "USDC", "100")
        .await;
    let mut journal = ServedJournal::read(&venue).await;
    let mut line = journal
        .command_where(|command| matches!(command, dexd_core::Command::CreditChainDeposit(_)))
        .expect("alice's credit");
    let dexd_core::Command::CreditChainDeposit(deposit) = &line.command else {
        unreachable!()
    };
    let block_number = deposit.block_number;
    let (_, block_time_s) = venue.chain.node.block(block_number).await.unwrap().unwrap();
    let block_time_ms = block_time_s * 1_000;
    assert!(
        block_time_ms > dexd_store::now_ms() + 3_000_000,
        "the chain runs ahead of the wall clock"
    );
    assert!(
        line.time_ms >= block_time_ms,
        "the honest venue journals the credit at {} ms, not before its block's {block_time_ms} ms",
        line.time_ms
    );
    // Dated a minute before its block.
    line.time_ms = block_time_ms - 60_000;
    journal.replace(&line);
    assert_eq!(
        journal.first_failure(&venue).await,
        format!(
            "FAIL {} a chain event journaled at {} ms, before its block {block_number}'s time {block_time_ms} ms",
            line.sequence, line.time_ms
        )
    );
}
