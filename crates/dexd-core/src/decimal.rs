//! Exact decimal numbers as they cross the wire: parsing and canonical formatting.
//!
//! A [`Decimal`] is a non-negative mantissa with a power-of-ten scale, parsed from a strict
//! string grammar (`digits` or `digits.digits`) with no rounding anywhere. It is the bridge
//! between the strings of the HTTP contract and the integer units the engine works in.
//! This module does not know about assets, ticks or steps: see [`crate::pair`] for those.

use std::fmt;

/// The largest scale (digits after the point) a decimal may carry.
///
/// 10^38 is the largest power of ten that fits in a `u128`.
pub const MAX_DECIMAL_SCALE: u32 = 38;

/// The longest decimal string accepted, in bytes; longer input is refused before any work.
pub const MAX_DECIMAL_STRING_BYTES: usize = 80;

/// An exact non-negative decimal: `mantissa / 10^scale`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Decimal {
    mantissa: u128,
    scale: u32,
}

/// Why a string is not an acceptable decimal.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DecimalError {
    /// The string is empty.
    Empty,
    /// The string does not follow the grammar `digits[.digits]` (exponents, signs, spaces,
    /// `NaN`, `Infinity` and a lone point all land here).
    Malformed,
    /// The string starts with a minus sign.
    Negative,
    /// The value does not fit in 128 bits, or has more than [`MAX_DECIMAL_SCALE`] decimals.
    Overflow,
    /// The value has more decimals than the target allows.
    TooPrecise,
}

impl fmt::Display for DecimalError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        let text = match self {
            DecimalError::Empty => "is empty",
            DecimalError::Malformed => "is not a plain decimal string such as \"1.5\" (no sign, exponent or spaces)",
            DecimalError::Negative => "must not be negative",
            DecimalError::Overflow => "is too large",
            DecimalError::TooPrecise => "has more decimals than allowed",
        };
        formatter.write_str(text)
    }
}

impl std::error::Error for DecimalError {}

/// 10^exponent, or `None` when it does not fit in a `u128`.
pub fn power_of_ten(exponent: u32) -> Option<u128> {
    10u128.checked_pow(exponent)
}

impl Decimal {
    /// Zero.
    pub const ZERO: Decimal = Decimal { mantissa: 0, scale: 0 };

    /// Parses the strict grammar `digits` or `digits.digits`, exactly.
    pub fn parse(text: &str) -> Result<Decimal, DecimalError> {
        if text.is_empty() {
            return Err(DecimalError::Empty);
        }
        if text.len() > MAX_DECIMAL_STRING_BYTES {
            return Err(DecimalError::Overflow);
        }
        if let Some(rest) = text.strip_prefix('-') {
            return match Decimal::parse(rest) {
                Ok(_) => Err(DecimalError::Negative),
                Err(DecimalError::Negative) => Err(DecimalError::Malformed),
                Err(error) => Err(error),
            };
        }
        let (integer_part, fraction_part) = match text.split_once('.') {
            Some((integer_part, fraction_part)) => (integer_part, Some(fraction_part)),
            None => (text, None),
        };
        let digits_only = |part: &str| !part.is_empty() && part.bytes().all(|b| b.is_ascii_digit());
        if !digits_only(integer_part) {
            return Err(DecimalError::Malformed);
        }
        let fraction_part = fraction_part.unwrap_or("");
        if text.contains('.') && !digits_only(fraction_part) {
            return Err(DecimalError::Malformed);
        }
        let scale = u32::try_from(fraction_part.len()).map_err(|_| DecimalError::Overflow)?;
        if scale > MAX_DECIMAL_SCALE {
            return Err(DecimalError::Overflow);
        }
        let mut mantissa: u128 = 0;
        for byte in integer_part.bytes().chain(fraction_part.bytes()) {
            mantissa = mantissa
                .checked_mul(10)
                .and_then(|value| value.checked_add(u128::from(byte - b'0')))
                .ok_or(DecimalError::Overflow)?;
        }
        Ok(Decimal { mantissa, scale }.normalized())
    }

    /// Builds `mantissa / 10^scale`.
    pub fn from_parts(mantissa: u128, scale: u32) -> Result<Decimal, DecimalError> {
        if scale > MAX_DECIMAL_SCALE {
            return Err(DecimalError::Overflow);
        }
        Ok(Decimal { mantissa, scale }.normalized())
    }

