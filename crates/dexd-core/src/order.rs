//! What an order is: its terms as placed, and its state as it fills or is cancelled.
//!
//! These are plain data. The rules that move an order from one state to the next live in
//! [`crate::engine`]; the storage of resting orders in price-time order lives in [`crate::book`].

use crate::money::{Address, Amount, OrderId, PairIndex, Price, Quantity};

/// Which way an order trades base against quote.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Pays quote, receives base.
    Buy,
    /// Pays base, receives quote.
    Sell,
}

impl Direction {
    /// The other direction.
    pub fn opposite(self) -> Direction {
        match self {
            Direction::Buy => Direction::Sell,
            Direction::Sell => Direction::Buy,
        }
    }
}

/// Whether an order names its worst price.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderType {
    /// Trades at the given price or better; may rest.
    Limit,
    /// Trades at any price, immediately, and never rests.
    Market,
}

/// How long an order's unfilled part lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TimeInForce {
    /// Rests until filled or cancelled.
    GoodTillCancelled,
    /// Fills what it can at once; the rest is cancelled.
    ImmediateOrCancel,
    /// Fills completely at once, or is rejected and changes nothing.
    FillOrKill,
}

/// Where an order is in its life.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum OrderStatus {
    /// Resting in the book, possibly partly filled.
    Open,
    /// Completely filled.
    Filled,
    /// Cancelled, possibly after partial fills.
    Cancelled,
}

/// Why an order was cancelled, for the record.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CancelReason {
    /// Its owner asked.
    Requested,
    /// An incoming order of the same account would have traded with it.
    SelfTradePrevention,
    /// The part of an IOC or market order that could not fill at once.
    UnfilledRemainder,
    /// The account's dead man's switch fired.
    Switch,
}

/// The terms of a new order, as the caller checked and converted them.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NewOrder {
    /// The order's identity, unique on the chain.
    pub order_id: OrderId,
    /// The caller's own label, unique among the account's open orders.
    pub client_order_id: Option<String>,
    /// Who places it.
    pub account: Address,
    /// On which pair.
    pub pair: PairIndex,
    /// Limit or market.
    pub order_type: OrderType,
    /// Buy or sell.
    pub direction: Direction,
    /// GTC, IOC or FOK (market orders act as IOC whatever this says).
    pub time_in_force: TimeInForce,
    /// Rejected rather than trading on arrival.
    pub post_only: bool,
    /// The limit price; `None` exactly for market orders.
    pub price: Option<Price>,
    /// How much base to trade.
    pub quantity: Quantity,
}

/// An order and its current state.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OrderRecord {
    /// The terms as placed.
    pub terms: NewOrder,
    /// How much has filled.
    pub filled: Quantity,
    /// The quote value of the fills, in quote units.
    pub cost: Amount,
    /// The fee paid so far, in the asset the order receives.
    pub fee: Amount,
    /// Where the order is in its life.
    pub status: OrderStatus,
    /// Why it was cancelled, when it was.
    pub cancel_reason: Option<CancelReason>,
    /// What the order still locks of the asset it pays.
    pub locked: Amount,
    /// When it was accepted, in ms since the epoch.
    pub created_at_ms: u64,
    /// When it last changed, in ms since the epoch.
    pub updated_at_ms: u64,
    /// Its place in time priority: lower was first. Unique on the chain.
    pub sequence: u64,
}

impl OrderRecord {
    /// The quantity not yet filled.
    pub fn remaining(&self) -> Quantity {
        self.terms
            .quantity
            .checked_sub(self.filled)
            .expect("invariant: an order never fills more than its quantity")
    }
}
