//! The deposit watcher of one vault chain.
//!
//! Every poll it reads the vault's `Deposited` events from where the venue's custody state says
//! it stopped, in bounded block ranges (halving a range the node refuses), up to the newest
//! block with `confirmations` blocks on top, and journals each as a credit, in the vault's
//! order: the engine takes only the vault's next deposit number, so nothing is credited twice
//! whatever the node repeats, and nothing is skipped. After a restart it reads the journal's
//! last scanned block again (a crash can fall between two credits of one block), and once caught
//! up it checks the vault's `depositCount()` against the number credited, so that a deposit
//! whose event the node never returned halts crediting instead of being lost. Before each poll it checks that the last
//! block it confirmed still has the hash it had: if not, the chain was reorganised deeper than
//! `confirmations`, and crediting stops for good with a loud error (an operator must look),
//! rather than credit a deposit that vanished or credit one twice. It also settles the deposits
//! that the venue sent for accounts: failed when their transaction reverted or disappeared.
//!
//!
//! The withdrawals accounts ask for on chain (`WithdrawalRequested`, contract version 5) are read
//! from the same ranges and journaled the same way: in chain order with the deposits (a request
//! after a deposit in one block sees it credited), each request once, by the vault's numbers
//! (the engine takes only the next), and the vault's `requestCount()` checked against the
//! number journaled once caught up.
//!
//! It holds nothing a restart needs: where it is comes from the journal.

use std::sync::Arc;

use alloy::eips::BlockId;
use alloy::primitives::{B256, U256};
use dexd_core::{Amount, ChainDeposit, ChainWithdrawalRequest, Command};
use tokio::sync::watch;

use super::node::{DepositLog, NodeError, RequestLog};
use super::preflight::PreflightError;
use super::vault::venue_address;
use super::venue_chain::acting_under;
use super::{act_as_leader, pause_or_stop, LeaderEpoch, VaultChain};
use dexd_store::{now_ms, WriteError};

/// Blocks between two journaled records of how far the watcher has scanned when no deposit
/// came: a restart rescans at most this many blocks.
pub const SCAN_RECORD_INTERVAL_BLOCKS: u64 = 1_000;
/// A deposit the venue sent whose transaction the node has not known for this long, and that
/// has no receipt, is failed: it was dropped (a transaction that reappears later and is mined
/// is still credited, as a wallet deposit is).
pub const DEPOSIT_DROP_TIMEOUT_MS: u64 = 15 * 60 * 1_000;
/// The most credits put in the writer's queue at once, well under its capacity.
pub const MAX_CREDITS_PER_SUBMISSION: usize = 1_024;

/// Why a poll did not finish.
#[derive(Debug)]
enum WatchError {
    /// The node failed; the next poll retries.
    Node(NodeError),
    /// The venue could not journal (full queue, disk); the next poll retries.
    Venue(WriteError),
    /// Crediting must stop: the chain contradicts what was confirmed.
    Halt(String),
}

impl From<NodeError> for WatchError {
    fn from(error: NodeError) -> WatchError {
        WatchError::Node(error)
    }
}

impl From<WriteError> for WatchError {
    fn from(error: WriteError) -> WatchError {
        WatchError::Venue(error)
    }
}

/// What the watcher keeps between polls (all of it can be lost: the journal has the rest).
struct Watcher {
    chain_id_checked: bool,
    /// The last block scanned (maybe not yet journaled) and its hash.
    scanned: Option<(u64, B256)>,
    /// Whether `scanned` came from the journal, which says how far crediting got but not that
    /// the block's deposits were all journaled: then that block is read again.
    rescan_scanned_block: bool,
    /// The last block whose scan was journaled.
    journaled_scan: Option<u64>,
    /// The current log range; halved when the node refuses one, doubled back after successes.
    range_blocks: u64,
    /// The leadership of the last poll: under a new one, the scan starts again from what the
    /// journal holds (another node may have credited meanwhile).
    epoch: Option<LeaderEpoch>,
}

