//! What the auditor reads from the chain and sends to it: the vault's `Deposited` events a
//! journal's credits must match, the withdrawals requested on chain and how they were served,
//! whether the withdrawals it confirms and fails were paid, a contract account's approval of its
//! withdrawal, the committed roots with their totals and their standing, and, as a guardian,
//! the veto of a root and the freeze of a vault that left a request unserved. It decides nothing
//! about what it reads.

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, TxKind, B256, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use dexd_core::{ChainDeposit, ChainWithdrawalRequest, WithdrawalKey};
use dexd_custody::liabilities::chain_data::{ChainData, ChainDataError};
use dexd_custody::liabilities::root_data::RootData;
use dexd_custody::node::{Node, NodeError, RootLog};
use dexd_custody::vault::{chain_address, DexdVaultV2};
use std::time::Duration;

/// The most blocks one log query spans (halved when a node refuses).
pub const MAX_LOG_RANGE_BLOCKS: u64 = 10_000;
/// How long a guardian's veto may take to be mined.
const VETO_TIMEOUT: Duration = Duration::from_secs(120);

/// A committed root as the vault holds it, with its event's totals.
#[derive(Debug, Clone)]
pub struct VaultRoot {
    /// Its epoch.
    pub epoch: u64,
    /// The root.
    pub root: [u8; 32],
    /// The journal position it names.
    pub journal_sequence: u64,
    /// The vault deposits it covers.
    pub deposit_count: u64,
    /// Its block's time, in seconds.
    pub committed_at_s: u64,
    /// Whether it was vetoed.
    pub vetoed: bool,
}

impl VaultRoot {
    /// The root of `epoch` as the vault stores it.
    fn of(epoch: u64, stored: DexdVaultV2::LiabilityRoot) -> VaultRoot {
        VaultRoot {
            epoch,
            root: stored.root.0,
            journal_sequence: stored.journalSequence,
            deposit_count: stored.depositCount,
            committed_at_s: stored.committedAt.to(),
            vetoed: stored.vetoed,
        }
    }
}

/// A withdrawal requested on chain, as the vault holds it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultRequest {
    /// Who asked.
    pub account: ChainAddress,
    /// The token.
    pub token: ChainAddress,
    /// What was asked for.
    pub amount: U256,
    /// By when it must be served, in seconds of chain time.
    pub deadline_s: u64,
    /// Whether it was served.
    pub served: bool,
    /// What serving it paid.
    pub paid: U256,
}

/// The vault of an audited chain.
pub struct AuditedVault {
    node: Node,
    /// The roots' data, read from the node and the beacon node (one client and one beacon
    /// clock for every root).
    root_data: tokio::sync::Mutex<ChainData>,
    confirmations: u64,
    guardian: Option<PrivateKeySigner>,
    /// The vault's challenge period, in seconds.
    pub challenge_period_s: u64,
}

impl AuditedVault {
    /// Connects to the vault `vault` through `rpc_url`, checking the node's chain id.
    pub async fn connect(
        (rpc_url, beacon_url): (&str, &str),
        vault: dexd_core::Address,
        chain_id: u64,
        confirmations: u64,
        guardian: Option<PrivateKeySigner>,
    ) -> Result<AuditedVault, String> {
        let node = Node::connect(rpc_url, chain_address(&vault), chain_id, Duration::from_secs(30))?;
        node.check_chain_id().await.map_err(|error| error.to_string())?;
        let challenge_period_s: u64 = node
            .view(node.vault(), DexdVaultV2::challengePeriodCall {}, BlockId::latest())
            .await
            .map_err(|error| format!("the vault (version 2) at {vault}: {error}"))?;
        let root_data = ChainData::new(node.clone(), Some(beacon_url), MAX_LOG_RANGE_BLOCKS);
        Ok(AuditedVault {
            root_data: tokio::sync::Mutex::new(root_data),
            node,

            confirmations,
            guardian,
            challenge_period_s,
        })
    }

    /// Whether the auditor holds the guardian's key.
    pub fn is_guardian(&self) -> bool {
        self.guardian.is_some()
    }

    /// The node's newest block.
    pub async fn head(&self) -> Result<u64, NodeError> {
        self.node.head().await
    }

