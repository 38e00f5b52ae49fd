//! Replay protection for requests the client signed itself: each account's nonces, kept until
//! the request that carried them has expired.
//!
//! A signed request names a `nonce` and an `expiry` (ms since the epoch). It is accepted only
//! while `now < expiry <= now + MAX_SIGNED_REQUEST_LIFETIME_MS`, and only if no live request of
//! the same account carried the same nonce. Once a request has expired it can never be accepted
//! again, so forgetting its nonce at that moment loses no protection: a signed request is accepted
//! at most once, ever, while memory stays bounded by the requests of the last lifetime.
//!
//! This module does not check signatures (the `dexd` crate does, before the command is queued) and
//! reads no clock: the time is passed in, so replay rebuilds exactly the same set.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::money::Address;

/// The longest a signed request may stay valid: its expiry is at most this far in the future.
pub const MAX_SIGNED_REQUEST_LIFETIME_MS: u64 = 3_600_000;

/// A client's nonce: any uint256, big-endian.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord, Default)]
pub struct Nonce([u8; 32]);

impl Nonce {
    /// The nonce with these big-endian bytes.
    pub fn from_bytes(bytes: [u8; 32]) -> Nonce {
        Nonce(bytes)
    }

    /// Its big-endian bytes.
    pub fn as_bytes(&self) -> &[u8; 32] {
        &self.0
    }
}

/// What a client-signed request claims: a nonce and the time after which it is void.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NonceClaim {
    /// The request's nonce.
    pub nonce: Nonce,
    /// The request is void at and after this time, in ms since the epoch.
    pub expiry_ms: u64,
}

/// Why a claim was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NonceRejection {
    /// The expiry has passed.
    Expired,
    /// The expiry is further ahead than [`MAX_SIGNED_REQUEST_LIFETIME_MS`].
    ExpiryTooFar,
    /// A live request of the account already used this nonce.
    Reused,
    /// The registry holds its limit of live nonces.
    Full,
    /// The account holds its own limit of live nonces; one of them expires at `frees_at_ms`.
    AccountFull {
        /// When the account's first live nonce expires, freeing room.
        frees_at_ms: u64,
    },
}

/// The live nonces of one chain, with a documented bound.
#[derive(Clone, Debug)]
pub struct NonceRegistry {
    max_live_nonces: usize,
    /// So that one account cannot fill the chain's registry and stop everyone's signed requests.
    max_live_nonces_per_account: usize,
    live: FxHashSet<(Address, Nonce)>,
    by_expiry: BTreeSet<(u64, Address, Nonce)>,
    /// Each account with live nonces: how many, and how many expire at each time. Derived from
    /// `by_expiry`.
    by_account: FxHashMap<Address, AccountNonces>,
}

/// The live nonces of one account, counted.
#[derive(Clone, Debug, Default)]
struct AccountNonces {
    total: usize,
    by_expiry: BTreeMap<u64, u32>,
}

impl NonceRegistry {
    /// An empty registry holding at most `max_live_nonces` at a time, and at most
    /// `max_live_nonces_per_account` of any one account.
    pub fn new(max_live_nonces: usize, max_live_nonces_per_account: usize) -> NonceRegistry {
        NonceRegistry {
            max_live_nonces,
            max_live_nonces_per_account,
            live: FxHashSet::default(),
            by_expiry: BTreeSet::new(),
            by_account: FxHashMap::default(),
        }
    }

    /// A registry restored from its live claims `(expiry, account, nonce)`. A restored account
    /// may hold more than today's limit (it was raised and lowered): it takes no new nonce until
    /// it is under the limit again.
    pub fn restore(
        max_live_nonces: usize,
        max_live_nonces_per_account: usize,
        claims: impl IntoIterator<Item = (u64, Address, Nonce)>,
    ) -> NonceRegistry {
        let mut registry = NonceRegistry::new(max_live_nonces, max_live_nonces_per_account);
        for (expiry_ms, account, nonce) in claims {
            registry.insert(expiry_ms, account, nonce);
        }
        registry
    }

    /// Whether `account` may use `claim` at `now_ms`. Changes nothing.
    pub fn check(&self, account: &Address, claim: &NonceClaim, now_ms: u64) -> Result<(), NonceRejection> {
        if claim.expiry_ms <= now_ms {
            return Err(NonceRejection::Expired);
        }
        if claim.expiry_ms - now_ms > MAX_SIGNED_REQUEST_LIFETIME_MS {
            return Err(NonceRejection::ExpiryTooFar);
        }
        if self.live.contains(&(*account, claim.nonce)) {
            return Err(NonceRejection::Reused);
        }
        if self.live.len() >= self.max_live_nonces && !self.has_expired_entries(now_ms) {
            return Err(NonceRejection::Full);
        }
        if let Some(nonces) = self.by_account.get(account) {
            // Claims that expired stay until the next record (few: each record forgets every
            // claim expired by then), and do not count.
            let expired: usize = nonces
                .by_expiry
                .range(..=now_ms)
                .map(|(_, count)| *count as usize)
                .sum();
            if nonces.total - expired >= self.max_live_nonces_per_account {
                let frees_at_ms = nonces
                    .by_expiry
                    .range(now_ms + 1..)
                    .next()
                    .map_or(now_ms, |(expiry_ms, _)| *expiry_ms);
                return Err(NonceRejection::AccountFull { frees_at_ms });
            }
        }
        Ok(())
    }

