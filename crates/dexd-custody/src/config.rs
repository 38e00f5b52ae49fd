//! A vault chain's settings, as custody takes them: the node, the vault, the confirmations and
//! the payer's bounds.
//!
//! The text of the configuration is read and checked by the `dexd` crate, which builds these;
//! nothing here parses a file. The operator's key is named by where it is read from, never held.

use std::path::PathBuf;

use dexd_core::Address;

/// A vault chain's settings (`[chains.custody]` with `mode = "vault"`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct VaultConfig {
    /// The chain's JSON-RPC endpoint (http or https).
    pub rpc_url: String,
    /// The vault contract.
    pub vault: Address,
    /// When a block counts as confirmed: a deposit in it is credited, a withdrawal paid in it is
    /// confirmed, and a withdrawal's expiry is judged by its time.
    pub confirmations: Confirmations,
    /// How often the watcher and the payer look at the chain.
    pub poll_interval_ms: u64,
    /// The block the vault was deployed in: the deposit watcher starts there.
    pub start_block: u64,
    /// Where the operator's key is read from; never the configuration text itself.
    pub operator_key: OperatorKeySource,
    /// The most blocks one `eth_getLogs` asks for (halved when the node refuses a range).
    pub max_log_range_blocks: u64,
    /// The most withdrawals one vault transaction pays.
    pub max_withdrawals_per_transaction: usize,
    /// How long a withdrawal signed by the venue with the account's key may wait to be paid,
    /// before it fails and is credited back.
    pub withdrawal_validity_ms: u64,
    /// How far ahead a client-signed withdrawal's expiry must be when it is requested, so that
    /// the payer has time to pay it before the vault refuses it as expired.
    pub withdrawal_expiry_margin_ms: u64,
    /// How long one request to the node may take before the node counts as unavailable.
    pub rpc_timeout_ms: u64,
    /// How long the payer waits for a transaction to be mined before it replaces it, at the
    /// same nonce, with higher fees.
    pub replace_after_ms: u64,
    /// How often the operator commits the root of the liability tree to a version 2 vault
    /// (a root whose interval has passed is due; a quiet venue still commits, so that the vault
    /// never becomes freezable while the venue runs).
    pub root_interval_ms: u64,
    /// At least how many of the newest roots of the venue's keep their tree files (besides every
    /// root that can still become the exit root), so that their proofs and leaves are served.
    pub keep_roots: usize,
    /// Where each root's data goes (`data`): in blobs, or in the root's calldata on a chain
    /// without them.
    pub root_data: RootDataCarrier,
    /// The longest a full set of the tree's accounts takes to pass through the roots' data: the
    /// address space is cut into slices, one slice a root, so that every account is listed at
    /// least this often (and an exit reads at most this far back).
    pub snapshot_interval_ms: u64,
}

/// The most a snapshot interval may be: a full set must pass through the roots' data well
/// inside the ~18 days beacon nodes keep blobs, so that an exit finds all of it. An auditor
/// holds every venue to it, whatever the venue's own setting.
pub const MAX_SNAPSHOT_INTERVAL_MS: u64 = 14 * 86_400_000;

/// Where a root's data goes (`data = "blobs"` or `"calldata"` in the custody section).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RootDataCarrier {
    /// In EIP-4844 blobs of the root's transaction (`commitRoot`): about a cent a blob, kept by
    /// beacon nodes about 18 days.
    Blobs,
    /// In the root's calldata (`commitRootWithData`), on a chain that takes no blobs: kept for
    /// good, at calldata's price.
    Calldata,
}

impl VaultConfig {
    /// How many slices the address space is cut into: as many as roots come in half the
    /// snapshot interval, so that a full cycle fits twice in it (at least one slice).
    pub fn snapshot_slices(&self) -> u64 {
        (self.snapshot_interval_ms / self.root_interval_ms.max(1) / 2).max(1)
    }
}

/// When a block counts as confirmed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Confirmations {
    /// With this many blocks on top of it (`confirmations = 12`).
    Blocks(u64),
    /// Once the node says it is finalized (`confirmations = "finalized"`: the chain's own
    /// finality, where it has it, rather than a depth that a deeper reorganisation overturns).
    Finalized,
}

impl std::fmt::Display for Confirmations {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Confirmations::Blocks(blocks) => write!(formatter, "{blocks} confirmations"),
            Confirmations::Finalized => formatter.write_str("finality"),
        }
    }
}

/// Where an operator key comes from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OperatorKeySource {
    /// A file holding `0x` + 64 hex digits (a path relative to the configuration file's folder).
    File(PathBuf),
    /// An environment variable holding `0x` + 64 hex digits.
    Environment(String),
}