    /// A block's time in ms since the Unix epoch; `None` when the node does not have it.
    pub async fn block_time_ms(&self, block: u64) -> Result<Option<u64>, NodeError> {
        Ok(self
            .node
            .block(block)
            .await?
            .map(|(_, time_s)| time_s.saturating_mul(1_000)))
    }

    /// The newest block with the confirmations on top, and its time in seconds.
    pub async fn confirmed_block(&self) -> Result<(u64, u64), NodeError> {
        let head = self.node.head().await?;
        let confirmed = head.saturating_sub(self.confirmations);
        let (_, time_s) = self
            .node
            .block(confirmed)
            .await?
            .ok_or_else(|| NodeError::Unavailable(format!("the node has no block {confirmed}")))?;
        Ok((confirmed, time_s))
    }

    /// The roots the vault holds at `block`, from epoch `from` on.
    pub async fn roots(&self, from: u64, block: u64) -> Result<Vec<VaultRoot>, NodeError> {
        let at = BlockId::number(block);
        let count: U256 = self
            .node
            .view(self.node.vault(), DexdVaultV2::rootCountCall {}, at)
            .await?;
        let count: u64 = count.saturating_to();
        let mut roots = Vec::new();
        for epoch in from..count {
            roots.push(VaultRoot::of(epoch, self.node.liability_root(epoch, at).await?));
        }
        Ok(roots)
    }

    /// The `RootCommitted` event of a root (its tokens and totals), in blocks up to `head`.
    pub async fn root_event(&self, root: &VaultRoot, head: u64) -> Result<Option<RootLog>, NodeError> {
        self.node
            .find_root_committed_event(root.epoch, root.committed_at_s, (0, head), MAX_LOG_RANGE_BLOCKS)
            .await
    }

    /// The data of the root of `epoch`, read from the chain and checked against the hash the
    /// vault recorded and the root itself ([`ChainData::root_data`]).
    pub async fn root_data(&self, epoch: u64) -> Result<RootData, ChainDataError> {
        self.root_data.lock().await.root_data(epoch).await
    }

    /// The root of `epoch` as the vault holds it at `block`.
    pub async fn root_at(&self, epoch: u64, block: u64) -> Result<VaultRoot, NodeError> {
        Ok(VaultRoot::of(
            epoch,
            self.node.liability_root(epoch, BlockId::number(block)).await?,
        ))
    }

    /// Vetoes the root of `epoch` with the guardian's key; the veto's transaction hash.
    pub async fn veto(&self, epoch: u64) -> Result<B256, String> {
        let input = DexdVaultV2::vetoCall {
            epoch: U256::from(epoch),
        }
        .abi_encode();
        self.send_as_guardian(input, "veto").await
    }

    /// Sends a call to the vault with the guardian's key and waits for it to be mined (at most
    /// `VETO_TIMEOUT`); its transaction hash, or why it did not succeed (`what` names it).
    async fn send_as_guardian(&self, input: Vec<u8>, what: &str) -> Result<B256, String> {
        let guardian = self.guardian.as_ref().ok_or("no guardian key")?;
        let sent = self
            .node
            .send_estimated(guardian, TxKind::Call(self.node.vault()), input, U256::ZERO)
            .await
            .map_err(|error| error.to_string())?;
        let receipt = self
            .node
            .wait_for_receipt(sent.hash, Duration::from_millis(200), VETO_TIMEOUT)
            .await
            .map_err(|error| error.to_string())?;
        if !receipt.succeeded {
            return Err(format!("the {what} {} reverted", sent.hash));
        }
        Ok(sent.hash)
    }

