//! Newtypes for money and identity: amounts, prices, quantities, fee rates, addresses, order ids.
//!
//! Every type here has private insides, is built by a constructor that states its unit, and does
//! checked arithmetic only: an overflow is a `None` that the caller turns into a rejection, never a
//! wrap. This module does not convert to or from decimal strings: [`crate::pair`] does that,
//! because only a pair knows its tick and step.

use std::fmt;

/// A quantity of one asset in its smallest unit (wei for ETH, 10^-6 USDC for USDC).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Amount(u128);

impl Amount {
    /// Zero units.
    pub const ZERO: Amount = Amount(0);

    /// An amount of `units` smallest units.
    pub const fn from_units(units: u128) -> Amount {
        Amount(units)
    }

    /// The amount in smallest units.
    pub const fn units(self) -> u128 {
        self.0
    }

    /// Whether the amount is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: Amount) -> Option<Amount> {
        self.0.checked_add(other.0).map(Amount)
    }

    /// `self - other`, or `None` when `other` is larger.
    pub fn checked_sub(self, other: Amount) -> Option<Amount> {
        self.0.checked_sub(other.0).map(Amount)
    }

    /// `self - other`, or zero when `other` is larger (what is left to cover, rounded to
    /// nothing below zero).
    pub fn saturating_sub(self, other: Amount) -> Amount {
        Amount(self.0.saturating_sub(other.0))
    }

    /// The smaller of two amounts.
    pub fn min(self, other: Amount) -> Amount {
        Amount(self.0.min(other.0))
    }
}

/// A price as a whole number of its pair's ticks: the price in quote per base is
/// `ticks × tick size`. A price means nothing without its pair.
///
/// Zero is not a price, so the tick count is a `NonZeroU64` and an `Option<Price>` takes no
/// more room than the price itself.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Price(std::num::NonZeroU64);

impl Price {
    /// A price of `ticks` ticks; zero is not a price.
    pub const fn from_ticks(ticks: u64) -> Option<Price> {
        match std::num::NonZeroU64::new(ticks) {
            Some(ticks) => Some(Price(ticks)),
            None => None,
        }
    }

    /// The price in ticks.
    pub const fn ticks(self) -> u64 {
        self.0.get()
    }
}

/// An order quantity as a whole number of its pair's lots: the amount in base units is
/// `lots × step units`. A quantity means nothing without its pair.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct Quantity(u64);

impl Quantity {
    /// No lots.
    pub const ZERO: Quantity = Quantity(0);

    /// A quantity of `lots` lots.
    pub const fn from_lots(lots: u64) -> Quantity {
        Quantity(lots)
    }

    /// The quantity in lots.
    pub const fn lots(self) -> u64 {
        self.0
    }

    /// Whether the quantity is zero.
    pub const fn is_zero(self) -> bool {
        self.0 == 0
    }

    /// `self + other`, or `None` on overflow.
    pub fn checked_add(self, other: Quantity) -> Option<Quantity> {
        self.0.checked_add(other.0).map(Quantity)
    }

    /// `self - other`, or `None` when `other` is larger.
    pub fn checked_sub(self, other: Quantity) -> Option<Quantity> {
        self.0.checked_sub(other.0).map(Quantity)
    }

    /// The smaller of two quantities.
    pub fn min(self, other: Quantity) -> Quantity {
        Quantity(self.0.min(other.0))
    }
}

/// The number of parts a fee rate is counted in: one million, so a rate is exact to 0.0001 %.
pub const FEE_RATE_PARTS: u32 = 1_000_000;

/// A fee rate in parts per million of what a side receives, at most 100 %.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct FeeRate(u32);

impl FeeRate {
    /// No fee.
    pub const ZERO: FeeRate = FeeRate(0);

    /// A rate of `parts_per_million` / 1,000,000, or `None` above 100 %.
    pub const fn from_parts_per_million(parts_per_million: u32) -> Option<FeeRate> {
        if parts_per_million > FEE_RATE_PARTS {
            None
        } else {
            Some(FeeRate(parts_per_million))
        }
    }

    /// The rate in parts per million.
    pub const fn parts_per_million(self) -> u32 {
        self.0
    }

    /// The fee on `received`, rounded down to a whole unit: the account never pays more than the
    /// stated rate, and the venue's share of a fraction of a unit stays with the account.
    pub fn fee_rounded_down(self, received: Amount) -> Amount {
        let fee = crate::decimal::multiply_divide_rounding_down(
            received.units(),
            u128::from(self.0),
            u128::from(FEE_RATE_PARTS),
        )
        .expect("a fee of at most 100 % of a u128 fits in a u128");
        Amount(fee)
    }
}

/// An account: a 20-byte address, shown as `0x` + 40 lowercase hex digits by this crate
/// (checksummed casing is the API layer's concern).
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct Address([u8; 20]);

