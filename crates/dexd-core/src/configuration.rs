//! A chain's configuration as the journal holds it: everything replay needs besides the
//! commands and the chain itself. The engine's rules ([`EngineConfig`]: decimals, pairs, fees,
//! the limits that change outcomes) and the chain's description ([`ChainDescription`]: the
//! EIP-712 domain, the assets' symbols and tokens, from which every signed message is built).
//!
//! The venue journals it as `Command::Configure` first of all and again at every change, so a
//! replay (an auditor's, a follower's, a start's) needs nothing but the journal: a venue cannot
//! replay one configuration to its users and show another to its auditors. A change to a
//! journal that has commands may only add: assets and pairs are appended and keep their index,
//! symbol, token, decimals, tick and step; fees, minimums and limits may change. This module
//! checks a change; the engine applies it (`Engine::execute`).

use crate::custody::CustodyMode;
use crate::money::{Address, AssetIndex};
use crate::pair::{AssetSpec, PairDefinition};

/// What the chain is, besides the engine's rules: the EIP-712 domain every account signs under,
/// and each asset's symbol and token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainDescription {
    /// The chain id (the EIP-712 domain's `chainId`).
    pub chain_id: u64,
    /// The EIP-712 domain's `verifyingContract` (the vault, in vault custody).
    pub venue_contract: Address,
    /// One per asset of the engine's configuration, in the same order.
    pub assets: Vec<AssetDescription>,
}

/// One asset's name on the wire and on chain.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AssetDescription {
    /// Its upper-case symbol, as requests name it.
    pub symbol: String,
    /// Its token contract; `None` for the chain's native asset.
    pub token: Option<Address>,
}

/// The longest asset symbol a configuration may carry, in bytes.
pub const MAX_ASSET_SYMBOL_BYTES: usize = 32;
/// The most assets one chain may list (at start or at run time).
pub const MAX_ASSETS_PER_CHAIN: usize = 1_024;
/// The most pairs one chain may list (at start or at run time): the live streams keep room
/// for this many per chain.
pub const MAX_PAIRS_PER_CHAIN: usize = 1_024;

/// A chain's whole configuration, as `Command::Configure` journals it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ChainConfiguration {
    /// The chain and its assets' names.
    pub description: ChainDescription,
    /// The engine's rules.
    pub engine: EngineConfig,
}

/// Why a configuration is refused, or a change to one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ConfigurationRefused(pub String);

impl std::fmt::Display for ConfigurationRefused {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for ConfigurationRefused {}

fn refused(message: String) -> ConfigurationRefused {
    ConfigurationRefused(message)
}

impl ChainConfiguration {
    /// `BASE/QUOTE` of a pair, from its assets' symbols.
    pub fn pair_symbol(&self, pair: usize) -> String {
        let definition = &self.engine.pairs[pair];
        format!(
            "{}/{}",
            self.description.assets[usize::from(definition.base.0)].symbol,
            self.description.assets[usize::from(definition.quote.0)].symbol
        )
    }

    /// The symbol of an asset.
    pub fn asset_symbol(&self, asset: usize) -> &str {
        &self.description.assets[asset].symbol
    }

