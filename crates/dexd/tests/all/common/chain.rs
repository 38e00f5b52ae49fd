//! A real EVM node for the tests: anvil (from the npm registry, installed under `contracts/`
//! by `scripts/install-test-tools`) on a port of its choosing, with the vault (version 2) and
//! two test tokens deployed and a few funded accounts.

use std::path::PathBuf;
use std::time::Duration;

use alloy::node_bindings::{Anvil, AnvilInstance};
use alloy::primitives::{Address as ChainAddress, U256};
use alloy::signers::local::PrivateKeySigner;
use dexd_custody::deploy;
use dexd_custody::node::Node;

/// Where anvil is: `DEXD_ANVIL`, or the npm package under `contracts/node_modules`.
pub fn anvil_path() -> PathBuf {
    if let Some(path) = std::env::var_os("DEXD_ANVIL") {
        return PathBuf::from(path);
    }
    let path = PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../../contracts/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil");
    assert!(
        path.exists(),
        "anvil is not installed at {}: run scripts/install-test-tools (npm ci in contracts/) first",
        path.display()
    );
    path
}

/// A running anvil with the vault and the test tokens; anvil stops when this is dropped.
pub struct TestChain {
    pub anvil: AnvilInstance,
    pub node: Node,
    pub chain_id: u64,
    /// Deploys and owns the vault.
    pub deployer: PrivateKeySigner,
    /// The vault's operator.
    pub operator: PrivateKeySigner,
    /// Who may veto a liability root.
    pub guardian: PrivateKeySigner,
    /// Accounts with gas, 1,000,000 USDC and 100 WBTC each.
    pub users: Vec<PrivateKeySigner>,
    pub vault: ChainAddress,
    pub vault_block: u64,
    pub usdc: ChainAddress,
    pub wbtc: ChainAddress,
}

pub fn signer(anvil: &AnvilInstance, index: usize) -> PrivateKeySigner {
    PrivateKeySigner::from_signing_key(anvil.keys()[index].clone().into())
}

/// The roots' terms of the test vault (version 2) under a venue: an hour without a root before a
/// freeze (the tests move anvil's clock rather than wait), two seconds to veto, so that a
/// withdrawal is paid a few seconds after its root.
pub const TEST_ROOT_TERMS: deploy::RootTerms = deploy::RootTerms {
    max_root_age_s: 3_600,
    challenge_period_s: 2,
    request_period_s: 600,
    guardians: Vec::new(),
};

/// The roots' terms of a vault whose contract alone is tested: ten minutes to veto, so that a
/// veto sent a few blocks after its root is always in time.
pub const CONTRACT_ROOT_TERMS: deploy::RootTerms = deploy::RootTerms {
    max_root_age_s: 3_600,
    challenge_period_s: 600,
    request_period_s: 1_800,
    guardians: Vec::new(),
};

pub const USDC_UNIT: u128 = 1_000_000;
pub const WBTC_UNIT: u128 = 100_000_000;
pub const ETH_UNIT: u128 = 1_000_000_000_000_000_000;

impl TestChain {
    /// Starts anvil (mining a block per transaction) and deploys everything.
    pub async fn start() -> TestChain {
        TestChain::start_with(&[]).await
    }

    /// Starts anvil with extra arguments.
    pub async fn start_with(arguments: &[&str]) -> TestChain {
        TestChain::start_with_terms(arguments, TEST_ROOT_TERMS).await
    }

