//! Keys, addresses and EIP-712 signatures.
//!
//! [`PrivateKey`] holds a secp256k1 secret for the length of one request: its `Debug` is
//! redacted, it has no `Display`, and it is erased when dropped. Addresses are derived the
//! Ethereum way (keccak-256 of the uncompressed public key, last 20 bytes) and printed with their
//! EIP-55 checksum. Orders are signed as EIP-712 typed data under the domain
//! `dexd`/`1`/chainId/venue contract. This module does not parse HTTP or touch the engine.

use std::fmt;

use alloy_primitives::{keccak256, Address as AlloyAddress};
use dexd_core::Address;
use secp256k1::ecdsa::{RecoverableSignature, RecoveryId};
use secp256k1::{Message, PublicKey, SecretKey, SECP256K1};
use serde_json::{json, Value};
use zeroize::Zeroizing;

/// A secp256k1 secret key, held only while a request needs it.
pub struct PrivateKey(SecretKey);

impl fmt::Debug for PrivateKey {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str("PrivateKey(<redacted>)")
    }
}

impl Drop for PrivateKey {
    fn drop(&mut self) {
        self.0.non_secure_erase();
    }
}

/// Why a private key string was refused. Never carries any part of the key.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct InvalidPrivateKey;

impl PrivateKey {
    /// Parses `0x` + 64 hex digits that form a valid secp256k1 secret (non-zero, below the
    /// curve order). Intermediate copies are erased.
    pub fn parse(text: &str) -> Result<PrivateKey, InvalidPrivateKey> {
        let hex_digits = text.strip_prefix("0x").ok_or(InvalidPrivateKey)?;
        if hex_digits.len() != 64 {
            return Err(InvalidPrivateKey);
        }
        let mut bytes = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(hex_digits, &mut bytes[..]).map_err(|_| InvalidPrivateKey)?;
        SecretKey::from_byte_array(&bytes)
            .map(PrivateKey)
            .map_err(|_| InvalidPrivateKey)
    }

    /// The account address of the key.
    pub fn address(&self) -> Address {
        let public_key = PublicKey::from_secret_key_global(&self.0);
        address_of_public_key(&public_key)
    }

    /// Signs a 32-byte digest; returns `r ‖ s ‖ v` with `v` 27 or 28, as Ethereum tools expect.
    pub fn sign_digest(&self, digest: [u8; 32]) -> [u8; 65] {
        let signature = SECP256K1.sign_ecdsa_recoverable(&Message::from_digest(digest), &self.0);
        let (recovery_id, compact) = signature.serialize_compact();
        let mut bytes = [0u8; 65];
        bytes[..64].copy_from_slice(&compact);
        bytes[64] = 27 + u8::try_from(i32::from(recovery_id)).expect("a recovery id is 0 to 3");
        bytes
    }
}

/// The most addresses the [`AddressCache`] keeps; when full it starts over empty.
pub const MAX_ADDRESS_CACHE_ENTRIES: usize = 65_536;

/// Remembers the address of keys seen recently, so that a trader's key is not taken through the
/// elliptic-curve multiplication (about 40 µs) on every order.
///
/// It never holds a key. Its index is keccak-256 of a random secret drawn at start followed by
/// the key: without the secret nothing about a key can be learned from the index, and with it a
/// key can only be confirmed, never recovered. The secret is not stored anywhere.
pub struct AddressCache {
    secret: [u8; 32],
    addresses: parking_lot::Mutex<std::collections::HashMap<[u8; 32], Address>>,
}

impl Default for AddressCache {
    fn default() -> AddressCache {
        AddressCache {
            secret: rand::random(),
            addresses: parking_lot::Mutex::new(std::collections::HashMap::new()),
        }
    }
}

impl AddressCache {
    /// The address of a key, from the cache when the key was seen before.
    pub fn address_of(&self, key: &PrivateKey) -> Address {
        let mut preimage = Zeroizing::new([0u8; 64]);
        preimage[..32].copy_from_slice(&self.secret);
        let secret_bytes = Zeroizing::new(key.0.secret_bytes());
        preimage[32..].copy_from_slice(&secret_bytes[..]);
        let index = keccak256(&preimage[..]).0;
        if let Some(address) = self.addresses.lock().get(&index) {
            return *address;
        }
        let address = key.address();
        let mut addresses = self.addresses.lock();
        if addresses.len() >= MAX_ADDRESS_CACHE_ENTRIES {
            addresses.clear();
        }
        addresses.insert(index, address);
        address
    }
}

