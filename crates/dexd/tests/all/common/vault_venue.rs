//! A dexd binary on a vault chain of the test node: start, restart, requests, and the waits and
//! checks the vault tests share.

use std::time::{Duration, Instant};

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, U256};
use alloy::signers::local::PrivateKeySigner;
use dexd_crypto::checksummed;
use dexd_custody::deploy;
use dexd_custody::vault::venue_address;
use serde_json::{json, Value};

use super::chain::{TestChain, USDC_UNIT};
use super::{BinaryServer, TestServer};

alloy::sol! {
    /// The vault's withdrawal type, written here from the contract's source so that a
    /// client's signature in the tests is made without dexd's code.
    struct Withdrawal {
        address account;
        address token;
        uint256 amount;
        uint256 withdrawalId;
        uint256 expiry;
    }
}

/// A dexd binary serving the test chain, with its data directory and configuration.
pub struct VaultVenue {
    pub chain: TestChain,
    pub folder: tempfile::TempDir,
    pub config: std::path::PathBuf,
    pub server: Option<BinaryServer>,
}

impl VaultVenue {
    pub async fn start() -> VaultVenue {
        let chain = TestChain::start().await;
        let node_url = chain.anvil.endpoint();
        VaultVenue::start_on(chain, &node_url)
    }

    /// Starts dexd on a new test chain, committing a liability root every `root_interval_ms`.
    pub async fn start_with_roots(root_interval_ms: u64) -> VaultVenue {
        let chain = TestChain::start().await;
        let node_url = chain.anvil.endpoint();
        VaultVenue::start_configured(chain, |chain, folder| {
            chain.write_dexd_config_with_roots(folder, &node_url, root_interval_ms)
        })
    }

    /// Starts dexd on a new test chain whose vault gives `challenge_period_s` to veto a root
    /// (long enough for a test to veto in it; the tests move the chain's clock past it).
    pub async fn start_with_challenge_period(challenge_period_s: u64) -> VaultVenue {
        VaultVenue::start_with_guardians(challenge_period_s, Vec::new()).await
    }

    /// Like [`VaultVenue::start_with_challenge_period`], with `more_guardians` after the test
    /// guardian.
    pub async fn start_with_guardians(challenge_period_s: u64, more_guardians: Vec<ChainAddress>) -> VaultVenue {
        let terms = deploy::RootTerms {
            challenge_period_s,
            guardians: more_guardians,
            ..super::chain::TEST_ROOT_TERMS
        };
        let chain = TestChain::start_with_terms(&[], terms).await;
        let node_url = chain.anvil.endpoint();
        VaultVenue::start_on(chain, &node_url)
    }

    /// A venue with this challenge period whose first user (alice) deposited 100 USDC, credited.
    pub async fn start_with_alice_funded(challenge_period_s: u64) -> (VaultVenue, PrivateKeySigner) {
        let venue = VaultVenue::start_with_challenge_period(challenge_period_s).await;
        let alice = venue.chain.users[0].clone();
        venue
            .fund(&alice, Some(venue.chain.usdc), 100 * USDC_UNIT, "USDC", "100")
            .await;
        (venue, alice)
    }

    /// Starts dexd on `chain`, reaching its node at `node_url` (the node itself, or a proxy).
    pub fn start_on(chain: TestChain, node_url: &str) -> VaultVenue {
        VaultVenue::start_configured(chain, |chain, folder| chain.write_dexd_config(folder, node_url))
    }

    /// Starts dexd on `chain` with the configuration `write_config` writes into a new folder.
    fn start_configured(
        chain: TestChain,
        write_config: impl FnOnce(&TestChain, &std::path::Path) -> std::path::PathBuf,
    ) -> VaultVenue {
        let folder = tempfile::tempdir().unwrap();
        let config = write_config(&chain, folder.path());
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
    pub fn restart(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.kill();
        }
        self.server = Some(BinaryServer::start_with(
            &self.folder.path().join("data"),
            Some(&self.config),
        ));
    }

    /// Stops dexd, adds `setting` (a `key = value` line) to the chain's custody section of its
    /// configuration, and starts it again.
    pub fn restart_with_custody_setting(&mut self, setting: &str) {
        self.kill();
        let config = std::fs::read_to_string(&self.config).unwrap();
        let custody = "[chains.custody]\n";
        assert!(config.contains(custody), "{config}");
        std::fs::write(&self.config, config.replace(custody, &format!("{custody}{setting}\n"))).unwrap();
        self.restart();
    }

