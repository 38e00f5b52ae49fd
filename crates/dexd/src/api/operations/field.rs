//! What a parameter is: its name, whether it is required, how it is written ([`Kind`]) and what
//! it means ([`Field`]), and the type a handler reads it as ([`Typed`]). Each kind has one
//! constructor here, which fixes the type its value is read as, so a field's declaration is the
//! only place its name, kind, requirement and bounds are written.
//!
//! Reading is `api::params`'s (`Params::read` and its kin); this module holds no behaviour but
//! the parsing of a choice's words.

use std::marker::PhantomData;

use dexd_core::{
    Address, AssetIndex, CandleInterval, Decimal, Direction, OrderId, OrderType, PairIndex, TimeInForce,
    TriggerCondition, CANDLE_INTERVAL_NAMES, DIRECTION_NAMES, ORDER_TYPE_NAMES, TIME_IN_FORCE_NAMES,
    TRIGGER_CONDITION_NAMES,
};
use dexd_crypto::PrivateKey;

/// How a parameter is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A chain id: decimal digits (a JSON integer is accepted too).
    ChainId,
    /// `0x` + 40 hex digits.
    Address,
    /// An asset symbol.
    Asset,
    /// A pair, `BASE/QUOTE`.
    Pair,
    /// A decimal string.
    Decimal,
    /// `true` / `false`.
    Bool,
    /// A whole number (fits in 64 bits).
    Integer,
    /// A count from 1 to `max` (a page's length, a book's depth); `default` when left out.
    Count {
        /// The largest accepted.
        max: u64,
        /// The count taken when the field is left out.
        default: u64,
    },
    /// A time in ms since the epoch.
    Milliseconds,
    /// A list cursor: the `nextCursor` of a previous page (1 to 19 digits).
    Cursor,
    /// Free text within documented limits.
    Text,
    /// `0x` + 64 hex digits, a secp256k1 secret key.
    PrivateKey,
    /// `0x` + 64 hex digits, an order id.
    OrderId,
    /// A uint256 in decimal digits.
    Uint256,
    /// `0x` + 130 hex digits, a 65-byte signature.
    Signature,
    /// One of a fixed list.
    Choice(&'static [&'static str]),
    /// The dead man's switch's timeout: 0, or 5,000 to 86,400,000 ms (digits or a JSON integer).
    SwitchTimeout,
    /// An agent's name: 1 to 32 of `A-Z a-z 0-9 . _ -`.
    AgentName,
    /// A one-cancels-other group's name: 1 to 36 of `A-Z a-z 0-9 . _ : -`.
    GroupName,
    /// An order's expiry: ms since the epoch, at most 13 digits (0: none); digits or a JSON
    /// integer.
    ExpiresAt,
    /// A subaccount's number: 0 (the owner) to 1000; digits or a JSON integer.
    Subaccount,
    /// A transfer's `clientTransferId`: 1 to 64 of `A-Z a-z 0-9 . _ : -`, required.
    TransferId,
    /// A list of 1 to `max` objects, each with `fields` (a batch's items): a JSON array, or in
    /// form data a string holding one.
    Items {
        /// Each item's fields.
        fields: &'static [Field],
        /// The most items.
        max: usize,
    },
}

/// One parameter of an operation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Field {
    /// The parameter's name.
    pub name: &'static str,
    /// Whether it must be given.
    pub required: bool,
    /// How it is written.
    pub kind: Kind,
    /// What it means.
    pub description: &'static str,
}

pub(crate) const fn field(name: &'static str, required: bool, kind: Kind, description: &'static str) -> Field {
    Field {
        name,
        required,
        kind,
        description,
    }
}

/// A field of the table with the type its value is read as (`Params::read`): made only by the
/// constructors below, one per kind, so a field cannot be read as another kind's type.
#[derive(Debug)]
pub struct Typed<T> {
    /// The field as the table lists it.
    pub field: Field,
    read_as: PhantomData<fn() -> T>,
}

impl<T> Clone for Typed<T> {
    fn clone(&self) -> Self {
        *self
    }
}

impl<T> Copy for Typed<T> {}

const fn typed<T>(name: &'static str, required: bool, kind: Kind, description: &'static str) -> Typed<T> {
    Typed {
        field: field(name, required, kind, description),
        read_as: PhantomData,
    }
}

/// The value of an [`Kind::Items`] field: its items, each read as parameters of its own.
#[derive(Debug)]
pub enum ItemList {}

/// An enum a [`Kind::Choice`] names by one of its contract words.
pub trait WireWord: Sized + 'static {
    /// Every word, in the contract's order.
    const NAMES: &'static [&'static str];
    /// The value a word names (any case unless the enum says otherwise).
    fn from_word(text: &str) -> Option<Self>;
}

/// The word of `names` that `text` is, in any case.
fn word_in_any_case<'a>(names: &[&'a str], text: &str) -> Option<&'a str> {
    names.iter().find(|name| name.eq_ignore_ascii_case(text)).copied()
}

macro_rules! any_case_words {
    ($($type:ty => $names:expr),* $(,)?) => {
        $(impl WireWord for $type {
            const NAMES: &'static [&'static str] = $names;
            fn from_word(text: &str) -> Option<Self> {
                word_in_any_case(Self::NAMES, text).and_then(<$type>::from_wire_name)
            }
        })*
    };
}

