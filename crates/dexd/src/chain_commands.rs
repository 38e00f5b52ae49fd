//! The chain subcommands of the `dexd` binary: `dexd vault deploy|list-token|set-operator|veto|
//! pause|unpause|status` for an operator on any chain, and `dexd devnet-setup` for a local
//! devnet. Keys are
//! read from files or environment variables, never from the command line (which other users of
//! the machine can read); they are used to sign and never printed.

use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

use alloy::primitives::{Address as ChainAddress, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use clap::{Args, Subcommand};
use dexd_crypto::{checksummed, parse_address};
use dexd_custody::config::OperatorKeySource;
use dexd_custody::node::Node;
use dexd_custody::operator_key::read_operator_key;
use dexd_custody::vault::{chain_address, venue_address, DexdVault, DexdVaultV2};
use dexd_custody::{deploy, devnet};

/// Where a key comes from on the command line.
#[derive(Args, Clone)]
pub struct KeyArguments {
    /// A file holding the signing key, 0x + 64 hex digits.
    #[arg(long, conflicts_with = "key_env")]
    key_file: Option<PathBuf>,
    /// An environment variable holding the signing key.
    #[arg(long)]
    key_env: Option<String>,
}

impl KeyArguments {
    pub(crate) fn signer(&self) -> Result<PrivateKeySigner, String> {
        let source = match (&self.key_file, &self.key_env) {
            (Some(file), None) => OperatorKeySource::File(file.clone()),
            (None, Some(variable)) => OperatorKeySource::Environment(variable.clone()),
            _ => return Err("give the signing key with --key-file or --key-env".into()),
        };
        read_operator_key(&source).map_err(|error| error.to_string())
    }
}

/// `dexd vault ...`
#[derive(Subcommand)]
pub enum VaultCommand {
    /// Deploy a vault (version 2: liability roots and the exit); prints its address and block as
    /// JSON. The signer becomes its owner unless --owner is given.
    Deploy {
        /// The chain's JSON-RPC URL.
        #[arg(long)]
        rpc_url: String,
        /// The operator: the only address that may pay withdrawals and commit roots.
        #[arg(long)]
        operator: String,
        /// The owner (replaces the operator, pauses deposits); default: the signer.
        #[arg(long)]
        owner: Option<String>,
        /// Seconds without a root before anyone may freeze the vault (default: three days).
        #[arg(long, default_value_t = deploy::RootTerms::PRODUCTION.max_root_age_s)]
        max_root_age_s: u64,
        /// Seconds a root may be vetoed after it is committed; shorter than --max-root-age-s
        /// (default: an hour). Withdrawals are paid once a root covering them is past it.
        #[arg(long, default_value_t = deploy::RootTerms::PRODUCTION.challenge_period_s)]
        challenge_period_s: u64,
        /// Seconds the operator has to serve a withdrawal an account requested on chain
        /// (`requestWithdrawal`) before anyone may freeze the vault; longer than
        /// --challenge-period-s plus the venue's root interval (default: a day).
        #[arg(long, default_value_t = deploy::RootTerms::PRODUCTION.request_period_s)]
        request_period_s: u64,
        /// Who besides the owner may veto a root during its challenge period (an auditor acting
        /// as guardian); repeat it for several (at most 8), any one of which may veto; default:
        /// nobody else.
        #[arg(long = "guardian")]
        guardians: Vec<String>,
        /// A token the vault takes deposits of, `native` for the chain's native asset; repeat
        /// it for each (signed by the owner, so only with the owner's key).
        #[arg(long = "list-token")]
        list_tokens: Vec<String>,
        #[command(flatten)]
        key: KeyArguments,
    },
    /// List a token the vault takes deposits of, `native` for the chain's native asset (the
    /// owner's key). A listing is for good.
    ListToken {
        #[command(flatten)]
        target: VaultTarget,
        /// The token's address, or `native`.
        #[arg(long)]
        token: String,
        #[command(flatten)]
        key: KeyArguments,
    },
    /// Veto a liability root within its challenge period (the owner's or the guardian's key):
    /// how an operator undoes a root a stolen operator key planted.
    Veto {
        #[command(flatten)]
        target: VaultTarget,
        /// The root's epoch.
        #[arg(long)]
        epoch: u64,
        #[command(flatten)]
        key: KeyArguments,
    },
    /// Replace the operator (the owner's key).
    SetOperator {
        #[command(flatten)]
        target: VaultTarget,
        /// The new operator.
        #[arg(long)]
        operator: String,
        #[command(flatten)]
        key: KeyArguments,
    },
    /// Stop deposits (the owner's key); withdrawals go on.
    Pause {
        #[command(flatten)]
        target: VaultTarget,
        #[command(flatten)]
        key: KeyArguments,
    },
    /// Take deposits again (the owner's key).
    Unpause {
        #[command(flatten)]
        target: VaultTarget,
        #[command(flatten)]
        key: KeyArguments,
    },
    /// Print the vault's owner, operator, pause state, deposit count and roots as JSON.
    Status {
        #[command(flatten)]
        target: VaultTarget,
    },
}

/// Which vault, on which chain.
#[derive(Args)]
pub struct VaultTarget {
    /// The chain's JSON-RPC URL.
    #[arg(long)]
    rpc_url: String,
    /// The vault.
    #[arg(long)]
    vault: String,
}

/// `dexd devnet-setup`
#[derive(Args)]
pub struct DevnetSetup {
    /// The devnet node's JSON-RPC URL (a fresh anvil).
    #[arg(long)]
    rpc_url: String,
    /// Where to write dexd.toml, operator.key and devnet.json.
    #[arg(long)]
    dir: PathBuf,
    /// An environment variable holding the key of a funded account of the node (it deploys and
    /// owns the vault and funds the test accounts).
    #[arg(long)]
    funder_key_env: String,
    /// How many test accounts to fund.
    #[arg(long, default_value_t = 4)]
    accounts: usize,
    /// Blocks on top before a deposit is credited (at least 2).
    #[arg(long, default_value_t = 2)]
    confirmations: u64,
    /// The URL dexd will serve at, recorded in devnet.json.
    #[arg(long)]
    dexd_url: Option<String>,
}

/// A token on the command line: an address, or `native` (the zero address).
fn token_argument(text: &str) -> Result<ChainAddress, String> {
    if text.eq_ignore_ascii_case("native") {
        Ok(ChainAddress::ZERO)
    } else {
        address_argument(text, "token")
    }
}

pub(crate) fn address_argument(text: &str, name: &str) -> Result<ChainAddress, String> {
    parse_address(text)
        .map(|address| chain_address(&address))
        .map_err(|_| format!("--{name} must be 0x + 40 hex digits (EIP-55 checksum if mixed case)"))
}

pub(crate) fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("the runtime starts")
}

