//! dexd-custody: custody on chain. The vault chains of the venue, each with its node, its
//! deposit watcher and its withdrawal payer.
//!
//! A [`VaultChain`] runs two tasks against its chain's JSON-RPC node. The deposit watcher
//! ([`watcher`]) reads the vault's `Deposited` events once they have `confirmations` blocks on
//! top and journals them as credits in the vault's order; it stops crediting with a loud error
//! when the chain it had confirmed changes under it. The payer ([`payer`]) pays the pending
//! withdrawals through the vault with the operator's key and journals each step. Both only ever
//! change the venue through the chain's writer, as commands that a replay reproduces; neither
//! holds state of its own that a restart would need. Deposits sent for an account with its key
//! go through [`deposit`].
//!
//! It reaches the venue only through [`VenueChain`] (read the engine, journal a command), and
//! its settings come in as [`config::VaultConfig`], built by the `dexd` crate from the
//! configuration file.
//!
//! What this crate does not do: decide balances (the engine does), or know HTTP (the API layer
//! turns its errors into the contract's).

pub mod config;
pub mod deploy;
pub mod deposit;
pub mod devnet;
pub mod liabilities;
pub mod node;
pub mod operator_key;
pub mod payer;
pub mod preflight;
pub mod reserves;
pub mod vault;
mod venue_chain;
pub mod watcher;

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use alloy::primitives::Address as ChainAddress;
use dexd_core::{Address, AssetIndex, Command, Engine};
use dexd_store::{Events, WriteError};
use parking_lot::RwLock;
use tokio::sync::watch;

use self::config::{Confirmations, VaultConfig};
use self::node::{Node, NodeError};
use self::operator_key::read_operator_key;
use self::vault::chain_address;

pub use self::operator_key::OperatorKey;
pub use self::venue_chain::{act_as_leader, LeaderEpoch, Outcome, StatePosition, TreeFuture, VenueChain};

/// What a vault chain's tasks last saw, for reserves, metrics and operators.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CustodyStatus {
    /// The newest block the node reported.
    pub head_block: Option<u64>,
    /// The last block the watcher confirmed and scanned.
    pub scanned_block: Option<u64>,
    /// The last failure to reach or use the node, cleared by the next success.
    pub node_error: Option<String>,
    /// Why crediting stopped for good (a reorganisation deeper than the confirmations, a node
    /// of another chain, a gap in the vault's deposits); `None` while it runs.
    pub halted: Option<String>,
    /// Why withdrawals are not being paid (an operator key that is not the vault's operator).
    pub payer_error: Option<String>,
    /// Whether the vault (version 2) was found frozen: it pays exits only, and nothing more is
    /// sent to it.
    pub vault_frozen: bool,
    /// A root in the vault that the venue did not make and that could still become the exit
    /// root, said in words: while there is one, no withdrawal is paid.
    pub foreign_root: Option<String>,
    /// Gas used by the vault transactions the payer sent, by how many withdrawals each paid.
    pub withdrawal_gas: Vec<(usize, u64)>,
    /// What the vault held minus what the venue owed, per asset in its smallest units, at the
    /// reserves task's last check (empty before the first).
    pub reserves_surplus: Vec<(AssetIndex, i128)>,
}

/// The terms of a version 2 vault's liability roots, read from it once (they are fixed at its
/// deployment).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct VaultRootTerms {
    /// How long, in seconds of chain time, a root may be vetoed after it is committed: a
    /// withdrawal is paid only once a root covering it is past this.
    pub challenge_period_s: u64,
    /// How long without a root before anyone may freeze the vault.
    pub max_root_age_s: u64,
    /// How long the operator has to serve a withdrawal an account requested on chain.
    pub request_period_s: u64,
}

/// One asset of a vault chain, as custody names it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SettledAsset {
    /// Its symbol, for messages.
    pub symbol: String,
    /// Its token contract; `None` for the chain's native asset.
    pub token: Option<Address>,
    /// Its decimals in the configuration, checked against the token's at start.
    pub decimals: u32,
}

