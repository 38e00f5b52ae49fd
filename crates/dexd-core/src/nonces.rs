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
//! The bounds are per holder and shared fairly, so that nobody's signed requests can be stopped
//! by someone else's. A claim's holder is whose room it takes: under
//! [`crate::configuration::RULE_NONCES_PER_OWNER`] the owner of the account (the account
//! itself, or the owner of a subaccount), whoever signed, so that an account and its agents and
//! subaccounts hold one room, not one each; in journals from before that rule, the signer. Each
//! holder holds at most `max_live_nonces_per_account`, of which its agents together at most all
//! but [`owner_reserve`] (so that an agent cannot use up its owner's room: the owner's own
//! revoke or withdrawal still goes in); and once the registry holds `max_live_nonces`, a holder
//! holding less than the average share of those who hold any still gets one, up to twice the
//! limit in all.
//!
//! This module does not check signatures (the `dexd` crate does, before the command is queued) and
//! reads no clock: the time is passed in, so replay rebuilds exactly the same set.

use std::collections::BTreeMap;

use rustc_hash::FxHashMap;

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
    /// For an order of a batch signed once: which batch and which of its orders. Every order
    /// of the batch carries the batch's nonce; the registry applies each of them at most once.
    pub batch: Option<BatchSlot>,
    /// Whether the venue signed the request with the account's key (a `privateKey` request)
    /// rather than the client: its expiry is then held to a window around the command's time
    /// ([`crate::EngineLimits::venue_signed_window_ms`]) instead of a client's lifetime.
    pub venue_signed: bool,
}

impl NonceClaim {
    /// The claim the registry holds for a venue-signed request accepted in a window of
    /// `window_ms` either side of its time, with the lifetime it may have: its nonce is kept
    /// until `window_ms` after its signed expiry, the last time a copy could still fall in the
    /// window, so a copy is refused either by the window or as a reused nonce.
    pub fn held_for_venue_window(self, window_ms: u64) -> (NonceClaim, u64) {
        let held = NonceClaim {
            expiry_ms: self.expiry_ms.saturating_add(window_ms),
            ..self
        };
        (held, window_ms.saturating_mul(2))
    }
}

/// The most orders a batch signed once may hold for the registry to follow each: the bits of
/// [`BatchSlot::index`]'s record.
pub const MAX_ORDERS_PER_SIGNED_BATCH: usize = 64;

/// One order's place in a batch signed once, as its nonce claim carries it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BatchSlot {
    /// What tells this batch from another signed with the same nonce: the `r` of its one
    /// signature (two different messages signed by one key never share it).
    pub identity: [u8; 32],
    /// The order's index in the batch, under [`MAX_ORDERS_PER_SIGNED_BATCH`].
    pub index: u8,
    /// Whether this order starts a copy of the batch: it claims the nonce, which must be fresh.
    /// The others follow that claim: the nonce must be live, claimed by the same batch, and
    /// their index not yet applied. So a batch sent again, in whatever grouping it reaches the
    /// engine, never places an order twice.
    pub starts: bool,
}

/// The orders of one live batch nonce that were applied.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct LiveBatch {
    /// The batch that claimed the nonce ([`BatchSlot::identity`]).
    pub identity: [u8; 32],
    /// Bit `i` is set once the batch's order `i` was applied.
    pub applied: u64,
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
    /// A live request of the account already used this nonce (or, for an order of a batch
    /// signed once, this very order was applied before).
    Reused,
    /// An order following a batch's claim whose batch holds no live claim of the nonce.
    BatchNotClaimed,
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

/// Who a claim is for, who signed it, and whose room it takes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ClaimParties {
    /// Whose nonce it is (the command's account).
    pub account: Address,
    /// Who signed (the account, its agent, or a subaccount's owner).
    pub signer: Address,
    /// Whose room it takes: the signer, or under
    /// [`crate::configuration::RULE_NONCES_PER_OWNER`] the account's owner.
    pub holder: Address,
}

impl ClaimParties {
    /// Whether an agent signed: the signer is not the holder itself.
    fn by_agent(&self) -> bool {
        self.signer != self.holder
    }
}

/// The part of a holder's room its agents can never take: a tenth of it, at least one nonce,
/// so that an owner whose agents are busy can still revoke them or withdraw.
pub fn owner_reserve(max_live_nonces_per_account: usize) -> usize {
    (max_live_nonces_per_account / 10).max(1)
}

