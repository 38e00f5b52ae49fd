//! The account group (`/account/...`): a chain's assets and pairs, an account's balances and
//! tradable amounts, and the EIP-712 types extension.

use std::sync::Arc;

use dexd_core::{AssetIndex, PairIndex};
use serde_json::{json, Value};

use super::{address_param, chain_of, signing_domain, Answer};
use crate::api::params::Params;
use crate::api::render;
use crate::crypto::checksummed;
use crate::venue::Venue;

/// GET /account/assetsInfo
pub async fn assets_info(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
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
    Ok(json!({"chainId": chain.config.chain_id.to_string(), "assets": assets}))
}

/// GET /account/assetBalances
pub async fn asset_balances(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
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
pub async fn asset_pairs(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
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
pub async fn tradable_amounts(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
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
pub async fn eip712_types(venue: Arc<Venue>, params: Params) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let mut description = crate::crypto::request_types_json(signing_domain(&chain));
    description["chainId"] = json!(chain.config.chain_id.to_string());
    description["primaryTypes"] = json!({
        "addOrder": "Order",
        "cancelOrder": "CancelOrder",
        "deposit": "Deposit",
        "withdraw": "Withdraw",
    });
    description["maxLifetimeMs"] = json!(dexd_core::MAX_SIGNED_REQUEST_LIFETIME_MS);
    Ok(description)
}
