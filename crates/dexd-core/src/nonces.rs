//! Replay protection for requests the client signed itself: each account's nonces, kept until
//! the request that carried them has expired.
//!
//! A signed request names a `nonce` and an `expiry` (ms since the epoch). It is accepted only
//! while `now < expiry <= now + lifetime` (the lifetime is [`MAX_SIGNED_REQUEST_LIFETIME_MS`],
//! or [`MAX_SIGNED_WITHDRAWAL_LIFETIME_MS`] for a withdrawal, which waits for a final liability
//! root), and only if no live request of the same account carried the same nonce. Once a
//! request has expired it can never be accepted again, so forgetting its nonce at that moment
//! loses no protection: a signed request is accepted at most once, ever, while memory stays
//! bounded by the requests of the last lifetime.
//!
//! The bounds are per signer and shared fairly, so that nobody's signed requests can be stopped
//! by someone else's: each signer (an account, or an agent signing for it, counted apart so that
//! an agent cannot use up its owner's room) holds at most `max_live_nonces_per_account`; and once
//! the registry holds `max_live_nonces`, a signer holding less than the average share of those
//! who hold any still gets one, up to twice the limit in all.
//!
//! This module does not check signatures (the `dexd` crate does, before the command is queued) and
//! reads no clock: the time is passed in, so replay rebuilds exactly the same set.

use std::collections::{BTreeMap, BTreeSet};

use rustc_hash::{FxHashMap, FxHashSet};

use crate::money::Address;

/// The longest a signed request may stay valid: its expiry is at most this far in the future.
pub const MAX_SIGNED_REQUEST_LIFETIME_MS: u64 = 3_600_000;

/// The longest a signed withdrawal may stay valid: it is paid once a liability root covering it
/// is past the vault's challenge period, which may be hours.
pub const MAX_SIGNED_WITHDRAWAL_LIFETIME_MS: u64 = 7 * 24 * 3_600_000;

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
    /// The expiry is further ahead than the request's lifetime allows.
    ExpiryTooFar {
        /// The longest lifetime this request may have.
        max_lifetime_ms: u64,
    },
    /// A live request of the account already used this nonce.
    Reused,
    /// The registry holds its limit of live nonces, and this signer at least its share.
    Full,
    /// The signer holds its own limit of live nonces; one of them expires at `frees_at_ms`.
    AccountFull {
        /// When the signer's first live nonce expires, freeing room.
        frees_at_ms: u64,
    },
}

/// One live claim: when it expires, whose nonce it is, and who signed it (the account, or an
/// agent for it).
pub type LiveClaim = (u64, Address, Nonce, Address);

/// The live nonces of one chain, with a documented bound.
#[derive(Clone, Debug)]
pub struct NonceRegistry {
    max_live_nonces: usize,
    /// So that one signer cannot fill the chain's registry and stop everyone's signed requests.
    max_live_nonces_per_account: usize,
    live: FxHashSet<(Address, Nonce)>,
    by_expiry: BTreeSet<LiveClaim>,
    /// Each signer with live nonces: how many, and how many expire at each time. Derived from
    /// `by_expiry`.
    by_signer: FxHashMap<Address, SignerNonces>,
}

/// The live nonces of one signer, counted.
#[derive(Clone, Debug, Default)]
struct SignerNonces {
    total: usize,
    by_expiry: BTreeMap<u64, u32>,
}

impl NonceRegistry {
    /// An empty registry holding `max_live_nonces` at a time (up to twice that for signers under
    /// their share), and at most `max_live_nonces_per_account` of any one signer.
    pub fn new(max_live_nonces: usize, max_live_nonces_per_account: usize) -> NonceRegistry {
        NonceRegistry {
            max_live_nonces,
            max_live_nonces_per_account,
            live: FxHashSet::default(),
            by_expiry: BTreeSet::new(),
            by_signer: FxHashMap::default(),
        }
    }

    /// A registry restored from its live claims. A restored signer may hold more than today's
    /// limit (it was raised and lowered): it takes no new nonce until it is under the limit
    /// again.
    pub fn restore(
        max_live_nonces: usize,
        max_live_nonces_per_account: usize,
        claims: impl IntoIterator<Item = LiveClaim>,
    ) -> NonceRegistry {
        let mut registry = NonceRegistry::new(max_live_nonces, max_live_nonces_per_account);
        for (expiry_ms, account, nonce, signer) in claims {
            registry.insert(expiry_ms, account, nonce, signer);
        }
        registry
    }

