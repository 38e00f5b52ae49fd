//! The chain's configuration inside the engine: applying a journaled `Configure` (the first
//! builds the engine anew; a later one only adds, carrying the state over whole, unless nothing
//! but configurations was ever applied), and reading the configuration back. It does not decide
//! what a configuration may hold: [`crate::configuration`] checks that, but for the one rule that
//! needs the time: a raise of a pair's fees is announced ahead (`PairDefinition::fee_raise`),
//! at least the chain's `fee_notice_ms` after the configuration that announces it, and a
//! configuration's own fees never exceed those in force when it is applied (a cut applies at
//! once). The journal carries the time, so a replay, an auditor's included, holds a venue to it.

use super::*;

impl Engine {
    /// Applies a configuration: as the journal's first command, the engine is built anew from
    /// it; later, the change must only add ([`ChainConfiguration::check_change_to`]) and the
    /// state is carried over whole, widened by the new assets and pairs.
    pub(super) fn configure(&mut self, configuration: ChainConfiguration, now_ms: u64) -> Result<(), Rejection> {
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
        self.check_fee_changes(&configuration, now_ms).map_err(refused)?;
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

    /// The fees of `next` against those of the pairs in force at `now_ms`: none higher (a raise
    /// is announced, not applied), and a raise announced anew (one that is not the journal's
    /// already) no sooner than the chain's notice from now.
    fn check_fee_changes(&self, next: &ChainConfiguration, now_ms: u64) -> Result<(), ConfigurationRefused> {
        let notice_ms = self.config.limits.fee_notice_ms;
        for (index, (state, definition)) in self.pairs.iter().zip(&next.engine.pairs).enumerate() {
            let (maker, taker) = state.spec.fees_at(now_ms);
            if definition.maker_fee > maker || definition.taker_fee > taker {
                return Err(ConfigurationRefused(format!(
                    "pair {index}'s fees rise without notice: a raise must be announced (fee_raise), taking effect \
                     {notice_ms} ms after it is journaled at the earliest"
                )));
            }
            let announced = self.config.pairs[index].fee_raise;
            if let Some(raise) = definition.fee_raise.filter(|raise| Some(*raise) != announced) {
                if raise.effective_at_ms < now_ms.saturating_add(notice_ms) {
                    return Err(ConfigurationRefused(format!(
                        "pair {index}'s fee raise takes effect at {} ms, sooner than the notice of {notice_ms} ms \
                         from {now_ms}",
                        raise.effective_at_ms
                    )));
                }
            }
        }
        Ok(())
    }

    /// The configuration `wanted` (what the operator's file says) as the journal may take it
    /// at `now_ms`: each existing pair's fees that rise above those in force kept as they are,
    /// with the new ones announced as a raise effective after the chain's notice (the raise the
    /// journal already announces is kept, time and all, when it is the same); fees that fall
    /// apply at once. A wanted pair that carries a raise wants that raise's fees (a change that
    /// keeps the journal's pair as it is keeps its raise). New pairs and everything else are
    /// `wanted`'s.
    pub fn with_fee_raises_announced(&self, wanted: &ChainConfiguration, now_ms: u64) -> ChainConfiguration {
        if self.journal_sequence == 0 || self.description.is_none() {
            return wanted.clone();
        }
        let mut configuration = wanted.clone();
        let notice_ms = self.config.limits.fee_notice_ms.max(wanted.engine.limits.fee_notice_ms);
        for (index, (state, definition)) in self.pairs.iter().zip(configuration.engine.pairs.iter_mut()).enumerate() {
            let (maker, taker) = state.spec.fees_at(now_ms);
            // A wanted pair that carries a raise (the journal's own, kept by a change that is
            // not about its fees) wants the raise's fees: the raise is kept, time and all.
            let (wanted_maker, wanted_taker) = match definition.fee_raise {
                Some(raise) => (raise.maker_fee, raise.taker_fee),
                None => (definition.maker_fee, definition.taker_fee),
            };
            definition.maker_fee = wanted_maker.min(maker);
            definition.taker_fee = wanted_taker.min(taker);
            definition.fee_raise = (wanted_maker > maker || wanted_taker > taker).then(|| {
                let announced = self.config.pairs[index]
                    .fee_raise
                    .filter(|raise| (raise.maker_fee, raise.taker_fee) == (wanted_maker, wanted_taker));
                announced.unwrap_or(crate::pair::FeeRaise {
                    maker_fee: wanted_maker,
                    taker_fee: wanted_taker,
                    effective_at_ms: now_ms.saturating_add(notice_ms),
                })
            });
        }
        configuration
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
