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
    /// curve order). The decoding buffer is erased (see the note on the by-value copy below).
    pub fn parse(text: &str) -> Result<PrivateKey, InvalidPrivateKey> {
        let hex_digits = text.strip_prefix("0x").ok_or(InvalidPrivateKey)?;
        if hex_digits.len() != 64 {
            return Err(InvalidPrivateKey);
        }
        let mut bytes = Zeroizing::new([0u8; 32]);
        hex::decode_to_slice(hex_digits, &mut bytes[..]).map_err(|_| InvalidPrivateKey)?;
        // The secp256k1 crate takes the array by value (since 0.30, and its `from_slice` copies
        // too): that one copy, in this call's stack frame, is not erased; the decoding buffer is.
        SecretKey::from_byte_array(*bytes)
            .map(PrivateKey)
            .map_err(|_| InvalidPrivateKey)
    }

    /// The account address of the key.
    pub fn address(&self) -> Address {
        let public_key = PublicKey::from_secret_key_global(&self.0);
        address_of_public_key(&public_key)
    }

    /// A signer of chain transactions for this key, for a vault chain's deposit that the venue
    /// sends from the account (it lives no longer than the request that made it; its key is
    /// erased when it is dropped).
    pub fn transaction_signer(&self) -> alloy::signers::local::PrivateKeySigner {
        let secret = Zeroizing::new(self.0.secret_bytes());
        alloy::signers::local::PrivateKeySigner::from_slice(&secret[..])
            .expect("invariant: a valid secp256k1 secret key is a valid signing key")
    }

    /// Signs a 32-byte digest; returns `r ‖ s ‖ v` with `v` 27 or 28, as Ethereum tools expect.
    pub fn sign_digest(&self, digest: [u8; 32]) -> [u8; 65] {
        let signature = SECP256K1.sign_ecdsa_recoverable(Message::from_digest(digest), &self.0);
        let (recovery_id, compact) = signature.serialize_compact();
        let mut bytes = [0u8; 65];
        bytes[..64].copy_from_slice(&compact);
        bytes[64] = 27 + u8::try_from(i32::from(recovery_id)).expect("a recovery id is 0 to 3");
        bytes
    }
}

/// Why an operator key could not be read. Names where it was looked for, never what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorKeyError(pub String);

impl fmt::Display for OperatorKeyError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for OperatorKeyError {}

/// Reads a vault chain's operator key from its file or environment variable: `0x` + 64 hex
/// digits, surrounding whitespace ignored. The key signs the vault's withdrawal transactions for
/// as long as the process runs; it is never written anywhere, and an error never repeats it.
pub fn read_operator_key(
    source: &crate::config::OperatorKeySource,
) -> Result<alloy::signers::local::PrivateKeySigner, OperatorKeyError> {
    use crate::config::OperatorKeySource;
    let (text, origin) =
        match source {
            OperatorKeySource::File(path) => (
                Zeroizing::new(std::fs::read_to_string(path).map_err(|error| {
                    OperatorKeyError(format!("cannot read the operator key file {}: {error}", path.display()))
                })?),
                format!("the operator key file {}", path.display()),
            ),
            OperatorKeySource::Environment(variable) => (
                Zeroizing::new(std::env::var(variable).map_err(|_| {
                    OperatorKeyError(format!("the environment variable {variable} holds no operator key"))
                })?),
                format!("the environment variable {variable}"),
            ),
        };
    let key = PrivateKey::parse(text.trim()).map_err(|_| {
        OperatorKeyError(format!(
            "{origin} does not hold 0x + 64 hex digits of a valid secp256k1 key"
        ))
    })?;
    Ok(key.transaction_signer())
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
    let public_key = SECP256K1.recover_ecdsa(Message::from_digest(digest), &signature).ok()?;
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

/// Parses a uint256 written in decimal digits.
pub fn parse_uint256(text: &str) -> Option<[u8; 32]> {
    if text.is_empty() || text.len() > 78 || !text.bytes().all(|byte| byte.is_ascii_digit()) {
        return None;
    }
    alloy_primitives::U256::from_str_radix(text, 10)
        .ok()
        .map(|value| value.to_be_bytes())
}

/// The EIP-712 domain of one chain's venue, with its separator computed once: it is part of
/// every digest, and its four keccak-256 hashes were a fifth of the hashing per order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SigningDomain {
    chain_id: u64,
    verifying_contract: Address,
    separator: [u8; 32],
}

/// The EIP-712 domain name.
pub const DOMAIN_NAME: &str = "dexd";
/// The EIP-712 domain version.
pub const DOMAIN_VERSION: &str = "1";
const DOMAIN_TYPE: &str = "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)";

