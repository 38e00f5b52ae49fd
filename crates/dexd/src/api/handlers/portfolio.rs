//! The portfolio group (`/portfolio/...`): deposits and withdrawals and their histories.

use std::sync::Arc;

use alloy_primitives::keccak256;
use axum::http::StatusCode;
use dexd_core::decimal::DecimalError;
use dexd_core::{
    Address, Amount, AssetIndex, Command, Event, Transfer, TransferKind, TransferRequest, VaultWithdrawal,
    WithdrawalWait,
};
use serde_json::{json, Value};

use super::{
    history, own_signature, refuse_signing_agent, signing_domain, spend_write_budget, store_error, write_error, Answer,
};
use crate::api::credential::Credential;
use crate::api::error::ApiError;
use crate::api::operations::{ASSET, FROM, QUANTITY};
use crate::api::params::Params;
use crate::api::render;
use crate::api::state::AppState;
use dexd_crypto::checksummed;
use dexd_custody::deposit::DepositError;
use dexd_custody::vault::WithdrawalTerms;
use dexd_store::now_ms;

use dexd_venue::Chain;

/// What every transfer request (a deposit, a withdrawal, a transfer between subaccounts)
/// names, checked: the chain, the account (`from`, which the
/// credential must be), the asset and the amount in its smallest unit.
pub(super) struct TransferTerms {
    pub(super) chain: Arc<Chain>,
    pub(super) from: Address,
    pub(super) asset: AssetIndex,
    pub(super) units: u128,
    pub(super) credential: Credential,
}

pub(super) fn transfer_terms(app: &AppState, params: &Params) -> Result<TransferTerms, ApiError> {
    let chain = params.chain(&app.venue)?;
    let from = params.require(&FROM)?;
    let (credential, actor) =
        Credential::from_fields(params.credential(Some(from))?, chain.clock.now_ms(), &app.addresses)?;
    // An agent's key naming the account it acts for: agents never move funds.
    actor.require_own_key()?;
    let signer = credential.account(&app.addresses);
    if from != signer {
        let message = match credential {
            Credential::Key { .. } => "from is not the address of privateKey",
            Credential::Signed { .. } => "from is not the signing account",
        };
        return Err(ApiError::new(StatusCode::FORBIDDEN, "ACCOUNT_MISMATCH", message).on("from"));
    }
    let asset = params.asset(&chain, &ASSET)?;
    let decimals = chain.markets().config.asset_config(asset).decimals;
    let units = params
        .require(&QUANTITY)?
        .to_scaled_units(decimals)
        .map_err(|error| match error {
            DecimalError::TooPrecise => {
                ApiError::invalid_number("quantity", format!("has more than the asset's {decimals} decimals"))
            }
            _ => error_too_large("quantity"),
        })?;
    if units == 0 {
        return Err(ApiError::invalid_number("quantity", "must be positive"));
    }
    Ok(TransferTerms {
        chain,
        from,
        asset,
        units,
        credential,
    })
}

/// The answer to a deposit or withdrawal: the transfer and the account's balance after it.
fn transfer_answer(chain: &Chain, terms: (Address, AssetIndex), name: &str, transfer: &Transfer) -> Value {
    let (account, asset) = terms;
    let balance = chain.read_engine(|engine| engine.balance(&account, asset));
    json!({name: render::transfer(&chain.markets().config, transfer), "balance": render::balance(&chain.markets().config, asset, balance)})
}

fn applied_transfer(events: &[Event]) -> Result<&Transfer, ApiError> {
    events
        .iter()
        .find_map(|event| match event {
            Event::TransferApplied(transfer) => Some(transfer),
            _ => None,
        })
        .ok_or_else(ApiError::internal)
}

/// A ledger chain: credited or debited at once, confirmed.
async fn ledger_transfer(app: &AppState, terms: TransferTerms, kind: TransferKind) -> Answer {
    let TransferTerms {
        chain,
        from,
        asset,
        units,
        credential,
    } = terms;
    let digest_of =
        |signed| signing_domain(&chain).digest(&chain.markets().messages.transfer(kind, &from, asset, units, signed));
    let authorization = own_signature(&chain, &credential, &from, digest_of)?;
    spend_write_budget(app, &chain, &from)?;
    let request = TransferRequest {
        transfer_id: transaction_hash(&chain, &from, asset, units, kind),
        account: from,
        asset,
        amount: Amount::from_units(units),
    };
    let command = match kind {
        TransferKind::Deposit => Command::Deposit(request),
        TransferKind::Withdrawal => Command::Withdraw(request),
    };
    let events = crate::api::written::submit(&chain, command, authorization)
        .await
        .map_err(write_error)?;
    let name = match kind {
        TransferKind::Deposit => "deposit",
        TransferKind::Withdrawal => "withdrawal",
    };
    Ok(transfer_answer(&chain, (from, asset), name, applied_transfer(&events)?))
}

