//! A chain's start: its stores opened, its configuration checked against its journal's, its
//! state restored (the newest usable snapshot and the journal after it), then its threads started
//! (writer, projector, snapshotter, state hash keeper). What runs after the start is the parent
//! module's and the writer's.

use std::path::Path;
use std::sync::atomic::AtomicU64;
use std::sync::Arc;
use std::time::Duration;

use dexd_core::{Engine, EngineConfig};
use parking_lot::RwLock;
use tokio::sync::{mpsc, watch};

use super::*;

/// Refuses to start a chain whose journal was configured otherwise than the configuration
/// can follow: it may only add assets and pairs and change fees, minimums and limits (the
/// writer journals the change once it leads, a raise of fees announced ahead). The journal
/// stays as it is.
fn refuse_a_configuration_the_journal_cannot_take(
    chain_id: u64,
    engine: &Engine,
    configuration: &dexd_core::ChainConfiguration,
) -> Result<(), StoreError> {
    let announced = engine.with_fee_raises_announced(configuration, dexd_store::now_ms());
    engine.check_configuration(&announced).map_err(|refused| {
        StoreError::Inconsistent(format!(
            "chain {chain_id}: the configuration differs from the journal's in a way it cannot \
             change: {refused}; restore the journal's configuration, or start a new journal"
        ))
    })
}

/// A chain's configuration as the file gives it, checked.
fn chain_configuration(
    config: &ChainConfig,
    limits: &config::Limits,
) -> Result<dexd_core::ChainConfiguration, StoreError> {
    let configuration = config.configuration(limits);
    configuration
        .check()
        .map_err(|error| StoreError::Inconsistent(format!("chain {}: {error}", config.chain_id)))?;
    Ok(configuration)
}

/// The threads a chain runs besides its writer, started.
struct ChainThreads {
    snapshotter: Option<Snapshotter>,
    state_hashes: Arc<state_hashes::StateHashes>,
    state_hash_keeper: state_hashes::StateHashKeeper,
    projector: std::thread::JoinHandle<()>,
}

/// A chain's stores opened and its state restored (from the newest snapshot and the journal),
/// before any of its threads runs.
struct RestoredChain {
    journal: Box<dyn Journal>,
    projector: Projector,
    store_reader: StoreReader,
    leadership: dexd_store::backend::Leadership,
    engine_config: EngineConfig,
    configuration: dexd_core::ChainConfiguration,
    markets: markets::Markets,
    replayed: Replayed,
    snapshots: SnapshotPlace,
    snapshot_status: Arc<SnapshotStatus>,
}

impl RestoredChain {
    /// Opens the chain's journal and history, checks its configuration against the journal's,
    /// and restores its state.
    fn open(config: &ChainConfig, full_config: &Config, data_dir: &Path) -> Result<RestoredChain, StoreError> {
        let busy_timeout = Duration::from_millis(full_config.limits.write_lock_timeout_ms);
        let dexd_store::backend::OpenedStore {
            mut journal,
            mut projector,
            reader: store_reader,
            leadership,
        } = full_config
            .journal
            .open_store(data_dir, config.chain_id, busy_timeout)?;
        journal.bind_custody(&custody_binding(config))?;
        let engine_config = config.engine_config(&full_config.limits);
        let configuration = chain_configuration(config, &full_config.limits)?;
        let (replayed, snapshots, snapshot_status) = restore_at_start(
            config.chain_id,
            full_config,
            data_dir,
            journal.as_mut(),
            &mut projector,
            &engine_config,
        )?;
        // What the journal will hold once the writer leads: the journal's listings kept, the
        // file's added, and its values where it changed since it was last journaled.
        let remembered = journal.file_configuration()?;
        let wanted = markets::wanted_configuration(&configuration, &replayed.engine, remembered.as_deref());
        refuse_a_configuration_the_journal_cannot_take(config.chain_id, &replayed.engine, &wanted)?;
        // Served until the writer journals its configuration (and on a follower, which never
        // does): the journal's, or on a new journal what is about to be journaled.
        let served = replayed
            .engine
            .configuration()
            .unwrap_or_else(|| replayed.engine.with_fee_raises_announced(&wanted, dexd_store::now_ms()));
        let markets = markets::Markets::new(config, served).map_err(StoreError::Inconsistent)?;
        Ok(RestoredChain {
            journal,
            projector,
            store_reader,
            leadership,
            engine_config,
            configuration,
            markets,
            replayed,
            snapshots,
            snapshot_status,
        })
    }
}