    /// Whether `signer` may use `claim` for `account` at `now_ms`, the request living at most
    /// `max_lifetime_ms`. Changes nothing.
    pub fn check(
        &self,
        account: &Address,
        signer: &Address,
        claim: &NonceClaim,
        now_ms: u64,
        max_lifetime_ms: u64,
    ) -> Result<(), NonceRejection> {
        if claim.expiry_ms <= now_ms {
            return Err(NonceRejection::Expired);
        }
        if claim.expiry_ms - now_ms > max_lifetime_ms {
            return Err(NonceRejection::ExpiryTooFar { max_lifetime_ms });
        }
        if self.live.contains(&(*account, claim.nonce)) {
            return Err(NonceRejection::Reused);
        }
        let held = self.live_of(signer, now_ms);
        if held >= self.max_live_nonces_per_account {
            let frees_at_ms = self.by_signer[signer]
                .by_expiry
                .range(now_ms + 1..)
                .next()
                .map_or(now_ms, |(expiry_ms, _)| *expiry_ms);
            return Err(NonceRejection::AccountFull { frees_at_ms });
        }
        let lowest = Address::from_bytes([0; 20]);
        let expired = self
            .by_expiry
            .range(..(now_ms + 1, lowest, Nonce::default(), lowest))
            .count();
        let live = self.live.len() - expired;
        if live >= self.max_live_nonces {
            // Full: only a signer under the average share of those holding nonces gets one, so
            // a few signers that filled it stop nobody else; twice the limit is the hard end.
            let signers = self.by_signer.len().max(1);
            if live >= self.max_live_nonces.saturating_mul(2) || held >= self.max_live_nonces.div_ceil(signers) {
                return Err(NonceRejection::Full);
            }
        }
        Ok(())
    }

    /// How many nonces `signer` holds that are still live at `now_ms`.
    fn live_of(&self, signer: &Address, now_ms: u64) -> usize {
        self.by_signer.get(signer).map_or(0, |nonces| {
            // Claims that expired stay until the next record (few: each record forgets every
            // claim expired by then), and do not count.
            let expired: usize = nonces
                .by_expiry
                .range(..=now_ms)
                .map(|(_, count)| *count as usize)
                .sum();
            nonces.total - expired
        })
    }

    /// Records a claim that [`NonceRegistry::check`] accepted at `now_ms`, first forgetting
    /// every claim that has expired by then.
    pub fn record(&mut self, account: Address, signer: Address, claim: NonceClaim, now_ms: u64) {
        self.forget_expired(now_ms);
        self.insert(claim.expiry_ms, account, claim.nonce, signer);
        assert_eq!(self.live.len(), self.by_expiry.len(), "the nonce indexes agree");
    }