/// The Ethereum address of a public key.
pub fn address_of_public_key(public_key: &PublicKey) -> Address {
    let uncompressed = public_key.serialize_uncompressed();
    let hash = keccak256(&uncompressed[1..]);
    let mut bytes = [0u8; 20];
    bytes.copy_from_slice(&hash[12..]);
    Address::from_bytes(bytes)
}

/// Recovers the address that made a 65-byte `r ‖ s ‖ v` signature over `digest`.
pub fn recover_signer(digest: [u8; 32], signature: &[u8; 65]) -> Option<Address> {
    let v = signature[64];
    let recovery = match v {
        27 | 28 => i32::from(v - 27),
        0 | 1 => i32::from(v),
        _ => return None,
    };
    let recovery_id = RecoveryId::try_from(recovery).ok()?;
    let signature = RecoverableSignature::from_compact(&signature[..64], recovery_id).ok()?;
    let public_key = SECP256K1
        .recover_ecdsa(&Message::from_digest(digest), &signature)
        .ok()?;
    Some(address_of_public_key(&public_key))
}

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

/// The EIP-712 domain of one chain's venue.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningDomain {
    /// The chain id.
    pub chain_id: u64,
    /// The venue contract, used as `verifyingContract`.
    pub verifying_contract: Address,
}

/// The EIP-712 domain name.
pub const DOMAIN_NAME: &str = "dexd";
/// The EIP-712 domain version.
pub const DOMAIN_VERSION: &str = "1";
const DOMAIN_TYPE: &str = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)";
/// The EIP-712 type of an order.
pub const ORDER_TYPE: &str = "Order(address account,string symbol,string orderType,string direction,string timeInForce,bool postOnly,string price,string amount,string clientOrderId,uint256 salt)";

/// An order's signed terms, as strings exactly as they appear in the API.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderMessage {
    /// The placing account.
    pub account: Address,
    /// `BASE/QUOTE`, upper case.
    pub symbol: String,
    /// `limit` or `market`.
    pub order_type: String,
    /// `buy` or `sell`.
    pub direction: String,
    /// `GTC`, `IOC` or `FOK`.
    pub time_in_force: String,
    /// Post-only flag.
    pub post_only: bool,
    /// Canonical decimal price; empty for market orders.
    pub price: String,
    /// Canonical decimal amount of base.
    pub amount: String,
    /// The client's label; empty when none.
    pub client_order_id: String,
    /// A random number drawn by the server, so that equal orders have different ids.
    pub salt: u128,
}

impl SigningDomain {
    /// The domain separator: `hashStruct(EIP712Domain)`.
    pub fn separator(&self) -> [u8; 32] {
        let mut encoded = Vec::with_capacity(5 * 32);
        encoded.extend_from_slice(keccak256(DOMAIN_TYPE).as_slice());
        encoded.extend_from_slice(keccak256(DOMAIN_NAME).as_slice());
        encoded.extend_from_slice(keccak256(DOMAIN_VERSION).as_slice());
        encoded.extend_from_slice(&uint256(u128::from(self.chain_id)));
        encoded.extend_from_slice(&address_word(&self.verifying_contract));
        keccak256(&encoded).0
    }

    /// The EIP-712 digest of an order: `keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(order))`.
    /// dexd uses it as the order's id.
    pub fn order_digest(&self, order: &OrderMessage) -> [u8; 32] {
        let mut encoded = Vec::with_capacity(11 * 32);
        encoded.extend_from_slice(keccak256(ORDER_TYPE).as_slice());
        encoded.extend_from_slice(&address_word(&order.account));
        for text in [&order.symbol, &order.order_type, &order.direction, &order.time_in_force] {
            encoded.extend_from_slice(keccak256(text.as_bytes()).as_slice());
        }
        encoded.extend_from_slice(&uint256(u128::from(order.post_only)));
        for text in [&order.price, &order.amount, &order.client_order_id] {
            encoded.extend_from_slice(keccak256(text.as_bytes()).as_slice());
        }
        encoded.extend_from_slice(&uint256(order.salt));
        let struct_hash = keccak256(&encoded);
        let mut message = Vec::with_capacity(66);
        message.extend_from_slice(&[0x19, 0x01]);
        message.extend_from_slice(&self.separator());
        message.extend_from_slice(struct_hash.as_slice());
        keccak256(&message).0
    }

