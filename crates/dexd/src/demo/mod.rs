//! `dexd serve --demo`: a built-in market on every pair of a ledger venue, so that the page, the
//! streams and every read show a live market within seconds of the start.
//!
//! Each pair gets a market maker quoting a few levels around a price that wanders (a seeded
//! random walk, `walk`), and each chain two takers that trade against it at a human pace
//! (`market`). They are ordinary accounts with keys made at start (`accounts`): their orders
//! and deposits go through the API's handlers like any client's, and nothing in the contract
//! changes. The log says the market is a demo and lists the accounts' addresses; the page shows
//! a banner.
//!
//! It runs only where nothing is real: every chain on the venue's own ledger, the journal
//! embedded ([`refusal`] says why not otherwise). It does not run on a vault chain or a cluster.

mod accounts;
mod market;
mod walk;

use std::collections::BTreeMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;

use self::accounts::DemoAccount;
use self::market::{PairMarket, Takers, TopUp};
use self::walk::{as_number, pair_seed, reference_value_usd, PairGrid, PairWalk, TAKERS_PER_CHAIN};
use crate::api::state::AppState;
use dexd_venue::config::{ChainConfig, Config, Custody, JournalBackend, PairConfig};

pub use self::market::{DEMO_SECOND_MS, MAKER_SWITCH_TIMEOUT_MS, STEP_ASIDE_QUEUE_DEPTH};
pub use self::walk::{DEMO_SEED, LEVELS_PER_SIDE};

/// How many of a maker's typical levels each account is funded for: enough for hours of
/// trading before a top-up.
const FUNDED_LEVELS: f64 = 400.0;
/// How far above its reference the funding allows the price to go.
const FUNDED_PRICE_MARGIN: f64 = 1.5;
/// How long the stop waits for the markets to cancel their makers' orders.
const STOP_WAIT: Duration = Duration::from_secs(3);

/// Why `--demo` cannot run on this configuration, in a sentence for the operator; `None` when it
/// can.
pub fn refusal(config: &Config) -> Option<String> {
    if let Some(chain) = config
        .chains
        .iter()
        .find(|chain| matches!(chain.custody, Custody::Vault(_)))
    {
        return Some(format!(
            "--demo runs only on ledger chains, where no real token moves: chain {} ({}) keeps its balances in a \
             vault; start without --demo, or with a configuration of ledger chains (the embedded default is one)",
            chain.chain_id, chain.name
        ));
    }
    if matches!(config.journal, JournalBackend::Postgres(_)) {
        return Some(
            "--demo runs on one node with the embedded journal, not on a cluster's PostgreSQL journal; start \
             without --demo, or on the embedded journal (no journal = \"postgres\" in [store])"
                .to_string(),
        );
    }
    None
}

/// The running demo: one task per chain, each running one market per pair.
pub struct Demo {
    stop: watch::Sender<bool>,
    chains: Mutex<Vec<JoinHandle<()>>>,
}

impl Demo {
    /// Starts the demo on every chain of `app`'s venue (the caller has checked [`refusal`]).
    pub fn start(app: &Arc<AppState>) -> Demo {
        let (stop, stopping) = watch::channel(false);
        tracing::info!(
            seed = DEMO_SEED,
            "demo: this venue's market is a demo; a built-in market maker and takers trade on every pair"
        );
        let chains = app
            .venue
            .config
            .chains
            .iter()
            .map(|chain| tokio::spawn(run_chain(Arc::clone(app), chain.clone(), stopping.clone())))
            .collect();
        Demo {
            stop,
            chains: Mutex::new(chains),
        }
    }

    /// Stops every market; each cancels its maker's orders first (for at most `STOP_WAIT`).
    pub async fn stop(&self) {
        let _ = self.stop.send(true);
        let chains = std::mem::take(&mut *self.chains.lock().unwrap_or_else(|poisoned| poisoned.into_inner()));
        let _ = tokio::time::timeout(STOP_WAIT, async {
            for chain in chains {
                let _ = chain.await;
            }
        })
        .await;
    }
}

/// A round quantity of at least `need`: a power of ten, so deposits read plainly.
fn round_quantity(need: f64) -> String {
    if !need.is_finite() || need <= 1.0 {
        return "1".to_string();
    }
    let digits = need.log10().ceil().min(30.0) as usize;
    format!("1{}", "0".repeat(digits))
}

/// One pair's maker before it runs: the pair's symbol, its walk, the maker's account and its
/// top-ups.
type PlannedMaker = (String, PairWalk, DemoAccount, Vec<TopUp>);

