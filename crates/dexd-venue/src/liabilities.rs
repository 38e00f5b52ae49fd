//! The liability trees of a chain: each built at one journal position, on a thread of its own
//! at the lowest scheduling priority, from the newest snapshot at or before it and the journal
//! up to it (the way a start rebuilds the state), so the writer never waits for one and keeps
//! its cores while one is built; the newest few kept in memory for the committer, and every
//! tree written as a file in the data directory (`liabilities/chain-<id>/`), from which the
//! endpoints serve proofs and leaves without rebuilding anything. A new tree takes the hashes
//! of the leaves that did not change from the newest one kept.
//!
//! The committer asks for the tree at the journal's durable end, then commits its root; it and
//! the recorder ask for the tree of a vault root's position to check it. The keeper
//! (`run_keeper`) makes sure the file of every root that can still become the exit root, and
//! of the newest `keep_roots`, is there (building what a restart or a follower lacks) and
//! deletes the others. Any node with the journal builds the same tree for the same position
//! (the engine is deterministic), so a follower, or a node after a restart, serves the same
//! proofs the leader committed. It does not decide when a root is due or talk to the vault
//! (`dexd-custody` does).

use std::collections::{BTreeSet, VecDeque};
use std::path::PathBuf;
use std::sync::Arc;

use dexd_core::{Address, EngineConfig, RootOrigin, RootStanding};
use dexd_custody::liabilities::tree_file::{self, TreeFile};
use dexd_custody::liabilities::{TreeAtPosition, TreeResult};
use dexd_store::backend::JournalBackend;

use super::snapshotter::{recover, SnapshotPlace};

/// How many trees a chain keeps built (the newest committed root's, and the one being
/// committed): each holds every leaf and node, about 160 bytes per (account, token).
pub const LIABILITY_TREES_KEPT: usize = 2;

/// The nice value of a tree's thread (and of the threads it starts, which inherit it): the
/// lowest priority, so that on a busy machine the writer, the projector and the requests keep
/// their cores and the tree takes what is left (BENCHMARKS.md, "The liability tree").
const TREE_THREAD_NICE: i32 = 19;

/// Lowers the calling thread's scheduling priority to [`TREE_THREAD_NICE`] (Linux keeps the
/// nice value per thread). A failure leaves the priority as it was: the tree is still built.
fn lower_this_threads_priority() {
    let thread = rustix::thread::gettid();
    if let Err(error) = rustix::process::setpriority_process(Some(thread), TREE_THREAD_NICE) {
        tracing::debug!(%error, "the liability tree's thread keeps its priority");
    }
}

/// What a chain needs to build its trees.
pub(crate) struct LiabilityTrees {
    pub(crate) chain_id: u64,
    pub(crate) data_dir: PathBuf,
    pub(crate) journal_backend: JournalBackend,
    pub(crate) snapshots: SnapshotPlace,
    pub(crate) engine_config: EngineConfig,
    /// Each asset's token (`None`: the native asset).
    pub(crate) tokens: Vec<Option<Address>>,
    /// The trees kept, oldest first; its lock is held while one is built, so one is built at a
    /// time and a second ask for the same position waits for the first.
    pub(crate) kept: tokio::sync::Mutex<VecDeque<Arc<TreeAtPosition>>>,
    /// The trees (journal position, root) whose files the keeper wants and has not yet built:
    /// a proof of one of them is "not yet", not "not kept".
    pub(crate) wanted_missing: parking_lot::Mutex<BTreeSet<(u64, [u8; 32])>>,
}

impl LiabilityTrees {
    /// A chain's trees, none built yet.
    pub(crate) fn new(
        config: &crate::config::ChainConfig,
        full_config: &crate::config::Config,
        data_dir: &std::path::Path,
        snapshots: &SnapshotPlace,
        engine_config: &EngineConfig,
    ) -> LiabilityTrees {
        LiabilityTrees {
            chain_id: config.chain_id,
            data_dir: data_dir.to_path_buf(),
            journal_backend: full_config.journal.clone(),
            snapshots: snapshots.clone(),
            engine_config: engine_config.clone(),
            tokens: config.assets.iter().map(|asset| asset.address).collect(),
            kept: tokio::sync::Mutex::new(VecDeque::new()),
            wanted_missing: parking_lot::Mutex::new(BTreeSet::new()),
        }
    }
}

