//! A chain's writer thread: the only place the chain's engine changes. It takes what has queued
//! (up to [`MAX_WRITE_BATCH`], without waiting for more), applies it to the engine under one
//! write lock, appends the batch to the journal in one synced transaction, and only then
//! answers (group commit); it hands the journaled batch to the projector, and between batches
//! lets the journal do its own work (SQLite's checkpoints). A batch whose append fails is
//! answered 503 and the engine is rebuilt from the journal, so nothing of it stays in memory.
//!
//! It knows nothing of HTTP; the queue's other end is [`super::Chain`].

use crate::telemetry::Telemetry;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dexd_core::{Command, Engine, EngineConfig};
use parking_lot::RwLock;
use tokio::sync::{mpsc, oneshot};

mod configuration;

use self::configuration::{follow_markets, journal_the_configuration, reconfigure};
pub use self::configuration::{Reconfiguration, ReconfigurationChange, ReconfigurationError};
use super::publication::{Publisher, StreamRead};
use crate::batch_nonce::BatchNonce;
use dexd_store::backend::Leadership;
use dexd_store::codec;
use dexd_store::{Authorization, Events, Journal, JournalEntry, Projection, WriteError};

/// How many queued commands the writer takes into one journal transaction.
pub const MAX_WRITE_BATCH: usize = 1_024;
/// The value of [`WriterState::leader_epoch`] while the node follows the chain.
pub(crate) const NOT_LEADING: u64 = u64::MAX;
pub(crate) struct WriteRequest {
    pub(crate) command: Command,
    pub(crate) authorization: Option<Authorization>,
    /// The leader epoch the command was decided under, if it must be applied under that one
    /// only (custody's commands); refused with [`WriteError::NotLeader`] under another.
    pub(crate) under_epoch: Option<u64>,
    /// The answer: the command's journal position and events, or why it was not applied.
    pub(crate) reply: oneshot::Sender<Result<(u64, Events), WriteError>>,
    /// Whether this write starts what one request sent: a lone write, or the first of a group.
    /// A batch signed once that arrives twice is two groups, each a copy of its own.
    pub(crate) starts_request: bool,
    /// The time it is applied and journaled at, when its maker decided it at that time (the
    /// configuration, whose announced fee raises count their notice from it); otherwise the
    /// writer's clock when it applies it.
    pub(crate) at_ms: Option<u64>,
}

/// What the writer's queue carries: writes, and at the end the request to stop.
// Nearly every message is a write; boxing it to shrink the rare `Close` would cost an allocation
// per write.
#[allow(clippy::large_enum_variant)]
pub(crate) enum WriterMessage {
    Write(WriteRequest),
    /// Writes applied one after the other with nothing between them, and journaled in the same
    /// transaction (a batch of orders): all durable or none.
    Group(Vec<WriteRequest>),
    /// A read for the live streams, answered between the batch before it and the one after.
    StreamRead {
        token: u64,
        read: StreamRead,
    },
    /// Stop the chain: answer nothing queued after this, let the projector finish, close the
    /// history cleanly, then reply.
    Close(oneshot::Sender<()>),
    /// Look at the chain's leadership again (its lease was lost).
    Wake,
    /// An operator's change of configuration, decided and journaled between two batches.
    Reconfigure(Reconfiguration),
}

type Reply = (
    oneshot::Sender<Result<(u64, Events), WriteError>>,
    Result<(u64, Events), WriteError>,
);

/// The writer's metrics (handles registered once).
pub(crate) struct WriterMetrics {
    /// Commands per journal append.
    pub(crate) batch_commands: metrics::Histogram,
    /// Time of one journal append.
    pub(crate) commit_seconds: metrics::Histogram,
}

impl WriterMetrics {
    /// The writer's histograms for `chain_id`.
    pub(crate) fn of_chain(telemetry: &Telemetry, chain_id: u64) -> WriterMetrics {
        let labels = [("chain_id", chain_id.to_string())];
        WriterMetrics {
            batch_commands: telemetry.histogram("dexd_journal_batch_commands", &labels),
            commit_seconds: telemetry.histogram("dexd_journal_commit_duration_seconds", &labels),
        }
    }
}

