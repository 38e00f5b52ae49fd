//! The withdrawal payer of one vault chain.
//!
//! Every poll it takes the oldest pending withdrawals (up to the chain's batch size) whose debit
//! the journal holds (never one the engine holds and a failed append may take back) and that a
//! final root of the venue's covers (a root built at or after the debit, past its challenge
//! period without a veto: so the exit root, which is that root or a later one, counts the
//! payment, and no trader is paid a withdrawal and exits the balance it came from too); none
//! while a foreign root could still become the exit root, or the vault is frozen (`roots`). The
//! engine holds it to the same rule: it refuses to mark sent a withdrawal no final root covers.
//!
//! Withdrawals an account asked for on chain (`requestWithdrawal`) come first, since the vault
//! may be frozen by anyone once one is unserved past its deadline: they are served in one
//! `serveRequests` (`requests`), whatever their amount (0 included), and never fail (a payment
//! the account refuses is held in the vault for it to claim). Signed withdrawals follow.
//!
//! Before any send, it asks the vault which are already paid: those are confirmed once their
//! event has `confirmations` blocks on top, whatever transaction paid them (one sent before a
//! crash included). A signed withdrawal whose authorization expired unpaid, as a block with
//! `confirmations` on top shows, can never be paid and is failed (its amount credited back).
//! The rest are simulated as one batch *as the transaction will be sent*: from the operator, at
//! the fees it will pay (a contract account's approval may look at the gas price). The vault's
//! `withdrawBatch` skips a withdrawal its account does not authorise or whose payment it
//! refuses, and says which it paid, so one account's code never holds up the others: a
//! withdrawal the simulation or the mined transaction skipped is set aside and
//! sent again alone, after [`SET_ASIDE_MS`] doubling up to [`MAX_SET_ASIDE_MS`], until it is paid
//! or its authorization expires (then it is failed). What is left is sent as one transaction
//! from the operator's key with EIP-1559 fees from the node, and journaled as sent. One
//! transaction is in flight at a time, so the operator's nonces form one sequence; one not mined
//! within `replace_after_ms` is replaced at the same nonce with higher fees, and every
//! transaction sent at that nonce is followed, since any of them may be the one mined
//! (`in_flight`). A withdrawal the vault shows paid is confirmed from the receipt of the
//! transaction that paid it, or its event found in bounded log ranges (`paid`); a node error
//! about one withdrawal holds up only that one.
//!
//! Every withdrawal is paid at most once because the vault refuses a paid id (and a served
//! request); it is paid at least once because the payer keeps sending until it is paid or
//! expired; and it is never both paid and credited back because it is failed only when the
//! confirmed chain proves it can no longer be paid. Nothing here must survive a restart: the
//! journal and the vault hold it (a restart forgets the set-aside times, and tries those
//! withdrawals again at once).

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
mod requests;
mod root_carrier;
mod roots;

use std::collections::HashMap;

use self::in_flight::{FlightPurpose, InFlight};
use super::node::{BlobTerms, Fees, NodeError, SentTransaction, TransactionTerms};
use super::vault::{chain_address, DexdVault, DexdVaultV2, WithdrawalTerms};
use super::venue_chain::acting_under;
use super::{act_as_leader, pause_or_stop, LeaderEpoch, VaultChain};
use dexd_store::WriteError;

/// How long a withdrawal the vault skipped or refused (in simulation or on chain) is first left
/// out before it is sent again, alone; each further failure doubles it, up to
/// [`MAX_SET_ASIDE_MS`]. Once its expiry has passed it is taken again, to be failed.
pub const SET_ASIDE_MS: u64 = 60_000;

/// The longest a withdrawal is set aside between two tries.
pub const MAX_SET_ASIDE_MS: u64 = 3_600_000;

/// Gas the payer adds to a batch's estimate for each withdrawal in it: what a contract account
/// may use in the vault's `isValidSignature` call and a native payment's call, so that an
/// account whose code uses more on chain than in the estimate cannot make the batch run out of
/// gas (unused gas is not paid).
pub const GAS_RESERVED_PER_WITHDRAWAL: u64 = 100_000 + 50_000;

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

