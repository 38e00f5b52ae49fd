//! A batch of orders signed once (contract version 4): `OrderBatch(address account, Order[]
//! orders, uint256 nonce, uint256 expiry)`.
//!
//! Each order of a batch is an `Order` whose `nonce` and `expiry` are the batch's, and its id is
//! that order's own digest, as for an order signed alone; an order equal to one before it in the
//! batch (the same digest) has its place in its id instead ([`BatchProof::order_id`]), so that a
//! batch of equal child orders is placed whole. The batch's signature covers the
//! struct hash of every order, so one order is checked with the batch's signature, its index
//! and the hashes of the others ([`BatchProof`]). This module hashes and describes; it holds no
//! key and checks no signature.

use alloy_primitives::keccak256;
use dexd_core::Address;
use serde_json::{json, Value};

pub use crate::eip712::ORDER_BATCH_TYPE;
use crate::eip712::{order_struct_hash, OrderMessage, SigningDomain, EIP712_DOMAIN_MEMBERS, ORDER_TYPE};
use crate::encoding::hex_prefixed;

/// The most orders one signature may cover: a batch's limit.
pub const MAX_ORDERS_PER_BATCH_SIGNATURE: usize = 50;

/// What ties one order to its batch's signature: its place in the batch and the struct hash of
/// every order of the batch (its own included), in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BatchProof {
    /// The order's index in the batch.
    pub index: usize,
    /// `hashStruct(Order)` of each order of the batch, in order.
    pub order_hashes: std::sync::Arc<[[u8; 32]]>,
}

impl BatchProof {
    /// Whether `order` is the order at this proof's index.
    pub fn holds(&self, order: &OrderMessage) -> bool {
        self.order_hashes.get(self.index) == Some(&order_struct_hash(order))
    }

    /// The id of the order at this proof's index under `domain`: its own digest, or, when an
    /// earlier order of the batch has the same struct hash (an equal order: the same terms under
    /// the same nonce), `keccak256(digest ‖ uint8 index)`, so that each of equal orders has its
    /// own id. An id is thus the digest for every batch journaled before equal orders were
    /// taken, which had none.
    pub fn order_id(&self, domain: &SigningDomain) -> [u8; 32] {
        let own = self.order_hashes[self.index];
        let digest = domain.digest_of_struct_hash(&own);
        if !self.order_hashes[..self.index].contains(&own) {
            return digest;
        }
        let mut preimage = [0u8; 33];
        preimage[..32].copy_from_slice(&digest);
        preimage[32] = u8::try_from(self.index).expect("a batch holds at most 50 orders");
        keccak256(preimage).0
    }
}

/// `hashStruct(OrderBatch)`: the type hash, the account, `keccak256` of the orders' struct hashes
/// concatenated (EIP-712's encoding of an array of structs), the nonce and the expiry.
pub fn order_batch_struct_hash(
    account: &Address,
    order_hashes: &[[u8; 32]],
    nonce: [u8; 32],
    expiry_ms: u64,
) -> [u8; 32] {
    let mut account_word = [0u8; 32];
    account_word[12..].copy_from_slice(account.as_bytes());
    let mut expiry_word = [0u8; 32];
    expiry_word[24..].copy_from_slice(&expiry_ms.to_be_bytes());
    let words = [
        ORDER_BATCH_TYPE.type_hash(),
        account_word,
        keccak256(order_hashes.as_flattened()).0,
        nonce,
        expiry_word,
    ];
    keccak256(words.as_flattened()).0
}

impl SigningDomain {
    /// The EIP-712 digest of a batch whose orders hash to `order_hashes`: what its one signature
    /// signs.
    pub fn order_batch_digest(
        &self,
        account: &Address,
        order_hashes: &[[u8; 32]],
        nonce: [u8; 32],
        expiry_ms: u64,
    ) -> [u8; 32] {
        self.digest_of_struct_hash(&order_batch_struct_hash(account, order_hashes, nonce, expiry_ms))
    }

    /// A batch as EIP-712 typed data JSON (`OrderBatch` with its `Order`s), as
    /// `eth_signTypedData_v4` takes it.
    pub fn order_batch_typed_data(
        &self,
        account: &Address,
        orders: &[OrderMessage],
        nonce: [u8; 32],
        expiry_ms: u64,
    ) -> Value {
        let orders: Vec<Value> = orders.iter().map(|order| order.typed().message_json()).collect();
        json!({
            "types": {
                "EIP712Domain": EIP712_DOMAIN_MEMBERS.members_json(),
                ORDER_BATCH_TYPE.name: ORDER_BATCH_TYPE.members_json(),
                ORDER_TYPE.name: ORDER_TYPE.members_json(),
            },
            "primaryType": ORDER_BATCH_TYPE.name,
            "domain": self.domain_json(),
            "message": {
                "account": crate::encoding::checksummed(account),
                "orders": orders,
                "nonce": alloy_primitives::U256::from_be_bytes(nonce).to_string(),
                "expiry": expiry_ms.to_string(),
            },
        })
    }
}

/// The order hashes as `0x` hex, for the JSON of an order's proof.
pub fn order_hashes_json(order_hashes: &[[u8; 32]]) -> Value {
    Value::Array(
        order_hashes
            .iter()
            .map(|hash| Value::String(hex_prefixed(hash)))
            .collect(),
    )
}