pub(crate) struct WriterState {
    pub(crate) chain_id: u64,
    pub(crate) engine: Arc<RwLock<Engine>>,
    /// The chain's journal: SQLite's or PostgreSQL's.
    pub(crate) store: Box<dyn Journal>,
    pub(crate) engine_config: EngineConfig,
    pub(crate) next_sequence: u64,
    pub(crate) journaled: Arc<AtomicU64>,
    pub(crate) engine_position: Arc<EnginePosition>,
    pub(crate) projection: std::sync::mpsc::SyncSender<Vec<Projection>>,
    /// The live streams' end of the publications.
    pub(crate) publisher: Option<Publisher>,
    pub(crate) metrics: WriterMetrics,
    /// Where the chain's snapshots are, and what they must match, for a rebuild.
    pub(crate) snapshots: super::snapshotter::SnapshotPlace,
    /// Whether this node leads the chain, and how it becomes the leader.
    pub(crate) leadership: Leadership,
    /// The epoch of the writer's current or last leadership (0 on the embedded journal).
    pub(crate) epoch: u64,
    /// The epoch under which the writer acts as the chain's leader, or [`NOT_LEADING`], for
    /// readers outside this thread.
    pub(crate) leader_epoch: Arc<AtomicU64>,
    /// Whether a followed command did not apply, leaving the engine to be rebuilt before
    /// anything else touches it.
    pub(crate) needs_rebuild: bool,
    /// The chain's configuration as the file gives it: journaled as the journal's first
    /// command, and again when a leader starts and the file changed since it was last journaled
    /// (merged with what the operator listed at run time: [`crate::markets::wanted_configuration`]).
    pub(crate) configuration: dexd_core::ChainConfiguration,
    /// The markets the chain serves, swapped after a journaled configuration changes them.
    pub(crate) markets: Arc<crate::markets::MarketsCell>,
    /// Whether the batch being written applied a `Configure` (its markets follow once durable).
    pub(crate) configured_in_batch: bool,
    /// The venue's clock, shared with the chain's custody (which holds it at the chain's time).
    pub(crate) clock: Arc<crate::venue_clock::VenueClock>,
}

/// Where the engine's state stands, changed only by the writer and only under the engine's write
/// lock, so that a reader under the read lock sees the position of the state it reads.
pub(crate) struct EnginePosition {
    /// The last journal sequence applied to the engine (journaled or not yet).
    pub(crate) applied_sequence: AtomicU64,
    /// How many times the engine was rebuilt from the journal after a failed append.
    pub(crate) rebuilds: AtomicU64,
}

impl EnginePosition {
    /// An engine restored through `applied_sequence`, never rebuilt.
    pub(crate) fn restored_at(applied_sequence: u64) -> EnginePosition {
        EnginePosition {
            applied_sequence: AtomicU64::new(applied_sequence),
            rebuilds: AtomicU64::new(0),
        }
    }
}

/// Starts the chain's writer thread on `queue`; it stops the projector thread when it stops.
pub(crate) fn start_writer_thread(
    queue: mpsc::Receiver<WriterMessage>,
    state: WriterState,
    projector: std::thread::JoinHandle<()>,
) {
    let name = format!("writer-{}", state.chain_id);
    std::thread::Builder::new()
        .name(name)
        .spawn(move || run_writer(queue, state, projector))
        .expect("the writer thread starts");
}

/// Wakes a writer that waits for writes when its lease is lost, so that it steps down at once.
pub(crate) fn wake_the_writer_when_the_lease_is_lost(
    leadership: &mut Leadership,
    writer: &mpsc::Sender<WriterMessage>,
) {
    let waker = writer.clone();
    leadership.on_lost(Arc::new(move || {
        let _ = waker.try_send(WriterMessage::Wake);
    }));
}