/// Runs the watcher until `stop`.
pub async fn run(vault: Arc<VaultChain>, mut stop: watch::Receiver<bool>) {
    let mut watcher = Watcher {
        chain_id_checked: false,
        scanned: None,
        rescan_scanned_block: false,
        journaled_scan: None,
        range_blocks: vault.config.max_log_range_blocks,
        epoch: None,
    };
    let chain_id = vault.chain_id;
    loop {
        if vault.status().halted.is_none() {
            // Only the chain's leader credits; a follower's copy follows the leader's credits.
            let polled = match act_as_leader(vault.chain.as_ref(), watcher.poll(&vault)).await {
                Some(polled) => polled,
                None => {
                    watcher.epoch = None;
                    Ok(())
                }
            };
            match polled {
                Ok(()) => vault.update_status(|status| status.node_error = None),
                Err(WatchError::Node(error)) => {
                    tracing::warn!(chain_id, %error, "the deposit watcher cannot reach the node; retrying");
                    vault.update_status(|status| status.node_error = Some(error.to_string()));
                }
                Err(WatchError::Venue(error)) => {
                    tracing::warn!(chain_id, ?error, "the deposit watcher could not journal; retrying");
                }
                Err(WatchError::Halt(reason)) => {
                    tracing::error!(
                        chain_id,
                        reason = %reason,
                        "DEPOSIT CREDITING STOPPED on this chain; trading and withdrawals go on; an operator must investigate"
                    );
                    vault.update_status(|status| status.halted = Some(reason));
                }
            }
        }
        if pause_or_stop(vault.poll_interval(), &mut stop).await {
            break;
        }
    }
}

impl Watcher {
    /// The node serves the configured chain (asked once), and the vault on it is the one the
    /// venue was started with; a refusal halts crediting.
    async fn check_node(&mut self, vault: &VaultChain) -> Result<(), WatchError> {
        if !self.chain_id_checked {
            match vault.node.check_chain_id().await {
                Ok(()) => self.chain_id_checked = true,
                Err(NodeError::Refused(message)) => return Err(WatchError::Halt(message)),
                Err(error) => return Err(error.into()),
            }
        }
        match vault.ensure_checked_against_chain().await {
            Ok(()) => Ok(()),
            Err(PreflightError::Refused(reason)) => Err(WatchError::Halt(reason)),
            Err(PreflightError::Node(error)) => Err(error.into()),
        }
    }

    /// Takes the scan position the journal holds when it is ahead of this watcher's (after a
    /// restart, or another leader's scans): its block is read again, in case a crash stopped
    /// between two of its credits.
    fn adopt_the_journaled_scan(&mut self, vault: &VaultChain) {
        let journaled = vault.read_engine(|engine| engine.custody().scanned_through());
        if let Some((block, hash)) = journaled {
            self.journaled_scan = Some(self.journaled_scan.map_or(block, |known| known.max(block)));
            if self.scanned.is_none_or(|(scanned, _)| scanned < block) {
                self.scanned = Some((block, B256::from(hash)));
                self.rescan_scanned_block = true;
            }
        }
    }

    /// Whether the last block credited from is still the chain's at its height: false when the
    /// node does not have it (it is behind what it served before); a different block halts
    /// crediting, as the chain was reorganised past its confirmations.
    async fn scanned_block_unchanged(&self, vault: &VaultChain) -> Result<bool, WatchError> {
        let Some((block, hash)) = self.scanned else {
            return Ok(true);
        };
        match vault.node.block(block).await? {
            None => Ok(false),
            Some((now, _)) if now != hash => Err(WatchError::Halt(format!(
                "block {block} was {hash} when its deposits were credited and is now {now}: the chain was \
                 reorganised past its {}",
                vault.config.confirmations
            ))),
            Some(_) => Ok(true),
        }
    }

