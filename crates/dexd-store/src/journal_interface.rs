//! The journal interface: what a chain's writer needs of the journal that holds the money,
//! whatever keeps it. Two backends implement it: the embedded SQLite journal
//! ([`crate::StoreWriter`], the default for one node) and the PostgreSQL journal
//! ([`crate::postgres::PostgresJournal`], which several nodes share, fenced by a leader's epoch).
//!
//! The replay that rebuilds an engine from a journal is written once here, over the interface,
//! with what it yields ([`JournaledCommand`], [`Replayed`]) and the one way a journaled command
//! runs on an engine, which a copy that follows the journal uses too ([`follow_journal_entry`]).
//! This module does not open a backend (the crate's `open` and `postgres::PostgresJournal::open`
//! do) and does not decide who may append (the lease does, for PostgreSQL).

use std::sync::Arc;

use dexd_core::{Command, Engine, EngineConfig};

use super::codec;
use super::database::StoreError;
use super::projector::{Projector, MAX_PROJECTION_BATCH};
use super::records::{Authorization, JournalEntry, Projection};

/// Which journaled commands a read takes: those after `after` up to `through` included, with
/// `keep_going` asked between chunks of a long read whether to go on.
#[derive(Clone, Copy)]
pub struct CommandRange<'a> {
    /// The last command not read.
    pub after: u64,
    /// The last command read, at most.
    pub through: u64,
    /// Whether to go on, asked between chunks.
    pub keep_going: &'a dyn Fn() -> bool,
}

impl CommandRange<'_> {
    /// Every command after `after`, read to the end without a stop.
    pub fn after(after: u64) -> CommandRange<'static> {
        CommandRange {
            after,
            through: u64::MAX,
            keep_going: &|| true,
        }
    }
}

/// Given each journaled command of a read, in order.
pub type ApplyCommand<'a> = &'a mut dyn FnMut(JournaledCommand) -> Result<(), StoreError>;

/// Reading a chain's journal: what a replay, a snapshot's build and a follower need.
pub trait JournalRead: Send {
    /// The sequence of the last journaled command (0 when empty).
    fn last_sequence(&mut self) -> Result<u64, StoreError>;

    /// The journal's identity (a random hex string given when it was created).
    fn journal_id(&mut self) -> Result<String, StoreError>;

    /// Calls `apply` with every journaled command of `range`, in order, reading a bounded chunk
    /// at a time; stops early when the range's `keep_going` says so between chunks. Refuses a
    /// journal with a gap. Returns the last sequence read.
    fn for_each_command(&mut self, range: CommandRange, apply: ApplyCommand) -> Result<u64, StoreError>;
}

/// A chain's journal, as its writer uses it.
///
/// Invariant: once `append` returns `Ok`, the batch is durable and no other writer can have
/// appended in between: sequences follow one another without a gap or a repeat.
pub trait Journal: JournalRead {
    /// Appends a batch in one transaction; when this returns `Ok`, the batch is durable. A
    /// backend shared by several nodes refuses the append of a writer that is no longer the
    /// chain's leader ([`StoreError::Fenced`]), and then nothing of the batch is written.
    fn append(&mut self, batch: &[JournalEntry]) -> Result<(), StoreError>;

    /// Binds the journal to what holds its money, or checks the binding it has (see
    /// [`crate::StoreWriter::bind_custody`]).
    fn bind_custody(&mut self, custody: &str) -> Result<(), StoreError>;

    /// The fingerprint of the configuration file's chain configuration as last journaled (see
    /// [`Journal::remember_file_configuration`]); `None` before the first.
    fn file_configuration(&mut self) -> Result<Option<String>, StoreError>;

    /// Records the fingerprint of the file's configuration once the journal holds it, so that a
    /// later start tells an edited file (whose values then apply) from the same one (under which
    /// what the operator changed at run time stands).
    fn remember_file_configuration(&mut self, fingerprint: &str) -> Result<(), StoreError>;

    /// From now on appends under `epoch` (a shared journal's leader), or under none (then every
    /// append is refused). A journal of one node has no epochs and ignores it.
    fn lead_under(&mut self, _epoch: Option<u64>) {}

    /// Work the backend does between batches, off the commit path (SQLite copies its WAL into
    /// the database file); nothing by default.
    fn between_batches(&mut self) -> Result<(), StoreError> {
        Ok(())
    }
}

/// Rebuilds the engine by replaying the whole journal at the recorded times; with a `history`,
/// the commands it lacks are written to it on the way (see [`replay_after`]).
pub fn replay(
    journal: &mut dyn JournalRead,
    config: &EngineConfig,
    history: Option<&mut Projector>,
) -> Result<Replayed, StoreError> {
    replay_after(journal, empty_engine(config)?, 0, history)
}

/// An engine with nothing in it, for a replay from the journal's start.
pub fn empty_engine(config: &EngineConfig) -> Result<Engine, StoreError> {
    Engine::new(config.clone())
        .map_err(|error| StoreError::Inconsistent(format!("the configuration's pairs are invalid: {error}")))
}