/// A withdrawal the vault skipped or refused though it passed the payer's checks: left out until
/// `until`, then sent alone.
#[derive(Clone, Copy, Debug)]
struct SetAside {
    until: Instant,
    /// How many times it failed: each doubles the wait.
    failures: u32,
}

struct Payer {
    key: PrivateKeySigner,
    operator_checked: bool,
    in_flight: Option<InFlight>,
    /// Withdrawals set aside. At most one entry per pending withdrawal (a bounded set:
    /// `max_pending_transfers` signed withdrawals plus the requests made on chain), and an entry
    /// leaves once its withdrawal is no longer pending.
    set_aside: HashMap<WithdrawalKey, SetAside>,
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
    // The trusted setup takes seconds to load: loaded now, on a thread of its own, so that the
    // first root (and the withdrawals waiting for it) does not wait for it.
    if vault.config.root_data == crate::config::RootDataCarrier::Blobs && vault.root_terms().is_some() {
        tokio::task::spawn_blocking(crate::liabilities::root_blobs::kzg_settings);
    }
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
        // Withdrawals' turn: whatever this stage does, the next root may go after it.
        self.roots.withdrawals_had_their_turn();
        let Some(batch) = self.durable_candidates(vault).await else {
            return Ok(());
        };
        let head = vault.node.head().await?;
        let confirmed_block = vault.confirmed_head(head).await?.unwrap_or(0);
        let confirmed_time_ms = match vault.node.block(confirmed_block).await? {
            Some((_, timestamp)) => timestamp.saturating_mul(1_000),
            None => return Ok(()),
        };
        // A payment confirmed is in a block at or before this one: journaled no earlier.
        vault.chain.note_chain_time_ms(confirmed_time_ms);
        // Requests made on chain first: their deadlines can freeze the vault.
        let (requests, signed): (Vec<Candidate>, Vec<Candidate>) = batch
            .into_iter()
            .partition(|(_, pending, _)| pending.origin.request_id().is_some());
        if !requests.is_empty() && self.serve_requests(vault, requests, (head, confirmed_block)).await? {
            return Ok(());
        }
        if signed.is_empty() {
            return Ok(());
        }
        let mut payable = self
            .settle_or_keep_payable(vault, signed, (head, confirmed_block), confirmed_time_ms)
            .await?;
        // A withdrawal set aside before goes alone.
        if let Some(position) = payable.iter().position(|(key, _)| self.set_aside.contains_key(key)) {
            payable = vec![payable.swap_remove(position)];
        }
        if payable.is_empty() {
            return Ok(());
        }
        let fees = vault.node.fee_estimate().await?;
        let payable = self.payable_now(vault, payable, fees).await?;
        if payable.is_empty() {
            return Ok(());
        }
        self.send_batch(vault, payable, fees).await
    }

    /// Of the withdrawals signed through the API: those the vault paid already are confirmed,
    /// those expired by the confirmed block failed unless paid there; the rest, when a root
    /// covers them, come back to be paid now. A node error about one withdrawal holds up that
    /// one only.
    async fn settle_or_keep_payable(
        &mut self,
        vault: &VaultChain,
        signed: Vec<Candidate>,
        (head, confirmed_block): (u64, u64),
        confirmed_time_ms: u64,
    ) -> Result<Vec<(WithdrawalKey, PendingWithdrawal)>, PayError> {
        let ids: Vec<(ChainAddress, U256)> = signed
            .iter()
            .map(|(key, _, _)| (chain_address(&key.account), withdrawal_id(key)))
            .collect();
        let paid = vault.node.withdrawn_many(&ids, BlockId::latest()).await?;
        let mut payable = Vec::new();
        for ((key, pending, covered), already_paid) in signed.into_iter().zip(paid) {
            // A node error about one withdrawal holds up that one only.
            let settled = if already_paid {
                self.confirm_paid(vault, &key, &pending, (head, confirmed_block)).await
            } else if confirmed_time_ms > pending.expiry_ms {
                fail_if_unpaid_at(vault, key, confirmed_block).await
            } else {
                if covered {
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
        Ok(payable)
    }

    /// Sets a withdrawal aside after a failure: left out for [`SET_ASIDE_MS`], doubled by each
    /// failure before, up to [`MAX_SET_ASIDE_MS`].
    fn set_aside(&mut self, key: WithdrawalKey) {
        let entry = self.set_aside.entry(key).or_insert(SetAside {
            until: Instant::now(),
            failures: 0,
        });
        entry.failures = entry.failures.saturating_add(1);
        let wait_ms = SET_ASIDE_MS
            .saturating_mul(1u64 << (entry.failures - 1).min(16))
            .min(MAX_SET_ASIDE_MS);
        entry.until = Instant::now() + Duration::from_millis(wait_ms);
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
        let now_ms = dexd_store::now_ms();
        let set_aside = &self.set_aside;
        // Only withdrawals whose debit is journaled: the engine holds a batch before the journal
        // does, and a failed append takes it back, so paying from a plain read could pay what
        // was never debited.
        let (batch, settled) = vault
            .read_durable_engine(
                |engine| {
                    let custody = engine.custody();
                    let payable_through = custody.liabilities().payable_through();
                    let batch = custody
                        .pending_withdrawals()
                        .map(|(key, pending)| {
                            let covered = payable_through.is_some_and(|through| pending.debited_at_sequence <= through);
                            (key, pending, covered)
                        })
                        .filter(|(key, pending, covered)| {
                            let expired = pending.expiry_ms < now_ms;
                            let waiting = set_aside.get(key).is_some_and(|entry| entry.until > now);
                            (*covered && !waiting) || expired
                        })
                        .take(vault.config.max_withdrawals_per_transaction)
                        .map(|(key, pending, covered)| (*key, pending.clone(), covered))
                        .collect::<Vec<Candidate>>();
                    let settled: Vec<WithdrawalKey> = set_aside
                        .keys()
                        .filter(|key| custody.pending_withdrawal(key).is_none())
                        .copied()
                        .collect();
                    (batch, settled)
                },
                Duration::from_millis(DURABLE_READ_WAIT_MS),
            )
            .await?;
        for key in settled {
            self.set_aside.remove(&key);
        }
        (!batch.is_empty()).then_some(batch)
    }

    /// Sends `payable` as one `withdrawBatch` at the operator's next nonce, follows it, and
    /// journals the withdrawals as sent.
    async fn send_batch(
        &mut self,
        vault: &VaultChain,
        payable: Vec<(WithdrawalKey, PendingWithdrawal)>,
        fees: (u128, u128),
    ) -> Result<(), PayError> {
        assert!(
            (1..=vault.config.max_withdrawals_per_transaction).contains(&payable.len())
                && payable
                    .iter()
                    .map(|(key, _)| key)
                    .collect::<std::collections::HashSet<_>>()
                    .len()
                    == payable.len(),
            "invariant: a batch pays 1 to max_withdrawals_per_transaction withdrawals, each once"
        );
        let calldata = batch_calldata(vault, &payable);
        let reserved = GAS_RESERVED_PER_WITHDRAWAL.saturating_mul(payable.len() as u64);
        let sent = self.send_call(vault, calldata.clone(), (fees, reserved), None).await?;
        self.journal_sent(vault, sent, (&payable, calldata), FlightPurpose::Withdrawals)
            .await
    }

    /// Follows `sent`, which pays `payable` with `calldata`, as the transaction in flight, and
    /// journals its withdrawals as sent.
    async fn journal_sent(
        &mut self,
        vault: &VaultChain,
        sent: SentTransaction,
        (payable, calldata): (&[(WithdrawalKey, PendingWithdrawal)], Vec<u8>),
        purpose: FlightPurpose,
    ) -> Result<(), PayError> {
        let keys: Vec<WithdrawalKey> = payable.iter().map(|(key, _)| *key).collect();
        tracing::info!(
            chain_id = vault.chain_id,
            tx_hash = %sent.hash,
            nonce = sent.nonce,
            withdrawals = keys.len(),
            ?purpose,
            "withdrawals sent to the vault"
        );
        self.in_flight = Some(InFlight::new(sent, keys.clone(), calldata).for_purpose(purpose));
        submit(
            vault,
            Command::MarkWithdrawalsSent {
                tx_hash: sent.hash.0,
                withdrawals: keys,
            },
        )
        .await
    }

    /// Sends a call to the vault from the operator's key at its next nonce, at the EIP-1559
    /// fees `fees` (from the node), with the gas the node estimates at those fees plus
    /// `reserved_gas` (a call the vault would refuse fails here, as `Reverted`).
    async fn send_call(
        &self,
        vault: &VaultChain,
        calldata: Vec<u8>,
        (fees, reserved_gas): ((u128, u128), u64),
        blobs: Option<BlobTerms>,
    ) -> Result<SentTransaction, PayError> {
        let gas_limit = vault
            .node
            .estimate_gas_as_sent(
                self.key.address(),
                (vault.node.vault(), &calldata, U256::ZERO),
                fees,
                blobs.as_ref(),
            )
            .await?
            .saturating_add(reserved_gas);
        let (max_fee_per_gas, max_priority_fee_per_gas) = fees;
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
                    blobs,
                },
            )
            .await?)
    }

    /// The withdrawals of `candidates` that the vault would pay now, simulated as the
    /// transaction will be sent (from the operator, at `fees`): those the batch pays; the ones it
    /// skips are set aside. When the whole batch reverts (what is the operator's to get right),
    /// each is simulated alone and those that revert alone are set aside too.
    async fn payable_now(
        &mut self,
        vault: &VaultChain,
        candidates: Vec<(WithdrawalKey, PendingWithdrawal)>,
        fees: (u128, u128),
    ) -> Result<Vec<(WithdrawalKey, PendingWithdrawal)>, PayError> {
        let operator = self.key.address();
        let simulate = |calldata: Vec<u8>| {
            vault.node.call_as_sent(
                operator,
                (vault.node.vault(), calldata, U256::ZERO),
                fees,
                BlockId::latest(),
            )
        };
        let outcomes = match simulate(batch_calldata(vault, &candidates)).await {
            Ok(returned) => paid_flags(&returned, candidates.len())?,
            Err(NodeError::Reverted { .. }) => {
                let mut outcomes = Vec::with_capacity(candidates.len());
                for candidate in &candidates {
                    let single = batch_calldata(vault, std::slice::from_ref(candidate));
                    outcomes.push(match simulate(single).await {
                        Ok(returned) => paid_flags(&returned, 1)?[0],
                        Err(NodeError::Reverted { data, message }) => {
                            let reason = data
                                .and_then(|data| DexdVault::DexdVaultErrors::abi_decode(&data).ok())
                                .map_or(message, |error| format!("{error:?}"));
                            tracing::warn!(
                                chain_id = vault.chain_id,
                                reason,
                                "the vault refuses a withdrawal alone"
                            );
                            false
                        }
                        Err(error) => return Err(error.into()),
                    });
                }
                outcomes
            }
            Err(error) => return Err(error.into()),
        };
        let mut payable = Vec::new();
        for (candidate, pays) in candidates.into_iter().zip(outcomes) {
            if pays {
                payable.push(candidate);
            } else {
                tracing::warn!(
                    chain_id = vault.chain_id,
                    account = %dexd_crypto::checksummed(&candidate.0.account),
                    "the vault would not pay a withdrawal now (its account's contract refuses it, or its payment); \
                     it is set aside, sent again alone later, and failed once expired"
                );
                self.set_aside(candidate.0);
            }
        }
        Ok(payable)
    }
}

/// Which withdrawals a `withdrawBatch` paid, from what it returned (`bool[]`).
fn paid_flags(returned: &[u8], expected: usize) -> Result<Vec<bool>, PayError> {
    match DexdVaultV2::withdrawBatchCall::abi_decode_returns(returned) {
        Ok(flags) if flags.len() == expected => Ok(flags),
        _ => Err(PayError::Node(NodeError::Unavailable(
            "the vault's withdrawBatch returned something else than which withdrawals it paid".into(),
        ))),
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
