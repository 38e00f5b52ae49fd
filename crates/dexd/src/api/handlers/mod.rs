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
pub mod market_history;
pub mod order;
pub mod portfolio;
pub mod subaccounts;
pub mod trading;
pub mod twaps;

use std::sync::Arc;

use dexd_core::Address;
use serde_json::{json, Value};

use super::credential::{Actor, Credential};
use super::error::ApiError;
use super::params::Params;
use super::state::AppState;
use dexd_crypto::SigningDomain;
use dexd_store::StoreError;
use dexd_store::WriteError;

use dexd_venue::Chain;

pub use self::account::{
    asset_balances, asset_pairs, assets_info, chains, cluster, eip712_types, rate_limits, reserves, tradable_amounts,
};
pub use self::agents::{agents, approve_agent, revoke_agent};
pub use self::amend::amend_order;
pub use self::audit::{audit_journal, audit_roots};
pub use self::liabilities::{custody, liability_leaves, liability_proof, liability_roots};
pub use self::market_history::{candles, trade_history};
pub use self::order::{
    account_trades, add_order, buy_order_book, cancel_order, cancelled_orders, filled_orders, open_orders,
    open_positions, order_detail, sell_order_book,
};
pub use self::portfolio::{deposit, deposit_history, withdraw, withdraw_history};
pub use self::subaccounts::{subaccounts, transfer as subaccount_transfer, transfers as subaccount_transfers};
pub use self::trading::{batch_cancel, batch_orders, cancel_all, cancel_all_after};

pub(super) type Answer = Result<Value, ApiError>;

/// The prologue every account write shares, in the order its errors are reported: its chain, its
/// credential (the account's key, an agent's key, or the client's own signature), then the actor
/// (the account it acts for, and the agent acting for it when there is one). The write's own
/// parameters and its signature come after.
pub(super) fn account_write(app: &AppState, params: &Params) -> Result<(Arc<Chain>, Credential, Actor), ApiError> {
    let chain = params.chain(&app.venue)?;
    let (credential, actor) = credential_of(app, &chain, params)?;
    Ok((chain, credential, actor))
}

/// A request's credential and who it acts for, from its own fields (a batch item's, or the
/// request's).
/// Times are the chain's venue time, which the engine judges a signature's expiry by.
pub(super) fn credential_of(app: &AppState, chain: &Chain, params: &Params) -> Result<(Credential, Actor), ApiError> {
    Credential::from_fields(params.credential(None)?, chain.clock.now_ms(), &app.addresses)
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

/// The account whose write budget a write of `account` spends: a subaccount's owner (all of an
/// owner's subaccounts share its budget), or the account itself.
pub(super) fn budget_account(chain: &Chain, account: &Address) -> Address {
    chain
        .read_engine(|engine| engine.subaccount_owner(account))
        .map_or(*account, |(owner, _)| owner)
}

/// Takes one state change from the budget of the account (of its owner, for a subaccount).
pub(super) fn spend_write_budget(app: &AppState, chain: &Chain, account: &Address) -> Result<(), ApiError> {
    let account = &budget_account(chain, account);
    app.rate_limits.check_account(account).map_err(|wait| {
        crate::api::error::too_many_requests("this account is making state changes faster than allowed", wait)
    })
}

/// A store that cannot be read is an internal fault: logged here, answered as an opaque 500.
pub(super) fn store_error(error: StoreError) -> ApiError {
    tracing::error!(%error, "reading the store failed");
    ApiError::internal()
}

/// [`write_error`], for the operator's API (`crate::admin`).
pub(crate) fn write_error_response(error: WriteError) -> ApiError {
    write_error(error)
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

/// GET /health
pub async fn health(_app: Arc<AppState>, _params: Params) -> Answer {
    Ok(json!({"status": "ok"}))
}
