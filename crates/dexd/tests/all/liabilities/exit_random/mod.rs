//! A stateful random test of the vault and the venue together: random sequences of deposits
//! (credited at once, late, or never before the end), trades that move value between accounts
//! and tokens, withdrawals, the venue's roots, the guardian's vetoes (of the venue's roots now and
//! then, and always of a root planted with the operator's stolen key), time passing and payments,
//! withdrawals asked for on chain (more than the account holds, nothing held, the same twice) and
//! served, a contract wallet that refuses its own withdrawals on chain (skipped, the others paid),
//! a venue that stops serving, then a freeze (by a request unserved past its deadline, or by the
//! roots' age) and every account's exit, on a real node (anvil) with the real contract, dexd's
//! own engine, tree and payment rule (`payable_through`: a withdrawal is paid only through a
//! final root of the venue's covering its debit).
//!
//! After the exits it checks, for every account and token: the account got exactly its exit
//! root's balance, plus its withdrawals debited and never paid, plus what it deposited after the
//! root; every withdrawal paid was debited at or before the exit root's position (so nothing
//! paid is owed again); the vault, having paid everyone, holds nothing: it never owed more
//! than it held, and no deposit was stranded; and a vault frozen for an unserved request opens
//! its exits no later than one challenge period after that request's deadline (no honest account
//! is kept in longer).
//!
//! `DEXD_EXIT_RANDOM_SEQUENCES` (default 600) and `DEXD_EXIT_RANDOM_SEED` (default fixed) set
//! the run; `scripts/soak-exit` runs a longer one with a fresh seed. The guardian is honest and
//! always in time: without one, a stolen operator key can plant the exit root (the README's trust
//! model says so).

mod exits;
mod world;

use std::collections::HashMap;

use self::exits::*;
use self::world::*;
use dexd_core::Engine;
use dexd_custody::node::Node;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// How much of what matters the run went through, so that a run that never pays, never freezes
/// with a root or never leaves anything after it cannot pass unnoticed.
#[derive(Default, Debug)]
struct Statistics {
    sequences: u64,
    with_payments: u64,
    with_exit_root: u64,
    with_planted_roots: u64,
    with_deposits_after_the_exit_root: u64,
    with_withdrawals_unpaid_at_the_freeze: u64,
    with_requests_served: u64,
    with_skipped_withdrawals: u64,
    frozen_for_a_request: u64,
    with_a_venue_that_stopped: u64,
}

impl Statistics {
    fn record(&mut self, venue: &Venue<'_>, exit: &ExitSummary) {
        self.sequences += 1;
        self.with_payments += u64::from(!venue.paid_debits.is_empty());
        self.with_exit_root += u64::from(exit.had_exit_root);
        self.with_planted_roots += u64::from(venue.planted > 0);
        self.with_deposits_after_the_exit_root += u64::from(exit.deposits_after_root > 0);
        self.with_withdrawals_unpaid_at_the_freeze +=
            u64::from(venue.engine.custody().pending_withdrawals().next().is_some());
        self.with_requests_served += u64::from(venue.requests_served > 0);
        self.with_skipped_withdrawals += u64::from(venue.skipped > 0);
        self.frozen_for_a_request += u64::from(exit.frozen_for_a_request);
        self.with_a_venue_that_stopped += u64::from(venue.stopped);
    }

