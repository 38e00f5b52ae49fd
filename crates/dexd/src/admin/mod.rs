//! The operator's API (contract version 5, "Markets at run time"), on a listener of its own
//! (`dexd serve --admin-listen`), never on the public one: every request carries `Authorization:
//! Bearer <token>`, the token read from an environment variable at start (at least
//! [`MIN_ADMIN_TOKEN_BYTES`] bytes), compared in constant time.
//!
//! What it does: halt a pair and resume it (a halted pair takes cancels only), each a journaled
//! `SetPairHalted` command the auditor replays; list an asset or a pair and change a pair's fees
//! without a restart (`markets.rs`), each a journaled `Configure`; list the pairs with their
//! state. `dexd admin ...` is its client. It does not serve traders: nothing here is on the
//! public listener.

mod markets;

use std::sync::{Arc, OnceLock};

use axum::extract::State;
use axum::http::{HeaderMap, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use dexd_core::{Command, PairIndex};
use hmac::{Mac, SimpleHmac};
use serde::Deserialize;
use serde_json::{json, Value};
use sha2::Sha256;
use zeroize::Zeroizing;

use crate::api::error::ApiError;

/// The shortest token the admin listener takes, in bytes: 32 random bytes written as hex or
/// base64 are longer.
pub const MIN_ADMIN_TOKEN_BYTES: usize = 32;
/// The environment variable the token is read from unless `--admin-token-env` names another.
pub const DEFAULT_ADMIN_TOKEN_ENV: &str = "DEXD_ADMIN_TOKEN";
/// The largest admin request body, in bytes.
pub const MAX_ADMIN_BODY_BYTES: usize = 4 * 1024;

/// What the admin listener checks a request's token against: a MAC of the token under a fixed
/// key, so that the comparison is the MAC library's constant-time one and the token itself is
/// not kept.
#[derive(Clone)]
pub struct AdminToken {
    mac_of_token: Arc<[u8]>,
}

impl AdminToken {
    /// The token from the environment variable `name`; `Err` says why it cannot be used (never
    /// what it holds).
    pub fn from_environment(name: &str) -> Result<AdminToken, String> {
        let token = Zeroizing::new(
            std::env::var(name)
                .map_err(|_| format!("--admin-listen needs the admin token in the environment variable {name}"))?,
        );
        if token.trim().len() < MIN_ADMIN_TOKEN_BYTES {
            return Err(format!(
                "the admin token in {name} must be at least {MIN_ADMIN_TOKEN_BYTES} bytes (32 random bytes as hex: \
                 openssl rand -hex 32)"
            ));
        }
        Ok(AdminToken {
            mac_of_token: mac(token.trim().as_bytes()).finalize().into_bytes().to_vec().into(),
        })
    }

    fn admits(&self, headers: &HeaderMap) -> bool {
        let Some(presented) = headers
            .get(axum::http::header::AUTHORIZATION)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.strip_prefix("Bearer "))
        else {
            return false;
        };
        mac(presented.trim().as_bytes())
            .verify_slice(&self.mac_of_token)
            .is_ok()
    }
}

fn mac(token: &[u8]) -> SimpleHmac<Sha256> {
    let mut mac = SimpleHmac::<Sha256>::new_from_slice(b"dexd admin token").expect("HMAC takes any key");
    mac.update(token);
    mac
}

/// The venue once it has started (the admin listener answers 503 before).
pub type StartedVenue = Arc<OnceLock<Arc<dexd_venue::Venue>>>;

#[derive(Clone)]
struct AdminState {
    token: AdminToken,
    venue: StartedVenue,
}

/// The admin listener's router.
pub fn router(token: AdminToken, venue: StartedVenue) -> Router {
    Router::new()
        .route("/admin/pairs", get(pairs))
        .route("/admin/haltPair", post(halt_pair))
        .route("/admin/resumePair", post(resume_pair))
        .route("/admin/listAsset", post(markets::list_asset))
        .route("/admin/listPair", post(markets::list_pair))
        .route("/admin/setFees", post(markets::set_fees))
        .fallback(|| async { ApiError::not_found("NOT_FOUND", "no such admin path") })
        .layer(axum::extract::DefaultBodyLimit::max(MAX_ADMIN_BODY_BYTES))
        .with_state(AdminState { token, venue })
}

