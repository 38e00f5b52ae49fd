//! dexd-crypto: keys, addresses and EIP-712 signatures.
//!
//! - [`keys`]: a request's secp256k1 secret ([`PrivateKey`]), the address it signs for, signing a
//!   digest and recovering the signer of one.
//! - [`encoding`]: addresses (EIP-55), hex and uint256 as text.
//! - [`eip712`]: the venue's signing domain, the request types clients sign, their digests and
//!   their JSON form (`GET /account/eip712`).
//! - [`order_batch`]: a batch of orders signed once, and what ties each order to its signature.
//! - [`requests`]: the message an account signs for each request, built from the engine's
//!   command, for the handlers that sign and check it and the auditor that checks it again.
//! - [`signature_batch`]: many signatures checked at once against their signers' known keys
//!   (the auditor's way through a journal).
//! - [`liability_tree`]: the Merkle tree of what the venue owes each account in each token, as
//!   OpenZeppelin's `StandardMerkleTree` builds it, its proofs and their check.
//!
//! Everything here is a pure function of its input (the one exception, [`AddressCache`], draws a
//! random secret at start, and [`signature_batch`] draws its weights at random: its answer is
//! the same every time but with a chance of about 2⁻¹²⁸). It does not read keys from files or the environment, parse HTTP or
//! touch the engine.

#![forbid(unsafe_code)]

pub mod eip712;
pub mod encoding;
pub mod keys;
pub mod liability_tree;
pub mod order_batch;
pub mod requests;
pub mod signature_batch;

#[cfg(test)]
mod tests;

pub use eip712::{
    request_types_json, FieldValue, OrderMessage, SigningDomain, StructType, TypedMessage, AMEND_ORDER_TYPE,
    APPROVE_AGENT_TYPE, CANCEL_ALL_AFTER_TYPE, CANCEL_ALL_TYPE, CANCEL_ORDER_TYPE, DEPOSIT_TYPE, DOMAIN_NAME,
    DOMAIN_VERSION, ORDER_TYPE, REQUEST_TYPES, REVOKE_AGENT_TYPE, SUBACCOUNT_TRANSFER_TYPE, WITHDRAWAL_TYPE,
    WITHDRAW_TYPE,
};
pub use encoding::{checksummed, hex_prefixed, parse_address, parse_hex_bytes, parse_uint256, AddressError};
pub use keys::{
    address_of_public_key, is_contract_canonical_signature, recover_public_key, recover_signer, AddressCache,
    InvalidPrivateKey, PrivateKey, MAX_ADDRESS_CACHE_ENTRIES,
};
pub use order_batch::{BatchProof, MAX_ORDERS_PER_BATCH_SIGNATURE, ORDER_BATCH_TYPE};
pub use requests::{RequestMessages, SignedCommand, SignedMessage};
pub use signature_batch::{all_signed, BatchItem, SignerKey, SignerKeys, MAX_SIGNER_KEYS};
