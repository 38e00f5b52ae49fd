//! GET `/account/liabilityProof`, `/account/liabilityRoots` and `/account/liabilityLeaves`: what
//! the venue owes each account, provable against the roots the vault holds.
//!
//! The roots come from the journal (each a `RecordLiabilityRoot` the committer journaled once
//! the vault held it, with where it stands); the leaves and proofs from the file of the tree at
//! the root's journal position (`dexd_venue::liabilities`), read a few records at a time:
//! nothing here rebuilds a state, holds a lock the payer waits for, or reads the chain. A root
//! the venue did not make, or a vetoed one, is never served; a root whose file is not kept is
//! `404 ROOT_NOT_FOUND` at once. A client checks a proof against the root it reads from the
//! vault itself.

use std::sync::Arc;

use axum::body::Body;
use axum::http::header::CONTENT_TYPE;
use axum::response::{IntoResponse, Response};
use dexd_core::{RecordedRoot, RootOrigin, RootStanding};
use dexd_crypto::checksummed;
use dexd_crypto::liability_tree::LiabilityLeaf;
use dexd_custody::liabilities::tree_file::TreeFile;
use dexd_custody::vault::{chain_address, DexdVaultV2};
use serde_json::{json, Value};

use super::{history, store_error, Answer};
use crate::api::error::ApiError;
use crate::api::operations::{ACCOUNT, LEAVES_EPOCH, PROOF_EPOCH};
use crate::api::params::Params;
use crate::api::state::AppState;
use dexd_venue::liabilities::TreeFileLookup;
use dexd_venue::Chain;

/// How many leaves go into one chunk of the leaves' body.
const LEAVES_PER_CHUNK: u64 = 4_096;

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

/// The root of `epoch`, or the newest of the venue's not vetoed when no epoch is asked for.
async fn root_asked(chain: &Chain, params: &Params) -> Result<RecordedRoot, ApiError> {
    match params.read(&PROOF_EPOCH)? {
        Some(epoch) => {
            let kept = chain.read_engine(|engine| engine.custody().liabilities().root(epoch).cloned());
            let root = match kept {
                Some(root) => root,
                None => history(chain)
                    .await?
                    .liability_root(epoch)
                    .map_err(store_error)?
                    .ok_or_else(|| no_root(&format!("no liability root of epoch {epoch}")))?,
            };
            match (root.record.origin, root.standing) {
                (RootOrigin::Foreign, _) => Err(no_root(&format!(
                    "the root of epoch {epoch} was not made by the venue (its tree differs): it has no leaves here"
                ))),
                (_, RootStanding::Vetoed) => Err(no_root(&format!(
                    "the root of epoch {epoch} was vetoed: it can never be an exit root"
                ))),
                _ => Ok(root),
            }
        }
        None => chain
            .read_engine(|engine| {
                let liabilities = engine.custody().liabilities();
                let newest = liabilities.newest_venue_root()?.epoch;
                liabilities.root(newest).cloned()
            })
            .ok_or_else(|| no_root("no liability root has been committed on this chain yet")),
    }
}

/// The file of a root's tree, if it is kept.
async fn tree_file(chain: &Chain, root: &RecordedRoot) -> Result<Arc<TreeFile>, ApiError> {
    let record = &root.record;
    match chain.liability_tree_file(record.journal_sequence, record.root).await {
        TreeFileLookup::Open(file) => Ok(Arc::new(file)),
        TreeFileLookup::Pending => Err(ApiError::unavailable(format!(
            "the leaves of epoch {} are being rebuilt from the journal; retry shortly",
            record.epoch
        ))),
        TreeFileLookup::NotKept => Err(no_root(&format!(
            "the leaves of epoch {} are not kept (the venue keeps those of every root that can still become the exit \
             root, and of the newest keep_roots; an auditor's copy has the others)",
            record.epoch
        ))),
    }
}

/// One leaf's fields, as the contract names them (the symbol is null for a token the chain does
/// not list).
fn leaf_fields(chain: &Chain, leaf: &LiabilityLeaf) -> serde_json::Map<String, Value> {
    let symbol = chain
        .markets()
        .config
        .assets
        .iter()
        .find(|asset| asset.address.unwrap_or(dexd_core::Address::from_bytes([0; 20])) == leaf.token)
        .map(|asset| asset.symbol.clone());
    let mut fields = serde_json::Map::new();
    fields.insert("account".into(), json!(checksummed(&leaf.account)));
    fields.insert("symbol".into(), json!(symbol));
    fields.insert("token".into(), json!(checksummed(&leaf.token)));
    fields.insert("balance".into(), json!(leaf.balance.to_string()));
    fields.insert("creditedDeposits".into(), json!(leaf.credited_deposits.to_string()));
    fields.insert("debitedWithdrawals".into(), json!(leaf.debited_withdrawals.to_string()));
    fields
}

