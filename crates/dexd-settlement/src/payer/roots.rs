//! The liability roots, committed by the payer (the operator's key sends both, and its
//! transactions form one sequence of nonces): every `root_interval_ms` the tree at the journal's
//! durable end is built off the writer's path and its root sent as `commitRoot` with the totals
//! per token, as one more transaction in flight; once the vault holds a root with `confirmations`
//! on top, it is journaled as `RecordLiabilityRoot`, with what the venue rebuilt at that journal
//! position (its totals), and only if its root is the venue's own.
//!
//! What the vault holds and the journal lacks is recorded from the vault, whoever sent it: after
//! a crash between the commit and its record, the next leader finds the root there, its
//! transaction by its `RootCommitted` event, and rebuilds the same tree from the journal. A
//! vault of version 1 has no roots: nothing is committed. A frozen vault is never sent anything.

use std::time::Instant;

use alloy::eips::{BlockId, BlockNumberOrTag};
use alloy::primitives::{FixedBytes, B256, U256};
use alloy::sol_types::SolCall;
use dexd_core::{Command, LiabilityRootRecord};

use super::in_flight::{FlightPurpose, InFlight};
use super::{submit, PayError, Payer};
use crate::node::NodeError;
use crate::vault::DexdVaultV2;
use crate::VaultChain;

/// The most roots recorded from the vault in one poll (a backlog is worked off over polls).
pub const MAX_ROOTS_RECORDED_PER_POLL: u64 = 16;

/// How far back from the head a root's `RootCommitted` event is looked for, when the root was
/// not sent by this leadership.
pub const ROOT_EVENT_LOOKBACK_BLOCKS: u64 = 100_000;

/// What the payer knows of roots.
pub(super) struct Roots {
    /// Whether the vault is version 2; `None` until asked.
    has_roots: Option<bool>,
    /// From when the first root of this run is counted due, when none is recorded yet.
    started: Instant,
    /// The root sent and not yet recorded: its root, position, and once mined its transaction
    /// and block.
    sent: Option<SentRoot>,
    /// Why the vault's roots cannot be recorded (a root the venue cannot reproduce): roots stop.
    refused: Option<String>,
    /// Not before this is a root sent again, after the vault refused one.
    not_before: Option<Instant>,
}