    /// Starts anvil with extra arguments, the vault deployed with `terms` (the test guardian
    /// first among its guardians).
    pub async fn start_with_terms(arguments: &[&str], terms: deploy::RootTerms) -> TestChain {
        let anvil = Anvil::at(anvil_path())
            .args(["--accounts", "10", "--balance", "10000"])
            .args(arguments.iter().copied())
            .spawn();
        let chain_id = anvil.chain_id();
        let deployer = signer(&anvil, 0);
        let operator = signer(&anvil, 1);
        let users: Vec<PrivateKeySigner> = (2..6).map(|index| signer(&anvil, index)).collect();
        // A node client without the vault's address first, to deploy it.
        let bootstrap =
            Node::connect(&anvil.endpoint(), ChainAddress::ZERO, chain_id, Duration::from_secs(10)).unwrap();
        let guardian = signer(&anvil, 6);
        // The test guardian first, then any the terms name.
        let terms = deploy::RootTerms {
            guardians: std::iter::once(guardian.address())
                .chain(terms.guardians.iter().copied())
                .collect(),
            ..terms
        };
        let vault = deploy::deploy_vault_v2(&bootstrap, &deployer, deployer.address(), operator.address(), &terms)
            .await
            .unwrap();
        let node = Node::connect(&anvil.endpoint(), vault.address, chain_id, Duration::from_secs(10)).unwrap();
        let usdc = deploy::deploy_test_token(&node, &deployer, "USD Coin", "USDC", 6)
            .await
            .unwrap();
        let wbtc = deploy::deploy_test_token(&node, &deployer, "Wrapped BTC", "WBTC", 8)
            .await
            .unwrap();
        deploy::list_tokens(&node, &deployer, &[ChainAddress::ZERO, usdc.address, wbtc.address])
            .await
            .unwrap();
        for user in &users {
            deploy::mint(
                &node,
                &deployer,
                usdc.address,
                user.address(),
                U256::from(1_000_000 * USDC_UNIT),
            )
            .await
            .unwrap();
            deploy::mint(
                &node,
                &deployer,
                wbtc.address,
                user.address(),
                U256::from(100 * WBTC_UNIT),
            )
            .await
            .unwrap();
        }
        TestChain {
            anvil,
            node,
            chain_id,
            deployer,
            operator,
            guardian,
            users,
            vault: vault.address,
            vault_block: vault.block_number,
            usdc: usdc.address,
            wbtc: wbtc.address,
        }
    }

    /// Mines `blocks` empty blocks.
    pub async fn mine(&self, blocks: u64) {
        self.node
            .raw_request("anvil_mine", serde_json::json!([format!("0x{blocks:x}")]))
            .await
            .unwrap();
    }

    /// Moves the chain's clock `seconds` ahead and mines a block at the new time.
    pub async fn advance_time(&self, seconds: u64) {
        self.node
            .raw_request("evm_increaseTime", serde_json::json!([seconds]))
            .await
            .unwrap();
        self.mine(1).await;
    }

    /// The vault's balance of a token (native when `None`).
    pub async fn vault_balance(&self, token: Option<ChainAddress>) -> U256 {
        self.node
            .balance(token, self.vault, alloy::eips::BlockId::latest())
            .await
            .unwrap()
    }
}

impl TestChain {
    /// Lists `token` on the vault and mints `amount` of it to `to`: a test's own token, ready to
    /// deposit.
    pub async fn list_and_mint(&self, token: ChainAddress, to: ChainAddress, amount: U256) {
        deploy::list_tokens(&self.node, &self.deployer, &[token]).await.unwrap();
        deploy::mint(&self.node, &self.deployer, token, to, amount)
            .await
            .unwrap();
    }

    /// Deposits `units` of `token` (native when `None`) from `from`'s wallet into the vault.
    pub async fn deposit(
        &self,
        from: &PrivateKeySigner,
        token: Option<ChainAddress>,
        units: u128,
    ) -> dexd_custody::node::Receipt {
        deploy::deposit_from_wallet(&self.node, from, token, U256::from(units))
            .await
            .unwrap()
    }

    /// A test's own token, listed: `minted` units given to `owner`, `deposited` of them in the
    /// vault.
    pub async fn list_mint_and_deposit(
        &self,
        token: ChainAddress,
        owner: &PrivateKeySigner,
        minted: u128,
        deposited: u128,
    ) {
        self.list_and_mint(token, owner.address(), U256::from(minted)).await;
        self.deposit(owner, Some(token), deposited).await;
    }

    /// Sends `input` to the vault from the operator's key and waits for its receipt (a revert
    /// is a receipt too; a node error fails the test).
    pub async fn call_vault_as_operator(&self, input: Vec<u8>) -> dexd_custody::node::Receipt {
        deploy::send_and_wait(
            &self.node,
            &self.operator,
            alloy::primitives::TxKind::Call(self.vault),
            input,
            U256::ZERO,
        )
        .await
        .unwrap()
    }

    /// The devnet description of this chain, for dexd's configuration writer.
    pub fn devnet(&self, rpc_url: &str) -> dexd_custody::devnet::Devnet {
        dexd_custody::devnet::Devnet {
            rpc_url: rpc_url.to_string(),
            chain_id: self.chain_id,
            vault: self.vault,
            vault_block: self.vault_block,
            operator: self.operator.address(),
            usdc: self.usdc,
            wbtc: self.wbtc,
            accounts: self.users.clone(),
        }
    }

