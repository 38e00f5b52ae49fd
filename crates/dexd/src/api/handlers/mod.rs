//! One function per operation: read the parameters, ask the venue, render the contract's body.
//! The handlers are grouped as the seed groups its paths: [`order`] (`/order/...`),
//! [`portfolio`] (`/portfolio/...`) and [`account`] (`/account/...`), with the trading
//! extensions in [`trading`] (batches, cancel all, amend, the switch) and `agents`; this file
//! holds what they
//! share (reading a chain, an address, a pair, a page; mapping the venue's errors) and the
//! extensions that belong to no group (`/health`).
//!
//! Parameters are checked in a fixed order (unknown fields, chain, credential, the rest), and
//! every check happens before a command reaches the writer, so a refused request changes
//! nothing. A private key is turned into an address and a signature, then dropped before the
//! command is queued. These functions hold no state of their own.

pub mod account;
pub mod agents;
pub mod amend;
pub mod audit;
mod batch_signing;
pub mod liabilities;
pub mod order;
pub mod portfolio;
pub mod trading;

use std::sync::Arc;

use dexd_core::{Address, CandleInterval, PairIndex, CANDLE_INTERVAL_NAMES};
use serde_json::{json, Value};

use super::credential::{Actor, Credential};
use super::error::ApiError;
use super::params::Params;
use super::AppState;
use dexd_crypto::{parse_address, SigningDomain};
use dexd_store::WriteError;
use dexd_store::{PageRequest, StoreError, MAX_PAGE_LIMIT};

use dexd_venue::{Chain, Venue};

pub use self::account::{
    asset_balances, asset_pairs, assets_info, chains, cluster, eip712_types, rate_limits, reserves, tradable_amounts,
};
pub use self::agents::{agents, approve_agent, revoke_agent};
pub use self::amend::amend_order;
pub use self::audit::{audit_journal, audit_roots};
pub use self::liabilities::{custody, liability_leaves, liability_proof, liability_roots};
pub use self::order::{
    account_trades, add_order, buy_order_book, cancel_order, cancelled_orders, candles, filled_orders, open_orders,
    open_positions, order_detail, sell_order_book, trade_history,
};
pub use self::portfolio::{deposit, deposit_history, withdraw, withdraw_history};
pub use self::trading::{batch_cancel, batch_orders, cancel_all, cancel_all_after};

/// The longest `clientOrderId` accepted.
pub const MAX_CLIENT_ORDER_ID_LENGTH: usize = 64;
/// The deepest book page.
pub const MAX_BOOK_DEPTH: usize = 1_000;
pub(super) const DEFAULT_BOOK_DEPTH: usize = 50;
pub(super) const DEFAULT_PAGE_LIMIT: usize = 100;
pub(super) const DEFAULT_CANDLE_LIMIT: usize = 500;
pub(super) const MAX_CANDLE_LIMIT: usize = 1_000;

pub(super) type Answer = Result<Value, ApiError>;

/// The prologue every account write shares, in the order its errors are reported: its chain, its
/// credential (the account's key, an agent's key, or the client's own signature), then the actor
/// (the account it acts for, and the agent acting for it when there is one). The write's own
/// parameters and its signature come after.
pub(super) fn account_write(app: &AppState, params: &Params) -> Result<(Arc<Chain>, Credential, Actor), ApiError> {
    let chain = chain_of(&app.venue, params)?;
    let credential = Credential::from_params(params, None, dexd_store::now_ms())?;
    let actor = credential.actor(params, &app.addresses)?;
    Ok((chain, credential, actor))
}

/// The prologue of a write only the account itself may make (never an agent for it), with no
/// null parameters: its chain, its credential and the account.
pub(super) fn own_account_write(
    app: &AppState,
    params: &Params,
) -> Result<(Arc<Chain>, Credential, Address), ApiError> {
    params.refuse_nulls()?;
    let (chain, credential, actor) = account_write(app, params)?;
    actor.require_own_key()?;
    Ok((chain, credential, actor.account))
}

pub(super) fn chain_of(venue: &Venue, params: &Params) -> Result<Arc<Chain>, ApiError> {
    let chain_id = params.integer("chainId")?.ok_or_else(|| ApiError::missing("chainId"))?;
    venue.chain(chain_id).ok_or_else(|| {
        ApiError::not_found("UNKNOWN_CHAIN", format!("chain {chain_id} is not configured")).on("chainId")
    })
}

