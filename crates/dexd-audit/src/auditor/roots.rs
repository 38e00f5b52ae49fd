//! The auditor's verdict on each root the vault holds: once it has its confirmations, the tree
//! of the replay at the root's position against the vault's root, deposit count and totals
//! (kept in the directory when they match); a root not verified by half its challenge period,
//! whatever the reason (the journal withheld, slow or malformed pages, the auditor's own lag, a
//! node that did not answer), is `UNVERIFIED` (a warning at a quarter); and, as a guardian, the
//! veto of a bad or unverified root, tried again until its period ends if it fails. It reads the
//! journal through nothing but the auditor's own copy.

use std::sync::Arc;

use dexd_crypto::hex_prefixed;
use dexd_custody::liabilities::TreeAtPosition;
use dexd_custody::vault::chain_address;

use super::chain::VaultRoot;
use super::copy::RootVerdict;
use super::{output, Auditor};

impl Auditor {
    /// Checks the vault's roots that have the confirmations; vetoes as the guardian. Whether
    /// every root the vault holds is decided (or can only wait for the journal's end to move).
    pub(super) async fn check_roots(&mut self) -> Result<bool, String> {
        let Some(vault) = &self.vault else {
            return Ok(true);
        };
        let (confirmed, chain_time_s) = match vault.confirmed_block().await {
            Ok(block) => block,
            Err(error) => {
                tracing::warn!(%error, "the chain's node is not available; the roots wait");
                return Ok(false);
            }
        };
        let first_undecided = (0..)
            .find(|epoch| !self.copy.progress().roots.contains_key(epoch))
            .expect("epochs are countless");
        let roots = match vault.roots(first_undecided, confirmed).await {
            Ok(roots) => roots,
            Err(error) => {
                tracing::warn!(%error, "cannot read the vault's roots; they wait");
                return Ok(false);
            }
        };
        let guardian = vault.is_guardian();
        let mut settled = true;
        for root in roots {
            if self.copy.progress().roots.contains_key(&root.epoch) {
                continue;
            }
            let verdict = if let Some(failed) = self.failed_at().filter(|failed| *failed <= root.journal_sequence) {
                Some((
                    "mismatch",
                    format!("the journal fails a check at {failed}, before the root's position"),
                ))
            } else if root.journal_sequence <= self.position() {
                match self.compare_root(&root, (confirmed, chain_time_s)).await {
                    Ok(verdict) => Some(verdict),
                    // The root's event not found yet (a lagging node): unverified for now.
                    Err(what) => {
                        tracing::warn!(epoch = root.epoch, %what, "a root could not be compared yet");
                        let verdict = self.unverified(&root, chain_time_s, guardian, &what);
                        settled &= verdict.is_some();
                        verdict
                    }
                }
            } else {
                let what = format!(
                    "the journal up to {} was not obtained (the auditor is at {}, the venue's journal ends at {})",
                    root.journal_sequence,
                    self.position(),
                    self.journal_end
                );
                if let Some(verdict) = self.unverified(&root, chain_time_s, guardian, &what) {
                    Some(verdict)
                } else if self.options.once && self.journal_end < root.journal_sequence && self.last_page_ms > 0 {
                    Some((
                        "unavailable",
                        format!("the venue's journal ends at {}", self.journal_end),
                    ))
                } else {
                    settled = false;
                    None
                }
            };
            let Some((verdict, detail)) = verdict else {
                continue;
            };
            self.decide_root(&root, verdict, &detail, chain_time_s).await?;
        }
        Ok(settled)
    }

    /// A root not verified yet: warned of once a quarter of its challenge period has passed, and
    /// from half of it, for a guardian, `UNVERIFIED` (to be vetoed), whatever kept it from being
    /// verified: a guardian that cannot check a root in time must not let it become final. Half
    /// the period leaves the other half for the veto to be mined, and tried again if it fails.
    fn unverified(
        &mut self,
        root: &VaultRoot,
        chain_time_s: u64,
        guardian: bool,
        what: &str,
    ) -> Option<(&'static str, String)> {
        let challenge_period_s = self.vault.as_ref().map_or(0, |vault| vault.challenge_period_s);
        let quarter_s = root.committed_at_s.saturating_add(challenge_period_s / 4);
        let half_s = root.committed_at_s.saturating_add(challenge_period_s / 2);
        let ends_s = root.committed_at_s.saturating_add(challenge_period_s);
        if chain_time_s >= quarter_s && self.warned_unverified.insert(root.epoch) {
            tracing::warn!(
                epoch = root.epoch,
                %what,
                "a root is not verified a quarter into its challenge period; it is vetoed at half if it still is not"
            );
            self.metrics.roots_unverified_warnings.increment(1);
        }
        (guardian && chain_time_s >= half_s && chain_time_s < ends_s).then(|| ("unverified", what.to_string()))
    }

