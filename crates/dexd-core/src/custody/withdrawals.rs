//! Withdrawals on a vault chain as the engine sees them: debited at once with the account's
//! signature, then reported sent, confirmed, or failed and credited back, each exactly once.
//! It trusts its caller that a withdrawal really was paid, or really is unpayable.

use super::*;

impl Custody {
    /// Debits a vault withdrawal at journal position `sequence` and keeps it, with the
    /// account's signature, for the payer.
    pub(crate) fn request_withdrawal(
        &mut self,
        ledger: &mut Ledger,
        withdrawal: VaultWithdrawal,
        sequence: u64,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        self.refuse_when_frozen()?;
        let request = withdrawal.request;
        check_request(ledger, &request)?;
        let key = WithdrawalKey {
            account: request.account,
            withdrawal_id: request.transfer_id,
        };
        if self.withdrawals.contains_key(&key) {
            return Err(Rejection::DuplicateTransfer);
        }
        if self.withdrawals.len() >= self.max_pending_transfers {
            return Err(Rejection::TooManyPendingTransfers);
        }
        let index = usize::from(request.asset.0);
        let pending_total = self.pending_withdrawal_units[index]
            .checked_add(request.amount)
            .ok_or(Rejection::AmountTooLarge)?;
        if !self
            .liabilities
            .debit_fits(&request.account, request.asset, request.amount)
        {
            return Err(Rejection::AmountTooLarge);
        }
        let balance = ledger
            .withdraw(&request.account, request.asset, request.amount)
            .map_err(Rejection::from)?;
        self.liabilities
            .count_debit(&request.account, request.asset, request.amount);
        self.pending_withdrawal_units[index] = pending_total;
        let pending = PendingWithdrawal {
            asset: request.asset,
            amount: request.amount,
            expiry_ms: withdrawal.expiry_ms,
            signature: withdrawal.signature,
            status: TransferStatus::Pending,
            tx_hash: None,
            created_at_ms: now_ms,
            request_number: self.next_request_number,
            debited_at_sequence: sequence,
        };
        self.next_request_number += 1;
        events.push(Event::TransferApplied(withdrawal_transfer(
            &key, &pending, None, now_ms,
        )));
        events.push(Event::BalanceUpdated {
            account: request.account,
            asset: request.asset,
            balance,
        });
        self.withdrawals_in_request_order.insert(pending.request_number, key);
        self.withdrawals.insert(key, pending);
        Ok(())
    }

    /// Records that `tx_hash` was broadcast to pay these withdrawals (a replacement at the same
    /// nonce records its new hash the same way).
    pub(crate) fn mark_withdrawals_sent(
        &mut self,
        tx_hash: [u8; 32],
        keys: &[WithdrawalKey],
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        self.check_all_pending(keys)?;
        for key in keys {
            let pending = self.withdrawals.get_mut(key).expect("checked above");
            pending.status = TransferStatus::Sent;
            pending.tx_hash = Some(tx_hash);
            events.push(Event::TransferApplied(withdrawal_transfer(key, pending, None, now_ms)));
        }
        Ok(())
    }

    /// Records that these withdrawals were paid by `tx_hash` in `block_number`, with enough
    /// confirmations: they leave the pending set for good.
    pub(crate) fn confirm_withdrawals(
        &mut self,
        tx_hash: [u8; 32],
        block_number: u64,
        keys: &[WithdrawalKey],
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        self.check_all_pending(keys)?;
        for key in keys {
            let mut paid = self.remove_withdrawal(key);
            paid.status = TransferStatus::Confirmed;
            paid.tx_hash = Some(tx_hash);
            events.push(Event::TransferApplied(withdrawal_transfer(
                key,
                &paid,
                Some(block_number),
                now_ms,
            )));
        }
        Ok(())
    }

    /// Records that a withdrawal can never be paid (its authorization expired unpaid, as the
    /// confirmed chain shows): its amount is credited back to the account.
    pub(crate) fn fail_withdrawal(
        &mut self,
        ledger: &mut Ledger,
        key: WithdrawalKey,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        self.check_all_pending(&[key])?;
        let mut failed = self.remove_withdrawal(&key);
        let balance = ledger
            .deposit(&key.account, failed.asset, failed.amount, true)
            .expect("invariant: a withdrawal credited back fits, as it did before the debit");
        self.liabilities
            .uncount_debit(&key.account, failed.asset, failed.amount);
        failed.status = TransferStatus::Failed;
        events.push(Event::TransferApplied(withdrawal_transfer(&key, &failed, None, now_ms)));
        events.push(Event::BalanceUpdated {
            account: key.account,
            asset: failed.asset,
            balance,
        });
        Ok(())
    }

    fn check_all_pending(&self, keys: &[WithdrawalKey]) -> Result<(), Rejection> {
        if keys.is_empty() || keys.iter().any(|key| !self.withdrawals.contains_key(key)) {
            return Err(Rejection::TransferNotPending);
        }
        Ok(())
    }

    fn remove_withdrawal(&mut self, key: &WithdrawalKey) -> PendingWithdrawal {
        let pending = self.withdrawals.remove(key).expect("invariant: checked pending");
        self.withdrawals_in_request_order.remove(&pending.request_number);
        let index = usize::from(pending.asset.0);
        self.pending_withdrawal_units[index] = self.pending_withdrawal_units[index]
            .checked_sub(pending.amount)
            .expect("invariant: the pending total covers each pending withdrawal");
        pending
    }
}

fn withdrawal_transfer(
    key: &WithdrawalKey,
    pending: &PendingWithdrawal,
    block_number: Option<u64>,
    now_ms: u64,
) -> Transfer {
    Transfer {
        transfer_id: key.withdrawal_id,
        kind: TransferKind::Withdrawal,
        account: key.account,
        asset: pending.asset,
        amount: pending.amount,
        status: pending.status,
        tx_hash: pending.tx_hash,
        block_number,
        timestamp_ms: pending.created_at_ms,
        updated_at_ms: now_ms,
    }
}