    /// Starts dexd on the data directory and configuration, expecting it to refuse to start
    /// (exit non-zero within 30 s); returns what it printed.
    pub async fn refused_start(&self) -> String {
        let refused = tokio::process::Command::new(env!("CARGO_BIN_EXE_dexd"))
            .args(["serve", "--listen", "127.0.0.1:0", "--data-dir"])
            .arg(self.folder.path().join("data"))
            .arg("--config")
            .arg(&self.config)
            .kill_on_drop(true)
            .output();
        let output = tokio::time::timeout(Duration::from_secs(30), refused)
            .await
            .expect("dexd started (and kept serving)")
            .unwrap();
        let said = format!(
            "{}{}",
            String::from_utf8_lossy(&output.stdout),
            String::from_utf8_lossy(&output.stderr)
        );
        assert!(!output.status.success(), "dexd started: {said}");
        said
    }

    /// Replaces `from` with `to` in the configuration, which must contain it.
    pub fn edit_config(&self, from: &str, to: &str) {
        let config = std::fs::read_to_string(&self.config).unwrap();
        assert!(config.contains(from), "{from} is not in {config}");
        std::fs::write(&self.config, config.replacen(from, to, 1)).unwrap();
    }

    /// Waits until the chain's crediting is halted; returns the reason.
    pub async fn wait_for_halt(&self) -> String {
        self.eventually("crediting halted", || async {
            let (_, body) = self.get("/account/assetsInfo", &[]).await;
            body["custody"]["crediting"] == "halted"
        })
        .await;
        let (_, info) = self.get("/account/assetsInfo", &[]).await;
        info["custody"]["haltReason"].as_str().unwrap().to_string()
    }

    /// Posts a deposit with the key that must be refused `502 CHAIN_UNAVAILABLE`.
    pub async fn deposit_refused_as_chain_unavailable(&self, account: &PrivateKeySigner, symbol: &str, quantity: &str) {
        let (status, body) = self
            .post("/portfolio/deposit", deposit_body(account, symbol, quantity))
            .await;
        assert_eq!(
            (status, body["error"]["code"].as_str()),
            (502, Some("CHAIN_UNAVAILABLE")),
            "{body}"
        );
    }

    /// Forgets the journal: the next start is on an empty data directory.
    pub fn remove_data(&self) {
        std::fs::remove_dir_all(self.folder.path().join("data")).unwrap();
    }

    pub fn kill(&mut self) {
        if let Some(mut server) = self.server.take() {
            server.kill();
        }
    }

    pub fn client(&self) -> TestServer {
        TestServer::at(&self.server.as_ref().expect("dexd runs").base_url)
    }

    pub fn chain_id(&self) -> String {
        self.chain.chain_id.to_string()
    }

    pub async fn get(&self, path: &str, query: &[(&str, &str)]) -> (u16, Value) {
        let chain_id = self.chain_id();
        let mut full = vec![("chainId", chain_id.as_str())];
        full.extend_from_slice(query);
        self.client().get(path, &full).await
    }

    pub async fn post(&self, path: &str, mut body: Value) -> (u16, Value) {
        body["chainId"] = json!(self.chain_id());
        self.client().post_json(path, body).await
    }

    /// Waits (mining a block now and then) until `ready` holds, for at most 30 s.
    pub async fn eventually<F, Fut>(&self, what: &str, mut ready: F)
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

    /// Posts a request that must be refused with `status` and `code`; returns the answer.
    pub async fn refused(&self, path: &str, body: Value, status: u16, code: &str) -> Value {
        let (answered, answer) = self.post(path, body).await;
        assert_eq!(
            (answered, answer["error"]["code"].as_str()),
            (status, Some(code)),
            "{path}: {answer}"
        );
        answer
    }

