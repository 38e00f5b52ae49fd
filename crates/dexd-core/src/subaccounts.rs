//! Subaccounts (contract version 5): an owner's numbered books of funds, 1 to
//! [`MAX_SUBACCOUNT_NUMBER`], each an account of the ledger at its own keyless address
//! ([`subaccount_address`]), and the transfers between them.
//!
//! The registry learns a subaccount when funds first reach it (a transfer is the only way in:
//! deposits credit the owner), so every subaccount that holds anything, or ever did, is known:
//! who owns it (an agent's approval and the owner's signature count for it) and into whose leaf
//! of the liability tree its funds fold. It also remembers each owner's transfers by
//! `clientTransferId` for [`TRANSFER_ID_MEMORY_MS`], so that a transfer sent again is answered
//! with its first result instead of moving funds twice.
//!
//! Plain state with documented limits; it moves no balance (the engine does, through the
//! ledger) and checks no signature.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::FxHashMap;
use sha3::{Digest, Keccak256};

use crate::money::{Address, Amount, AssetIndex};
use crate::state_hash::StateHasher;

/// The highest subaccount number; 0 is the owner itself.
pub const MAX_SUBACCOUNT_NUMBER: u32 = 1_000;
/// How long a transfer's `clientTransferId` is remembered after the transfer, in ms: a transfer
/// sent again within it is answered with its first result; after it, the id may be used again.
pub const TRANSFER_ID_MEMORY_MS: u64 = 24 * 60 * 60 * 1_000;
/// The most transfers one owner may have remembered at once (in the last
/// [`TRANSFER_ID_MEMORY_MS`]); one more is refused until the oldest is forgotten.
pub const MAX_REMEMBERED_TRANSFERS_PER_OWNER: usize = 10_000;
/// An owner's open orders over itself and all its subaccounts are at most this many times the
/// chain's `max_open_orders_per_account` (each subaccount is held to that limit on its own).
pub const OWNER_OPEN_ORDERS_MULTIPLE: u32 = 10;
/// The longest `clientTransferId`, in characters (`A-Z a-z 0-9 . _ : -`).
pub const MAX_CLIENT_TRANSFER_ID_CHARACTERS: usize = 64;

/// The address of `owner`'s subaccount `number`: the last 20 bytes of
/// `keccak256(abi.encode(owner, uint32(number)))`. Number 0 is the owner's own address.
pub fn subaccount_address(owner: &Address, number: u32) -> Address {
    if number == 0 {
        return *owner;
    }
    let mut encoded = [0u8; 64];
    encoded[12..32].copy_from_slice(owner.as_bytes());
    encoded[60..64].copy_from_slice(&number.to_be_bytes());
    let digest = Keccak256::digest(encoded);
    let mut address = [0u8; 20];
    address.copy_from_slice(&digest[12..]);
    Address::from_bytes(address)
}

/// Whether `id` is a valid `clientTransferId`: 1 to [`MAX_CLIENT_TRANSFER_ID_CHARACTERS`] of
/// `A-Z a-z 0-9 . _ : -`.
pub fn is_valid_client_transfer_id(id: &str) -> bool {
    !id.is_empty()
        && id.len() <= MAX_CLIENT_TRANSFER_ID_CHARACTERS
        && id
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b':' | b'-'))
}

/// A transfer an owner asks for between two of its subaccounts.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubaccountTransferRequest {
    /// The owner (number 0), who signs.
    pub owner: Address,
    /// The subaccount the funds leave, 0 to [`MAX_SUBACCOUNT_NUMBER`].
    pub from_number: u32,
    /// The subaccount they reach, another one.
    pub to_number: u32,
    /// Which asset.
    pub asset: AssetIndex,
    /// How much, in the asset's smallest unit; positive.
    pub amount: Amount,
    /// The owner's id of the transfer ([`is_valid_client_transfer_id`]).
    pub client_transfer_id: String,
}