    /// Writes a dexd configuration for this chain (vault custody, `confirmations` 2, polling
    /// every 100 ms, replacing unmined transactions after 2 s, a liability root every second, so
    /// that withdrawals are paid a few seconds after their debit) and the operator key file into
    /// `folder`, reaching the node at `rpc_url` (the chain's own, or a proxy in front of it).
    pub fn write_dexd_config(&self, folder: &std::path::Path, rpc_url: &str) -> PathBuf {
        self.write_dexd_config_with_roots(folder, rpc_url, 1_000)
    }

    /// [`TestChain::write_dexd_config`] with a liability root every `root_interval_ms`.
    pub fn write_dexd_config_with_roots(
        &self,
        folder: &std::path::Path,
        rpc_url: &str,
        root_interval_ms: u64,
    ) -> PathBuf {
        let options = dexd_custody::devnet::DevnetConfigOptions {
            confirmations: 2,
            poll_interval_ms: 100,
            replace_after_ms: 2_000,
            root_interval_ms,
        };
        dexd_custody::devnet::write_files(&self.devnet(rpc_url), &self.operator, folder, options, None).unwrap()
    }
}

/// A TCP proxy in front of the node, which the test can take down (every connection refused and
/// the open ones cut) and bring back, as a node that stops and restarts.
pub struct NodeProxy {
    pub url: String,
    up: std::sync::Arc<std::sync::atomic::AtomicBool>,
    /// Connections being forwarded now; `down` waits for it to reach zero.
    open_connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

/// Counts a forwarded connection for as long as it lives.
struct OpenConnection(std::sync::Arc<std::sync::atomic::AtomicUsize>);

impl Drop for OpenConnection {
    fn drop(&mut self) {
        self.0.fetch_sub(1, std::sync::atomic::Ordering::SeqCst);
    }
}

impl NodeProxy {
    /// Listens on a free port and forwards to `target` (`host:port`).
    pub async fn start(target: String) -> NodeProxy {
        use std::sync::atomic::Ordering;
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        let up = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let open_connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (accept_up, accept_open) = (up.clone(), open_connections.clone());
        tokio::spawn(async move {
            loop {
                let Ok((mut inbound, _)) = listener.accept().await else {
                    continue;
                };
                // Counted before `up` is read, so `down` cannot miss a connection accepted
                // while it runs: either this one sees `up` false, or `down` waits for it.
                accept_open.fetch_add(1, Ordering::SeqCst);
                let open = OpenConnection(accept_open.clone());
                if !accept_up.load(Ordering::SeqCst) {
                    drop(inbound);
                    continue;
                }
                let target = target.clone();
                let watched_up = accept_up.clone();
                tokio::spawn(async move {
                    let _open = open;
                    let cut = async {
                        while watched_up.load(Ordering::SeqCst) {
                            tokio::time::sleep(Duration::from_millis(5)).await;
                        }
                    };
                    let forward = async {
                        let Ok(mut outbound) = tokio::net::TcpStream::connect(target).await else {
                            return;
                        };
                        let _ = tokio::io::copy_bidirectional(&mut inbound, &mut outbound).await;
                    };
                    tokio::select! {
                        () = forward => {}
                        () = cut => {}
                    }
                });
            }
        });
        NodeProxy {
            url,
            up,
            open_connections,
        }
    }

    /// Takes the node down: new connections are refused, and this returns once every open one
    /// is cut, so nothing sent after it reaches the node.
    pub async fn down(&self) {
        use std::sync::atomic::Ordering;
        self.up.store(false, Ordering::SeqCst);
        while self.open_connections.load(Ordering::SeqCst) > 0 {
            tokio::time::sleep(Duration::from_millis(5)).await;
        }
    }

    /// Brings the node back.
    pub fn up(&self) {
        self.up.store(true, std::sync::atomic::Ordering::SeqCst);
    }
}

/// Mines a block every 150 ms (or every given interval) until dropped, so that confirmations
/// keep coming while a test kills and restarts dexd.
pub struct BackgroundMiner(tokio::task::JoinHandle<()>);

impl BackgroundMiner {
    pub fn start(node: dexd_custody::node::Node) -> BackgroundMiner {
        BackgroundMiner::start_every(node, Duration::from_millis(150))
    }

    pub fn start_every(node: dexd_custody::node::Node, interval: Duration) -> BackgroundMiner {
        BackgroundMiner(tokio::spawn(async move {
            loop {
                let _ = node.raw_request("anvil_mine", serde_json::json!(["0x1"])).await;
                tokio::time::sleep(interval).await;
            }
        }))
    }
}

impl Drop for BackgroundMiner {
    fn drop(&mut self) {
        self.0.abort();
    }
}
