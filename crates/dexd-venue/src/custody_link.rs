//! How custody reaches the venue: each [`Chain`] is a [`VenueChain`] to `dexd-custody`, and
//! [`vault_chain_setups`] hands custody the vault chains of the configuration.
//!
//! Custody reads the engine and journals its facts as commands through the chain's writer, like
//! any client; it gets nothing else of the venue.

use std::sync::Arc;

use dexd_core::{Command, Engine};
use dexd_custody::{LeaderEpoch, Outcome, SettledAsset, StatePosition, TreeFuture, VaultChainSetup, VenueChain};
use dexd_store::WriteError;

use super::{Chain, Venue};

impl VenueChain for Chain {
    fn read_engine(&self, read: &mut dyn FnMut(&Engine)) -> StatePosition {
        let (rebuilds, sequence) = Chain::read_engine_at(self, |engine| read(engine)).1;
        StatePosition { rebuilds, sequence }
    }

    fn durable_position(&self) -> StatePosition {
        let (rebuilds, sequence) = self.durable_position();
        StatePosition { rebuilds, sequence }
    }

    fn leader_epoch(&self) -> Option<LeaderEpoch> {
        Chain::leader_epoch(self).map(LeaderEpoch)
    }

    fn enqueue(&self, command: Command, under: Option<LeaderEpoch>) -> Result<Outcome, WriteError> {
        let queued = Chain::enqueue(self, command, None, under.map(|epoch| epoch.0))?;
        Ok(Box::pin(queued.outcome()))
    }

    fn note_chain_time_ms(&self, block_time_ms: u64) {
        self.clock.note_chain_time_ms(block_time_ms);
    }

    fn liability_tree(&self, journal_sequence: u64) -> TreeFuture {
        let trees = Arc::clone(&self.liability_trees);
        Box::pin(async move { trees.at(journal_sequence).await })
    }
}

/// What custody needs for each vault chain of the venue (ledger chains are not custody's).
pub fn vault_chain_setups(venue: &Venue) -> Vec<VaultChainSetup> {
    venue
        .config
        .chains
        .iter()
        .filter_map(|chain_config| {
            let vault_config = chain_config.vault()?;
            let chain = venue
                .chain(chain_config.chain_id)
                .expect("invariant: every configured chain runs");
            Some(VaultChainSetup {
                chain_id: chain_config.chain_id,
                chain: chain as Arc<dyn VenueChain>,
                config: vault_config.clone(),
                assets: chain_config
                    .assets
                    .iter()
                    .map(|asset| SettledAsset {
                        symbol: asset.symbol.clone(),
                        token: asset.address,
                        decimals: asset.decimals,
                    })
                    .collect(),
            })
        })
        .collect()
}
