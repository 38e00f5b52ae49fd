//! The operator's changes of a chain's markets at run time: list an asset, list a pair, change
//! a pair's fees. Each is a journaled `Configure` the chain's writer decides against the
//! journal's configuration (so two changes never overwrite each other) and checks by the rules
//! every configuration change follows (assets and pairs only appended, each kept as it was; a
//! raise of fees announced, in force after the chain's notice; a cut at once). The auditor
//! replays it like any other configuration. The markets the API serves follow once it is
//! durable: a pair listed is quoted, traded and streamed without a restart, and kept across
//! restarts with the same configuration file (docs/operating.md).
//!
//! It does not list an asset on a vault chain: the vault's deposit watcher and liability trees
//! take their tokens from the configuration file at start, so a vault chain's assets are listed
//! there (its pairs between listed assets can be added here).

use std::sync::Arc;

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use dexd_core::{
    AssetDescription, AssetSpec, ChainConfiguration, ConfigurationRefused, Decimal, FeeRate, PairDefinition, PairSpec,
};
use dexd_venue::ReconfigurationError;
use serde::de::DeserializeOwned;
use serde::Deserialize;
use serde_json::{json, Value};

use super::{chain_of, unauthenticated, AdminState};
use crate::api::error::ApiError;

/// The most decimals an asset listed at run time may have (as in the configuration file).
pub const MAX_LISTED_ASSET_DECIMALS: u32 = 36;

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ListAssetRequest {
    chain_id: String,
    symbol: String,
    decimals: u32,
    /// The token contract; absent for the chain's native asset.
    token: Option<String>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct ListPairRequest {
    chain_id: String,
    base: String,
    quote: String,
    tick_size: String,
    step_size: String,
    min_amount: String,
    min_notional: String,
    maker_fee: String,
    taker_fee: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
struct SetFeesRequest {
    chain_id: String,
    symbol: String,
    maker_fee: String,
    taker_fee: String,
}

/// A request that names its chain.
trait OnChain {
    fn chain_id(&self) -> &str;
}

impl OnChain for ListAssetRequest {
    fn chain_id(&self) -> &str {
        &self.chain_id
    }
}

impl OnChain for ListPairRequest {
    fn chain_id(&self) -> &str {
        &self.chain_id
    }
}

impl OnChain for SetFeesRequest {
    fn chain_id(&self) -> &str {
        &self.chain_id
    }
}

/// The operator's request of the shape `shape` and the chain it names: 401 without the token,
/// the contract's 400 for another body, 404 for an unknown chain, 503 while the venue starts.
fn operator_request<Request: DeserializeOwned + OnChain>(
    state: &AdminState,
    headers: &HeaderMap,
    body: &[u8],
    shape: &str,
) -> Result<(Request, Arc<dexd_venue::Chain>), ApiError> {
    if !state.token.admits(headers) {
        return Err(unauthenticated());
    }
    let request: Request = serde_json::from_slice(body).map_err(|error| {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "MALFORMED_BODY",
            format!("the body must be {shape}: {error}"),
        )
    })?;
    let chain = chain_of(state, headers, request.chain_id())?;
    Ok((request, chain))
}

fn decimal(field: &str, text: &str) -> Result<Decimal, ApiError> {
    Decimal::parse(text).map_err(|error| ApiError::invalid_number(field, format!("{text:?} {error}")))
}

/// A fee rate written as a fraction (`"0.001"` is 0.1 %), at most 1 with at most 6 decimals.
fn fee_rate(field: &str, text: &str) -> Result<FeeRate, ApiError> {
    dexd_core::fee_rate_from_decimal(decimal(field, text)?)
        .ok_or_else(|| ApiError::invalid(field, "must be between 0 and 1 with at most 6 decimals"))
}

/// 409 `CONFIGURATION_REFUSED`: the change breaks a rule of configuration changes.
fn refused(refusal: ConfigurationRefused) -> ApiError {
    ApiError::new(StatusCode::CONFLICT, "CONFIGURATION_REFUSED", refusal.0)
}

/// Journals `change` on the chain and answers with what `answer` makes of the configuration
/// journaled.
async fn reconfigure(
    chain: &dexd_venue::Chain,
    change: Box<dexd_venue::ReconfigurationChange>,
    answer: impl FnOnce(u64, &ChainConfiguration) -> Value,
) -> Response {
    match chain.reconfigure(change).await {
        Ok((sequence, configuration)) => Json(answer(sequence, &configuration)).into_response(),
        Err(ReconfigurationError::Refused(refusal)) => refused(refusal).into_response(),
        Err(ReconfigurationError::Write(error)) => crate::api::handlers::write_error_response(error).into_response(),
    }
}

/// POST /admin/listAsset {chainId, symbol, decimals, token?}
pub(super) async fn list_asset(
    State(state): State<AdminState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let listed = (|| -> Result<_, ApiError> {
        let (request, chain) = operator_request::<ListAssetRequest>(
            &state,
            &headers,
            &body,
            "{\"chainId\", \"symbol\", \"decimals\", \"token\"?}",
        )?;
        if chain.markets().config.vault().is_some() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "CONFIGURATION_REFUSED",
                "a vault chain's assets are listed in its configuration file (the vault's deposits and liability \
                 roots are set up for them at start); its pairs can be listed here",
            ));
        }
        if request.decimals > MAX_LISTED_ASSET_DECIMALS {
            return Err(ApiError::invalid(
                "decimals",
                format!("must be at most {MAX_LISTED_ASSET_DECIMALS}"),
            ));
        }
        let token = match request.token.as_deref() {
            None => None,
            Some(text) => Some(
                dexd_crypto::parse_address(text)
                    .map_err(|_| ApiError::invalid("token", "is not an address (0x and 40 hex digits)"))?,
            ),
        };
        let symbol = request.symbol.to_ascii_uppercase();
        // What both the configuration file and the journal take: a symbol the API and every
        // signed message can carry.
        if symbol.is_empty()
            || symbol.len() > dexd_venue::config::MAX_SYMBOL_LENGTH
            || !symbol.bytes().all(|byte| byte.is_ascii_alphanumeric())
        {
            return Err(ApiError::invalid(
                "symbol",
                format!(
                    "must be 1 to {} letters and digits",
                    dexd_venue::config::MAX_SYMBOL_LENGTH
                ),
            ));
        }
        let decimals = request.decimals;
        Ok((chain, symbol, token, decimals))
    })();
    let (chain, symbol, token, decimals) = match listed {
        Ok(listed) => listed,
        Err(error) => return error.into_response(),
    };
    let listed_symbol = symbol.clone();
    let change = Box::new(move |current: &ChainConfiguration, _at_ms: u64| {
        if current.description.assets.iter().any(|asset| asset.symbol == symbol) {
            return Err(ConfigurationRefused(format!("asset {symbol} is listed already")));
        }
        // One token, one asset (as in the file): two assets of one contract would credit a
        // deposit to whichever is looked up first.
        if let Some(other) = current.description.assets.iter().find(|asset| asset.token == token) {
            return Err(ConfigurationRefused(format!(
                "asset {} is {} already",
                other.symbol,
                if token.is_some() {
                    "this token"
                } else {
                    "the chain's native asset"
                }
            )));
        }
        let mut next = current.clone();
        next.description.assets.push(AssetDescription { symbol, token });
        next.engine.assets.push(AssetSpec { decimals });
        next.check()?;
        Ok(next)
    });
    let chain_id = chain.chain_id;
    reconfigure(&chain, change, move |sequence, configuration| {
        tracing::warn!(chain_id, asset = %listed_symbol, sequence, "the operator listed an asset");
        json!({
            "chainId": chain_id.to_string(),
            "symbol": listed_symbol,
            "decimals": decimals,
            "token": token.map(|token| dexd_crypto::checksummed(&token)),
            "assets": configuration.description.assets.len(),
            "journalSequence": sequence,
        })
    })
    .await
}