/// A transfer between two subaccounts of one owner, as applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubaccountTransfer {
    /// The chain's number of the transfer, from 1.
    pub transfer_id: u64,
    /// What was asked.
    pub request: SubaccountTransferRequest,
    /// When it was applied, in ms since the epoch.
    pub timestamp_ms: u64,
}

impl SubaccountTransfer {
    /// The address the funds left.
    pub fn from_address(&self) -> Address {
        subaccount_address(&self.request.owner, self.request.from_number)
    }

    /// The address the funds reached.
    pub fn to_address(&self) -> Address {
        subaccount_address(&self.request.owner, self.request.to_number)
    }
}

/// What a transfer's `clientTransferId` says of a request before it is applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum RememberedTransfer<'a> {
    /// The id is not remembered: the transfer is new.
    New,
    /// The same transfer was applied already: answer with it.
    Applied(&'a SubaccountTransfer),
    /// The id was used for another transfer.
    Reused,
}

/// The subaccounts a chain knows and the transfers it remembers, as plain data (a snapshot's).
/// Its default is a chain's before any transfer (the next transfer is number 1).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubaccountsState {
    /// Every known subaccount: its owner and number, by owner then number.
    pub subaccounts: Vec<(Address, u32)>,
    /// The transfers remembered by `clientTransferId`, by owner then id.
    pub remembered: Vec<SubaccountTransfer>,
    /// The number the next transfer gets.
    pub next_transfer_id: u64,
}

impl Default for SubaccountsState {
    fn default() -> Self {
        SubaccountsState {
            subaccounts: Vec::new(),
            remembered: Vec::new(),
            next_transfer_id: 1,
        }
    }
}

/// Every owner's known subaccounts and remembered transfers. Ordered maps where the state hash
/// iterates; the reverse index is derived.
#[derive(Clone, Debug)]
pub struct SubaccountRegistry {
    /// Each owner's subaccounts: number → address.
    by_owner: BTreeMap<Address, BTreeMap<u32, Address>>,
    /// Each subaccount's owner and number, by its address.
    owner_of: FxHashMap<Address, (Address, u32)>,
    /// The remembered transfers, by owner and `clientTransferId`.
    remembered: BTreeMap<(Address, String), SubaccountTransfer>,
    /// The same, by the time they are forgotten.
    forgotten_at: BTreeSet<(u64, Address, String)>,
    /// How many each owner has remembered.
    remembered_per_owner: FxHashMap<Address, usize>,
    /// The open orders of each owner's subaccounts, together (derived from the books: the
    /// engine counts an order in when it opens and out when it closes).
    open_orders_by_owner: FxHashMap<Address, u32>,
    next_transfer_id: u64,
}

impl Default for SubaccountRegistry {
    fn default() -> Self {
        SubaccountRegistry {
            by_owner: BTreeMap::new(),
            owner_of: FxHashMap::default(),
            remembered: BTreeMap::new(),
            forgotten_at: BTreeSet::new(),
            remembered_per_owner: FxHashMap::default(),
            open_orders_by_owner: FxHashMap::default(),
            next_transfer_id: 1,
        }
    }
}

impl SubaccountRegistry {
    /// The owner and number of a known subaccount's address (`None` for an owner's own address
    /// or an address never funded by a transfer).
    pub fn owner_of(&self, account: &Address) -> Option<(Address, u32)> {
        self.owner_of.get(account).copied()
    }

    /// The account whose leaf of the liability tree holds `account`'s funds: its owner, or
    /// itself.
    pub fn leaf_account(&self, account: &Address) -> Address {
        self.owner_of.get(account).map_or(*account, |(owner, _)| *owner)
    }

    /// An owner's known subaccounts, by number.
    pub fn subaccounts_of(&self, owner: &Address) -> Vec<(u32, Address)> {
        self.by_owner
            .get(owner)
            .map(|numbers| numbers.iter().map(|(number, address)| (*number, *address)).collect())
            .unwrap_or_default()
    }