fn unauthenticated() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "UNAUTHENTICATED",
        "the admin API needs Authorization: Bearer <the operator's token>",
    )
}

/// The venue and the named chain, once the request's token is the operator's.
fn chain_of(state: &AdminState, headers: &HeaderMap, chain_id: &str) -> Result<Arc<dexd_venue::Chain>, ApiError> {
    if !state.token.admits(headers) {
        return Err(unauthenticated());
    }
    let venue = state
        .venue
        .get()
        .ok_or_else(|| ApiError::unavailable("the venue is starting; retry shortly"))?;
    chain_id
        .parse::<u64>()
        .ok()
        .and_then(|chain_id| venue.chain(chain_id))
        .ok_or_else(|| ApiError::not_found("UNKNOWN_CHAIN", "no such chain on this venue").on("chainId"))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct PairRequest {
    #[serde(rename = "chainId")]
    chain_id: String,
    symbol: String,
}

fn pair_list(chain: &dexd_venue::Chain) -> Value {
    let halted = chain.read_engine(|engine| engine.halted_pairs());
    let pairs: Vec<Value> = chain
        .markets()
        .config
        .pairs
        .iter()
        .enumerate()
        .map(|(index, pair)| {
            let index = PairIndex(u16::try_from(index).expect("pairs fit u16"));
            json!({"symbol": pair.symbol, "halted": halted.contains(&index)})
        })
        .collect();
    json!({"chainId": chain.chain_id.to_string(), "pairs": pairs})
}

/// GET /admin/pairs?chainId: every pair with whether it is halted.
async fn pairs(State(state): State<AdminState>, headers: HeaderMap, uri: axum::http::Uri) -> Response {
    if !state.token.admits(&headers) {
        return unauthenticated().into_response();
    }
    let chain_id = form_urlencoded::parse(uri.query().unwrap_or("").as_bytes())
        .find(|(name, _)| name == "chainId")
        .map(|(_, value)| value.into_owned());
    let Some(chain_id) = chain_id else {
        return ApiError::missing("chainId").into_response();
    };
    match chain_of(&state, &headers, &chain_id) {
        Ok(chain) => Json(pair_list(&chain)).into_response(),
        Err(error) => error.into_response(),
    }
}

async fn halt_pair(state: State<AdminState>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    set_halted(state, headers, body, true).await
}

async fn resume_pair(state: State<AdminState>, headers: HeaderMap, body: axum::body::Bytes) -> Response {
    set_halted(state, headers, body, false).await
}

/// Journals `SetPairHalted` for the pair the body names.
async fn set_halted(
    State(state): State<AdminState>,
    headers: HeaderMap,
    body: axum::body::Bytes,
    halted: bool,
) -> Response {
    if !state.token.admits(&headers) {
        return unauthenticated().into_response();
    }
    let request: PairRequest = match serde_json::from_slice(&body) {
        Ok(request) => request,
        Err(error) => {
            return ApiError::new(
                StatusCode::BAD_REQUEST,
                "MALFORMED_BODY",
                format!("the body must be {{\"chainId\", \"symbol\"}}: {error}"),
            )
            .into_response()
        }
    };
    let chain = match chain_of(&state, &headers, &request.chain_id) {
        Ok(chain) => chain,
        Err(error) => return error.into_response(),
    };
    let Some(pair) = chain.markets().config.pair(&request.symbol) else {
        return ApiError::not_found("UNKNOWN_PAIR", "no such pair on this chain")
            .on("symbol")
            .into_response();
    };
    match crate::api::written::submit(&chain, Command::SetPairHalted { pair, halted }, None).await {
        Ok(_) => {
            tracing::warn!(
                chain_id = chain.chain_id,
                pair = %chain.markets().config.pair_config(pair).symbol,
                halted,
                "the operator {} a pair",
                if halted { "halted" } else { "resumed" }
            );
            Json(json!({
                "chainId": chain.chain_id.to_string(),
                "symbol": chain.markets().config.pair_config(pair).symbol,
                "halted": halted,
            }))
            .into_response()
        }
        Err(error) => crate::api::handlers::write_error_response(error).into_response(),
    }
}