    /// Runs `dexd exit` against this chain's vault with `arguments` (a proof file, a venue, an
    /// account, `--freeze`), `sender`'s key in the environment paying the gas; returns whether it
    /// succeeded, its output and its error output.
    pub fn dexd_exit(&self, arguments: &[&str], sender: &PrivateKeySigner) -> (bool, String, String) {
        let output = std::process::Command::new(env!("CARGO_BIN_EXE_dexd"))
            .arg("exit")
            .args(arguments)
            .args(["--rpc-url", &self.chain.anvil.endpoint()])
            .args(["--vault", &self.chain.vault.to_string()])
            .args(["--key-env", "DEXD_TEST_EXIT_KEY"])
            .env("DEXD_TEST_EXIT_KEY", key_of(sender))
            .output()
            .unwrap();
        (
            output.status.success(),
            String::from_utf8_lossy(&output.stdout).into_owned(),
            String::from_utf8_lossy(&output.stderr).into_owned(),
        )
    }

    /// Deposits `units` of `token` (None: the native asset) straight from the account's wallet.
    pub async fn deposit_from_wallet(
        &self,
        account: &PrivateKeySigner,
        token: Option<ChainAddress>,
        units: u128,
    ) -> dexd_custody::node::Receipt {
        deploy::deposit_from_wallet(&self.chain.node, account, token, U256::from(units))
            .await
            .unwrap()
    }

    /// Deposits from the wallet and waits until the venue has credited it: `available` of
    /// `symbol` is then `amount`.
    pub async fn fund(
        &self,
        account: &PrivateKeySigner,
        token: Option<ChainAddress>,
        units: u128,
        symbol: &str,
        amount: &str,
    ) {
        self.deposit_from_wallet(account, token, units).await;
        self.wait_for_available(account, symbol, amount).await;
    }

    /// The exit tests' opening: `seller` deposits 1 WBTC and `buyer` 60,000 USDC, both credited.
    pub async fn fund_a_wbtc_seller_and_a_usdc_buyer(&self, seller: &PrivateKeySigner, buyer: &PrivateKeySigner) {
        self.fund(seller, Some(self.chain.wbtc), super::chain::WBTC_UNIT, "WBTC", "1")
            .await;
        self.fund(
            buyer,
            Some(self.chain.usdc),
            60_000 * super::chain::USDC_UNIT,
            "USDC",
            "60000",
        )
        .await;
    }

    /// The account's USDC in its own wallet, on chain.
    pub async fn usdc_in_wallet(&self, account: &PrivateKeySigner) -> U256 {
        self.chain
            .node
            .balance(Some(self.chain.usdc), account.address(), BlockId::latest())
            .await
            .unwrap()
    }

    /// Checks that the account's wallet, which held `before` USDC, was paid exactly the
    /// `withdrawals` (id, whole USDC), each by one `Withdrawn` event, and that the venue lists
    /// each once.
    pub async fn assert_usdc_withdrawals_paid_once(
        &self,
        account: &PrivateKeySigner,
        withdrawals: &[(String, u128)],
        before: U256,
        context: &str,
    ) {
        let paid: u128 = withdrawals.iter().map(|(_, units)| units).sum();
        assert_eq!(
            self.usdc_in_wallet(account).await - before,
            U256::from(paid * USDC_UNIT),
            "{context}: the account was paid exactly what it withdrew"
        );
        for (id, _) in withdrawals {
            assert_eq!(
                self.withdrawn_events(account.address(), id).await,
                1,
                "{context}: {id} paid once"
            );
        }
        assert_eq!(self.transfers(account, "withdraw").await.len(), withdrawals.len());
    }

    /// Withdraws `quantity` USDC (`units` of it) of the account's with its key, waits until the
    /// withdrawal is confirmed, and checks that its wallet received exactly that.
    pub async fn withdraw_usdc_and_see_it_paid(&self, account: &PrivateKeySigner, quantity: &str, units: u128) {
        let before = self.usdc_in_wallet(account).await;
        let (status, body) = self
            .post("/portfolio/withdraw", deposit_body(account, "USDC", quantity))
            .await;
        assert_eq!(status, 200, "{body}");
        self.wait_for_newest_withdrawal_confirmed(account).await;
        assert_eq!(self.usdc_in_wallet(account).await - before, U256::from(units));
    }

    /// Waits until every withdrawal of the account is confirmed.
    pub async fn wait_for_every_withdrawal_confirmed(&self, account: &PrivateKeySigner) {
        self.eventually("every withdrawal confirmed", || async {
            self.transfers(account, "withdraw")
                .await
                .iter()
                .all(|withdrawal| withdrawal["status"] == "confirmed")
        })
        .await;
    }

