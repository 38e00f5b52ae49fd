//! `dexd exit`: an account's way out of a frozen vault (version 2) without the venue. It takes
//! the account's leaves of the vault's exit root from the chain alone by default (the data every
//! root carries, in blobs read from a beacon node or in calldata, rebuilt into the exit root's
//! tree: `dexd_custody::liabilities::chain_data`), or from a saved proof (`GET
//! /account/liabilityProof`'s answer), from an auditor's directory (`dexd audit --dir`), or asks
//! a venue still there for them; checks each leaf
//! against the root the vault itself uses; sends the vault's `exit` for each, and the all-zero
//! exit of every token the vault says the account may leave without a leaf (a deposit no root
//! covers, or no exit root at all). Any funded key sends them (the vault pays only the account);
//! with `--freeze`, it first freezes the vault if no root has come for its `maxRootAge`.
//!
//! It trusts nothing it can check: each call is built from the leaf's fields, not taken from
//! `exitCalldata`, and a leaf whose proof does not lead to the vault's exit root is not sent. It
//! exits non-zero when no exit pays anything. It needs no running venue.

use std::path::PathBuf;
use std::process::ExitCode;

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, FixedBytes, TxKind, U256};
use alloy::sol_types::SolCall;
use clap::Args;
use dexd_core::Address;
use dexd_crypto::liability_tree::{verify, LiabilityLeaf, LiabilityTree};
use dexd_crypto::{checksummed, parse_address};
use dexd_custody::deploy;
use dexd_custody::liabilities::chain_data::ChainData;
use dexd_custody::node::{Node, NodeError};
use dexd_custody::vault::{chain_address, venue_address, DexdVaultV2};
use serde_json::{json, Value};

use crate::chain_commands::{address_argument, connect, runtime, KeyArguments};

/// `dexd exit`
#[derive(Args)]
pub struct Exit {
    /// The account's proof, as `GET /account/liabilityProof` answered it (a JSON file).
    #[arg(long, conflicts_with_all = ["venue", "audit_dir"])]
    proof: Option<PathBuf>,
    /// An auditor's directory (`dexd audit --dir`): the leaves of the exit root are read from
    /// the tree the auditor kept of it, when the venue is gone.
    #[arg(long, conflicts_with = "venue")]
    audit_dir: Option<PathBuf>,
    /// A venue to ask for the account's proof of the exit root (`GET /account/liabilityProof`),
    /// when no proof was saved.
    #[arg(long)]
    venue: Option<String>,
    /// The chain's JSON-RPC URL.
    #[arg(long)]
    rpc_url: String,
    /// A beacon node's URL, for the roots' data carried in blobs when the leaves come from the
    /// chain (the default: no proof, venue or audit directory given). Default: the RPC URL
    /// (a devnet's anvil serves both).
    #[arg(long)]
    beacon_url: Option<String>,
    /// The vault.
    #[arg(long)]
    vault: String,
    /// The account to exit (default: the proof's account, or else the key's own address; anyone
    /// may send an exit, and the vault pays only the account).
    #[arg(long)]
    account: Option<String>,
    /// Freeze the vault first if it is not frozen and may be. The transactions are sent and
    /// paid for by the key given.
    #[arg(long)]
    freeze: bool,
    #[command(flatten)]
    key: KeyArguments,
}

/// One leaf the exit takes, with its proof.
struct ExitLeaf {
    symbol: String,
    leaf: LiabilityLeaf,
    proof: Vec<[u8; 32]>,
}

fn units(leaf: &Value, name: &str) -> Result<u128, String> {
    leaf[name]
        .as_str()
        .and_then(|text| text.parse().ok())
        .ok_or_else(|| format!("the proof's leaf has no {name} in smallest units"))
}