    /// Each kind of sequence that matters came up at least `share` of the time.
    fn assert_covered(&self, share: f64) {
        let least = (self.sequences as f64 * share) as u64;
        for (what, count) in [
            ("payments", self.with_payments),
            ("an exit root", self.with_exit_root),
            ("planted roots", self.with_planted_roots),
            ("deposits after the exit root", self.with_deposits_after_the_exit_root),
            (
                "withdrawals unpaid at the freeze",
                self.with_withdrawals_unpaid_at_the_freeze,
            ),
            ("requests served", self.with_requests_served),
            ("a freeze for an unserved request", self.frozen_for_a_request),
            ("a venue that stopped", self.with_a_venue_that_stopped),
        ] {
            assert!(
                count >= least,
                "only {count} of {} sequences had {what}: {self:?}",
                self.sequences
            );
        }
        // A withdrawal its own contract refuses on chain needs the wallet's withdrawal and then
        // a payment: rarer, and one in twenty is enough.
        assert!(
            self.with_skipped_withdrawals >= self.sequences / 20,
            "only {} sequences had a withdrawal skipped: {self:?}",
            self.with_skipped_withdrawals
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sequences_of_deposits_trades_withdrawals_roots_and_vetoes_end_in_exits_that_hold() {
    let sequences: u64 = std::env::var("DEXD_EXIT_RANDOM_SEQUENCES").map_or(600, |text| text.parse().unwrap());
    let seed: u64 = std::env::var("DEXD_EXIT_RANDOM_SEED").map_or(20_261_126, |text| text.parse().unwrap());
    let world = world().await;
    let node: &Node = &world.chain.node;
    let mut snapshot = node.raw_request("evm_snapshot", serde_json::json!([])).await.unwrap();
    let mut statistics = Statistics::default();
    for sequence in 0..sequences {
        let mut rng = StdRng::seed_from_u64(seed.wrapping_add(sequence));
        let mut venue = Venue {
            world: &world,
            engine: Engine::new(engine_config()).unwrap(),
            time_ms: 1_000,
            uncredited: Default::default(),
            trees: HashMap::new(),
            paid_debits: Vec::new(),
            planted: 0,
            next_withdrawal: 0,
            next_order: 0,
            unrecorded_requests: Default::default(),
            requests_made: 0,
            requests_served: 0,
            skipped: 0,
            stopped: false,
            poison_before_paying: false,
        };
        // About a sixth of the sequences have a venue that stops serving at some step.
        let stops_at = rng.gen_bool(0.18).then(|| rng.gen_range(0..20));
        // A few deposits credited first, so that there is something to trade and withdraw.
        for _ in 0..rng.gen_range(2..5) {
            venue.deposit(&mut rng).await;
            venue.credit_oldest();
        }
        for step in 0..rng.gen_range(8..24) {
            if stops_at == Some(step) {
                venue.stopped = true;
            }
            let roll = rng.gen_range(0..110);
            // A venue that stopped does nothing; the chain's users go on.
            if venue.stopped && !matches!(roll, 0..=9 | 70..=77 | 90..=109) {
                continue;
            }
            match roll {
                0..=9 => venue.deposit(&mut rng).await,
                10..=21 => venue.credit_oldest(),
                22..=39 => venue.trade(&mut rng),
                40..=54 => venue.withdraw(&mut rng),
                55..=62 => venue.commit_root().await,
                63..=66 => venue.plant_root(&mut rng).await,
                67..=69 => venue.veto_a_venue_root().await,
                70..=77 => venue.pass_time(&mut rng).await,
                78..=89 => {
                    venue.record_requests();
                    venue.root_then_pay().await
                }
                90..=99 => venue.request_on_chain(&mut rng).await,
                100..=104 => venue.turn_the_wallet(&mut rng).await,
                _ => {
                    venue.record_requests();
                    venue.pay().await
                }
            }
        }
        let exit = freeze_and_exit_everyone(&venue, sequence, rng.gen_bool(0.7)).await;
        statistics.record(&venue, &exit);
        let reverted = node
            .raw_request("evm_revert", serde_json::json!([snapshot]))
            .await
            .unwrap();
        assert_eq!(reverted, serde_json::json!(true));
        world.nonces.lock().clear();
        snapshot = node.raw_request("evm_snapshot", serde_json::json!([])).await.unwrap();
    }
    eprintln!("exit_random: seed {seed}, {statistics:?}");
    statistics.assert_covered(0.1);
}