/// What custody needs to settle one chain of the venue.
pub struct VaultChainSetup {
    /// The chain id.
    pub chain_id: u64,
    /// The venue's chain.
    pub chain: Arc<dyn VenueChain>,
    /// Its vault settings.
    pub config: VaultConfig,
    /// Its assets, an [`AssetIndex`] being a position here.
    pub assets: Vec<SettledAsset>,
}

/// One vault chain: its configuration, node, and the status its tasks report.
pub struct VaultChain {
    /// The chain id.
    pub chain_id: u64,
    /// The venue's chain it settles.
    pub chain: Arc<dyn VenueChain>,
    /// The chain's assets.
    pub assets: Vec<SettledAsset>,
    /// The chain's vault settings.
    pub config: VaultConfig,
    /// The chain's node.
    pub node: Node,
    /// The operator's address (its key stays with the payer).
    pub operator: Address,
    assets_by_token: HashMap<ChainAddress, AssetIndex>,
    status: RwLock<CustodyStatus>,
    /// One deposit sent with an account's key at a time per account: the node hands out nonces
    /// per account, and two sends at once from one account would take the same.
    deposit_locks: deposit::DepositLocks,
    /// The last reading of the reserves, shared by clients (see [`reserves`]); its lock is held
    /// while a new one is read.
    reserves_reading: tokio::sync::Mutex<Option<Arc<reserves::ReservesReading>>>,
    /// Whether the chain's journal held nothing when custody started (see [`preflight`]).
    journal_empty_at_start: bool,
    /// Whether [`preflight`]'s checks have passed: until then nothing is credited, paid or sent.
    checked_against_chain: std::sync::atomic::AtomicBool,
    /// The vault's root terms, once [`preflight`] read them: `None` inside for a version 1
    /// vault (no roots).
    root_terms: std::sync::OnceLock<Option<VaultRootTerms>>,
}

impl VaultChain {
    /// The asset a token is, on this chain (the zero address is the native asset).
    pub fn asset_of_token(&self, token: &ChainAddress) -> Option<AssetIndex> {
        self.assets_by_token.get(token).copied()
    }

    /// A token's address on chain, `None` for the native asset.
    pub fn token_of_asset(&self, asset: AssetIndex) -> Option<ChainAddress> {
        self.assets[usize::from(asset.0)].token.as_ref().map(chain_address)
    }

    /// An asset's symbol.
    pub fn asset_symbol(&self, asset: AssetIndex) -> &str {
        &self.assets[usize::from(asset.0)].symbol
    }

    /// Runs `read` on the chain's engine and returns what it made of it.
    pub fn read_engine<R>(&self, read: impl FnOnce(&Engine) -> R) -> R {
        venue_chain::read_engine(self.chain.as_ref(), read)
    }

    /// Like [`VaultChain::read_engine`], but only once the journal holds the state read (see
    /// `venue_chain::read_durable_engine`); `None` when it did not within `wait`.
    pub async fn read_durable_engine<R>(&self, read: impl FnOnce(&Engine) -> R, wait: Duration) -> Option<R> {
        venue_chain::read_durable_engine(self.chain.as_ref(), read, wait).await
    }

    /// Journals a command and waits for its outcome (under the leadership the current custody
    /// poll acts under, if any: see [`act_as_leader`]).
    pub async fn submit(&self, command: Command) -> Result<Events, WriteError> {
        venue_chain::submit(self.chain.as_ref(), command).await
    }

    /// Enqueues a command without waiting (see [`VenueChain::enqueue`]), under the leadership
    /// the current custody poll acts under, if any.
    pub fn enqueue(&self, command: Command) -> Result<Outcome, WriteError> {
        venue_chain::enqueue(self.chain.as_ref(), command)
    }

    /// What the tasks last saw.
    pub fn status(&self) -> CustodyStatus {
        self.status.read().clone()
    }

