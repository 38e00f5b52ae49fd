//! Withdrawals on a vault chain as the engine sees them: debited at once with the account's
//! signature, then reported sent, confirmed, or failed and credited back, each exactly once.
//! It trusts its caller that a withdrawal really was paid, or really is unpayable.

use super::*;

/// What the payer's transaction did for the withdrawals it was meant to pay (`MarkWithdrawalsSent`
/// and `MarkWithdrawalsUnpaid`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum WithdrawalMark {
    /// Broadcast: the withdrawals wait for it to be mined.
    Sent,
    /// Mined, and it paid none of them: they are pending again.
    Unpaid,
}

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
        if is_chain_request_withdrawal_id(&request.transfer_id) {
            return Err(Rejection::ReservedWithdrawalId);
        }
        let key = WithdrawalKey {
            account: request.account,
            withdrawal_id: request.transfer_id,
        };
        if self.withdrawals.contains_key(&key) {
            return Err(Rejection::DuplicateTransfer);
        }
        if self.used_withdrawal_ids.contains(&key.mark()) {
            return Err(Rejection::Nonce(crate::NonceRejection::Reused));
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
            origin: WithdrawalOrigin::Signed,
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
        self.used_withdrawal_ids.insert(key.mark());
        Ok(())
    }

    /// Records what became of the transaction `tx_hash` meant to pay these withdrawals.
    ///
    /// `Sent`: it was broadcast (a replacement at the same nonce records its new hash the same
    /// way). A withdrawal is sent only once a final root of the venue's covers its debit
    /// (`Liabilities::payable_through`): the rule the payer follows is the engine's, so a journal
    /// that pays early does not replay, and the auditor says so. A replacement of one already
    /// sent is not held to it again (the root that covered it stays final).
    ///
    /// `Unpaid`: it was mined and paid none of them (the vault skipped them, or it reverted):
    /// each is pending again, its transaction forgotten, until the payer sends it again.
    pub(crate) fn mark_withdrawals(
        &mut self,
        (tx_hash, mark): ([u8; 32], WithdrawalMark),
        keys: &[WithdrawalKey],
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.check_all_pending(keys)?;
        let status = match mark {
            WithdrawalMark::Sent => {
                let payable_through = self.liabilities.payable_through();
                let uncovered = keys.iter().any(|key| {
                    let pending = &self.withdrawals[key];
                    pending.status == TransferStatus::Pending
                        && payable_through.is_none_or(|through| pending.debited_at_sequence > through)
                });
                if uncovered {
                    return Err(Rejection::WithdrawalNotCovered);
                }
                (TransferStatus::Sent, Some(tx_hash))
            }
            WithdrawalMark::Unpaid => {
                if keys
                    .iter()
                    .any(|key| self.withdrawals[key].status != TransferStatus::Sent)
                {
                    return Err(Rejection::TransferNotPending);
                }
                (TransferStatus::Pending, None)
            }
        };
        self.set_withdrawals_status(keys, status, now_ms, events);
        Ok(())
    }

    /// Sets each of `keys` (checked to be pending withdrawals) to `status`, paid by `tx_hash`,
    /// and tells its account.
    fn set_withdrawals_status(
        &mut self,
        keys: &[WithdrawalKey],
        (status, tx_hash): (TransferStatus, Option<[u8; 32]>),
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        for key in keys {
            let pending = self.withdrawals.get_mut(key).expect("checked: a pending withdrawal");
            pending.status = status;
            pending.tx_hash = tx_hash;
            events.push(Event::TransferApplied(withdrawal_transfer(key, pending, None, now_ms)));
        }
    }

    /// Records a withdrawal an account asked for on chain, in the vault's order of requests,
    /// debiting `debit` (what the account held of the token, up to what it asked: the engine
    /// cancels its orders first) at journal position `sequence`. It is served by the vault
    /// whatever its amount, 0 included, and never fails; it is not counted against the limit
    /// of pending transfers, since the chain, not the venue, decides how many there are.
    pub(crate) fn record_chain_request(
        &mut self,
        ledger: &mut Ledger,
        (request, debit): (ChainWithdrawalRequest, Amount),
        sequence: u64,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        if request.request_id != self.next_chain_request_id {
            return Err(Rejection::DepositOutOfOrder);
        }
        assert!(
            debit <= request.amount,
            "invariant: a request's debit is at most what it asked"
        );
        let asset = match request.asset {
            Some(asset) if usize::from(asset.0) < self.pending_withdrawal_units.len() => asset,
            Some(_) => return Err(Rejection::UnknownAsset),
            None => {
                assert_eq!(
                    debit,
                    Amount::ZERO,
                    "invariant: nothing is debited of a token the chain does not list"
                );
                AssetIndex(0)
            }
        };
        let key = WithdrawalKey {
            account: request.account,
            withdrawal_id: chain_request_withdrawal_id(request.request_id),
        };
        let index = usize::from(asset.0);
        let pending_total = self.pending_withdrawal_units[index]
            .checked_add(debit)
            .ok_or(Rejection::AmountTooLarge)?;
        if debit != Amount::ZERO {
            self.debit_request(ledger, (&request.account, asset, debit), events)?;
        }
        self.pending_withdrawal_units[index] = pending_total;
        self.next_chain_request_id += 1;
        let pending = PendingWithdrawal {
            asset,
            amount: debit,
            expiry_ms: u64::MAX,
            signature: [0; 65],
            status: TransferStatus::Pending,
            tx_hash: None,
            created_at_ms: now_ms,
            request_number: self.next_request_number,
            debited_at_sequence: sequence,
            origin: WithdrawalOrigin::Requested {
                request_id: request.request_id,
                requested: request.amount,
                deadline_ms: request.deadline_ms,
                token: request.token,
            },
        };
        self.next_request_number += 1;
        // A token the chain does not list has no symbol to show the account: it is served with
        // nothing and appears in no history.
        if request.asset.is_some() {
            events.push(Event::TransferApplied(withdrawal_transfer(
                &key, &pending, None, now_ms,
            )));
        }
        self.withdrawals_in_request_order.insert(pending.request_number, key);
        let replaced = self.withdrawals.insert(key, pending);
        assert!(
            replaced.is_none(),
            "invariant: a request's key is its own (ids in its range are refused to signed withdrawals)"
        );
        Ok(())
    }

    /// Debits what a request made on chain takes from the account, counted against its
    /// liabilities: refused (changing nothing) when the liabilities cannot count it.
    fn debit_request(
        &mut self,
        ledger: &mut Ledger,
        (account, asset, debit): (&Address, AssetIndex, Amount),
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        if !self.liabilities.debit_fits(account, asset, debit) {
            return Err(Rejection::AmountTooLarge);
        }
        let balance = ledger
            .withdraw(account, asset, debit)
            .expect("invariant: the engine debits at most what is available");
        self.liabilities.count_debit(account, asset, debit);
        events.push(Event::BalanceUpdated {
            account: *account,
            asset,
            balance,
        });
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
    /// confirmed chain shows): its amount is credited back to the account. A request made on
    /// chain never fails: the vault must serve it.
    pub(crate) fn fail_withdrawal(
        &mut self,
        ledger: &mut Ledger,
        key: WithdrawalKey,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.check_all_pending(&[key])?;
        if self.withdrawals[&key].origin != WithdrawalOrigin::Signed {
            return Err(Rejection::TransferNotPending);
        }
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

    /// Whether the venue is in vault custody and every one of `keys` (at least one) is a
    /// pending withdrawal: what every mark of the payer's needs.
    fn check_all_pending(&self, keys: &[WithdrawalKey]) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
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
