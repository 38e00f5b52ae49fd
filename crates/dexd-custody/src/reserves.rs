//! The reserves of a vault chain: per asset, what the vault holds on chain against what the
//! venue owes (every account's total, the fee account's included, plus withdrawals not yet
//! paid). `GET /account/reserves` answers with it; the reserves task checks it every
//! [`RESERVES_CHECK_INTERVAL_MS`] for `/metrics` and logs an error when the vault holds less than
//! the venue owes.
//!
//! The chain is read at its newest block after the venue's state, so that what the venue credited
//! or paid is already there and a withdrawal paid but not yet confirmed is not counted as owed:
//! the surplus is never understated (deposits not yet confirmed make it larger for a while).
//! Readings for clients are shared: one younger than [`RESERVES_READING_MAX_AGE_MS`] is served as
//! it is while what the venue owes is still what it was read against, and one reading at a time
//! is made per chain (callers meanwhile wait for it). No number of `/account/reserves` calls makes
//! more than one set of node calls a second, unless deposits or withdrawals change what the
//! venue owes, and a reading never lags a credit or debit the caller has seen.
//!
//! This module reads; it never changes the venue or the chain.

use std::sync::Arc;
use std::time::Duration;

use alloy::eips::{BlockId, BlockNumberOrTag};
use alloy::primitives::U256;
use dexd_core::{AssetIndex, Engine, WithdrawalKey};
use tokio::sync::watch;

use super::node::NodeError;
use super::vault::chain_address;
use super::{pause_or_stop, VaultChain};

/// How many pending withdrawals one `withdrawnMany` call asks about.
pub const RESERVES_WITHDRAWALS_PER_CALL: usize = 500;
/// How often the reserves task checks a vault chain's reserves.
pub const RESERVES_CHECK_INTERVAL_MS: u64 = 30_000;
/// The oldest reading served to a client as it is; an older one is replaced by a fresh one.
pub const RESERVES_READING_MAX_AGE_MS: u64 = 1_000;

/// What the venue owes per asset, and its pending withdrawals (key, asset, units).
pub type Liabilities = (Vec<u128>, Vec<(WithdrawalKey, AssetIndex, u128)>);

/// One reading of a vault chain's reserves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReservesReading {
    /// What the venue owed when it was read.
    pub liabilities: Liabilities,
    /// Per asset.
    pub assets: Vec<AssetReserves>,
    /// The block the chain was read at.
    pub block_number: u64,
    /// When it was read, in ms since the epoch.
    pub read_at_ms: u64,
}

/// The reserves of a vault chain, from the shared reading when it is younger than
/// [`RESERVES_READING_MAX_AGE_MS`], else read now (one reading at a time per chain).
pub async fn shared_vault_reserves(vault: &VaultChain) -> Result<Arc<ReservesReading>, NodeError> {
    let mut last = vault.reserves_reading.lock().await;
    let liabilities = vault.read_engine(liabilities);
    if let Some(reading) = last.as_ref() {
        let young = dexd_store::now_ms().saturating_sub(reading.read_at_ms) < RESERVES_READING_MAX_AGE_MS;
        if young && reading.liabilities == liabilities {
            return Ok(Arc::clone(reading));
        }
    }
    let read_at_ms = dexd_store::now_ms();
    let (assets, block_number) = vault_reserves_against(vault, &liabilities).await?;
    let reading = Arc::new(ReservesReading {
        liabilities,
        assets,
        block_number,
        read_at_ms,
    });
    *last = Some(Arc::clone(&reading));
    Ok(reading)
}

/// One asset's reserves, in its smallest units.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AssetReserves {
    /// The asset.
    pub asset: AssetIndex,
    /// What the vault holds (`None` on a ledger chain).
    pub held_units: Option<u128>,
    /// What the venue owes: balances plus unpaid withdrawals.
    pub liabilities_units: u128,
    /// Withdrawals debited and not yet paid on chain.
    pub pending_withdrawals_units: u128,
}

impl AssetReserves {
    /// Held minus owed (`None` on a ledger chain).
    pub fn surplus_units(&self) -> Option<i128> {
        self.held_units.map(|held| {
            i128::try_from(held).unwrap_or(i128::MAX) - i128::try_from(self.liabilities_units).unwrap_or(i128::MAX)
        })
    }
}

/// What the venue owes per asset and its pending withdrawals, read from the engine at once.
pub fn liabilities(engine: &Engine) -> Liabilities {
    let owed = (0..engine.asset_count())
        .map(|index| engine.net_deposits(AssetIndex(index as u16)).units())
        .collect();
    let pending = engine
        .custody()
        .pending_withdrawals()
        .map(|(key, withdrawal)| (*key, withdrawal.asset, withdrawal.amount.units()))
        .collect();
    (owed, pending)
}