/// The leaves of a proof body, for `account`.
fn read_leaves(proof: &Value, account: Address) -> Result<Vec<ExitLeaf>, String> {
    let named = proof["account"]
        .as_str()
        .and_then(|text| parse_address(text).ok())
        .ok_or("the proof names no account")?;
    if named != account {
        return Err(format!(
            "the proof is {}'s, not {}'s",
            checksummed(&named),
            checksummed(&account)
        ));
    }
    let leaves = proof["leaves"].as_array().ok_or("the proof has no leaves")?;
    leaves
        .iter()
        .map(|leaf| {
            let token = leaf["token"]
                .as_str()
                .and_then(|text| parse_address(text).ok())
                .ok_or("a leaf has no token")?;
            let path = leaf["proof"]
                .as_array()
                .ok_or("a leaf has no proof")?
                .iter()
                .map(|node| {
                    node.as_str()
                        .and_then(|text| alloy::hex::decode(text.trim_start_matches("0x")).ok())
                        .and_then(|bytes| <[u8; 32]>::try_from(bytes).ok())
                        .ok_or_else(|| "a proof node is not 32 bytes of hex".to_string())
                })
                .collect::<Result<Vec<_>, String>>()?;
            Ok(ExitLeaf {
                symbol: leaf["symbol"].as_str().unwrap_or("?").to_string(),
                leaf: LiabilityLeaf {
                    account,
                    token,
                    balance: units(leaf, "balance")?,
                    credited_deposits: units(leaf, "creditedDeposits")?,
                    debited_withdrawals: units(leaf, "debitedWithdrawals")?,
                },
                proof: path,
            })
        })
        .collect()
}

/// The account a saved proof is of.
fn proof_account(path: &std::path::Path) -> Result<Address, String> {
    let text = std::fs::read_to_string(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
    let proof: Value = serde_json::from_str(&text).map_err(|error| format!("the proof is not JSON: {error}"))?;
    proof["account"]
        .as_str()
        .and_then(|text| parse_address(text).ok())
        .ok_or_else(|| "the proof names no account".to_string())
}

async fn view<Call: SolCall>(node: &Node, call: Call) -> Result<Call::Return, String> {
    node.view(node.vault(), call, BlockId::latest())
        .await
        .map_err(|error| format!("cannot read the vault: {error}"))
}

/// The account's proof of `epoch`, asked of a venue.
async fn proof_from_venue(venue: &str, chain_id: u64, account: Address, epoch: u64) -> Result<Value, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let url = format!(
        "{}/account/liabilityProof?chainId={chain_id}&account={}&epoch={epoch}",
        venue.trim_end_matches('/'),
        checksummed(&account)
    );
    let response = alloy_reqwest::Client::new()
        .get(&url)
        .send()
        .await
        .map_err(|error| format!("cannot ask the venue for the proof: {error}"))?;
    let status = response.status();
    let text = response
        .text()
        .await
        .map_err(|error| format!("cannot read the venue's answer: {error}"))?;
    if !status.is_success() {
        return Err(format!(
            "the venue has no proof of epoch {epoch} for the account ({status}): {text}"
        ));
    }
    serde_json::from_str(&text).map_err(|error| format!("the venue's proof is not JSON: {error}"))
}

/// The account's leaves of the root of `epoch`, from the tree an auditor kept of it.
async fn leaves_from_audit_dir(
    directory: &std::path::Path,
    node: &Node,
    account: Address,
    epoch: u64,
) -> Result<Vec<ExitLeaf>, String> {
    let chain_id = node.chain_id().await.map_err(|error| error.to_string())?;
    let stored = view(
        node,
        DexdVaultV2::liabilityRootCall {
            epoch: U256::from(epoch),
        },
    )
    .await?;
    let path = dexd::audit::auditor::trees_directory(directory, chain_id).join(
        dexd_custody::liabilities::tree_file::file_name(stored.journalSequence, &stored.root.0),
    );
    let file = dexd_custody::liabilities::tree_file::TreeFile::open(&path).map_err(|error| {
        format!(
            "the auditor's directory has no tree of the exit root (epoch {epoch}, {}): {error}",
            path.display()
        )
    })?;
    let proven = file
        .leaves_of(&account)
        .map_err(|error| format!("cannot read the tree {}: {error}", path.display()))?;
    Ok(proven
        .into_iter()
        .map(|proven| ExitLeaf {
            symbol: checksummed(&proven.leaf.token),
            leaf: proven.leaf,
            proof: proven.proof,
        })
        .collect())
}

