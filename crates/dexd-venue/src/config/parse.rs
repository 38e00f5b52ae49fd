//! Reading a configuration: the TOML text as written (`Raw*`, unknown keys refused), checked
//! field by field into [`Config`], each fault reported with its line.

use dexd_core::MAX_SIGNED_REQUEST_LIFETIME_MS;
use std::collections::HashMap;
use std::path::{Path, PathBuf};

use dexd_core::{Decimal, FeeRate, PairDefinition, PairSpec};
use serde::Deserialize;
use toml::Spanned;

use super::cluster_sections::{check_store, cluster_secret, RawCluster, RawStore};
use super::*;
use super::{at, line_of};

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    snapshots: Snapshots,
    store: Option<Spanned<RawStore>>,
    cluster: Option<Spanned<RawCluster>>,
    chains: Vec<Spanned<RawChain>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawChain {
    chain_id: u64,
    name: String,
    venue_contract: Option<String>,
    fee_account: String,
    assets: Vec<Spanned<RawAsset>>,
    #[serde(default)]
    pairs: Vec<Spanned<RawPair>>,
    custody: Option<Spanned<RawCustody>>,
}

/// `confirmations = 12` or `confirmations = "finalized"`.
#[derive(Deserialize)]
#[serde(untagged)]
enum RawConfirmations {
    Blocks(i64),
    Rule(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCustody {
    mode: String,
    rpc_url: Option<String>,
    vault: Option<String>,
    confirmations: Option<RawConfirmations>,
    poll_interval_ms: Option<u64>,
    start_block: Option<u64>,
    operator_key_file: Option<String>,
    operator_key_env: Option<String>,
    max_log_range_blocks: Option<u64>,
    max_withdrawals_per_transaction: Option<usize>,
    withdrawal_validity_ms: Option<u64>,
    withdrawal_expiry_margin_ms: Option<u64>,
    rpc_timeout_ms: Option<u64>,
    replace_after_ms: Option<u64>,
    root_interval_ms: Option<u64>,
    keep_roots: Option<u64>,
    /// Where each root's data goes: `data = "blobs"` (the default) or `"calldata"` (contract
    /// version 5's name for it).
    data: Option<String>,
    snapshot_interval_ms: Option<u64>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawAsset {
    symbol: String,
    name: String,
    decimals: u32,
    #[serde(default)]
    native: bool,
    address: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPair {
    base: String,
    quote: String,
    tick_size: String,
    step_size: String,
    min_amount: String,
    min_notional: String,
    maker_fee: String,
    taker_fee: String,
}

impl Config {
    /// Reads, parses and checks a TOML configuration file; relative paths in it (operator key
    /// files) are taken from the file's folder.
    pub fn load(path: &Path) -> Result<Config, ConfigError> {
        let text = std::fs::read_to_string(path).map_err(|error| ConfigError {
            line: None,
            message: format!("cannot read {}: {error}", path.display()),
        })?;
        let mut config = Config::parse(&text)?;
        let folder = path.parent().unwrap_or(Path::new("."));
        for chain in &mut config.chains {
            if let Custody::Vault(VaultConfig {
                operator_key: OperatorKeySource::File(file),
                ..
            }) = &mut chain.custody
            {
                if file.is_relative() {
                    *file = folder.join(&*file);
                }
            }
        }
        Ok(config)
    }

    /// Parses and checks a TOML configuration.
    pub fn parse(text: &str) -> Result<Config, ConfigError> {
        let raw: RawConfig = toml::from_str(text).map_err(|error| ConfigError {
            line: error.span().map(|span| line_of(text, span.start)),
            message: error.message().to_string(),
        })?;
        if raw.chains.is_empty() {
            return Err(ConfigError {
                line: None,
                message: "at least one [[chains]] table is needed".into(),
            });
        }
        let limits = raw.limits;
        if limits.max_body_bytes == 0
            || limits.write_queue_capacity == 0
            || limits.max_open_orders_per_account == 0
            || limits.requests_per_second_per_ip == 0
            || limits.max_connections == 0
            || limits.header_read_timeout_ms == 0
            || limits.writes_per_second_per_account == 0
            || limits.max_pending_transfers_per_chain == 0
            || limits.max_stream_connections_per_ip == 0
            || limits.max_stream_connections == 0
            || limits.stream_queue_messages_per_connection == 0
            || limits.stream_queue_bytes_per_connection == 0
        {
            return Err(ConfigError {
                line: None,
                message: "[limits] values must be positive".into(),
            });
        }
        if limits.stream_queue_bytes_total < limits.stream_queue_bytes_per_connection {
            return Err(ConfigError {
                line: None,
                message: "[limits] stream_queue_bytes_total must be at least stream_queue_bytes_per_connection".into(),
            });
        }
        if limits.max_live_nonces_per_account == 0
            || limits.max_live_nonces_per_account > limits.max_live_nonces_per_chain
        {
            return Err(ConfigError {
                line: None,
                message: "[limits] max_live_nonces_per_account must be between 1 and max_live_nonces_per_chain".into(),
            });
        }
        let snapshots = raw.snapshots;
        if snapshots.keep == 0 || snapshots.check_interval_ms == 0 {
            return Err(ConfigError {
                line: None,
                message: "[snapshots] keep and check_interval_ms must be positive".into(),
            });
        }
        let cluster_secret = cluster_secret(text, raw.cluster.as_ref())?;
        let journal = check_store(text, raw.store, raw.cluster)?;
        let mut chains: Vec<ChainConfig> = Vec::new();
        for raw_chain in raw.chains {
            let line = line_of(text, raw_chain.span().start);
            let chain = check_chain(text, raw_chain.into_inner(), line)?;
            if chains.iter().any(|other| other.chain_id == chain.chain_id) {
                return Err(at(line, format!("chain {} is configured twice", chain.chain_id)));
            }
            chains.push(chain);
        }
        Ok(Config {
            limits,
            snapshots,
            journal,
            cluster_secret,
            chains,
        })
    }

    /// The embedded default configuration.
    pub fn embedded_default() -> Config {
        Config::parse(DEFAULT_CONFIG_TOML).expect("the embedded default configuration is valid")
    }

    /// The chain with this id.
    pub fn chain(&self, chain_id: u64) -> Option<&ChainConfig> {
        self.chains.iter().find(|chain| chain.chain_id == chain_id)
    }
}

/// A chain's assets, each checked, in their order (their index is their place): a symbol or a
/// token configured twice is refused.
fn check_assets(
    text: &str,
    raw_assets: Vec<Spanned<RawAsset>>,
) -> Result<(Vec<AssetConfig>, HashMap<String, AssetIndex>), ConfigError> {
    let mut assets = Vec::new();
    let mut asset_by_symbol = HashMap::new();
    for raw_asset in raw_assets {
        let asset_line = line_of(text, raw_asset.span().start);
        let asset = check_asset(raw_asset.into_inner(), asset_line)?;
        let index = AssetIndex(u16::try_from(assets.len()).map_err(|_| at(asset_line, "too many assets".into()))?);
        if asset_by_symbol.insert(asset.symbol.clone(), index).is_some() {
            return Err(at(asset_line, format!("asset {} is configured twice", asset.symbol)));
        }
        // One token, one asset: two assets of one contract (or two native ones) would credit one
        // deposit to whichever the venue looked up first, and owe the vault's balance twice.
        if let Some(other) = assets
            .iter()
            .find(|other: &&AssetConfig| other.address == asset.address)
        {
            let what = match &asset.address {
                Some(token) => format!("the token {}", dexd_crypto::checksummed(token)),
                None => "the chain's native asset".to_string(),
            };
            return Err(at(
                asset_line,
                format!("assets {} and {} are both {what}", other.symbol, asset.symbol),
            ));
        }
        assets.push(asset);
    }
    Ok((assets, asset_by_symbol))
}

fn check_chain(text: &str, raw: RawChain, line: usize) -> Result<ChainConfig, ConfigError> {
    let address = |value: &str, what: &str| {
        parse_address(value).map_err(|_| {
            at(
                line,
                format!("{what} {value:?} is not a valid address (0x + 40 hex, EIP-55 checksum if mixed case)"),
            )
        })
    };
    let fee_account = address(&raw.fee_account, "fee_account")?;
    let custody = match raw.custody {
        None => Custody::Ledger,
        Some(custody) => {
            let custody_line = line_of(text, custody.span().start);
            check_custody(custody.into_inner(), custody_line)?
        }
    };
    let venue_contract = match (&custody, raw.venue_contract.as_deref()) {
        (Custody::Vault(vault), None) => vault.vault,
        (Custody::Vault(vault), Some(text)) => {
            let given = address(text, "venue_contract")?;
            if given != vault.vault {
                return Err(at(
                    line,
                    "venue_contract must be the vault on a vault chain (or be left out): the vault checks \
                     withdrawals under the same EIP-712 domain as the venue's orders"
                        .into(),
                ));
            }
            given
        }
        (Custody::Ledger, Some(text)) => address(text, "venue_contract")?,
        (Custody::Ledger, None) => return Err(at(line, "venue_contract is required on a ledger chain".into())),
    };
    let (assets, asset_by_symbol) = check_assets(text, raw.assets)?;
    let specs: Vec<AssetSpec> = assets
        .iter()
        .map(|asset| AssetSpec {
            decimals: asset.decimals,
        })
        .collect();
    let mut pairs = Vec::new();
    let mut pair_by_symbol = HashMap::new();
    for raw_pair in raw.pairs {
        let pair_line = line_of(text, raw_pair.span().start);
        let pair = check_pair(raw_pair.into_inner(), pair_line, &asset_by_symbol, &specs)?;
        let index = PairIndex(u16::try_from(pairs.len()).map_err(|_| at(pair_line, "too many pairs".into()))?);
        if pair_by_symbol.insert(pair.symbol.clone(), index).is_some() {
            return Err(at(pair_line, format!("pair {} is configured twice", pair.symbol)));
        }
        pairs.push(pair);
    }
    Ok(ChainConfig {
        chain_id: raw.chain_id,
        name: raw.name,
        venue_contract,
        fee_account,
        custody,
        assets,
        pairs,
        asset_by_symbol,
        pair_by_symbol,
    })
}

/// The longest time the payer may wait before replacing a transaction, and the longest
/// validity of a venue-signed withdrawal: a week.
const MAX_CUSTODY_WAIT_MS: u64 = 7 * 24 * 60 * 60 * 1_000;
/// The most roots `keep_roots` may keep the tree files of (each file holds every leaf and node of
/// its tree: about 160 bytes per account and token).
const MAX_KEEP_ROOTS: u64 = 1_024;

fn check_custody(raw: RawCustody, line: usize) -> Result<Custody, ConfigError> {
    match raw.mode.as_str() {
        "ledger" => {
            let extra = raw.rpc_url.is_some()
                || raw.vault.is_some()
                || raw.confirmations.is_some()
                || raw.operator_key_file.is_some()
                || raw.operator_key_env.is_some();
            if extra {
                return Err(at(line, "custody mode \"ledger\" takes no chain settings".into()));
            }
            Ok(Custody::Ledger)
        }
        "vault" => check_vault(raw, line).map(Custody::Vault),
        other => Err(at(
            line,
            format!("custody mode {other:?} is not known; use \"ledger\" or \"vault\""),
        )),
    }
}

fn check_vault(raw: RawCustody, line: usize) -> Result<VaultConfig, ConfigError> {
    let required = |value: Option<String>, name: &str| {
        value.ok_or_else(|| at(line, format!("custody mode \"vault\" needs {name}")))
    };
    let rpc_url = check_node_url(required(raw.rpc_url, "rpc_url")?, line)?;
    let vault_text = required(raw.vault, "vault")?;
    let vault =
        parse_address(&vault_text).map_err(|_| at(line, format!("vault {vault_text:?} is not a valid address")))?;
    let operator_key = check_operator_key(raw.operator_key_file, raw.operator_key_env, line)?;
    let confirmations = check_confirmations(raw.confirmations, line)?;
    let max_withdrawals_per_transaction = raw.max_withdrawals_per_transaction.unwrap_or(50);
    if !(1..=500).contains(&max_withdrawals_per_transaction) {
        return Err(at(
            line,
            "max_withdrawals_per_transaction must be between 1 and 500".into(),
        ));
    }
    let (withdrawal_validity_ms, withdrawal_expiry_margin_ms) =
        check_withdrawal_timing(raw.withdrawal_validity_ms, raw.withdrawal_expiry_margin_ms, line)?;
    let root_interval_ms = bounded(raw.root_interval_ms, 120_000, "root_interval_ms", 86_400_000, line)?;
    let root_data = check_root_data(raw.data.as_deref(), line)?;
    let snapshot_interval_ms = bounded(
        raw.snapshot_interval_ms,
        7 * 86_400_000,
        "snapshot_interval_ms",
        dexd_custody::config::MAX_SNAPSHOT_INTERVAL_MS,
        line,
    )?;
    if snapshot_interval_ms < root_interval_ms.saturating_mul(2) {
        return Err(at(
            line,
            "snapshot_interval_ms must be at least twice root_interval_ms (a full set of accounts passes through \
             the roots' data in half the snapshot interval)"
                .into(),
        ));
    }
    Ok(VaultConfig {
        rpc_url,
        vault,
        confirmations,
        poll_interval_ms: bounded(raw.poll_interval_ms, 1_000, "poll_interval_ms", 600_000, line)?,
        start_block: raw.start_block.unwrap_or(0),
        operator_key,
        max_log_range_blocks: bounded(raw.max_log_range_blocks, 2_000, "max_log_range_blocks", 1_000_000, line)?,
        max_withdrawals_per_transaction,
        withdrawal_validity_ms,
        withdrawal_expiry_margin_ms,
        rpc_timeout_ms: bounded(raw.rpc_timeout_ms, 10_000, "rpc_timeout_ms", 600_000, line)?,
        replace_after_ms: bounded(
            raw.replace_after_ms,
            60_000,
            "replace_after_ms",
            MAX_CUSTODY_WAIT_MS,
            line,
        )?,
        root_interval_ms,
        keep_roots: bounded(raw.keep_roots, 16, "keep_roots", MAX_KEEP_ROOTS, line)? as usize,
        root_data,
        snapshot_interval_ms,
    })
}

/// Where the operator's key is read from: a file or an environment variable, exactly one.
fn check_operator_key(
    file: Option<String>,
    variable: Option<String>,
    line: usize,
) -> Result<OperatorKeySource, ConfigError> {
    match (file, variable) {
        (Some(file), None) => Ok(OperatorKeySource::File(PathBuf::from(file))),
        (None, Some(variable)) => Ok(OperatorKeySource::Environment(variable)),
        _ => Err(at(
            line,
            "custody mode \"vault\" needs exactly one of operator_key_file and operator_key_env (the key \
                 itself never goes into the configuration)"
                .into(),
        )),
    }
}

/// How many confirmations a chain event waits for: 12 blocks unless set, or the finalized head.
fn check_confirmations(raw: Option<RawConfirmations>, line: usize) -> Result<Confirmations, ConfigError> {
    match raw {
        None => Ok(Confirmations::Blocks(12)),
        Some(RawConfirmations::Blocks(blocks)) if (1..=10_000).contains(&blocks) => {
            Ok(Confirmations::Blocks(blocks.unsigned_abs()))
        }
        Some(RawConfirmations::Rule(rule)) if rule == "finalized" => Ok(Confirmations::Finalized),
        Some(_) => Err(at(
            line,
            "confirmations must be a number of blocks between 1 and 10000, or \"finalized\"".into(),
        )),
    }
}

/// What carries a root's data: blobs unless set.
fn check_root_data(data: Option<&str>, line: usize) -> Result<RootDataCarrier, ConfigError> {
    match data {
        None | Some("blobs") => Ok(RootDataCarrier::Blobs),
        Some("calldata") => Ok(RootDataCarrier::Calldata),
        Some(_) => Err(at(
            line,
            "data must be \"blobs\" (each root's data in EIP-4844 blobs, where the chain takes them) or \"calldata\""
                .into(),
        )),
    }
}

/// A setting between 1 and `max`, `default` when absent.
fn bounded(value: Option<u64>, default: u64, name: &str, max: u64, line: usize) -> Result<u64, ConfigError> {
    let value = value.unwrap_or(default);
    if value == 0 || value > max {
        Err(at(line, format!("{name} must be between 1 and {max}")))
    } else {
        Ok(value)
    }
}

/// The node's URL: http(s), and https unless the node is on this machine.
fn check_node_url(rpc_url: String, line: usize) -> Result<String, ConfigError> {
    if !(rpc_url.starts_with("http://") || rpc_url.starts_with("https://")) {
        return Err(at(line, "rpc_url must be an http:// or https:// URL".into()));
    }
    // The URL itself is a secret (providers put keys in it), so the message never quotes it.
    if rpc_url.starts_with("http://") && !is_loopback_url(&rpc_url) {
        return Err(at(
            line,
            "rpc_url must be https:// unless the node is on this machine (127.0.0.1, ::1 or localhost): \
             the URL and every request to the node would cross the network in clear"
                .into(),
        ));
    }
    Ok(rpc_url)
}

/// A venue-signed withdrawal's validity and the margin a client's expiry must leave: the margin
/// at most half a signed request's longest lifetime, the validity longer than the margin.
fn check_withdrawal_timing(
    validity_ms: Option<u64>,
    margin_ms: Option<u64>,
    line: usize,
) -> Result<(u64, u64), ConfigError> {
    let withdrawal_validity_ms = bounded(
        validity_ms,
        24 * 60 * 60 * 1_000,
        "withdrawal_validity_ms",
        MAX_CUSTODY_WAIT_MS,
        line,
    )?;
    // A client's expiry is at most an hour ahead, and it must leave this margin.
    let withdrawal_expiry_margin_ms = margin_ms.unwrap_or(300_000);
    if withdrawal_expiry_margin_ms > MAX_SIGNED_REQUEST_LIFETIME_MS / 2 {
        return Err(at(
            line,
            format!(
                "withdrawal_expiry_margin_ms must be at most {}",
                MAX_SIGNED_REQUEST_LIFETIME_MS / 2
            ),
        ));
    }
    if withdrawal_validity_ms <= withdrawal_expiry_margin_ms {
        return Err(at(
            line,
            "withdrawal_validity_ms must be longer than withdrawal_expiry_margin_ms".into(),
        ));
    }
    Ok((withdrawal_validity_ms, withdrawal_expiry_margin_ms))
}

fn check_asset(raw: RawAsset, line: usize) -> Result<AssetConfig, ConfigError> {
    let symbol = raw.symbol.to_ascii_uppercase();
    let symbol_ok = !symbol.is_empty()
        && symbol.len() <= MAX_SYMBOL_LENGTH
        && symbol
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-');
    if !symbol_ok {
        return Err(at(
            line,
            format!(
                "asset symbol {:?} must be 1 to {MAX_SYMBOL_LENGTH} letters, digits, '.' or '-'",
                raw.symbol
            ),
        ));
    }
    if raw.decimals > dexd_core::pair::MAX_ASSET_DECIMALS {
        return Err(at(
            line,
            format!(
                "asset {symbol}: decimals must be at most {}",
                dexd_core::pair::MAX_ASSET_DECIMALS
            ),
        ));
    }
    let address = match (raw.native, raw.address) {
        (true, None) => None,
        (false, Some(text)) => Some(parse_address(&text).map_err(|_| {
            at(
                line,
                format!("asset {symbol}: address {text:?} is not a valid address (EIP-55 checksum if mixed case)"),
            )
        })?),
        (true, Some(_)) => {
            return Err(at(
                line,
                format!("asset {symbol}: a native asset has no contract address"),
            ))
        }
        (false, None) => {
            return Err(at(
                line,
                format!("asset {symbol}: give a contract address or native = true"),
            ))
        }
    };
    Ok(AssetConfig {
        symbol,
        name: raw.name,
        decimals: raw.decimals,
        address,
    })
}

fn check_pair(
    raw: RawPair,
    line: usize,
    asset_by_symbol: &HashMap<String, AssetIndex>,
    specs: &[AssetSpec],
) -> Result<PairConfig, ConfigError> {
    let lookup = |symbol: &str| {
        asset_by_symbol
            .get(&symbol.to_ascii_uppercase())
            .copied()
            .ok_or_else(|| at(line, format!("pair asset {symbol:?} is not an asset of this chain")))
    };
    let base = lookup(&raw.base)?;
    let quote = lookup(&raw.quote)?;
    let symbol = format!("{}/{}", raw.base.to_ascii_uppercase(), raw.quote.to_ascii_uppercase());
    let decimal = |value: &str, name: &str| {
        Decimal::parse(value).map_err(|error| at(line, format!("pair {symbol}: {name} {value:?} {error}")))
    };
    let fee = |value: &str, name: &str| -> Result<FeeRate, ConfigError> {
        dexd_core::fee_rate_from_decimal(decimal(value, name)?).ok_or_else(|| {
            at(
                line,
                format!("pair {symbol}: {name} must be between 0 and 1 with at most 6 decimals"),
            )
        })
    };
    let definition = PairDefinition {
        base,
        quote,
        tick_size: decimal(&raw.tick_size, "tick_size")?,
        step_size: decimal(&raw.step_size, "step_size")?,
        min_amount: decimal(&raw.min_amount, "min_amount")?,
        min_notional: decimal(&raw.min_notional, "min_notional")?,
        maker_fee: fee(&raw.maker_fee, "maker_fee")?,
        taker_fee: fee(&raw.taker_fee, "taker_fee")?,
        fee_raise: None,
    };
    let spec = PairSpec::new(&definition, specs).map_err(|error| at(line, format!("pair {symbol}: {error}")))?;
    Ok(PairConfig {
        symbol,
        definition,
        spec,
    })
}

/// Whether an `http://` URL names a host on this machine.
pub fn is_loopback_url(text: &str) -> bool {
    // Parsed as a URL, not split by hand: `http://localhost:1@evil.example` is evil.example's.
    let Ok(url) = url::Url::parse(text) else {
        return false;
    };
    url.scheme() == "http"
        && match url.host() {
            Some(url::Host::Domain(domain)) => domain.eq_ignore_ascii_case("localhost"),
            Some(url::Host::Ipv4(address)) => address.is_loopback(),
            Some(url::Host::Ipv6(address)) => address.is_loopback(),
            None => false,
        }
}