pub(crate) fn run_writer(
    mut queue: mpsc::Receiver<WriterMessage>,
    mut state: WriterState,
    projector_thread: std::thread::JoinHandle<()>,
) {
    let close_reply = loop {
        let turn = if state.leadership.is_leading() {
            lead(&mut queue, &mut state)
        } else {
            follow(&mut queue, &mut state)
        };
        if let Turn::Stop(reply) = turn {
            break reply;
        }
    };
    // Requests still queued are dropped unanswered with the queue: their clients get 503, and
    // none of them was applied.
    drop(queue);
    drop(state);
    if projector_thread.join().is_err() {
        tracing::error!("the projector thread panicked");
    }
    if let Some(reply) = close_reply {
        let _ = reply.send(());
    }
}

/// How a turn of the writer as leader or as follower ended.
enum Turn {
    /// The node's role changed: look at the leadership again.
    RoleChanged,
    /// The chain stops (with the reply to send once it has, when `Close` asked for it).
    Stop(Option<oneshot::Sender<()>>),
}

/// The writer as the chain's leader: batches of writes applied, journaled and answered, until
/// the chain stops or the node no longer leads.
fn lead(queue: &mut mpsc::Receiver<WriterMessage>, state: &mut WriterState) -> Turn {
    // The node says it leads only once the configuration is journaled: until then nothing is
    // written or read under a configuration the journal does not hold yet (a raise of fees
    // shown as not announced, right after a restart).
    journal_the_configuration(state);
    state.leader_epoch.store(state.epoch, Ordering::Release);
    let mut batch = Vec::with_capacity(MAX_WRITE_BATCH);
    loop {
        if !state.leadership.is_leading() {
            step_down(state);
            return Turn::RoleChanged;
        }
        // A stream read ends the batch: it is answered once the writes queued before it are
        // journaled and published, before any write queued after it is applied.
        let mut read = None;
        let mut close_reply = None;
        let mut reconfiguration = None;
        match queue.blocking_recv() {
            Some(WriterMessage::Reconfigure(asked)) => reconfiguration = Some(asked),
            Some(WriterMessage::Write(first)) => batch.push(first),
            Some(WriterMessage::Group(group)) => batch.extend(group),
            Some(WriterMessage::StreamRead { token, read: asked }) => read = Some((token, asked)),
            Some(WriterMessage::Close(reply)) => close_reply = Some(reply),
            Some(WriterMessage::Wake) => continue,
            None => return Turn::Stop(None),
        }
        while batch.len() < MAX_WRITE_BATCH && close_reply.is_none() && read.is_none() && reconfiguration.is_none() {
            match queue.try_recv() {
                Ok(WriterMessage::Reconfigure(asked)) => reconfiguration = Some(asked),
                Ok(WriterMessage::Write(request)) => batch.push(request),
                // A group is never split: it may take the batch up to a group's length past
                // its usual size.
                Ok(WriterMessage::Group(group)) => batch.extend(group),
                Ok(WriterMessage::StreamRead { token, read: asked }) => read = Some((token, asked)),
                Ok(WriterMessage::Close(reply)) => close_reply = Some(reply),
                Ok(WriterMessage::Wake) | Err(_) => break,
            }
        }
        while state.needs_rebuild {
            std::thread::sleep(Duration::from_secs(1));
            rebuild(state);
        }
        write_batch(state, &mut batch);
        answer_stream_read(state, read);
        if let Some(reconfiguration) = reconfiguration {
            reconfigure(state, reconfiguration);
        }
        if close_reply.is_some() {
            return Turn::Stop(close_reply);
        }
    }
}

fn answer_stream_read(state: &WriterState, read: Option<(u64, super::publication::StreamRead)>) {
    if let (Some((token, asked)), Some(publisher)) = (read, state.publisher.as_ref()) {
        let journaled_through = state.next_sequence - 1;
        publisher.answer(&state.engine.read(), journaled_through, token, asked);
    }
}

/// Gives up acting as the leader: appends are refused from now on, and the engine is put back
/// to what the journal holds, which the follower then goes on from.
fn step_down(state: &mut WriterState) {
    tracing::warn!(
        chain_id = state.chain_id,
        "this node no longer leads the chain; following its journal"
    );
    state.leader_epoch.store(NOT_LEADING, Ordering::Release);
    state.store.lead_under(None);
    rebuild(state);
}

