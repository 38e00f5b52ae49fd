//! The withdrawal payer of one vault chain.
//!
//! Every poll it takes the oldest pending withdrawals (up to the chain's batch size) whose debit
//! the journal holds (never one the engine holds and a failed append may take back) and, on a
//! vault with liability roots, that a final root of the venue's covers (a root built at or after
//! the debit, past its challenge period without a veto: so the exit root, which is that root or
//! a later one, counts the payment, and no trader is paid a withdrawal and exits the balance it
//! came from too); none while a foreign root could still become the exit root, or the vault is
//! frozen (`roots`). Before
//! any send, asks the vault which are already paid: those are confirmed once their `Withdrawn`
//! event has `confirmations` blocks on top, whatever transaction paid them (one sent before a
//! crash included). A withdrawal whose authorization expired unpaid, as a block with
//! `confirmations` on top shows, can never be paid and is failed (its amount credited back).
//! The rest are simulated as one batch (each alone when the batch would revert: the ones the
//! vault refuses are set aside for [`SET_ASIDE_MS`], so that they never hold up the others, and
//! come back to be failed once expired), sent as one `withdrawBatch` from the operator's key
//! with EIP-1559 fees from the node, and journaled as sent. One transaction is in flight at a
//! time, so the operator's nonces form one sequence; one not mined within `replace_after_ms` is
//! replaced at the same nonce with higher fees, and every transaction sent at that nonce is
//! followed, since any of them may be the one mined (`in_flight`). A withdrawal the vault shows
//! paid is confirmed from a known transaction's receipt, or from its event found in bounded log
//! ranges (`paid`); a node error about one withdrawal holds up only that one.
//!
//! Every withdrawal is paid at most once because the vault refuses a paid id; it is paid at
//! least once because the payer keeps sending until it is paid or expired; and it is never both
//! paid and credited back because it is failed only when the confirmed chain proves it can no
//! longer be paid. Nothing here must survive a restart: the journal and the vault hold it.

use std::sync::Arc;
use std::time::{Duration, Instant};

