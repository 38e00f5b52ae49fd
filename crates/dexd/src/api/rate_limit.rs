//! Request-rate limits: one token bucket (GCRA, from `governor`) per client IP for every
//! request, and one per account for state changes.
//!
//! The buckets of clients that went quiet are dropped every [`SHRINK_EVERY_CHECKS`] checks, so
//! memory stays bounded by the clients active recently. This module says how long to wait; the
//! API layer turns that into a 429 with `Retry-After` and the `RateLimit-*` headers.

use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use dexd_core::Address;
use governor::clock::{Clock, DefaultClock};
use governor::middleware::StateInformationMiddleware;
use governor::state::keyed::DefaultKeyedStateStore;
use governor::{Quota, RateLimiter};

use crate::config::Limits;

/// How many checks pass between two sweeps of idle buckets.
pub const SHRINK_EVERY_CHECKS: u64 = 65_536;

type KeyedLimiter<Key> = RateLimiter<Key, DefaultKeyedStateStore<Key>, DefaultClock, StateInformationMiddleware>;

/// The venue's rate limits.
pub struct RateLimits {
    per_ip: KeyedLimiter<IpAddr>,
    per_account: KeyedLimiter<Address>,
    ip_rate_per_second: u32,
    clock: DefaultClock,
    checks: AtomicU64,
}

/// The state of a client's bucket after a request it was allowed.
#[derive(Debug, Clone, Copy)]
pub struct Allowance {
    /// Requests per second allowed.
    pub limit: u32,
    /// Requests that may still be made at once.
    pub remaining: u32,
    /// Seconds until the bucket is full again.
    pub reset_seconds: u64,
}

impl RateLimits {
    /// Limits as configured (both rates are checked positive by the configuration).
    pub fn new(limits: &Limits) -> RateLimits {
        let quota = |per_second: u32| Quota::per_second(NonZeroU32::new(per_second.max(1)).expect("at least one"));
        RateLimits {
            per_ip: RateLimiter::keyed(quota(limits.requests_per_second_per_ip)).with_middleware(),
            per_account: RateLimiter::keyed(quota(limits.writes_per_second_per_account)).with_middleware(),
            ip_rate_per_second: limits.requests_per_second_per_ip.max(1),
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
        }
    }

    /// Takes one request from a client IP's bucket, or says how long to wait.
    pub fn check_ip(&self, ip: IpAddr) -> Result<Allowance, Duration> {
        self.sweep_now_and_then();
        match self.per_ip.check_key(&ip) {
            Ok(snapshot) => {
                let remaining = snapshot.remaining_burst_capacity();
                let missing = u64::from(self.ip_rate_per_second.saturating_sub(remaining));
                Ok(Allowance {
                    limit: self.ip_rate_per_second,
                    remaining,
                    reset_seconds: missing.div_ceil(u64::from(self.ip_rate_per_second)),
                })
            }
            Err(not_until) => Err(not_until.wait_time_from(self.clock.now())),
        }
    }

    /// Takes one state change from an account's bucket, or says how long to wait.
    pub fn check_account(&self, account: &Address) -> Result<(), Duration> {
        self.sweep_now_and_then();
        self.per_account
            .check_key(account)
            .map(|_| ())
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))
    }

    fn sweep_now_and_then(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SHRINK_EVERY_CHECKS == SHRINK_EVERY_CHECKS - 1 {
            self.per_ip.retain_recent();
            self.per_account.retain_recent();
        }
    }
}