/// A vault chain's deposit: dexd sends it from the account with its key, and the credit follows
/// the confirmations. With a client signature there is no key to send with.
async fn vault_deposit(app: &AppState, terms: TransferTerms) -> Answer {
    let vault = app.custody.chain(terms.chain.chain_id).ok_or_else(ApiError::internal)?;
    let key = match terms.credential {
        Credential::Key { key, .. } => key,
        Credential::Signed { .. } => {
            return Err(ApiError::invalid(
                "signature",
                format!(
                    "cannot make a deposit on a vault chain: dexd would need the account's key to send it; deposit from \
                     the wallet instead, calling deposit(token, amount) after approve, or depositNative(), on the vault \
                     {}; it is credited after its {}",
                    checksummed(&vault.config.vault),
                    vault.config.confirmations
                ),
            ))
        }
    };
    spend_write_budget(app, &terms.chain, &terms.from)?;
    let signer = key.transaction_signer();
    drop(key);
    let transfer = vault
        .deposit_with_key(signer, terms.from, terms.asset, terms.units)
        .await
        .map_err(|error| match error {
            DepositError::InsufficientFundsOnChain(message) => {
                crate::api::error::unprocessable("INSUFFICIENT_FUNDS_ON_CHAIN", message).on("quantity")
            }
            DepositError::ChainUnavailable(message) => chain_unavailable(&message),
            DepositError::Venue(error) => write_error(error),
        })?;
    Ok(transfer_answer(
        &terms.chain,
        (terms.from, terms.asset),
        "deposit",
        &transfer,
    ))
}

/// 502 `CHAIN_UNAVAILABLE`.
fn chain_unavailable(reason: &str) -> ApiError {
    ApiError::new(
        StatusCode::BAD_GATEWAY,
        "CHAIN_UNAVAILABLE",
        format!("the chain's node cannot be used now ({reason}); nothing was applied, retry later"),
    )
}

/// A vault chain's withdrawal: debited now and journaled with the account's authorization of
/// the vault's `Withdrawal` (signed here with the key, or by the client: then its `nonce` is the
/// withdrawal id and its `expiry` the vault's), then paid by the chain's payer.
async fn vault_withdrawal(app: &AppState, mut terms: TransferTerms) -> Answer {
    terms.credential = terms.credential.for_withdrawal();
    let vault = app.custody.chain(terms.chain.chain_id).ok_or_else(ApiError::internal)?;
    let (withdrawal_id, expiry_ms) = withdrawal_id_and_expiry(&terms.credential, vault)?;
    let (chain, from, asset) = (&terms.chain, terms.from, terms.asset);
    if matches!(terms.credential, Credential::Signed { .. }) {
        refuse_used_withdrawal_id(chain, &from, &withdrawal_id).await?;
    }
    let withdrawal = WithdrawalTerms {
        account: from,
        token: chain.markets().config.asset_config(asset).address,
        amount_units: terms.units,
        withdrawal_id,
        expiry_ms,
    };
    let digest = withdrawal.digest(signing_domain(chain));
    let signed = (withdrawal_id, expiry_ms);
    let authorization =
        if let Some(block) = approved_by_account_contract(vault, &terms.credential, &from, digest).await? {
            terms.credential.authorize_approved_by_account_contract(signed, block)?
        } else {
            terms
                .credential
                .authorize(digest, &from, signed, None)
                .map_err(|error| refuse_signing_agent(chain, &from, &terms.credential, digest, error))?
        };
    spend_write_budget(app, chain, &from)?;
    let command = Command::RequestWithdrawal(VaultWithdrawal {
        request: TransferRequest {
            transfer_id: withdrawal_id,
            account: from,
            asset,
            amount: Amount::from_units(terms.units),
        },
        expiry_ms,
        signature: authorization.signature,
    });
    // A client's nonce is claimed like any signed request's; the venue's own signature needs no
    // claim (its id is random).
    let claim = authorization.client_signed.then_some(authorization);
    let events = crate::api::written::submit(chain, command, claim)
        .await
        .map_err(write_error)?;
    Ok(transfer_answer(
        chain,
        (from, asset),
        "withdrawal",
        applied_transfer(&events)?,
    ))
}