/// The reserves of a ledger chain: nothing on chain, every pending withdrawal owed.
pub fn ledger_reserves(engine: &Engine) -> Vec<AssetReserves> {
    let (owed, pending) = liabilities(engine);
    let mut pending_units = vec![0u128; owed.len()];
    for (_, asset, units) in &pending {
        pending_units[usize::from(asset.0)] += units;
    }
    (0..owed.len())
        .map(|index| AssetReserves {
            asset: AssetIndex(index as u16),
            held_units: None,
            liabilities_units: owed[index] + pending_units[index],
            pending_withdrawals_units: pending_units[index],
        })
        .collect()
}

/// The reserves of a vault chain at the node's newest block, against `liabilities` read from the
/// venue just before; returns them with the block.
pub async fn vault_reserves_against(
    vault: &VaultChain,
    (owed, pending): &Liabilities,
) -> Result<(Vec<AssetReserves>, u64), NodeError> {
    let block_number = vault.node.head().await?;
    let block = BlockId::Number(BlockNumberOrTag::Number(block_number));
    let mut pending_units = vec![0u128; owed.len()];
    for chunk in pending.chunks(RESERVES_WITHDRAWALS_PER_CALL) {
        let ids: Vec<_> = chunk
            .iter()
            .map(|(key, _, _)| (chain_address(&key.account), U256::from_be_bytes(key.withdrawal_id)))
            .collect();
        let paid = vault.node.withdrawn_many(&ids, block).await?;
        for ((_, asset, units), paid) in chunk.iter().zip(paid) {
            if !paid {
                pending_units[usize::from(asset.0)] += units;
            }
        }
    }
    let mut assets = Vec::with_capacity(owed.len());
    for index in 0..owed.len() {
        let asset = AssetIndex(index as u16);
        let held = vault
            .node
            .balance(vault.token_of_asset(asset), vault.node.vault(), block)
            .await?;
        assets.push(AssetReserves {
            asset,
            held_units: Some(u128::try_from(held).unwrap_or(u128::MAX)),
            liabilities_units: owed[index] + pending_units[index],
            pending_withdrawals_units: pending_units[index],
        });
    }
    Ok((assets, block_number))
}

/// Checks a vault chain's reserves every [`RESERVES_CHECK_INTERVAL_MS`] until stopped, keeping
/// the surplus in the chain's status; a vault short of what the venue owes is logged as an
/// error each time it is seen.
pub async fn run(vault: Arc<VaultChain>, mut stop: watch::Receiver<bool>) {
    let chain_id = vault.chain_id;
    loop {
        match shared_vault_reserves(&vault).await {
            Ok(reading) => {
                let (assets, block) = (&reading.assets, reading.block_number);
                for reserves in assets {
                    if reserves.surplus_units().is_some_and(|surplus| surplus < 0) {
                        tracing::error!(
                            chain_id,
                            asset = %vault.asset_symbol(reserves.asset),
                            block,
                            held_units = reserves.held_units.unwrap_or(0).to_string(),
                            liabilities_units = reserves.liabilities_units.to_string(),
                            "THE VAULT HOLDS LESS THAN THE VENUE OWES"
                        );
                    }
                }
                vault.update_status(|status| {
                    status.reserves_surplus = assets
                        .iter()
                        .filter_map(|reserves| Some((reserves.asset, reserves.surplus_units()?)))
                        .collect();
                });
            }
            Err(error) => tracing::debug!(chain_id, %error, "the reserves could not be checked now"),
        }
        if pause_or_stop(Duration::from_millis(RESERVES_CHECK_INTERVAL_MS), &mut stop).await {
            break;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn reserves(held_units: Option<u128>, liabilities_units: u128) -> AssetReserves {
        AssetReserves {
            asset: AssetIndex(0),
            held_units,
            liabilities_units,
            pending_withdrawals_units: 0,
        }
    }

    #[test]
    fn the_surplus_is_held_minus_owed_signed_and_none_on_a_ledger_chain() {
        assert_eq!(reserves(Some(1_000), 400).surplus_units(), Some(600));
        assert_eq!(
            reserves(Some(400), 1_000).surplus_units(),
            Some(-600),
            "a shortfall is negative"
        );
        assert_eq!(reserves(Some(0), 0).surplus_units(), Some(0));
        assert_eq!(reserves(None, 1_000).surplus_units(), None);
        // Amounts past i128 are clamped rather than wrapped: a huge holding never reads as a
        // shortfall.
        assert_eq!(reserves(Some(u128::MAX), 0).surplus_units(), Some(i128::MAX));
    }
}
