//! Transfers between an owner's subaccounts (contract version 5): checked whole, then the funds
//! moved from one available balance to the other and the transfer remembered by its
//! `clientTransferId`; and what the engine answers about subaccounts.
//!
//! A transfer sent again with the same terms is refused as already applied (the caller answers
//! with the first result, so nothing moves twice); with other terms, as a reused id. It holds no
//! rule of who may ask (the owner's own key, never an agent: the caller and the auditor check
//! the signature, and `by_agent` refuses it).

use super::*;
use crate::subaccounts::{
    is_valid_client_transfer_id, subaccount_address, RememberedTransfer, SubaccountTransfer, MAX_SUBACCOUNT_NUMBER,
};

/// The `clientTransferId` of the transfer a withdrawal requested on chain makes from a
/// subaccount to its owner: `#` is not allowed in a client's ids, so none can collide.
fn chain_request_transfer_id(request_id: u64) -> String {
    format!("#chain-request-{request_id}")
}

impl Engine {
    /// Applies a transfer between two subaccounts of `request.owner`, or refuses it.
    pub(super) fn transfer_between_subaccounts(
        &mut self,
        request: SubaccountTransferRequest,
        now_ms: u64,
        events: &mut Vec<Event>,
    ) -> Result<(), Rejection> {
        if request.from_number > MAX_SUBACCOUNT_NUMBER || request.to_number > MAX_SUBACCOUNT_NUMBER {
            return Err(Rejection::InvalidTransfer(
                "a subaccount is numbered 0 (the owner) to 1000",
            ));
        }
        if request.from_number == request.to_number {
            return Err(Rejection::InvalidTransfer(
                "a transfer moves funds between two different subaccounts",
            ));
        }
        if request.amount.is_zero() {
            return Err(Rejection::InvalidTransfer("a transfer moves a positive amount"));
        }
        if !is_valid_client_transfer_id(&request.client_transfer_id) {
            return Err(Rejection::InvalidTransfer(
                "clientTransferId is 1 to 64 of A-Z a-z 0-9 . _ : -",
            ));
        }
        if usize::from(request.asset.0) >= self.assets.len() {
            return Err(Rejection::UnknownAsset);
        }
        match self.subaccounts.remembered(&request, now_ms) {
            RememberedTransfer::Applied(_) => return Err(Rejection::TransferAlreadyApplied),
            RememberedTransfer::Reused => return Err(Rejection::TransferIdReused),
            RememberedTransfer::New => {}
        }
        if !self.subaccounts.has_room(&request.owner, now_ms) {
            return Err(Rejection::TooManyTransfers);
        }
        let from = subaccount_address(&request.owner, request.from_number);
        let to = subaccount_address(&request.owner, request.to_number);
        let from_slot = self.ledger.slot(&from).ok_or(Rejection::InsufficientBalance)?;
        if self.ledger.balance_at(from_slot, request.asset).available < request.amount {
            return Err(Rejection::InsufficientBalance);
        }
        // The last check that can fail: a new subaccount takes a slot of the account limit.
        let to_slot = self.ledger.slot_or_insert(&to, false)?;
        self.ledger
            .move_available(from_slot, to_slot, request.asset, request.amount)
            .expect("checked: the available balance covers the transfer");
        self.subaccounts.forget_due(now_ms);
        let asset = request.asset;
        let transfer = self.record_subaccount_transfer(request, now_ms);
        self.push_transfer_events(transfer, [(from_slot, asset), (to_slot, asset)], events);
        Ok(())
    }

    /// Gathers into `owner`'s own balance what its subaccounts hold of `asset`, by number,
    /// until it has `wanted` available or none is left: a withdrawal the owner asked for on
    /// chain is a claim on its whole leaf of the liability tree, which counts its subaccounts.
    /// Orders of a subaccount holding the asset are cancelled as needed, as the owner's are.
    pub(super) fn gather_from_subaccounts(
        &mut self,
        (owner, request_id): (Address, u64),
        (asset, wanted): (AssetIndex, Amount),
        now_ms: u64,
        events: &mut Vec<Event>,
    ) {
        for (number, address) in self.subaccounts.subaccounts_of(&owner) {
            let held = self.ledger.balance(&owner, asset).available;
            let Some(missing) = wanted.checked_sub(held).filter(|missing| !missing.is_zero()) else {
                return;
            };
            self.free_for_withdrawal(address, (asset, missing), now_ms, events);
            let Some(from_slot) = self.ledger.slot(&address) else {
                continue;
            };
            let moved = self.ledger.balance_at(from_slot, asset).available.min(missing);
            if moved.is_zero() {
                continue;
            }
            let owner_slot = self
                .ledger
                .slot_or_insert(&owner, true)
                .expect("beyond the limit, a slot is always given");
            self.ledger
                .move_available(from_slot, owner_slot, asset, moved)
                .expect("at most the available balance");
            let request = SubaccountTransferRequest {
                owner,
                from_number: number,
                to_number: 0,
                asset,
                amount: moved,
                client_transfer_id: format!("{}-{number}", chain_request_transfer_id(request_id)),
            };
            let transfer = self.record_subaccount_transfer(request, now_ms);
            self.push_transfer_events(transfer, [(from_slot, asset), (owner_slot, asset)], events);
        }
    }

    /// Records a transfer in the registry; a subaccount it makes known brings its open orders
    /// into its owner's count.
    fn record_subaccount_transfer(&mut self, request: SubaccountTransferRequest, now_ms: u64) -> SubaccountTransfer {
        let owner = request.owner;
        let (transfer, newly_known) = self.subaccounts.record(request, now_ms);
        for address in newly_known {
            let open = self.open_order_count(&address);
            self.subaccounts.add_open_orders(owner, open);
        }
        transfer
    }

    fn push_transfer_events(
        &mut self,
        transfer: SubaccountTransfer,
        touched: [(AccountSlot, AssetIndex); 2],
        events: &mut Vec<Event>,
    ) {
        self.touched_balances.clear();
        self.touched_balances.extend(touched);
        self.push_balance_events(events);
        events.push(Event::SubaccountTransferred(transfer));
    }

    /// The transfer `owner` made with `client_transfer_id`, while it is remembered.
    pub fn remembered_subaccount_transfer(
        &self,
        request: &SubaccountTransferRequest,
        now_ms: u64,
    ) -> Option<SubaccountTransfer> {
        match self.subaccounts.remembered(request, now_ms) {
            RememberedTransfer::Applied(transfer) => Some(transfer.clone()),
            _ => None,
        }
    }

    /// An owner's subaccounts that ever held funds, by number, with their addresses.
    pub fn subaccounts_of(&self, owner: &Address) -> Vec<(u32, Address)> {
        self.subaccounts.subaccounts_of(owner)
    }

    /// The owner and number of a subaccount that ever held funds, by its address.
    pub fn subaccount_owner(&self, account: &Address) -> Option<(Address, u32)> {
        self.subaccounts.owner_of(account)
    }
}
