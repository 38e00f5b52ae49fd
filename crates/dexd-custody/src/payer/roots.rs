//! The liability roots, committed by the payer (the operator's key sends both, and its
//! transactions form one sequence of nonces), and the vault's facts about roots, journaled:
//!
//! - every `root_interval_ms` the tree at the journal's durable end is built off the writer's
//!   path and its root sent as `commitRoot`, with how many of the vault's deposits it covers and
//!   the totals per token, as one more transaction in flight;
//! - every root the vault holds with `confirmations` on top is journaled in epoch order as
//!   `RecordLiabilityRoot`, whoever sent it: as the venue's own when the venue's tree at the
//!   root's journal position has its root, deposit count and totals, as foreign otherwise (a
//!   stolen operator key, a bug: reported at error level, and no withdrawal is paid while it could
//!   become the exit root); the committer goes on committing its own roots after it;
//! - a root the confirmed chain shows vetoed, or past its challenge period without a veto, is
//!   journaled as such (`SettleLiabilityRoot`): a withdrawal is paid only once a final root of
//!   the venue's covers its debit ([`dexd_core::Engine::custody`]'s `payable_through`);
//! - the freeze, once confirmed, is journaled (`RecordVaultFreeze`): the chain then takes no
//!   order, deposit or withdrawal. A frozen vault is never sent anything.
//!
//! After a crash between a commit and its record, the next leader finds the root in the vault,
//! its transaction by its `RootCommitted` event (found by the block of the root's time, at any
//! age), and rebuilds the same tree from the journal.

use std::time::Instant;

use alloy::eips::{BlockId, BlockNumberOrTag};
use dexd_core::{Command, LiabilityRootRecord, RootOrigin, RootStanding, VaultFreeze};

use super::in_flight::{FlightPurpose, InFlight};
use super::root_carrier::{root_call, RootCall};
use super::{submit, PayError, Payer};
use crate::liabilities::TreeAtPosition;
use crate::node::{NodeError, RootLog};
use crate::vault::{chain_address, DexdVaultV2};
use crate::{VaultChain, VaultRootTerms};

/// The most roots recorded from the vault in one poll (a backlog is worked off over polls).
pub const MAX_ROOTS_RECORDED_PER_POLL: u64 = 16;

/// The most roots whose veto or finality is read in one poll.
pub const MAX_ROOTS_SETTLED_PER_POLL: usize = 64;

/// What the payer knows of roots.
pub(super) struct Roots {
    /// From when the first root of this run is counted due, when none is recorded yet.
    started: Instant,
    /// The root sent and not yet recorded.
    sent: Option<SentRoot>,
    /// Not before this is a root sent again, after the vault refused one.
    not_before: Option<Instant>,
    /// A root was sent and withdrawals have not had their turn since: the next root waits for
    /// it. Without it a root recorded in the same poll as the next one falls due (confirmations
    /// faster than the poll, or a chain clock that runs fast) would take every turn, and no
    /// withdrawal would ever be paid.
    withdrawals_turn_owed: bool,
}

#[derive(Clone, Copy)]
pub(super) struct SentRoot {
    pub(super) root: [u8; 32],
    pub(super) journal_sequence: u64,
    /// The block its transaction was mined in, once it was.
    pub(super) mined_block: Option<u64>,
    /// When it was sent: a root the vault does not show within [`SENT_ROOT_FORGOTTEN_AFTER_MS`]
    /// (or the interval, if longer) is forgotten, and a new one sent when due.
    pub(super) sent_at: Instant,
}

/// How long a root sent is waited for in the vault before it is forgotten (a reorganisation
/// took it away, or it was never mined).
pub const SENT_ROOT_FORGOTTEN_AFTER_MS: u64 = 600_000;

impl Roots {
    pub(super) fn new() -> Roots {
        Roots {
            started: Instant::now(),
            sent: None,
            not_before: None,
            withdrawals_turn_owed: false,
        }
    }