    /// Records a claim that [`NonceRegistry::check`] accepted at `now_ms`, first forgetting
    /// every claim that has expired by then.
    pub fn record(&mut self, account: Address, claim: NonceClaim, now_ms: u64) {
        self.forget_expired(now_ms);
        self.insert(claim.expiry_ms, account, claim.nonce);
        assert_eq!(self.live.len(), self.by_expiry.len(), "the nonce indexes agree");
    }

    fn insert(&mut self, expiry_ms: u64, account: Address, nonce: Nonce) {
        if self.live.insert((account, nonce)) {
            self.by_expiry.insert((expiry_ms, account, nonce));
            let nonces = self.by_account.entry(account).or_default();
            nonces.total += 1;
            *nonces.by_expiry.entry(expiry_ms).or_default() += 1;
        }
    }

    /// How many nonces are live.
    pub fn len(&self) -> usize {
        self.live.len()
    }

    /// Whether no nonce is live.
    pub fn is_empty(&self) -> bool {
        self.live.is_empty()
    }

    /// Every live claim in a fixed order (expiry, account, nonce), for the state hash.
    pub fn iter_in_order(&self) -> impl Iterator<Item = &(u64, Address, Nonce)> {
        self.by_expiry.iter()
    }

    fn has_expired_entries(&self, now_ms: u64) -> bool {
        self.by_expiry
            .first()
            .is_some_and(|(expiry_ms, _, _)| *expiry_ms <= now_ms)
    }

    fn forget_expired(&mut self, now_ms: u64) {
        while let Some(&(expiry_ms, account, nonce)) = self.by_expiry.first() {
            if expiry_ms > now_ms {
                break;
            }
            self.by_expiry.pop_first();
            self.live.remove(&(account, nonce));
            let nonces = self
                .by_account
                .get_mut(&account)
                .expect("invariant: a live nonce's account is counted");
            let count = nonces
                .by_expiry
                .get_mut(&expiry_ms)
                .expect("invariant: a live nonce's expiry is counted");
            *count -= 1;
            if *count == 0 {
                nonces.by_expiry.remove(&expiry_ms);
            }
            nonces.total -= 1;
            if nonces.total == 0 {
                self.by_account.remove(&account);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn account(byte: u8) -> Address {
        Address::from_bytes([byte; 20])
    }

    fn claim(nonce: u8, expiry_ms: u64) -> NonceClaim {
        NonceClaim {
            nonce: Nonce::from_bytes([nonce; 32]),
            expiry_ms,
        }
    }

    #[test]
    fn a_nonce_is_accepted_once_per_account_while_live() {
        let mut registry = NonceRegistry::new(10, 10);
        registry.check(&account(1), &claim(7, 2_000), 1_000).unwrap();
        registry.record(account(1), claim(7, 2_000), 1_000);
        assert_eq!(
            registry.check(&account(1), &claim(7, 3_000), 1_500),
            Err(NonceRejection::Reused)
        );
        // Another account may use the same number.
        assert_eq!(registry.check(&account(2), &claim(7, 2_000), 1_500), Ok(()));
    }

    #[test]
    fn expired_and_far_expiries_are_refused() {
        let registry = NonceRegistry::new(10, 10);
        assert_eq!(
            registry.check(&account(1), &claim(1, 1_000), 1_000),
            Err(NonceRejection::Expired)
        );
        assert_eq!(
            registry.check(
                &account(1),
                &claim(1, 1_000 + MAX_SIGNED_REQUEST_LIFETIME_MS + 1),
                1_000
            ),
            Err(NonceRejection::ExpiryTooFar)
        );
        assert_eq!(
            registry.check(&account(1), &claim(1, 1_000 + MAX_SIGNED_REQUEST_LIFETIME_MS), 1_000),
            Ok(())
        );
    }

    #[test]
    fn expired_claims_are_forgotten_and_free_room() {
        let mut registry = NonceRegistry::new(2, 2);
        registry.record(account(1), claim(1, 2_000), 1_000);
        registry.record(account(1), claim(2, 5_000), 1_000);
        assert_eq!(
            registry.check(&account(1), &claim(3, 6_000), 1_500),
            Err(NonceRejection::Full)
        );
        // At 2,000 the first claim has expired, so there is room again.
        registry.check(&account(1), &claim(3, 6_000), 2_000).unwrap();
        registry.record(account(1), claim(3, 6_000), 2_000);
        assert_eq!(registry.len(), 2);
        assert_eq!(
            registry.check(&account(1), &claim(2, 6_000), 2_000),
            Err(NonceRejection::Reused)
        );
    }

    #[test]
    fn one_account_cannot_fill_the_registry() {
        let mut registry = NonceRegistry::new(10, 2);
        registry.record(account(1), claim(1, 5_000), 1_000);
        registry.record(account(1), claim(2, 3_000), 1_000);
        assert_eq!(
            registry.check(&account(1), &claim(3, 6_000), 1_500),
            Err(NonceRejection::AccountFull { frees_at_ms: 3_000 })
        );
        // Others are not held up, and once one of the account's claims expires it has room.
        assert_eq!(registry.check(&account(2), &claim(3, 6_000), 1_500), Ok(()));
        assert_eq!(registry.check(&account(1), &claim(3, 6_000), 3_000), Ok(()));
        registry.record(account(1), claim(3, 6_000), 3_000);
        assert_eq!(registry.by_account[&account(1)].total, 2);
        // Everything expired: nothing of the account is left behind.
        registry.record(account(2), claim(9, 9_000), 8_000);
        assert!(!registry.by_account.contains_key(&account(1)));
        assert_eq!(registry.len(), 1);
    }
}