    async fn poll(&mut self, vault: &VaultChain) -> Result<(), WatchError> {
        let acting = acting_under();
        if self.epoch != acting {
            self.scanned = None;
            self.rescan_scanned_block = false;
            self.journaled_scan = None;
            self.epoch = acting;
        }
        let node = &vault.node;
        self.check_node(vault).await?;
        let head = node.head().await?;
        vault.update_status(|status| status.head_block = Some(head));
        self.settle_submitted_deposits(vault).await?;
        let Some(confirmed_head) = vault.confirmed_head(head).await? else {
            return Ok(());
        };
        self.adopt_the_journaled_scan(vault);
        if !self.scanned_block_unchanged(vault).await? {
            return Ok(()); // the node is behind what it served before; wait for it
        }
        // A crash or a full queue can stop between two credits of one block; reading the block
        // again is safe, as the credits already journaled are skipped by their numbers.
        let mut from = match self.scanned {
            None => vault.config.start_block,
            Some((block, _)) if self.rescan_scanned_block => block,
            Some((block, _)) => block + 1,
        };
        let mut scanned_any = false;
        while from <= confirmed_head {
            let to = confirmed_head.min(from.saturating_add(self.range_blocks - 1));
            let Some((hash_before, to_time_s)) = node.block(to).await? else {
                return Ok(());
            };
            let logs = match chain_logs(node, from, to).await {
                Ok(logs) => logs,
                Err(NodeError::Refused(message)) if to > from => {
                    self.range_blocks = (to - from + 1).div_ceil(2);
                    tracing::debug!(
                        message,
                        range_blocks = self.range_blocks,
                        "the node refused a log range; halving it"
                    );
                    continue;
                }
                Err(error) => return Err(error.into()),
            };
            // The range must not have changed under the read: the hash of its last block, and so
            // of every block before it, is the same after the logs as before.
            match node.block(to).await? {
                Some((hash_after, _)) if hash_after == hash_before => {}
                _ => return Ok(()),
            }
            // What the range's events are journaled at is never earlier than their blocks.
            vault.chain.note_chain_time_ms(to_time_s.saturating_mul(1_000));
            self.credit(vault, &logs, to, hash_before).await?;
            self.scanned = Some((to, hash_before));
            self.rescan_scanned_block = false;
            scanned_any = true;
            vault.update_status(|status| status.scanned_block = Some(to));
            from = to + 1;
            self.range_blocks = (self.range_blocks * 2).min(vault.config.max_log_range_blocks);
        }
        if let (true, Some((block, hash))) = (scanned_any, self.scanned) {
            self.check_deposit_count(vault, (block, hash)).await?;
            self.check_request_count(vault, (block, hash)).await?;
        }
        Ok(())
    }

    /// As [`Watcher::check_deposit_count`], for the withdrawals requested on chain: a request
    /// whose event the node never returned would otherwise go unserved until anyone may freeze
    /// the vault.
    async fn check_request_count(&self, vault: &VaultChain, (block, hash): (u64, B256)) -> Result<(), WatchError> {
        let on_chain = vault.node.request_count(BlockId::hash(hash)).await?;
        let recorded = vault.read_engine(|engine| engine.custody().next_chain_request_id());
        if on_chain != U256::from(recorded) {
            return Err(WatchError::Halt(format!(
                "the vault had {on_chain} withdrawal requests through block {block}, and {recorded} were read from its \
                 events: the node did not return every WithdrawalRequested event"
            )));
        }
        Ok(())
    }

    /// Once the scan has reached `block`, the vault's own count of deposits through it must be
    /// the number credited: more means logs the node never returned (a provider that drops
    /// them, or `start_block` after the vault's first deposit), fewer a contradiction; either
    /// way crediting stops rather than go on with books that do not match the vault. The count is
    /// read at the block's hash, the one scanned: if the chain was reorganised since the scan,
    /// the node cannot answer, and the next poll halts for the reorganisation, not for a count
    /// of another chain.
    async fn check_deposit_count(&self, vault: &VaultChain, (block, hash): (u64, B256)) -> Result<(), WatchError> {
        let on_chain = vault.node.deposit_count(BlockId::hash(hash)).await?;
        let credited = vault.read_engine(|engine| engine.custody().next_deposit_id());
        if on_chain != U256::from(credited) {
            return Err(WatchError::Halt(format!(
                "the vault had taken {on_chain} deposits through block {block}, and {credited} were read from its \
                 events: the node did not return every Deposited event (or start_block is after the vault's first \
                 deposit)"
            )));
        }
        Ok(())
    }