/// The account's leaves of the root of `epoch`, from the tree rebuilt out of the roots' data on
/// the chain (checked against the root the vault holds before any leaf is used).
async fn leaves_from_chain(
    node: &Node,
    beacon_url: &str,
    account: Address,
    epoch: u64,
) -> Result<Vec<ExitLeaf>, String> {
    let _ = rustls::crypto::ring::default_provider().install_default();
    let threads = std::thread::available_parallelism().map_or(1, |threads| threads.get());
    let rebuilt = ChainData::new(node.clone(), Some(beacon_url), EXIT_LOG_RANGE_BLOCKS)
        .rebuild(epoch, threads)
        .await
        .map_err(|error| {
            format!("the exit root (epoch {epoch}) could not be rebuilt from the chain's data: {error}")
        })?;
    eprintln!(
        "dexd exit: the exit root (epoch {epoch}) rebuilt from the data of roots {:?}: {} leaves",
        rebuilt.epochs,
        rebuilt.leaves.len()
    );
    let tree = LiabilityTree::build(&rebuilt.leaves, threads);
    rebuilt
        .leaves
        .iter()
        .enumerate()
        .filter(|(_, leaf)| leaf.account == account)
        .map(|(index, leaf)| {
            Ok(ExitLeaf {
                symbol: checksummed(&leaf.token),
                leaf: *leaf,
                proof: tree
                    .proof(index)
                    .ok_or_else(|| format!("no proof of leaf {index} of the rebuilt tree"))?,
            })
        })
        .collect()
}

/// The most blocks one `eth_getLogs` of `dexd exit` asks for (it reads a root's event in the
/// blocks of one second).
const EXIT_LOG_RANGE_BLOCKS: u64 = 2_000;

/// What to exit with: the leaves (checked against the exit root) and the all-zero exits.
struct Plan {
    leaves: Vec<ExitLeaf>,
    /// Tokens the vault lets the account leave without a leaf, with what it deposited of each
    /// and has not been paid.
    without_leaf: Vec<(ChainAddress, u128)>,
    /// Why the leaves could not be had from the chain, when they could not.
    leaves_unavailable: Option<String>,
}

async fn plan(arguments: &Exit, node: &Node, account: Address, exit_epoch: Option<u64>) -> Result<Plan, String> {
    let mut leaves_unavailable = None;
    let leaves = match (&arguments.proof, &arguments.venue, exit_epoch) {
        (_, _, None) => Vec::new(),
        (Some(path), _, Some(_)) => {
            let text =
                std::fs::read_to_string(path).map_err(|error| format!("cannot read {}: {error}", path.display()))?;
            let proof: Value =
                serde_json::from_str(&text).map_err(|error| format!("the proof is not JSON: {error}"))?;
            read_leaves(&proof, account)?
        }
        (None, Some(venue), Some(epoch)) => {
            let chain_id = node.chain_id().await.map_err(|error| error.to_string())?;
            read_leaves(&proof_from_venue(venue, chain_id, account, epoch).await?, account)?
        }
        (None, None, Some(epoch)) => match &arguments.audit_dir {
            Some(directory) => leaves_from_audit_dir(directory, node, account, epoch).await?,
            None => {
                // Without the leaves, what the vault lets the account take back without one is
                // still sent; the failure is reported and the exit counts as failed.
                let beacon_url = arguments.beacon_url.as_deref().unwrap_or(&arguments.rpc_url);
                match leaves_from_chain(node, beacon_url, account, epoch).await {
                    Ok(leaves) => leaves,
                    Err(error) => {
                        leaves_unavailable = Some(error);
                        Vec::new()
                    }
                }
            }
        },
    };
    let mut without_leaf = Vec::new();
    for token in view(node, DexdVaultV2::depositedTokensCall {}).await? {
        let holder = chain_address(&account);
        if !view(node, DexdVaultV2::mayExitWithoutLeafCall { account: holder, token }).await? {
            continue;
        }
        let deposited = view(node, DexdVaultV2::depositedCall { account: holder, token }).await?;
        let paid = view(node, DexdVaultV2::paidCall { account: holder, token }).await?;
        if deposited > paid {
            without_leaf.push((token, deposited.saturating_sub(paid).saturating_to()));
        }
    }
    Ok(Plan {
        leaves,
        without_leaf,
        leaves_unavailable,
    })
}