    /// Waits until the account's newest withdrawal is confirmed.
    pub async fn wait_for_newest_withdrawal_confirmed(&self, account: &PrivateKeySigner) {
        self.eventually("the newest withdrawal confirmed", || async {
            self.transfers(account, "withdraw").await[0]["status"] == "confirmed"
        })
        .await;
    }

    pub async fn balance(&self, account: &PrivateKeySigner, symbol: &str) -> Value {
        let address = address_of(account);
        let (status, body) = self.get("/account/assetBalances", &[("account", &address)]).await;
        assert_eq!(status, 200, "{body}");
        super::balance_in(&body, symbol)
    }

    pub async fn transfers(&self, account: &PrivateKeySigner, kind: &str) -> Vec<Value> {
        let path = format!("/portfolio/{kind}Histories");
        let address = address_of(account);
        let (status, body) = self.get(&path, &[("account", &address)]).await;
        assert_eq!(status, 200, "{body}");
        let key = if kind == "deposit" { "deposits" } else { "withdrawals" };
        body[key].as_array().unwrap().clone()
    }

    /// Waits until the account's available balance of `symbol` is `amount`.
    pub async fn wait_for_available(&self, account: &PrivateKeySigner, symbol: &str, amount: &str) {
        self.eventually(&format!("{symbol} available {amount}"), || async {
            self.balance(account, symbol).await["available"] == amount
        })
        .await;
    }

    /// Counts the vault's `Withdrawn` events of an account's withdrawal id.
    pub async fn withdrawn_events(&self, account: ChainAddress, id: &str) -> usize {
        use alloy::providers::Provider;
        use alloy::sol_types::SolEvent;
        let provider = alloy::providers::ProviderBuilder::new().connect_http(self.chain.anvil.endpoint_url());
        let id = U256::from_str_radix(id.trim_start_matches("0x"), 16).unwrap();
        let filter = alloy::rpc::types::Filter::new()
            .address(self.chain.vault)
            .event_signature(dexd_custody::vault::DexdVault::Withdrawn::SIGNATURE_HASH)
            .topic1(alloy::primitives::B256::from(id))
            .topic2(account.into_word())
            .from_block(0);
        provider.get_logs(&filter).await.unwrap().len()
    }

    /// Checks the reserves after a scenario has settled: for every asset the vault holds on
    /// chain exactly what the venue owes (nothing pending), and the venue's totals agree.
    pub async fn assert_conserved(&self) {
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
}

pub fn address_of(signer: &PrivateKeySigner) -> String {
    checksummed(&venue_address(&signer.address()))
}

pub fn key_of(signer: &PrivateKeySigner) -> String {
    format!("0x{}", alloy::hex::encode(signer.to_bytes()))
}

/// A withdrawal signed by the client: the terms and the account's own signature, no key.
pub fn signed_withdrawal_body(
    account: &PrivateKeySigner,
    symbol: &str,
    quantity: &str,
    nonce: u64,
    expiry_ms: u64,
    signature: &[u8],
) -> Value {
    json!({"from": address_of(account), "symbol": symbol, "quantity": quantity, "nonce": nonce.to_string(),
        "expiry": expiry_ms.to_string(), "signature": format!("0x{}", alloy::hex::encode(signature))})
}

pub fn deposit_body(account: &PrivateKeySigner, symbol: &str, quantity: &str) -> Value {
    json!({"from": address_of(account), "symbol": symbol, "quantity": quantity, "privateKey": key_of(account)})
}

/// The EIP-712 digest of a withdrawal of `amount_units` of the native asset by `account`.
pub fn native_withdrawal_digest(
    venue: &VaultVenue,
    account: ChainAddress,
    amount_units: u128,
    id: u64,
    expiry_ms: u64,
) -> alloy::primitives::B256 {
    let withdrawal = Withdrawal {
        account,
        token: ChainAddress::ZERO,
        amount: U256::from(amount_units),
        withdrawalId: U256::from(id),
        expiry: U256::from(expiry_ms),
    };
    let domain = alloy::sol_types::eip712_domain! {
        name: "dexd",
        version: "1",
        chain_id: venue.chain.chain_id,
        verifying_contract: venue.chain.vault,
    };
    alloy::sol_types::SolStruct::eip712_signing_hash(&withdrawal, &domain)
}