    /// Prints and keeps a root's verdict, and vetoes a bad root as the guardian.
    async fn decide_root(
        &mut self,
        root: &VaultRoot,
        verdict: &str,
        detail: &str,
        chain_time_s: u64,
    ) -> Result<(), String> {
        let vault = self.vault.as_ref().expect("roots are checked on a vault chain");
        let word = match verdict {
            "ok" => "ok",
            "mismatch" => "MISMATCH",
            "data-mismatch" => "DATA-MISMATCH",
            "unverified" => "UNVERIFIED",
            _ => "UNAVAILABLE",
        };
        let in_challenge = chain_time_s < root.committed_at_s.saturating_add(vault.challenge_period_s);
        let mut veto_tx = None;
        let line = if verdict != "ok" && vault.is_guardian() && !root.vetoed && in_challenge {
            match vault.veto(root.epoch).await {
                Ok(hash) => {
                    veto_tx = Some(hash.to_string());
                    format!("root {} {word} vetoed {hash} ({detail})", root.epoch)
                }
                // Tried again next round, until the period ends: nothing is decided yet.
                Err(error) => {
                    tracing::warn!(epoch = root.epoch, %error, "a veto failed; it is tried again");
                    self.metrics.veto_failures.increment(1);
                    return Ok(());
                }
            }
        } else if verdict != "ok" && vault.is_guardian() && !root.vetoed {
            format!(
                "root {} {word} (its challenge period ended before a veto was mined) ({detail})",
                root.epoch
            )
        } else {
            format!("root {} {word} {detail}", root.epoch)
        };
        output(&line);
        match verdict {
            "ok" => self.metrics.roots_ok.increment(1),
            "mismatch" => self.metrics.roots_mismatched.increment(1),
            "data-mismatch" => self.metrics.roots_data_mismatched.increment(1),
            "unverified" => self.metrics.roots_unverified.increment(1),
            _ => self.metrics.roots_unavailable.increment(1),
        }
        let kept = RootVerdict {
            verdict: verdict.to_string(),
            line,
            veto_tx,
        };
        self.copy.update_progress(|progress| {
            progress.roots.insert(root.epoch, kept);
        })
    }

    /// The tree of the replay at journal position `position` (at most the auditor's).
    pub(super) fn replay_tree(&self, position: u64) -> Result<TreeAtPosition, String> {
        let engine = if position == self.position() {
            None
        } else {
            Some(self.copy.engine_at(position)?)
        };
        let engine = engine.as_ref().unwrap_or(&self.engine);
        let tokens: Vec<Option<dexd_core::Address>> = engine
            .description()
            .map(|description| description.assets.iter().map(|asset| asset.token).collect())
            .unwrap_or_default();
        Ok(TreeAtPosition::build(position, engine, &tokens, None))
    }

    /// The tree of the auditor's replay at a root's position, against the vault's root, deposit
    /// count and totals; kept in the directory when it matches.
    async fn compare_root(
        &self,
        root: &VaultRoot,
        (confirmed, chain_time_s): (u64, u64),
    ) -> Result<(&'static str, String), String> {
        let vault = self.vault.as_ref().expect("roots are checked on a vault chain");
        let event = vault
            .root_event(root, confirmed)
            .await
            .map_err(|error| format!("the root's event: {error}"))?
            .ok_or_else(|| format!("the vault's root {} has no RootCommitted event", root.epoch))?;
        let position = root.journal_sequence;
        let tree = Arc::new(tokio::task::block_in_place(|| self.replay_tree(position))?);
        let (tokens, totals) = tree.commit_arguments(|token| event.tokens.contains(&chain_address(token)));
        let mut differences = Vec::new();
        if tree.root() != root.root {
            differences.push(format!(
                "root {} where the replay's is {}",
                hex_prefixed(&root.root),
                hex_prefixed(&tree.root())
            ));
        }
        if tree.deposit_count != root.deposit_count {
            differences.push(format!(
                "deposit count {} where the replay's is {}",
                root.deposit_count, tree.deposit_count
            ));
        }
        if tokens != event.tokens || totals != event.totals {
            differences.push("totals that differ from the replay's".to_string());
        }
        if !differences.is_empty() {
            return Ok(("mismatch", differences.join("; ")));
        }
        let challenge_period_s = self.vault.as_ref().map_or(0, |vault| vault.challenge_period_s);
        let data_note = match self.check_root_data(root, &tree, confirmed).await {
            Ok(Some(what)) => return Ok(("data-mismatch", what)),
            Ok(None) => String::new(),
            // Past its challenge period nothing can be vetoed any more: an auditor catching up
            // on roots whose blobs beacon nodes have dropped (after ~18 days) records the tree
            // it checked and says the data was not, instead of waiting on it for good.
            Err(what) if chain_time_s >= root.committed_at_s.saturating_add(challenge_period_s) => {
                format!(" (its data not checked: {what})")
            }
            Err(what) => return Err(what),
        };
        tokio::task::block_in_place(|| self.copy.keep_tree(&tree))?;
        *self.last_good_tree.lock().expect("the tree's lock is never poisoned") = Some(Arc::clone(&tree));
        Ok((
            "ok",
            format!(
                "journalSequence {position} root {} leaves {}{data_note}",
                hex_prefixed(&root.root),
                tree.leaves.len()
            ),
        ))
    }
}