    /// Checks the configuration on its own: one description per asset, symbols short, upper
    /// case and distinct, a token for every asset but at most one native one.
    pub fn check(&self) -> Result<(), ConfigurationRefused> {
        if self.engine.limits.rules & !CURRENT_RULES != 0 {
            return Err(refused(format!(
                "matching rules {:#x} this engine does not know",
                self.engine.limits.rules
            )));
        }
        if self.engine.limits.venue_signed_window_ms > MAX_VENUE_SIGNED_WINDOW_MS {
            return Err(refused(format!(
                "a venue-signed window of {} ms; at most {MAX_VENUE_SIGNED_WINDOW_MS} ms",
                self.engine.limits.venue_signed_window_ms
            )));
        }
        let assets = &self.description.assets;
        if assets.len() > MAX_ASSETS_PER_CHAIN || self.engine.pairs.len() > MAX_PAIRS_PER_CHAIN {
            return Err(refused(format!(
                "{} assets and {} pairs; a chain lists at most {MAX_ASSETS_PER_CHAIN} and {MAX_PAIRS_PER_CHAIN}",
                assets.len(),
                self.engine.pairs.len()
            )));
        }
        if assets.len() != self.engine.assets.len() {
            return Err(refused(format!(
                "{} asset descriptions for {} assets",
                assets.len(),
                self.engine.assets.len()
            )));
        }
        for (index, asset) in assets.iter().enumerate() {
            let symbol = &asset.symbol;
            if symbol.is_empty()
                || symbol.len() > MAX_ASSET_SYMBOL_BYTES
                || !symbol
                    .bytes()
                    .all(|byte| byte.is_ascii_uppercase() || byte.is_ascii_digit())
            {
                return Err(refused(format!(
                    "asset {index}: symbol {symbol:?} is not 1 to 32 upper-case letters and digits"
                )));
            }
            if assets[..index].iter().any(|earlier| earlier.symbol == *symbol) {
                return Err(refused(format!("asset symbol {symbol} is given twice")));
            }
            if asset.token.is_some() && assets[..index].iter().any(|earlier| earlier.token == asset.token) {
                return Err(refused(format!("asset {symbol}: its token is another asset's")));
            }
        }
        if assets.iter().filter(|asset| asset.token.is_none()).count() > 1 && self.engine.custody == CustodyMode::Vault
        {
            return Err(refused("two native assets on a vault chain".into()));
        }
        Ok(())
    }