    /// Counts an order of `account` that opened (nothing for an account that is no subaccount).
    pub(crate) fn order_opened(&mut self, account: &Address) {
        if self.owner_of.is_empty() {
            return;
        }
        if let Some((owner, _)) = self.owner_of.get(account) {
            *self.open_orders_by_owner.entry(*owner).or_default() += 1;
        }
    }

    /// Counts out an order of `account` that closed.
    pub(crate) fn order_closed(&mut self, account: &Address) {
        if self.owner_of.is_empty() {
            return;
        }
        if let Some((owner, _)) = self.owner_of.get(account) {
            let count = self
                .open_orders_by_owner
                .get_mut(owner)
                .expect("invariant: a closing order of a subaccount was counted when it opened");
            *count -= 1;
            if *count == 0 {
                self.open_orders_by_owner.remove(owner);
            }
        }
    }

    /// The open orders of all of `owner`'s subaccounts (the owner's own left out).
    pub fn open_orders_of_subaccounts(&self, owner: &Address) -> u32 {
        self.open_orders_by_owner.get(owner).copied().unwrap_or(0)
    }

    /// Whether no transfer was ever applied (so no subaccount is known).
    pub fn is_empty(&self) -> bool {
        self.next_transfer_id == 1 && self.by_owner.is_empty()
    }

    /// How many subaccounts are known, over all owners.
    pub fn count(&self) -> usize {
        self.owner_of.len()
    }

    /// Records `owner`'s subaccount `number` (known from now on); number 0 is the owner and
    /// is not recorded.
    /// Returns its address when it was not known before.
    pub fn register(&mut self, owner: Address, number: u32) -> Option<Address> {
        if number == 0 {
            return None;
        }
        let address = subaccount_address(&owner, number);
        self.by_owner.entry(owner).or_default().insert(number, address);
        self.owner_of
            .insert(address, (owner, number))
            .is_none()
            .then_some(address)
    }

    /// Counts `count` open orders more for `owner`'s subaccounts: those a subaccount already had
    /// when it became known (funds that reached its address otherwise than by a transfer).
    pub(crate) fn add_open_orders(&mut self, owner: Address, count: u32) {
        if count > 0 {
            *self.open_orders_by_owner.entry(owner).or_default() += count;
        }
    }

