//! GET `/account/liabilityProof`, `/account/liabilityRoots` and `/account/liabilityLeaves`: what
//! the venue owes each account, provable against the roots the vault holds.
//!
//! The roots come from the journal (each a `RecordLiabilityRoot` the committer journaled once
//! the vault held it); the leaves and proofs from the tree at the root's journal position, which
//! any node rebuilds from its journal ([`crate::venue::liabilities`]). Nothing here reads the
//! chain: a client checks a proof against the root it reads from the vault itself.

use std::sync::Arc;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use dexd_core::LiabilityRootRecord;
use dexd_crypto::checksummed;
use dexd_settlement::liabilities::TreeAtPosition;
use dexd_settlement::vault::{chain_address, DexdVaultV2};
use serde_json::{json, Value};

use super::{address_param, chain_of, history, page_request, store_error, Answer};
use crate::api::error::ApiError;
use crate::api::params::Params;
use crate::api::AppState;
use crate::venue::Chain;

/// How many leaves go into one chunk of the leaves' body.
const LEAVES_PER_CHUNK: usize = 4_096;

fn no_root(detail: &str) -> ApiError {
    ApiError::not_found(
        "ROOT_NOT_FOUND",
        format!(
            "{detail}: roots are committed to a version 2 vault every root_interval_ms, and a ledger chain has none"
        ),
    )
}

fn hex32(bytes: &[u8; 32]) -> String {
    format!("0x{}", alloy::hex::encode(bytes))
}

/// The tree of a committed root, checked to be the one the vault holds.
async fn tree_of(chain: &Chain, root: &LiabilityRootRecord) -> Result<Arc<TreeAtPosition>, ApiError> {
    let tree = chain.liability_tree(root.journal_sequence).await.map_err(|error| {
        tracing::warn!(chain_id = chain.config.chain_id, epoch = root.epoch, %error, "a liability tree could not be built");
        ApiError::unavailable("the liability tree cannot be rebuilt right now; retry shortly")
    })?;
    if tree.root() != root.root {
        tracing::error!(
            chain_id = chain.config.chain_id,
            epoch = root.epoch,
            "the tree rebuilt from the journal does not have the committed root"
        );
        return Err(ApiError::internal());
    }
    Ok(tree)
}

/// One leaf's fields, as the contract names them.
fn leaf_fields(chain: &Chain, tree: &TreeAtPosition, index: usize) -> serde_json::Map<String, Value> {
    let leaf = &tree.leaves[index];
    let mut fields = serde_json::Map::new();
    fields.insert("account".into(), json!(checksummed(&leaf.account)));
    fields.insert(
        "symbol".into(),
        json!(chain.config.asset_config(tree.assets[index]).symbol),
    );
    fields.insert("token".into(), json!(checksummed(&leaf.token)));
    fields.insert("balance".into(), json!(leaf.balance.to_string()));
    fields.insert("creditedDeposits".into(), json!(leaf.credited_deposits.to_string()));
    fields.insert("debitedWithdrawals".into(), json!(leaf.debited_withdrawals.to_string()));
    fields
}

/// GET /account/liabilityProof: the account's leaves in the newest committed root, each with its
/// proof and the vault's `exit` call for it.
pub async fn liability_proof(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let account = address_param(&params, "account")?;
    let root = chain
        .read_engine(|engine| engine.custody().liabilities().newest_root().cloned())
        .ok_or_else(|| no_root("no liability root has been committed on this chain yet"))?;
    let tree = tree_of(&chain, &root).await?;
    let leaves: Vec<Value> = tree
        .leaves_of(&account)
        .map(|index| {
            let leaf = tree.leaves[index];
            let proof = tree.tree.proof(index).expect("invariant: every leaf has a proof");
            let exit = DexdVaultV2::exitCall {
                account: chain_address(&leaf.account),
                token: chain_address(&leaf.token),
                balance: alloy::primitives::U256::from(leaf.balance),
                creditedDeposits: alloy::primitives::U256::from(leaf.credited_deposits),
                debitedWithdrawals: alloy::primitives::U256::from(leaf.debited_withdrawals),
                proof: proof.iter().map(|node| alloy::primitives::FixedBytes(*node)).collect(),
            };
            let mut fields = leaf_fields(&chain, &tree, index);
            fields.remove("account");
            fields.insert("proof".into(), json!(proof.iter().map(hex32).collect::<Vec<_>>()));
            fields.insert(
                "exitCalldata".into(),
                json!(format!(
                    "0x{}",
                    alloy::hex::encode(alloy::sol_types::SolCall::abi_encode(&exit))
                )),
            );
            Value::Object(fields)
        })
        .collect();
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "account": checksummed(&account),
        "epoch": root.epoch,
        "root": hex32(&root.root),
        "journalSequence": root.journal_sequence,
        "txHash": hex32(&root.tx_hash),
        "committedAt": root.committed_at_ms,
        "leaves": leaves,
    }))
}

/// One root, as `liabilityRoots` lists it.
fn root_object(chain: &Chain, root: &LiabilityRootRecord) -> Value {
    let totals: Vec<Value> = root
        .totals
        .iter()
        .enumerate()
        .map(|(index, total)| {
            let asset = chain.config.asset_config(dexd_core::AssetIndex(index as u16));
            let token = asset.address.unwrap_or(dexd_core::Address::from_bytes([0; 20]));
            json!({"symbol": asset.symbol, "token": checksummed(&token), "total": total.units().to_string()})
        })
        .collect();
    json!({
        "epoch": root.epoch,
        "root": hex32(&root.root),
        "journalSequence": root.journal_sequence,
        "txHash": hex32(&root.tx_hash),
        "blockNumber": root.block_number,
        "committedAt": root.committed_at_ms,
        "totals": totals,
    })
}

/// GET /account/liabilityRoots: the committed roots, newest first.
pub async fn liability_roots(app: Arc<AppState>, params: Params) -> Answer {
    let chain = chain_of(&app.venue, &params)?;
    let request = page_request(&params)?;
    let page = history(&chain).await?.liability_roots(request).map_err(store_error)?;
    Ok(json!({
        "chainId": chain.config.chain_id.to_string(),
        "roots": page.items.iter().map(|root| root_object(&chain, root)).collect::<Vec<_>>(),
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /account/liabilityLeaves: every leaf of a committed root, one JSON object per line, in
/// the tree's entry order (by account, then asset).
pub async fn liability_leaves(app: Arc<AppState>, params: Params) -> Result<Response, ApiError> {
    let chain = chain_of(&app.venue, &params)?;
    let epoch = params.integer("epoch")?.ok_or_else(|| ApiError::missing("epoch"))?;
    let root = history(&chain)
        .await?
        .liability_root(epoch)
        .map_err(store_error)?
        .ok_or_else(|| no_root(&format!("no liability root of epoch {epoch}")))?;
    let tree = tree_of(&chain, &root).await?;
    let count = tree.leaves.len();
    let chunks = (0..count.div_ceil(LEAVES_PER_CHUNK)).map(move |chunk| {
        let mut lines = Vec::new();
        for index in chunk * LEAVES_PER_CHUNK..((chunk + 1) * LEAVES_PER_CHUNK).min(count) {
            serde_json::to_writer(&mut lines, &Value::Object(leaf_fields(&chain, &tree, index)))
                .expect("invariant: a leaf serializes");
            lines.push(b'\n');
        }
        Ok::<_, std::convert::Infallible>(lines)
    });
    Ok((
        [(CONTENT_TYPE, "application/x-ndjson")],
        Body::from_stream(futures_util::stream::iter(chunks)),
    )
        .into_response())
}
