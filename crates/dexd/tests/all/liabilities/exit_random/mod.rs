//! A stateful random test of the vault and the venue together: random sequences of deposits
//! (credited at once, late, or never before the end), trades that move value between accounts
//! and tokens, withdrawals, the venue's roots, the guardian's vetoes (of the venue's roots now and
//! then, and always of a root planted with the operator's stolen key), time passing and payments,
//! then a freeze and every account's exit, on a real node (anvil) with the real contract, dexd's
//! own engine, tree and payment rule (`payable_through`: a withdrawal is paid only through a
//! final root of the venue's covering its debit).
//!
//! After the exits it checks, for every account and token: the account got exactly its exit
//! root's balance, plus its withdrawals debited and never paid, plus what it deposited after the
//! root; every withdrawal paid was debited at or before the exit root's position (so nothing
//! paid is owed again); and the vault, having paid everyone, holds nothing: it never owed more
//! than it held, and no deposit was stranded.
//!
//! `DEXD_EXIT_RANDOM_SEQUENCES` (default 1,000) and `DEXD_EXIT_RANDOM_SEED` (default fixed) set
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
        ] {
            assert!(
                count >= least,
                "only {count} of {} sequences had {what}: {self:?}",
                self.sequences
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sequences_of_deposits_trades_withdrawals_roots_and_vetoes_end_in_exits_that_hold() {
    let sequences: u64 = std::env::var("DEXD_EXIT_RANDOM_SEQUENCES").map_or(1_000, |text| text.parse().unwrap());
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
        };
        // A few deposits credited first, so that there is something to trade and withdraw.
        for _ in 0..rng.gen_range(2..5) {
            venue.deposit(&mut rng).await;
            venue.credit_oldest();
        }
        for _ in 0..rng.gen_range(8..24) {
            match rng.gen_range(0..100) {
                0..=9 => venue.deposit(&mut rng).await,
                10..=21 => venue.credit_oldest(),
                22..=39 => venue.trade(&mut rng),
                40..=54 => venue.withdraw(&mut rng),
                55..=62 => venue.commit_root().await,
                63..=66 => venue.plant_root(&mut rng).await,
                67..=69 => venue.veto_a_venue_root().await,
                70..=77 => venue.pass_time(&mut rng).await,
                78..=89 => venue.root_then_pay().await,
                _ => venue.pay().await,
            }
        }
        let exit = freeze_and_exit_everyone(&venue, sequence).await;
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
