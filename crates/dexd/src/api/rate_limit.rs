//! Request-rate limits: one token bucket (GCRA, from `governor`) per client IP for every
//! request, and one per account for state changes.
//!
//! A client is its IPv4 address, or the /64 network of its IPv6 address ([`client_network`]): one
//! IPv6 host is usually handed a whole /64, so counting by address would give it 2^64 budgets.
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

use dexd_venue::config::Limits;

/// How many checks pass between two sweeps of idle buckets.
pub const SHRINK_EVERY_CHECKS: u64 = 65_536;

type KeyedLimiter<Key> = RateLimiter<Key, DefaultKeyedStateStore<Key>, DefaultClock, StateInformationMiddleware>;

/// The length of the IPv6 prefix one client holds: a /56, the most a provider gives one
/// customer's site (a /64 is one LAN; counting those, one customer held 256 clients' budgets).
pub const IPV6_CLIENT_PREFIX_BITS: u32 = 56;
/// The length of the IPv6 prefix one network holds: a /48, one organisation's allocation, whose
/// clients together are bounded again (stream connections:
/// `streams::STREAM_CONNECTIONS_PER_NETWORK_MULTIPLE` times a client's).
pub const IPV6_NETWORK_PREFIX_BITS: u32 = 48;

/// An IPv6 address's first `bits` bits.
fn ipv6_prefix(v6: std::net::Ipv6Addr, bits: u32) -> IpAddr {
    IpAddr::V6(std::net::Ipv6Addr::from(u128::from(v6) & !(u128::MAX >> bits)))
}

/// The client an address counts as for per-client limits: an IPv4 address itself (an IPv6
/// form of one included), and an IPv6 address's /56 ([`IPV6_CLIENT_PREFIX_BITS`]).
pub fn client_network(ip: IpAddr) -> IpAddr {
    match ip {
        IpAddr::V4(_) => ip,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => ipv6_prefix(v6, IPV6_CLIENT_PREFIX_BITS),
        },
    }
}

/// The network an IPv6 client belongs to, its /48 ([`IPV6_NETWORK_PREFIX_BITS`]); `None` for
/// IPv4 (an address is its own client and its own network).
pub fn client_wider_network(ip: IpAddr) -> Option<IpAddr> {
    match ip {
        IpAddr::V4(_) => None,
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(_) => None,
            None => Some(ipv6_prefix(v6, IPV6_NETWORK_PREFIX_BITS)),
        },
    }
}

/// The most accounts whose recent writes are remembered for `GET /account/rateLimits`; past it
/// those whose buckets are full again are forgotten, and if that is not enough, all (an account
/// forgotten reads as having used nothing: the limit itself is kept by the limiter).
pub const MAX_TRACKED_WRITERS: usize = 100_000;

/// The venue's rate limits.
pub struct RateLimits {
    per_ip: KeyedLimiter<IpAddr>,
    per_account: KeyedLimiter<Address>,
    ip_rate_per_second: u32,
    account_rate_per_second: u32,
    clock: DefaultClock,
    checks: AtomicU64,
    /// Each recent writer's bucket after its last write: what it had left, and when. The
    /// limiter itself cannot be read without taking from it.
    writers: parking_lot::Mutex<std::collections::HashMap<Address, (u32, std::time::Instant)>>,
}