    /// Withdrawals had their turn in this poll: the next root may go.
    pub(super) fn withdrawals_had_their_turn(&mut self) {
        self.withdrawals_turn_owed = false;
    }

    /// Forgets what this leadership sent: the next one finds it in the vault.
    pub(super) fn forget_sent(&mut self) {
        self.sent = None;
    }

    /// The root in flight reverted, or its nonce went to another transaction: a root is sent
    /// again when due.
    pub(super) fn reverted(&mut self) {
        self.sent = None;
    }

    /// A root could not be sent: the next is tried an interval from now, never sooner (every
    /// poll would otherwise build and send it again).
    fn wait_an_interval(&mut self, vault: &VaultChain) -> RootsPoll {
        self.not_before = Some(Instant::now() + std::time::Duration::from_millis(vault.config.root_interval_ms));
        RootsPoll::Continue
    }

    /// The root in flight was mined in `block`.
    pub(super) fn mined_in(&mut self, block: u64) {
        if let Some(sent) = self.sent.as_mut() {
            sent.mined_block = Some(block);
        }
    }
}

/// What the roots' part of a poll leaves the payer to do.
pub(super) enum RootsPoll {
    /// Go on to pay withdrawals.
    Continue,
    /// A root was sent: it is in flight.
    Sent,
    /// The vault is frozen: nothing more is sent to it.
    Frozen,
}

/// The confirmed block the vault's facts are read at, and its time in seconds.
#[derive(Clone, Copy)]
struct Confirmed {
    head: u64,
    block: u64,
    time_s: u64,
}

impl Confirmed {
    fn at(&self) -> BlockId {
        BlockId::Number(BlockNumberOrTag::Number(self.block))
    }
}

impl Payer {
    /// Records what the vault holds and the journal lacks (roots, vetoes, finality, the
    /// freeze), then commits a root when one is due.
    pub(super) async fn poll_roots(&mut self, vault: &VaultChain) -> Result<RootsPoll, PayError> {
        let Some(terms) = vault.root_terms() else {
            return Ok(RootsPoll::Continue);
        };
        // A halted custody (a reorganisation deeper than the confirmations) records, settles and
        // commits nothing until an operator restarts it.
        if vault.status().halted.is_some() {
            return Ok(RootsPoll::Continue);
        }
        let head = vault.node.head().await?;
        let Some(confirmed_block) = vault.confirmed_head(head).await? else {
            return Ok(RootsPoll::Continue);
        };
        let Some((_, time_s)) = vault.node.block(confirmed_block).await? else {
            return Ok(RootsPoll::Continue);
        };
        // A root recorded or settled is in a block at or before this one: journaled no earlier.
        vault.chain.note_chain_time_ms(time_s.saturating_mul(1_000));
        let confirmed = Confirmed {
            head,
            block: confirmed_block,
            time_s,
        };
        self.record_vault_roots(vault, terms, confirmed).await?;
        self.settle_roots(vault, terms, confirmed).await?;
        let frozen = vault
            .node
            .view(vault.node.vault(), DexdVaultV2::frozenCall {}, BlockId::latest())
            .await?;
        if frozen {
            self.record_freeze(vault, confirmed).await?;
            return Ok(RootsPoll::Frozen);
        }
        report_foreign_roots(vault);
        // A root mined in a block now confirmed that the vault does not hold (it was recorded
        // above if it did) was taken away by a reorganisation: a new one is sent when due.
        if self
            .roots
            .sent
            .is_some_and(|sent| sent.mined_block.is_some_and(|block| block <= confirmed.block))
        {
            tracing::warn!(
                chain_id = vault.chain_id,
                "a liability root mined before is not in the confirmed chain (a reorganisation); a new one is sent when due"
            );
            self.roots.sent = None;
        }
        let forget_after_ms = SENT_ROOT_FORGOTTEN_AFTER_MS.max(vault.config.root_interval_ms);
        if self.in_flight.is_none()
            && self
                .roots
                .sent
                .is_some_and(|sent| sent.sent_at.elapsed().as_millis() as u64 > forget_after_ms)
        {
            tracing::warn!(
                chain_id = vault.chain_id,
                "a liability root sent was not found in the vault in time; a new one is sent when due"
            );
            self.roots.sent = None;
        }
        let chain_now_ms = match vault.node.block(head).await? {
            Some((_, time_s)) => time_s.saturating_mul(1_000),
            None => 0,
        };
        if self.roots.sent.is_some() || self.roots.withdrawals_turn_owed || !self.root_due(vault, chain_now_ms) {
            return Ok(RootsPoll::Continue);
        }
        self.commit_root(vault).await
    }

