//! The venue's configuration: chains, their assets and pairs, and the service's limits.
//!
//! A TOML file is read into raw structs, then checked as a whole: every address, symbol,
//! decimal and pair rule. A fault is reported with the line it sits on. The embedded default
//! (`config/default.toml`) ships in the binary. This module builds the engine's configuration
//! but runs nothing.

use std::collections::HashMap;
use std::path::{Path, PathBuf};

use dexd_core::{
    Address, AssetIndex, AssetSpec, CustodyMode, Decimal, EngineConfig, EngineLimits, FeeRate, PairDefinition,
    PairIndex, PairSpec,
};
use serde::Deserialize;
use toml::Spanned;

use dexd_crypto::parse_address;
pub use dexd_settlement::config::{OperatorKeySource, VaultConfig};

/// The configuration compiled into the binary.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../config/default.toml");

/// The longest asset symbol accepted.
pub const MAX_SYMBOL_LENGTH: usize = 16;

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The service's limits.
    pub limits: Limits,
    /// When the chains' snapshots are written.
    pub snapshots: Snapshots,
    /// Every chain, in file order.
    pub chains: Vec<ChainConfig>,
}

impl Config {
    /// The most decimals any asset of any chain has: a request's decimal with more is malformed
    /// (400 `INVALID_NUMBER`); one with fewer but finer than its own asset is off the asset's
    /// grid (422). The OpenAPI document's decimal patterns use it.
    pub fn max_asset_decimals(&self) -> u32 {
        self.chains
            .iter()
            .flat_map(|chain| chain.assets.iter().map(|asset| asset.decimals))
            .max()
            .unwrap_or(0)
    }
}

/// Limits of the service, all documented in the README.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Limits {
    /// The largest request body accepted, in bytes.
    pub max_body_bytes: usize,
    /// Open orders one account may have on one chain.
    pub max_open_orders_per_account: u32,
    /// Resting orders one chain's books may hold.
    pub max_resting_orders_per_chain: usize,
    /// Accounts one chain may hold.
    pub max_accounts_per_chain: usize,
    /// Nonces of client-signed requests one chain keeps at once, each until its request expires
    /// (at most an hour); past this, signed requests are answered 503.
    pub max_live_nonces_per_chain: usize,
    /// State changes that may wait for one chain's writer; past this, 503.
    pub write_queue_capacity: usize,
    /// How long a write waits for a locked database before the batch is answered 503.
    pub write_lock_timeout_ms: u64,
    /// How long a client may take to send a request body before it is answered 408.
    pub body_read_timeout_ms: u64,
    /// How long a connection may take to send a request's headers before it is closed.
    pub header_read_timeout_ms: u64,
    /// Open connections served at once; further ones wait to be accepted.
    pub max_connections: usize,
    /// Requests one client IP may make per second, on every path (429 past it).
    pub requests_per_second_per_ip: u32,
    /// State changes (orders, cancels, deposits, withdrawals) one account may make per second.
    pub writes_per_second_per_account: u32,
    /// Deposits sent through the venue and not yet confirmed, and separately withdrawals not yet
    /// confirmed, one vault chain keeps at once; past this, new ones are answered 503.
    pub max_pending_transfers_per_chain: usize,
    /// Stream connections (`/ws`) one client IP may hold; past this the upgrade is answered 429.
    pub max_stream_connections_per_ip: usize,
    /// Stream connections the server holds in all; past this the upgrade is answered 503.
    pub max_stream_connections: usize,
    /// Messages a stream connection may have waiting to be written; past this the client is
    /// told `SLOW_CONSUMER` and disconnected.
    pub stream_queue_messages_per_connection: usize,
    /// Bytes a stream connection may have waiting to be written; past this, as above.
    pub stream_queue_bytes_per_connection: usize,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_body_bytes: 64 * 1024,
            max_open_orders_per_account: 500,
            max_resting_orders_per_chain: 2_000_000,
            max_accounts_per_chain: 10_000_000,
            max_live_nonces_per_chain: 1_000_000,
            write_queue_capacity: 4_096,
            write_lock_timeout_ms: 5_000,
            body_read_timeout_ms: 10_000,
            header_read_timeout_ms: 10_000,
            max_connections: 10_000,
            requests_per_second_per_ip: 20_000,
            writes_per_second_per_account: 1_000,
            max_pending_transfers_per_chain: 100_000,
            max_stream_connections_per_ip: 100,
            max_stream_connections: 10_000,
            stream_queue_messages_per_connection: 4_096,
            stream_queue_bytes_per_connection: 4 * 1024 * 1024,
        }
    }
}