    fn update_status(&self, update: impl FnOnce(&mut CustodyStatus)) {
        update(&mut self.status.write());
    }

    /// Reads `block`'s time and holds the venue's clock at or past it, before a command about
    /// an event of that block is journaled (a block the node does not have changes nothing).
    pub async fn note_block_time(&self, block: u64) -> Result<(), NodeError> {
        if let Some((_, time_s)) = self.node.block(block).await? {
            self.chain.note_chain_time_ms(time_s.saturating_mul(1_000));
        }
        Ok(())
    }

    /// The newest confirmed block, given the head: `None` while no block is confirmed yet.
    pub async fn confirmed_head(&self, head: u64) -> Result<Option<u64>, NodeError> {
        match self.config.confirmations {
            Confirmations::Blocks(blocks) => Ok(head.checked_sub(blocks)),
            Confirmations::Finalized => Ok(self.node.finalized_block().await?.map(|block| block.min(head))),
        }
    }

    /// The vault's root terms: `None` for a version 1 vault, or before [`preflight`] read them.
    pub fn root_terms(&self) -> Option<VaultRootTerms> {
        self.root_terms.get().copied().flatten()
    }

    /// How long a withdrawal may wait before it is paid, at most, in ms: a root is committed
    /// every `root_interval_ms`, and a withdrawal is paid once one covering it is past the
    /// vault's challenge period (and the payer's margin on top). A signed withdrawal whose expiry
    /// is closer than this is refused, and a venue-signed one is given at least this.
    pub fn withdrawal_wait_ms(&self) -> u64 {
        let root_wait_ms = self.root_terms().map_or(0, |terms| {
            self.config
                .root_interval_ms
                .saturating_add(terms.challenge_period_s.saturating_mul(1_000))
        });
        root_wait_ms.saturating_add(self.config.withdrawal_expiry_margin_ms)
    }

    /// Whether the checks against the chain have passed (see [`preflight`]).
    pub fn is_checked_against_chain(&self) -> bool {
        self.checked_against_chain.load(std::sync::atomic::Ordering::Acquire)
    }

    /// Runs the checks against the chain unless they have passed already.
    async fn ensure_checked_against_chain(&self) -> Result<(), preflight::PreflightError> {
        if !self.is_checked_against_chain() {
            preflight::check_against_chain(self, self.journal_empty_at_start).await?;
            self.checked_against_chain
                .store(true, std::sync::atomic::Ordering::Release);
        }
        Ok(())
    }

    fn poll_interval(&self) -> Duration {
        Duration::from_millis(self.config.poll_interval_ms)
    }
}

/// The vault chains of the venue and their tasks.
pub struct Custodians {
    chains: HashMap<u64, Arc<VaultChain>>,
    stop: watch::Sender<bool>,
    tasks: parking_lot::Mutex<Vec<tokio::task::JoinHandle<()>>>,
}

/// Why custody could not start.
#[derive(Debug)]
pub struct CustodyStartError(pub String);

impl std::fmt::Display for CustodyStartError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for CustodyStartError {}

