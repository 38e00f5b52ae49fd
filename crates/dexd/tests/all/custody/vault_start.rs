//! What a vault chain checks when it starts: its journal belongs to this vault, each token's
//! decimals on chain are the configuration's, and an empty journal is never started against a
//! vault that has already paid withdrawals. Each refusal is the real dexd binary exiting
//! non-zero with the facts named, on a real node (anvil) with the vault deployed.

use crate::common;

use std::time::Duration;

use common::chain::{NodeProxy, TestChain, ETH_UNIT};
use common::vault_venue::{address_of, deposit_body, VaultVenue};
use dexd_crypto::checksummed;
use dexd_custody::vault::venue_address;

#[tokio::test]
async fn a_data_directory_is_bound_to_its_vault_and_refused_against_another() {
    let mut venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    venue.fund(&alice, None, ETH_UNIT, "ETH", "1").await;
    venue.kill();
    // The same data directory, with the configuration naming another vault.
    let vault = checksummed(&venue_address(&venue.chain.vault));
    let other = "0x00000000000000000000000000000000000de7d1";
    venue.edit_config(&vault, other);
    let said = venue.refused_start().await;
    assert!(
        said.contains(&vault) && said.to_lowercase().contains(other),
        "both vaults are named: {said}"
    );
    // Back on its own vault, it starts and the balance is there.
    venue.edit_config(other, &vault);
    venue.restart();
    assert_eq!(venue.balance(&alice, "ETH").await["total"], "1");
}

#[tokio::test]
async fn a_token_whose_decimals_differ_from_the_configuration_is_refused_at_start() {
    let mut venue = VaultVenue::start().await;
    venue.kill();
    venue.remove_data();
    // USDC is a 6-decimal token on chain; the configuration says 9.
    venue.edit_config("decimals = 6", "decimals = 9");
    let said = venue.refused_start().await;
    let usdc = checksummed(&venue_address(&venue.chain.usdc));
    assert!(
        said.contains("asset USDC has 9 decimals in the configuration")
            && said.contains(&format!("its token {usdc} has 6 on chain")),
        "the asset, the token and both figures are named: {said}"
    );
    // The native asset is 18 decimals on every EVM chain.
    venue.edit_config("decimals = 9", "decimals = 6");
    venue.edit_config("decimals = 18", "decimals = 12");
    let said = venue.refused_start().await;
    assert!(
        said.contains("asset ETH has 12 decimals in the configuration, and the chain's native asset has 18"),
        "{said}"
    );
    venue.edit_config("decimals = 12", "decimals = 18");
    venue.restart();
    let (status, body) = venue.get("/account/assetsInfo", &[]).await;
    assert_eq!(status, 200, "{body}");
}

#[tokio::test]
async fn an_empty_journal_against_a_vault_that_paid_withdrawals_is_refused_at_start() {
    let mut venue = VaultVenue::start().await;
    let alice = venue.chain.users[0].clone();
    venue.fund(&alice, None, ETH_UNIT, "ETH", "1").await;
    // A fresh journal against a vault that has only taken deposits starts: it credits them.
    venue.kill();
    venue.remove_data();
    venue.restart();
    venue.wait_for_available(&alice, "ETH", "1").await;
    let (status, body) = venue
        .post("/portfolio/withdraw", deposit_body(&alice, "ETH", "0.25"))
        .await;
    assert_eq!(status, 200, "{body}");
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    // Once the vault has paid, a fresh journal would owe Alice the 0.25 again.
    venue.kill();
    let data = venue.folder.path().join("data");
    let kept = venue.folder.path().join("kept");
    std::fs::rename(&data, &kept).unwrap();
    let said = venue.refused_start().await;
    let vault = checksummed(&venue_address(&venue.chain.vault));
    assert!(
        said.contains("the journal is empty") && said.contains(&vault) && said.contains("already paid withdrawals"),
        "{said}"
    );
    // The journal restored from its backup starts, with Alice's balance after her withdrawal.
    std::fs::remove_dir_all(&data).ok();
    std::fs::rename(&kept, &data).unwrap();
    venue.restart();
    assert_eq!(venue.balance(&alice, "ETH").await["total"], "0.75");
    assert_eq!(
        address_of(&alice),
        venue.transfers(&alice, "withdraw").await[0]["account"]
    );
}

