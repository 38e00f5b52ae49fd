//! Addresses, hex and uint256 as text: parsing what clients send and writing what they read.
//!
//! Addresses are `0x` + 40 hex digits; mixed case must carry a valid EIP-55 checksum, and output
//! is always checksummed. Nothing here signs or hashes beyond the checksum.

use alloy_primitives::Address as AlloyAddress;
use dexd_core::Address;

/// Why an address string was refused.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum AddressError {
    /// Not `0x` + 40 hex digits.
    Malformed,
    /// Mixed case that is not a valid EIP-55 checksum.
    BadChecksum,
}

/// Parses `0x` + 40 hex digits. All-lowercase or all-uppercase input is taken as is; mixed-case
/// input must carry a valid EIP-55 checksum.
pub fn parse_address(text: &str) -> Result<Address, AddressError> {
    let hex_digits = text.strip_prefix("0x").ok_or(AddressError::Malformed)?;
    if hex_digits.len() != 40 || !hex_digits.bytes().all(|byte| byte.is_ascii_hexdigit()) {
        return Err(AddressError::Malformed);
    }
    let has_lower = hex_digits.bytes().any(|byte| byte.is_ascii_lowercase());
    let has_upper = hex_digits.bytes().any(|byte| byte.is_ascii_uppercase());
    if has_lower && has_upper {
        let parsed = AlloyAddress::parse_checksummed(text, None).map_err(|_| AddressError::BadChecksum)?;
        return Ok(Address::from_bytes(parsed.into_array()));
    }
    let mut bytes = [0u8; 20];
    hex::decode_to_slice(hex_digits, &mut bytes).map_err(|_| AddressError::Malformed)?;
    Ok(Address::from_bytes(bytes))
}

/// The EIP-55 checksummed form of an address.
pub fn checksummed(address: &Address) -> String {
    AlloyAddress::from(*address.as_bytes()).to_checksum(None)
}

/// `0x` + lowercase hex of some bytes.
pub fn hex_prefixed(bytes: &[u8]) -> String {
    format!("0x{}", hex::encode(bytes))
}

/// Parses `0x` + exactly `2 × N` hex digits.
pub fn parse_hex_bytes<const N: usize>(text: &str) -> Option<[u8; N]> {
    let hex_digits = text.strip_prefix("0x")?;
    if hex_digits.len() != 2 * N {
        return None;
    }
    let mut bytes = [0u8; N];
    hex::decode_to_slice(hex_digits, &mut bytes).ok()?;
    Some(bytes)
}

/// Parses a uint256 written in decimal digits.
pub fn parse_uint256(text: &str) -> Option<[u8; 32]> {
    if text.is_empty() || text.len() > 78 || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    alloy_primitives::U256::from_str_radix(text, 10)
        .ok()
        .map(|value| value.to_be_bytes())
}