/// The live nonces of one chain, with a documented bound.
#[derive(Clone, Debug)]
pub struct NonceRegistry {
    max_live_nonces: usize,
    /// So that one signer cannot fill the chain's registry and stop everyone's signed requests.
    max_live_nonces_per_account: usize,
    /// Each live nonce, by account and nonce, with its claim's holder.
    live: FxHashMap<(Address, Nonce), Address>,
    /// The live nonces claimed by a batch signed once, with the orders of it applied; each is
    /// also in `live`, and leaves with it.
    batches: FxHashMap<(Address, Nonce), LiveBatch>,
    /// Each live claim by its expiry: a list per expiry time, sorted by (account, nonce,
    /// signer), so that walking it gives [`LiveClaim`]'s order. A set of whole claims cost a
    /// signed command a search among 80-byte keys on every check and record (BENCHMARKS.md).
    by_expiry: BTreeMap<u64, Vec<ExpiringClaim>>,
    /// How many claims `by_expiry` holds: `live.len()`.
    claims_by_expiry: usize,
    /// Each holder with live nonces: how many, and how many expire at each time. Derived from
    /// `by_expiry` and `live`.
    by_holder: FxHashMap<Address, HeldNonces>,
}

/// A live claim as its expiry's list holds it: whose nonce, the nonce, who signed.
type ExpiringClaim = (Address, Nonce, Address);