/// GET /account/liabilityProof: the account's leaves in a committed root of the venue's (the
/// newest not vetoed, or `epoch`), each with its proof and the vault's `exit` call for it.
pub async fn liability_proof(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let account = params.require(&ACCOUNT)?;
    let root = root_asked(&chain, &params).await?;
    let file = tree_file(&chain, &root).await?;
    let proven = tokio::task::spawn_blocking(move || file.leaves_of(&account))
        .await
        .map_err(|_| ApiError::internal())?
        .map_err(|error| {
            tracing::warn!(chain_id = chain.chain_id, %error, "a liability tree file could not be read");
            ApiError::unavailable("the liability tree's file cannot be read right now; retry shortly")
        })?;
    let leaves: Vec<Value> = proven
        .iter()
        .map(|proven| {
            let leaf = proven.leaf;
            let exit = DexdVaultV2::exitCall {
                account: chain_address(&leaf.account),
                token: chain_address(&leaf.token),
                balance: alloy::primitives::U256::from(leaf.balance),
                creditedDeposits: alloy::primitives::U256::from(leaf.credited_deposits),
                debitedWithdrawals: alloy::primitives::U256::from(leaf.debited_withdrawals),
                proof: proven
                    .proof
                    .iter()
                    .map(|node| alloy::primitives::FixedBytes(*node))
                    .collect(),
            };
            let mut fields = leaf_fields(&chain, &leaf);
            fields.remove("account");
            fields.insert(
                "proof".into(),
                json!(proven.proof.iter().map(hex32).collect::<Vec<_>>()),
            );
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
    let record = &root.record;
    let mut proof = serde_json::Map::new();
    proof.insert("chainId".into(), json!(chain.chain_id.to_string()));
    proof.insert("account".into(), json!(checksummed(&account)));
    proof.extend(root_identity(record));
    proof.insert("standing".into(), json!(root.standing.wire_name()));
    proof.insert("leaves".into(), json!(leaves));
    Ok(Value::Object(proof))
}

/// One root, as `liabilityRoots` lists it.
pub(super) fn root_object(chain: &Chain, root: &RecordedRoot) -> Value {
    let markets = chain.markets();
    let record = &root.record;
    let totals: Vec<Value> = record
        .totals
        .iter()
        .enumerate()
        .map(|(index, total)| {
            let asset = markets.config.asset_config(dexd_core::AssetIndex(index as u16));
            let token = asset.address.unwrap_or(dexd_core::Address::from_bytes([0; 20]));
            json!({"symbol": asset.symbol, "token": checksummed(&token), "total": total.units().to_string()})
        })
        .collect();
    let mut object = root_identity(record);
    object.insert("blockNumber".into(), json!(record.block_number));
    object.insert("finalAfter".into(), json!(record.final_after_ms));
    object.insert("origin".into(), json!(record.origin.wire_name()));
    object.insert("standing".into(), json!(root.standing.wire_name()));
    object.insert("totals".into(), json!(totals));
    Value::Object(object)
}

/// What names a root in both the proof and the list: its epoch, root, position, deposits covered,
/// transaction and time.
fn root_identity(record: &dexd_core::LiabilityRootRecord) -> serde_json::Map<String, Value> {
    let mut identity = serde_json::Map::new();
    identity.insert("epoch".into(), json!(record.epoch));
    identity.insert("root".into(), json!(hex32(&record.root)));
    identity.insert("journalSequence".into(), json!(record.journal_sequence));
    identity.insert("depositCount".into(), json!(record.deposit_count));
    identity.insert("txHash".into(), json!(hex32(&record.tx_hash)));
    identity.insert("committedAt".into(), json!(record.committed_at_ms));
    identity
}

/// GET /account/liabilityRoots: the committed roots, newest first.
pub async fn liability_roots(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let request = params.page()?;
    let page = history(&chain).await?.liability_roots(request).map_err(store_error)?;
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "roots": page.items.iter().map(|root| root_object(&chain, root)).collect::<Vec<_>>(),
        "nextCursor": page.next_cursor.map(|cursor| cursor.to_string()),
    }))
}