pub(crate) async fn connect(rpc_url: &str, vault: ChainAddress) -> Result<Node, String> {
    let probe = Node::connect(rpc_url, vault, 0, Duration::from_secs(30))?;
    let chain_id = probe.chain_id().await.map_err(|error| error.to_string())?;
    Node::connect(rpc_url, vault, chain_id, Duration::from_secs(30))
}

async fn owner_call(target: &VaultTarget, key: &KeyArguments, input: Vec<u8>) -> Result<String, String> {
    let vault = address_argument(&target.vault, "vault")?;
    let signer = key.signer()?;
    let node = connect(&target.rpc_url, vault).await?;
    let receipt = deploy::send_and_wait(&node, &signer, TxKind::Call(vault), input, U256::ZERO)
        .await
        .map_err(|error| error.to_string())?;
    Ok(format!(
        "{{\"block\": {}, \"gasUsed\": {}}}",
        receipt.block_number, receipt.gas_used
    ))
}

/// The root terms of `dexd vault deploy`'s arguments, checked as the contract's constructor would.
fn root_terms(
    (max_root_age_s, challenge_period_s, request_period_s): (u64, u64, u64),
    guardians: &[String],
) -> Result<deploy::RootTerms, String> {
    if max_root_age_s == 0 || challenge_period_s >= max_root_age_s {
        return Err("--challenge-period-s must be shorter than --max-root-age-s, which must not be 0".into());
    }
    if request_period_s <= challenge_period_s {
        return Err(
            "--request-period-s must be longer than --challenge-period-s (and the venue's root interval)".into(),
        );
    }
    if guardians.len() > deploy::MAX_GUARDIANS {
        return Err(format!("at most {} --guardian", deploy::MAX_GUARDIANS));
    }
    Ok(deploy::RootTerms {
        max_root_age_s,
        challenge_period_s,
        request_period_s,
        guardians: guardians
            .iter()
            .map(|guardian| address_argument(guardian, "guardian"))
            .collect::<Result<Vec<_>, String>>()?,
    })
}