    /// Each credit that does not match the vault's `Deposited` event of its id, with what
    /// differs (by the credit's journal position).
    pub async fn unmatched_deposits(&self, credits: &[(u64, &ChainDeposit)]) -> Result<Vec<(u64, String)>, NodeError> {
        let mut failures = Vec::new();
        let Some(low) = credits.iter().map(|(_, credit)| credit.block_number).min() else {
            return Ok(failures);
        };
        let high = credits
            .iter()
            .map(|(_, credit)| credit.block_number)
            .max()
            .unwrap_or(low);
        let mut logs = Vec::new();
        let mut from = low;
        while from <= high {
            let to = high.min(from.saturating_add(MAX_LOG_RANGE_BLOCKS - 1));
            // Only the blocks that hold a credit are read.
            if credits
                .iter()
                .any(|(_, credit)| (from..=to).contains(&credit.block_number))
            {
                logs.extend(self.node.deposit_logs(from, to).await?);
            }
            from = to + 1;
        }
        for (sequence, credit) in credits {
            let event = logs.iter().find(|log| log.deposit_id == U256::from(credit.deposit_id));
            let what = match event {
                None => Some("no Deposited event of the vault has its id".to_string()),
                Some(log) => {
                    let amount_matches = match credit.amount {
                        Some(amount) => log.amount == U256::from(amount.units()),
                        None => log.amount > U256::from(u128::MAX),
                    };
                    if log.account != chain_address(&credit.account)
                        || log.token != chain_address(&credit.token)
                        || !amount_matches
                        || log.tx_hash != B256::from(credit.tx_hash)
                        || log.log_index != credit.log_index
                        || log.block_number != credit.block_number
                        || log.block_hash != B256::from(credit.block_hash)
                    {
                        Some(format!(
                            "the credit of deposit {} differs from the vault's event",
                            credit.deposit_id
                        ))
                    } else {
                        None
                    }
                }
            };
            if let Some(what) = what {
                failures.push((*sequence, what));
            }
        }
        Ok(failures)
    }

    /// The withdrawal requested on chain with number `request_id`, as the vault holds it now.
    pub async fn request(&self, request_id: u64) -> Result<VaultRequest, NodeError> {
        let stored = self
            .node
            .view(
                self.node.vault(),
                DexdVaultV2::withdrawalRequestCall {
                    requestId: U256::from(request_id),
                },
                BlockId::latest(),
            )
            .await?;
        Ok(VaultRequest {
            account: stored.account,
            token: stored.token,
            amount: stored.amount,
            deadline_s: stored.deadline.saturating_to(),
            served: stored.served,
            paid: stored.paidAmount,
        })
    }

    /// How many withdrawals accounts had requested on chain as of `block`.
    pub async fn request_count(&self, block: u64) -> Result<u64, NodeError> {
        Ok(self.node.request_count(BlockId::number(block)).await?.saturating_to())
    }

    /// Freezes the vault with the guardian's key (anyone may, once a request is unserved past
    /// its deadline); the transaction's hash.
    pub async fn freeze(&self) -> Result<B256, String> {
        self.send_as_guardian(DexdVaultV2::freezeCall {}.abi_encode(), "freeze")
            .await
    }

    /// What differs between a journaled request and the vault's request and event of its
    /// number, if anything.
    pub async fn request_differs(&self, journaled: &ChainWithdrawalRequest) -> Result<Option<String>, NodeError> {
        let stored = self.request(journaled.request_id).await;
        let stored = match stored {
            Ok(stored) => stored,
            Err(NodeError::Reverted { .. }) => return Ok(Some("the vault has no request of its number".into())),
            Err(error) => return Err(error),
        };
        let matches_vault = stored.account == chain_address(&journaled.account)
            && stored.token == chain_address(&journaled.token)
            && stored.amount == U256::from(journaled.amount.units())
            && stored.deadline_s.saturating_mul(1_000) == journaled.deadline_ms;
        if !matches_vault {
            return Ok(Some(format!(
                "the request {} differs from the vault's",
                journaled.request_id
            )));
        }
        let block = journaled.block_number;
        let event = self
            .node
            .request_logs(block, block)
            .await?
            .into_iter()
            .find(|log| log.request_id == U256::from(journaled.request_id));
        let matches_event = event.is_some_and(|log| {
            log.tx_hash == B256::from(journaled.tx_hash)
                && log.log_index == journaled.log_index
                && log.block_hash == B256::from(journaled.block_hash)
        });
        Ok((!matches_event).then(|| {
            format!(
                "the request {} has no WithdrawalRequested event where the journal says",
                journaled.request_id
            )
        }))
    }