    fn insert(&mut self, expiry_ms: u64, account: Address, nonce: Nonce, signer: Address) {
        if self.live.insert((account, nonce)) {
            self.by_expiry.insert((expiry_ms, account, nonce, signer));
            let nonces = self.by_signer.entry(signer).or_default();
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

    /// Every live claim in a fixed order (expiry, account, nonce, signer), for the state hash.
    pub fn iter_in_order(&self) -> impl Iterator<Item = &LiveClaim> {
        self.by_expiry.iter()
    }

    fn forget_expired(&mut self, now_ms: u64) {
        while let Some(&(expiry_ms, account, nonce, signer)) = self.by_expiry.first() {
            if expiry_ms > now_ms {
                break;
            }
            self.by_expiry.pop_first();
            self.live.remove(&(account, nonce));
            let nonces = self
                .by_signer
                .get_mut(&signer)
                .expect("invariant: a live nonce's signer is counted");
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
                self.by_signer.remove(&signer);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const HOUR: u64 = MAX_SIGNED_REQUEST_LIFETIME_MS;

    fn account(byte: u8) -> Address {
        Address::from_bytes([byte; 20])
    }

    fn claim(nonce: u8, expiry_ms: u64) -> NonceClaim {
        NonceClaim {
            nonce: Nonce::from_bytes([nonce; 32]),
            expiry_ms,
        }
    }

    /// A check and record by the account itself.
    fn check(registry: &NonceRegistry, who: u8, claim: NonceClaim, now_ms: u64) -> Result<(), NonceRejection> {
        registry.check(&account(who), &account(who), &claim, now_ms, HOUR)
    }

    fn record(registry: &mut NonceRegistry, who: u8, claim: NonceClaim, now_ms: u64) {
        registry.record(account(who), account(who), claim, now_ms);
    }

    #[test]
    fn a_nonce_is_accepted_once_per_account_while_live() {
        let mut registry = NonceRegistry::new(10, 10);
        check(&registry, 1, claim(7, 2_000), 1_000).unwrap();
        record(&mut registry, 1, claim(7, 2_000), 1_000);
        assert_eq!(check(&registry, 1, claim(7, 3_000), 1_500), Err(NonceRejection::Reused));
        // Another account may use the same number.
        assert_eq!(check(&registry, 2, claim(7, 2_000), 1_500), Ok(()));
        // An agent of the account may not: the nonce is the account's.
        assert_eq!(
            registry.check(&account(1), &account(9), &claim(7, 2_000), 1_500, HOUR),
            Err(NonceRejection::Reused)
        );
    }

    #[test]
    fn expired_and_far_expiries_are_refused() {
        let registry = NonceRegistry::new(10, 10);
        assert_eq!(
            check(&registry, 1, claim(1, 1_000), 1_000),
            Err(NonceRejection::Expired)
        );
        assert_eq!(
            check(&registry, 1, claim(1, 1_000 + HOUR + 1), 1_000),
            Err(NonceRejection::ExpiryTooFar { max_lifetime_ms: HOUR })
        );
        assert_eq!(check(&registry, 1, claim(1, 1_000 + HOUR), 1_000), Ok(()));
        // A withdrawal may live a week.
        assert_eq!(
            registry.check(
                &account(1),
                &account(1),
                &claim(1, 1_000 + HOUR + 1),
                1_000,
                MAX_SIGNED_WITHDRAWAL_LIFETIME_MS
            ),
            Ok(())
        );
    }

    #[test]
    fn expired_claims_are_forgotten_and_free_room() {
        let mut registry = NonceRegistry::new(2, 2);
        record(&mut registry, 1, claim(1, 2_000), 1_000);
        record(&mut registry, 1, claim(2, 5_000), 1_000);
        assert_eq!(
            check(&registry, 1, claim(3, 6_000), 1_500),
            Err(NonceRejection::AccountFull { frees_at_ms: 2_000 })
        );
        // At 2,000 the first claim has expired, so there is room again.
        check(&registry, 1, claim(3, 6_000), 2_000).unwrap();
        record(&mut registry, 1, claim(3, 6_000), 2_000);
        assert_eq!(registry.len(), 2);
        assert_eq!(check(&registry, 1, claim(2, 6_000), 2_000), Err(NonceRejection::Reused));
    }

    #[test]
    fn one_account_cannot_fill_the_registry() {
        let mut registry = NonceRegistry::new(10, 2);
        record(&mut registry, 1, claim(1, 5_000), 1_000);
        record(&mut registry, 1, claim(2, 3_000), 1_000);
        assert_eq!(
            check(&registry, 1, claim(3, 6_000), 1_500),
            Err(NonceRejection::AccountFull { frees_at_ms: 3_000 })
        );
        // Others are not held up, and once one of the account's claims expires it has room.
        assert_eq!(check(&registry, 2, claim(3, 6_000), 1_500), Ok(()));
        assert_eq!(check(&registry, 1, claim(3, 6_000), 3_000), Ok(()));
        record(&mut registry, 1, claim(3, 6_000), 3_000);
        assert_eq!(registry.by_signer[&account(1)].total, 2);
        // Everything expired: nothing of the account is left behind.
        record(&mut registry, 2, claim(9, 9_000), 8_000);
        assert!(!registry.by_signer.contains_key(&account(1)));
        assert_eq!(registry.len(), 1);
    }

    #[test]
    fn an_agent_holds_its_own_room_and_never_its_owners() {
        // Account 1 with its agent 9; each signer may hold 2.
        let mut registry = NonceRegistry::new(100, 2);
        for nonce in [1, 2] {
            registry
                .check(&account(1), &account(9), &claim(nonce, 5_000), 1_000, HOUR)
                .unwrap();
            registry.record(account(1), account(9), claim(nonce, 5_000), 1_000);
        }
        assert_eq!(
            registry.check(&account(1), &account(9), &claim(3, 5_000), 1_000, HOUR),
            Err(NonceRejection::AccountFull { frees_at_ms: 5_000 })
        );
        // The owner's own signed requests (a revoke, a withdrawal) still go in.
        assert_eq!(check(&registry, 1, claim(3, 5_000), 1_000), Ok(()));
    }

    #[test]
    fn signers_that_filled_the_registry_stop_nobody_under_their_share() {
        // Three signers fill a registry of 6, two each.
        let mut registry = NonceRegistry::new(6, 2);
        for who in [1, 2, 3] {
            for nonce in [1, 2] {
                record(&mut registry, who, claim(nonce, 9_000), 1_000);
            }
        }
        // A fourth signer holds nothing, under the share of 6 / 3: it gets room.
        assert_eq!(check(&registry, 4, claim(1, 9_000), 1_000), Ok(()));
        record(&mut registry, 4, claim(1, 9_000), 1_000);
        // Six more newcomers, each once: the registry grows, but never past twice its limit.
        let mut taken = 7;
        for who in 5..=20 {
            if check(&registry, who, claim(1, 9_000), 1_000).is_ok() {
                record(&mut registry, who, claim(1, 9_000), 1_000);
                taken += 1;
            }
        }
        assert_eq!(taken, 12, "twice the limit");
        assert_eq!(check(&registry, 21, claim(1, 9_000), 1_000), Err(NonceRejection::Full));
    }
}
