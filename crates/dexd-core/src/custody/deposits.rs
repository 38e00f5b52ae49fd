//! Deposits on a vault chain as the engine sees them: a deposit the venue sent, pending until
//! its event or its failure; a confirmed `Deposited` event credited exactly once, by the vault's
//! gapless deposit number; and how far the watcher has confirmed the chain. It trusts its
//! caller that an event is confirmed.

use super::*;

impl Custody {
    /// Records a deposit transaction the venue sent for an account, as pending.
    pub(crate) fn submit_deposit(
        &mut self,
        ledger: &Ledger,
        submission: ChainDepositSubmission,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        self.refuse_when_frozen()?;
        check_request(
            ledger,
            &TransferRequest {
                transfer_id: submission.tx_hash,
                account: submission.account,
                asset: submission.asset,
                amount: submission.amount,
            },
        )?;
        if self.pending_deposits.contains_key(&submission.tx_hash) {
            return Err(Rejection::DuplicateTransfer);
        }
        if self.pending_deposits.len() >= self.max_pending_transfers {
            return Err(Rejection::TooManyPendingTransfers);
        }
        let pending = PendingDeposit {
            account: submission.account,
            asset: submission.asset,
            amount: submission.amount,
            created_at_ms: now_ms,
        };
        events.push(Event::TransferApplied(Transfer {
            transfer_id: submission.tx_hash,
            kind: TransferKind::Deposit,
            account: pending.account,
            asset: pending.asset,
            amount: pending.amount,
            status: TransferStatus::Pending,
            tx_hash: Some(submission.tx_hash),
            block_number: None,
            timestamp_ms: now_ms,
            updated_at_ms: now_ms,
        }));
        self.pending_deposits.insert(submission.tx_hash, pending);
        Ok(())
    }

    /// A deposit the venue sent whose transaction reverted or can never be mined: nothing is
    /// credited.
    pub(crate) fn fail_deposit(
        &mut self,
        tx_hash: [u8; 32],
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        let pending = self
            .pending_deposits
            .remove(&tx_hash)
            .ok_or(Rejection::TransferNotPending)?;
        events.push(Event::TransferApplied(Transfer {
            transfer_id: tx_hash,
            kind: TransferKind::Deposit,
            account: pending.account,
            asset: pending.asset,
            amount: pending.amount,
            status: TransferStatus::Failed,
            tx_hash: Some(tx_hash),
            block_number: None,
            timestamp_ms: pending.created_at_ms,
            updated_at_ms: now_ms,
        }));
        Ok(())
    }

    /// A credited deposit's transfer id: its transaction hash; a second deposit in the same
    /// transaction gets keccak-256 of the hash and its log index instead, so ids stay unique.
    fn deposit_transfer_id(&self, deposit: &ChainDeposit) -> [u8; 32] {
        if self.last_credited_tx != Some(deposit.tx_hash) {
            return deposit.tx_hash;
        }
        let mut hasher = Keccak256::new();
        hasher.update(deposit.tx_hash);
        hasher.update([0u8; 24]);
        hasher.update(deposit.log_index.to_be_bytes());
        hasher.finalize().into()
    }

    /// Credits a confirmed `Deposited` event, which must be the vault's next deposit. A deposit
    /// of a token the chain does not list, or too large to hold, takes its number without
    /// crediting anything (it stays in the vault, outside the venue's books, and its pair gets
    /// a leaf so that the exit pays it back).
    pub(crate) fn credit_deposit(
        &mut self,
        ledger: &mut Ledger,
        deposit: ChainDeposit,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        if deposit.deposit_id != self.next_deposit_id {
            return Err(Rejection::DepositOutOfOrder);
        }
        if self
            .scanned_through
            .is_some_and(|(block_number, _)| deposit.block_number < block_number)
        {
            // Deposits arrive in the chain's order; one behind the scanned block was skipped.
            return Err(Rejection::DepositOutOfOrder);
        }
        let creditable = match (deposit.asset, deposit.amount) {
            (Some(asset), Some(amount))
                if usize::from(asset.0) < self.pending_withdrawal_units.len() && !amount.is_zero() =>
            {
                Some((asset, amount))
            }
            _ => None,
        };
        // Checked before anything changes: a credit that would overflow is not credited.
        let credit = creditable.filter(|(asset, amount)| {
            ledger.net_deposits(*asset).checked_add(*amount).is_some()
                && self.liabilities.credit_fits(&deposit.account, *asset, *amount)
        });
        self.next_deposit_id += 1;
        self.scanned_through = Some((deposit.block_number, deposit.block_hash));
        let Some((asset, amount)) = credit else {
            // The vault holds it and its exit formula owes it back: the pair gets a leaf, so
            // that its exit is not refused for want of one.
            let token = match deposit.asset {
                Some(asset) if usize::from(asset.0) < self.pending_withdrawal_units.len() => {
                    LiabilityToken::Asset(asset)
                }
                _ => LiabilityToken::Unlisted(deposit.token),
            };
            self.liabilities.note_uncredited(deposit.account, token);
            return Ok(());
        };
        let balance = ledger
            .deposit(&deposit.account, asset, amount, true)
            .expect("invariant: checked above that the credit fits");
        self.liabilities.count_credit(&deposit.account, asset, amount);
        let transfer_id = self.deposit_transfer_id(&deposit);
        self.last_credited_tx = Some(deposit.tx_hash);
        let submitted = match self.pending_deposits.get(&deposit.tx_hash) {
            Some(pending) if pending.account == deposit.account && pending.asset == asset => {
                self.pending_deposits.remove(&deposit.tx_hash)
            }
            _ => None,
        };
        events.push(Event::TransferApplied(Transfer {
            transfer_id,
            kind: TransferKind::Deposit,
            account: deposit.account,
            asset,
            amount,
            status: TransferStatus::Confirmed,
            tx_hash: Some(deposit.tx_hash),
            block_number: Some(deposit.block_number),
            timestamp_ms: submitted.map_or(now_ms, |pending| pending.created_at_ms),
            updated_at_ms: now_ms,
        }));
        events.push(Event::BalanceUpdated {
            account: deposit.account,
            asset,
            balance,
        });
        Ok(())
    }

    /// Records that the chain is confirmed and scanned through a block with no deposit in it
    /// since the last one, so that a restart resumes there and a deeper reorganisation is seen.
    pub(crate) fn record_scan(&mut self, block_number: u64, block_hash: [u8; 32]) -> Result<(), Rejection> {
        self.require(CustodyMode::Vault)?;
        if self.scanned_through.is_some_and(|(scanned, _)| block_number <= scanned) {
            return Err(Rejection::DepositOutOfOrder);
        }
        self.scanned_through = Some((block_number, block_hash));
        Ok(())
    }
}