    /// Checks that a journal configured as `self` may go on as `next`: the same chain, domain,
    /// custody and fee account; the assets and pairs only appended to, each one kept as it
    /// was (symbol, token, decimals; base, quote, tick and step), since the journal's commands
    /// name them by index and their amounts are in their units. Fees, minimums and limits may
    /// change.
    pub fn check_change_to(&self, next: &ChainConfiguration) -> Result<(), ConfigurationRefused> {
        next.check()?;
        let (old, new) = (&self.description, &next.description);
        if old.chain_id != new.chain_id {
            return Err(refused(format!(
                "the chain id changed from {} to {}",
                old.chain_id, new.chain_id
            )));
        }
        if old.venue_contract != new.venue_contract {
            return Err(refused(format!(
                "the EIP-712 verifying contract changed from {} to {}",
                old.venue_contract, new.venue_contract
            )));
        }
        check_engine_change(&self.engine, &next.engine)?;
        for (index, (before, after)) in old.assets.iter().zip(&new.assets).enumerate() {
            if before != after {
                return Err(refused(format!(
                    "asset {index} ({}) changed its symbol or token; assets can only be added",
                    before.symbol
                )));
            }
        }
        Ok(())
    }
}

impl ChainConfiguration {
    /// The configuration a leader journals when the configuration file says `self` and the
    /// journal holds `journal`. The journal's assets and pairs come first, in its order (the
    /// ones the operator listed at run time are kept, at their index), then the file's new ones.
    /// An asset both hold is the file's (its fields never change, so a file that changes one is
    /// refused by [`check_change_to`](Self::check_change_to) as before). A pair both hold (by
    /// its assets' symbols) is the file's when the file changed since it was last journaled
    /// (`file_changed`), else the journal's, so that a fee changed at run time survives a restart
    /// with the same file and yields to an edited one. The chain's settings and limits are the
    /// file's.
    pub fn merged_with_journal(&self, journal: &ChainConfiguration, file_changed: bool) -> ChainConfiguration {
        let mut merged = self.clone();
        let file_assets = &self.description.assets;
        let file_index = |symbol: &str| file_assets.iter().position(|asset| asset.symbol == symbol);
        merged.description.assets.clear();
        merged.engine.assets.clear();
        for (named, spec) in journal.description.assets.iter().zip(&journal.engine.assets) {
            match file_index(&named.symbol) {
                Some(index) => {
                    merged.description.assets.push(file_assets[index].clone());
                    merged.engine.assets.push(self.engine.assets[index]);
                }
                None => {
                    merged.description.assets.push(named.clone());
                    merged.engine.assets.push(*spec);
                }
            }
        }
        for (named, spec) in file_assets.iter().zip(&self.engine.assets) {
            if !merged
                .description
                .assets
                .iter()
                .any(|asset| asset.symbol == named.symbol)
            {
                merged.description.assets.push(named.clone());
                merged.engine.assets.push(*spec);
            }
        }
        // The file's asset indexes where the merged list has them.
        let merged_index = |file_asset: AssetIndex| {
            let symbol = &file_assets[usize::from(file_asset.0)].symbol;
            let position = merged
                .description
                .assets
                .iter()
                .position(|asset| asset.symbol == *symbol)
                .expect("invariant: every asset of the file is in the merged list");
            AssetIndex(u16::try_from(position).expect("invariant: asset indexes fit u16"))
        };
        let remapped = |definition: &PairDefinition| PairDefinition {
            base: merged_index(definition.base),
            quote: merged_index(definition.quote),
            ..definition.clone()
        };
        let file_pair_of = |journal_pair: &PairDefinition| {
            let symbols = (
                journal.asset_symbol(usize::from(journal_pair.base.0)),
                journal.asset_symbol(usize::from(journal_pair.quote.0)),
            );
            self.engine.pairs.iter().position(|pair| {
                (
                    self.asset_symbol(usize::from(pair.base.0)),
                    self.asset_symbol(usize::from(pair.quote.0)),
                ) == symbols
            })
        };
        let mut pairs = Vec::with_capacity(journal.engine.pairs.len().max(self.engine.pairs.len()));
        let mut taken = vec![false; self.engine.pairs.len()];
        for journal_pair in &journal.engine.pairs {
            match file_pair_of(journal_pair) {
                Some(index) => {
                    taken[index] = true;
                    pairs.push(if file_changed {
                        remapped(&self.engine.pairs[index])
                    } else {
                        journal_pair.clone()
                    });
                }
                None => pairs.push(journal_pair.clone()),
            }
        }
        for (index, file_pair) in self.engine.pairs.iter().enumerate() {
            if !taken[index] {
                pairs.push(remapped(file_pair));
            }
        }
        merged.engine.pairs = pairs;
        merged
    }
}

/// The part of [`ChainConfiguration::check_change_to`] about the engine's rules (also used for
/// an engine whose journal predates configurations, which has rules and no description).
pub fn check_engine_change(old: &EngineConfig, new: &EngineConfig) -> Result<(), ConfigurationRefused> {
    if old.custody != new.custody {
        return Err(refused("the custody mode changed".into()));
    }
    if new.limits.fee_notice_ms < old.limits.fee_notice_ms {
        return Err(refused(format!(
            "the fee notice went down from {} ms to {} ms; it may only go up",
            old.limits.fee_notice_ms, new.limits.fee_notice_ms
        )));
    }
    let (old_window, new_window) = (old.limits.venue_signed_window_ms, new.limits.venue_signed_window_ms);
    if old_window != 0 && (new_window == 0 || new_window > old_window) {
        return Err(refused(format!(
            "the venue-signed window went from {old_window} ms to {new_window} ms; once set it may only narrow"
        )));
    }
    if old.limits.rules & !new.limits.rules != 0 {
        return Err(refused(format!(
            "the matching rules went from {:#x} to {:#x}; a rule once adopted stays",
            old.limits.rules, new.limits.rules
        )));
    }
    if old.fee_account != new.fee_account {
        return Err(refused(format!(
            "the fee account changed from {} to {}",
            old.fee_account, new.fee_account
        )));
    }
    if new.assets.len() < old.assets.len() {
        return Err(refused(format!(
            "{} assets where the journal has {}; assets can only be added",
            new.assets.len(),
            old.assets.len()
        )));
    }
    for (index, (before, after)) in old.assets.iter().zip(&new.assets).enumerate() {
        if before != after {
            return Err(refused(format!("asset {index} changed its decimals")));
        }
    }
    if new.pairs.len() < old.pairs.len() {
        return Err(refused(format!(
            "{} pairs where the journal has {}; pairs can only be added",
            new.pairs.len(),
            old.pairs.len()
        )));
    }
    for (index, (before, after)) in old.pairs.iter().zip(&new.pairs).enumerate() {
        if before.base != after.base
            || before.quote != after.quote
            || before.tick_size != after.tick_size
            || before.step_size != after.step_size
        {
            return Err(refused(format!(
                "pair {index} changed its assets, tick or step; pairs can only be added"
            )));
        }
    }
    Ok(())
}

/// The documented limits of one chain's engine.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct EngineLimits {
    /// Open orders one account may have on the chain.
    pub max_open_orders_per_account: u32,
    /// Resting orders the chain's books may hold in all.
    pub max_resting_orders: usize,
    /// Accounts the ledger may hold.
    pub max_accounts: usize,
    /// Nonces of client-signed requests the chain keeps at once (each until its request expires).
    pub max_live_nonces: usize,
    /// Of those, the most one account may hold.
    pub max_live_nonces_per_account: usize,
    /// Pending deposits, and separately pending withdrawals, the chain keeps at once (vault
    /// custody).
    pub max_pending_transfers: usize,
    /// How long after a configuration is journaled a raise of a pair's fees it announces may
    /// take effect, at the least (a cut applies at once). It may be raised, never lowered.
    pub fee_notice_ms: u64,
    /// How far a command the venue signed with an account's key may be from its signed expiry:
    /// it is applied only while its time is within this many ms of that expiry either side, and
    /// its nonce is claimed like a client's, so that no such command can be journaled twice or
    /// late. Zero only in journals written before the rule (their venue-signed commands claim
    /// nothing); once set it may narrow, never widen or return to zero. At most
    /// [`MAX_VENUE_SIGNED_WINDOW_MS`].
    pub venue_signed_window_ms: u64,
    /// The matching rules the chain adopted, one bit each ([`RULE_EXPIRED_MAKERS_SKIPPED`]):
    /// zero in journals written before them, so that a replay applies each command as it was
    /// first applied; once adopted a rule stays. [`CURRENT_RULES`] by default.
    pub rules: u64,
}

