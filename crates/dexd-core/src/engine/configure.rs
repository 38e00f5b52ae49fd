//! The chain's configuration inside the engine: applying a journaled `Configure` (the first
//! builds the engine anew; a later one only adds, carrying the state over whole, unless nothing
//! but configurations was ever applied), and reading the configuration back. It does not decide
//! what a configuration may hold: [`crate::configuration`] checks that.

use super::*;

impl Engine {
    /// Applies a configuration: as the journal's first command, the engine is built anew from
    /// it; later, the change must only add ([`ChainConfiguration::check_change_to`]) and the
    /// state is carried over whole, widened by the new assets and pairs.
    pub(super) fn configure(&mut self, configuration: ChainConfiguration) -> Result<(), Rejection> {
        let refused = |_| Rejection::ConfigurationRefused;
        configuration.check().map_err(refused)?;
        self.check_configuration(&configuration).map_err(refused)?;
        if self.journal_sequence == 0 || self.holds_only_configurations() {
            let mut engine = Engine::new(configuration.engine).map_err(|_| Rejection::ConfigurationRefused)?;
            engine.description = Some(configuration.description);
            engine.journal_sequence = self.journal_sequence;
            *self = engine;
            return Ok(());
        }
        let state = self
            .state()
            .widened(&configuration)
            .map_err(|_| Rejection::ConfigurationRefused)?;
        *self = Engine::from_state(configuration.engine, &state).map_err(|_| Rejection::ConfigurationRefused)?;
        Ok(())
    }

    /// Whether this engine may go on under `next`: always while nothing but configurations has
    /// been applied (nothing in the journal can contradict a new one: a start refused before
    /// any other command, a token's decimals wrong on chain say, is corrected by a configuration
    /// that replaces the first whole); otherwise only by the changes
    /// [`ChainConfiguration::check_change_to`] allows.
    pub fn check_configuration(&self, next: &ChainConfiguration) -> Result<(), ConfigurationRefused> {
        if self.journal_sequence == 0 || self.holds_only_configurations() {
            return next.check();
        }
        match &self.description {
            Some(description) => ChainConfiguration {
                description: description.clone(),
                engine: self.config.clone(),
            }
            .check_change_to(next),
            None => check_engine_change(&self.config, &next.engine),
        }
    }

    /// Whether every command applied so far was a configuration: the state is that of a new
    /// engine under the current configuration (checked by its hash once the accounts are as
    /// many as a new engine's, so a large engine costs a count).
    pub fn holds_only_configurations(&self) -> bool {
        if self.description.is_none() {
            return false;
        }
        let Ok(mut fresh) = Engine::new(self.config.clone()) else {
            return false;
        };
        if self.ledger.account_count() != fresh.ledger.account_count() {
            return false;
        }
        fresh.description = self.description.clone();
        fresh.journal_sequence = self.journal_sequence;
        fresh.state_hash() == self.state_hash()
    }

    /// The chain's configuration as last journaled, if the journal has one.
    pub fn configuration(&self) -> Option<ChainConfiguration> {
        self.description.as_ref().map(|description| ChainConfiguration {
            description: description.clone(),
            engine: self.config.clone(),
        })
    }

    /// The chain's description as last journaled, if the journal has one.
    pub fn description(&self) -> Option<&ChainDescription> {
        self.description.as_ref()
    }

    /// The engine's rules.
    pub fn config(&self) -> &EngineConfig {
        &self.config
    }
}
