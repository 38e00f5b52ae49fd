//! The liability trees of a chain: each built at one journal position, on a thread of its own
//! at the lowest scheduling priority, from the newest snapshot at or before it and the journal
//! up to it (the way a start rebuilds the state), so the writer never waits for one and keeps
//! its cores while one is built; and the few newest kept for the proofs. A new tree takes the
//! hashes of the leaves that did not change from the newest one kept.
//!
//! The committer asks for the tree at the journal's durable end, then commits its root; the
//! endpoints ask for the tree of a committed root's position. Any node with the journal builds
//! the same tree for the same position (the engine is deterministic), so a follower, or a node
//! after a restart, serves the same proofs the leader committed. It does not decide when a root
//! is due or talk to the vault (`dexd-settlement` does).

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::Arc;

use dexd_core::{Address, EngineConfig};
use dexd_settlement::liabilities::{TreeAtPosition, TreeResult};
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
}

impl LiabilityTrees {
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
