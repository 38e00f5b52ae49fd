//! Many signatures checked at once, for a reader of the journal that checks thousands of them
//! in a row (the auditor): whether every `(digest, signature, signer key)` of a batch is a
//! signature [`recover_signer`](crate::recover_signer) recovers to that key, at well under half
//! the cost of recovering each one.
//!
//! Recovery takes `R`, the point whose x is the signature's `r` and whose y has the parity of
//! its `v`, and answers `Q = r⁻¹(s·R − z·G)`. So a signature recovers to a known key `Q` exactly
//! when `s·R − z·G − r·Q = 0`. A batch checks `Σ aᵢ(sᵢ·Rᵢ − zᵢ·G − rᵢ·Qᵢ) = 0` in one multi-scalar
//! multiplication (arkworks' Pippenger), the terms of one signer's key summed into one: with
//! weights `aᵢ` the signer of the batch cannot choose, a batch with any failing signature sums to
//! zero with probability about 2⁻¹²⁸. The weights are 128 bits each from the thread's CSPRNG
//! (`rand::thread_rng`, seeded by the system), drawn afresh for every batch: whoever made the
//! signatures cannot know them, and the answer is the same every time but with that chance.
//!
//! `R` is lifted with libsecp256k1 (its compressed-key parse, the same square root recovery
//! takes); the keys are those recovered once per signer ([`SignerKey::recover`]).
//!
//! It does not say *which* signature fails: a batch that does not hold is checked one signature
//! at a time by the caller, which also handles signers whose key it does not know yet.

use std::collections::HashMap;

use ark_ec::{AffineRepr, VariableBaseMSM};
use ark_ff::{PrimeField, Zero};
use ark_secp256k1::{Affine, Fr, Projective};
use dexd_core::Address;
use rand::Rng;
use secp256k1::PublicKey;

use crate::keys::{address_of_public_key, recover_public_key};

/// A signer's public key, in the form the batch check computes with, and as bytes (`x ‖ y`).
#[derive(Debug, Clone, Copy)]
pub struct SignerKey {
    point: Affine,
    bytes: [u8; 64],
}

impl PartialEq for SignerKey {
    fn eq(&self, other: &SignerKey) -> bool {
        self.bytes == other.bytes
    }
}

impl Eq for SignerKey {}

impl std::hash::Hash for SignerKey {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.bytes.hash(state);
    }
}

impl SignerKey {
    /// The key of `public_key`.
    pub fn of(public_key: &PublicKey) -> SignerKey {
        let uncompressed = public_key.serialize_uncompressed();
        let mut bytes = [0u8; 64];
        bytes.copy_from_slice(&uncompressed[1..]);
        // A parsed key is on the curve: its coordinates are below the field's modulus.
        let point = Affine::new_unchecked(element(&bytes[..32]), element(&bytes[32..]));
        SignerKey { point, bytes }
    }

    /// The address and key that a 65-byte `r ‖ s ‖ v` signature over `digest` recovers to (what
    /// [`recover_signer`](crate::recover_signer) answers, with the key).
    pub fn recover(digest: [u8; 32], signature: &[u8; 65]) -> Option<(Address, SignerKey)> {
        let public_key = recover_public_key(digest, signature)?;
        Some((address_of_public_key(&public_key), SignerKey::of(&public_key)))
    }
}

/// The most keys a [`SignerKeys`] holds: about 100 bytes each, so at most about 10 MB. Past it,
/// the keys are forgotten and learnt again (one recovery per signer), so that no number of
/// signers grows it further.
pub const MAX_SIGNER_KEYS: usize = 100_000;

/// The keys of the signers seen so far, by address.
#[derive(Debug, Default, Clone)]
pub struct SignerKeys {
    keys: HashMap<Address, SignerKey>,
}

impl SignerKeys {
    /// No keys.
    pub fn new() -> SignerKeys {
        SignerKeys::default()
    }