/// The live nonces of one holder, counted.
#[derive(Clone, Debug, Default)]
struct HeldNonces {
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
            live: FxHashMap::default(),
            batches: FxHashMap::default(),
            by_expiry: BTreeMap::new(),
            claims_by_expiry: 0,
            by_holder: FxHashMap::default(),
        }
    }

    /// A registry restored from its live claims and the batches among them, each claim's
    /// holder given by `holder_of(account, signer)`. A restored holder may hold more than
    /// today's limit (it was raised and lowered): it takes no new nonce until it is under the
    /// limit again.
    pub fn restore(
        (max_live_nonces, max_live_nonces_per_account): (usize, usize),
        claims: impl IntoIterator<Item = LiveClaim>,
        batches: impl IntoIterator<Item = (Address, Nonce, LiveBatch)>,
        holder_of: impl Fn(&Address, &Address) -> Address,
    ) -> NonceRegistry {
        let mut registry = NonceRegistry::new(max_live_nonces, max_live_nonces_per_account);
        for (expiry_ms, account, nonce, signer) in claims {
            let holder = holder_of(&account, &signer);
            registry.insert(
                expiry_ms,
                nonce,
                ClaimParties {
                    account,
                    signer,
                    holder,
                },
            );
        }
        for (account, nonce, batch) in batches {
            assert!(
                registry.live.contains_key(&(account, nonce)),
                "invariant: a restored batch's nonce is live"
            );
            registry.batches.insert((account, nonce), batch);
        }
        registry
    }

    /// Whether `parties.signer` may use `claim` for `parties.account` at `now_ms`, the request
    /// living at most `max_lifetime_ms`. Changes nothing.
    pub fn check(
        &self,
        parties: &ClaimParties,
        claim: &NonceClaim,
        now_ms: u64,
        max_lifetime_ms: u64,
    ) -> Result<(), NonceRejection> {
        let account = &parties.account;
        if claim.expiry_ms <= now_ms {
            return Err(NonceRejection::Expired);
        }
        if claim.expiry_ms - now_ms > max_lifetime_ms {
            return Err(NonceRejection::ExpiryTooFar { max_lifetime_ms });
        }
        if let Some(slot) = claim.batch.filter(|slot| !slot.starts) {
            // An order following its batch's claim takes no nonce of its own.
            return match self.batches.get(&(*account, claim.nonce)) {
                Some(batch) if batch.identity == slot.identity => match index_bit(slot.index) {
                    Some(bit) if batch.applied & bit == 0 => Ok(()),
                    _ => Err(NonceRejection::Reused),
                },
                Some(_) => Err(NonceRejection::Reused),
                None if self.live.contains_key(&(*account, claim.nonce)) => Err(NonceRejection::Reused),
                None => Err(NonceRejection::BatchNotClaimed),
            };
        }
        if claim.batch.is_some_and(|slot| index_bit(slot.index).is_none()) {
            return Err(NonceRejection::Reused);
        }
        if self.live.contains_key(&(*account, claim.nonce)) {
            return Err(NonceRejection::Reused);
        }
        let held = self.live_of(&parties.holder, now_ms);
        let room = if parties.by_agent() {
            self.max_live_nonces_per_account
                .saturating_sub(owner_reserve(self.max_live_nonces_per_account))
        } else {
            self.max_live_nonces_per_account
        };
        if held >= room {
            let frees_at_ms = self
                .by_holder
                .get(&parties.holder)
                .into_iter()
                .flat_map(|nonces| nonces.by_expiry.range(now_ms + 1..))
                .next()
                .map_or(now_ms, |(expiry_ms, _)| *expiry_ms);
            return Err(NonceRejection::AccountFull { frees_at_ms });
        }
        let expired: usize = self.by_expiry.range(..=now_ms).map(|(_, claims)| claims.len()).sum();
        let live = self.live.len() - expired;
        if live >= self.max_live_nonces {
            // Full: only a holder under the average share of those holding nonces gets one, so
            // a few holders that filled it stop nobody else; twice the limit is the hard end.
            let holders = self.by_holder.len().max(1);
            if live >= self.max_live_nonces.saturating_mul(2) || held >= self.max_live_nonces.div_ceil(holders) {
                return Err(NonceRejection::Full);
            }
        }
        Ok(())
    }

    /// How many nonces `holder` holds that are still live at `now_ms`.
    fn live_of(&self, holder: &Address, now_ms: u64) -> usize {
        self.by_holder.get(holder).map_or(0, |nonces| {
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
    pub fn record(&mut self, parties: ClaimParties, claim: NonceClaim, now_ms: u64) {
        let account = parties.account;
        self.forget_expired(now_ms);
        if let Some(slot) = claim.batch {
            let bit = index_bit(slot.index).expect("invariant: checked before the record");
            if !slot.starts {
                let batch = self
                    .batches
                    .get_mut(&(account, claim.nonce))
                    .expect("invariant: a follower's batch was checked live");
                assert_eq!(batch.applied & bit, 0, "invariant: a batch's order is applied once");
                batch.applied |= bit;
                return;
            }
            self.batches.insert(
                (account, claim.nonce),
                LiveBatch {
                    identity: slot.identity,
                    applied: bit,
                },
            );
        }
        self.insert(claim.expiry_ms, claim.nonce, parties);
        assert_eq!(self.live.len(), self.claims_by_expiry, "the nonce indexes agree");
        assert!(
            self.batches.len() <= self.live.len(),
            "every live batch has its live nonce"
        );
    }

    fn insert(&mut self, expiry_ms: u64, nonce: Nonce, parties: ClaimParties) {
        let ClaimParties {
            account,
            signer,
            holder,
        } = parties;
        if let std::collections::hash_map::Entry::Vacant(entry) = self.live.entry((account, nonce)) {
            entry.insert(holder);
            let claims = self.by_expiry.entry(expiry_ms).or_default();
            let claim = (account, nonce, signer);
            let place = claims
                .binary_search(&claim)
                .expect_err("invariant: a claim new to `live` is new to its expiry's list");
            claims.insert(place, claim);
            self.claims_by_expiry += 1;
            let nonces = self.by_holder.entry(holder).or_default();
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
    pub fn iter_in_order(&self) -> impl Iterator<Item = LiveClaim> + '_ {
        self.by_expiry.iter().flat_map(|(expiry_ms, claims)| {
            claims
                .iter()
                .map(|&(account, nonce, signer)| (*expiry_ms, account, nonce, signer))
        })
    }

    /// Every live nonce a batch claimed, by account and nonce (for the state hash and
    /// snapshots).
    pub fn batches_in_order(&self) -> Vec<(Address, Nonce, LiveBatch)> {
        let mut batches: Vec<(Address, Nonce, LiveBatch)> = self
            .batches
            .iter()
            .map(|((account, nonce), batch)| (*account, *nonce, *batch))
            .collect();
        batches.sort_unstable_by_key(|(account, nonce, _)| (*account, *nonce));
        batches
    }

    /// The batch that claimed a live nonce, if a batch did.
    pub fn batch(&self, account: &Address, nonce: &Nonce) -> Option<&LiveBatch> {
        self.batches.get(&(*account, *nonce))
    }

    fn forget_expired(&mut self, now_ms: u64) {
        while let Some(entry) = self.by_expiry.first_entry() {
            if *entry.key() > now_ms {
                break;
            }
            let (expiry_ms, claims) = entry.remove_entry();
            self.claims_by_expiry -= claims.len();
            for (account, nonce, _) in claims {
                self.forget_claim(expiry_ms, account, nonce);
            }
        }
    }

    /// Forgets one claim taken out of `by_expiry` from the other indexes.
    fn forget_claim(&mut self, expiry_ms: u64, account: Address, nonce: Nonce) {
        let holder = self
            .live
            .remove(&(account, nonce))
            .expect("invariant: the nonce indexes agree");
        self.batches.remove(&(account, nonce));
        let nonces = self
            .by_holder
            .get_mut(&holder)
            .expect("invariant: a live nonce's holder is counted");
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
            self.by_holder.remove(&holder);
        }
    }
}

/// The bit of a batch's order index in [`LiveBatch::applied`], if the index has one.
fn index_bit(index: u8) -> Option<u64> {
    (usize::from(index) < MAX_ORDERS_PER_SIGNED_BATCH).then(|| 1u64 << index)
}

#[cfg(test)]
#[path = "nonces_tests.rs"]
mod tests;