    /// The order as EIP-712 typed data JSON (`types`, `primaryType`, `domain`, `message`), as
    /// `eth_signTypedData_v4` and standard libraries take it.
    pub fn order_typed_data(&self, order: &OrderMessage) -> Value {
        json!({
            "types": {
                "EIP712Domain": [
                    {"name": "name", "type": "string"},
                    {"name": "version", "type": "string"},
                    {"name": "chainId", "type": "uint256"},
                    {"name": "verifyingContract", "type": "address"}
                ],
                "Order": [
                    {"name": "account", "type": "address"},
                    {"name": "symbol", "type": "string"},
                    {"name": "orderType", "type": "string"},
                    {"name": "direction", "type": "string"},
                    {"name": "timeInForce", "type": "string"},
                    {"name": "postOnly", "type": "bool"},
                    {"name": "price", "type": "string"},
                    {"name": "amount", "type": "string"},
                    {"name": "clientOrderId", "type": "string"},
                    {"name": "salt", "type": "uint256"}
                ]
            },
            "primaryType": "Order",
            "domain": {
                "name": DOMAIN_NAME,
                "version": DOMAIN_VERSION,
                "chainId": self.chain_id,
                "verifyingContract": checksummed(&self.verifying_contract)
            },
            "message": {
                "account": checksummed(&order.account),
                "symbol": order.symbol,
                "orderType": order.order_type,
                "direction": order.direction,
                "timeInForce": order.time_in_force,
                "postOnly": order.post_only,
                "price": order.price,
                "amount": order.amount,
                "clientOrderId": order.client_order_id,
                "salt": order.salt.to_string()
            }
        })
    }
}

fn uint256(value: u128) -> [u8; 32] {
    let mut word = [0u8; 32];
    word[16..].copy_from_slice(&value.to_be_bytes());
    word
}

fn address_word(address: &Address) -> [u8; 32] {
    let mut word = [0u8; 32];
    word[12..].copy_from_slice(address.as_bytes());
    word
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The key of the EIP-712 specification's example: keccak256("cow").
    fn cow_key() -> PrivateKey {
        PrivateKey::parse(&hex_prefixed(keccak256("cow").as_slice())).unwrap()
    }

    #[test]
    fn derives_the_published_address_of_a_known_key() {
        assert_eq!(
            checksummed(&cow_key().address()),
            "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"
        );
    }

    #[test]
    fn signs_the_eip712_specification_example_to_its_published_signature() {
        // The digest of the specification's Mail example (EIP-712, "Test cases").
        let digest =
            parse_hex_bytes::<32>("0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2").unwrap();
        let signature = cow_key().sign_digest(digest);
        assert_eq!(signature[64], 28);
        assert_eq!(
            hex_prefixed(&signature[..32]),
            "0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d"
        );
        assert_eq!(
            hex_prefixed(&signature[32..64]),
            "0x07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b91562"
        );
        assert_eq!(recover_signer(digest, &signature), Some(cow_key().address()));
    }

    #[test]
    fn refuses_keys_that_are_not_valid_secrets() {
        for text in [
            "",
            "0x",
            "0x00",
            &format!("0x{}", "0".repeat(64)),
            &format!("0x{}", "f".repeat(64)),
            &format!("0x{}g", "1".repeat(63)),
            &"1".repeat(64),
        ] {
            assert!(PrivateKey::parse(text).is_err(), "{text:?}");
        }
    }

    #[test]
    fn the_address_cache_gives_each_key_its_own_address() {
        let cache = AddressCache::default();
        let cow = cow_key();
        let other = PrivateKey::parse(&format!("0x{}", "42".repeat(32))).unwrap();
        for _ in 0..2 {
            assert_eq!(cache.address_of(&cow), cow.address());
            assert_eq!(cache.address_of(&other), other.address());
        }
        assert_ne!(cache.address_of(&cow), cache.address_of(&other));
    }

    #[test]
    fn a_key_never_shows_in_debug_output() {
        let text = format!("{:?}", cow_key());
        assert_eq!(text, "PrivateKey(<redacted>)");
    }

    #[test]
    fn addresses_need_a_valid_checksum_only_in_mixed_case() {
        let checksummed_text = "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826";
        let address = parse_address(checksummed_text).unwrap();
        assert_eq!(parse_address(&checksummed_text.to_lowercase()).unwrap(), address);
        assert_eq!(
            parse_address(&format!("0x{}", checksummed_text[2..].to_uppercase())).unwrap(),
            address
        );
        assert_eq!(
            parse_address("0xcD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"),
            Err(AddressError::BadChecksum)
        );
        assert_eq!(parse_address("0x1234"), Err(AddressError::Malformed));
        assert_eq!(
            parse_address("CD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"),
            Err(AddressError::Malformed)
        );
    }
}
