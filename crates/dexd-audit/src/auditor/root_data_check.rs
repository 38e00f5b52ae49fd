//! The auditor's check of a root's data (docs/root-data.md): read from the chain alone (its
//! blobs from a beacon node, or its calldata), it must be exactly what the replay makes of the
//! root: every account whose leaves changed since the root it names as its previous (an earlier
//! root the auditor found good), and every account of the range it names, each with all its
//! leaves, and nothing else. Data that is missing from the transaction, malformed or other is a
//! `DATA-MISMATCH`, vetoed as the guardian: an exit from the chain alone would fail on it; so is
//! a root after which the data of the last 14 days (the longest snapshot interval) does not list
//! every address, judged once this run has seen 14 days of roots. Data checked is archived in
//! the auditor's directory, so that it outlives the blobs.
//!
//! It does not decide whether a root's tree matches the replay (`roots.rs` does, first), and a
//! node or beacon node that does not answer leaves the root unverified, never mismatched.

use std::sync::Arc;

use dexd_crypto::liability_tree::LiabilityLeaf;
use dexd_custody::config::MAX_SNAPSHOT_INTERVAL_MS;
use dexd_custody::liabilities::chain_data::{ChainDataError, MAX_ROOTS_WALKED};
use dexd_custody::liabilities::root_data::RootData;
use dexd_custody::liabilities::TreeAtPosition;

use super::chain::VaultRoot;
use super::Auditor;

impl Auditor {
    /// Checks the data of `root`, whose tree the replay made as `tree`: `Ok(None)` when it is
    /// right (and archived), `Ok(Some(what))` when it is missing or wrong, `Err` when it could
    /// not be read yet.
    pub(super) async fn check_root_data(
        &self,
        root: &VaultRoot,
        tree: &Arc<TreeAtPosition>,
        confirmed: u64,
    ) -> Result<Option<String>, String> {
        let vault = self.vault.as_ref().expect("roots are checked on a vault chain");
        let data = match vault.root_data(root.epoch).await {
            Ok(data) => data,
            Err(ChainDataError::Data(error)) => return Ok(Some(format!("its data is not a root's data: {error}"))),
            Err(ChainDataError::NotTheRoot(what) | ChainDataError::Unreadable(what)) => return Ok(Some(what)),
            Err(other) => return Err(format!("the root's data could not be read: {other}")),
        };
        let previous = if data.previous_root == [0; 32] {
            None
        } else {
            // The same root may stand at several epochs (a copy with bad data among them): any
            // whose tree the replay makes at its position is the tree the changes are against,
            // found good or not (a root the auditor could not verify in time was vetoed, yet
            // the venue may have named it before the veto).
            // Newest first, and no further than the first that serves: the root named is almost
            // always the one just before.
            let mut previous_tree = None;
            for epoch in (root.epoch.saturating_sub(MAX_ROOTS_WALKED)..root.epoch).rev() {
                let candidate = vault
                    .root_at(epoch, confirmed)
                    .await
                    .map_err(|error| format!("the root's previous root: {error}"))?;
                if candidate.root != data.previous_root || candidate.journal_sequence > root.journal_sequence {
                    continue;
                }
                let tree = self.tree_of(&candidate)?;
                if tree.root() == candidate.root {
                    previous_tree = Some(tree);
                    break;
                }
            }
            let Some(previous_tree) = previous_tree else {
                return Ok(Some(
                    "its data lists changes against a root that is no earlier root of the replay's".to_string(),
                ));
            };
            Some((data.previous_root, previous_tree))
        };
        let expected = tokio::task::block_in_place(|| {
            RootData::for_root(
                (tree.journal_sequence, tree.deposit_count, tree.root()),
                &tree.leaves,
                previous
                    .as_ref()
                    .map(|(root, previous_tree)| (previous_tree.leaves.as_slice(), *root)),
                data.range,
            )
        });
        if expected != data {
            return Ok(Some(describe_difference(&expected, &data)));
        }
        let full_set_listed = self
            .range_window
            .lock()
            .expect("the window's lock is never poisoned")
            .add(root.committed_at_s, data.range);
        if !full_set_listed {
            return Ok(Some(format!(
                "the roots' data of the last {} days does not list every account: an exit reading back that far \
                 would not find them all",
                MAX_SNAPSHOT_INTERVAL_MS / 86_400_000
            )));
        }
        tokio::task::block_in_place(|| self.copy.keep_root_data(root.epoch, &root.root, &data.encode()))?;
        Ok(None)
    }

    /// The replay's tree at an earlier root's position: the newest good one kept, or built
    /// again.
    fn tree_of(&self, root: &VaultRoot) -> Result<Arc<TreeAtPosition>, String> {
        let kept = self
            .last_good_tree
            .lock()
            .expect("the tree's lock is never poisoned")
            .clone();
        if let Some(tree) =
            kept.filter(|tree| tree.journal_sequence == root.journal_sequence && tree.root() == root.root)
        {
            return Ok(tree);
        }
        tokio::task::block_in_place(|| self.replay_tree(root.journal_sequence)).map(Arc::new)
    }
}

/// What differs between the data the replay makes of a root and the data the chain carries.
fn describe_difference(expected: &RootData, carried: &RootData) -> String {
    if expected.range != carried.range {
        return "its data's range is not a range the root may carry (a venue's first root lists every account)"
            .to_string();
    }
    fn listed(data: &RootData) -> std::collections::BTreeMap<dexd_core::Address, &Vec<LiabilityLeaf>> {
        data.accounts
            .iter()
            .map(|listed| (listed.account, &listed.leaves))
            .collect()
    }
    let (expected_accounts, carried_accounts) = (listed(expected), listed(carried));
    let missing = expected_accounts
        .keys()
        .filter(|account| !carried_accounts.contains_key(account))
        .count();
    let extra = carried_accounts
        .keys()
        .filter(|account| !expected_accounts.contains_key(account))
        .count();
    let other = expected_accounts
        .iter()
        .filter(|(account, leaves)| carried_accounts.get(account).is_some_and(|carried| carried != *leaves))
        .count();
    format!(
        "its data lists {} accounts where the replay lists {}: {missing} missing, {extra} not to be listed, {other} \
         with other leaves (it would not rebuild the root)",
        carried.accounts.len(),
        expected.accounts.len()
    )
}