const NOT_FROZEN: &str = "the vault is not frozen: exits open once it is (add --freeze to freeze it, which \
                          the vault allows only when no root has come for its maxRootAge)";

/// The reason a freeze failed, as the operator should read it.
fn freeze_failure(error: NodeError) -> String {
    match error {
        NodeError::Reverted { .. } => {
            "the vault refuses to freeze: a root came within its maxRootAge (the operator is there)".to_string()
        }
        other => format!("the freeze failed: {other}"),
    }
}

/// The frozen vault's exit root, `(epoch, root)`, if it has one.
async fn exit_root(node: &Node) -> Result<Option<(u64, [u8; 32])>, String> {
    if !view(node, DexdVaultV2::hasExitRootCall {}).await? {
        return Ok(None);
    }
    let epoch = view(node, DexdVaultV2::exitEpochCall {}).await?;
    let root = view(node, DexdVaultV2::liabilityRootCall { epoch }).await?.root.0;
    Ok(Some((epoch.saturating_to::<u64>(), root)))
}

/// Whether the vault still owes `account` some of its deposits of `token` (deposited more than
/// paid), read now.
async fn owed_without_leaf(node: &Node, account: &Address, token: &ChainAddress) -> Result<bool, String> {
    let holder = chain_address(account);
    let paid = view(
        node,
        DexdVaultV2::paidCall {
            account: holder,
            token: *token,
        },
    )
    .await?;
    let deposited = view(
        node,
        DexdVaultV2::depositedCall {
            account: holder,
            token: *token,
        },
    )
    .await?;
    Ok(deposited > paid)
}

