//! The account group (`/account/...`): a chain's assets and pairs, an account's balances and
//! tradable amounts, and the EIP-712 types extension.

use std::sync::Arc;

use alloy::eips::{BlockId, BlockNumberOrTag};
use alloy::primitives::U256;
use axum::http::StatusCode;
use dexd_core::{AssetIndex, PairIndex, WithdrawalKey};
use serde_json::{json, Value};

use super::{address_param, chain_of, signing_domain, Answer};
use crate::api::error::ApiError;
use crate::api::params::Params;
use crate::api::render;
use crate::api::AppState;
use crate::crypto::checksummed;
use crate::settlement::node::NodeError;
use crate::settlement::vault::chain_address;
use crate::venue::Chain;

/// GET /account/assetsInfo
pub async fn assets_info(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let assets: Vec<Value> = chain
        .config
        .assets
        .iter()
        .map(|asset| {
            json!({
                "symbol": asset.symbol,
                "name": asset.name,
                "decimals": asset.decimals,
                "address": asset.address.as_ref().map(checksummed),
                "native": asset.address.is_none(),
            })
        })
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "custody": custody_object(&app, &chain),
        "assets": assets,
    }))
}

/// The contract's custody object of a chain: its mode, and on a vault chain the vault, the
/// operator, the confirmations and whether deposits are being credited.
fn custody_object(app: &AppState, chain: &Chain) -> Value {
    match app.custody.chain(chain.config.chain_id) {
        None => json!({"mode": "ledger"}),
        Some(vault) => {
            let status = vault.status();
            json!({
                "mode": "vault",
                "vault": checksummed(&vault.config.vault),
                "operator": checksummed(&vault.operator),
                "confirmations": vault.config.confirmations,
                "crediting": if status.halted.is_some() { "halted" } else { "running" },
                "haltReason": status.halted,
            })
        }
    }
}

/// GET /account/reserves: per asset, what the vault holds on chain against what the venue owes
/// (every account's total, the fee account's included, plus withdrawals not yet paid). The chain
/// is read at its newest block after the venue's state, so that what the venue credited or paid
/// is already there and a withdrawal paid but not yet confirmed is not counted as owed: the
/// surplus is never understated (deposits not yet confirmed make it larger for a while).
pub async fn reserves(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let asset_count = chain.config.assets.len();
    let (owed, pending): (Vec<u128>, Vec<(WithdrawalKey, AssetIndex, u128)>) = chain.read_engine(|engine| {
        let owed = (0..asset_count)
            .map(|index| engine.net_deposits(AssetIndex(index as u16)).units())
            .collect();
        let pending = engine
            .custody()
            .pending_withdrawals()
            .map(|(key, withdrawal)| (*key, withdrawal.asset, withdrawal.amount.units()))
            .collect();
        (owed, pending)
    });
    let amount = |asset: AssetIndex, units: u128| render::asset_amount(&chain.config, asset, units);
    let Some(vault) = app.custody.chain(chain.config.chain_id) else {
        let mut pending_units = vec![0u128; asset_count];
        for (_, asset, units) in &pending {
            pending_units[usize::from(asset.0)] += units;
        }
        let assets: Vec<Value> = (0..asset_count)
            .map(|index| {
                let asset = AssetIndex(index as u16);
                json!({
                    "symbol": chain.config.asset_config(asset).symbol,
                    "onChain": null,
                    "liabilities": amount(asset, owed[index] + pending_units[index]),
                    "pendingWithdrawals": amount(asset, pending_units[index]),
                    "surplus": null,
                })
            })
            .collect();
        return Ok(json!({
            "chainId": chain.config.chain_id.to_string(),
            "custody": custody_object(&app, &chain),
            "assets": assets,
            "blockNumber": null,
        }));
    };
    let unavailable = |error: NodeError| {
        ApiError::new(
            StatusCode::BAD_GATEWAY,
            "CHAIN_UNAVAILABLE",
            format!("the chain's node cannot be read now ({error}); retry later"),
        )
    };
    let block_number = vault.node.head().await.map_err(unavailable)?;
    let block = BlockId::Number(BlockNumberOrTag::Number(block_number));
    let mut pending_units = vec![0u128; asset_count];
    for chunk in pending.chunks(RESERVES_WITHDRAWALS_PER_CALL) {
        let ids: Vec<_> = chunk
            .iter()
            .map(|(key, _, _)| (chain_address(&key.account), U256::from_be_bytes(key.withdrawal_id)))
            .collect();
        let paid = vault.node.withdrawn_many(&ids, block).await.map_err(unavailable)?;
        for ((_, asset, units), paid) in chunk.iter().zip(paid) {
            if !paid {
                pending_units[usize::from(asset.0)] += units;
            }
        }
    }
    let mut assets = Vec::with_capacity(asset_count);
    for index in 0..asset_count {
        let asset = AssetIndex(index as u16);
        let held = vault
            .node
            .balance(vault.token_of_asset(asset), vault.node.vault(), block)
            .await
            .map_err(unavailable)?;
        let held = u128::try_from(held).unwrap_or(u128::MAX);
        let liabilities = owed[index] + pending_units[index];
        let surplus = i128::try_from(held).unwrap_or(i128::MAX) - i128::try_from(liabilities).unwrap_or(i128::MAX);
        assets.push(json!({
            "symbol": chain.config.asset_config(asset).symbol,
            "onChain": amount(asset, held),
            "liabilities": amount(asset, liabilities),
            "pendingWithdrawals": amount(asset, pending_units[index]),
            "surplus": render::signed_amount(surplus, chain.config.asset_config(asset).decimals),
        }));
    }
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "custody": custody_object(&app, &chain),
        "assets": assets,
        "blockNumber": block_number,
    }))
}

