//! The checks of the journal that need the chain, made for a page's lines before they replay:
//! vault credits against the vault's events, recorded requests and root facts against the vault,
//! a confirmation against the `Withdrawn` event of the transaction it names, a failure against
//! the vault's showing it unpaid, a contract account's approval at the block the venue asked,
//! a request's serving against what the replay debited, and every chain event's line against
//! its block's time. It decides no verdict on roots (`roots`) and reads no journal.

use std::collections::BTreeMap;

use dexd_core::Command;

use super::chain::AuditedVault;
use super::checks::LineCheck;
use super::Auditor;
use crate::format::CommandLine;

impl Auditor {
    /// The checks of a segment that need the chain, by journal position: credits against the
    /// vault's events, confirmed and failed withdrawals against what it paid, contract
    /// accounts' approvals. None without a node.
    pub(super) async fn chain_failures(
        &self,
        commands: &[&CommandLine],
        checks: &[LineCheck],
    ) -> Result<BTreeMap<u64, String>, String> {
        let mut failures = BTreeMap::new();
        let Some(vault) = &self.vault else {
            return Ok(failures);
        };
        node_has_the_blocks(vault, commands).await?;
        for (sequence, what) in journaled_before_their_blocks(vault, commands).await? {
            failures.entry(sequence).or_insert(what);
        }
        let credits: Vec<(u64, &dexd_core::ChainDeposit)> = commands
            .iter()
            .filter_map(|line| match &line.command {
                Command::CreditChainDeposit(deposit) => Some((line.sequence, deposit)),
                _ => None,
            })
            .collect();
        for (sequence, what) in vault.unmatched_deposits(&credits).await.map_err(unavailable)? {
            failures.entry(sequence).or_insert(what);
        }
        for line in commands {
            let fact_differs = match &line.command {
                Command::RecordWithdrawalRequest(request) => vault.request_differs(request).await,
                Command::RecordLiabilityRoot(_)
                | Command::SettleLiabilityRoot { .. }
                | Command::RecordVaultFreeze(_) => vault.root_fact_differs(&line.command).await,
                _ => Ok(None),
            };
            if let Some(what) = fact_differs.map_err(unavailable)? {
                failures.entry(line.sequence).or_insert(what);
            }
            if let Some(what) = payment_differs(vault, &line.command).await? {
                failures.entry(line.sequence).or_insert(what.to_string());
            }
        }
        for (line, check) in commands.iter().zip(checks) {
            if let (LineCheck::NeedsContractApproval { digest, at_block }, Command::RequestWithdrawal(withdrawal)) =
                (check, &line.command)
            {
                // Asked where the venue asked: an approval that lapsed since is no failure, and a
                // node that does not have that block yet is not obtained (asked again later).
                let approved = vault
                    .approves(&withdrawal.request.account, *digest, &withdrawal.signature, *at_block)
                    .await
                    .map_err(unavailable)?;
                if !approved {
                    failures.entry(line.sequence).or_insert(
                        "a withdrawal signed neither by the account nor with its contract's approval".into(),
                    );
                }
            }
        }
        Ok(failures)
    }

    /// For a confirmation of requests made on chain: one the vault did not serve, or served with
    /// another amount than the replay debited, in words.
    pub(super) async fn requests_served_unlike_the_replay(&self, command: &Command) -> Result<Option<String>, String> {
        let (Some(vault), Command::ConfirmWithdrawals { withdrawals, .. }) = (&self.vault, command) else {
            return Ok(None);
        };
        for key in withdrawals {
            let Some(pending) = self.engine.custody().pending_withdrawal(key) else {
                continue;
            };
            let Some(request_id) = pending.origin.request_id() else {
                continue;
            };
            let stored = vault
                .request(request_id)
                .await
                .map_err(|error| format!("the chain's node: {error}"))?;
            if !stored.served || stored.paid != alloy::primitives::U256::from(pending.amount.units()) {
                return Ok(Some(format!(
                    "the request {request_id} is confirmed, and the vault {} where the replay debited {}",
                    if stored.served {
                        format!("served it with {}", stored.paid)
                    } else {
                        "has not served it".to_string()
                    },
                    pending.amount.units()
                )));
            }
        }
        Ok(None)
    }
}