/// A withdrawal id is the account's once, for ever: the vault keeps `withdrawn[account][id]`
/// for good, so a second withdrawal with a paid id would be taken as paid by the first's
/// payment and never paid. The history holds every withdrawal ever requested (read once it has
/// every acknowledged command); one being requested at this moment is refused by its nonce's
/// claim on the writer.
async fn refuse_used_withdrawal_id(chain: &Chain, account: &Address, withdrawal_id: &[u8; 32]) -> Result<(), ApiError> {
    let history = chain.history().await.map_err(write_error)?;
    if history
        .has_transfer(account, TransferKind::Withdrawal, withdrawal_id)
        .map_err(store_error)?
    {
        return Err(ApiError::new(
            StatusCode::CONFLICT,
            "NONCE_REUSED",
            "this account has already used this withdrawal id (the nonce), and an id is used once for ever; sign \
             again with a new nonce",
        )
        .on("nonce"));
    }
    Ok(())
}

/// Whether a client's signature of a withdrawal is taken on the word of the account's own
/// contract (ERC-1271) rather than by recovering the signer, as the vault decides: an ECDSA
/// signature by the account itself with low `s` and `v` 27 or 28 needs no question (`None`);
/// any other is put to the vault's `isAuthorized` before anything is debited, so that what the
/// vault would refuse is refused here rather than failed after. The question is asked at the
/// node's head block, which is the answer (`Some(block)`): the journal records it so that an
/// auditor asks at the same block, since a contract's approval may lapse. A node that cannot answer is 502
/// `CHAIN_UNAVAILABLE`; a signature neither way is 401 `INVALID_SIGNATURE`.
async fn approved_by_account_contract(
    vault: &dexd_custody::VaultChain,
    credential: &Credential,
    account: &Address,
    digest: [u8; 32],
) -> Result<Option<u64>, ApiError> {
    let Credential::Signed { signature, .. } = credential else {
        return Ok(None);
    };
    let signed_by_account = dexd_crypto::recover_signer(digest, signature).as_ref() == Some(account);
    if signed_by_account && dexd_crypto::is_contract_canonical_signature(signature) {
        return Ok(None);
    }
    let unavailable = |error: dexd_custody::node::NodeError| chain_unavailable(&error.to_string());
    let block = vault.node.head().await.map_err(unavailable)?;
    let taken = vault
        .node
        .vault_took_authorization(
            dexd_custody::vault::chain_address(account),
            digest.into(),
            signature,
            alloy::eips::BlockId::number(block),
        )
        .await
        .map_err(unavailable)?;
    match (taken, signed_by_account) {
        (true, _) => Ok(Some(block)),
        (false, true) => Err(ApiError::new(
            StatusCode::UNAUTHORIZED,
            "INVALID_SIGNATURE",
            "the vault takes only low-s signatures with v 27 or 28 (as eth_signTypedData_v4 and standard signers \
             make them); sign the withdrawal again",
        )
        .on("signature")),
        (false, false) => Err(crate::api::credential::invalid_signature(&digest)),
    }
}

/// The vault withdrawal's id and expiry: random, and `withdrawal_validity_ms` from now (at
/// least the chain's withdrawal wait) when dexd signs with the key; the client's nonce and
/// expiry when the client signed, once its expiry leaves the payer the withdrawal wait: a root
/// interval, the vault's challenge period and `withdrawal_expiry_margin_ms`.
fn withdrawal_id_and_expiry(
    credential: &Credential,
    vault: &dexd_custody::VaultChain,
) -> Result<([u8; 32], u64), ApiError> {
    let wait_ms = vault.withdrawal_wait_ms();
    match credential {
        Credential::Key { .. } => Ok((
            rand::random::<[u8; 32]>(),
            now_ms().saturating_add(vault.config.withdrawal_validity_ms.max(wait_ms)),
        )),
        Credential::Signed { nonce, expiry_ms, .. } => {
            if *expiry_ms < now_ms().saturating_add(wait_ms) {
                return Err(ApiError::invalid(
                    "expiry",
                    format!(
                        "a withdrawal's expiry must be at least {wait_ms} ms ahead (a liability root interval, the \
                         vault's challenge period and the payer's margin), so that the vault can pay it before it \
                         expires; sign it again with a later expiry"
                    ),
                ));
            }
            Ok((*nonce, *expiry_ms))
        }
    }
}

async fn transfer(app: Arc<AppState>, params: Params, kind: TransferKind) -> Answer {
    let terms = transfer_terms(&app, &params)?;
    match (terms.chain.markets().config.vault().is_some(), kind) {
        (false, _) => ledger_transfer(&app, terms, kind).await,
        (true, TransferKind::Deposit) => vault_deposit(&app, terms).await,
        (true, TransferKind::Withdrawal) => vault_withdrawal(&app, terms).await,
    }
}