/// What a request for a tree's file found.
pub enum TreeFileLookup {
    /// The file, open.
    Open(TreeFile),
    /// The keeper wants it and is building it.
    Pending,
    /// It is not kept.
    NotKept,
}

impl LiabilityTrees {
    /// The folder of the chain's tree files.
    pub(crate) fn directory(&self) -> PathBuf {
        self.data_dir
            .join("liabilities")
            .join(format!("chain-{}", self.chain_id))
    }

    /// The file of the tree at `journal_sequence` with `root`, opened (a blocking read of its
    /// header: call it off the async runtime).
    pub fn open_file(&self, journal_sequence: u64, root: &[u8; 32]) -> TreeFileLookup {
        let path = self.directory().join(tree_file::file_name(journal_sequence, root));
        match TreeFile::open(&path) {
            Ok(file) => TreeFileLookup::Open(file),
            Err(error) => {
                if error.kind() != std::io::ErrorKind::NotFound {
                    tracing::warn!(chain_id = self.chain_id, path = %path.display(), %error, "a liability tree file is not readable");
                }
                if self.wanted_missing.lock().contains(&(journal_sequence, *root)) {
                    TreeFileLookup::Pending
                } else {
                    TreeFileLookup::NotKept
                }
            }
        }
    }

    /// The tree at `journal_sequence`: kept, or built now off the async runtime.
    pub(crate) async fn at(self: &Arc<Self>, journal_sequence: u64) -> TreeResult {
        let mut kept = self.kept.lock().await;
        if let Some(tree) = kept.iter().find(|tree| tree.journal_sequence == journal_sequence) {
            return Ok(Arc::clone(tree));
        }
        let trees = Arc::clone(self);
        // The newest tree kept lends its leaf hashes: most leaves have not changed since.
        let previous = kept.back().cloned();
        let (sender, receiver) = tokio::sync::oneshot::channel();
        std::thread::Builder::new()
            .name(format!("liability-tree-{}", self.chain_id))
            .spawn(move || {
                lower_this_threads_priority();
                let _ = sender.send(trees.build(journal_sequence, previous.as_deref()));
            })
            .map_err(|error| format!("cannot start the tree's thread: {error}"))?;
        let built = receiver.await.map_err(|_| "the tree's thread failed".to_string())??;
        kept.push_back(Arc::clone(&built));
        while kept.len() > LIABILITY_TREES_KEPT {
            kept.pop_front();
        }
        Ok(built)
    }

    fn build(&self, journal_sequence: u64, previous: Option<&TreeAtPosition>) -> TreeResult {
        let started = std::time::Instant::now();
        let mut journal = self
            .journal_backend
            .open_reader(&self.data_dir, self.chain_id)
            .map_err(|error| format!("cannot read the journal: {error}"))?;
        let (replayed, _) = recover(
            journal.as_mut(),
            &self.snapshots,
            &self.engine_config,
            (journal_sequence, journal_sequence),
            true,
            None,
        )
        .map_err(|error| format!("cannot rebuild the state at {journal_sequence}: {error}"))?;
        if replayed.last_sequence != journal_sequence {
            return Err(format!(
                "the journal ends at {}, before {journal_sequence}",
                replayed.last_sequence
            ));
        }
        let tree = TreeAtPosition::build(journal_sequence, &replayed.engine, &self.tokens, previous);
        assert_eq!(
            (tree.journal_sequence, replayed.engine.journal_sequence()),
            (journal_sequence, journal_sequence),
            "invariant: a tree is the state of exactly the position asked for"
        );
        // Every tree is written: the one a root is committed from is served once it is recorded,
        // and one the keeper asked for is why it was built.
        tree_file::write(&self.directory(), &tree)
            .map_err(|error| format!("cannot write the liability tree's file: {error}"))?;
        tracing::info!(
            chain_id = self.chain_id,
            journal_sequence,
            leaves = tree.leaves.len(),
            duration_ms = started.elapsed().as_millis() as u64,
            "liability tree built"
        );
        Ok(Arc::new(tree))
    }
}

/// How often the keeper looks at which tree files are wanted.
const KEEPER_INTERVAL_MS: u64 = 2_000;

/// The keepers of the tree files of every vault chain; stopped when dropped.
pub struct TreeKeepers {
    tasks: Vec<tokio::task::JoinHandle<()>>,
}