    /// The key of `signer`, when known.
    pub fn get(&self, signer: &Address) -> Option<&SignerKey> {
        self.keys.get(signer)
    }

    /// Remembers `key` as `signer`'s (the caller recovered it from the signer's signature).
    pub fn insert(&mut self, signer: Address, key: SignerKey) {
        if self.keys.len() >= MAX_SIGNER_KEYS && !self.keys.contains_key(&signer) {
            self.keys.clear();
        }
        self.keys.insert(signer, key);
    }

    /// How many keys it holds.
    pub fn len(&self) -> usize {
        self.keys.len()
    }

    /// Whether it holds none.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// One signature of a batch: the digest signed, the 65-byte `r ‖ s ‖ v` signature, and the key
/// it must recover to.
#[derive(Debug, Clone, Copy)]
pub struct BatchItem<'a> {
    /// The digest signed.
    pub digest: [u8; 32],
    /// The signature, as [`recover_signer`](crate::recover_signer) takes it.
    pub signature: &'a [u8; 65],
    /// The key it must recover to.
    pub key: &'a SignerKey,
}

/// The element of `F` that 32 big-endian bytes are, reduced modulo its modulus (as recovery
/// reduces a digest). Without `from_be_bytes_mod_order`'s copy and byte-by-byte steps: one
/// conversion when the value is below the modulus, as every coordinate and `r`, `s` are.
fn element<F: PrimeField<BigInt = ark_ff::BigInt<4>>>(bytes: &[u8]) -> F {
    assert_eq!(bytes.len(), 32, "an element is read from 32 bytes");
    let mut limbs = [0u64; 4];
    for (index, chunk) in bytes.chunks_exact(8).enumerate() {
        limbs[3 - index] = u64::from_be_bytes(chunk.try_into().expect("8 bytes"));
    }
    F::from_bigint(ark_ff::BigInt(limbs)).unwrap_or_else(|| F::from_be_bytes_mod_order(bytes))
}

/// secp256k1's group order `n`, big-endian.
const CURVE_ORDER: [u8; 32] = [
    0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xba, 0xae, 0xdc,
    0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
];

/// `r`, `s` and the point `R` of a signature, when recovery would take it: `v` 27, 28, 0 or 1,
/// `r` and `s` neither zero nor past the order, and `r` the x of a point of the curve.
fn parts(signature: &[u8; 65]) -> Option<(Fr, Fr, Affine)> {
    let odd = match signature[64] {
        27 | 0 => false,
        28 | 1 => true,
        _ => return None,
    };
    let (r, s) = (&signature[..32], &signature[32..64]);
    let in_range = |value: &[u8]| value < &CURVE_ORDER[..] && value.iter().any(|byte| *byte != 0);
    if !in_range(r) || !in_range(s) {
        return None;
    }
    let mut compressed = [0u8; 33];
    compressed[0] = if odd { 0x03 } else { 0x02 };
    compressed[1..].copy_from_slice(r);
    let point = SignerKey::of(&PublicKey::from_slice(&compressed).ok()?).point;
    Some((element(r), element(s), point))
}