/// A node error, as the reason a check was not obtained.
fn unavailable(error: dexd_custody::node::NodeError) -> String {
    format!("the chain's node: {error}")
}

/// The block a chain event's line names: the block its event is in (a deposit, a request made
/// on chain, a root, a payment's confirmation).
fn event_block(command: &Command) -> Option<u64> {
    match command {
        Command::CreditChainDeposit(deposit) => Some(deposit.block_number),
        Command::RecordWithdrawalRequest(request) => Some(request.block_number),
        Command::RecordLiabilityRoot(record) => Some(record.block_number),
        Command::ConfirmWithdrawals { block_number, .. } => Some(*block_number),
        _ => None,
    }
}

/// Lines of chain events journaled before the time of the block their event is in, by
/// position, in words: a venue cannot have seen an event before its block existed, so such a
/// line was written with a clock set back, or made up. Each block's time is read once a page.
async fn journaled_before_their_blocks(
    vault: &AuditedVault,
    commands: &[&CommandLine],
) -> Result<Vec<(u64, String)>, String> {
    let mut block_times_ms: BTreeMap<u64, u64> = BTreeMap::new();
    let mut early = Vec::new();
    for line in commands {
        let Some(block) = event_block(&line.command) else {
            continue;
        };
        let block_time_ms = match block_times_ms.get(&block) {
            Some(time_ms) => *time_ms,
            None => {
                let Some(time_ms) = vault.block_time_ms(block).await.map_err(unavailable)? else {
                    return Err(format!(
                        "the chain's node does not have block {block} the journal names"
                    ));
                };
                block_times_ms.insert(block, time_ms);
                time_ms
            }
        };
        if line.time_ms < block_time_ms {
            early.push((
                line.sequence,
                format!(
                    "a chain event journaled at {} ms, before its block {block}'s time {block_time_ms} ms",
                    line.time_ms
                ),
            ));
        }
    }
    Ok(early)
}

/// A node behind the blocks the journal names has not seen their events yet: that is its lag,
/// not the venue's fault, and the checks wait for it (an error: not obtained).
async fn node_has_the_blocks(vault: &AuditedVault, commands: &[&CommandLine]) -> Result<(), String> {
    let newest_block = commands.iter().filter_map(|line| event_block(&line.command)).max();
    if let Some(block) = newest_block {
        let head = vault.head().await.map_err(unavailable)?;
        if head < block {
            return Err(format!(
                "the chain's node is at block {head}, behind block {block} the journal names"
            ));
        }
    }
    Ok(())
}

/// For a confirmed or failed withdrawal made through the API: what the vault's payments say
/// against it, in words, if they differ. A request made on chain is checked against the vault's
/// serving of it in the replay, where the amount the engine debited is known.
async fn payment_differs(vault: &AuditedVault, command: &Command) -> Result<Option<&'static str>, String> {
    let (keys, paid_expected) = match command {
        Command::ConfirmWithdrawals { withdrawals, .. } => (withdrawals.clone(), true),
        Command::FailWithdrawal(key) => (vec![*key], false),
        _ => return Ok(None),
    };
    let keys: Vec<dexd_core::WithdrawalKey> = keys
        .into_iter()
        .filter(|key| !dexd_core::is_chain_request_withdrawal_id(&key.withdrawal_id))
        .collect();
    if keys.is_empty() {
        return Ok(None);
    }
    if let Command::ConfirmWithdrawals {
        tx_hash, block_number, ..
    } = command
    {
        let unpaid = vault
            .not_paid_by(&keys, *tx_hash, *block_number)
            .await
            .map_err(unavailable)?;
        return Ok(
            (!unpaid.is_empty()).then_some("a withdrawal confirmed as paid by a transaction that did not pay it")
        );
    }
    let paid = vault.paid(&keys).await.map_err(unavailable)?;
    if paid.iter().any(|paid| *paid != paid_expected) {
        return Ok(Some(if paid_expected {
            "a withdrawal confirmed as paid that the vault has not paid"
        } else {
            "a withdrawal the vault paid, failed and credited back"
        }));
    }
    Ok(None)
}
