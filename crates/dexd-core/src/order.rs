//! What an order is: its terms as placed, and its state as it fills or is cancelled.
//!
//! These are plain data. An order may wait for a trigger ([`Trigger`]), belong to a
//! one-cancels-other group and expire ([`OrderConditions`]). The rules that move an order from one state to the next live in
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
    /// A trigger order waiting for its trigger: it holds its lock and is open, but is in no
    /// book.
    Untriggered,
}

impl OrderStatus {
    /// Whether an order in this status is open: resting, or waiting for its trigger (it holds
    /// a lock, is listed, and can be cancelled).
    pub fn is_open(self) -> bool {
        matches!(self, OrderStatus::Open | OrderStatus::Untriggered)
    }
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
    /// The other order of its one-cancels-other group filled or fired.
    OneCancelsOther,
    /// Its `expiresAt` came while it was open.
    Expired,
    /// Its account asked the vault for a withdrawal on chain of the token it held, and the
    /// venue cancelled it to free the amount.
    ForcedWithdrawal,
}

/// Which way a trade's price must move to fire a trigger order.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TriggerCondition {
    /// Fires on a trade at or above the trigger price.
    Above,
    /// Fires on a trade at or below the trigger price.
    Below,
}

/// A trigger order's trigger: the price and the side of it a trade must print on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Trigger {
    /// The trigger price, on the pair's tick.
    pub price: Price,
    /// Above or below.
    pub condition: TriggerCondition,
}

impl Trigger {
    /// Whether a trade at `trade_price` meets the trigger.
    pub fn is_met_by(&self, trade_price: Price) -> bool {
        match self.condition {
            TriggerCondition::Above => trade_price >= self.price,
            TriggerCondition::Below => trade_price <= self.price,
        }
    }
}

/// The longest a one-cancels-other group's name may be, in characters.
pub const MAX_OCO_GROUP_CHARS: usize = 36;
/// How far ahead of its placement an order's expiry must be at least, in ms.
pub const MIN_EXPIRY_AHEAD_MS: u64 = 5_000;
/// How far ahead of its placement an order's expiry may be at most, in ms (366 days): a later
/// one is a mistake (seconds sent for milliseconds, or the reverse), not a wish.
pub const MAX_EXPIRY_AHEAD_MS: u64 = 366 * 86_400_000;

/// What an order may carry beyond its price and amount (contract version 4): a trigger, a
/// one-cancels-other group and an expiry. All absent by default.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OrderConditions {
    /// The order waits, untriggered, until a trade meets this.
    pub trigger: Option<Trigger>,
    /// The one-cancels-other group it belongs to (1 to [`MAX_OCO_GROUP_CHARS`] characters;
    /// the name is the chain's, and both orders of a group are one account's).
    pub oco_group: Option<String>,
    /// When the order is cancelled if still open, in ms since the epoch.
    pub expires_at_ms: Option<u64>,
    /// The TWAP this order is a slice of (contract version 5): set by the engine on the orders
    /// it places for a TWAP, never by a client.
    pub twap_id: Option<u64>,
    /// The order was journaled before these conditions existed, and its account signed the
    /// `Order` type without them: what rebuilds its signed message needs to know (read from
    /// old journals, never set on a new order). The engine ignores it.
    pub signed_without_conditions: bool,
}

impl OrderConditions {
    /// Whether the order carries none of the conditions.
    pub fn is_empty(&self) -> bool {
        self.trigger.is_none() && self.oco_group.is_none() && self.expires_at_ms.is_none() && self.twap_id.is_none()
    }

    /// The conditions as a [`NewOrder`] holds them: `None` when there is nothing to hold, so
    /// that two orders with the same terms are equal however they were built.
    pub fn boxed(self) -> Option<Box<OrderConditions>> {
        (!self.is_empty() || self.signed_without_conditions).then(|| Box::new(self))
    }
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
    /// Its trigger, one-cancels-other group and expiry, if any: `None` for an order without
    /// any (most orders), boxed so that they cost every other order 8 bytes, not 64 (orders are
    /// moved by value through placement and matching). Read with [`NewOrder::conditions`], set
    /// with [`NewOrder::conditions_mut`].
    pub conditions: Option<Box<OrderConditions>>,
}

/// An open order replaced by a new one in one step (`Command::AmendOrder`): the old order is
/// cancelled and the replacement placed, or, if the replacement is refused, the old order stays
/// as it was.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Amend {
    /// Who asks.
    pub account: Address,
    /// The order replaced.
    pub order_id: OrderId,
    /// The new order: same account, pair, direction, type, time in force, post-only flag and
    /// client order id as the old one, a new id, the new price and amount.
    pub replacement: NewOrder,
    /// When the client left the amount out, the old order's remaining amount the
    /// replacement's was taken from: the amend is refused (`OrderChanged`) if the old order
    /// has filled since, so that nothing filled is sold again.
    pub amount_from_remaining: Option<Quantity>,
    /// Whether the client left the price out (it signed `""`), so that the replacement
    /// kept the old order's price: the signed message is rebuilt from the command.
    pub keeps_price: bool,
}

/// What an order without conditions has.
static NO_CONDITIONS: OrderConditions = OrderConditions {
    trigger: None,
    oco_group: None,
    expires_at_ms: None,
    twap_id: None,
    signed_without_conditions: false,
};

impl NewOrder {
    /// The order's conditions (all absent for most orders).
    pub fn conditions(&self) -> &OrderConditions {
        self.conditions.as_deref().unwrap_or(&NO_CONDITIONS)
    }

    /// The order's conditions, to change them.
    pub fn conditions_mut(&mut self) -> &mut OrderConditions {
        self.conditions.get_or_insert_with(Default::default)
    }
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
    /// When it was placed, in order: lower was first. Unique on the chain, and the order's
    /// identity in the stores and streams. It is the order's time priority in the book, except
    /// for a fired trigger order, which keeps its sequence and rests behind the orders already
    /// at its price when it fires.
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