/// How often a follower reads the journal's new commands: the follower's lag is about this.
const FOLLOW_POLL_INTERVAL_MS: u64 = 10;
/// The most commands a follower applies under one write lock of its engine.
const MAX_FOLLOW_BATCH: u64 = MAX_WRITE_BATCH as u64;

/// The writer as a follower: the chain's journal, appended by another node, applied to the
/// engine, projected and published as the leader's commits are; writes refused with
/// [`WriteError::NotLeader`]; the lease asked for, and once held the journal caught up with and
/// the writer turned leader; until then, or until the chain stops.
fn follow(queue: &mut mpsc::Receiver<WriterMessage>, state: &mut WriterState) -> Turn {
    state.leader_epoch.store(NOT_LEADING, Ordering::Release);
    loop {
        loop {
            match queue.try_recv() {
                Ok(WriterMessage::Write(request)) => {
                    let _ = request.reply.send(Err(WriteError::NotLeader));
                }
                Ok(WriterMessage::Group(group)) => {
                    for request in group {
                        let _ = request.reply.send(Err(WriteError::NotLeader));
                    }
                }
                Ok(WriterMessage::StreamRead { token, read }) => answer_stream_read(state, Some((token, read))),
                Ok(WriterMessage::Reconfigure(asked)) => {
                    let _ = asked
                        .reply
                        .send(Err(ReconfigurationError::Write(WriteError::NotLeader)));
                }
                Ok(WriterMessage::Close(reply)) => return Turn::Stop(Some(reply)),
                Ok(WriterMessage::Wake) => {}
                Err(mpsc::error::TryRecvError::Empty) => break,
                Err(mpsc::error::TryRecvError::Disconnected) => return Turn::Stop(None),
            }
        }
        while follow_journal(state) == MAX_FOLLOW_BATCH {}
        if state.needs_rebuild {
            rebuild(state);
            std::thread::sleep(Duration::from_secs(1));
            continue;
        }
        match state.leadership.try_to_lead() {
            Ok(Some(epoch)) => {
                // The previous leader may have appended up to the moment its lease ended.
                while follow_journal(state) > 0 || state.needs_rebuild {
                    if state.needs_rebuild {
                        rebuild(state);
                        std::thread::sleep(Duration::from_secs(1));
                    }
                }
                state.store.lead_under(Some(epoch));
                state.epoch = epoch;
                tracing::info!(
                    chain_id = state.chain_id,
                    epoch,
                    journaled = state.next_sequence - 1,
                    "this node leads the chain"
                );
                return Turn::RoleChanged;
            }
            Ok(None) => {}
            Err(error) => tracing::warn!(chain_id = state.chain_id, %error, "cannot ask for the chain's lease"),
        }
        std::thread::sleep(Duration::from_millis(FOLLOW_POLL_INTERVAL_MS));
    }
}