/// Hashes the last eight bytes only. An address is the tail of a keccak-256 digest, so those
/// bytes are as uniform as the whole, and no one can choose them without grinding keys; hashing
/// one word instead of twenty bytes is a large share of the engine's time.
impl std::hash::Hash for Address {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let tail: [u8; 8] = self.0[12..].try_into().expect("20 bytes have a tail of 8");
        state.write_u64(u64::from_be_bytes(tail));
    }
}

impl Address {
    /// The address with these 20 bytes.
    pub const fn from_bytes(bytes: [u8; 20]) -> Address {
        Address(bytes)
    }

    /// The 20 bytes of the address.
    pub const fn as_bytes(&self) -> &[u8; 20] {
        &self.0
    }
}

impl fmt::Debug for Address {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "Address({self})")
    }
}

impl fmt::Display for Address {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_prefixed_hex(formatter, &self.0)
    }
}

/// Writes `0x` and the lower-case hex digits of `bytes` (at most 32) in one call: ids and
/// addresses are printed in every answer, and a formatting call per byte was a visible cost.
fn write_prefixed_hex(formatter: &mut fmt::Formatter<'_>, bytes: &[u8]) -> fmt::Result {
    const DIGITS: &[u8; 16] = b"0123456789abcdef";
    let mut text = [0u8; 2 + 2 * 32];
    text[..2].copy_from_slice(b"0x");
    for (index, byte) in bytes.iter().take(32).enumerate() {
        text[2 + 2 * index] = DIGITS[usize::from(byte >> 4)];
        text[3 + 2 * index] = DIGITS[usize::from(byte & 0x0f)];
    }
    let length = 2 + 2 * bytes.len().min(32);
    formatter.write_str(std::str::from_utf8(&text[..length]).expect("hex digits are ASCII"))
}

/// An order's identity: 32 bytes chosen by the caller (dexd uses the order's EIP-712 digest).
#[derive(Clone, Copy, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct OrderId([u8; 32]);

/// Hashes the last eight bytes only: an order id is a keccak-256 digest over terms that include
/// a salt the server draws, so those bytes are uniform and cannot be chosen by a client.
impl std::hash::Hash for OrderId {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        let tail: [u8; 8] = self.0[24..].try_into().expect("32 bytes have a tail of 8");
        state.write_u64(u64::from_be_bytes(tail));
    }
}

impl OrderId {
    /// The order id with these 32 bytes.
    pub const fn from_bytes(bytes: [u8; 32]) -> OrderId {
        OrderId(bytes)
    }

    /// The 32 bytes of the id.
    pub const fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

impl fmt::Debug for OrderId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "OrderId({self})")
    }
}

impl fmt::Display for OrderId {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write_prefixed_hex(formatter, &self.0)
    }
}

/// The position of an asset in its chain's asset list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct AssetIndex(pub u16);

/// The position of a pair in its chain's pair list.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct PairIndex(pub u16);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fee_rounds_down_and_never_exceeds_the_rate() {
        let rate = FeeRate::from_parts_per_million(1_000).unwrap(); // 0.1 %
        assert_eq!(
            rate.fee_rounded_down(Amount::from_units(1_000_000)),
            Amount::from_units(1_000)
        );
        assert_eq!(rate.fee_rounded_down(Amount::from_units(999)), Amount::ZERO);
        assert_eq!(rate.fee_rounded_down(Amount::from_units(1_999)), Amount::from_units(1));
        let full = FeeRate::from_parts_per_million(FEE_RATE_PARTS).unwrap();
        assert_eq!(
            full.fee_rounded_down(Amount::from_units(u128::MAX)),
            Amount::from_units(u128::MAX)
        );
        assert!(FeeRate::from_parts_per_million(FEE_RATE_PARTS + 1).is_none());
    }

    #[test]
    fn checked_arithmetic_refuses_overflow() {
        assert!(Amount::from_units(u128::MAX)
            .checked_add(Amount::from_units(1))
            .is_none());
        assert!(Amount::ZERO.checked_sub(Amount::from_units(1)).is_none());
        assert!(Quantity::from_lots(u64::MAX)
            .checked_add(Quantity::from_lots(1))
            .is_none());
        assert!(Price::from_ticks(0).is_none());
    }

    #[test]
    fn identities_print_as_lowercase_hex() {
        let mut bytes = [0u8; 20];
        bytes[19] = 0xab;
        assert_eq!(
            Address::from_bytes(bytes).to_string(),
            format!("0x{}ab", "0".repeat(38))
        );
        let id: [u8; 32] = std::array::from_fn(|index| (index as u8).wrapping_mul(37));
        let expected: String = id.iter().map(|byte| format!("{byte:02x}")).collect();
        assert_eq!(OrderId::from_bytes(id).to_string(), format!("0x{expected}"));
        assert_eq!(
            format!("{:?}", OrderId::from_bytes(id)),
            format!("OrderId(0x{expected})")
        );
    }
}
