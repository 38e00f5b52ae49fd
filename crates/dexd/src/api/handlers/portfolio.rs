//! The portfolio group (`/portfolio/...`): deposits and withdrawals and their histories.

use std::sync::Arc;

use alloy_primitives::keccak256;
use axum::http::StatusCode;
use dexd_core::decimal::DecimalError;
use dexd_core::{Address, AssetIndex, Command, Event, TransferKind, TransferRequest};
use serde_json::{json, Value};

use super::{
    address_param, chain_of, history, page_request, signing_domain, spend_write_budget, store_error, write_error,
    Answer,
};
use crate::api::credential::Credential;
use crate::api::error::ApiError;
use crate::api::params::Params;
use crate::api::render;
use crate::crypto::{checksummed, FieldValue, TypedMessage, DEPOSIT_TYPE, WITHDRAW_TYPE};
use crate::venue::{now_ms, Chain, Venue};

/// The typed data of a transfer: `Deposit` or `Withdraw(account, symbol, quantity, nonce, expiry)`.
fn transfer_message(
    chain: &Chain,
    account: &Address,
    asset: AssetIndex,
    units: u128,
    kind: TransferKind,
    signed: ([u8; 32], u64),
) -> TypedMessage {
    TypedMessage {
        struct_type: match kind {
            TransferKind::Deposit => &DEPOSIT_TYPE,
            TransferKind::Withdrawal => &WITHDRAW_TYPE,
        },
        values: vec![
            FieldValue::Address(*account),
            FieldValue::Text(chain.config.asset_config(asset).symbol.clone()),
            FieldValue::Text(render::asset_amount(&chain.config, asset, units)),
            FieldValue::Uint(signed.0),
            FieldValue::uint(signed.1),
        ],
    }
}

async fn transfer(venue: Arc<Venue>, params: Params, kind: TransferKind) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let from = address_param(&params, "from")?;
    let credential = Credential::from_params(&params, params.text("from")?, now_ms())?;
    let signer = credential.account(&venue.addresses);
    if from != signer {
        let message = match credential {
            Credential::Key(_) => "from is not the address of privateKey",
            Credential::Signed { .. } => "from is not the signing account",
        };
        return Err(ApiError::new(StatusCode::FORBIDDEN, "ACCOUNT_MISMATCH", message).on("from"));
    }
    let asset = asset_param(&chain, &params)?;
    let decimals = chain.config.asset_config(asset).decimals;
    let units = params
        .required_decimal("quantity")?
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
    let authorization = credential.authorize_client_signature(&from, |signed| {
        signing_domain(&chain).digest(&transfer_message(&chain, &from, asset, units, kind, signed))
    })?;
    spend_write_budget(&venue, &from)?;
    let transfer_id = transaction_hash(&chain, &from, asset, units, kind);
    let request = TransferRequest {
        transfer_id,
        account: from,
        asset,
        amount: dexd_core::Amount::from_units(units),
    };
    let command = match kind {
        TransferKind::Deposit => Command::Deposit(request),
        TransferKind::Withdrawal => Command::Withdraw(request),
    };
    let events = chain.submit(command, authorization).await.map_err(write_error)?;
    let transfer = events.iter().find_map(|event| match event {
        Event::TransferApplied(transfer) => Some(render::transfer(&chain.config, transfer)),
        _ => None,
    });
    let balance = chain.read_engine(|engine| engine.balance(&from, asset));
    let name = match kind {
        TransferKind::Deposit => "deposit",
        TransferKind::Withdrawal => "withdrawal",
    };
    Ok(
        json!({name: transfer.ok_or_else(ApiError::internal)?, "balance": render::balance(&chain.config, asset, balance)}),
    )
}

fn error_too_large(field: &str) -> ApiError {
    crate::api::error::unprocessable("AMOUNT_TOO_LARGE", format!("{field} is larger than the venue accepts")).on(field)
}

fn asset_param(chain: &Chain, params: &Params) -> Result<AssetIndex, ApiError> {
    let symbol = params.required_text("symbol")?;
    if symbol.len() > crate::config::MAX_SYMBOL_LENGTH
        || !symbol
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || byte == b'.' || byte == b'-')
    {
        return Err(ApiError::invalid("symbol", "must be an asset symbol such as USDC"));
    }
    chain.config.asset(symbol).ok_or_else(|| {
        ApiError::not_found(
            "UNKNOWN_ASSET",
            format!("{} is not an asset of this chain", symbol.to_ascii_uppercase()),
        )
        .on("symbol")
    })
}

/// The built-in ledger mode has no real chain transaction: the id is a keccak-256 hash over
/// the transfer's terms and a random salt, shaped like a transaction hash and unique.
fn transaction_hash(chain: &Chain, account: &Address, asset: AssetIndex, units: u128, kind: TransferKind) -> [u8; 32] {
    let salt: [u8; 16] = rand::random();
    let mut preimage = Vec::with_capacity(80);
    preimage.extend_from_slice(&chain.config.chain_id.to_be_bytes());
    preimage.extend_from_slice(account.as_bytes());
    preimage.extend_from_slice(&asset.0.to_be_bytes());
    preimage.extend_from_slice(&units.to_be_bytes());
    preimage.push(kind as u8);
    preimage.extend_from_slice(&salt);
    keccak256(&preimage).0
}

/// POST /portfolio/deposit
pub async fn deposit(venue: Arc<Venue>, params: Params) -> Answer {
    transfer(venue, params, TransferKind::Deposit).await
}

/// POST /portfolio/withdraw
pub async fn withdraw(venue: Arc<Venue>, params: Params) -> Answer {
    transfer(venue, params, TransferKind::Withdrawal).await
}

async fn transfer_history(venue: Arc<Venue>, params: Params, kind: TransferKind) -> Answer {
    let chain = chain_of(&venue, &params)?;
    let account = address_param(&params, "account")?;
    let request = page_request(&params)?;
    let page = history(&chain)
        .await?
        .transfers(&account, kind, request)
        .map_err(store_error)?;
    let transfers: Vec<Value> = page
        .items
        .iter()
        .map(|transfer| render::transfer(&chain.config, transfer))
        .collect();
    let name = match kind {
        TransferKind::Deposit => "deposits",
        TransferKind::Withdrawal => "withdrawals",
    };
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "account": checksummed(&account),
        name: transfers,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /portfolio/depositHistories
pub async fn deposit_history(venue: Arc<Venue>, params: Params) -> Answer {
    transfer_history(venue, params, TransferKind::Deposit).await
}

/// GET /portfolio/withdrawHistories
pub async fn withdraw_history(venue: Arc<Venue>, params: Params) -> Answer {
    transfer_history(venue, params, TransferKind::Withdrawal).await
}