    /// Whether a root is due: `root_interval_ms` after the newest root of the venue's that is
    /// not vetoed (or after this run's start, when there is none). A foreign root does not
    /// count: whoever planted it cannot hold off the venue's own roots with it. A root's time is
    /// the chain's, so the interval is counted on the chain's clock (`chain_now_ms`, the head's
    /// time), or the wall clock where that is later: a chain whose block times run ahead of the
    /// wall clock (by seconds on a real chain, by minutes on a devnet that moves its time) never
    /// holds a root back until the wall clock catches up, and a quiet devnet that mines no block
    /// still gets its roots.
    fn root_due(&self, vault: &VaultChain, chain_now_ms: u64) -> bool {
        if self
            .roots
            .not_before
            .is_some_and(|not_before| Instant::now() < not_before)
        {
            return false;
        }
        let newest = vault.read_engine(|engine| {
            engine
                .custody()
                .liabilities()
                .newest_venue_root()
                .map(|root| root.committed_at_ms)
        });
        match newest {
            Some(committed_at_ms) => {
                let now_ms = chain_now_ms.max(dexd_store::now_ms());
                now_ms.saturating_sub(committed_at_ms) >= vault.config.root_interval_ms
            }
            None => self.roots.started.elapsed().as_millis() as u64 >= vault.config.root_interval_ms,
        }
    }

    /// Builds the tree at the journal's durable end and sends its root.
    async fn commit_root(&mut self, vault: &VaultChain) -> Result<RootsPoll, PayError> {
        let journal_sequence = vault.chain.durable_position().sequence;
        let tree = tree_at(vault, journal_sequence).await?;
        let (call, epoch) = match root_call_of(vault, &tree).await {
            Ok(built) => built,
            Err(PayError::Node(NodeError::Refused(message))) => {
                tracing::error!(
                    chain_id = vault.chain_id,
                    journal_sequence,
                    message,
                    "no liability root sent"
                );
                return Ok(self.roots.wait_an_interval(vault));
            }
            Err(error) => return Err(error),
        };
        let RootCall {
            calldata,
            blobs,
            data_bytes,
            accounts_listed,
        } = call;
        let blob_count = blobs.as_ref().map_or(0, |blobs| blobs.sidecar.blobs.len());
        let fees = vault.node.fee_estimate().await?;
        let sent = match self.send_call(vault, calldata.clone(), (fees, 0), blobs.clone()).await {
            Ok(sent) => sent,
            Err(PayError::Node(NodeError::Reverted { message, .. })) => {
                // The vault holds less than the venue owes, a foreign root stands ahead of the
                // journal, or the key is not the operator: never silent, and tried again at the
                // next interval's poll.
                tracing::error!(
                    chain_id = vault.chain_id,
                    journal_sequence,
                    message,
                    "the vault refuses the liability root"
                );
                return Ok(self.roots.wait_an_interval(vault));
            }
            Err(error) => return Err(error),
        };
        tracing::info!(
            chain_id = vault.chain_id,
            tx_hash = %sent.hash,
            journal_sequence,
            deposit_count = tree.deposit_count,
            leaves = tree.leaves.len(),
            epoch,
            data_bytes,
            accounts_listed,
            blob_count,
            "liability root sent to the vault, with its data"
        );
        self.roots.sent = Some(SentRoot {
            root: tree.root(),
            journal_sequence,
            mined_block: None,
            sent_at: Instant::now(),
        });
        self.roots.withdrawals_turn_owed = true;
        self.in_flight = Some(
            InFlight::new(sent, Vec::new(), calldata)
                .for_purpose(FlightPurpose::Root)
                .with_blobs(blobs),
        );
        Ok(RootsPoll::Sent)
    }