impl Chain {
    /// Opens and restores the chain, then starts its threads (writer, projector, snapshotter,
    /// state hash keeper).
    pub(crate) fn start(
        config: ChainConfig,
        full_config: &Config,
        data_dir: &Path,
        telemetry: &Telemetry,
    ) -> Result<Chain, StoreError> {
        let restored = RestoredChain::open(&config, full_config, data_dir)?;
        let (journal, projector, mut leadership) = (restored.journal, restored.projector, restored.leadership);
        let (engine_config, configuration, replayed) =
            (restored.engine_config, restored.configuration, restored.replayed);
        let (snapshots, snapshot_status) = (restored.snapshots, restored.snapshot_status);
        let chain_id = config.chain_id;
        let engine = Arc::new(RwLock::new(replayed.engine));
        let journaled = Arc::new(AtomicU64::new(replayed.last_sequence));
        let engine_position = Arc::new(EnginePosition::restored_at(replayed.last_sequence));
        let (projected_sender, projected) = watch::channel(replayed.last_sequence);
        let (projection_sender, projection_queue) = std::sync::mpsc::sync_channel(MAX_PROJECTION_BACKLOG_BATCHES);
        let (writer, queue) = mpsc::channel(full_config.limits.write_queue_capacity);
        let trees = liabilities::LiabilityTrees::new(&config, full_config, data_dir, &snapshots, &engine_config);
        let threads = ChainThreads::start(
            (chain_id, full_config, data_dir),
            (&snapshots, &engine_config, &snapshot_status),
            (&journaled, &projected),
            move || run_projector(chain_id, projection_queue, projector, projected_sender),
        );
        let (publisher, publications) = publication::channel();
        let markets = Arc::new(markets::MarketsCell::new(restored.markets));
        let leader_epoch = Arc::new(AtomicU64::new(writer::NOT_LEADING));
        let leads_alone = matches!(leadership, dexd_store::backend::Leadership::Always);
        writer::wake_the_writer_when_the_lease_is_lost(&mut leadership, &writer);
        let clock = Arc::new(crate::venue_clock::VenueClock::default());
        let writer_state = WriterState {
            chain_id,
            engine: Arc::clone(&engine),
            store: journal,
            engine_config,
            configuration,
            markets: Arc::clone(&markets),
            configured_in_batch: false,
            next_sequence: replayed.last_sequence + 1,
            journaled: Arc::clone(&journaled),
            engine_position: Arc::clone(&engine_position),
            projection: projection_sender,
            publisher: Some(publisher),
            leadership,
            epoch: 0,
            leader_epoch: Arc::clone(&leader_epoch),
            needs_rebuild: false,
            snapshots,
            metrics: WriterMetrics::of_chain(telemetry, chain_id),
            clock: Arc::clone(&clock),
        };
        writer::start_writer_thread(queue, writer_state, threads.projector);
        if leads_alone {
            wait_for_the_writer_to_lead(chain_id, &leader_epoch);
        }
        Ok(Chain {
            chain_id,
            signing_domain: dexd_crypto::SigningDomain::new(config.chain_id, config.venue_contract),
            markets,
            store: restored.store_reader,
            engine,
            writer,
            journaled,
            engine_position,
            projected,
            publications: parking_lot::Mutex::new(Some(publications)),
            next_read_token: AtomicU64::new(1),
            snapshots: snapshot_status,
            clock,
            snapshotter: parking_lot::Mutex::new(threads.snapshotter),
            state_hashes: threads.state_hashes,
            state_hash_keeper: parking_lot::Mutex::new(Some(threads.state_hash_keeper)),
            leader_epoch,
            liability_trees: Arc::new(trees),
        })
    }
}

/// How long a chain's start waits for its writer to journal the configuration, on a journal
/// that is this node's alone: a writer that cannot (its disk failing) is reported, and the chain
/// starts without it leading, refusing writes until it does.
pub const CONFIGURATION_JOURNALED_WAIT_MS: u64 = 30_000;

/// Waits until the writer leads, that is until it has journaled the configuration, so that a
/// node that says it is ready serves the configuration it was started with.
fn wait_for_the_writer_to_lead(chain_id: u64, leader_epoch: &AtomicU64) {
    let deadline = std::time::Instant::now() + Duration::from_millis(CONFIGURATION_JOURNALED_WAIT_MS);
    while leader_epoch.load(std::sync::atomic::Ordering::Acquire) == writer::NOT_LEADING {
        if std::time::Instant::now() >= deadline {
            tracing::error!(
                chain_id,
                wait_ms = CONFIGURATION_JOURNALED_WAIT_MS,
                "the chain's writer has not journaled its configuration; it starts without leading"
            );
            return;
        }
        std::thread::sleep(Duration::from_millis(2));
    }
}

