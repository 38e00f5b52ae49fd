//! The values the store reads and writes, shared by its files and by its callers: an order with
//! its signature, the authorization journaled with a command, a journal entry, a projection,
//! and the paging of list reads.
//!
//! Plain data; nothing here touches a database.

use dexd_core::{BatchSlot, Event, Nonce, NonceClaim, OrderId, OrderRecord};

/// An order with its signature.
#[derive(Debug, Clone)]
pub struct StoredOrder {
    /// The order's latest state.
    pub record: OrderRecord,
    /// The nonce of the signed EIP-712 message.
    pub nonce: [u8; 32],
    /// The expiry of the signed message, in ms since the epoch.
    pub expiry_ms: u64,
    /// The 65-byte EIP-712 signature (of its batch, for an order of a batch signed once).
    pub signature: [u8; 65],
    /// Its place in its batch, for an order of a batch signed once.
    pub batch: Option<BatchPlace>,
}

/// An order's place in a batch signed once (contract version 4): its index and the struct hash of
/// every order of the batch, which with the batch's signature proves the order was signed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchPlace {
    /// The order's index in the batch (under 50).
    pub index: u8,
    /// `hashStruct(Order)` of each order of the batch, in order (1 to 50; shared by every order
    /// of the batch).
    pub order_hashes: std::sync::Arc<[[u8; 32]]>,
}

/// The signature that authorised a command, journaled with it: always for a new order (whoever
/// signed it), and for every command a client signed itself, whose nonce must be claimed again
/// on replay.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Authorization {
    /// The new order this signature placed, if the command places one.
    pub order_id: Option<OrderId>,
    /// The signed message's nonce.
    pub nonce: [u8; 32],
    /// The signed message's expiry, in ms since the epoch.
    pub expiry_ms: u64,
    /// The 65-byte signature.
    pub signature: [u8; 65],
    /// Whether the client signed (its nonce is claimed) or the venue signed with the key.
    pub client_signed: bool,
    /// For an order of a batch signed once, its place in the batch (the nonce, expiry and
    /// signature above are the batch's).
    pub batch: Option<BatchPlace>,
    /// For an order of a client-signed batch: its command claims the batch's nonce. The first of
    /// the batch's orders the engine applies claims it and the others follow (the writer
    /// decides, in one group), so that a batch sent again is refused whole.
    pub claims_batch_nonce: bool,
    /// For a withdrawal a contract account approved (ERC-1271): the block at which the venue
    /// asked the vault, so that an auditor asks at the same block (an approval may lapse).
    pub approved_at_block: Option<u64>,
}

impl Authorization {
    /// The nonce claim the command makes: a client's, or the venue's for a `privateKey`
    /// request (the engine holds that one to a window around the command's time). Every order
    /// of a client-signed batch carries one: the claimant's takes the nonce, a follower's is
    /// held to that claim, so that the engine applies each order of the batch at most once.
    pub fn claim(&self) -> NonceClaim {
        NonceClaim {
            venue_signed: !self.client_signed,
            nonce: Nonce::from_bytes(self.nonce),
            expiry_ms: self.expiry_ms,
            batch: self.batch.as_ref().map(|place| BatchSlot {
                identity: self.signature[..32].try_into().expect("a signature's r is 32 bytes"),
                index: place.index,
                starts: self.claims_batch_nonce,
            }),
        }
    }
}

/// Which records a page wants.
#[derive(Debug, Clone, Copy)]
pub struct PageRequest {
    /// At most this many records.
    pub limit: usize,
    /// Only records older than this cursor (from the previous page's `next_cursor`).
    pub cursor: Option<u64>,
    /// Only records at or after this time.
    pub start_ms: u64,
    /// Only records at or before this time.
    pub end_ms: u64,
}

/// One page, newest first.
#[derive(Debug, Clone)]
pub struct Page<T> {
    /// The records.
    pub items: Vec<T>,
    /// The cursor of the next page, when more records remain.
    pub next_cursor: Option<u64>,
}
/// One accepted command, as the journal keeps it.
#[derive(Debug)]
pub struct JournalEntry {
    /// Its place in the chain's journal, from 1, without gaps.
    pub sequence: u64,
    /// The time the engine ran it at.
    pub time_ms: u64,
    /// The encoded command.
    pub command: Vec<u8>,
    /// The signature of a new order.
    pub authorization: Option<Authorization>,
}
/// The events of one command, shared by its reply and its projection.
pub type Events = std::sync::Arc<Vec<Event>>;
/// What one journaled command did, for the history tables and the live streams.
#[derive(Debug, Clone)]
pub struct Projection {
    /// The command's journal sequence.
    pub sequence: u64,
    /// Its events.
    pub events: Events,
    /// The signature of a new order.
    pub authorization: Option<Authorization>,
}
/// The row number of each closed order not yet in the id index, by order id.
pub(super) type UnindexedOrderIds = std::collections::HashMap<[u8; 32], i64>;