async fn exit(arguments: Exit) -> Result<Value, String> {
    let vault = address_argument(&arguments.vault, "vault")?;
    let signer = arguments.key.signer()?;
    let account = match (&arguments.account, &arguments.proof) {
        (Some(text), _) => venue_address(&address_argument(text, "account")?),
        (None, Some(path)) => proof_account(path)?,
        (None, None) => venue_address(&signer.address()),
    };
    let node = connect(&arguments.rpc_url, vault).await?;
    let send = |input: Vec<u8>| {
        let (node, signer) = (&node, &signer);
        async move { deploy::send_and_wait(node, signer, TxKind::Call(vault), input, U256::ZERO).await }
    };
    if !view(&node, DexdVaultV2::frozenCall {}).await? {
        if !arguments.freeze {
            return Err(NOT_FROZEN.into());
        }
        send(DexdVaultV2::freezeCall {}.abi_encode())
            .await
            .map_err(freeze_failure)?;
    }
    let exit_root = exit_root(&node).await?;
    let plan = plan(&arguments, &node, account, exit_root.map(|(epoch, _)| epoch)).await?;
    let mut results = Vec::new();
    if let Some(reason) = &plan.leaves_unavailable {
        results.push(json!({"kind": "leaves", "sent": false, "reason": reason}));
    }
    for exit in &plan.leaves {
        if !exit_root.is_some_and(|(_, root)| verify(&root, &exit.leaf, &exit.proof)) {
            results.push(json!({"symbol": exit.symbol, "sent": false,
                "reason": "the leaf is not in the vault's exit root (another epoch's, or a vetoed one)"}));
            continue;
        }
        let holder = chain_address(&exit.leaf.account);
        let token = chain_address(&exit.leaf.token);
        let deposited = view(&node, DexdVaultV2::depositedCall { account: holder, token }).await?;
        let paid = view(&node, DexdVaultV2::paidCall { account: holder, token }).await?;
        let owed = U256::from(exit.leaf.balance) + U256::from(exit.leaf.debited_withdrawals) + deposited;
        let settled = U256::from(exit.leaf.credited_deposits) + paid;
        if owed <= settled {
            results.push(
                json!({"symbol": exit.symbol, "kind": "leaf", "sent": false, "skipped": true,
                "reason": "nothing is owed by this leaf (all of it was paid)"}),
            );
            continue;
        }
        let call = DexdVaultV2::exitCall {
            account: chain_address(&exit.leaf.account),
            token: chain_address(&exit.leaf.token),
            balance: U256::from(exit.leaf.balance),
            creditedDeposits: U256::from(exit.leaf.credited_deposits),
            debitedWithdrawals: U256::from(exit.leaf.debited_withdrawals),
            proof: exit.proof.iter().map(|node| FixedBytes(*node)).collect(),
        };
        results.push(sent(&exit.symbol, "leaf", send(call.abi_encode()).await));
    }
    for (token, owed) in &plan.without_leaf {
        // A leaf sent above may already have paid this deposit back.
        if owed_without_leaf(&node, &account, token).await? {
            let call = DexdVaultV2::exitCall {
                account: chain_address(&account),
                token: *token,
                balance: U256::ZERO,
                creditedDeposits: U256::ZERO,
                debitedWithdrawals: U256::ZERO,
                proof: Vec::new(),
            };
            let name = checksummed(&venue_address(token));
            let mut result = sent(&name, "all-zero", send(call.abi_encode()).await);
            result["owed"] = json!(owed.to_string());
            results.push(result);
        }
    }
    Ok(json!({
        "account": checksummed(&account),
        "vault": checksummed(&venue_address(&vault)),
        "exitEpoch": exit_root.map(|(epoch, _)| epoch),
        "exits": results,
    }))
}

/// One exit's line of the output.
fn sent(name: &str, kind: &str, outcome: Result<dexd_custody::node::Receipt, NodeError>) -> Value {
    match outcome {
        Ok(receipt) => {
            json!({"symbol": name, "kind": kind, "sent": true, "block": receipt.block_number, "gasUsed": receipt.gas_used})
        }
        Err(error) => json!({"symbol": name, "kind": kind, "sent": false, "reason": error.to_string()}),
    }
}

/// Runs `dexd exit`; prints what was sent as JSON. Non-zero unless at least one exit was sent
/// and none failed (a leaf that owes nothing is skipped, not failed).
pub fn run_exit(arguments: Exit) -> ExitCode {
    match runtime().block_on(exit(arguments)) {
        Ok(output) => {
            println!("{output}");
            let exits = output["exits"].as_array().cloned().unwrap_or_default();
            let sent = exits.iter().filter(|exit| exit["sent"] == true).count();
            let failed = exits.iter().any(|exit| exit["sent"] != true && exit["skipped"] != true);
            if sent > 0 && !failed {
                ExitCode::SUCCESS
            } else {
                if sent == 0 {
                    eprintln!(
                        "dexd exit: nothing paid: the account has no leaf owing anything, and nothing to take back \
                         without one"
                    );
                }
                ExitCode::FAILURE
            }
        }
        Err(error) => {
            eprintln!("dexd exit: {error}");
            ExitCode::FAILURE
        }
    }
}