pub(super) fn address_param(params: &Params, name: &str) -> Result<Address, ApiError> {
    parse_address(params.required_text(name)?).map_err(|_| {
        ApiError::invalid(
            name,
            "must be 0x + 40 hex digits, with a valid EIP-55 checksum if mixed case",
        )
    })
}

pub(super) fn pair_param(chain: &Chain, params: &Params, name: &str) -> Result<PairIndex, ApiError> {
    pair_of(chain, name, params.required_text(name)?)
}

/// A pair parameter that may be left out (a list over every pair).
pub(super) fn optional_pair_param(chain: &Chain, params: &Params, name: &str) -> Result<Option<PairIndex>, ApiError> {
    params.text(name)?.map(|text| pair_of(chain, name, text)).transpose()
}

pub(super) fn pair_of(chain: &Chain, name: &str, text: &str) -> Result<PairIndex, ApiError> {
    let well_formed = text.split_once('/').is_some_and(|(base, quote)| {
        let symbol_ok = |part: &str| {
            !part.is_empty()
                && part.len() <= dexd_venue::config::MAX_SYMBOL_LENGTH
                && part
                    .bytes()
                    .all(|byte| byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-')
        };
        symbol_ok(base) && symbol_ok(quote)
    });
    if !well_formed {
        return Err(ApiError::invalid(name, "must be a pair such as ETH/USDC"));
    }
    chain.config.pair(text).ok_or_else(|| {
        ApiError::not_found(
            "UNKNOWN_PAIR",
            format!("{} is not a pair of this chain", text.to_ascii_uppercase()),
        )
        .on(name)
    })
}

pub(super) fn choice<'a>(params: &Params, name: &str, allowed: &[&'a str]) -> Result<Option<&'a str>, ApiError> {
    let Some(text) = params.text(name)? else {
        return Ok(None);
    };
    allowed
        .iter()
        .find(|candidate| candidate.eq_ignore_ascii_case(text))
        .copied()
        .map(Some)
        .ok_or_else(|| ApiError::invalid(name, format!("must be one of {}", allowed.join(", "))))
}