/// When each chain's state is written to a snapshot (`[snapshots]`), so that a start replays only
/// the journal after the newest one. Snapshots are built beside the running chain, from the
/// previous snapshot and the journal, without stopping its writes.
#[derive(Debug, Clone, Copy, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Snapshots {
    /// A snapshot is written once the journal has this many commands beyond the last one; 0
    /// turns snapshots off (every start replays the whole journal).
    pub every_commands: u64,
    /// How many snapshots of each chain are kept (at least 1); older ones are deleted once a new
    /// one is written. Two keep a fallback if the newest turns out damaged.
    pub keep: usize,
    /// How often the journal's length is checked against `every_commands`.
    pub check_interval_ms: u64,
}

impl Default for Snapshots {
    fn default() -> Snapshots {
        Snapshots {
            every_commands: 1_000_000,
            keep: 2,
            check_interval_ms: 1_000,
        }
    }
}

/// One chain's venue.
#[derive(Debug, Clone)]
pub struct ChainConfig {
    /// The chain id.
    pub chain_id: u64,
    /// A human name.
    pub name: String,
    /// The EIP-712 `verifyingContract` (the vault, in vault custody).
    pub venue_contract: Address,
    /// Where fees go.
    pub fee_account: Address,
    /// Where the chain's balances are held.
    pub custody: Custody,
    /// The chain's assets; an [`AssetIndex`] is a position here.
    pub assets: Vec<AssetConfig>,
    /// The chain's pairs; a [`PairIndex`] is a position here.
    pub pairs: Vec<PairConfig>,
    asset_by_symbol: HashMap<String, AssetIndex>,
    pair_by_symbol: HashMap<String, PairIndex>,
}

/// Where a chain's balances are held, as configured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Custody {
    /// The venue's own ledger (the default): no chain is contacted.
    Ledger,
    /// A vault contract on the chain, reached through a JSON-RPC node.
    Vault(VaultConfig),
}

/// One asset.
#[derive(Debug, Clone)]
pub struct AssetConfig {
    /// Upper-case symbol.
    pub symbol: String,
    /// A human name.
    pub name: String,
    /// Decimals of the smallest unit.
    pub decimals: u32,
    /// The token contract; `None` for the native asset.
    pub address: Option<Address>,
}

/// One pair, with its checked rules.
#[derive(Debug, Clone)]
pub struct PairConfig {
    /// `BASE/QUOTE`.
    pub symbol: String,
    /// The definition as configured.
    pub definition: PairDefinition,
    /// The checked rules.
    pub spec: PairSpec,
}

impl ChainConfig {
    /// The asset with this symbol, case-insensitively.
    pub fn asset(&self, symbol: &str) -> Option<AssetIndex> {
        self.asset_by_symbol.get(&symbol.to_ascii_uppercase()).copied()
    }

    /// The pair with this `BASE/QUOTE` symbol, case-insensitively.
    pub fn pair(&self, symbol: &str) -> Option<PairIndex> {
        self.pair_by_symbol.get(&symbol.to_ascii_uppercase()).copied()
    }

    /// The asset behind an index.
    pub fn asset_config(&self, asset: AssetIndex) -> &AssetConfig {
        &self.assets[usize::from(asset.0)]
    }

    /// The pair behind an index.
    pub fn pair_config(&self, pair: PairIndex) -> &PairConfig {
        &self.pairs[usize::from(pair.0)]
    }

    /// The vault settings, on a vault chain.
    pub fn vault(&self) -> Option<&VaultConfig> {
        match &self.custody {
            Custody::Ledger => None,
            Custody::Vault(vault) => Some(vault),
        }
    }