/// Applies up to [`MAX_FOLLOW_BATCH`] commands the journal holds beyond the engine, as a
/// replay does, then projects and publishes them; returns how many.
fn follow_journal(state: &mut WriterState) -> u64 {
    let after = state.next_sequence - 1;
    let mut read = Vec::new();
    let through = after.saturating_add(MAX_FOLLOW_BATCH);
    if let Err(error) = state.store.for_each_command(
        dexd_store::CommandRange {
            through,
            ..dexd_store::CommandRange::after(after)
        },
        &mut |journaled| {
            read.push(JournalEntry {
                sequence: journaled.sequence,
                time_ms: journaled.time_ms,
                command: codec::encode_command(&journaled.command),
                authorization: journaled.authorization,
            });
            Ok(())
        },
    ) {
        tracing::warn!(chain_id = state.chain_id, %error, "cannot read the chain's journal");
        return 0;
    }
    if read.is_empty() {
        return 0;
    }
    let mut projections = Vec::with_capacity(read.len());
    let mut engine = state.engine.write();
    for entry in &read {
        let mut events = Vec::new();
        if let Err(error) = dexd_store::follow_journal_entry(&mut engine, entry, &mut events) {
            // The copy and the journal disagree: never serve a state the journal does not hold.
            // The engine is rebuilt by the caller's loop (never from here: a rebuild follows too).
            tracing::error!(chain_id = state.chain_id, %error, "a followed command does not apply");
            state.needs_rebuild = true;
            return 0;
        }
        projections.push(Projection {
            sequence: entry.sequence,
            events: Arc::new(events),
            authorization: entry.authorization.clone(),
        });
    }
    let last = read.last().map_or(after, |entry| entry.sequence);
    state.next_sequence = last + 1;
    state.engine_position.applied_sequence.store(last, Ordering::Release);
    drop(engine);
    state.journaled.store(last, Ordering::Release);
    let count = read.len() as u64;
    if let Some(publisher) = state.publisher.as_ref().filter(|publisher| publisher.is_active()) {
        publisher.publish_batch(&state.engine.read(), projections.clone(), read);
    }
    if state.projection.send(projections).is_err() {
        tracing::error!(chain_id = state.chain_id, "the projector is gone");
    }
    follow_markets(state);
    count
}

/// Applies, journals and answers one batch of writes; `batch` is left empty.
fn write_batch(state: &mut WriterState, batch: &mut Vec<WriteRequest>) {
    if batch.is_empty() {
        return;
    }
    let (journal, projections, mut replies) = apply_batch(state, batch.drain(..));
    if !journal.is_empty() {
        let appending = Instant::now();
        let appended = state.store.append(&journal);
        state.metrics.commit_seconds.record(appending.elapsed().as_secs_f64());
        state.metrics.batch_commands.record(journal.len() as f64);
        match appended {
            Ok(()) => {
                let last = journal.last().map_or(0, |entry| entry.sequence);
                state.journaled.store(last, Ordering::Release);
                // Durable now, and only now, the batch may leave for the live streams.
                if let Some(publisher) = state.publisher.as_ref().filter(|publisher| publisher.is_active()) {
                    publisher.publish_batch(&state.engine.read(), projections.clone(), journal);
                }
                // Blocks when the projector is far behind: the backlog is bounded.
                if state.projection.send(projections).is_err() {
                    tracing::error!(chain_id = state.chain_id, "the projector is gone");
                }
                if std::mem::take(&mut state.configured_in_batch) {
                    follow_markets(state);
                }
            }
            Err(error) => {
                tracing::error!(chain_id = state.chain_id, %error, "journaling a batch failed; answering 503 and rebuilding from the journal");
                for (_, result) in &mut replies {
                    if result.is_ok() {
                        *result = Err(WriteError::NotDurable);
                    }
                }
                state.configured_in_batch = false;
                rebuild(state);
            }
        }
    }
    // A client that went away no longer waits for its answer; that is not an error.
    for (reply, result) in replies {
        let _ = reply.send(result);
    }
    // The journal's own work between batches (SQLite's checkpoints), off the commit path.
    if let Err(error) = state.store.between_batches() {
        tracing::warn!(chain_id = state.chain_id, %error, "the journal's work between batches failed");
    }
}