    /// Journals the deposits of a scanned range in the vault's order, and the scan itself when
    /// due; `to` is the range's last block.
    async fn credit(
        &mut self,
        vault: &VaultChain,
        logs: &[ChainLog],
        to: u64,
        to_hash: B256,
    ) -> Result<(), WatchError> {
        let (mut next, mut next_request) = vault.read_engine(|engine| {
            let custody = engine.custody();
            (custody.next_deposit_id(), custody.next_chain_request_id())
        });
        let mut commands = Vec::new();
        let mut last_credit_block = None;
        for log in logs {
            let log = match log {
                ChainLog::Deposit(log) => log,
                ChainLog::Request(request) => {
                    if let Some(command) = record_request(vault, request, &mut next_request)? {
                        last_credit_block = Some(request.block_number);
                        commands.push(command);
                    }
                    continue;
                }
            };
            if let Some(command) = credit_deposit(vault, log, &mut next)? {
                last_credit_block = Some(log.block_number);
                commands.push(command);
            }
        }
        let scan_due = self
            .journaled_scan
            .is_none_or(|journaled| to.saturating_sub(journaled) >= SCAN_RECORD_INTERVAL_BLOCKS);
        // A block read again may already be the journal's scanned block, which is not recorded twice.
        let journaled_through = vault.read_engine(|engine| engine.custody().scanned_through().map(|(block, _)| block));
        let scan_due = scan_due && journaled_through.is_none_or(|journaled| journaled < to);
        if last_credit_block.is_some_and(|block| block < to) || (last_credit_block.is_none() && scan_due) {
            commands.push(Command::RecordDepositScan {
                block_number: to,
                block_hash: to_hash.0,
            });
        }
        submit_in_chunks(vault, &commands).await?;
        if !commands.is_empty() {
            self.journaled_scan = Some(to);
        }
        Ok(())
    }

    /// Fails the deposits the venue sent whose transaction reverted, or which the node has not
    /// known for [`DEPOSIT_DROP_TIMEOUT_MS`]; a successful one waits for its event.
    async fn settle_submitted_deposits(&self, vault: &VaultChain) -> Result<(), WatchError> {
        let submitted: Vec<([u8; 32], u64)> = vault.read_engine(|engine| {
            engine
                .custody()
                .pending_deposits()
                .iter()
                .map(|(tx_hash, pending)| (*tx_hash, pending.created_at_ms))
                .collect()
        });
        for (tx_hash, created_at_ms) in submitted {
            let hash = B256::from(tx_hash);
            let failed = match vault.node.receipt(hash).await? {
                Some(receipt) => !receipt.succeeded,
                None => {
                    now_ms().saturating_sub(created_at_ms) > DEPOSIT_DROP_TIMEOUT_MS
                        && !vault.node.knows_transaction(hash).await?
                }
            };
            if failed {
                tracing::info!(chain_id = vault.chain_id, tx_hash = %hash, "a deposit sent for an account failed on chain; nothing is credited");
                match vault.submit(Command::FailChainDeposit { tx_hash }).await {
                    Ok(_) | Err(WriteError::Rejected(_)) => {}
                    Err(error) => return Err(error.into()),
                }
            }
        }
        Ok(())
    }
}