    /// The engine's configuration for this chain.
    pub fn engine_config(&self, limits: &Limits) -> EngineConfig {
        EngineConfig {
            assets: self
                .assets
                .iter()
                .map(|asset| AssetSpec {
                    decimals: asset.decimals,
                })
                .collect(),
            pairs: self.pairs.iter().map(|pair| pair.definition.clone()).collect(),
            fee_account: self.fee_account,
            custody: match self.custody {
                Custody::Ledger => CustodyMode::Ledger,
                Custody::Vault(_) => CustodyMode::Vault,
            },
            limits: EngineLimits {
                max_open_orders_per_account: limits.max_open_orders_per_account,
                max_resting_orders: limits.max_resting_orders_per_chain,
                max_accounts: limits.max_accounts_per_chain,
                max_live_nonces: limits.max_live_nonces_per_chain,
                max_pending_transfers: limits.max_pending_transfers_per_chain,
            },
        }
    }
}

/// A configuration fault, with the line it sits on when known.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ConfigError {
    /// The 1-based line, when the fault has one.
    pub line: Option<usize>,
    /// What is wrong.
    pub message: String,
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.line {
            Some(line) => write!(formatter, "line {line}: {}", self.message),
            None => formatter.write_str(&self.message),
        }
    }
}

impl std::error::Error for ConfigError {}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawConfig {
    #[serde(default)]
    limits: Limits,
    #[serde(default)]
    snapshots: Snapshots,
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

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawCustody {
    mode: String,
    rpc_url: Option<String>,
    vault: Option<String>,
    confirmations: Option<u64>,
    poll_interval_ms: Option<u64>,
    start_block: Option<u64>,
    operator_key_file: Option<String>,
    operator_key_env: Option<String>,
    max_log_range_blocks: Option<u64>,
    max_withdrawals_per_transaction: Option<usize>,
    withdrawal_validity_ms: Option<u64>,
    rpc_timeout_ms: Option<u64>,
    replace_after_ms: Option<u64>,
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
        let snapshots = raw.snapshots;
        if snapshots.keep == 0 || snapshots.check_interval_ms == 0 {
            return Err(ConfigError {
                line: None,
                message: "[snapshots] keep and check_interval_ms must be positive".into(),
            });
        }
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

fn at(line: usize, message: String) -> ConfigError {
    ConfigError {
        line: Some(line),
        message,
    }
}

fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|byte| *byte == b'\n')
        .count()
        + 1
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
    let mut assets = Vec::new();
    let mut asset_by_symbol = HashMap::new();
    for raw_asset in raw.assets {
        let asset_line = line_of(text, raw_asset.span().start);
        let asset = check_asset(raw_asset.into_inner(), asset_line)?;
        let index = AssetIndex(u16::try_from(assets.len()).map_err(|_| at(asset_line, "too many assets".into()))?);
        if asset_by_symbol.insert(asset.symbol.clone(), index).is_some() {
            return Err(at(asset_line, format!("asset {} is configured twice", asset.symbol)));
        }
        assets.push(asset);
    }
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
        "vault" => {
            let required = |value: Option<String>, name: &str| {
                value.ok_or_else(|| at(line, format!("custody mode \"vault\" needs {name}")))
            };
            let rpc_url = required(raw.rpc_url, "rpc_url")?;
            if !(rpc_url.starts_with("http://") || rpc_url.starts_with("https://")) {
                return Err(at(line, "rpc_url must be an http:// or https:// URL".into()));
            }
            let vault_text = required(raw.vault, "vault")?;
            let vault = parse_address(&vault_text)
                .map_err(|_| at(line, format!("vault {vault_text:?} is not a valid address")))?;
            let operator_key =
                match (raw.operator_key_file, raw.operator_key_env) {
                    (Some(file), None) => OperatorKeySource::File(PathBuf::from(file)),
                    (None, Some(variable)) => OperatorKeySource::Environment(variable),
                    _ => return Err(at(
                        line,
                        "custody mode \"vault\" needs exactly one of operator_key_file and operator_key_env (the key \
                         itself never goes into the configuration)"
                            .into(),
                    )),
                };
            let confirmations = raw.confirmations.unwrap_or(12);
            if !(1..=10_000).contains(&confirmations) {
                return Err(at(line, "confirmations must be between 1 and 10000".into()));
            }
            let bounded = |value: Option<u64>, default: u64, name: &str, max: u64| {
                let value = value.unwrap_or(default);
                if value == 0 || value > max {
                    Err(at(line, format!("{name} must be between 1 and {max}")))
                } else {
                    Ok(value)
                }
            };
            let max_withdrawals_per_transaction = raw.max_withdrawals_per_transaction.unwrap_or(50);
            if !(1..=500).contains(&max_withdrawals_per_transaction) {
                return Err(at(
                    line,
                    "max_withdrawals_per_transaction must be between 1 and 500".into(),
                ));
            }
            Ok(Custody::Vault(VaultConfig {
                rpc_url,
                vault,
                confirmations,
                poll_interval_ms: bounded(raw.poll_interval_ms, 1_000, "poll_interval_ms", 600_000)?,
                start_block: raw.start_block.unwrap_or(0),
                operator_key,
                max_log_range_blocks: bounded(raw.max_log_range_blocks, 2_000, "max_log_range_blocks", 1_000_000)?,
                max_withdrawals_per_transaction,
                withdrawal_validity_ms: bounded(
                    raw.withdrawal_validity_ms,
                    24 * 60 * 60 * 1_000,
                    "withdrawal_validity_ms",
                    MAX_CUSTODY_WAIT_MS,
                )?,
                rpc_timeout_ms: bounded(raw.rpc_timeout_ms, 10_000, "rpc_timeout_ms", 600_000)?,
                replace_after_ms: bounded(raw.replace_after_ms, 60_000, "replace_after_ms", MAX_CUSTODY_WAIT_MS)?,
            }))
        }
        other => Err(at(
            line,
            format!("custody mode {other:?} is not known; use \"ledger\" or \"vault\""),
        )),
    }
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
        let rate = decimal(value, name)?;
        let parts = rate
            .to_scaled_units(6)
            .ok()
            .and_then(|parts| u32::try_from(parts).ok())
            .and_then(FeeRate::from_parts_per_million)
            .ok_or_else(|| {
                at(
                    line,
                    format!("pair {symbol}: {name} must be between 0 and 1 with at most 6 decimals"),
                )
            })?;
        Ok(parts)
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
    };
    let spec = PairSpec::new(&definition, specs).map_err(|error| at(line, format!("pair {symbol}: {error}")))?;
    Ok(PairConfig {
        symbol,
        definition,
        spec,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_embedded_default_has_three_real_networks() {
        let config = Config::embedded_default();
        let ids: Vec<u64> = config.chains.iter().map(|chain| chain.chain_id).collect();
        assert_eq!(ids, vec![1, 11_155_111, 42_161]);
        let mainnet = config.chain(1).unwrap();
        assert_eq!(mainnet.pair("eth/usdc"), Some(PairIndex(0)));
        let usdc = mainnet.asset_config(mainnet.asset("usdc").unwrap());
        assert_eq!(
            dexd_crypto::checksummed(&usdc.address.unwrap()),
            "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
        );
    }

    #[test]
    fn a_bad_pair_is_refused_with_its_line() {
        let text = DEFAULT_CONFIG_TOML.replacen("tick_size = \"0.01\"", "tick_size = \"0.000001\"", 1);
        let error = Config::parse(&text).unwrap_err();
        let expected_line = line_of(&text, text.find("[[chains.pairs]]").unwrap());
        assert_eq!(error.line, Some(expected_line), "{error}");
        assert!(error.message.contains("ETH/USDC"), "{error}");
    }

    #[test]
    fn a_bad_checksum_and_a_syntax_error_are_refused_with_their_lines() {
        let text = DEFAULT_CONFIG_TOML.replacen(
            "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
            "0xa0B86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
            1,
        );
        let error = Config::parse(&text).unwrap_err();
        assert!(error.message.contains("USDC"), "{error}");
        assert!(error.line.is_some());
        let error = Config::parse("[[chains]]\nchain_id = \"x\"\n").unwrap_err();
        assert_eq!(error.line, Some(2), "{error}");
        let error = Config::parse("[[chains]]\nchain_id = 1\nnmae = \"x\"\n").unwrap_err();
        assert!(error.line.is_some(), "{error}");
    }
}