/// Replays the journal after `after` onto an engine in the state of command `after` (restored
/// from a snapshot). With a `history`, which must hold at least the commands up to `after` (with
/// their open orders in its memory), the commands it does not hold yet are written to it in
/// batches of [`MAX_PROJECTION_BATCH`], so memory does not grow with what is missing.
pub fn replay_after(
    journal: &mut dyn JournalRead,
    engine: Engine,
    after: u64,
    history: Option<&mut Projector>,
) -> Result<Replayed, StoreError> {
    replay_through(journal, engine, after, u64::MAX, history)
}

/// Like [`replay_after`], only up to command `through` (a follower's copy stops where its
/// history does, and follows the rest).
pub fn replay_through(
    journal: &mut dyn JournalRead,
    mut engine: Engine,
    after: u64,
    through: u64,
    mut history: Option<&mut Projector>,
) -> Result<Replayed, StoreError> {
    let projected = match history.as_deref() {
        Some(projector) => projector.projected_sequence()?,
        None => u64::MAX,
    };
    if projected < after {
        return Err(StoreError::Inconsistent(format!(
            "the history has reached command {projected}, before the replay's start {after}"
        )));
    }
    let mut unprojected = Vec::new();
    let mut reprojected_commands = 0;
    let mut events = Vec::new();
    let last_sequence = journal.for_each_command(
        CommandRange {
            through,
            ..CommandRange::after(after)
        },
        &mut |journaled| {
            let (sequence, authorization) = (journaled.sequence, journaled.authorization.clone());
            execute_journaled(&mut engine, journaled, &mut events)?;
            let Some(projector) = history.as_deref_mut() else {
                return Ok(());
            };
            if sequence <= projected {
                // The history holds this command's rows; only the open orders in memory need it.
                projector.remember(sequence, &events, authorization)?;
            } else {
                unprojected.push(Projection {
                    sequence,
                    events: Arc::new(std::mem::take(&mut events)),
                    authorization,
                });
                if unprojected.len() == MAX_PROJECTION_BATCH {
                    projector.project(&unprojected)?;
                    reprojected_commands += unprojected.len();
                    unprojected.clear();
                }
            }
            Ok(())
        },
    )?;
    if let Some(projector) = history {
        if projected > last_sequence {
            return Err(StoreError::Inconsistent(format!(
                "the history has reached command {projected} but the journal ends at {last_sequence}: \
                 acknowledged commands are missing from the journal"
            )));
        }
        projector.project(&unprojected)?;
        reprojected_commands += unprojected.len();
    }
    Ok(Replayed {
        engine,
        last_sequence,
        reprojected_commands,
    })
}

/// The engine rebuilt from the journal, with what the history tables still lack.
pub struct Replayed {
    /// The rebuilt engine.
    pub engine: Engine,
    /// The journal's last sequence (0 when empty).
    pub last_sequence: u64,
    /// How many commands were written to the history on the way.
    pub reprojected_commands: usize,
}

/// One journaled command, decoded.
pub struct JournaledCommand {
    /// Its sequence.
    pub sequence: u64,
    /// The time it ran at.
    pub time_ms: u64,
    /// The command.
    pub command: Command,
    /// The signature journaled with it.
    pub authorization: Option<Authorization>,
}

/// Runs a journal entry, as the writer appended it, on a copy of the engine that follows the
/// journal (the streams' copy; a cluster follower's): decoded and executed exactly as a replay
/// does. A refusal means the copy is not at the entry's place in the journal.
pub fn follow_journal_entry(
    engine: &mut Engine,
    entry: &JournalEntry,
    events: &mut Vec<dexd_core::Event>,
) -> Result<(), StoreError> {
    let journaled = JournaledCommand {
        sequence: entry.sequence,
        time_ms: entry.time_ms,
        command: codec::decode_command(&entry.command)?,
        authorization: entry.authorization.clone(),
    };
    execute_journaled(engine, journaled, events)
}

/// Runs one journaled command on the engine. Every journaled command was accepted once, so a
/// rejection here means the journal and the engine disagree, and the store is refused.
pub(crate) fn execute_journaled(
    engine: &mut Engine,
    journaled: JournaledCommand,
    events: &mut Vec<dexd_core::Event>,
) -> Result<(), StoreError> {
    events.clear();
    // The engine counts the commands it applied: a journaled command must come right after them.
    if engine.journal_sequence() + 1 != journaled.sequence {
        return Err(StoreError::Inconsistent(format!(
            "journaled command {} follows an engine at position {}",
            journaled.sequence,
            engine.journal_sequence()
        )));
    }
    let claim = journaled.authorization.as_ref().map(Authorization::claim);
    engine
        .execute_signed(journaled.command, claim, journaled.time_ms, events)
        .map_err(|rejection| {
            StoreError::Inconsistent(format!(
                "journaled command {} is refused on replay ({rejection:?}); was the configuration changed?",
                journaled.sequence
            ))
        })
}
