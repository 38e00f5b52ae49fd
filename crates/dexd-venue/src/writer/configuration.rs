//! The writer's side of the chain's configuration: the file's, merged with the journal's,
//! journaled when a leader starts (`journal_the_configuration`); an operator's change decided
//! against the journal's and journaled between two batches (`reconfigure`); and the served
//! markets swapped once a configuration is durable (`follow_markets`). What a configuration
//! may change is the engine's to check, not this module's.

use tokio::sync::oneshot;

use std::time::Duration;

use super::{rebuild, write_batch, WriteRequest, WriterState};
use dexd_store::WriteError;

/// Journals the chain's configuration when the journal's differs (or it has none): before any
/// other write of this leadership, so that every command after it is applied under it. A raise
/// of a pair's fees in the configuration is journaled as announced, effective after the chain's
/// notice (`Engine::with_fee_raises_announced`); one the journal announces already keeps its
/// time. A configuration the journal cannot take (checked at start; on a cluster another node's
/// may differ) is refused by the engine, and the chain goes on under the journal's.
pub(super) fn journal_the_configuration(state: &mut WriterState) {
    while state.needs_rebuild {
        std::thread::sleep(Duration::from_secs(1));
        rebuild(state);
    }
    // One time for the announcement and the command: a raise announced at one millisecond and
    // applied at the next would be refused as short of its notice.
    let at_ms = state.clock.now_ms();
    let fingerprint = crate::markets::file_fingerprint(&state.configuration);
    let remembered = match state.store.file_configuration() {
        Ok(remembered) => remembered,
        Err(error) => {
            // Unknown, the file counts as changed: its values apply, as before run-time changes.
            tracing::warn!(chain_id = state.chain_id, %error, "cannot read which configuration file was last journaled");
            None
        }
    };
    let remember = |state: &mut WriterState| {
        if remembered.as_deref() != Some(fingerprint.as_str()) {
            if let Err(error) = state.store.remember_file_configuration(&fingerprint) {
                tracing::warn!(chain_id = state.chain_id, %error, "cannot record the configuration file journaled");
            }
        }
    };
    let announced = {
        let engine = state.engine.read();
        let wanted = crate::markets::wanted_configuration(&state.configuration, &engine, remembered.as_deref());
        engine.with_fee_raises_announced(&wanted, at_ms)
    };
    if state.engine.read().configuration().as_ref() == Some(&announced) {
        remember(state);
        follow_markets(state);
        return;
    }
    match write_configuration(state, announced, at_ms) {
        Ok(sequence) => {
            remember(state);
            tracing::info!(
                chain_id = state.chain_id,
                sequence,
                "the chain's configuration journaled"
            )
        }
        Err(error) => tracing::error!(
            chain_id = state.chain_id,
            ?error,
            "the chain's configuration could not be journaled; the chain goes on under the journal's"
        ),
    }
}

/// Journals `configuration` as the leader's next command at `at_ms` (one time for a raise's
/// announcement and its command: a raise announced at one millisecond and applied at the next
/// would be refused as short of its notice); its journal position, or why not.
fn write_configuration(
    state: &mut WriterState,
    configuration: dexd_core::ChainConfiguration,
    at_ms: u64,
) -> Result<u64, WriteError> {
    let (reply, answer) = oneshot::channel();
    let mut batch = vec![WriteRequest {
        command: dexd_core::Command::Configure(Box::new(configuration)),
        authorization: None,
        under_epoch: Some(state.epoch),
        reply,
        starts_request: true,
        at_ms: Some(at_ms),
    }];
    write_batch(state, &mut batch);
    match answer.blocking_recv() {
        Ok(Ok((sequence, _))) => Ok(sequence),
        Ok(Err(error)) => Err(error),
        Err(_) => Err(WriteError::NotDurable),
    }
}

/// A change of the chain's configuration the operator asked for (listing an asset or a pair,
/// changing fees), decided by the writer against the journal's configuration so that two
/// changes never overwrite each other.
pub struct Reconfiguration {
    /// The new configuration from the journal's current one and the time it is journaled at;
    /// fee raises in it are announced after the chain's notice before it is journaled.
    pub(crate) change: Box<ReconfigurationChange>,
    /// The answer: the journal position and the configuration journaled.
    pub(crate) reply: oneshot::Sender<Result<(u64, dexd_core::ChainConfiguration), ReconfigurationError>>,
}

/// A change of configuration: the new one from the current one and the time, or why not.
pub type ReconfigurationChange = dyn FnOnce(
        &dexd_core::ChainConfiguration,
        u64,
    ) -> Result<dexd_core::ChainConfiguration, dexd_core::ConfigurationRefused>
    + Send;

/// Why a change of configuration was not journaled.
#[derive(Debug)]
pub enum ReconfigurationError {
    /// The change cannot be made (its own check, or the journal's rules of change).
    Refused(dexd_core::ConfigurationRefused),
    /// The write failed: not the leader, or not durable.
    Write(WriteError),
}

/// Decides and journals an operator's change of configuration.
pub(super) fn reconfigure(state: &mut WriterState, reconfiguration: Reconfiguration) {
    let at_ms = state.clock.now_ms();
    let decided = {
        let engine = state.engine.read();
        match engine.configuration() {
            None => Err(ReconfigurationError::Refused(dexd_core::ConfigurationRefused(
                "the journal holds no configuration yet".into(),
            ))),
            Some(current) => (reconfiguration.change)(&current, at_ms)
                .map(|next| engine.with_fee_raises_announced(&next, at_ms))
                .and_then(|next| engine.check_configuration(&next).map(|()| next))
                .map_err(ReconfigurationError::Refused),
        }
    };
    let answer = decided.and_then(|next| {
        write_configuration(state, next.clone(), at_ms)
            .map(|sequence| (sequence, next))
            .map_err(ReconfigurationError::Write)
    });
    let _ = reconfiguration.reply.send(answer);
}

/// Swaps the chain's markets for the engine's configuration when it changed them.
pub(super) fn follow_markets(state: &WriterState) {
    state.markets.follow(state.chain_id, &state.engine.read());
}