/// GET /account/liabilityLeaves: every leaf of a committed root, one JSON object per line, by
/// account, read from the tree's file a chunk at a time.
pub async fn liability_leaves(app: Arc<AppState>, params: Params) -> Result<Response, ApiError> {
    let chain = params.chain(&app.venue)?;
    let epoch = params.require(&LEAVES_EPOCH)?;
    let root = history(&chain)
        .await?
        .liability_root(epoch)
        .map_err(store_error)?
        .ok_or_else(|| no_root(&format!("no liability root of epoch {epoch}")))?;
    if root.record.origin == RootOrigin::Foreign {
        return Err(no_root(&format!(
            "the root of epoch {epoch} was not made by the venue (its tree differs): it has no leaves here"
        )));
    }
    let file = tree_file(&chain, &root).await?;
    // Each chunk is read off the async runtime, and only when the client takes the one before.
    let chunks = futures_util::stream::unfold(0u64, move |chunk| {
        let (file, chain) = (Arc::clone(&file), Arc::clone(&chain));
        async move {
            if chunk * LEAVES_PER_CHUNK >= file.leaf_count {
                return None;
            }
            let read = tokio::task::spawn_blocking(move || {
                let leaves = file.leaves(chunk * LEAVES_PER_CHUNK, LEAVES_PER_CHUNK)?;
                let mut lines = Vec::new();
                for leaf in &leaves {
                    serde_json::to_writer(&mut lines, &Value::Object(leaf_fields(&chain, leaf)))
                        .expect("invariant: a leaf serializes");
                    lines.push(b'\n');
                }
                Ok::<_, std::io::Error>(lines)
            })
            .await
            .unwrap_or_else(|_| Err(std::io::Error::other("the leaves' reader failed")));
            Some((read, chunk + 1))
        }
    });
    Ok(([(CONTENT_TYPE, "application/x-ndjson")], Body::from_stream(chunks)).into_response())
}

/// GET /account/custody: the chain's custody as its payer and committer see it: the vault's root
/// terms, the newest roots of the venue's, what withdrawals are payable through, a foreign root
/// that stops them, the freeze, and the node's state.
pub async fn custody(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let custody = super::account::custody_object(&app, &chain);
    let vault = app.custody.chain(chain.chain_id);
    let terms = vault.and_then(|vault| vault.root_terms());
    let (roots, frozen, exit_epoch, stopped) = chain.read_engine(|engine| {
        let liabilities = engine.custody().liabilities();
        let foreign = liabilities.unresolved_foreign_root().map(|record| {
            let standing = liabilities
                .root(record.epoch)
                .map_or(RootStanding::Challengeable, |root| root.standing);
            json!({
                "epoch": record.epoch,
                "root": hex32(&record.root),
                "journalSequence": record.journal_sequence,
                "txHash": hex32(&record.tx_hash),
                "standing": standing.wire_name(),
            })
        });
        let newest_final = liabilities
            .roots()
            .rev()
            .find(|root| root.record.origin == RootOrigin::Venue && root.standing == RootStanding::Final)
            .map(|root| root.record.epoch);
        let roots = terms.map(|terms| {
            json!({
                "challengePeriodS": terms.challenge_period_s,
                "maxRootAgeS": terms.max_root_age_s,
                "rootIntervalMs": vault.map_or(0, |vault| vault.config.root_interval_ms),
                "withdrawalWaitMs": vault.map_or(0, |vault| vault.withdrawal_wait_ms()),
                "newestVenueRoot": liabilities.newest_venue_root().map(|root| root.epoch),
                "newestFinalRoot": newest_final,
                "payableThrough": liabilities.payable_through(),
                "foreignRoot": foreign,
            })
        });
        let freeze = liabilities.freeze();
        let stopped = if freeze.is_some() {
            Some("the vault is frozen: accounts leave through its exit".to_string())
        } else {
            liabilities.unresolved_foreign_root().map(|root| {
                format!(
                    "the vault holds root {} that the venue did not make: no withdrawal is paid until it is vetoed \
                     (by the guardian, or the owner with dexd vault veto) or a later root of the venue's is final",
                    root.epoch
                )
            })
        };
        (
            roots,
            freeze.is_some(),
            freeze.and_then(|freeze| freeze.exit_epoch),
            stopped,
        )
    });
    let status = vault.map(|vault| vault.status()).unwrap_or_default();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "custody": custody,
        "roots": roots,
        "frozen": frozen,
        "exitEpoch": exit_epoch,
        "withdrawalsStopped": stopped,
        "status": {
            "headBlock": status.head_block,
            "scannedBlock": status.scanned_block,
            "nodeError": status.node_error,
            "halted": status.halted,
            "payerError": status.payer_error,
        },
    }))
}
