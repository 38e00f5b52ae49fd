//! The account group (`/account/...`): a chain's assets and pairs, an account's balances and
//! tradable amounts, and the EIP-712 types extension.

use std::sync::Arc;

use axum::http::StatusCode;
use dexd_core::{AssetIndex, PairIndex};
use serde_json::{json, Value};

use super::{signing_domain, Answer};
use crate::api::error::ApiError;
use crate::api::params::Params;
use crate::api::render;
use crate::api::state::AppState;
use dexd_crypto::checksummed;
use dexd_custody::config::Confirmations;
use dexd_custody::node::NodeError;
use dexd_custody::reserves::{ledger_reserves, shared_vault_reserves};
use dexd_venue::Chain;

/// GET /account/assetsInfo
pub async fn assets_info(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let assets: Vec<Value> = chain
        .markets()
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
        "chainId": chain.chain_id.to_string(),
        "custody": custody_object(&app, &chain),
        "assets": assets,
    }))
}

/// The contract's custody object of a chain: its mode, and on a vault chain the vault, the
/// operator, the confirmations and whether deposits are being credited.
/// GET /chains (extension): every configured chain with its name and custody mode, in the
/// configuration's order.
pub async fn chains(app: Arc<AppState>, _params: Params) -> Answer {
    let chains: Vec<Value> = app
        .venue
        .config
        .chains
        .iter()
        .map(|chain| {
            let mode = if app.custody.chain(chain.chain_id).is_some() {
                "vault"
            } else {
                "ledger"
            };
            json!({"chainId": chain.chain_id.to_string(), "name": chain.name, "custody": mode})
        })
        .collect();
    Ok(json!({ "chains": chains }))
}

/// `GET /cluster`: this node, the cluster's nodes, and who leads each chain at which position.
pub async fn cluster(app: Arc<AppState>, _params: Params) -> Answer {
    app.cluster.status(&app.venue).await.map_err(|error| {
        tracing::warn!(%error, "the cluster's directory cannot be read");
        crate::api::error::ApiError::unavailable("the cluster's directory cannot be read now; retry shortly")
    })
}

pub(super) fn custody_object(app: &AppState, chain: &Chain) -> Value {
    match app.custody.chain(chain.chain_id) {
        None => json!({"mode": "ledger"}),
        Some(vault) => {
            let status = vault.status();
            json!({
                "mode": "vault",
                "vault": checksummed(&vault.config.vault),
                "operator": checksummed(&vault.operator),
                "confirmations": match vault.config.confirmations {
                    Confirmations::Blocks(blocks) => json!(blocks),
                    Confirmations::Finalized => json!("finalized"),
                },
                "crediting": if status.halted.is_some() { "halted" } else { "running" },
                "haltReason": status.halted,
                "frozen": status.vault_frozen,
            })
        }
    }
}

/// GET /account/reserves: per asset, what the vault holds on chain against what the venue owes
/// (`dexd_custody::reserves`); on a ledger chain only what it owes.
pub async fn reserves(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let markets = chain.markets();
    let (assets, block_number, read_at_ms) = match app.custody.chain(chain.chain_id) {
        None => (chain.read_engine(ledger_reserves), None, dexd_store::now_ms()),
        Some(vault) => {
            let reading = shared_vault_reserves(vault).await.map_err(|error: NodeError| {
                ApiError::new(
                    StatusCode::BAD_GATEWAY,
                    "CHAIN_UNAVAILABLE",
                    format!("the chain's node cannot be read now ({error}); retry later"),
                )
            })?;
            (reading.assets.clone(), Some(reading.block_number), reading.read_at_ms)
        }
    };
    let amount = |asset: AssetIndex, units: u128| render::asset_amount(&markets.config, asset, units);
    let assets: Vec<Value> = assets
        .iter()
        .map(|reserves| {
            let asset = reserves.asset;
            let config = markets.config.asset_config(asset);
            json!({
                "symbol": config.symbol,
                "onChain": reserves.held_units.map(|held| amount(asset, held)),
                "liabilities": amount(asset, reserves.liabilities_units),
                "pendingWithdrawals": amount(asset, reserves.pending_withdrawals_units),
                "surplus": reserves.surplus_units().map(|surplus| render::signed_amount(surplus, config.decimals)),
            })
        })
        .collect();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "custody": custody_object(&app, &chain),
        "assets": assets,
        "blockNumber": block_number,
        "readAt": read_at_ms,
    }))
}

/// GET /account/assetBalances
pub async fn asset_balances(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let account = params.account_read()?;
    let markets = chain.markets();
    let balances: Vec<Value> = chain.read_engine(|engine| {
        (0..markets.config.assets.len())
            .map(|index| {
                let asset = AssetIndex(index as u16);
                render::balance(&markets.config, asset, engine.balance(&account, asset))
            })
            .collect()
    });
    Ok(json!({"chainId": chain.chain_id.to_string(), "account": checksummed(&account), "balances": balances}))
}