/// The shape of one flat EIP-712 struct type: its name and its members as `(name, type)`.
#[derive(Debug, PartialEq, Eq)]
pub struct StructType {
    /// The type's name, such as `Order`.
    pub name: &'static str,
    /// Its members in order, as `(name, solidity type)`.
    pub members: &'static [(&'static str, &'static str)],
}

/// The type hashes of the request types, computed once: each digest needs one, and building the
/// `encodeType` string took a dozen allocations per order.
static REQUEST_TYPE_HASHES: std::sync::LazyLock<Vec<(StructType, [u8; 32])>> = std::sync::LazyLock::new(|| {
    [ORDER_TYPE, CANCEL_ORDER_TYPE, DEPOSIT_TYPE, WITHDRAW_TYPE]
        .into_iter()
        .map(|struct_type| {
            let hash = keccak256(struct_type.encode_type()).0;
            (struct_type, hash)
        })
        .collect()
});

impl StructType {
    /// `typeHash`: keccak-256 of [`StructType::encode_type`].
    pub fn type_hash(&self) -> [u8; 32] {
        REQUEST_TYPE_HASHES
            .iter()
            .find(|(known, _)| known == self)
            .map_or_else(|| keccak256(self.encode_type()).0, |(_, hash)| *hash)
    }

    /// `encodeType`: `Name(type1 name1,type2 name2,...)`.
    pub fn encode_type(&self) -> String {
        let members: Vec<String> = self
            .members
            .iter()
            .map(|(name, solidity_type)| format!("{solidity_type} {name}"))
            .collect();
        format!("{}({})", self.name, members.join(","))
    }

    /// The members as typed-data JSON: `[{"name": ..., "type": ...}]`.
    pub fn members_json(&self) -> Value {
        Value::Array(
            self.members
                .iter()
                .map(|(name, solidity_type)| json!({"name": name, "type": solidity_type}))
                .collect(),
        )
    }
}