/// How many pending withdrawals one `withdrawnMany` call of the reserves asks about.
pub const RESERVES_WITHDRAWALS_PER_CALL: usize = 500;

/// GET /account/assetBalances
pub async fn asset_balances(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let account = address_param(&params, "account")?;
    let balances: Vec<Value> = chain.read_engine(|engine| {
        (0..chain.config.assets.len())
            .map(|index| {
                let asset = AssetIndex(index as u16);
                render::balance(&chain.config, asset, engine.balance(&account, asset))
            })
            .collect()
    });
    Ok(json!({"chainId": chain.config.chain_id.to_string(), "account": checksummed(&account), "balances": balances}))
}

/// GET /account/assetPairs
pub async fn asset_pairs(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let fee =
        |rate: dexd_core::FeeRate| dexd_core::decimal::format_scaled_units(u128::from(rate.parts_per_million()), 6);
    let pairs: Vec<Value> = chain
        .config
        .pairs
        .iter()
        .enumerate()
        .map(|(index, pair)| {
            let last_price = chain.read_engine(|engine| engine.last_price(PairIndex(index as u16)));
            let definition = &pair.definition;
            json!({
                "symbol": pair.symbol,
                "base": chain.config.asset_config(definition.base).symbol,
                "quote": chain.config.asset_config(definition.quote).symbol,
                "tickSize": definition.tick_size.to_string(),
                "stepSize": definition.step_size.to_string(),
                "minAmount": definition.min_amount.to_string(),
                "minNotional": definition.min_notional.to_string(),
                "makerFee": fee(definition.maker_fee),
                "takerFee": fee(definition.taker_fee),
                "lastPrice": last_price.map(|price| pair.spec.format_price(price)),
            })
        })
        .collect();
    Ok(json!({"chainId": chain.config.chain_id.to_string(), "pairs": pairs}))
}

/// GET /account/tradableAmounts
pub async fn tradable_amounts(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let account = address_param(&params, "account")?;
    let tradable: Vec<Value> = chain.read_engine(|engine| {
        chain
            .config
            .pairs
            .iter()
            .enumerate()
            .filter_map(|(index, pair)| {
                let amounts = engine.tradable_amounts(&account, PairIndex(index as u16))?;
                let spec = &pair.spec;
                Some(json!({
                    "symbol": pair.symbol,
                    "buy": {
                        "maxAmount": render::asset_amount(&chain.config, spec.base(), spec.base_amount(amounts.buy_quantity).units()),
                        "maxCost": render::asset_amount(&chain.config, spec.quote(), amounts.buy_cost.units()),
                    },
                    "sell": {"maxAmount": render::asset_amount(&chain.config, spec.base(), amounts.sell_amount.units())},
                }))
            })
            .collect()
    });
    Ok(json!({"chainId": chain.config.chain_id.to_string(), "account": checksummed(&account), "tradable": tradable}))
}

/// GET /account/eip712
pub async fn eip712_types(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let mut description = crate::crypto::request_types_json(signing_domain(&chain));
    description["chainId"] = json!(chain.config.chain_id.to_string());
    let vault_chain = chain.config.vault().is_some();
    if vault_chain {
        // On a vault chain a withdrawal is signed as the vault's own type, so that one signature
        // authorises both the debit and the payment.
        let withdrawal = &crate::settlement::vault::WITHDRAWAL_TYPE;
        description["types"][withdrawal.name] = withdrawal.members_json();
    }
    description["primaryTypes"] = json!({
        "addOrder": "Order",
        "cancelOrder": "CancelOrder",
        "deposit": "Deposit",
        "withdraw": if vault_chain { "Withdrawal" } else { "Withdraw" },
    });
    description["maxLifetimeMs"] = json!(dexd_core::MAX_SIGNED_REQUEST_LIFETIME_MS);
    Ok(description)
}
