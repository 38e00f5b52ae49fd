//! Subaccounts (contract version 5): `POST /account/transfer` between two of an owner's
//! subaccounts, `GET /account/transfers` and `GET /account/subaccounts`. Trading and reading in
//! a subaccount is the order and account handlers' (their `subaccount` field); who may act for
//! one, and what a transfer may move, is the engine's to enforce.

use std::sync::Arc;

use axum::http::StatusCode;
use dexd_core::{Amount, AssetIndex, Command, Event, Rejection, SubaccountTransfer, SubaccountTransferRequest};
use dexd_crypto::checksummed;
use dexd_store::{now_ms, WriteError};
use serde_json::{json, Value};

use super::portfolio::transfer_terms;
use super::{history, own_signature, signing_domain, spend_write_budget, store_error, write_error, Answer};
use crate::api::error::ApiError;
use crate::api::operations::{ACCOUNT, CLIENT_TRANSFER_ID, FROM_SUBACCOUNT, TO_SUBACCOUNT};
use crate::api::params::Params;
use crate::api::render;
use crate::api::state::AppState;
use dexd_venue::Chain;

fn transfer_answer(chain: &Chain, transfer: &SubaccountTransfer) -> Value {
    json!({"transfer": render::subaccount_transfer(&chain.markets().config, transfer)})
}

/// POST /account/transfer
pub async fn transfer(app: Arc<AppState>, params: Params) -> Answer {
    params.refuse_nulls()?;
    let terms = transfer_terms(&app, &params)?;
    let (chain, from, credential): (&Chain, _, _) = (&terms.chain, terms.from, &terms.credential);
    let from_number = params.require(&FROM_SUBACCOUNT)?;
    let to_number = params.require(&TO_SUBACCOUNT)?;
    if from_number == to_number {
        return Err(ApiError::invalid(
            TO_SUBACCOUNT.field.name,
            "must differ from fromSubaccount: a transfer moves funds between two subaccounts",
        ));
    }
    let request = SubaccountTransferRequest {
        owner: from,
        from_number,
        to_number,
        asset: terms.asset,
        amount: Amount::from_units(terms.units),
        client_transfer_id: params.require(&CLIENT_TRANSFER_ID)?,
    };
    let digest_of =
        |signed| signing_domain(chain).digest(&chain.markets().messages.subaccount_transfer(&request, signed));
    let authorization = own_signature(chain, credential, &from, digest_of)?;
    // Sent again: the first result, and nothing moves (the engine refuses it as applied, should
    // two copies race past this read).
    let remembered =
        |chain: &Chain| chain.read_engine(|engine| engine.remembered_subaccount_transfer(&request, now_ms()));
    if let Some(applied) = remembered(chain) {
        return Ok(transfer_answer(chain, &applied));
    }
    spend_write_budget(&app, chain, &from)?;
    let command = Command::TransferBetweenSubaccounts(request.clone());
    match crate::api::written::submit(chain, command, authorization).await {
        Ok(events) => {
            let applied = events
                .iter()
                .find_map(|event| match event {
                    Event::SubaccountTransferred(transfer) => Some(transfer),
                    _ => None,
                })
                .ok_or_else(ApiError::internal)?;
            Ok(transfer_answer(chain, applied))
        }
        Err(WriteError::Rejected(Rejection::TransferAlreadyApplied)) => match remembered(chain) {
            Some(applied) => Ok(transfer_answer(chain, &applied)),
            None => Err(write_error(WriteError::Rejected(Rejection::TransferAlreadyApplied))),
        },
        Err(WriteError::Rejected(Rejection::InsufficientBalance)) => Err(ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "INSUFFICIENT_BALANCE",
            format!("subaccount {from_number} has less than quantity available; nothing moved"),
        )
        .on("quantity")),
        Err(error) => Err(write_error(error)),
    }
}

/// GET /account/transfers
pub async fn transfers(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let owner = params.require(&ACCOUNT)?;
    let account = params.account_read()?;
    let page = history(&chain)
        .await?
        .subaccount_transfers(&account, params.page()?)
        .map_err(store_error)?;
    let transfers: Vec<Value> = page
        .items
        .iter()
        // A subaccount's rows are kept under its address; only its owner's count.
        .filter(|transfer| transfer.request.owner == owner)
        .map(|transfer| render::subaccount_transfer(&chain.markets().config, transfer))
        .collect();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&owner),
        "transfers": transfers,
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /account/subaccounts
pub async fn subaccounts(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let owner = params.require(&ACCOUNT)?;
    let listed: Vec<Value> = chain.read_engine(|engine| {
        std::iter::once((0, owner))
            .chain(engine.subaccounts_of(&owner))
            .map(|(number, address)| {
                let balances: Vec<Value> = (0..chain.markets().config.assets.len())
                    .map(|index| {
                        let asset = AssetIndex(index as u16);
                        render::balance(&chain.markets().config, asset, engine.balance(&address, asset))
                    })
                    .collect();
                json!({
                    "subaccount": number,
                    "address": checksummed(&address),
                    "openOrders": engine.open_order_count(&address),
                    "balances": balances,
                })
            })
            .collect()
    });
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&owner),
        "subaccounts": listed,
    }))
}
