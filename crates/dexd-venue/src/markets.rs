//! A chain's markets as the venue serves them: its assets and pairs by symbol, the messages
//! accounts sign over them, and the configuration the journal holds. They change only when a
//! journaled `Configure` changes them (an operator listing a pair, a fee change, a restart with
//! an edited file), and then the writer swaps the whole value after the command is durable, so
//! a request reads one consistent set for its whole life ([`Chain::markets`](crate::Chain)).
//!
//! It does not decide what may change (`ChainConfiguration::check_change_to` does) nor journal
//! anything (the writer does).

use std::sync::Arc;

use arc_swap::ArcSwap;

use crate::config::ChainConfig;

/// One consistent view of a chain's markets.
#[derive(Debug)]
pub struct Markets {
    /// The chain's assets and pairs by symbol and index, with the chain's settings (its name,
    /// custody and vault, which never change while it runs).
    pub config: ChainConfig,
    /// The messages accounts sign on the chain, built from its assets and pairs.
    pub messages: dexd_crypto::RequestMessages,
    /// The configuration the journal holds (or, before the writer first journals it, the one
    /// it is about to journal).
    pub configuration: dexd_core::ChainConfiguration,
}

impl Markets {
    /// The markets of `configuration`, with the chain's settings and the assets' names from
    /// `settings` (an asset it does not name is named by its symbol).
    pub fn new(settings: &ChainConfig, configuration: dexd_core::ChainConfiguration) -> Result<Markets, String> {
        let config = settings.with_markets_of(&configuration)?;
        let messages = dexd_crypto::RequestMessages::new(&configuration)
            .map_err(|error| format!("chain {}: {error:?}", settings.chain_id))?;
        Ok(Markets {
            config,
            messages,
            configuration,
        })
    }
}

/// Where the current [`Markets`] are kept: read by every request without a lock (arc-swap, made
/// for a value read everywhere and replaced rarely), replaced by the writer alone.
#[derive(Debug)]
pub(crate) struct MarketsCell(ArcSwap<Markets>);

impl MarketsCell {
    pub(crate) fn new(markets: Markets) -> MarketsCell {
        MarketsCell(ArcSwap::from_pointee(markets))
    }

    /// The markets now.
    pub(crate) fn load(&self) -> Arc<Markets> {
        self.0.load_full()
    }

    /// Swaps in the markets of the engine's configuration when it differs from the current
    /// one (compared in place: a follower calls this after every batch it follows); a
    /// configuration the venue cannot serve (it was checked before it was journaled, so this
    /// is a bug) keeps the current markets and says so.
    pub(crate) fn follow(&self, chain_id: u64, engine: &dexd_core::Engine) {
        let current = self.0.load();
        let Some(description) = engine.description() else {
            return;
        };
        if current.configuration.description == *description && current.configuration.engine == *engine.config() {
            return;
        }
        let configuration = dexd_core::ChainConfiguration {
            description: description.clone(),
            engine: engine.config().clone(),
        };
        match Markets::new(&current.config, configuration) {
            Ok(markets) => {
                tracing::info!(
                    chain_id,
                    assets = markets.config.assets.len(),
                    pairs = markets.config.pairs.len(),
                    "the chain's markets changed"
                );
                self.0.store(Arc::new(markets));
            }
            Err(error) => {
                tracing::error!(chain_id, %error, "a journaled configuration cannot be served; keeping the markets")
            }
        }
    }
}

/// A fingerprint of the configuration file's chain configuration, which the journal's store
/// remembers once it is journaled ([`dexd_store::Journal::remember_file_configuration`]).
pub(crate) fn file_fingerprint(file: &dexd_core::ChainConfiguration) -> String {
    use sha3::{Digest, Keccak256};
    hex::encode(Keccak256::digest(format!("{file:?}").as_bytes()))
}

/// The configuration a leader journals, from the file's, the engine's (the journal's) and the
/// fingerprint of the file last journaled: the journal's assets and pairs kept, the file's
/// added, and for a pair both hold the file's values only when the file changed since
/// (`ChainConfiguration::merged_with_journal`). Fee raises are not yet announced here.
pub(crate) fn wanted_configuration(
    file: &dexd_core::ChainConfiguration,
    engine: &dexd_core::Engine,
    remembered_fingerprint: Option<&str>,
) -> dexd_core::ChainConfiguration {
    match engine.configuration() {
        Some(journal) => {
            let file_changed = remembered_fingerprint != Some(file_fingerprint(file).as_str());
            file.merged_with_journal(&journal, file_changed)
        }
        None => file.clone(),
    }
}