#[derive(Clone, Copy)]
pub(super) struct SentRoot {
    pub(super) root: [u8; 32],
    pub(super) journal_sequence: u64,
    pub(super) mined: Option<(B256, u64)>,
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
            has_roots: None,
            started: Instant::now(),
            sent: None,
            refused: None,
            not_before: None,
        }
    }

    /// Forgets what this leadership sent: the next one finds it in the vault.
    pub(super) fn forget_sent(&mut self) {
        self.sent = None;
    }

    /// The root in flight was mined in a transaction that succeeded (or reverted: `None`).
    pub(super) fn mined(&mut self, mined: Option<(B256, u64)>) {
        match mined {
            Some(mined) => {
                if let Some(sent) = self.sent.as_mut() {
                    sent.mined = Some(mined);
                }
            }
            None => self.sent = None,
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

impl Payer {
    /// Records what the vault holds and the journal lacks, then commits a root when one is due.
    pub(super) async fn poll_roots(&mut self, vault: &VaultChain) -> Result<RootsPoll, PayError> {
        if self.roots.has_roots.is_none() {
            let asked = vault
                .node
                .view(vault.node.vault(), DexdVaultV2::rootCountCall {}, BlockId::latest())
                .await;
            match asked {
                Ok(_) => self.roots.has_roots = Some(true),
                Err(NodeError::Reverted { .. }) => {
                    tracing::info!(
                        chain_id = vault.chain_id,
                        "the vault is version 1: no liability roots are committed"
                    );
                    self.roots.has_roots = Some(false);
                }
                Err(error) => return Err(error.into()),
            }
        }
        if self.roots.has_roots != Some(true) {
            return Ok(RootsPoll::Continue);
        }
        let frozen = vault
            .node
            .view(vault.node.vault(), DexdVaultV2::frozenCall {}, BlockId::latest())
            .await?;
        if frozen {
            let message = "the vault is frozen (no root came for its maxRootAge): it pays exits only, and \
                           the venue sends it nothing"
                .to_string();
            tracing::warn!(chain_id = vault.chain_id, "{message}");
            vault.update_status(|status| {
                status.payer_error = Some(message.clone());
                status.vault_frozen = true;
            });
            return Ok(RootsPoll::Frozen);
        }
        if self.roots.refused.is_some() {
            return Ok(RootsPoll::Continue);
        }
        self.record_vault_roots(vault).await?;
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
        if self.roots.sent.is_some() || !self.root_due(vault) {
            return Ok(RootsPoll::Continue);
        }
        self.commit_root(vault).await
    }

    /// Whether a root is due: `root_interval_ms` after the newest recorded (or after this run's
    /// start, when none is).
    fn root_due(&self, vault: &VaultChain) -> bool {
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
                .newest_root()
                .map(|root| root.committed_at_ms)
        });
        match newest {
            Some(committed_at_ms) => {
                dexd_store::now_ms().saturating_sub(committed_at_ms) >= vault.config.root_interval_ms
            }
            None => self.roots.started.elapsed().as_millis() as u64 >= vault.config.root_interval_ms,
        }
    }

    /// Builds the tree at the journal's durable end and sends its root.
    async fn commit_root(&mut self, vault: &VaultChain) -> Result<RootsPoll, PayError> {
        let journal_sequence = vault.chain.durable_position().sequence;
        let tree = vault
            .chain
            .liability_tree(journal_sequence)
            .await
            .map_err(|error| PayError::Node(NodeError::Unavailable(format!("no liability tree: {error}"))))?;
        let (tokens, totals) = tree.commit_arguments();
        let calldata = DexdVaultV2::commitRootCall {
            root: FixedBytes(tree.root()),
            journalSequence: journal_sequence,
            tokens,
            totals,
        }
        .abi_encode();
        let sent = match self.send_call(vault, calldata.clone()).await {
            Ok(sent) => sent,
            Err(PayError::Node(NodeError::Reverted { message, .. })) => {
                // The vault holds less than the venue owes, or the key is not the operator:
                // never silent, and tried again at the next interval's poll.
                tracing::error!(
                    chain_id = vault.chain_id,
                    journal_sequence,
                    message,
                    "the vault refuses the liability root"
                );
                self.roots.not_before =
                    Some(Instant::now() + std::time::Duration::from_millis(vault.config.root_interval_ms));
                return Ok(RootsPoll::Continue);
            }
            Err(error) => return Err(error),
        };
        tracing::info!(
            chain_id = vault.chain_id,
            tx_hash = %sent.hash,
            journal_sequence,
            leaves = tree.leaves.len(),
            "liability root sent to the vault"
        );
        self.roots.sent = Some(SentRoot {
            root: tree.root(),
            journal_sequence,
            mined: None,
            sent_at: Instant::now(),
        });
        self.in_flight = Some(InFlight::new(sent, Vec::new(), calldata).for_purpose(FlightPurpose::Root));
        Ok(RootsPoll::Sent)
    }

    /// Journals each root the vault holds, with `confirmations` on top, that the journal lacks.
    async fn record_vault_roots(&mut self, vault: &VaultChain) -> Result<(), PayError> {
        let head = vault.node.head().await?;
        let Some(confirmed_block) = vault.confirmed_head(head).await? else {
            return Ok(());
        };
        let at = BlockId::Number(BlockNumberOrTag::Number(confirmed_block));
        let count: u64 = vault
            .node
            .view(vault.node.vault(), DexdVaultV2::rootCountCall {}, at)
            .await?
            .saturating_to();
        let recorded = vault.read_engine(|engine| engine.custody().liabilities().roots_recorded());
        for epoch in recorded..count.min(recorded + MAX_ROOTS_RECORDED_PER_POLL) {
            let stored = vault
                .node
                .view(
                    vault.node.vault(),
                    DexdVaultV2::liabilityRootCall {
                        epoch: U256::from(epoch),
                    },
                    at,
                )
                .await?;
            let sent = self
                .roots
                .sent
                .filter(|sent| sent.root == stored.root.0 && sent.journal_sequence == stored.journalSequence);
            let mined = match sent.and_then(|sent| sent.mined) {
                Some(mined) => Some(mined),
                None => self.find_root_event(vault, epoch, head).await?,
            };
            let Some((tx_hash, block_number)) = mined else {
                tracing::warn!(
                    chain_id = vault.chain_id,
                    epoch,
                    "the vault holds a root whose event was not found; looked for again next poll"
                );
                return Ok(());
            };
            let tree = vault
                .chain
                .liability_tree(stored.journalSequence)
                .await
                .map_err(|error| PayError::Node(NodeError::Unavailable(format!("no liability tree: {error}"))))?;
            if tree.root() != stored.root.0 {
                let message = format!(
                    "the vault's liability root of epoch {epoch} is not the venue's tree at journal position {}; \
                     no more roots are committed until an operator looks",
                    stored.journalSequence
                );
                tracing::error!(chain_id = vault.chain_id, "{message}");
                vault.update_status(|status| status.payer_error = Some(message.clone()));
                self.roots.refused = Some(message);
                return Ok(());
            }
            submit(
                vault,
                Command::RecordLiabilityRoot(LiabilityRootRecord {
                    epoch,
                    root: stored.root.0,
                    journal_sequence: stored.journalSequence,
                    tx_hash: tx_hash.0,
                    block_number,
                    committed_at_ms: stored.committedAt.saturating_mul(1_000),
                    totals: tree.totals.clone(),
                }),
            )
            .await?;
            tracing::info!(chain_id = vault.chain_id, epoch, tx_hash = %tx_hash, "liability root recorded");
            if sent.is_some() {
                self.roots.sent = None;
            }
        }
        Ok(())
    }

    /// The transaction and block of a root's `RootCommitted` event, looked for backwards from
    /// the head in ranges of `max_log_range_blocks` (halved when the node refuses one).
    async fn find_root_event(
        &self,
        vault: &VaultChain,
        epoch: u64,
        head: u64,
    ) -> Result<Option<(B256, u64)>, PayError> {
        let oldest = vault
            .config
            .start_block
            .max(head.saturating_sub(ROOT_EVENT_LOOKBACK_BLOCKS));
        let mut range_blocks = vault.config.max_log_range_blocks.max(1);
        let mut to = head;
        while to >= oldest {
            let from = oldest.max(to.saturating_sub(range_blocks - 1));
            match vault.node.root_committed_event(U256::from(epoch), from, to).await {
                Ok(Some(found)) => return Ok(Some(found)),
                Ok(None) if from == 0 || from == oldest => break,
                Ok(None) => to = from - 1,
                Err(NodeError::Refused(_)) if to > from => range_blocks = (to - from + 1).div_ceil(2),
                Err(error) => return Err(error.into()),
            }
        }
        Ok(None)
    }
}
