//! What the live-nonce registry costs a signed command: one check and one record, at the steady
//! state of a venue taking 10,000 venue-signed orders a second from 512 accounts, each claim
//! living 10 s (the venue's signature window), so about 100,000 claims are live. Every engine
//! copy (the writer's, the state-hash keeper's, the streams hub's) pays this once a command. Run
//! with `cargo bench -p dexd-core --bench nonces`.

use criterion::Criterion;
use dexd_core::nonces::{ClaimParties, NonceClaim, NonceRegistry};
use dexd_core::{Address, Nonce};

const ACCOUNTS: u64 = 512;
const CLAIMS_PER_MS: u64 = 10;
const LIFETIME_MS: u64 = 10_000;
const MAX_LIFETIME_MS: u64 = 3_600_000;

/// The `number`th claim: its account, a nonce of its own, and the time it comes at.
fn claim(number: u64) -> (ClaimParties, NonceClaim, u64) {
    let mut account = [0u8; 20];
    account[12..].copy_from_slice(&(number % ACCOUNTS + 1).to_be_bytes());
    let account = Address::from_bytes(account);
    let mut nonce = [0u8; 32];
    // Spread like the digests venue nonces are.
    nonce[..8].copy_from_slice(&number.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    nonce[24..].copy_from_slice(&number.to_be_bytes());
    let now_ms = 1_000_000 + number / CLAIMS_PER_MS;
    let parties = ClaimParties {
        account,
        signer: account,
        holder: account,
    };
    let claim = NonceClaim {
        nonce: Nonce::from_bytes(nonce),
        expiry_ms: now_ms + LIFETIME_MS,
        batch: None,
        venue_signed: true,
    };
    (parties, claim, now_ms)
}

fn main() {
    let mut criterion = Criterion::default().configure_from_args().sample_size(20);
    let mut registry = NonceRegistry::new(1_000_000, 100_000);
    let mut number = 0u64;
    let mut check_and_record = |registry: &mut NonceRegistry| {
        let (parties, claim, now_ms) = claim(number);
        number += 1;
        registry
            .check(&parties, &claim, now_ms, MAX_LIFETIME_MS)
            .expect("a fresh nonce is accepted");
        registry.record(parties, claim, now_ms);
    };
    // Fill to the steady state: as many live as a lifetime's worth of claims.
    for _ in 0..(LIFETIME_MS * CLAIMS_PER_MS * 2) {
        check_and_record(&mut registry);
    }
    assert!(registry.len() as u64 >= LIFETIME_MS * CLAIMS_PER_MS);
    criterion.bench_function("nonces/check_and_record_100000_live", |bencher| {
        bencher.iter(|| check_and_record(&mut registry))
    });
    criterion.final_summary();
}