/// Whether every item's signature recovers to its key, as
/// [`recover_signer`](crate::recover_signer) would (its address being the key's), in one check.
/// False when any does not (or is malformed); the caller then checks them one by one to find
/// which. An empty batch holds.
pub fn all_signed(items: &[BatchItem<'_>]) -> bool {
    if items.is_empty() {
        return true;
    }
    let Some(parsed) = items
        .iter()
        .map(|item| parts(item.signature))
        .collect::<Option<Vec<_>>>()
    else {
        return false;
    };
    // Each term divided by its `s` (never 0): `aᵢ·Rᵢ − (aᵢzᵢ/sᵢ)·G − (aᵢrᵢ/sᵢ)·Qᵢ`, so that the
    // many points `Rᵢ` are multiplied by 128-bit weights, half the work of 256-bit scalars.
    let mut inverses: Vec<Fr> = parsed.iter().map(|(_, s, _)| *s).collect();
    ark_ff::batch_inversion(&mut inverses);
    let mut random = rand::thread_rng();
    let mut bases = Vec::with_capacity(items.len() + 1);
    let mut scalars = Vec::with_capacity(items.len() + 1);
    let mut generator_scalar = Fr::zero();
    let mut key_scalars: HashMap<&SignerKey, Fr> = HashMap::new();
    for ((item, (r, _, point)), inverse) in items.iter().zip(parsed).zip(inverses) {
        // 128 bits from the thread's CSPRNG, never 0.
        let weight = Fr::from(random.gen::<u128>().max(1));
        let weight_over_s = weight * inverse;
        bases.push(point);
        scalars.push(weight);
        generator_scalar -= weight_over_s * element::<Fr>(&item.digest);
        *key_scalars.entry(item.key).or_insert_with(Fr::zero) -= weight_over_s * r;
    }
    bases.push(Affine::generator());
    scalars.push(generator_scalar);
    for (key, scalar) in key_scalars {
        bases.push(key.point);
        scalars.push(scalar);
    }
    Projective::msm(&bases, &scalars).is_ok_and(|sum| sum.is_zero())
}

#[cfg(test)]
mod tests {
    use ark_ff::BigInteger;
    use proptest::prelude::*;

    use alloy_primitives::keccak256;

    use super::*;
    use crate::{recover_signer, PrivateKey};

    fn key(index: u8) -> PrivateKey {
        PrivateKey::parse(&format!("0x{}", hex::encode([index.max(1); 32]))).unwrap()
    }

    /// A signature, a digest and the address and key of its signer, for `count` digests signed
    /// by `signers` keys in turn.
    fn signed(count: usize, signers: u8) -> Vec<([u8; 32], [u8; 65], Address)> {
        (0..count)
            .map(|index| {
                let key = key(1 + (index % usize::from(signers)) as u8);
                let digest = keccak256((index as u64).to_be_bytes()).0;
                (digest, key.sign_digest(digest), key.address())
            })
            .collect()
    }

    fn keys_of(items: &[([u8; 32], [u8; 65], Address)]) -> SignerKeys {
        let mut keys = SignerKeys::new();
        for (digest, signature, _) in items {
            let (address, key) = SignerKey::recover(*digest, signature).unwrap();
            keys.insert(address, key);
        }
        keys
    }

    /// The batch check's answer, the signers' keys taken from `keys`.
    fn batch_holds(items: &[([u8; 32], [u8; 65], Address)], keys: &SignerKeys) -> bool {
        let batch: Vec<BatchItem<'_>> = items
            .iter()
            .map(|(digest, signature, signer)| BatchItem {
                digest: *digest,
                signature,
                key: keys.get(signer).unwrap(),
            })
            .collect();
        all_signed(&batch)
    }

    /// The same signature with `s` replaced by `n − s` and `v` flipped: it recovers the same key.
    fn high_s(signature: &[u8; 65]) -> [u8; 65] {
        let s = -Fr::from_be_bytes_mod_order(&signature[32..64]);
        let mut changed = *signature;
        changed[32..64].copy_from_slice(&s.into_bigint().to_bytes_be());
        changed[64] = if signature[64] == 27 { 28 } else { 27 };
        changed
    }

    #[test]
    fn an_element_is_what_its_bytes_are_modulo_the_modulus() {
        // The field's modulus p itself (which is 0 in the field, and past the group's order).
        let mut field_modulus = [0xffu8; 32];
        field_modulus[27..].copy_from_slice(&[0xfe, 0xff, 0xff, 0xfc, 0x2f]);
        for bytes in [[0u8; 32], [0xff; 32], CURVE_ORDER, field_modulus, keccak256(b"any").0] {
            assert_eq!(element::<Fr>(&bytes), Fr::from_be_bytes_mod_order(&bytes));
            assert_eq!(
                element::<ark_secp256k1::Fq>(&bytes),
                ark_secp256k1::Fq::from_be_bytes_mod_order(&bytes)
            );
        }
    }

    #[test]
    fn a_batch_of_good_signatures_holds_in_every_form_recovery_takes() {
        let mut items = signed(40, 5);
        let keys = keys_of(&items);
        // `v` 0 or 1, and a high `s`, recover the same signer.
        items[3].1[64] -= 27;
        items[4].1 = high_s(&items[4].1);
        for (digest, signature, signer) in &items {
            assert_eq!(recover_signer(*digest, signature), Some(*signer));
        }
        assert!(batch_holds(&items, &keys));
        assert!(all_signed(&[]));
    }

    /// A change made to one signed item.
    type Mutation = Box<dyn Fn(&mut ([u8; 32], [u8; 65], Address))>;

    #[test]
    fn one_bad_signature_fails_the_batch() {
        let items = signed(30, 3);
        let keys = keys_of(&items);
        let other = key(9).sign_digest(items[7].0);
        let mutations: Vec<(&str, Mutation)> = vec![
            ("v flipped", Box::new(|item| item.1[64] ^= 0b111)),
            ("v out of range", Box::new(|item| item.1[64] = 29)),
            ("s changed", Box::new(|item| item.1[40] ^= 1)),
            ("r changed", Box::new(|item| item.1[5] ^= 1)),
            ("s zero", Box::new(|item| item.1[32..64].fill(0))),
            ("r past the order", Box::new(|item| item.1[..32].fill(0xff))),
            ("the digest changed", Box::new(|item| item.0[0] ^= 1)),
            ("another key's signature", Box::new(move |item| item.1 = other)),
        ];
        for (name, mutate) in mutations {
            let mut changed = items.clone();
            mutate(&mut changed[7]);
            assert_ne!(
                recover_signer(changed[7].0, &changed[7].1),
                Some(changed[7].2),
                "{name}"
            );
            assert!(!batch_holds(&changed, &keys), "{name}: the batch holds");
        }
        // A signature checked against another signer's key.
        let mut wrong_signer = items.clone();
        wrong_signer[7].2 = items[8].2;
        assert!(!batch_holds(&wrong_signer, &keys));
    }

    #[test]
    fn two_bad_signatures_that_cancel_without_weights_fail_the_batch() {
        // Item 0's s raised by d and item 1's lowered by d where both have the same R would
        // cancel in an unweighted sum; the weights keep them apart. Same digest and key: R alike.
        let key = key(4);
        let digest = [7u8; 32];
        let signature = key.sign_digest(digest);
        let mut raised = signature;
        let mut lowered = signature;
        let s = Fr::from_be_bytes_mod_order(&signature[32..64]);
        raised[32..64].copy_from_slice(&(s + Fr::from(5u8)).into_bigint().to_bytes_be());
        lowered[32..64].copy_from_slice(&(s - Fr::from(5u8)).into_bigint().to_bytes_be());
        let items = vec![(digest, raised, key.address()), (digest, lowered, key.address())];
        let keys = keys_of(&[(digest, signature, key.address())]);
        assert!(!batch_holds(&items, &keys));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(24))]
        /// Whatever is changed, the batch holds exactly when every signature recovers to its
        /// signer one by one.
        #[test]
        fn the_batch_agrees_with_recovery(
            changes in proptest::collection::vec((0usize..12, 0usize..65, 1u8..=255), 0..3),
        ) {
            let mut items = signed(12, 4);
            let keys = keys_of(&items);
            for (index, byte, bits) in changes {
                items[index].1[byte] ^= bits;
            }
            let one_by_one = items
                .iter()
                .all(|(digest, signature, signer)| recover_signer(*digest, signature) == Some(*signer));
            prop_assert_eq!(batch_holds(&items, &keys), one_by_one);
        }
    }
}
