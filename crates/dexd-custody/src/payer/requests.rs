//! Serving the withdrawals accounts asked for on chain (`requestWithdrawal`, contract version 5).
//!
//! A request the engine recorded is pending like a signed withdrawal and paid under the same
//! rule (a final root of the venue's covers its debit), but by the vault's `serveRequests`, with
//! the amount the engine debited (0 when the account held nothing): a request that is not
//! served by its deadline lets anyone freeze the vault, so requests go before signed
//! withdrawals. The vault holds a payment the account refuses for it to claim, so serving never
//! fails for the account's sake; a transaction that reverts sets its requests aside and each is
//! served alone later, as for signed withdrawals. A request the vault already shows served is
//! confirmed from the transaction that served it (`paid`).

use alloy::eips::BlockId;
use alloy::primitives::U256;
use alloy::sol_types::SolCall;
use dexd_core::{PendingWithdrawal, WithdrawalKey};

use super::in_flight::FlightPurpose;
use super::{Candidate, PayError, Payer};
use crate::node::NodeError;
use crate::vault::DexdVaultV2;
use crate::VaultChain;

impl Payer {
    /// Confirms the requests of `candidates` the vault already served and sends one
    /// `serveRequests` for those a final root covers; whether a transaction was sent (it is
    /// then in flight, and nothing else is sent this poll).
    pub(super) async fn serve_requests(
        &mut self,
        vault: &VaultChain,
        candidates: Vec<Candidate>,
        (head, confirmed_block): (u64, u64),
    ) -> Result<bool, PayError> {
        let request_ids: Vec<u64> = candidates.iter().map(|(_, pending, _)| request_id(pending)).collect();
        let served = vault.node.requests_served(&request_ids, BlockId::latest()).await?;
        let mut payable = Vec::new();
        for ((key, pending, covered), served) in candidates.into_iter().zip(served) {
            if served {
                match self.confirm_paid(vault, &key, &pending, (head, confirmed_block)).await {
                    Ok(()) => {}
                    Err(PayError::Node(error)) => tracing::warn!(
                        chain_id = vault.chain_id,
                        request_id = request_id(&pending),
                        %error,
                        "a served request could not be confirmed now; it is looked at again next poll"
                    ),
                    Err(error) => return Err(error),
                }
            } else if covered {
                payable.push((key, pending));
            }
        }
        // One set aside before goes alone.
        if let Some(position) = payable.iter().position(|(key, _)| self.set_aside.contains_key(key)) {
            payable = vec![payable.swap_remove(position)];
        }
        if payable.is_empty() {
            return Ok(false);
        }
        let fees = vault.node.fee_estimate().await?;
        let calldata = serve_calldata(&payable);
        let sent = match self.send_call(vault, calldata.clone(), (fees, 0), None).await {
            Ok(sent) => sent,
            Err(PayError::Node(NodeError::Reverted { message, .. })) => {
                tracing::error!(
                    chain_id = vault.chain_id,
                    message,
                    requests = payable.len(),
                    "the vault refuses to serve requests made on chain; each is set aside and served alone later"
                );
                for (key, _) in &payable {
                    self.set_aside(*key);
                }
                return Ok(false);
            }
            Err(error) => return Err(error),
        };
        self.journal_sent(vault, sent, (&payable, calldata), FlightPurpose::Requests)
            .await?;
        Ok(true)
    }
}

fn request_id(pending: &PendingWithdrawal) -> u64 {
    pending
        .origin
        .request_id()
        .expect("invariant: only requests made on chain are served")
}

/// `serveRequests` of `requests`, each with the amount the engine debited.
fn serve_calldata(requests: &[(WithdrawalKey, PendingWithdrawal)]) -> Vec<u8> {
    DexdVaultV2::serveRequestsCall {
        requestIds: requests
            .iter()
            .map(|(_, pending)| U256::from(request_id(pending)))
            .collect(),
        amounts: requests
            .iter()
            .map(|(_, pending)| U256::from(pending.amount.units()))
            .collect(),
    }
    .abi_encode()
}