    /// Journals each root the vault holds, in the confirmed block, that the journal lacks: the
    /// venue's own when its tree at the root's position matches it, foreign otherwise.
    async fn record_vault_roots(
        &mut self,
        vault: &VaultChain,
        terms: VaultRootTerms,
        confirmed: Confirmed,
    ) -> Result<(), PayError> {
        let count: u64 = vault
            .node
            .view(vault.node.vault(), DexdVaultV2::rootCountCall {}, confirmed.at())
            .await?
            .saturating_to();
        let recorded = vault.read_engine(|engine| engine.custody().liabilities().roots_recorded());
        if count < recorded {
            halt(
                vault,
                format!(
                    "the vault holds {count} liability roots in a confirmed block and the journal recorded {recorded}: \
                     the chain changed deeper than the confirmations (a reorganisation); custody halts until an \
                     operator looks and restarts"
                ),
            );
            return Ok(());
        }
        for epoch in recorded..count.min(recorded + MAX_ROOTS_RECORDED_PER_POLL) {
            if !self.record_vault_root(vault, terms, confirmed, epoch).await? {
                return Ok(());
            }
        }
        Ok(())
    }

    /// Journals the vault's root of `epoch`, in the confirmed block, as the venue's or foreign;
    /// false when its event was not found (it is looked for again next poll).
    async fn record_vault_root(
        &mut self,
        vault: &VaultChain,
        terms: VaultRootTerms,
        confirmed: Confirmed,
        epoch: u64,
    ) -> Result<bool, PayError> {
        let stored = vault.node.liability_root(epoch, confirmed.at()).await?;
        let Some(event) = self
            .find_root_event(vault, epoch, stored.committedAt.to(), confirmed)
            .await?
        else {
            tracing::warn!(
                chain_id = vault.chain_id,
                epoch,
                "the vault holds a root whose event was not found; looked for again next poll"
            );
            return Ok(false);
        };
        let own_tree = venue_tree_matching(vault, &stored, &event).await?;
        let origin = if own_tree.is_some() {
            RootOrigin::Venue
        } else {
            RootOrigin::Foreign
        };
        let committed_at_ms = stored.committedAt.to::<u64>().saturating_mul(1_000);
        submit(
            vault,
            Command::RecordLiabilityRoot(LiabilityRootRecord {
                epoch,
                root: stored.root.0,
                journal_sequence: stored.journalSequence,
                deposit_count: stored.depositCount,
                tx_hash: event.tx_hash.0,
                block_number: event.block_number,
                committed_at_ms,
                final_after_ms: committed_at_ms.saturating_add(terms.challenge_period_s.saturating_mul(1_000)),
                origin,
                totals: own_tree.map(|tree| tree.totals.clone()).unwrap_or_default(),
            }),
        )
        .await?;
        match origin {
            RootOrigin::Venue => {
                tracing::info!(chain_id = vault.chain_id, epoch, tx_hash = %event.tx_hash, "liability root recorded")
            }
            RootOrigin::Foreign => tracing::error!(
                chain_id = vault.chain_id,
                epoch,
                tx_hash = %event.tx_hash,
                journal_sequence = stored.journalSequence,
                "the vault holds a liability root the venue did not make (its tree at that journal position differs): \
                 no withdrawal is paid until it is vetoed (by the guardian, or the owner with dexd vault veto) or a \
                 later root of the venue's is final; was the operator key stolen?"
            ),
        }
        if self
            .roots
            .sent
            .is_some_and(|sent| sent.root == stored.root.0 && sent.journal_sequence == stored.journalSequence)
        {
            self.roots.sent = None;
        }
        Ok(true)
    }

