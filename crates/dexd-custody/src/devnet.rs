//! A local devnet anyone can start (`scripts/devnet`, `dexd devnet-setup`): on a fresh node
//! (anvil) it deploys the vault (version 2, with `RootTerms::DEVNET`) and two test tokens (a 6-decimal `USDC` and an 8-decimal
//! `WBTC`; the native `ETH` is the third asset), makes an operator key and a few test accounts
//! with tokens and gas, and writes a dexd configuration for the chain in vault mode with the
//! operator key in a file beside it, and `devnet.json` describing it all.
//!
//! For development and tests only: its keys are fresh random keys written in clear into the
//! devnet's folder, and its tokens can be minted by anyone.

use std::path::{Path, PathBuf};

use alloy::primitives::{Address as ChainAddress, U256};
use alloy::signers::local::PrivateKeySigner;
use serde_json::json;

use super::deploy;
use super::node::{Node, NodeError};
use crate::vault::venue_address;
use dexd_crypto::checksummed;

/// What one devnet is.
#[derive(Debug, Clone)]
pub struct Devnet {
    /// The node's URL.
    pub rpc_url: String,
    /// The chain id the node reports.
    pub chain_id: u64,
    /// The vault.
    pub vault: ChainAddress,
    /// The block the vault was deployed in.
    pub vault_block: u64,
    /// The vault's operator.
    pub operator: ChainAddress,
    /// `USDC` (6 decimals).
    pub usdc: ChainAddress,
    /// `WBTC` (8 decimals).
    pub wbtc: ChainAddress,
    /// Funded test accounts and their keys (test keys only).
    pub accounts: Vec<PrivateKeySigner>,
}

/// Tokens and gas each test account gets.
pub const TEST_ACCOUNT_USDC_UNITS: u128 = 1_000_000 * 1_000_000;
/// 100 WBTC.
pub const TEST_ACCOUNT_WBTC_UNITS: u128 = 100 * 100_000_000;
/// 100 ETH.
pub const TEST_ACCOUNT_WEI: u128 = 100 * 1_000_000_000_000_000_000;
/// 10 ETH for the operator's gas.
pub const OPERATOR_WEI: u128 = 10 * 1_000_000_000_000_000_000;

/// Deploys a devnet's contracts with `funder` (an account with plenty of the native asset,
/// which owns the vault), with a fresh operator and `account_count` fresh funded accounts.
pub async fn set_up(
    rpc_url: &str,
    funder: &PrivateKeySigner,
    account_count: usize,
) -> Result<(Devnet, PrivateKeySigner), NodeError> {
    let timeout = std::time::Duration::from_secs(30);
    let probe = Node::connect(rpc_url, ChainAddress::ZERO, 0, timeout).map_err(NodeError::Refused)?;
    let chain_id = probe.chain_id().await?;
    let bootstrap = Node::connect(rpc_url, ChainAddress::ZERO, chain_id, timeout).map_err(NodeError::Refused)?;
    let operator = PrivateKeySigner::random();
    let vault = deploy::deploy_vault_v2(
        &bootstrap,
        funder,
        funder.address(),
        operator.address(),
        &deploy::RootTerms::DEVNET,
    )
    .await?;
    let node = Node::connect(rpc_url, vault.address, chain_id, timeout).map_err(NodeError::Refused)?;
    let usdc = deploy::deploy_test_token(&node, funder, "USD Coin (devnet)", "USDC", 6).await?;
    let wbtc = deploy::deploy_test_token(&node, funder, "Wrapped BTC (devnet)", "WBTC", 8).await?;
    deploy::list_tokens(&node, funder, &[ChainAddress::ZERO, usdc.address, wbtc.address]).await?;
    deploy::send_native(&node, funder, operator.address(), U256::from(OPERATOR_WEI)).await?;
    let mut accounts = Vec::with_capacity(account_count);
    for _ in 0..account_count {
        let account = PrivateKeySigner::random();
        deploy::send_native(&node, funder, account.address(), U256::from(TEST_ACCOUNT_WEI)).await?;
        deploy::mint(
            &node,
            funder,
            usdc.address,
            account.address(),
            U256::from(TEST_ACCOUNT_USDC_UNITS),
        )
        .await?;
        deploy::mint(
            &node,
            funder,
            wbtc.address,
            account.address(),
            U256::from(TEST_ACCOUNT_WBTC_UNITS),
        )
        .await?;
        accounts.push(account);
    }
    Ok((
        Devnet {
            rpc_url: rpc_url.to_string(),
            chain_id,
            vault: vault.address,
            vault_block: vault.block_number,
            operator: operator.address(),
            usdc: usdc.address,
            wbtc: wbtc.address,
            accounts,
        },
        operator,
    ))
}

/// How the devnet's dexd configuration is made.
#[derive(Debug, Clone, Copy)]
pub struct DevnetConfigOptions {
    /// Blocks on top before a deposit is credited (at least 2 on a devnet).
    pub confirmations: u64,
    /// How often dexd polls the node.
    pub poll_interval_ms: u64,
    /// How long the payer waits before replacing a transaction.
    pub replace_after_ms: u64,
    /// How often a liability root is committed.
    pub root_interval_ms: u64,
}

