//! The venue's configuration: chains, their assets and pairs, and the service's limits.
//!
//! A TOML file is read into raw structs, then checked as a whole: every address, symbol,
//! decimal and pair rule. A fault is reported with the line it sits on. The embedded default
//! (`config/default.toml`) ships in the binary. This module builds the engine's configuration
//! but runs nothing.

use std::collections::HashMap;

use dexd_core::{
    Address, AssetIndex, AssetSpec, CustodyMode, EngineConfig, EngineLimits, PairDefinition, PairIndex, PairSpec,
};
use serde::Deserialize;

use dexd_crypto::parse_address;
pub use dexd_custody::config::{Confirmations, OperatorKeySource, RootDataCarrier, VaultConfig};
pub use dexd_store::backend::{JournalBackend, PostgresBackend};

/// The configuration compiled into the binary.
pub const DEFAULT_CONFIG_TOML: &str = include_str!("../../config/default.toml");

/// The longest asset symbol accepted.
pub const MAX_SYMBOL_LENGTH: usize = 16;

/// The cluster's shared secret: erased on drop, never printed.
#[derive(Clone)]
pub struct ClusterSecret(zeroize::Zeroizing<Vec<u8>>);

impl ClusterSecret {
    /// Wraps the secret's bytes.
    pub fn new(bytes: Vec<u8>) -> ClusterSecret {
        ClusterSecret(zeroize::Zeroizing::new(bytes))
    }

    /// The secret's bytes, to key a MAC with.
    pub fn bytes(&self) -> &[u8] {
        &self.0
    }
}

impl std::fmt::Debug for ClusterSecret {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str("ClusterSecret(<redacted>)")
    }
}

/// A checked configuration.
#[derive(Debug, Clone)]
pub struct Config {
    /// The service's limits.
    pub limits: Limits,
    /// When the chains' snapshots are written.
    pub snapshots: Snapshots,
    /// Where the chains' journals are (`[store]`, and `[cluster]` on PostgreSQL).
    pub journal: JournalBackend,
    /// The secret the cluster's nodes share (`[cluster] secret_env`), which a forwarded write
    /// is signed with; `None`: forwarded writes are not signed, and count against the
    /// forwarding node's address.
    pub cluster_secret: Option<ClusterSecret>,
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

/// Limits of the service, all documented in `docs/limits.md`.
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
    /// Of those, the most one account may hold, so that no account can fill a chain's; past
    /// this, that account's signed requests are answered 429 until one of its requests expires.
    pub max_live_nonces_per_account: usize,
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
    /// Bytes all stream connections together may have waiting; a connection whose message would
    /// pass it is ended as a slow consumer, so that memory for streams is bounded whatever the
    /// number of connections.
    pub stream_queue_bytes_total: usize,
    /// How long after it is journaled a raise of a pair's fees takes effect, at the least (a cut
    /// applies at once); journaled with the configuration, it may be raised and never lowered.
    pub fee_notice_ms: u64,
}