/// The EIP-712 type of an order. The venue signs it for a `privateKey` request; a client that
/// keeps its key signs the same type itself.
pub const ORDER_TYPE: StructType = StructType {
    name: "Order",
    members: &[
        ("account", "address"),
        ("symbol", "string"),
        ("orderType", "string"),
        ("direction", "string"),
        ("timeInForce", "string"),
        ("postOnly", "bool"),
        ("price", "string"),
        ("amount", "string"),
        ("clientOrderId", "string"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The EIP-712 type of a client-signed cancel.
pub const CANCEL_ORDER_TYPE: StructType = StructType {
    name: "CancelOrder",
    members: &[
        ("account", "address"),
        ("symbol", "string"),
        ("orderId", "bytes32"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The members of both transfer types: a deposit and a withdrawal sign the same terms and differ
/// only in the type's name.
const TRANSFER_MEMBERS: &[(&str, &str)] = &[
    ("account", "address"),
    ("symbol", "string"),
    ("quantity", "string"),
    ("nonce", "uint256"),
    ("expiry", "uint256"),
];

/// The EIP-712 type of a client-signed deposit.
pub const DEPOSIT_TYPE: StructType = StructType {
    name: "Deposit",
    members: TRANSFER_MEMBERS,
};

/// The EIP-712 type of a client-signed withdrawal.
pub const WITHDRAW_TYPE: StructType = StructType {
    name: "Withdraw",
    members: TRANSFER_MEMBERS,
};

/// Every type a request can be signed as.
pub const REQUEST_TYPES: [&StructType; 4] = [&ORDER_TYPE, &CANCEL_ORDER_TYPE, &DEPOSIT_TYPE, &WITHDRAW_TYPE];

/// One member's value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FieldValue {
    /// An `address`.
    Address(Address),
    /// A `string`.
    Text(String),
    /// A `bool`.
    Bool(bool),
    /// A `uint256`, big-endian.
    Uint([u8; 32]),
    /// A `bytes32`.
    Bytes32([u8; 32]),
}

impl FieldValue {
    /// A `uint256` from a u64.
    pub fn uint(value: u64) -> FieldValue {
        FieldValue::Uint(uint256(u128::from(value)))
    }

    fn encode(&self) -> [u8; 32] {
        match self {
            FieldValue::Address(address) => address_word(address),
            FieldValue::Text(text) => text_word(text),
            FieldValue::Bool(flag) => uint256(u128::from(*flag)),
            FieldValue::Uint(word) | FieldValue::Bytes32(word) => *word,
        }
    }

    fn to_json(&self) -> Value {
        match self {
            FieldValue::Address(address) => Value::String(checksummed(address)),
            FieldValue::Text(text) => Value::String(text.clone()),
            FieldValue::Bool(flag) => Value::Bool(*flag),
            FieldValue::Uint(word) => Value::String(alloy_primitives::U256::from_be_bytes(*word).to_string()),
            FieldValue::Bytes32(word) => Value::String(hex_prefixed(word)),
        }
    }
}

/// One struct of a [`StructType`] with its values, in member order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TypedMessage {
    /// Its type.
    pub struct_type: &'static StructType,
    /// Its values, one per member.
    pub values: Vec<FieldValue>,
}

impl TypedMessage {
    /// `hashStruct`: keccak-256 of the type hash followed by each encoded value.
    pub fn struct_hash(&self) -> [u8; 32] {
        assert_eq!(
            self.values.len(),
            self.struct_type.members.len(),
            "one value per member"
        );
        let mut encoded = Vec::with_capacity(32 * (1 + self.values.len()));
        encoded.extend_from_slice(&self.struct_type.type_hash());
        for value in &self.values {
            encoded.extend_from_slice(&value.encode());
        }
        keccak256(&encoded).0
    }
}

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
    /// The client's nonce, or a random number the venue drew when it signed for the client.
    pub nonce: [u8; 32],
    /// Until when the signature may be used to place the order, in ms since the epoch.
    pub expiry_ms: u64,
}

impl OrderMessage {
    /// The order as a typed message.
    pub fn typed(&self) -> TypedMessage {
        TypedMessage {
            struct_type: &ORDER_TYPE,
            values: vec![
                FieldValue::Address(self.account),
                FieldValue::Text(self.symbol.clone()),
                FieldValue::Text(self.order_type.clone()),
                FieldValue::Text(self.direction.clone()),
                FieldValue::Text(self.time_in_force.clone()),
                FieldValue::Bool(self.post_only),
                FieldValue::Text(self.price.clone()),
                FieldValue::Text(self.amount.clone()),
                FieldValue::Text(self.client_order_id.clone()),
                FieldValue::Uint(self.nonce),
                FieldValue::uint(self.expiry_ms),
            ],
        }
    }
}

impl SigningDomain {
    /// The domain of the venue contract `verifying_contract` on chain `chain_id`.
    pub fn new(chain_id: u64, verifying_contract: Address) -> SigningDomain {
        let mut encoded = Vec::with_capacity(5 * 32);
        encoded.extend_from_slice(keccak256(DOMAIN_TYPE).as_slice());
        encoded.extend_from_slice(keccak256(DOMAIN_NAME).as_slice());
        encoded.extend_from_slice(keccak256(DOMAIN_VERSION).as_slice());
        encoded.extend_from_slice(&uint256(u128::from(chain_id)));
        encoded.extend_from_slice(&address_word(&verifying_contract));
        SigningDomain {
            chain_id,
            verifying_contract,
            separator: keccak256(&encoded).0,
        }
    }

    /// The chain id.
    pub fn chain_id(&self) -> u64 {
        self.chain_id
    }

    /// The venue contract, used as `verifyingContract`.
    pub fn verifying_contract(&self) -> Address {
        self.verifying_contract
    }

    /// The domain separator: `hashStruct(EIP712Domain)`.
    pub fn separator(&self) -> [u8; 32] {
        self.separator
    }

    /// The EIP-712 digest: `keccak256(0x1901 ‖ domainSeparator ‖ hashStruct(message))`.
    pub fn digest(&self, message: &TypedMessage) -> [u8; 32] {
        let mut preimage = Vec::with_capacity(66);
        preimage.extend_from_slice(&[0x19, 0x01]);
        preimage.extend_from_slice(&self.separator());
        preimage.extend_from_slice(&message.struct_hash());
        keccak256(&preimage).0
    }

    /// The EIP-712 digest of an order; dexd uses it as the order's id.
    ///
    /// The same words as `self.digest(&order.typed())` (a unit test holds them equal), encoded in
    /// place: every placement takes this path, and the typed message copied each string first.
    pub fn order_digest(&self, order: &OrderMessage) -> [u8; 32] {
        let text = text_word;
        let words: [[u8; 32]; 12] = [
            ORDER_TYPE.type_hash(),
            address_word(&order.account),
            text(&order.symbol),
            text(&order.order_type),
            text(&order.direction),
            text(&order.time_in_force),
            uint256(u128::from(order.post_only)),
            text(&order.price),
            text(&order.amount),
            text(&order.client_order_id),
            order.nonce,
            uint256(u128::from(order.expiry_ms)),
        ];
        let mut preimage = [0u8; 66];
        preimage[..2].copy_from_slice(&[0x19, 0x01]);
        preimage[2..34].copy_from_slice(&self.separator);
        preimage[34..].copy_from_slice(&keccak256(words.as_flattened()).0);
        keccak256(preimage).0
    }

    /// The domain as typed-data JSON.
    pub fn domain_json(&self) -> Value {
        json!({
            "name": DOMAIN_NAME,
            "version": DOMAIN_VERSION,
            "chainId": self.chain_id,
            "verifyingContract": checksummed(&self.verifying_contract)
        })
    }

    /// A message as EIP-712 typed data JSON (`types`, `primaryType`, `domain`, `message`), as
    /// `eth_signTypedData_v4` and standard libraries take it.
    pub fn typed_data(&self, message: &TypedMessage) -> Value {
        let members = message.struct_type.members.iter().zip(&message.values);
        let values: serde_json::Map<String, Value> = members
            .map(|((name, _), value)| ((*name).to_string(), value.to_json()))
            .collect();
        json!({
            "types": {
                "EIP712Domain": EIP712_DOMAIN_MEMBERS.members_json(),
                message.struct_type.name: message.struct_type.members_json(),
            },
            "primaryType": message.struct_type.name,
            "domain": self.domain_json(),
            "message": values,
        })
    }

    /// The order as typed data JSON.
    pub fn order_typed_data(&self, order: &OrderMessage) -> Value {
        self.typed_data(&order.typed())
    }
}

const EIP712_DOMAIN_MEMBERS: StructType = StructType {
    name: "EIP712Domain",
    members: &[
        ("name", "string"),
        ("version", "string"),
        ("chainId", "uint256"),
        ("verifyingContract", "address"),
    ],
};

/// Every type of the venue's signed requests, with the domain, as `GET /account/eip712` serves it.
pub fn request_types_json(domain: &SigningDomain) -> Value {
    let mut types = serde_json::Map::new();
    types.insert("EIP712Domain".into(), EIP712_DOMAIN_MEMBERS.members_json());
    for struct_type in REQUEST_TYPES {
        types.insert(struct_type.name.into(), struct_type.members_json());
    }
    json!({"domain": domain.domain_json(), "types": types})
}

/// The fixed words orders are made of (types, directions, times in force, and the empty string of
/// a market order's price or a missing client order id), with their keccak-256 computed once:
/// half of an order's hashing was of these.
static FIXED_TEXT_WORDS: std::sync::LazyLock<Vec<(&'static str, [u8; 32])>> = std::sync::LazyLock::new(|| {
    ["limit", "market", "buy", "sell", "GTC", "IOC", "FOK", ""]
        .into_iter()
        .map(|text| (text, keccak256(text.as_bytes()).0))
        .collect()
});

/// The EIP-712 encoding of a `string`: its keccak-256, looked up for the fixed words.
fn text_word(text: &str) -> [u8; 32] {
    FIXED_TEXT_WORDS
        .iter()
        .find(|(fixed, _)| *fixed == text)
        .map_or_else(|| keccak256(text.as_bytes()).0, |(_, hash)| *hash)
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
    fn cached_type_hashes_are_the_hashes_of_the_encoded_types() {
        for struct_type in [ORDER_TYPE, CANCEL_ORDER_TYPE, DEPOSIT_TYPE, WITHDRAW_TYPE] {
            assert_eq!(struct_type.type_hash(), keccak256(struct_type.encode_type()).0);
        }
        // A type that is not cached, even one named like a cached one, is hashed as it is.
        let other = StructType {
            name: "Order",
            members: &[("account", "address")],
        };
        assert_eq!(other.type_hash(), keccak256("Order(address account)").0);
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
    fn the_order_digest_encoded_in_place_is_the_typed_message_digest() {
        let domain = SigningDomain::new(11155111, Address::from_bytes([0xde; 20]));
        let limit = OrderMessage {
            account: Address::from_bytes([0x12; 20]),
            symbol: "ETH/USDC".into(),
            order_type: "limit".into(),
            direction: "sell".into(),
            time_in_force: "IOC".into(),
            post_only: true,
            price: "2500.5".into(),
            amount: "0.25".into(),
            client_order_id: "bot-7".into(),
            nonce: [0x34; 32],
            expiry_ms: 1_800_000_000_123,
        };
        let market = OrderMessage {
            order_type: "market".into(),
            post_only: false,
            price: String::new(),
            client_order_id: String::new(),
            ..limit.clone()
        };
        for message in [limit, market] {
            assert_eq!(domain.order_digest(&message), domain.digest(&message.typed()));
        }
        for text in [
            "limit", "market", "buy", "sell", "GTC", "IOC", "FOK", "", "ETH/USDC", "limit ",
        ] {
            assert_eq!(text_word(text), keccak256(text.as_bytes()).0, "{text:?}");
        }
    }

    #[test]
    fn the_order_type_encodes_as_eip712_writes_it() {
        assert_eq!(
            ORDER_TYPE.encode_type(),
            "Order(address account,string symbol,string orderType,string direction,string timeInForce,\
             bool postOnly,string price,string amount,string clientOrderId,uint256 nonce,uint256 expiry)"
        );
        assert_eq!(EIP712_DOMAIN_MEMBERS.encode_type(), DOMAIN_TYPE);
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