    /// The value as a whole number of `10^-decimals` units, exactly, or an error when it has more
    /// decimals than that (`TooPrecise`) or does not fit (`Overflow`).
    pub fn to_scaled_units(self, decimals: u32) -> Result<u128, DecimalError> {
        if self.scale > decimals {
            // `normalized` removed trailing zeros, so a larger scale always means lost digits.
            return Err(DecimalError::TooPrecise);
        }
        let factor = power_of_ten(decimals - self.scale).ok_or(DecimalError::Overflow)?;
        self.mantissa.checked_mul(factor).ok_or(DecimalError::Overflow)
    }

    /// The mantissa after trailing zeros are removed.
    pub fn mantissa(self) -> u128 {
        self.mantissa
    }

    /// The number of digits after the point, trailing zeros removed.
    pub fn scale(self) -> u32 {
        self.scale
    }

    /// Whether the value is zero.
    pub fn is_zero(self) -> bool {
        self.mantissa == 0
    }

    fn normalized(mut self) -> Decimal {
        if self.mantissa == 0 {
            return Decimal::ZERO;
        }
        while self.scale > 0 && self.mantissa.is_multiple_of(10) {
            self.mantissa /= 10;
            self.scale -= 1;
        }
        self
    }
}

impl fmt::Display for Decimal {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&format_scaled_units(self.mantissa, self.scale))
    }
}

/// Formats `units / 10^decimals` canonically: no exponent, no sign, no trailing zeros after the
/// point and no lone point (`"1.5"`, `"2000"`, `"0.0001"`, `"0"`).
pub fn format_scaled_units(units: u128, decimals: u32) -> String {
    // Every amount and price of every answer passes here (a placement's answer about eight
    // times), so the digits are written once into a buffer on the stack and the text is built
    // with one allocation of its exact size.
    let mut digits_buffer = itoa::Buffer::new();
    let digits = digits_buffer.format(units);
    let decimals = usize::try_from(decimals).unwrap_or(usize::MAX);
    let (integer_part, fraction_digits, fraction_leading_zeros) = if digits.len() > decimals {
        let (integer_part, fraction_digits) = digits.split_at(digits.len() - decimals);
        (integer_part, fraction_digits, 0)
    } else {
        ("0", digits, decimals - digits.len())
    };
    let fraction_digits = fraction_digits.trim_end_matches('0');
    if fraction_digits.is_empty() {
        // Nothing after the point: the fraction was all zeros (or `units` was 0).
        return integer_part.to_string();
    }
    let mut text = String::with_capacity(integer_part.len() + 1 + fraction_leading_zeros + fraction_digits.len());
    text.push_str(integer_part);
    text.push('.');
    text.extend(std::iter::repeat_n('0', fraction_leading_zeros));
    text.push_str(fraction_digits);
    text
}