/// A parameter naming one of an enum's contract words (any case, as [`choice`]), as its value:
/// `names` and `parse` are the enum's list and parser in `dexd_core::wire_names`.
pub(super) fn word<T>(
    params: &Params,
    name: &str,
    names: &[&'static str],
    parse: fn(&str) -> Option<T>,
) -> Result<Option<T>, ApiError> {
    Ok(choice(params, name, names)?.and_then(parse))
}

/// The `interval` of candles (exact, as the contract writes it); one minute when absent.
pub(crate) fn candle_interval_param(params: &Params) -> Result<CandleInterval, ApiError> {
    match params.text("interval")? {
        None => Ok(CandleInterval::OneMinute),
        Some(text) => CandleInterval::from_wire_name(text).ok_or_else(|| {
            ApiError::invalid(
                "interval",
                format!("must be one of {}", CANDLE_INTERVAL_NAMES.join(", ")),
            )
        }),
    }
}

pub(super) fn bounded(params: &Params, name: &str, default: usize, max: usize) -> Result<usize, ApiError> {
    match params.integer(name)? {
        None => Ok(default),
        Some(value) if value >= 1 && value <= max as u64 => Ok(value as usize),
        Some(_) => Err(ApiError::invalid(name, format!("must be between 1 and {max}"))),
    }
}

pub(super) fn time_range(params: &Params) -> Result<(u64, u64), ApiError> {
    // A startTime after the endTime is an empty range (an empty list), not an error: every
    // pair of times the document allows is a request the server answers.
    let start = params.integer("startTime")?.unwrap_or(0);
    let end = params.integer("endTime")?.unwrap_or(u64::MAX);
    Ok((start, end))
}

pub(super) fn page_request(params: &Params) -> Result<PageRequest, ApiError> {
    let limit = bounded(params, "limit", DEFAULT_PAGE_LIMIT, MAX_PAGE_LIMIT)?;
    let cursor = match params.text("cursor")? {
        None => None,
        // Cursors this service gives are row numbers and sequences, under 10^19.
        Some(text) if text.len() <= 19 && text.bytes().all(|byte| byte.is_ascii_digit()) => Some(
            text.parse::<u64>()
                .map_err(|_| ApiError::invalid("cursor", "is not a cursor this service gave"))?,
        ),
        Some(_) => return Err(ApiError::invalid("cursor", "is not a cursor this service gave")),
    };
    let (start_ms, end_ms) = time_range(params)?;
    Ok(PageRequest {
        limit,
        cursor,
        start_ms,
        end_ms,
    })
}

/// The chain's history, once it holds everything acknowledged before this request.
pub(super) async fn history(chain: &Chain) -> Result<&dexd_store::StoreReader, ApiError> {
    chain
        .history()
        .await
        .map_err(|_| ApiError::unavailable("the history is catching up; retry shortly"))
}

/// An invalid signature on an operation no agent may send (a transfer, an approval): 403
/// `AGENT_NOT_ALLOWED` when the signature recovers to an agent the account approved (the agent
/// itself tried), else `error` as it was.
pub(super) fn refuse_signing_agent(
    chain: &Chain,
    account: &Address,
    credential: &crate::api::credential::Credential,
    digest: [u8; 32],
    error: ApiError,
) -> ApiError {
    if error.code != "INVALID_SIGNATURE" {
        return error;
    }
    match credential.recovered_signer(digest) {
        Some(signer) if chain.read_engine(|engine| engine.agent_allowed(account, &signer, dexd_store::now_ms())) => {
            super::error::agent_not_allowed()
        }
        _ => error,
    }
}

/// The authorization of an operation that only the account's own signature may send (a
/// transfer, an approval): the key's signature over `digest_of`'s digest, or the client's
/// checked, and one by an agent of the account refused as such ([`refuse_signing_agent`]).
pub(super) fn own_signature(
    chain: &Chain,
    credential: &crate::api::credential::Credential,
    account: &Address,
    digest_of: impl Fn(([u8; 32], u64)) -> [u8; 32],
) -> Result<Option<dexd_store::Authorization>, ApiError> {
    credential
        .authorize_client_signature(account, &digest_of)
        .map(Some)
        .map_err(|error| {
            refuse_signing_agent(
                chain,
                account,
                credential,
                digest_of(credential.nonce_and_expiry(0)),
                error,
            )
        })
}

/// Takes one state change from the account's budget.
pub(super) fn spend_write_budget(app: &AppState, account: &Address) -> Result<(), ApiError> {
    app.rate_limits.check_account(account).map_err(|wait| {
        crate::api::error::too_many_requests("this account is making state changes faster than allowed", wait)
    })
}

/// A store that cannot be read is an internal fault: logged here, answered as an opaque 500.
pub(super) fn store_error(error: StoreError) -> ApiError {
    tracing::error!(%error, "reading the store failed");
    ApiError::internal()
}

pub(super) fn write_error(error: WriteError) -> ApiError {
    match error {
        WriteError::Rejected(rejection) => ApiError::from_rejection(rejection),
        WriteError::QueueFull => {
            ApiError::unavailable("the chain's write queue is full; nothing was applied, retry shortly")
        }
        WriteError::NotDurable => {
            ApiError::unavailable("the change could not be written to disk; nothing was applied, retry later")
        }
        WriteError::HistoryBehind => {
            ApiError::unavailable("the history has not caught up with the latest changes; retry shortly")
        }
        WriteError::NotLeader => ApiError::unavailable(
            "this node does not lead the chain now (another node of the cluster does, or none has taken it over \
             yet); nothing was applied, retry shortly or send the write to the chain's leader",
        ),
    }
}

pub(super) fn signing_domain(chain: &Chain) -> &SigningDomain {
    &chain.signing_domain
}

pub(super) fn client_order_id(params: &Params) -> Result<Option<String>, ApiError> {
    let Some(text) = params.text("clientOrderId")? else {
        return Ok(None);
    };
    let valid = text.len() <= MAX_CLIENT_ORDER_ID_LENGTH
        && text
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || b"._:-".contains(&byte));
    if !valid {
        return Err(ApiError::invalid(
            "clientOrderId",
            format!("must be 1 to {MAX_CLIENT_ORDER_ID_LENGTH} of A-Z a-z 0-9 . _ : -"),
        ));
    }
    Ok(Some(text.to_string()))
}

/// GET /health
pub async fn health(_app: Arc<AppState>, _params: Params) -> Answer {
    Ok(json!({"status": "ok"}))
}