/// An account's write budget as `GET /account/rateLimits` shows it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WriteBudget {
    /// State changes per second allowed (also the most at once).
    pub writes_per_second: u32,
    /// How many of them are spent now.
    pub writes_used: u32,
    /// Milliseconds until none is spent.
    pub full_in_ms: u64,
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
            account_rate_per_second: limits.writes_per_second_per_account.max(1),
            clock: DefaultClock::default(),
            checks: AtomicU64::new(0),
            writers: parking_lot::Mutex::default(),
        }
    }

    /// Takes one request from a client IP's bucket, or says how long to wait.
    pub fn check_ip(&self, ip: IpAddr) -> Result<Allowance, Duration> {
        self.sweep_now_and_then();
        match self.per_ip.check_key(&client_network(ip)) {
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

    /// Takes `requests` more from a client IP's bucket (the items of a batch beyond the request
    /// itself, whose signatures are each checked or made), or says how long to wait. More than
    /// the bucket holds at all waits a second.
    pub fn check_ip_more(&self, ip: IpAddr, requests: u32) -> Result<(), Duration> {
        let Some(requests) = NonZeroU32::new(requests) else {
            return Ok(());
        };
        match self.per_ip.check_key_n(&client_network(ip), requests) {
            Ok(Ok(_)) => Ok(()),
            Ok(Err(not_until)) => Err(not_until.wait_time_from(self.clock.now())),
            Err(_) => Err(Duration::from_secs(1)),
        }
    }

    /// Takes one state change from an account's bucket, or says how long to wait.
    pub fn check_account(&self, account: &Address) -> Result<(), Duration> {
        self.sweep_now_and_then();
        let snapshot = self
            .per_account
            .check_key(account)
            .map_err(|not_until| not_until.wait_time_from(self.clock.now()))?;
        let mut writers = self.writers.lock();
        if writers.len() >= MAX_TRACKED_WRITERS && !writers.contains_key(account) {
            let now = std::time::Instant::now();
            // Buckets full again (a second at most) first; then any, to keep the bound.
            writers.retain(|_, (_, at)| now.duration_since(*at) < Duration::from_secs(1));
            if writers.len() >= MAX_TRACKED_WRITERS {
                writers.clear();
            }
        }
        writers.insert(
            *account,
            (snapshot.remaining_burst_capacity(), std::time::Instant::now()),
        );
        Ok(())
    }

    /// An account's write budget now, from its bucket after its last write and the time since
    /// (the bucket refills at the account's rate).
    pub fn write_budget(&self, account: &Address) -> WriteBudget {
        let rate = self.account_rate_per_second;
        let remaining = match self.writers.lock().get(account) {
            None => rate,
            Some((remaining, at)) => {
                let refilled = (at.elapsed().as_secs_f64() * f64::from(rate)).floor() as u64;
                u64::from(*remaining).saturating_add(refilled).min(u64::from(rate)) as u32
            }
        };
        let writes_used = rate - remaining;
        WriteBudget {
            writes_per_second: rate,
            writes_used,
            full_in_ms: (u64::from(writes_used) * 1_000).div_ceil(u64::from(rate)),
        }
    }

    fn sweep_now_and_then(&self) {
        if self.checks.fetch_add(1, Ordering::Relaxed) % SHRINK_EVERY_CHECKS == SHRINK_EVERY_CHECKS - 1 {
            self.per_ip.retain_recent();
            self.per_account.retain_recent();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_ipv6_client_is_its_slash_56_and_an_ipv4_client_its_address() {
        let ip = |text: &str| text.parse::<IpAddr>().unwrap();
        assert_eq!(client_network(ip("2001:db8:1:2aa:aaaa::1")), ip("2001:db8:1:200::"));
        // Every /64 of a /56 is one client: a customer's 256 LANs share one budget.
        assert_eq!(
            client_network(ip("2001:db8:1:2ff:ffff:ffff:ffff:ffff")),
            client_network(ip("2001:db8:1:200::7"))
        );
        assert_ne!(
            client_network(ip("2001:db8:1:300::1")),
            client_network(ip("2001:db8:1:200::1"))
        );
        assert_eq!(client_wider_network(ip("2001:db8:1:ff00::1")), Some(ip("2001:db8:1::")));
        assert_eq!(client_wider_network(ip("203.0.113.9")), None);
        assert_eq!(client_network(ip("203.0.113.9")), ip("203.0.113.9"));
        assert_eq!(client_network(ip("::ffff:203.0.113.9")), ip("203.0.113.9"));
    }

    #[test]
    fn addresses_of_one_ipv6_network_share_one_budget() {
        let limits = Limits {
            requests_per_second_per_ip: 2,
            ..Limits::default()
        };
        let rate_limits = RateLimits::new(&limits);
        assert!(rate_limits.check_ip("2001:db8::1".parse().unwrap()).is_ok());
        assert!(rate_limits.check_ip("2001:db8::2".parse().unwrap()).is_ok());
        assert!(
            rate_limits.check_ip("2001:db8:0:ff::3".parse().unwrap()).is_err(),
            "a third address of the /56, in another of its /64s"
        );
        assert!(
            rate_limits.check_ip("2001:db8:0:100::1".parse().unwrap()).is_ok(),
            "another /56"
        );
    }
}