impl TreeKeepers {
    /// Starts one keeper per vault chain of the venue.
    pub fn start(venue: &super::Venue) -> TreeKeepers {
        let tasks = venue
            .config
            .chains
            .iter()
            .filter_map(|config| Some((venue.chain(config.chain_id)?, config.vault()?.keep_roots)))
            .map(|(chain, keep_roots)| tokio::spawn(run_keeper(chain, keep_roots)))
            .collect();
        TreeKeepers { tasks }
    }
}

impl Drop for TreeKeepers {
    fn drop(&mut self) {
        for task in &self.tasks {
            task.abort();
        }
    }
}

/// Keeps the chain's tree files: the file of every root of the venue's that can still become the
/// exit root (the newest final one and every one after it, not vetoed) and of the newest
/// `keep_roots` of the venue's, built when missing (after a restart, on a follower); every other
/// file at or before the newest recorded root's position deleted (a newer one belongs to a root
/// sent and not yet recorded).
async fn run_keeper(chain: Arc<super::Chain>, keep_roots: usize) {
    let mut interval = tokio::time::interval(std::time::Duration::from_millis(KEEPER_INTERVAL_MS));
    interval.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    loop {
        interval.tick().await;
        if let Err(error) = keep_once(&chain, keep_roots).await {
            tracing::warn!(chain_id = chain.chain_id, %error, "the liability tree files could not be kept now");
        }
    }
}

async fn keep_once(chain: &Arc<super::Chain>, keep_roots: usize) -> Result<(), String> {
    let (mut wanted, newest_sequence, journaled) = chain.read_engine(|engine| {
        let liabilities = engine.custody().liabilities();
        let wanted: BTreeSet<(u64, [u8; 32])> = liabilities
            .roots()
            .filter(|root| root.record.origin == RootOrigin::Venue && root.standing != RootStanding::Vetoed)
            .map(|root| (root.record.journal_sequence, root.record.root))
            .collect();
        let newest = liabilities.newest_root().map(|root| root.journal_sequence);
        (wanted, newest, engine.journal_sequence())
    });
    let Some(newest_sequence) = newest_sequence else {
        return Ok(());
    };
    let history = chain.history().await.map_err(|error| format!("{error:?}"))?;
    let mut cursor = None;
    let mut newest_kept = 0;
    while newest_kept < keep_roots {
        let page = history
            .liability_roots(dexd_store::PageRequest {
                limit: 100,
                cursor,
                start_ms: 0,
                end_ms: u64::MAX,
            })
            .map_err(|error| error.to_string())?;
        for root in &page.items {
            if newest_kept < keep_roots
                && root.record.origin == RootOrigin::Venue
                && root.standing != RootStanding::Vetoed
            {
                wanted.insert((root.record.journal_sequence, root.record.root));
                newest_kept += 1;
            }
        }
        match page.next_cursor {
            Some(next) => cursor = Some(next),
            None => break,
        }
    }
    let trees = Arc::clone(&chain.liability_trees);
    let directory = trees.directory();
    let present: BTreeSet<(u64, [u8; 32])> = std::fs::read_dir(&directory)
        .map(|entries| {
            entries
                .filter_map(|entry| tree_file::parse_file_name(entry.ok()?.file_name().to_str()?))
                .collect()
        })
        .unwrap_or_default();
    let missing: BTreeSet<(u64, [u8; 32])> = wanted
        .iter()
        .filter(|tree| !present.contains(tree) && tree.0 <= journaled)
        .copied()
        .collect();
    *trees.wanted_missing.lock() = missing.clone();
    for (sequence, root) in &present {
        if *sequence <= newest_sequence && !wanted.contains(&(*sequence, *root)) {
            let path = directory.join(tree_file::file_name(*sequence, root));
            if let Err(error) = std::fs::remove_file(&path) {
                tracing::warn!(path = %path.display(), %error, "a liability tree file that is no longer kept was not deleted");
            }
        }
    }
    for (sequence, root) in missing {
        let tree = trees.at(sequence).await?;
        if tree.root() != root {
            tracing::error!(
                chain_id = chain.chain_id,
                sequence,
                "the tree rebuilt from the journal does not have the recorded root: its proofs are not served"
            );
        }
        trees.wanted_missing.lock().remove(&(sequence, root));
    }
    Ok(())
}