    /// Journals each recorded root the confirmed block shows vetoed, or past its challenge
    /// period without a veto (final; in epoch order, after every earlier root is settled).
    async fn settle_roots(
        &mut self,
        vault: &VaultChain,
        terms: VaultRootTerms,
        confirmed: Confirmed,
    ) -> Result<(), PayError> {
        let open: Vec<(u64, u64, [u8; 32])> = vault.read_engine(|engine| {
            engine
                .custody()
                .liabilities()
                .roots()
                .filter(|root| root.standing == RootStanding::Challengeable)
                .take(MAX_ROOTS_SETTLED_PER_POLL)
                .map(|root| (root.record.epoch, root.record.committed_at_ms / 1_000, root.record.root))
                .collect()
        });
        let mut earlier_open = false;
        for (epoch, committed_at_s, root) in open {
            let stored = vault.node.liability_root(epoch, confirmed.at()).await?;
            if stored.root.0 != root {
                halt(
                    vault,
                    format!(
                        "the vault's liability root of epoch {epoch} in a confirmed block is not the one the journal \
                         recorded: the chain changed deeper than the confirmations (a reorganisation); custody halts \
                         until an operator looks and restarts"
                    ),
                );
                return Ok(());
            }
            let standing = if stored.vetoed {
                RootStanding::Vetoed
            } else if !earlier_open && confirmed.time_s >= committed_at_s.saturating_add(terms.challenge_period_s) {
                // No veto can come any more: a veto needs a block before the period's end, and
                // every block from here on is later.
                RootStanding::Final
            } else {
                earlier_open = true;
                continue;
            };
            submit(vault, Command::SettleLiabilityRoot { epoch, standing }).await?;
            tracing::info!(chain_id = vault.chain_id, epoch, ?standing, "liability root settled");
        }
        Ok(())
    }

    /// Journals the vault's freeze once the confirmed block shows it; until then nothing more
    /// is sent (the vault refuses it).
    async fn record_freeze(&mut self, vault: &VaultChain, confirmed: Confirmed) -> Result<(), PayError> {
        let message = "the vault is frozen (no root came for its maxRootAge): it pays exits only, and the venue sends \
                       it nothing and takes no orders, deposits or withdrawals"
            .to_string();
        vault.update_status(|status| {
            status.payer_error = Some(message.clone());
            status.vault_frozen = true;
        });
        if vault.read_engine(|engine| engine.custody().is_frozen()) {
            return Ok(());
        }
        let node_vault = vault.node.vault();
        if !vault
            .node
            .view(node_vault, DexdVaultV2::frozenCall {}, confirmed.at())
            .await?
        {
            return Ok(());
        }
        let exit_epoch = if vault
            .node
            .view(node_vault, DexdVaultV2::hasExitRootCall {}, confirmed.at())
            .await?
        {
            let epoch = vault
                .node
                .view(node_vault, DexdVaultV2::exitEpochCall {}, confirmed.at())
                .await?;
            Some(epoch.saturating_to())
        } else {
            None
        };
        tracing::warn!(chain_id = vault.chain_id, ?exit_epoch, "{message}");
        submit(vault, Command::RecordVaultFreeze(VaultFreeze { exit_epoch })).await
    }

    /// The `RootCommitted` event of `epoch`, found in the blocks of the root's time
    /// ([`crate::node::Node::find_root_committed_event`]).
    async fn find_root_event(
        &self,
        vault: &VaultChain,
        epoch: u64,
        committed_at_s: u64,
        confirmed: Confirmed,
    ) -> Result<Option<RootLog>, PayError> {
        Ok(vault
            .node
            .find_root_committed_event(
                epoch,
                committed_at_s,
                (vault.config.start_block, confirmed.head),
                vault.config.max_log_range_blocks,
            )
            .await?)
    }
}

