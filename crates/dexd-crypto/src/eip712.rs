//! EIP-712 typed data: the venue's signing domain, the request types a client signs, and their
//! digests and JSON form.
//!
//! Orders are signed under the domain `dexd`/`1`/chainId/venue contract. This module computes
//! digests and describes types; it holds no key and verifies nothing by itself.

use alloy_primitives::keccak256;
use dexd_core::Address;
use serde_json::{json, Value};

use crate::encoding::{checksummed, hex_prefixed};

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
pub(crate) const DOMAIN_TYPE: &str =
    "EIP712Domain(string name,string version,uint256 chainId,address verifyingContract)";

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
    [
        ORDER_TYPE,
        CANCEL_ORDER_TYPE,
        DEPOSIT_TYPE,
        WITHDRAW_TYPE,
        CANCEL_ALL_TYPE,
        AMEND_ORDER_TYPE,
        CANCEL_ALL_AFTER_TYPE,
        APPROVE_AGENT_TYPE,
        REVOKE_AGENT_TYPE,
        ORDER_BATCH_TYPE,
    ]
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

    /// `encodeType`: `Name(type1 name1,type2 name2,...)`, followed by the one struct type a
    /// member may name (`Order`, in `OrderBatch`'s `Order[] orders`).
    pub fn encode_type(&self) -> String {
        let members: Vec<String> = self
            .members
            .iter()
            .map(|(name, solidity_type)| format!("{solidity_type} {name}"))
            .collect();
        let mut encoded = format!("{}({})", self.name, members.join(","));
        if self
            .members
            .iter()
            .any(|(_, solidity_type)| *solidity_type == "Order[]")
        {
            encoded.push_str(&ORDER_TYPE.encode_type());
        }
        encoded
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

/// The EIP-712 type of an order (contract version 4: with its trigger, group and expiry). The
/// venue signs it for a `privateKey` request; a client that keeps its key signs the same type
/// itself.
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
        ("triggerPrice", "string"),
        ("triggerCondition", "string"),
        ("ocoGroup", "string"),
        ("expiresAt", "uint256"),
    ],
};