impl ChainThreads {
    /// Starts the chain's snapshotter, its state hash keeper and its projector thread (running
    /// `project`); the writer, which hands the projector its work, is started by the caller.
    fn start(
        (chain_id, full_config, data_dir): (u64, &Config, &Path),
        (snapshots, engine_config, snapshot_status): (&SnapshotPlace, &EngineConfig, &Arc<SnapshotStatus>),
        (journaled, projected): (&Arc<AtomicU64>, &watch::Receiver<u64>),
        project: impl FnOnce() + Send + 'static,
    ) -> ChainThreads {
        let snapshotter = Snapshotter::start(SnapshotterSetup {
            chain_id,
            data_dir: data_dir.to_path_buf(),
            journal_backend: full_config.journal.clone(),
            directory: snapshots.directory.clone(),
            identity: snapshots.identity.clone(),
            engine_config: engine_config.clone(),
            policy: full_config.snapshots,
            journaled: Arc::clone(journaled),
            projected: projected.clone(),
            status: Arc::clone(snapshot_status),
        });
        let state_hashes = Arc::new(state_hashes::StateHashes::default());
        let state_hash_keeper = state_hashes::StateHashKeeper::start(state_hashes::StateHashSetup {
            chain_id,
            data_dir: data_dir.to_path_buf(),
            journal_backend: full_config.journal.clone(),
            snapshots: snapshots.clone(),
            engine_config: engine_config.clone(),
            hashes: Arc::clone(&state_hashes),
        });
        let projector = std::thread::Builder::new()
            .name(format!("projector-{chain_id}"))
            .spawn(project)
            .expect("the projector thread starts");
        ChainThreads {
            snapshotter,
            state_hashes,
            state_hash_keeper,
            projector,
        }
    }
}

/// What a chain's journal is bound to: its custody, and on a vault chain the vault (the chain id
/// is in the journal's file name already, and in the binding for the message).
fn custody_binding(config: &ChainConfig) -> String {
    match config.vault() {
        Some(vault) => format!(
            "the vault {} on chain {}",
            dexd_crypto::checksummed(&vault.vault),
            config.chain_id
        ),
        None => format!("ledger custody on chain {}", config.chain_id),
    }
}

/// Brings a chain's state back at start: the newest usable snapshot (if snapshots are on) and
/// the journal after it, the projector given what it had not written; returns the replay, the
/// chain's snapshot directory and identity, and what its snapshots have done.
fn restore_at_start(
    chain_id: u64,
    full_config: &Config,
    data_dir: &Path,
    journal: &mut dyn Journal,
    projector: &mut Projector,
    engine_config: &EngineConfig,
) -> Result<(Replayed, SnapshotPlace, Arc<SnapshotStatus>), StoreError> {
    let started = Instant::now();
    let identity = SnapshotIdentity {
        chain_id,
        journal_id: journal.journal_id()?,
        configuration_fingerprint: configuration_fingerprint(engine_config),
    };
    let snapshot_directory = snapshot_directory(data_dir, chain_id);
    if let Err(error) = remove_partial_snapshots(&snapshot_directory) {
        tracing::warn!(chain_id, %error, "cannot delete a partial snapshot");
    }
    let snapshot_status = Arc::new(SnapshotStatus::default());
    // A snapshot is usable only if the history holds the commands up to it (the replay after
    // it writes the history only beyond that) and the journal reaches it.
    let usable_through = projector.projected_sequence()?.min(journal.last_sequence()?);
    let use_snapshots = full_config.snapshots.every_commands != 0;
    if use_snapshots {
        // Another node's newer snapshot, shared in PostgreSQL, shortens this node's replay.
        let local_newest = dexd_store::snapshots::list_snapshots(&snapshot_directory)
            .ok()
            .and_then(|files| files.first().map(|file| file.sequence))
            .unwrap_or(0);
        match full_config
            .journal
            .fetch_shared_snapshot(chain_id, &snapshot_directory, (local_newest, usable_through))
        {
            Ok(Some(sequence)) => tracing::info!(chain_id, sequence, "a newer snapshot taken from PostgreSQL"),
            Ok(None) => {}
            Err(error) => tracing::warn!(chain_id, %error, "cannot take a shared snapshot from PostgreSQL"),
        }
    }
    let snapshots = SnapshotPlace {
        directory: snapshot_directory.clone(),
        identity,
    };
    // What the projector had not written before the stop is written now, before serving.
    let (replayed, restored_from) = recover(
        journal,
        &snapshots,
        engine_config,
        (usable_through, u64::MAX),
        use_snapshots,
        Some(projector),
    )?;
    if let Some(sequence) = restored_from {
        snapshot_status.record(sequence, snapshot_file_time_ms(&snapshot_directory, sequence));
        tracing::info!(chain_id, sequence, "chain state restored from a snapshot");
    }
    tracing::info!(
        chain_id,
        journaled_commands = replayed.last_sequence,
        replayed_commands = replayed.last_sequence - snapshot_status.newest_sequence.load(Ordering::Acquire),
        reprojected_commands = replayed.reprojected_commands,
        resting_orders = replayed.engine.resting_order_count(),
        replay_ms = started.elapsed().as_millis() as u64,
        "chain state rebuilt from the journal"
    );
    Ok((replayed, snapshots, snapshot_status))
}

/// When the snapshot of `sequence` was written, from its file (0 when unknown).
fn snapshot_file_time_ms(directory: &Path, sequence: u64) -> u64 {
    dexd_store::snapshots::list_snapshots(directory)
        .ok()
        .and_then(|files| files.into_iter().find(|file| file.sequence == sequence))
        .and_then(|file| std::fs::metadata(file.path).ok())
        .and_then(|metadata| metadata.modified().ok())
        .and_then(|modified| modified.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |elapsed| elapsed.as_millis() as u64)
}