/// A rule: an order is dead at its `expiresAt` inside matching. A resting order whose expiry
/// has come is never filled: the command that meets it cancels it (`expired`) and walks on,
/// whether or not the venue's timer has journaled its expiry yet.
pub const RULE_EXPIRED_MAKERS_SKIPPED: u64 = 1;
/// A rule: every met trigger fires. A matching's met triggers are taken a bounded number per
/// command ([`crate::engine::MAX_TRIGGERS_FIRED_PER_COMMAND`]); those beyond wait in the pair's
/// queue of met ranges and fire first in the next command that fires triggers on the pair, or in
/// the [`crate::Command::FireMetTriggers`] the venue's timer journals, without waiting for a
/// trade to meet them again. Without it (older journals), met triggers beyond the bound go back
/// to waiting.
pub const RULE_MET_TRIGGERS_QUEUED: u64 = 2;
/// A rule: an account's signed requests take one room of live nonces whoever signs them (the
/// account, its agents, its owner for a subaccount): the holder of a claim is the account's
/// owner, and its agents together hold at most all but [`crate::nonces::owner_reserve`] of it.
/// Without it (older journals), each signer held a room of its own, so an account and its ten
/// agents held eleven.
pub const RULE_NONCES_PER_OWNER: u64 = 4;
/// Every rule this version of the engine knows, and what a new configuration adopts.
pub const CURRENT_RULES: u64 = RULE_EXPIRED_MAKERS_SKIPPED | RULE_MET_TRIGGERS_QUEUED | RULE_NONCES_PER_OWNER;

/// The widest [`EngineLimits::venue_signed_window_ms`], and the default: 5 s.
pub const MAX_VENUE_SIGNED_WINDOW_MS: u64 = 5_000;

/// The notice a raise of fees needs by default: a day.
pub const DEFAULT_FEE_NOTICE_MS: u64 = 24 * 3_600_000;

impl Default for EngineLimits {
    fn default() -> EngineLimits {
        EngineLimits {
            max_open_orders_per_account: 500,
            max_resting_orders: 2_000_000,
            max_accounts: 10_000_000,
            max_live_nonces: 1_000_000,
            max_live_nonces_per_account: 100_000,
            max_pending_transfers: 100_000,
            fee_notice_ms: DEFAULT_FEE_NOTICE_MS,
            venue_signed_window_ms: MAX_VENUE_SIGNED_WINDOW_MS,
            rules: CURRENT_RULES,
        }
    }
}

/// Everything the engine of one chain is built from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineConfig {
    /// The chain's assets; an [`AssetIndex`] is a position in this list.
    pub assets: Vec<AssetSpec>,
    /// The chain's pairs; a [`PairIndex`](crate::money::PairIndex) is a position in this list.
    pub pairs: Vec<PairDefinition>,
    /// Where fees go.
    pub fee_account: Address,
    /// Where the chain's balances are held.
    pub custody: CustodyMode,
    /// The chain's limits.
    pub limits: EngineLimits,
}