/// POST /admin/listPair {chainId, base, quote, tickSize, stepSize, minAmount, minNotional,
/// makerFee, takerFee}
pub(super) async fn list_pair(
    State(state): State<AdminState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
) -> Response {
    let listed = (|| -> Result<_, ApiError> {
        let (request, chain) = operator_request::<ListPairRequest>(
            &state,
            &headers,
            &body,
            "{\"chainId\", \"base\", \"quote\", \"tickSize\", \"stepSize\", \"minAmount\", \"minNotional\", \
             \"makerFee\", \"takerFee\"}",
        )?;
        let markets = chain.markets();
        let asset = |field: &str, symbol: &str| {
            markets.config.asset(symbol).ok_or_else(|| {
                ApiError::not_found("UNKNOWN_ASSET", format!("no asset {symbol} on this chain")).on(field)
            })
        };
        let definition = PairDefinition {
            base: asset("base", &request.base)?,
            quote: asset("quote", &request.quote)?,
            tick_size: decimal("tickSize", &request.tick_size)?,
            step_size: decimal("stepSize", &request.step_size)?,
            min_amount: decimal("minAmount", &request.min_amount)?,
            min_notional: decimal("minNotional", &request.min_notional)?,
            maker_fee: fee_rate("makerFee", &request.maker_fee)?,
            taker_fee: fee_rate("takerFee", &request.taker_fee)?,
            fee_raise: None,
        };
        let symbol = format!(
            "{}/{}",
            markets.config.asset_config(definition.base).symbol,
            markets.config.asset_config(definition.quote).symbol
        );
        if markets.config.pair(&symbol).is_some() {
            return Err(ApiError::new(
                StatusCode::CONFLICT,
                "CONFIGURATION_REFUSED",
                format!("pair {symbol} is listed already"),
            ));
        }
        // The rules a pair must keep (tick, step and minimums in whole units of its assets),
        // said here field by field rather than as the engine's refusal of the whole.
        let assets: Vec<AssetSpec> = markets
            .config
            .assets
            .iter()
            .map(|asset| AssetSpec {
                decimals: asset.decimals,
            })
            .collect();
        PairSpec::new(&definition, &assets).map_err(|error| {
            ApiError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_PARAMETER",
                format!("pair {symbol}: {error}"),
            )
        })?;
        Ok((chain.clone(), symbol, definition))
    })();
    let (chain, symbol, definition) = match listed {
        Ok(listed) => listed,
        Err(error) => return error.into_response(),
    };
    let listed_symbol = symbol.clone();
    let change = Box::new(move |current: &ChainConfiguration, _at_ms: u64| {
        let same_assets = |pair: &PairDefinition| pair.base == definition.base && pair.quote == definition.quote;
        if definition.base == definition.quote {
            return Err(ConfigurationRefused(format!(
                "pair {symbol} trades an asset against itself"
            )));
        }
        if current.engine.pairs.iter().any(same_assets) {
            return Err(ConfigurationRefused(format!("pair {symbol} is listed already")));
        }
        let mut next = current.clone();
        next.engine.pairs.push(definition);
        next.check()?;
        Ok(next)
    });
    let chain_id = chain.chain_id;
    reconfigure(&chain, change, move |sequence, configuration| {
        tracing::warn!(chain_id, pair = %listed_symbol, sequence, "the operator listed a pair");
        json!({
            "chainId": chain_id.to_string(),
            "symbol": listed_symbol,
            "pairs": configuration.engine.pairs.len(),
            "journalSequence": sequence,
        })
    })
    .await
}