use alloy::eips::{BlockId, BlockNumberOrTag};
use alloy::primitives::{Address as ChainAddress, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{SolCall, SolInterface};
use dexd_core::{Command, PendingWithdrawal, WithdrawalKey};
use tokio::sync::watch;

mod in_flight;
mod paid;
mod roots;

use std::collections::HashMap;

use self::in_flight::InFlight;
use super::node::{Fees, NodeError, SentTransaction, TransactionTerms};
use super::vault::{chain_address, DexdVault, WithdrawalTerms};
use super::venue_chain::acting_under;
use super::{act_as_leader, pause_or_stop, LeaderEpoch, VaultChain};
use dexd_store::WriteError;

/// How long a withdrawal the vault refuses in simulation is left out of the batches before it
/// is simulated again (the vault may have been paused, or short of the token); once its expiry
/// has passed it is taken again, to be failed.
pub const SET_ASIDE_MS: u64 = 60_000;

/// How long the payer waits for the journal to hold the pending withdrawals it read, before it
/// reads again at its next poll.
pub const DURABLE_READ_WAIT_MS: u64 = 1_000;

/// Why a poll did not finish.
#[derive(Debug)]
enum PayError {
    Node(NodeError),
    Venue(WriteError),
}

impl From<NodeError> for PayError {
    fn from(error: NodeError) -> PayError {
        PayError::Node(error)
    }
}

impl From<WriteError> for PayError {
    fn from(error: WriteError) -> PayError {
        PayError::Venue(error)
    }
}

struct Payer {
    key: PrivateKeySigner,
    operator_checked: bool,
    in_flight: Option<InFlight>,
    /// Withdrawals the vault refused in simulation, and until when they are left out. At most
    /// one entry per pending withdrawal (a bounded set: `max_pending_transfers`), and each
    /// leaves after [`SET_ASIDE_MS`].
    set_aside: HashMap<WithdrawalKey, Instant>,
    /// The leadership of the last poll: a transaction in flight is followed only under the
    /// leadership that sent it (after a change, the journal and the vault say what was paid).
    epoch: Option<LeaderEpoch>,
    /// The liability roots sent and recorded.
    roots: roots::Roots,
}

/// A pending withdrawal the payer looks at, and whether a final root covers it.
type Candidate = (WithdrawalKey, PendingWithdrawal, bool);

/// Runs the payer until `stop`.
pub async fn run(vault: Arc<VaultChain>, key: PrivateKeySigner, mut stop: watch::Receiver<bool>) {
    let mut payer = Payer {
        key,
        operator_checked: false,
        in_flight: None,
        set_aside: HashMap::new(),
        epoch: None,
        roots: roots::Roots::new(),
    };
    let chain_id = vault.chain_id;
    loop {
        // Nothing is paid before the configuration is known to fit the chain: the watcher runs
        // the checks when the start could not.
        let checked = vault.is_checked_against_chain();
        // Only the chain's leader pays; a follower sends nothing.
        let polled = act_as_leader(vault.chain.as_ref(), async {
            if checked {
                payer.poll(&vault).await
            } else {
                Ok(())
            }
        })
        .await;
        let polled = match polled {
            Some(polled) => polled,
            None => {
                payer.forget_leadership();
                Ok(())
            }
        };
        match polled {
            Ok(()) => {}
            Err(PayError::Node(error)) => {
                tracing::warn!(chain_id, %error, "the withdrawal payer cannot use the node; withdrawals wait");
                vault.update_status(|status| status.node_error = Some(error.to_string()));
            }
            Err(PayError::Venue(error)) => {
                tracing::warn!(chain_id, ?error, "the withdrawal payer could not journal; retrying");
            }
        }
        if pause_or_stop(vault.poll_interval(), &mut stop).await {
            break;
        }
    }
}

fn withdrawal_id(key: &WithdrawalKey) -> U256 {
    U256::from_be_bytes(key.withdrawal_id)
}

fn terms(vault: &VaultChain, key: &WithdrawalKey, pending: &PendingWithdrawal) -> WithdrawalTerms {
    WithdrawalTerms {
        account: key.account,
        token: vault.assets[usize::from(pending.asset.0)].token,
        amount_units: pending.amount.units(),
        withdrawal_id: key.withdrawal_id,
        expiry_ms: pending.expiry_ms,
    }
}

impl Payer {
    /// Forgets what was learnt while leading the chain: another node pays now, and a later
    /// leadership starts from the journal and the vault.
    fn forget_leadership(&mut self) {
        if self.epoch.take().is_some() {
            tracing::info!("this node no longer leads the chain: its withdrawal payer stops sending");
        }
        self.in_flight = None;
        self.roots.forget_sent();
    }

    async fn poll(&mut self, vault: &VaultChain) -> Result<(), PayError> {
        let acting = acting_under();
        if self.epoch != acting {
            // A new leadership: what was in flight under the old one is found in the journal
            // (sent) and the vault (paid), not followed from memory.
            self.in_flight = None;
            self.roots.forget_sent();
            self.epoch = acting;
        }
        if !self.operator_checked {
            self.check_operator(vault).await?;
        }
        if self.in_flight.is_some() {
            return self.follow_in_flight(vault).await;
        }
        // A root that cannot be committed or recorded now never holds up a withdrawal.
        match self.poll_roots(vault).await {
            Ok(roots::RootsPoll::Continue) => {}
            Ok(roots::RootsPoll::Sent | roots::RootsPoll::Frozen) => return Ok(()),
            Err(error) => tracing::warn!(
                chain_id = vault.chain_id,
                ?error,
                "liability roots cannot be committed or recorded now; withdrawals go on"
            ),
        }
        let Some(batch) = self.durable_candidates(vault).await else {
            return Ok(());
        };
        // Without roots (version 1) every durable withdrawal may be paid.
        let has_roots = vault.root_terms().is_some();
        let head = vault.node.head().await?;
        let confirmed_block = vault.confirmed_head(head).await?.unwrap_or(0);
        let confirmed_time_ms = match vault.node.block(confirmed_block).await? {
            Some((_, timestamp)) => timestamp.saturating_mul(1_000),
            None => return Ok(()),
        };
        let ids: Vec<(ChainAddress, U256)> = batch
            .iter()
            .map(|(key, _, _)| (chain_address(&key.account), withdrawal_id(key)))
            .collect();
        let paid = vault.node.withdrawn_many(&ids, BlockId::latest()).await?;
        let mut payable = Vec::new();
        for ((key, pending, covered), already_paid) in batch.into_iter().zip(paid) {
            // A node error about one withdrawal holds up that one only.
            let settled = if already_paid {
                self.confirm_paid(vault, &key, &pending, (head, confirmed_block)).await
            } else if confirmed_time_ms > pending.expiry_ms {
                fail_if_unpaid_at(vault, key, confirmed_block).await
            } else {
                if covered || !has_roots {
                    payable.push((key, pending));
                }
                Ok(())
            };
            match settled {
                Ok(()) => {}
                Err(PayError::Node(error)) => tracing::warn!(
                    chain_id = vault.chain_id,
                    account = %dexd_crypto::checksummed(&key.account),
                    %error,
                    "a withdrawal could not be settled now; it is looked at again next poll"
                ),
                Err(error) => return Err(error),
            }
        }
        if payable.is_empty() {
            return Ok(());
        }
        let payable = self.payable_now(vault, payable).await?;
        if payable.is_empty() {
            return Ok(());
        }
        self.send_batch(vault, payable).await
    }

    /// Checks once that the configured key is the vault's operator; until it is, nothing is sent.
    async fn check_operator(&mut self, vault: &VaultChain) -> Result<(), PayError> {
        let operator = vault.node.operator().await?;
        if operator != self.key.address() {
            let message = format!(
                "the configured operator key is {}, but the vault's operator is {operator}; withdrawals wait",
                self.key.address()
            );
            vault.update_status(|status| status.payer_error = Some(message.clone()));
            return Err(PayError::Node(NodeError::Refused(message)));
        }
        self.operator_checked = true;
        vault.update_status(|status| status.payer_error = None);
        Ok(())
    }

    /// The oldest pending withdrawals (up to the batch size) whose debit the journal holds,
    /// each with whether a final root of the venue's covers it, leaving out those set aside and
    /// those not covered (unless past their expiry: then they come back, to be failed). `None`
    /// when there are none, or the journal did not catch up in time.
    async fn durable_candidates(&mut self, vault: &VaultChain) -> Option<Vec<Candidate>> {
        let now = Instant::now();
        self.set_aside.retain(|_, until| *until > now);
        let now_ms = dexd_store::now_ms();
        let set_aside = &self.set_aside;
        let has_roots = vault.root_terms().is_some();
        // Only withdrawals whose debit is journaled: the engine holds a batch before the journal
        // does, and a failed append takes it back, so paying from a plain read could pay what
        // was never debited.
        let batch = vault
            .read_durable_engine(
                |engine| {
                    let payable_through = engine.custody().liabilities().payable_through();
                    engine
                        .custody()
                        .pending_withdrawals()
                        .map(|(key, pending)| {
                            let covered = payable_through.is_some_and(|through| pending.debited_at_sequence <= through);
                            (key, pending, covered)
                        })
                        .filter(|(key, pending, covered)| {
                            let expired = pending.expiry_ms < now_ms;
                            ((*covered || !has_roots) && !set_aside.contains_key(key)) || expired
                        })
                        .take(vault.config.max_withdrawals_per_transaction)
                        .map(|(key, pending, covered)| (*key, pending.clone(), covered))
                        .collect::<Vec<Candidate>>()
                },
                Duration::from_millis(DURABLE_READ_WAIT_MS),
            )
            .await?;
        (!batch.is_empty()).then_some(batch)
    }

    /// Sends `payable` as one `withdrawBatch` at the operator's next nonce, follows it, and
    /// journals the withdrawals as sent.
    async fn send_batch(
        &mut self,
        vault: &VaultChain,
        payable: Vec<(WithdrawalKey, PendingWithdrawal)>,
    ) -> Result<(), PayError> {
        let calldata = batch_calldata(vault, &payable);
        let sent = self.send_call(vault, calldata.clone()).await?;
        let keys: Vec<WithdrawalKey> = payable.iter().map(|(key, _)| *key).collect();
        tracing::info!(
            chain_id = vault.chain_id,
            tx_hash = %sent.hash,
            nonce = sent.nonce,
            withdrawals = keys.len(),
            "withdrawals sent to the vault"
        );
        self.in_flight = Some(InFlight::new(sent, keys.clone(), calldata));
        submit(
            vault,
            Command::MarkWithdrawalsSent {
                tx_hash: sent.hash.0,
                withdrawals: keys,
            },
        )
        .await
    }

    /// Sends a call to the vault from the operator's key at its next nonce, with the gas the
    /// node estimates (a call the vault would refuse fails here, as `Reverted`) and EIP-1559
    /// fees from the node.
    async fn send_call(&self, vault: &VaultChain, calldata: Vec<u8>) -> Result<SentTransaction, PayError> {
        let gas_limit = vault
            .node
            .estimate_gas(self.key.address(), vault.node.vault(), &calldata, U256::ZERO)
            .await?;
        let (max_fee_per_gas, max_priority_fee_per_gas) = vault.node.fee_estimate().await?;
        let nonce = vault.node.pending_nonce(self.key.address()).await?;
        let fees = Fees {
            max_fee_per_gas,
            max_priority_fee_per_gas,
            gas_limit,
        };
        Ok(vault
            .node
            .send(
                &self.key,
                TransactionTerms {
                    to: TxKind::Call(vault.node.vault()),
                    input: calldata,
                    value: U256::ZERO,
                    nonce,
                    fees,
                },
            )
            .await?)
    }

    /// The withdrawals of `candidates` that the vault would pay now: all of them when the batch
    /// simulates; otherwise each that simulates alone (the others wait, logged, until they can
    /// be paid or expire).
    async fn payable_now(
        &mut self,
        vault: &VaultChain,
        candidates: Vec<(WithdrawalKey, PendingWithdrawal)>,
    ) -> Result<Vec<(WithdrawalKey, PendingWithdrawal)>, PayError> {
        let operator = Some(self.key.address());
        let simulate = |calldata: Vec<u8>| {
            vault
                .node
                .call(operator, vault.node.vault(), calldata, U256::ZERO, BlockId::latest())
        };
        match simulate(batch_calldata(vault, &candidates)).await {
            Ok(_) => return Ok(candidates),
            Err(NodeError::Reverted { .. }) => {}
            Err(error) => return Err(error.into()),
        }
        let mut payable = Vec::new();
        for candidate in candidates {
            let single = batch_calldata(vault, std::slice::from_ref(&candidate));
            match simulate(single).await {
                Ok(_) => payable.push(candidate),
                Err(NodeError::Reverted { data, message }) => {
                    let reason = data
                        .and_then(|data| DexdVault::DexdVaultErrors::abi_decode(&data).ok())
                        .map_or(message, |error| format!("{error:?}"));
                    tracing::warn!(
                        chain_id = vault.chain_id,
                        account = %dexd_crypto::checksummed(&candidate.0.account),
                        reason,
                        "the vault would refuse a withdrawal now; it is set aside, and failed once expired"
                    );
                    self.set_aside
                        .insert(candidate.0, Instant::now() + Duration::from_millis(SET_ASIDE_MS));
                }
                Err(error) => return Err(error.into()),
            }
        }
        Ok(payable)
    }
}

/// Fails a withdrawal whose expiry has passed in the confirmed block, if as of that block it was
/// not paid: no block from there on can pay it.
async fn fail_if_unpaid_at(vault: &VaultChain, key: WithdrawalKey, confirmed_block: u64) -> Result<(), PayError> {
    let paid_then = vault
        .node
        .withdrawn_many(
            &[(chain_address(&key.account), withdrawal_id(&key))],
            BlockId::Number(BlockNumberOrTag::Number(confirmed_block)),
        )
        .await?;
    if paid_then == [false] {
        tracing::warn!(
            chain_id = vault.chain_id,
            account = %dexd_crypto::checksummed(&key.account),
            "a withdrawal expired unpaid; its amount is credited back"
        );
        submit(vault, Command::FailWithdrawal(key)).await?;
    }
    Ok(())
}

fn batch_calldata(vault: &VaultChain, withdrawals: &[(WithdrawalKey, PendingWithdrawal)]) -> Vec<u8> {
    DexdVault::withdrawBatchCall {
        withdrawals: withdrawals
            .iter()
            .map(|(key, pending)| terms(vault, key, pending).call_argument(&pending.signature))
            .collect(),
    }
    .abi_encode()
}

/// Journals a payer's command. A refusal means the state moved on (another path settled it),
/// which the next poll sees; only a failure to journal is an error.
async fn submit(vault: &VaultChain, command: Command) -> Result<(), PayError> {
    match vault.submit(command).await {
        Ok(_) => Ok(()),
        Err(WriteError::Rejected(rejection)) => {
            tracing::warn!(chain_id = vault.chain_id, ?rejection, "a payer's record was refused");
            Ok(())
        }
        Err(error) => Err(error.into()),
    }
}