/// Plans one pair's maker, and raises `taker_needs` (per asset symbol) to what the takers need
/// to trade against it; `None` for a pair whose minimums are too large to quote.
fn plan_maker(chain: &ChainConfig, pair: &PairConfig, taker_needs: &mut BTreeMap<String, f64>) -> Option<PlannedMaker> {
    let definition = &pair.definition;
    let Some(grid) = PairGrid::new(
        definition.tick_size,
        definition.step_size,
        definition.min_amount,
        definition.min_notional,
    ) else {
        tracing::warn!(chain_id = chain.chain_id, pair = %pair.symbol, "demo: this pair's minimums are too large to quote; it is left alone");
        return None;
    };
    let base = chain.asset_config(definition.base).symbol.clone();
    let quote = chain.asset_config(definition.quote).symbol.clone();
    let quote_value_usd = reference_value_usd(&quote);
    let reference_price = reference_value_usd(&base).unwrap_or(1.0) / quote_value_usd.unwrap_or(1.0);
    let walk = PairWalk::new(
        pair_seed(chain.chain_id, &pair.symbol),
        grid,
        reference_price,
        quote_value_usd,
    );
    let reference_price = walk.reference_ticks() as f64 * as_number(definition.tick_size);
    let base_need = walk.level_steps() as f64 * as_number(definition.step_size) * FUNDED_LEVELS;
    let quote_need = base_need * reference_price * FUNDED_PRICE_MARGIN;
    for (symbol, need) in [(&base, base_need), (&quote, quote_need)] {
        let entry = taker_needs.entry(symbol.clone()).or_insert(0.0);
        *entry = entry.max(need);
    }
    let maker = DemoAccount::generate();
    tracing::info!(
        chain_id = chain.chain_id,
        pair = %pair.symbol,
        maker = %maker.address_text(),
        reference_price = %walk.grid().price_text(walk.reference_ticks()),
        "demo: market maker"
    );
    let maker_top_ups = vec![
        TopUp {
            symbol: base,
            quantity: round_quantity(base_need),
        },
        TopUp {
            symbol: quote,
            quantity: round_quantity(quote_need),
        },
    ];
    Some((pair.symbol.clone(), walk, maker, maker_top_ups))
}

/// Funds one chain's demo accounts and runs its pairs' markets until the stop.
async fn run_chain(app: Arc<AppState>, chain: ChainConfig, stopping: watch::Receiver<bool>) {
    let mut taker_needs: BTreeMap<String, f64> = BTreeMap::new();
    // Each pair's symbol, walk, maker and its top-ups; the takers' top-ups are known after all.
    let makers: Vec<PlannedMaker> = chain
        .pairs
        .iter()
        .filter_map(|pair| plan_maker(&chain, pair, &mut taker_needs))
        .collect();
    let takers = Arc::new(Takers {
        accounts: (0..TAKERS_PER_CHAIN).map(|_| DemoAccount::generate()).collect(),
        top_ups: taker_needs
            .into_iter()
            .map(|(symbol, need)| TopUp {
                symbol,
                quantity: round_quantity(need),
            })
            .collect(),
    });
    let taker_addresses: Vec<String> = takers.accounts.iter().map(DemoAccount::address_text).collect();
    tracing::info!(chain_id = chain.chain_id, takers = %taker_addresses.join(","), "demo: takers");
    for taker in &takers.accounts {
        if let Err(error) = market::fund(&app, chain.chain_id, taker, &takers.top_ups).await {
            tracing::warn!(chain_id = chain.chain_id, code = error.code, message = %error.message, "demo: a taker could not be funded; the chain's demo does not run");
            return;
        }
    }
    let mut running = tokio::task::JoinSet::new();
    for (symbol, walk, maker, maker_top_ups) in makers {
        if let Err(error) = market::fund(&app, chain.chain_id, &maker, &maker_top_ups).await {
            tracing::warn!(chain_id = chain.chain_id, pair = %symbol, code = error.code, message = %error.message, "demo: a maker could not be funded; the pair's demo does not run");
            continue;
        }
        let market = PairMarket {
            app: Arc::clone(&app),
            chain_id: chain.chain_id,
            symbol,
            walk,
            maker,
            maker_top_ups,
            takers: Arc::clone(&takers),
        };
        running.spawn(market.run(stopping.clone()));
    }
    while running.join_next().await.is_some() {}
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn deposits_are_round_and_cover_the_need() {
        assert_eq!(round_quantity(0.2), "1");
        assert_eq!(round_quantity(f64::NAN), "1");
        assert_eq!(round_quantity(2.5), "10");
        assert_eq!(round_quantity(1_000.0), "1000");
        assert_eq!(round_quantity(1_000.5), "10000");
    }

    #[test]
    fn the_demo_is_refused_on_a_vault_chain_and_a_cluster() {
        use dexd_venue::config::DEFAULT_CONFIG_TOML;
        assert_eq!(refusal(&Config::embedded_default()), None);
        let vault = DEFAULT_CONFIG_TOML.replacen(
            "[[chains.assets]]",
            "[chains.custody]\nmode = \"vault\"\nrpc_url = \"http://127.0.0.1:8545\"\n\
             vault = \"0x00000000000000000000000000000000000de7d1\"\noperator_key_env = \"DEXD_TEST_OPERATOR_KEY\"\n\
             [[chains.assets]]",
            1,
        );
        let refused = refusal(&Config::parse(&vault).unwrap()).unwrap();
        assert!(
            refused.contains("chain 1 (Ethereum)") && refused.contains("ledger"),
            "{refused}"
        );
        let cluster = format!(
            "[store]\njournal = \"postgres\"\npostgres_url = \"postgres://localhost/dexd\"\n{DEFAULT_CONFIG_TOML}"
        );
        let refused = refusal(&Config::parse(&cluster).unwrap()).unwrap();
        assert!(refused.contains("PostgreSQL"), "{refused}");
    }
}