fn error_too_large(field: &str) -> ApiError {
    crate::api::error::unprocessable("AMOUNT_TOO_LARGE", format!("{field} is larger than the venue accepts")).on(field)
}

/// The built-in ledger mode has no real chain transaction: the id is a keccak-256 hash over
/// the transfer's terms and a random salt, shaped like a transaction hash and unique.
fn transaction_hash(chain: &Chain, account: &Address, asset: AssetIndex, units: u128, kind: TransferKind) -> [u8; 32] {
    let salt: [u8; 16] = rand::random();
    let mut preimage = Vec::with_capacity(80);
    preimage.extend_from_slice(&chain.chain_id.to_be_bytes());
    preimage.extend_from_slice(account.as_bytes());
    preimage.extend_from_slice(&asset.0.to_be_bytes());
    preimage.extend_from_slice(&units.to_be_bytes());
    preimage.push(kind as u8);
    preimage.extend_from_slice(&salt);
    keccak256(&preimage).0
}

/// POST /portfolio/deposit
pub async fn deposit(app: Arc<AppState>, params: Params) -> Answer {
    transfer(app, params, TransferKind::Deposit).await
}

/// POST /portfolio/withdraw
pub async fn withdraw(app: Arc<AppState>, params: Params) -> Answer {
    transfer(app, params, TransferKind::Withdrawal).await
}

async fn transfer_history(app: Arc<AppState>, params: Params, kind: TransferKind) -> Answer {
    let chain = params.chain(&app.venue)?;
    let account = params.account_read()?;
    let request = params.page()?;
    let page = history(&chain)
        .await?
        .transfers(&account, kind, request)
        .map_err(store_error)?;
    let mut transfers: Vec<Value> = page
        .items
        .iter()
        .map(|transfer| render::transfer(&chain.markets().config, transfer))
        .collect();
    if kind == TransferKind::Withdrawal {
        let has_roots = app
            .custody
            .chain(chain.chain_id)
            .is_some_and(|vault| vault.root_terms().is_some());
        chain.read_engine(|engine| {
            for (object, transfer) in transfers.iter_mut().zip(&page.items) {
                let (waiting_for, payable_after) = withdrawal_wait(engine, transfer, has_roots);
                object["waitingFor"] = json!(waiting_for);
                object["payableAfter"] = json!(payable_after);
                // A withdrawal the account asked the vault for on chain (`requestWithdrawal`)
                // is kept under an id made from the request's number.
                let on_chain = dexd_core::is_chain_request_withdrawal_id(&transfer.transfer_id);
                object["requested"] = json!(if on_chain { "chain" } else { "api" });
                object["requestId"] =
                    json!(on_chain
                        .then(|| { u64::from_be_bytes(transfer.transfer_id[24..].try_into().expect("8 bytes")) }));
            }
        });
    }
    let name = match kind {
        TransferKind::Deposit => "deposits",
        TransferKind::Withdrawal => "withdrawals",
    };
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&account),
        name: transfers,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// What a withdrawal not yet paid waits for (`root`, `challenge`, `payment`, `confirmations`),
/// and when it may be paid, if that is known: both null once it is settled, or when the engine
/// no longer holds it as pending (the history's read may be behind the engine's).
fn withdrawal_wait(
    engine: &dexd_core::Engine,
    transfer: &Transfer,
    has_roots: bool,
) -> (Option<&'static str>, Option<u64>) {
    let key = dexd_core::WithdrawalKey {
        account: transfer.account,
        withdrawal_id: transfer.transfer_id,
    };
    let Some(pending) = engine.custody().pending_withdrawal(&key) else {
        return (None, None);
    };
    if pending.status == dexd_core::TransferStatus::Sent {
        return (Some("confirmations"), None);
    }
    if !has_roots {
        return (Some("payment"), None);
    }
    match engine
        .custody()
        .liabilities()
        .withdrawal_wait(pending.debited_at_sequence)
    {
        WithdrawalWait::Root => (Some("root"), None),
        WithdrawalWait::Challenge { payable_after_ms } => (Some("challenge"), Some(payable_after_ms)),
        WithdrawalWait::Payment => (Some("payment"), None),
    }
}

/// GET /portfolio/depositHistories
pub async fn deposit_history(app: Arc<AppState>, params: Params) -> Answer {
    transfer_history(app, params, TransferKind::Deposit).await
}

/// GET /portfolio/withdrawHistories
pub async fn withdraw_history(app: Arc<AppState>, params: Params) -> Answer {
    transfer_history(app, params, TransferKind::Withdrawal).await
}