#[tokio::test]
async fn a_mismatch_found_once_the_node_is_back_halts_custody_and_nothing_is_credited() {
    let chain = TestChain::start().await;
    let proxy = NodeProxy::start(chain.anvil.endpoint().trim_start_matches("http://").to_string()).await;
    let mut venue = VaultVenue::start_on(chain, &proxy.url);
    venue.kill();
    venue.remove_data();
    venue.edit_config("decimals = 6", "decimals = 9");
    // The node is away at start: the venue starts (trading needs no node), and custody waits.
    proxy.down().await;
    venue.restart();
    let alice = venue.chain.users[0].clone();
    venue.deposit_refused_as_chain_unavailable(&alice, "ETH", "0.5").await;
    // A deposit straight from the wallet meanwhile; back, the node shows the mismatch, and
    // custody halts before crediting anything.
    venue.deposit_from_wallet(&alice, None, ETH_UNIT).await;
    proxy.up();
    let reason = venue.wait_for_halt().await;
    assert!(
        reason.contains("asset USDC has 9 decimals in the configuration"),
        "{reason}"
    );
    venue.chain.mine(5).await;
    assert_eq!(venue.balance(&alice, "ETH").await["total"], "0");
    venue.deposit_refused_as_chain_unavailable(&alice, "ETH", "0.5").await;
}

#[tokio::test]
async fn with_finalized_confirmations_deposits_and_payments_wait_for_finality() {
    // anvil finalizes the block two epochs back: 8 blocks with 4 slots an epoch.
    let chain = TestChain::start_with(&["--slots-in-an-epoch", "4"]).await;
    let node_url = chain.anvil.endpoint();
    let mut venue = VaultVenue::start_on(chain, &node_url);
    venue.kill();
    venue.remove_data();
    venue.edit_config("confirmations = 2", "confirmations = \"finalized\"");
    // No roots while the test counts blocks (a root's transaction mines one).
    venue.edit_config("root_interval_ms = 1000", "root_interval_ms = 86400000");
    venue.restart();
    let (_, info) = venue.get("/account/assetsInfo", &[]).await;
    assert_eq!(info["custody"]["confirmations"], "finalized", "{info}");
    let alice = venue.chain.users[0].clone();
    venue.deposit_from_wallet(&alice, None, ETH_UNIT).await;
    // Four blocks on top would do for a depth of 2, not for finality.
    venue.chain.mine(4).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(
        venue.balance(&alice, "ETH").await["total"],
        "0",
        "credited before finality"
    );
    venue.chain.mine(8).await;
    venue.wait_for_available(&alice, "ETH", "1").await;
    // A payment is confirmed only once its block is finalized too. It waits for a root, which
    // is recorded, and final, only once finalized: blocks come while the test waits.
    venue.kill();
    venue.edit_config("root_interval_ms = 86400000", "root_interval_ms = 1000");
    venue.restart();
    let (status, body) = venue
        .post("/portfolio/withdraw", deposit_body(&alice, "ETH", "0.25"))
        .await;
    assert_eq!(status, 200, "{body}");
    let sent = || async {
        let withdrawals = venue.transfers(&alice, "withdraw").await;
        withdrawals[0]["status"].as_str().unwrap().to_string()
    };
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    while sent().await != "sent" {
        assert!(std::time::Instant::now() < deadline, "the withdrawal was never sent");
        venue.chain.mine(1).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    venue.chain.mine(4).await;
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(sent().await, "sent", "confirmed before finality");
    venue.wait_for_newest_withdrawal_confirmed(&alice).await;
    venue.assert_conserved().await;
}