    /// What the request's `clientTransferId` says, as of `now_ms` (an id remembered until
    /// before `now_ms` is forgotten).
    pub fn remembered(&self, request: &SubaccountTransferRequest, now_ms: u64) -> RememberedTransfer<'_> {
        match self
            .remembered
            .get(&(request.owner, request.client_transfer_id.clone()))
        {
            Some(applied) if applied.timestamp_ms.saturating_add(TRANSFER_ID_MEMORY_MS) > now_ms => {
                if applied.request == *request {
                    RememberedTransfer::Applied(applied)
                } else {
                    RememberedTransfer::Reused
                }
            }
            _ => RememberedTransfer::New,
        }
    }

    /// Whether `owner` may have one more transfer remembered at `now_ms` (after those due are
    /// forgotten).
    pub fn has_room(&self, owner: &Address, now_ms: u64) -> bool {
        let remembered = self.remembered_per_owner.get(owner).copied().unwrap_or(0);
        if remembered < MAX_REMEMBERED_TRANSFERS_PER_OWNER {
            return true;
        }
        let due = self
            .forgotten_at
            .range(..(now_ms.saturating_add(1), Address::from_bytes([0; 20]), String::new()))
            .filter(|(_, due_owner, _)| due_owner == owner)
            .count();
        remembered - due < MAX_REMEMBERED_TRANSFERS_PER_OWNER
    }

    /// Forgets the transfers whose memory ended at or before `now_ms`.
    pub fn forget_due(&mut self, now_ms: u64) {
        while let Some(first) = self.forgotten_at.first() {
            if first.0 > now_ms {
                break;
            }
            let (_, owner, id) = self.forgotten_at.pop_first().expect("a first entry");
            self.remembered.remove(&(owner, id));
            let count = self
                .remembered_per_owner
                .get_mut(&owner)
                .expect("invariant: a remembered transfer is counted");
            *count -= 1;
            if *count == 0 {
                self.remembered_per_owner.remove(&owner);
            }
        }
    }

    /// Records an applied transfer: both subaccounts known, its id remembered. Returns it, and
    /// the addresses of subaccounts it made known.
    pub fn record(&mut self, request: SubaccountTransferRequest, now_ms: u64) -> (SubaccountTransfer, Vec<Address>) {
        let newly_known: Vec<Address> = [request.from_number, request.to_number]
            .into_iter()
            .filter_map(|number| self.register(request.owner, number))
            .collect();
        let transfer = SubaccountTransfer {
            transfer_id: self.next_transfer_id,
            request,
            timestamp_ms: now_ms,
        };
        self.next_transfer_id += 1;
        self.remember(transfer.clone());
        (transfer, newly_known)
    }

    fn remember(&mut self, transfer: SubaccountTransfer) {
        let owner = transfer.request.owner;
        let id = transfer.request.client_transfer_id.clone();
        let forget_at = transfer.timestamp_ms.saturating_add(TRANSFER_ID_MEMORY_MS);
        if let Some(previous) = self.remembered.insert((owner, id.clone()), transfer) {
            // An id used again after its memory ended and before it was forgotten.
            let previous_forget_at = previous.timestamp_ms.saturating_add(TRANSFER_ID_MEMORY_MS);
            self.forgotten_at.remove(&(previous_forget_at, owner, id.clone()));
        } else {
            *self.remembered_per_owner.entry(owner).or_default() += 1;
        }
        self.forgotten_at.insert((forget_at, owner, id));
    }

    /// The registry as plain data.
    pub fn state(&self) -> SubaccountsState {
        SubaccountsState {
            subaccounts: self
                .by_owner
                .iter()
                .flat_map(|(owner, numbers)| numbers.keys().map(move |number| (*owner, *number)))
                .collect(),
            remembered: self.remembered.values().cloned().collect(),
            next_transfer_id: self.next_transfer_id,
        }
    }

    /// The registry of a state; refuses a number out of range or a transfer numbered at or
    /// past the next one.
    pub fn restore(state: SubaccountsState) -> Result<SubaccountRegistry, String> {
        let mut registry = SubaccountRegistry {
            next_transfer_id: state.next_transfer_id.max(1),
            ..SubaccountRegistry::default()
        };
        for (owner, number) in state.subaccounts {
            if number == 0 || number > MAX_SUBACCOUNT_NUMBER {
                return Err(format!("subaccount number {number} of {owner} is out of range"));
            }
            registry.register(owner, number);
        }
        for transfer in state.remembered {
            if transfer.transfer_id >= registry.next_transfer_id {
                return Err(format!("transfer {} is not before the next", transfer.transfer_id));
            }
            registry.remember(transfer);
        }
        Ok(registry)
    }

    /// Feeds the whole state to a hash, in a fixed order.
    pub(crate) fn hash_into(&self, hasher: &mut StateHasher) {
        let state = self.state();
        hasher.update((state.subaccounts.len() as u64).to_be_bytes());
        for (owner, number) in &state.subaccounts {
            hasher.update(owner.as_bytes());
            hasher.update(number.to_be_bytes());
        }
        hasher.update((state.remembered.len() as u64).to_be_bytes());
        for transfer in &state.remembered {
            let request = &transfer.request;
            hasher.update(transfer.transfer_id.to_be_bytes());
            hasher.update(request.owner.as_bytes());
            hasher.update(request.from_number.to_be_bytes());
            hasher.update(request.to_number.to_be_bytes());
            hasher.update(request.asset.0.to_be_bytes());
            hasher.update(request.amount.units().to_be_bytes());
            hasher.update((request.client_transfer_id.len() as u64).to_be_bytes());
            hasher.update(request.client_transfer_id.as_bytes());
            hasher.update(transfer.timestamp_ms.to_be_bytes());
        }
        hasher.update(state.next_transfer_id.to_be_bytes());
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const OWNER: Address = Address::from_bytes([7; 20]);

    fn request(id: &str, amount: u128) -> SubaccountTransferRequest {
        SubaccountTransferRequest {
            owner: OWNER,
            from_number: 0,
            to_number: 3,
            asset: AssetIndex(0),
            amount: Amount::from_units(amount),
            client_transfer_id: id.into(),
        }
    }

    #[test]
    fn a_subaccount_address_is_the_tail_of_the_abi_encoding_s_keccak() {
        // keccak256(abi.encode(address(0x0707…07), uint32(3))): two 32-byte words, the
        // address and the number right-aligned (the Python SDK's test checks it with eth_abi).
        let address = subaccount_address(&OWNER, 3);
        assert_ne!(address, OWNER);
        assert_eq!(subaccount_address(&OWNER, 0), OWNER);
        assert_ne!(subaccount_address(&OWNER, 4), address);
        let mut encoded = [0u8; 64];
        encoded[12..32].copy_from_slice(&[7; 20]);
        encoded[63] = 3;
        assert_eq!(address.as_bytes()[..], Keccak256::digest(encoded)[12..]);
    }

    #[test]
    fn a_transfer_id_is_remembered_for_a_day_and_then_free_again() {
        let mut registry = SubaccountRegistry::default();
        let (first, newly_known) = registry.record(request("t-1", 5), 1_000);
        assert_eq!(newly_known, vec![subaccount_address(&OWNER, 3)]);
        assert_eq!(first.transfer_id, 1);
        assert_eq!(
            registry.remembered(&request("t-1", 5), 2_000),
            RememberedTransfer::Applied(&first)
        );
        assert_eq!(
            registry.remembered(&request("t-1", 6), 2_000),
            RememberedTransfer::Reused
        );
        assert_eq!(registry.remembered(&request("t-2", 5), 2_000), RememberedTransfer::New);
        let after_a_day = 1_000 + TRANSFER_ID_MEMORY_MS;
        assert_eq!(
            registry.remembered(&request("t-1", 6), after_a_day),
            RememberedTransfer::New
        );
        registry.forget_due(after_a_day);
        assert!(registry.state().remembered.is_empty());
        assert_eq!(registry.owner_of(&subaccount_address(&OWNER, 3)), Some((OWNER, 3)));
    }

    #[test]
    fn an_owner_with_its_limit_of_remembered_transfers_waits_for_the_oldest() {
        let mut registry = SubaccountRegistry::default();
        for index in 0..MAX_REMEMBERED_TRANSFERS_PER_OWNER {
            registry.record(request(&format!("t-{index}"), 1), index as u64);
        }
        assert!(!registry.has_room(&OWNER, 20_000));
        assert!(registry.has_room(&Address::from_bytes([8; 20]), 20_000));
        assert!(registry.has_room(&OWNER, TRANSFER_ID_MEMORY_MS));
    }

    #[test]
    fn the_state_restores_to_the_same_registry() {
        let mut registry = SubaccountRegistry::default();
        registry.record(request("a", 1), 10);
        registry.record(request("b", 2), 20);
        let restored = SubaccountRegistry::restore(registry.state()).expect("a valid state");
        assert_eq!(restored.state(), registry.state());
        let mut broken = registry.state();
        broken.subaccounts.push((OWNER, MAX_SUBACCOUNT_NUMBER + 1));
        assert!(SubaccountRegistry::restore(broken).is_err());
    }
}
