//! A withdrawal an account asked the vault for on chain (contract version 5): the account's
//! orders holding the token are cancelled, newest first, until what it holds available covers
//! what it asked (or none is left); then its subaccounts' funds are gathered into it, by number,
//! as needed (its leaf counts them); and what it then holds, up to what it asked, is debited and
//! handed to custody to be served.
//!
//! The request is a fact of the chain, entered by the watcher in the vault's order: it is never
//! refused for the account's state (an account that holds nothing is served with 0), so that the
//! venue can always serve it before its deadline. It does not decide when it is paid (custody's
//! payment rule does) and reads nothing but the engine.

use super::*;
use crate::order::CancelReason;

impl Engine {
    /// Records `request` at journal position `sequence`: cancels as needed, debits, keeps it
    /// pending for the vault to serve.
    pub(super) fn record_withdrawal_request(
        &mut self,
        request: ChainWithdrawalRequest,
        sequence: u64,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        if request.request_id != self.custody.next_chain_request_id() {
            return Err(Rejection::DepositOutOfOrder);
        }
        let debit = match request.asset {
            Some(asset) if usize::from(asset.0) < self.assets.len() => {
                self.free_for_withdrawal(request.account, (asset, request.amount), now_ms, events);
                self.gather_from_subaccounts(
                    (request.account, request.request_id),
                    (asset, request.amount),
                    now_ms,
                    events,
                );
                let available = self.ledger.balance(&request.account, asset).available;
                available.min(request.amount)
            }
            Some(_) => return Err(Rejection::UnknownAsset),
            None => Amount::ZERO,
        };
        self.custody
            .record_chain_request(&mut self.ledger, (request, debit), sequence, now_ms, events)
    }

    /// Cancels `account`'s open orders that hold `asset` (sells of a pair's base, buys of its
    /// quote, resting or waiting for their trigger), newest first, until `wanted` of it is
    /// available or none is left (cancel reason `ForcedWithdrawal`).
    pub(super) fn free_for_withdrawal(
        &mut self,
        account: Address,
        (asset, wanted): (AssetIndex, Amount),
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        if self.ledger.balance(&account, asset).available >= wanted {
            return;
        }
        let Some(slot) = self.ledger.slot(&account) else {
            return;
        };
        let mut holding: Vec<(u64, OrderId)> = self
            .open_order_records_of(slot)
            .filter_map(|record| {
                let spec = &self.pairs[usize::from(record.terms.pair.0)].spec;
                let locked = match record.terms.direction {
                    Direction::Buy => spec.quote(),
                    Direction::Sell => spec.base(),
                };
                (locked == asset).then_some((record.sequence, record.terms.order_id))
            })
            .collect();
        // By the orders' own sequence, newest first: the index's order depends on how it was
        // built, the sequence does not, so replay cancels the same orders.
        holding.sort_unstable_by(|left, right| right.cmp(left));
        self.touched_balances.clear();
        for (_, order_id) in holding {
            if self.ledger.balance(&account, asset).available >= wanted {
                break;
            }
            // An order of a one-cancels-other group may have gone with its partner.
            if self.open_order(&order_id).is_some() {
                self.cancel_open_order(order_id, CancelReason::ForcedWithdrawal, now_ms, events);
            }
        }
        self.push_balance_events(events);
    }
}