impl Default for DevnetConfigOptions {
    fn default() -> DevnetConfigOptions {
        DevnetConfigOptions {
            confirmations: 2,
            poll_interval_ms: 500,
            replace_after_ms: 30_000,
            root_interval_ms: 10_000,
        }
    }
}

/// The dexd configuration of a devnet (vault custody, the three assets, `ETH/USDC` and
/// `WBTC/USDC`), reading the operator key from `operator_key_file`.
pub fn config_toml(devnet: &Devnet, operator_key_file: &Path, options: DevnetConfigOptions) -> String {
    let address = |address: &ChainAddress| checksummed(&venue_address(address));
    format!(
        r#"# A dexd configuration for a local devnet, written by `dexd devnet-setup`. Test keys only.

[[chains]]
chain_id = {chain_id}
name = "devnet"
fee_account = "0x000000000000000000000000000000000000fee1"

[chains.custody]
mode = "vault"
rpc_url = "{rpc_url}"
vault = "{vault}"
confirmations = {confirmations}
poll_interval_ms = {poll_interval_ms}
replace_after_ms = {replace_after_ms}
root_interval_ms = {root_interval_ms}
start_block = {start_block}
operator_key_file = "{operator_key_file}"

[[chains.assets]]
symbol = "ETH"
name = "Ether"
decimals = 18
native = true

[[chains.assets]]
symbol = "USDC"
name = "USD Coin (devnet)"
decimals = 6
address = "{usdc}"

[[chains.assets]]
symbol = "WBTC"
name = "Wrapped BTC (devnet)"
decimals = 8
address = "{wbtc}"

[[chains.pairs]]
base = "ETH"
quote = "USDC"
tick_size = "0.01"
step_size = "0.0001"
min_amount = "0.001"
min_notional = "1"
maker_fee = "0.001"
taker_fee = "0.002"

[[chains.pairs]]
base = "WBTC"
quote = "USDC"
tick_size = "0.01"
step_size = "0.0001"
min_amount = "0.0001"
min_notional = "1"
maker_fee = "0.001"
taker_fee = "0.002"
"#,
        chain_id = devnet.chain_id,
        rpc_url = devnet.rpc_url,
        vault = address(&devnet.vault),
        confirmations = options.confirmations,
        poll_interval_ms = options.poll_interval_ms,
        replace_after_ms = options.replace_after_ms,
        root_interval_ms = options.root_interval_ms,
        start_block = devnet.vault_block,
        operator_key_file = operator_key_file.display(),
        usdc = address(&devnet.usdc),
        wbtc = address(&devnet.wbtc),
    )
}

/// Writes into `folder`: `operator.key` (readable by the owner only), `dexd.toml`, and
/// `devnet.json` (with `dexdUrl` when given). Returns the configuration's path.
pub fn write_files(
    devnet: &Devnet,
    operator: &PrivateKeySigner,
    folder: &Path,
    options: DevnetConfigOptions,
    dexd_url: Option<&str>,
) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(folder)?;
    let key_path = folder.join("operator.key");
    write_private(&key_path, &format!("0x{}\n", alloy::hex::encode(operator.to_bytes())))?;
    let config_path = folder.join("dexd.toml");
    std::fs::write(&config_path, config_toml(devnet, Path::new("operator.key"), options))?;
    let address = |address: &ChainAddress| checksummed(&venue_address(address));
    let mut description = json!({
        "rpcUrl": devnet.rpc_url,
        "chainId": devnet.chain_id.to_string(),
        "vault": address(&devnet.vault),
        "vaultBlock": devnet.vault_block,
        "operator": address(&devnet.operator),
        "tokens": {
            "ETH": {"address": null, "decimals": 18},
            "USDC": {"address": address(&devnet.usdc), "decimals": 6},
            "WBTC": {"address": address(&devnet.wbtc), "decimals": 8},
        },
        "accounts": devnet.accounts.iter().map(|account| json!({
            "address": address(&account.address()),
            "privateKey": format!("0x{}", alloy::hex::encode(account.to_bytes())),
        })).collect::<Vec<_>>(),
        "dexdConfig": config_path.display().to_string(),
    });
    if let Some(url) = dexd_url {
        description["dexdUrl"] = json!(url);
    }
    write_private(
        &folder.join("devnet.json"),
        &serde_json::to_string_pretty(&description).expect("JSON values serialize"),
    )?;
    Ok(config_path)
}

/// Writes a file only its owner may read (it holds test keys).
fn write_private(path: &Path, text: &str) -> std::io::Result<()> {
    use std::io::Write;
    #[cfg(unix)]
    use std::os::unix::fs::OpenOptionsExt;
    let mut options = std::fs::OpenOptions::new();
    options.write(true).create(true).truncate(true);
    #[cfg(unix)]
    options.mode(0o600);
    options.open(path)?.write_all(text.as_bytes())
}