/// `value * numerator / denominator`, rounded toward zero, without intermediate overflow where
/// the true result fits. Returns `None` when the result does not fit or `denominator` is zero.
pub fn multiply_divide_rounding_down(value: u128, numerator: u128, denominator: u128) -> Option<u128> {
    if denominator == 0 {
        return None;
    }
    if let Some(product) = value.checked_mul(numerator) {
        // A 64-bit division is several times cheaper than a 128-bit one, and fees on realistic
        // amounts fit.
        if let (Ok(small_product), Ok(small_denominator)) = (u64::try_from(product), u64::try_from(denominator)) {
            return Some(u128::from(small_product / small_denominator));
        }
        return Some(product / denominator);
    }
    // value * numerator = (q * denominator + r) * numerator, with q and r from value / denominator.
    let quotient = value / denominator;
    let remainder = value % denominator;
    let whole = quotient.checked_mul(numerator)?;
    let part = match remainder.checked_mul(numerator) {
        Some(product) => product / denominator,
        None => {
            // The numerator is the larger factor here; split it the same way.
            let numerator_quotient = numerator / denominator;
            let numerator_remainder = numerator % denominator;
            let first = remainder.checked_mul(numerator_quotient)?;
            let second = remainder.checked_mul(numerator_remainder)? / denominator;
            first.checked_add(second)?
        }
    };
    whole.checked_add(part)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_plain_decimals_exactly() {
        assert_eq!(Decimal::parse("1.5").unwrap(), Decimal::from_parts(15, 1).unwrap());
        assert_eq!(Decimal::parse("2000").unwrap().to_string(), "2000");
        assert_eq!(Decimal::parse("0.0001").unwrap().to_string(), "0.0001");
        assert_eq!(Decimal::parse("1.50").unwrap().to_string(), "1.5");
        assert_eq!(Decimal::parse("0").unwrap(), Decimal::ZERO);
        assert_eq!(Decimal::parse("000.000").unwrap(), Decimal::ZERO);
    }

    #[test]
    fn refuses_everything_that_is_not_the_strict_grammar() {
        for text in [
            "", " 1", "1 ", "+1", "1e5", "1E5", "NaN", "Infinity", "inf", ".5", "5.", ".", "1.2.3", "0x10", "1,5", "١",
            "--1", "1_000",
        ] {
            let result = Decimal::parse(text);
            assert!(
                matches!(result, Err(DecimalError::Malformed) | Err(DecimalError::Empty)),
                "{text:?} gave {result:?}"
            );
        }
        assert_eq!(Decimal::parse("-1"), Err(DecimalError::Negative));
        assert_eq!(Decimal::parse("-x"), Err(DecimalError::Malformed));
    }

    #[test]
    fn refuses_values_that_overflow_128_bits() {
        let largest = u128::MAX.to_string();
        assert_eq!(Decimal::parse(&largest).unwrap().mantissa(), u128::MAX);
        let too_large = format!("{largest}0");
        assert_eq!(Decimal::parse(&too_large), Err(DecimalError::Overflow));
        assert_eq!(Decimal::parse(&"9".repeat(200)), Err(DecimalError::Overflow));
    }

    #[test]
    fn scales_to_units_or_refuses_lost_digits() {
        let value = Decimal::parse("1.5").unwrap();
        assert_eq!(value.to_scaled_units(18).unwrap(), 1_500_000_000_000_000_000);
        assert_eq!(value.to_scaled_units(1).unwrap(), 15);
        assert_eq!(value.to_scaled_units(0), Err(DecimalError::TooPrecise));
        let large = Decimal::parse("1000000000000000000000").unwrap();
        assert_eq!(large.to_scaled_units(18), Err(DecimalError::Overflow));
    }

    #[test]
    fn formats_canonically() {
        assert_eq!(format_scaled_units(0, 18), "0");
        assert_eq!(format_scaled_units(1, 4), "0.0001");
        assert_eq!(format_scaled_units(15, 1), "1.5");
        assert_eq!(format_scaled_units(2_000_000, 3), "2000");
        assert_eq!(format_scaled_units(u128::MAX, 0), u128::MAX.to_string());
        assert_eq!(
            format_scaled_units(u128::MAX, 38),
            "3.40282366920938463463374607431768211455"
        );
    }

    /// The first implementation, kept as the reference the faster one must agree with.
    fn reference_format_scaled_units(units: u128, decimals: u32) -> String {
        let digits = units.to_string();
        if decimals == 0 {
            return digits;
        }
        let decimals = decimals as usize;
        let padded = if digits.len() <= decimals {
            format!("{}{}", "0".repeat(decimals + 1 - digits.len()), digits)
        } else {
            digits
        };
        let (integer_part, fraction_part) = padded.split_at(padded.len() - decimals);
        let fraction_part = fraction_part.trim_end_matches('0');
        if fraction_part.is_empty() {
            integer_part.to_string()
        } else {
            format!("{integer_part}.{fraction_part}")
        }
    }

    proptest::proptest! {
        #[test]
        fn formatting_agrees_with_the_reference(units: u128, small_units in 0u128..100_000, decimals in 0u32..45) {
            for units in [units, small_units, units % 1_000_000_000_000_000_000_000] {
                proptest::prop_assert_eq!(
                    format_scaled_units(units, decimals),
                    reference_format_scaled_units(units, decimals)
                );
            }
        }
    }

    #[test]
    fn multiply_divide_is_exact_and_rounds_down() {
        assert_eq!(multiply_divide_rounding_down(10, 3, 4), Some(7));
        assert_eq!(
            multiply_divide_rounding_down(u128::MAX, 1_000, 1_000_000),
            Some(u128::MAX / 1_000)
        );
        assert_eq!(multiply_divide_rounding_down(u128::MAX, 2, 1), None);
        assert_eq!(multiply_divide_rounding_down(1, 1, 0), None);
    }
}