/// POST /admin/setFees {chainId, symbol, makerFee, takerFee}: a cut applies at once; a raise is
/// announced, in force after the chain's notice (the answer's `feeRaise.effectiveAt`).
pub(super) async fn set_fees(State(state): State<AdminState>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    let asked = (|| -> Result<_, ApiError> {
        let (request, chain) = operator_request::<SetFeesRequest>(
            &state,
            &headers,
            &body,
            "{\"chainId\", \"symbol\", \"makerFee\", \"takerFee\"}",
        )?;
        let pair = chain
            .markets()
            .config
            .pair(&request.symbol)
            .ok_or_else(|| ApiError::not_found("UNKNOWN_PAIR", "no such pair on this chain").on("symbol"))?;
        let maker_fee = fee_rate("makerFee", &request.maker_fee)?;
        let taker_fee = fee_rate("takerFee", &request.taker_fee)?;
        Ok((chain, pair, maker_fee, taker_fee))
    })();
    let (chain, pair, maker_fee, taker_fee) = match asked {
        Ok(asked) => asked,
        Err(error) => return error.into_response(),
    };
    let index = usize::from(pair.0);
    let change = Box::new(move |current: &ChainConfiguration, _at_ms: u64| {
        let mut next = current.clone();
        let definition = next
            .engine
            .pairs
            .get_mut(index)
            .ok_or_else(|| ConfigurationRefused(format!("pair {index} is not in the journal's configuration")))?;
        definition.maker_fee = maker_fee;
        definition.taker_fee = taker_fee;
        // These fees replace any raise announced before: one still wanted is asked again.
        definition.fee_raise = None;
        Ok(next)
    });
    let chain_id = chain.chain_id;
    let symbol = chain.markets().config.pair_config(pair).symbol.clone();
    reconfigure(&chain, change, move |sequence, configuration| {
        let definition = &configuration.engine.pairs[index];
        tracing::warn!(chain_id, pair = %symbol, sequence, "the operator changed a pair's fees");
        json!({
            "chainId": chain_id.to_string(),
            "symbol": symbol,
            "makerFee": dexd_core::fee_rate_text(definition.maker_fee),
            "takerFee": dexd_core::fee_rate_text(definition.taker_fee),
            "feeRaise": definition.fee_raise.map(|raise| json!({
                "makerFee": dexd_core::fee_rate_text(raise.maker_fee),
                "takerFee": dexd_core::fee_rate_text(raise.taker_fee),
                "effectiveAt": raise.effective_at_ms,
            })),
            "journalSequence": sequence,
        })
    })
    .await
}