impl Custodians {
    /// Starts the watcher, payer and reserves task of every vault chain given. The operator keys
    /// are read here, and each chain is checked against its node ([`preflight`]): a mismatch
    /// refuses the start. A node that cannot be reached is not an error (the tasks wait for it
    /// and check it then, and trading goes on).
    pub async fn start(setups: Vec<VaultChainSetup>) -> Result<Custodians, CustodyStartError> {
        let (stop, stopped) = watch::channel(false);
        let mut custodians = Custodians {
            chains: HashMap::new(),
            stop,
            tasks: parking_lot::Mutex::new(Vec::new()),
        };
        for setup in setups {
            let chain_id = setup.chain_id;
            let vault_config = setup.config;
            let operator_key = read_operator_key(&vault_config.operator_key)
                .map_err(|error| CustodyStartError(format!("chain {chain_id}: {error}")))?;
            let node = Node::connect(
                &vault_config.rpc_url,
                chain_address(&vault_config.vault),
                chain_id,
                Duration::from_millis(vault_config.rpc_timeout_ms),
            )
            .map_err(|error| CustodyStartError(format!("chain {chain_id}: {error}")))?;
            let assets_by_token = setup
                .assets
                .iter()
                .enumerate()
                .map(|(index, asset)| {
                    let token = asset.token.as_ref().map_or(ChainAddress::ZERO, chain_address);
                    (token, AssetIndex(index as u16))
                })
                .collect();
            let vault_chain = Arc::new(VaultChain {
                chain_id,
                chain: Arc::clone(&setup.chain),
                assets: setup.assets,
                operator: vault::venue_address(&operator_key.address()),
                config: vault_config,
                node,
                assets_by_token,
                status: RwLock::new(CustodyStatus::default()),
                deposit_locks: deposit::DepositLocks::default(),
                reserves_reading: tokio::sync::Mutex::new(None),
                // A journal holding nothing but the chain's configuration is empty of custody.
                journal_empty_at_start: venue_chain::read_engine(&*setup.chain, |engine| {
                    engine.journal_sequence() == 0 || engine.holds_only_configurations()
                }),
                checked_against_chain: std::sync::atomic::AtomicBool::new(false),
                root_terms: std::sync::OnceLock::new(),
            });
            match vault_chain.ensure_checked_against_chain().await {
                Ok(()) => {}
                Err(preflight::PreflightError::Refused(reason)) => {
                    return Err(CustodyStartError(format!("chain {chain_id}: {reason}")))
                }
                Err(preflight::PreflightError::Node(error)) => tracing::warn!(
                    chain_id,
                    %error,
                    "the node cannot be reached to check the configuration against the chain; nothing is credited \
                     or paid until it is"
                ),
            }
            tracing::info!(
                chain_id,
                vault = %dexd_crypto::checksummed(&vault_chain.config.vault),
                operator = %dexd_crypto::checksummed(&vault_chain.operator),
                confirmations = %vault_chain.config.confirmations,
                "vault custody starting"
            );
            let mut tasks = custodians.tasks.lock();
            tasks.push(tokio::spawn(watcher::run(Arc::clone(&vault_chain), stopped.clone())));
            tasks.push(tokio::spawn(payer::run(
                Arc::clone(&vault_chain),
                operator_key,
                stopped.clone(),
            )));
            tasks.push(tokio::spawn(reserves::run(Arc::clone(&vault_chain), stopped.clone())));
            drop(tasks);
            custodians.chains.insert(chain_id, vault_chain);
        }
        Ok(custodians)
    }

    /// The vault chain with this id, if it is one.
    pub fn chain(&self, chain_id: u64) -> Option<&Arc<VaultChain>> {
        self.chains.get(&chain_id)
    }

    /// The vault chains whose custody is halted, with why, by chain id.
    pub fn halted(&self) -> Vec<(u64, String)> {
        let mut halted: Vec<(u64, String)> = self
            .chains
            .iter()
            .filter_map(|(chain_id, vault)| Some((*chain_id, vault.status().halted?)))
            .collect();
        halted.sort();
        halted
    }

    /// Stops the watchers and payers (what they were doing is journaled or can be redone).
    pub async fn stop(&self) {
        let _ = self.stop.send(true);
        let tasks: Vec<_> = self.tasks.lock().drain(..).collect();
        for task in tasks {
            let _ = task.await;
        }
    }
}

/// Waits `duration`, or less if asked to stop; returns whether to stop.
async fn pause_or_stop(duration: Duration, stop: &mut watch::Receiver<bool>) -> bool {
    if *stop.borrow() {
        return true;
    }
    tokio::select! {
        () = tokio::time::sleep(duration) => *stop.borrow(),
        _ = stop.changed() => true,
    }
}