any_case_words!(
    OrderType => ORDER_TYPE_NAMES,
    Direction => DIRECTION_NAMES,
    TimeInForce => TIME_IN_FORCE_NAMES,
    TriggerCondition => TRIGGER_CONDITION_NAMES,
);

/// A candle interval is exact, as the contract writes it.
impl WireWord for CandleInterval {
    const NAMES: &'static [&'static str] = CANDLE_INTERVAL_NAMES;
    fn from_word(text: &str) -> Option<Self> {
        CandleInterval::from_wire_name(text)
    }
}

/// `chainId`, always required.
pub(crate) const fn chain_id(description: &'static str) -> Typed<u64> {
    typed("chainId", true, Kind::ChainId, description)
}
/// An address.
pub(crate) const fn address(name: &'static str, required: bool, description: &'static str) -> Typed<Address> {
    typed(name, required, Kind::Address, description)
}
/// An asset of the request's chain, by its symbol.
pub(crate) const fn asset(name: &'static str, description: &'static str) -> Typed<AssetIndex> {
    typed(name, true, Kind::Asset, description)
}
/// A pair of the request's chain, `BASE/QUOTE`.
pub(crate) const fn pair(name: &'static str, required: bool, description: &'static str) -> Typed<PairIndex> {
    typed(name, required, Kind::Pair, description)
}
/// A decimal string.
pub(crate) const fn decimal(name: &'static str, required: bool, description: &'static str) -> Typed<Decimal> {
    typed(name, required, Kind::Decimal, description)
}
/// `true` or `false`, optional.
pub(crate) const fn flag(name: &'static str, description: &'static str) -> Typed<bool> {
    typed(name, false, Kind::Bool, description)
}
/// A whole number that fits in 64 bits.
pub(crate) const fn whole_number(name: &'static str, required: bool, description: &'static str) -> Typed<u64> {
    typed(name, required, Kind::Integer, description)
}
/// A time in ms since the epoch.
pub(crate) const fn milliseconds(name: &'static str, required: bool, description: &'static str) -> Typed<u64> {
    typed(name, required, Kind::Milliseconds, description)
}
/// A count from 1 to `max`, `default` when left out.
pub(crate) const fn count(name: &'static str, max: u64, default: u64, description: &'static str) -> Typed<usize> {
    typed(name, false, Kind::Count { max, default }, description)
}
/// A list's cursor, optional.
pub(crate) const fn cursor(description: &'static str) -> Typed<u64> {
    typed("cursor", false, Kind::Cursor, description)
}
/// A client's label (`clientOrderId`), optional.
pub(crate) const fn label(name: &'static str, description: &'static str) -> Typed<String> {
    typed(name, false, Kind::Text, description)
}
/// The account's secret key, optional (a signature may stand instead).
pub(crate) const fn private_key(description: &'static str) -> Typed<PrivateKey> {
    typed("privateKey", false, Kind::PrivateKey, description)
}
/// An order id, required.
pub(crate) const fn order_id(name: &'static str, description: &'static str) -> Typed<OrderId> {
    typed(name, true, Kind::OrderId, description)
}
/// A uint256 in decimal digits, optional.
pub(crate) const fn uint256(name: &'static str, description: &'static str) -> Typed<[u8; 32]> {
    typed(name, false, Kind::Uint256, description)
}
/// A 65-byte signature, optional.
pub(crate) const fn signature(name: &'static str, description: &'static str) -> Typed<[u8; 65]> {
    typed(name, false, Kind::Signature, description)
}
/// One of an enum's contract words.
pub(crate) const fn choice<T: WireWord>(name: &'static str, required: bool, description: &'static str) -> Typed<T> {
    typed(name, required, Kind::Choice(T::NAMES), description)
}
/// The dead man's switch's timeout, required.
pub(crate) const fn switch_timeout(name: &'static str, description: &'static str) -> Typed<u64> {
    typed(name, true, Kind::SwitchTimeout, description)
}
/// An agent's name, required.
pub(crate) const fn agent_name(name: &'static str, description: &'static str) -> Typed<String> {
    typed(name, true, Kind::AgentName, description)
}
/// A one-cancels-other group's name, optional.
pub(crate) const fn group_name(name: &'static str, description: &'static str) -> Typed<String> {
    typed(name, false, Kind::GroupName, description)
}
/// An order's expiry, optional (0: none).
pub(crate) const fn expires_at(name: &'static str, description: &'static str) -> Typed<u64> {
    typed(name, false, Kind::ExpiresAt, description)
}
/// A subaccount's number, 0 to 1000.
pub(crate) const fn subaccount(name: &'static str, required: bool, description: &'static str) -> Typed<u32> {
    typed(name, required, Kind::Subaccount, description)
}
/// A transfer's own id, required.
pub(crate) const fn transfer_id(name: &'static str, description: &'static str) -> Typed<String> {
    typed(name, true, Kind::TransferId, description)
}
/// A batch's items, required.
pub(crate) const fn items(
    name: &'static str,
    fields: &'static [Field],
    max: usize,
    description: &'static str,
) -> Typed<ItemList> {
    typed(name, true, Kind::Items { fields, max }, description)
}