/// Applies a batch to the engine under one write lock; returns what to journal, what to project
/// and what to answer.
fn apply_batch(
    state: &mut WriterState,
    requests: impl Iterator<Item = WriteRequest>,
) -> (Vec<JournalEntry>, Vec<Projection>, Vec<Reply>) {
    let mut journal = Vec::new();
    let mut projections = Vec::new();
    let mut replies = Vec::new();
    let mut engine = state.engine.write();
    let mut batch_nonce = BatchNonce::default();
    for mut request in requests {
        if request.under_epoch.is_some_and(|epoch| epoch != state.epoch) {
            replies.push((request.reply, Err(WriteError::NotLeader)));
            continue;
        }
        let claim = match batch_nonce.claim_for(&mut request.authorization, request.starts_request) {
            Ok(claim) => claim,
            Err(rejection) => {
                replies.push((request.reply, Err(WriteError::Rejected(rejection))));
                continue;
            }
        };
        let time_ms = request.at_ms.unwrap_or_else(|| state.clock.now_ms());
        let encoded = codec::encode_command(&request.command);
        let configures = matches!(request.command, Command::Configure(_));
        let mut events = Vec::new();
        let result = engine.execute_signed(request.command, claim, time_ms, &mut events);
        batch_nonce.applied(claim, &request.authorization, &result);
        match result {
            Ok(()) => {
                state.configured_in_batch |= configures;
                let sequence = state.next_sequence;
                state.next_sequence += 1;
                // The engine's own count is what a withdrawal's debit position is read from.
                assert_eq!(
                    engine.journal_sequence(),
                    sequence,
                    "invariant: the engine has applied exactly the journal's commands"
                );
                journal.push(JournalEntry {
                    sequence,
                    time_ms,
                    command: encoded,
                    authorization: request.authorization.clone(),
                });
                // One copy of the events serves the reply and the projector.
                let events = Arc::new(events);
                projections.push(Projection {
                    sequence,
                    events: Arc::clone(&events),
                    authorization: request.authorization,
                });
                replies.push((request.reply, Ok((sequence, events))));
            }
            Err(rejection) => replies.push((request.reply, Err(WriteError::Rejected(rejection)))),
        }
    }
    assert!(
        journal.len() == projections.len()
            && journal.windows(2).all(|pair| pair[1].sequence == pair[0].sequence + 1)
            && journal
                .last()
                .is_none_or(|last| last.sequence + 1 == state.next_sequence),
        "invariant: a batch journals consecutive positions, each projected once, ending at the writer's"
    );
    state
        .engine_position
        .applied_sequence
        .store(state.next_sequence - 1, Ordering::Release);
    // Debug builds (every test) audit the whole state after every batch that changed it: a
    // broken invariant stops the writer at the batch that broke it. Release builds keep the
    // cheap assertions only; the audit walks every account and order.
    #[cfg(debug_assertions)]
    if !journal.is_empty() {
        if let Err(broken) = engine.check_invariants() {
            panic!(
                "invariant broken after the batch ending at {}: {broken}",
                state.next_sequence - 1
            );
        }
    }
    drop(engine);
    (journal, projections, replies)
}

/// Puts the engine back to what the journal holds, after a batch could not be appended or when
/// the node stops leading: replayed up to what this node acknowledged or followed (its history
/// has exactly that), then the journal's rest followed like a follower's, projected and
/// published, so that nothing another node (or an append whose outcome was unknown) journaled is
/// skipped. Until the replay succeeds the chain's writes keep failing, which is the safe side.
fn rebuild(state: &mut WriterState) {
    loop {
        // The newest snapshot the journal reaches shortens the replay, as at start.
        let acknowledged = state.journaled.load(Ordering::Acquire);
        let replayed = state.store.last_sequence().and_then(|journal_end| {
            super::snapshotter::recover(
                state.store.as_mut(),
                &state.snapshots,
                &state.engine_config,
                (journal_end, acknowledged),
                true,
                None,
            )
        });
        match replayed {
            Ok((replayed, _)) => {
                state.needs_rebuild = false;
                let mut engine = state.engine.write();
                *engine = replayed.engine;
                state.next_sequence = replayed.last_sequence + 1;
                // Counted before any later append, under the lock: see `Chain::durable_position`.
                state.engine_position.rebuilds.fetch_add(1, Ordering::AcqRel);
                state
                    .engine_position
                    .applied_sequence
                    .store(replayed.last_sequence, Ordering::Release);
                drop(engine);
                tracing::info!(
                    chain_id = state.chain_id,
                    "chain state rebuilt from the journal (after a failed write or a lost lease)"
                );
                while follow_journal(state) > 0 {}
                follow_markets(state);
                return;
            }
            Err(error) => {
                tracing::error!(chain_id = state.chain_id, %error, "rebuilding from the journal failed; retrying in one second");
                std::thread::sleep(Duration::from_secs(1));
            }
        }
    }
}
