//! The withdrawals accounts asked for on chain (contract version 5), as an auditor follows them:
//! once a request is past its deadline (in the chain's time) it must have been served, whether
//! or not the venue journaled it. One that was not is printed once (`request <id> OVERDUE`), and
//! an auditor holding a guardian's key freezes the vault then (anyone may; the guardian is the one
//! watching), so that the account exits with its leaf. That each journaled request matches the
//! vault's, and was served with what the replay debited, is checked line by line with the rest of
//! the journal (`chain`, `mod`).

use super::{output, Auditor};

/// The most requests looked at in one round (a backlog is worked off over rounds).
pub const MAX_REQUESTS_CHECKED_PER_ROUND: u64 = 256;

impl Auditor {
    /// Prints each request past its deadline that the vault has not served; as a guardian,
    /// freezes the vault then.
    pub(super) async fn check_requests(&mut self) -> Result<(), String> {
        let Some(vault) = &self.vault else {
            return Ok(());
        };
        let (confirmed, chain_time_s) = match vault.confirmed_block().await {
            Ok(block) => block,
            Err(error) => {
                tracing::warn!(%error, "the chain's node is not available; the requests wait");
                return Ok(());
            }
        };
        let count = match vault.request_count(confirmed).await {
            Ok(count) => count,
            Err(error) => {
                tracing::warn!(%error, "cannot read the vault's requests; they wait");
                return Ok(());
            }
        };
        // Requests are made in deadline order: the first one still reported or served bounds
        // what needs reading. Those already reported are skipped.
        let first = self
            .copy
            .progress()
            .overdue_requests
            .keys()
            .next_back()
            .map_or(self.first_request_to_check, |last| {
                (last + 1).max(self.first_request_to_check)
            });
        for request_id in first..count.min(first + MAX_REQUESTS_CHECKED_PER_ROUND) {
            let stored = match vault.request(request_id).await {
                Ok(stored) => stored,
                Err(error) => {
                    tracing::warn!(%error, request_id, "cannot read a request; it waits");
                    return Ok(());
                }
            };
            if stored.served {
                if request_id == self.first_request_to_check {
                    self.first_request_to_check += 1;
                }
                continue;
            }
            if chain_time_s <= stored.deadline_s {
                // Every later request's deadline is later still.
                break;
            }
            let journaled = request_id < self.engine.custody().next_chain_request_id();
            let what = format!(
                "unserved past its deadline {} ({})",
                stored.deadline_s,
                if journaled {
                    "the venue journaled it"
                } else {
                    "the venue never journaled it"
                }
            );
            let line = if vault.is_guardian() {
                match vault.freeze().await {
                    Ok(hash) => format!("request {request_id} OVERDUE frozen {hash} ({what})"),
                    Err(error) => format!("request {request_id} OVERDUE (the freeze failed: {error}) ({what})"),
                }
            } else {
                format!("request {request_id} OVERDUE {what}")
            };
            output(&line);
            self.copy.update_progress(|progress| {
                progress.overdue_requests.insert(request_id, line);
            })?;
        }
        Ok(())
    }
}