/// The credit of a deposit event, if it is the vault's next (`next`, then advanced); `None` for
/// one credited before. A gap in the vault's numbers halts the watcher. A deposit of a token the
/// chain does not list, or too large, is recorded and not credited.
fn credit_deposit(vault: &VaultChain, log: &DepositLog, next: &mut u64) -> Result<Option<Command>, WatchError> {
    let Ok(deposit_id) = u64::try_from(log.deposit_id) else {
        return Err(WatchError::Halt(format!(
            "deposit number {} does not fit 64 bits",
            log.deposit_id
        )));
    };
    if deposit_id < *next {
        return Ok(None);
    }
    if deposit_id > *next {
        return Err(WatchError::Halt(format!(
            "the vault's deposit {next} is missing: the logs jump to {deposit_id} in block {} (was start_block \
             set after the vault's first deposit?)",
            log.block_number
        )));
    }
    *next += 1;
    if vault.asset_of_token(&log.token).is_none() || log.amount > U256::from(u128::MAX) {
        tracing::warn!(
            chain_id = vault.chain_id,
            deposit_id,
            token = %log.token,
            "a vault deposit of a token this chain does not list, or too large, is recorded and not credited"
        );
    }
    Ok(Some(Command::CreditChainDeposit(ChainDeposit {
        deposit_id,
        account: venue_address(&log.account),
        token: venue_address(&log.token),
        asset: vault.asset_of_token(&log.token),
        amount: u128::try_from(log.amount).ok().map(Amount::from_units),
        tx_hash: log.tx_hash.0,
        log_index: log.log_index,
        block_number: log.block_number,
        block_hash: log.block_hash.0,
    })))
}

/// Journals `commands` in order, at most [`MAX_CREDITS_PER_SUBMISSION`] queued at a time.
async fn submit_in_chunks(vault: &VaultChain, commands: &[Command]) -> Result<(), WatchError> {
    for chunk in commands.chunks(MAX_CREDITS_PER_SUBMISSION) {
        let mut queued = Vec::with_capacity(chunk.len());
        for command in chunk {
            queued.push(vault.enqueue(command.clone())?);
        }
        for write in queued {
            write.await?;
        }
    }
    Ok(())
}

/// One of the vault's events the watcher journals.
enum ChainLog {
    Deposit(DepositLog),
    Request(RequestLog),
}

impl ChainLog {
    fn position(&self) -> (u64, u64) {
        match self {
            ChainLog::Deposit(log) => (log.block_number, log.log_index),
            ChainLog::Request(log) => (log.block_number, log.log_index),
        }
    }
}

/// The vault's deposits and withdrawal requests in blocks `from..=to`, in chain order.
async fn chain_logs(node: &crate::node::Node, from: u64, to: u64) -> Result<Vec<ChainLog>, NodeError> {
    let mut logs: Vec<ChainLog> = node
        .deposit_logs(from, to)
        .await?
        .into_iter()
        .map(ChainLog::Deposit)
        .chain(node.request_logs(from, to).await?.into_iter().map(ChainLog::Request))
        .collect();
    logs.sort_by_key(ChainLog::position);
    Ok(logs)
}

/// The command recording a request read from the chain, if it is the next one (one already
/// journaled is skipped; a gap halts, as for deposits).
fn record_request(vault: &VaultChain, log: &RequestLog, next: &mut u64) -> Result<Option<Command>, WatchError> {
    let Ok(request_id) = u64::try_from(log.request_id) else {
        return Err(WatchError::Halt(format!(
            "withdrawal request number {} does not fit 64 bits",
            log.request_id
        )));
    };
    if request_id < *next {
        return Ok(None);
    }
    if request_id > *next {
        return Err(WatchError::Halt(format!(
            "the vault's withdrawal request {next} is missing: the logs jump to {request_id} in block {}",
            log.block_number
        )));
    }
    *next += 1;
    // The vault takes at most 2^128 - 1; a deadline in seconds fits 64 bits for ever.
    let amount = u128::try_from(log.amount).map_err(|_| WatchError::Halt("a request above 2^128".into()))?;
    let deadline_s = u64::try_from(log.deadline_s).unwrap_or(u64::MAX / 1_000);
    tracing::info!(
        chain_id = vault.chain_id,
        request_id,
        account = %log.account,
        "a withdrawal requested on chain is recorded; it is served within its deadline"
    );
    Ok(Some(Command::RecordWithdrawalRequest(ChainWithdrawalRequest {
        request_id,
        account: venue_address(&log.account),
        token: venue_address(&log.token),
        asset: vault.asset_of_token(&log.token),
        amount: Amount::from_units(amount),
        deadline_ms: deadline_s.saturating_mul(1_000),
        tx_hash: log.tx_hash.0,
        log_index: log.log_index,
        block_number: log.block_number,
        block_hash: log.block_hash.0,
    })))
}