/// Halts custody on the chain (crediting and roots stop; only a restart clears it), loudly.
fn halt(vault: &VaultChain, reason: String) {
    tracing::error!(chain_id = vault.chain_id, "{reason}");
    vault.update_status(|status| status.halted = Some(reason));
}

/// The venue's tree at the journal position a vault root names, if it is that root: the same
/// root, deposit count and totals. A position past the journal's durable end is no tree of the
/// venue's.
async fn venue_tree_matching(
    vault: &VaultChain,
    stored: &DexdVaultV2::LiabilityRoot,
    event: &RootLog,
) -> Result<Option<std::sync::Arc<TreeAtPosition>>, PayError> {
    if stored.journalSequence > vault.chain.durable_position().sequence {
        return Ok(None);
    }
    let tree = tree_at(vault, stored.journalSequence).await?;
    let (tokens, totals) = tree.commit_arguments(|token| event.tokens.contains(&chain_address(token)));
    let matches = tree.root() == stored.root.0
        && tree.deposit_count == stored.depositCount
        && tokens == event.tokens
        && totals == event.totals;
    Ok(matches.then_some(tree))
}

/// The call that commits `tree`'s root, with its data and the change since the venue's newest
/// root, and the epoch it takes.
async fn root_call_of(vault: &VaultChain, tree: &std::sync::Arc<TreeAtPosition>) -> Result<(RootCall, u64), PayError> {
    let listed = listed_tokens(vault, tree).await?;
    let arguments = tree.commit_arguments(|token| listed.contains(token));
    let previous_record = vault.read_engine(|engine| {
        engine
            .custody()
            .liabilities()
            .newest_venue_root()
            .map(|root| (root.root, root.journal_sequence))
    });
    let previous = match previous_record {
        Some((root, sequence)) => Some((root, tree_at(vault, sequence).await?)),
        None => None,
    };
    let epoch: u64 = vault
        .node
        .view(vault.node.vault(), DexdVaultV2::rootCountCall {}, BlockId::latest())
        .await?
        .saturating_to();
    let call = root_call(vault, std::sync::Arc::clone(tree), arguments, previous, epoch).await?;
    Ok((call, epoch))
}

async fn tree_at(vault: &VaultChain, journal_sequence: u64) -> Result<std::sync::Arc<TreeAtPosition>, PayError> {
    vault
        .chain
        .liability_tree(journal_sequence)
        .await
        .map_err(|error| PayError::Node(NodeError::Unavailable(format!("no liability tree: {error}"))))
}

/// The tokens of the tree's assets and unlisted tokens that the vault lists.
async fn listed_tokens(vault: &VaultChain, tree: &TreeAtPosition) -> Result<Vec<dexd_core::Address>, PayError> {
    let mut listed = Vec::new();
    for token in tree.tokens.iter().chain(&tree.unlisted_tokens) {
        let is_listed = vault
            .node
            .view(
                vault.node.vault(),
                DexdVaultV2::listedCall {
                    token: chain_address(token),
                },
                BlockId::latest(),
            )
            .await?;
        if is_listed {
            listed.push(*token);
        }
    }
    Ok(listed)
}

/// Keeps the custody status's word on foreign roots current (the engine holds them).
fn report_foreign_roots(vault: &VaultChain) {
    let foreign = vault.read_engine(|engine| {
        engine
            .custody()
            .liabilities()
            .unresolved_foreign_root()
            .map(|root| (root.epoch, root.tx_hash))
    });
    vault.update_status(|status| {
        status.foreign_root = foreign.map(|(epoch, tx_hash)| {
            format!(
                "the vault holds root {epoch} (transaction 0x{}) that the venue did not make: withdrawals stop until it \
                 is vetoed or a later root of the venue's is final",
                alloy::hex::encode(tx_hash)
            )
        })
    });
}