/// GET /account/rateLimits: the account's write budget (all chains share it) and its open
/// orders on the chain against the limit.
pub async fn rate_limits(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let account = params.account_read()?;
    let budget = app.rate_limits.write_budget(&super::budget_account(&chain, &account));
    let open_orders = chain.read_engine(|engine| engine.open_order_count(&account));
    Ok(json!({
        "writesPerSecond": budget.writes_per_second,
        "writesUsed": budget.writes_used,
        "resetAt": dexd_store::now_ms() + budget.full_in_ms,
        "openOrders": open_orders,
        "maxOpenOrders": app.venue.config.limits.max_open_orders_per_account,
    }))
}

/// GET /account/assetPairs
pub async fn asset_pairs(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let fee = dexd_core::fee_rate_text;
    let markets = chain.markets();
    let pairs: Vec<Value> = markets
        .config
        .pairs
        .iter()
        .enumerate()
        .map(|(index, pair)| {
            let now_ms = dexd_store::now_ms();
            // The fees are the journal's, in force now, with a raise it announced and that has
            // not come yet (the configuration file's raise is announced, not applied at once).
            let (last_price, fees, raise, halted) = chain.read_engine(|engine| {
                let journaled = engine.config().pairs.get(index);
                let spec = engine.pair_spec(PairIndex(index as u16));
                let fees = spec.map_or((pair.definition.maker_fee, pair.definition.taker_fee), |spec| {
                    spec.fees_at(now_ms)
                });
                let raise = journaled
                    .and_then(|definition| definition.fee_raise)
                    .filter(|raise| raise.effective_at_ms > now_ms);
                let halted = engine.is_pair_halted(PairIndex(index as u16));
                (engine.last_price(PairIndex(index as u16)), fees, raise, halted)
            });
            let definition = &pair.definition;
            json!({
                "symbol": pair.symbol,
                "base": markets.config.asset_config(definition.base).symbol,
                "quote": markets.config.asset_config(definition.quote).symbol,
                "tickSize": definition.tick_size.to_string(),
                "stepSize": definition.step_size.to_string(),
                "minAmount": definition.min_amount.to_string(),
                "minNotional": definition.min_notional.to_string(),
                "makerFee": fee(fees.0),
                "takerFee": fee(fees.1),
                "feeRaise": raise.map(|raise| json!({
                    "makerFee": fee(raise.maker_fee),
                    "takerFee": fee(raise.taker_fee),
                    "effectiveAt": raise.effective_at_ms,
                })),
                "lastPrice": last_price.map(|price| pair.spec.format_price(price)),
                "halted": halted,
            })
        })
        .collect();
    Ok(json!({"chainId": chain.chain_id.to_string(), "pairs": pairs}))
}

/// GET /account/tradableAmounts
pub async fn tradable_amounts(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let account = params.account_read()?;
    let tradable: Vec<Value> = chain.read_engine(|engine| {
        chain
            .markets()
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
                        "maxAmount": render::asset_amount(&chain.markets().config, spec.base(), spec.base_amount(amounts.buy_quantity).units()),
                        "maxCost": render::asset_amount(&chain.markets().config, spec.quote(), amounts.buy_cost.units()),
                    },
                    "sell": {"maxAmount": render::asset_amount(&chain.markets().config, spec.base(), amounts.sell_amount.units())},
                }))
            })
            .collect()
    });
    Ok(json!({"chainId": chain.chain_id.to_string(), "account": checksummed(&account), "tradable": tradable}))
}

/// GET /account/eip712
pub async fn eip712_types(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let mut description = dexd_crypto::request_types_json(signing_domain(&chain));
    description["chainId"] = json!(chain.chain_id.to_string());
    let vault_chain = chain.markets().config.vault().is_some();
    if vault_chain {
        // On a vault chain a withdrawal is signed as the vault's own type, so that one signature
        // authorises both the debit and the payment.
        let withdrawal = &dexd_custody::vault::WITHDRAWAL_TYPE;
        description["types"][withdrawal.name] = withdrawal.members_json();
    }
    description["primaryTypes"] = json!({
        "addOrder": "Order",
        "cancelOrder": "CancelOrder",
        "deposit": "Deposit",
        "withdraw": if vault_chain { "Withdrawal" } else { "Withdraw" },
        "batchOrders": "OrderBatch",
        "batchCancel": "CancelOrder",
        "cancelAll": "CancelAll",
        "amendOrder": "AmendOrder",
        "cancelAllAfter": "CancelAllAfter",
        "approveAgent": "ApproveAgent",
        "revokeAgent": "RevokeAgent",
        "transfer": "Transfer",
        "addTwap": "Twap",
        "cancelTwap": "CancelTwap",
    });
    description["maxLifetimeMs"] = json!(dexd_core::MAX_SIGNED_REQUEST_LIFETIME_MS);
    if vault_chain {
        // A vault withdrawal waits for a final liability root: it may live longer, and must
        // live at least the chain's withdrawal wait.
        description["maxWithdrawalLifetimeMs"] = json!(dexd_core::MAX_SIGNED_WITHDRAWAL_LIFETIME_MS);
        if let Some(vault) = app.custody.chain(chain.chain_id) {
            description["minWithdrawalLifetimeMs"] = json!(vault.withdrawal_wait_ms());
        }
    }
    Ok(description)
}