async fn vault_command(command: VaultCommand) -> Result<String, String> {
    match command {
        VaultCommand::Deploy {
            rpc_url,
            operator,
            owner,
            max_root_age_s,
            challenge_period_s,
            request_period_s,
            guardians,
            list_tokens,
            key,
        } => {
            let signer = key.signer()?;
            let list_tokens = list_tokens
                .iter()
                .map(|token| token_argument(token))
                .collect::<Result<Vec<_>, String>>()?;
            let operator = address_argument(&operator, "operator")?;
            let owner = match owner {
                Some(owner) => address_argument(&owner, "owner")?,
                None => signer.address(),
            };
            let terms = root_terms((max_root_age_s, challenge_period_s, request_period_s), &guardians)?;
            let node = connect(&rpc_url, ChainAddress::ZERO).await?;
            let deployed = deploy::deploy_vault_v2(&node, &signer, owner, operator, &terms)
                .await
                .map_err(|error| error.to_string())?;
            if !list_tokens.is_empty() {
                if owner != signer.address() {
                    return Err(
                        "--list-token needs the owner's key: list the tokens with dexd vault list-token".into(),
                    );
                }
                let node = connect(&rpc_url, deployed.address).await?;
                deploy::list_tokens(&node, &signer, &list_tokens)
                    .await
                    .map_err(|error| error.to_string())?;
            }
            Ok(serde_json::json!({
                "vault": checksummed(&venue_address(&deployed.address)),
                "block": deployed.block_number,
                "gasUsed": deployed.gas_used,
                "owner": checksummed(&venue_address(&owner)),
                "operator": checksummed(&venue_address(&operator)),
            })
            .to_string())
        }
        VaultCommand::SetOperator { target, operator, key } => {
            let operator = address_argument(&operator, "operator")?;
            owner_call(
                &target,
                &key,
                DexdVault::setOperatorCall { newOperator: operator }.abi_encode(),
            )
            .await
        }
        VaultCommand::ListToken { target, token, key } => {
            let token = token_argument(&token)?;
            owner_call(&target, &key, DexdVaultV2::listTokenCall { token }.abi_encode()).await
        }
        VaultCommand::Veto { target, epoch, key } => {
            owner_call(
                &target,
                &key,
                DexdVaultV2::vetoCall {
                    epoch: U256::from(epoch),
                }
                .abi_encode(),
            )
            .await
        }
        VaultCommand::Pause { target, key } => owner_call(&target, &key, DexdVault::pauseCall {}.abi_encode()).await,
        VaultCommand::Unpause { target, key } => {
            owner_call(&target, &key, DexdVault::unpauseCall {}.abi_encode()).await
        }
        VaultCommand::Status { target } => vault_status(&target).await,
    }
}

/// `dexd vault status`: the vault's owner, operator, pause and deposits, and on version 2 its
/// roots, freeze and deposited tokens, as JSON.
async fn vault_status(target: &VaultTarget) -> Result<String, String> {
    let vault = address_argument(&target.vault, "vault")?;
    let node = connect(&target.rpc_url, vault).await?;
    let latest = alloy::eips::BlockId::latest();
    let failed = |error: dexd_custody::node::NodeError| error.to_string();
    let owner = node
        .view(vault, DexdVault::ownerCall {}, latest)
        .await
        .map_err(failed)?;
    let paused = node
        .view(vault, DexdVault::pausedCall {}, latest)
        .await
        .map_err(failed)?;
    let deposits = node
        .view(vault, DexdVault::depositCountCall {}, latest)
        .await
        .map_err(failed)?;
    let operator = node.operator().await.map_err(failed)?;
    let mut status = serde_json::json!({
        "vault": checksummed(&venue_address(&vault)),
        "owner": checksummed(&venue_address(&owner)),
        "operator": checksummed(&venue_address(&operator)),
        "paused": paused,
        "depositCount": deposits.to_string(),
    });
    // Version 2 also has roots and the exit (version 1 answers none of these).
    if let Ok(roots) = node.view(vault, DexdVaultV2::rootCountCall {}, latest).await {
        let frozen = node
            .view(vault, DexdVaultV2::frozenCall {}, latest)
            .await
            .map_err(failed)?;
        let tokens = node
            .view(vault, DexdVaultV2::depositedTokensCall {}, latest)
            .await
            .map_err(failed)?;
        status["rootCount"] = serde_json::json!(roots.to_string());
        status["frozen"] = serde_json::json!(frozen);
        status["depositedTokens"] = serde_json::json!(tokens
            .iter()
            .map(|token| checksummed(&venue_address(token)))
            .collect::<Vec<_>>());
    }
    Ok(status.to_string())
}

/// Runs `dexd vault ...`; prints the result as JSON.
pub fn run_vault(command: VaultCommand) -> ExitCode {
    match runtime().block_on(vault_command(command)) {
        Ok(output) => {
            println!("{output}");
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("dexd vault: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Runs `dexd devnet-setup`.
pub fn run_devnet_setup(setup: DevnetSetup) -> ExitCode {
    let result = runtime().block_on(async {
        if setup.confirmations < 2 {
            return Err("a devnet uses at least 2 confirmations".to_string());
        }
        let funder = read_operator_key(&OperatorKeySource::Environment(setup.funder_key_env.clone()))
            .map_err(|error| error.to_string())?;
        let (network, operator) = devnet::set_up(&setup.rpc_url, &funder, setup.accounts)
            .await
            .map_err(|error| error.to_string())?;
        let options = devnet::DevnetConfigOptions {
            confirmations: setup.confirmations,
            ..devnet::DevnetConfigOptions::default()
        };
        devnet::write_files(&network, &operator, &setup.dir, options, setup.dexd_url.as_deref())
            .map_err(|error| format!("cannot write into {}: {error}", setup.dir.display()))
    });
    match result {
        Ok(config) => {
            println!("{}", config.display());
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("dexd devnet-setup: {error}");
            ExitCode::FAILURE
        }
    }
}