/// Messages one stream connection may have waiting to be written, by default
/// (`[limits] stream_queue_messages_per_connection`).
pub const MAX_QUEUED_MESSAGES_PER_CONNECTION: usize = 4_096;
/// Bytes one stream connection may have waiting to be written, by default
/// (`[limits] stream_queue_bytes_per_connection`).
pub const MAX_QUEUED_BYTES_PER_CONNECTION: usize = 4 * 1024 * 1024;
/// Bytes all stream connections together may have waiting to be written, by default
/// (`[limits] stream_queue_bytes_total`).
pub const MAX_QUEUED_BYTES_TOTAL: usize = 1024 * 1024 * 1024;

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_body_bytes: 64 * 1024,
            max_open_orders_per_account: 500,
            max_resting_orders_per_chain: 2_000_000,
            max_accounts_per_chain: 10_000_000,
            max_live_nonces_per_chain: 1_000_000,
            max_live_nonces_per_account: 100_000,
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
            stream_queue_messages_per_connection: MAX_QUEUED_MESSAGES_PER_CONNECTION,
            stream_queue_bytes_per_connection: MAX_QUEUED_BYTES_PER_CONNECTION,
            stream_queue_bytes_total: MAX_QUEUED_BYTES_TOTAL,
            fee_notice_ms: dexd_core::DEFAULT_FEE_NOTICE_MS,
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

    /// This chain's settings (name, custody, domain, fee account) with the assets and pairs of
    /// `configuration` (what the journal holds), in its order: an asset keeps the name given
    /// here for its symbol, or is named by its symbol (one listed at run time).
    pub fn with_markets_of(&self, configuration: &dexd_core::ChainConfiguration) -> Result<ChainConfig, String> {
        let (description, engine) = (&configuration.description, &configuration.engine);
        if description.assets.len() != engine.assets.len() {
            return Err(format!(
                "chain {}: {} asset descriptions for {} assets",
                self.chain_id,
                description.assets.len(),
                engine.assets.len()
            ));
        }
        let mut assets = Vec::with_capacity(engine.assets.len());
        let mut asset_by_symbol = HashMap::with_capacity(engine.assets.len());
        for (index, (named, spec)) in description.assets.iter().zip(&engine.assets).enumerate() {
            let name = self
                .asset(&named.symbol)
                .map_or_else(|| named.symbol.clone(), |known| self.asset_config(known).name.clone());
            let index = AssetIndex(u16::try_from(index).map_err(|_| "too many assets".to_string())?);
            asset_by_symbol.insert(named.symbol.clone(), index);
            assets.push(AssetConfig {
                symbol: named.symbol.clone(),
                name,
                decimals: spec.decimals,
                address: named.token,
            });
        }
        let mut pairs = Vec::with_capacity(engine.pairs.len());
        let mut pair_by_symbol = HashMap::with_capacity(engine.pairs.len());
        for (index, definition) in engine.pairs.iter().enumerate() {
            let symbol_of = |asset: AssetIndex| {
                description
                    .assets
                    .get(usize::from(asset.0))
                    .map(|asset| asset.symbol.clone())
                    .ok_or_else(|| format!("pair {index} names asset {} the chain does not have", asset.0))
            };
            let symbol = format!("{}/{}", symbol_of(definition.base)?, symbol_of(definition.quote)?);
            let spec = PairSpec::new(definition, &engine.assets).map_err(|error| format!("pair {symbol}: {error}"))?;
            let index = PairIndex(u16::try_from(index).map_err(|_| "too many pairs".to_string())?);
            pair_by_symbol.insert(symbol.clone(), index);
            pairs.push(PairConfig {
                symbol,
                definition: definition.clone(),
                spec,
            });
        }
        Ok(ChainConfig {
            chain_id: self.chain_id,
            name: self.name.clone(),
            venue_contract: self.venue_contract,
            fee_account: self.fee_account,
            custody: self.custody.clone(),
            assets,
            pairs,
            asset_by_symbol,
            pair_by_symbol,
        })
    }

    /// The chain's whole configuration as the journal records it (`Command::Configure`): the
    /// engine's rules and the chain's description.
    pub fn configuration(&self, limits: &Limits) -> dexd_core::ChainConfiguration {
        dexd_core::ChainConfiguration {
            description: dexd_core::ChainDescription {
                chain_id: self.chain_id,
                venue_contract: self.venue_contract,
                assets: self
                    .assets
                    .iter()
                    .map(|asset| dexd_core::AssetDescription {
                        symbol: asset.symbol.clone(),
                        token: asset.address,
                    })
                    .collect(),
            },
            engine: self.engine_config(limits),
        }
    }

    /// The engine's rules of the chain.
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
                max_live_nonces_per_account: limits.max_live_nonces_per_account,
                max_pending_transfers: limits.max_pending_transfers_per_chain,
                fee_notice_ms: limits.fee_notice_ms,
                venue_signed_window_ms: dexd_core::MAX_VENUE_SIGNED_WINDOW_MS,
                rules: dexd_core::CURRENT_RULES,
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

/// A fault at a line of the file.
fn at(line: usize, message: String) -> ConfigError {
    ConfigError {
        line: Some(line),
        message,
    }
}

/// The 1-based line of a byte offset of the file.
fn line_of(text: &str, offset: usize) -> usize {
    text[..offset.min(text.len())]
        .bytes()
        .filter(|byte| *byte == b'\n')
        .count()
        + 1
}

mod cluster_sections;
mod parse;

pub use self::parse::is_loopback_url;
#[cfg(test)]
mod tests;