    /// What differs between a journaled fact about a root (recorded, settled, the freeze) and
    /// the vault's standing of it now, if anything: a root recorded unlike the vault's, one
    /// settled final that the vault shows vetoed or still in its challenge period, one settled
    /// vetoed that the vault kept, a freeze of a vault that is not frozen.
    pub async fn root_fact_differs(&self, command: &dexd_core::Command) -> Result<Option<String>, NodeError> {
        use dexd_core::{Command, RootStanding};
        let latest = BlockId::latest();
        match command {
            Command::RecordLiabilityRoot(record) => {
                let stored = self.node.liability_root(record.epoch, latest).await?;
                let committed_at_s: u64 = stored.committedAt.to();
                let same = stored.root.0 == record.root
                    && stored.journalSequence == record.journal_sequence
                    && stored.depositCount == record.deposit_count
                    && committed_at_s.saturating_mul(1_000) == record.committed_at_ms
                    && committed_at_s
                        .saturating_add(self.challenge_period_s)
                        .saturating_mul(1_000)
                        == record.final_after_ms;
                Ok((!same).then(|| format!("the root {} is recorded unlike the vault's", record.epoch)))
            }
            Command::SettleLiabilityRoot { epoch, standing } => {
                let stored = self.node.liability_root(*epoch, latest).await?;
                let head = self.node.head().await?;
                let (_, now_s) = self
                    .node
                    .block(head)
                    .await?
                    .ok_or_else(|| NodeError::Unavailable(format!("the node has no block {head}")))?;
                let final_after_s = stored.committedAt.to::<u64>().saturating_add(self.challenge_period_s);
                let holds = match standing {
                    RootStanding::Final => !stored.vetoed && now_s >= final_after_s,
                    RootStanding::Vetoed => stored.vetoed,
                    RootStanding::Challengeable => false,
                };
                Ok(
                    (!holds)
                        .then(|| format!("the root {epoch} is settled {standing:?}, which the vault does not show")),
                )
            }
            Command::RecordVaultFreeze(_) => {
                let frozen = self
                    .node
                    .view(self.node.vault(), DexdVaultV2::frozenCall {}, latest)
                    .await?;
                Ok((!frozen).then(|| "a freeze of a vault that is not frozen".to_string()))
            }
            _ => Ok(None),
        }
    }

    /// Whether the vault shows each withdrawal paid, now.
    pub async fn paid(&self, keys: &[WithdrawalKey]) -> Result<Vec<bool>, NodeError> {
        let keys: Vec<(ChainAddress, U256)> = keys
            .iter()
            .map(|key| (chain_address(&key.account), U256::from_be_bytes(key.withdrawal_id)))
            .collect();
        self.node.withdrawn_many(&keys, BlockId::latest()).await
    }

    /// The withdrawals of `keys` the vault's `Withdrawn` event does not show paid by transaction
    /// `tx_hash` in block `block_number`: a confirmation names the payment it records, so that
    /// one old payment cannot confirm a second debit of the same id. Logs, not state, so that a
    /// node without old state answers.
    pub async fn not_paid_by(
        &self,
        keys: &[WithdrawalKey],
        tx_hash: [u8; 32],
        block_number: u64,
    ) -> Result<Vec<WithdrawalKey>, NodeError> {
        let mut not_paid = Vec::new();
        for key in keys {
            let event = self
                .node
                .withdrawn_event(
                    chain_address(&key.account),
                    U256::from_be_bytes(key.withdrawal_id),
                    block_number,
                    block_number,
                )
                .await?;
            if event != Some((B256::from(tx_hash), block_number)) {
                not_paid.push(*key);
            }
        }
        Ok(not_paid)
    }

    /// Whether the vault took a contract account's signature of a withdrawal (ERC-1271) at
    /// `block` (the latest when `None`).
    pub async fn approves(
        &self,
        account: &dexd_core::Address,
        digest: [u8; 32],
        signature: &[u8; 65],
        block: Option<u64>,
    ) -> Result<bool, NodeError> {
        let block = block.map_or(BlockId::latest(), BlockId::number);
        self.node
            .vault_took_authorization(chain_address(account), B256::from(digest), signature, block)
            .await
    }
}