/// The EIP-712 type of a batch of orders signed once (contract version 4): one signature over
/// every order, each an `Order` with the batch's account, nonce and expiry (`crate::order_batch`).
pub const ORDER_BATCH_TYPE: StructType = StructType {
    name: "OrderBatch",
    members: &[
        ("account", "address"),
        ("orders", "Order[]"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The `Order` type before contract version 4, without the conditions: what the orders
/// journaled before were signed as, and what rebuilds their messages (never signed anew).
pub const ORDER_TYPE_WITHOUT_CONDITIONS: StructType = StructType {
    name: "Order",
    members: ORDER_TYPE.members.split_at(11).0,
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

/// The EIP-712 type of a client-signed cancel all (`symbol` is `""` for every pair).
pub const CANCEL_ALL_TYPE: StructType = StructType {
    name: "CancelAll",
    members: &[
        ("account", "address"),
        ("symbol", "string"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The EIP-712 type of a client-signed amend (`""` for a field left unchanged); the new order's
/// id is its digest.
pub const AMEND_ORDER_TYPE: StructType = StructType {
    name: "AmendOrder",
    members: &[
        ("account", "address"),
        ("symbol", "string"),
        ("orderId", "bytes32"),
        ("price", "string"),
        ("amount", "string"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The EIP-712 type of a client-signed dead man's switch.
pub const CANCEL_ALL_AFTER_TYPE: StructType = StructType {
    name: "CancelAllAfter",
    members: &[
        ("account", "address"),
        ("timeoutMs", "uint256"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The EIP-712 type of a client-signed approval of an agent (`validUntil` 0: until revoked).
pub const APPROVE_AGENT_TYPE: StructType = StructType {
    name: "ApproveAgent",
    members: &[
        ("account", "address"),
        ("agent", "address"),
        ("name", "string"),
        ("validUntil", "uint256"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The EIP-712 type of a client-signed revocation of an agent (the contract names no type for
/// it; this one follows the approval's).
pub const REVOKE_AGENT_TYPE: StructType = StructType {
    name: "RevokeAgent",
    members: &[
        ("account", "address"),
        ("agent", "address"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The EIP-712 type the vault verifies for a withdrawal (vault custody): `expiry` in ms since the
/// epoch, as everywhere in dexd; `withdrawalId` is the account's own, used once. Signed under
/// the chain's domain, whose verifying contract is the vault.
pub const WITHDRAWAL_TYPE: StructType = StructType {
    name: "Withdrawal",
    members: &[
        ("account", "address"),
        ("token", "address"),
        ("amount", "uint256"),
        ("withdrawalId", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The EIP-712 type of a client-signed transfer between two of the owner's subaccounts
/// (contract version 5): `account` is the owner, the numbers 0 (the owner) to 1000.
pub const SUBACCOUNT_TRANSFER_TYPE: StructType = StructType {
    name: "Transfer",
    members: &[
        ("account", "address"),
        ("fromSubaccount", "uint32"),
        ("toSubaccount", "uint32"),
        ("symbol", "string"),
        ("quantity", "string"),
        ("clientTransferId", "string"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The EIP-712 type of a client-signed TWAP order (contract version 5): `limitPrice` and
/// `clientTwapId` `""` when absent; `account` a subaccount's address when it trades in one.
pub const TWAP_TYPE: StructType = StructType {
    name: "Twap",
    members: &[
        ("account", "address"),
        ("symbol", "string"),
        ("direction", "string"),
        ("amount", "string"),
        ("durationMs", "uint256"),
        ("intervalMs", "uint256"),
        ("limitPrice", "string"),
        ("clientTwapId", "string"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// The EIP-712 type of a client-signed cancel of a running TWAP.
pub const CANCEL_TWAP_TYPE: StructType = StructType {
    name: "CancelTwap",
    members: &[
        ("account", "address"),
        ("twapId", "uint256"),
        ("nonce", "uint256"),
        ("expiry", "uint256"),
    ],
};

/// Every type a request can be signed as.
pub const REQUEST_TYPES: [&StructType; 13] = [
    &ORDER_TYPE,
    &ORDER_BATCH_TYPE,
    &CANCEL_ORDER_TYPE,
    &DEPOSIT_TYPE,
    &WITHDRAW_TYPE,
    &CANCEL_ALL_TYPE,
    &AMEND_ORDER_TYPE,
    &CANCEL_ALL_AFTER_TYPE,
    &APPROVE_AGENT_TYPE,
    &REVOKE_AGENT_TYPE,
    &SUBACCOUNT_TRANSFER_TYPE,
    &TWAP_TYPE,
    &CANCEL_TWAP_TYPE,
];

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
    /// The values as the JSON of typed data's `message`: `{"account": "0x…", …}`.
    pub fn message_json(&self) -> Value {
        let members = self.struct_type.members.iter().zip(&self.values);
        Value::Object(
            members
                .map(|((name, _), value)| ((*name).to_string(), value.to_json()))
                .collect(),
        )
    }

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
    /// Canonical decimal trigger price; empty when the order has no trigger.
    pub trigger_price: String,
    /// `above` or `below`; empty when the order has no trigger.
    pub trigger_condition: String,
    /// The one-cancels-other group's name; empty when none.
    pub oco_group: String,
    /// When the order expires, in ms since the epoch; 0 when it does not.
    pub expires_at_ms: u64,
    /// The order was signed as [`ORDER_TYPE_WITHOUT_CONDITIONS`] (journaled before contract
    /// version 4); the four fields above are then empty and unused.
    pub without_conditions: bool,
}

impl OrderMessage {
    /// The order as a typed message.
    pub fn typed(&self) -> TypedMessage {
        let mut typed = TypedMessage {
            struct_type: &ORDER_TYPE_WITHOUT_CONDITIONS,
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
        };
        if !self.without_conditions {
            typed.struct_type = &ORDER_TYPE;
            typed.values.extend([
                FieldValue::Text(self.trigger_price.clone()),
                FieldValue::Text(self.trigger_condition.clone()),
                FieldValue::Text(self.oco_group.clone()),
                FieldValue::uint(self.expires_at_ms),
            ]);
        }
        typed
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
    pub fn order_digest(&self, order: &OrderMessage) -> [u8; 32] {
        self.digest_of_struct_hash(&order_struct_hash(order))
    }

    /// `keccak256(0x1901 ‖ domainSeparator ‖ structHash)`.
    pub fn digest_of_struct_hash(&self, struct_hash: &[u8; 32]) -> [u8; 32] {
        let mut preimage = [0u8; 66];
        preimage[..2].copy_from_slice(&[0x19, 0x01]);
        preimage[2..34].copy_from_slice(&self.separator);
        preimage[34..].copy_from_slice(struct_hash);
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
        let values = message.message_json();
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

/// `hashStruct` of an order: the same words as `order.typed().struct_hash()` (a unit test holds
/// them equal), encoded in place, since every placement takes this path and the typed message
/// copied each string first. A batch signed once hashes each of its orders with it.
pub fn order_struct_hash(order: &OrderMessage) -> [u8; 32] {
    let text = text_word;
    let words: [[u8; 32]; 16] = [
        if order.without_conditions {
            *ORDER_TYPE_WITHOUT_CONDITIONS_HASH
        } else {
            ORDER_TYPE.type_hash()
        },
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
        text(&order.trigger_price),
        text(&order.trigger_condition),
        text(&order.oco_group),
        uint256(u128::from(order.expires_at_ms)),
    ];
    let encoded = if order.without_conditions {
        &words[..12]
    } else {
        &words[..]
    };
    keccak256(encoded.as_flattened()).0
}

pub(crate) const EIP712_DOMAIN_MEMBERS: StructType = StructType {
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

/// [`ORDER_TYPE_WITHOUT_CONDITIONS`]'s type hash, computed once (it is not a request type).
static ORDER_TYPE_WITHOUT_CONDITIONS_HASH: std::sync::LazyLock<[u8; 32]> =
    std::sync::LazyLock::new(|| ORDER_TYPE_WITHOUT_CONDITIONS.type_hash());

/// The fixed words orders are made of (types, directions, times in force, and the empty string of
/// a market order's price or a missing client order id), with their keccak-256 computed once:
/// half of an order's hashing was of these.
static FIXED_TEXT_WORDS: std::sync::LazyLock<Vec<(&'static str, [u8; 32])>> = std::sync::LazyLock::new(|| {
    dexd_core::ORDER_TYPE_NAMES
        .iter()
        .chain(dexd_core::DIRECTION_NAMES)
        .chain(dexd_core::TIME_IN_FORCE_NAMES)
        .chain(dexd_core::TRIGGER_CONDITION_NAMES)
        .chain(&[""])
        .copied()
        .map(|text| (text, keccak256(text.as_bytes()).0))
        .collect()
});

/// The EIP-712 encoding of a `string`: its keccak-256, looked up for the fixed words.
pub(crate) fn text_word(text: &str) -> [u8; 32] {
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
