//! `dexd audit`: the command line of the auditor ([`dexd::audit::auditor`]), which follows a
//! venue's public journal from another process (typically another machine), checks it, and on a
//! vault chain compares every root with the vault's and, with the guardian's key, vetoes a bad
//! one. Exit status with `--once`: 0 only if every check held.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use dexd::audit::auditor::{run, AuditOptions};

use crate::chain_commands::address_argument;

/// `dexd audit`
#[derive(Args)]
pub struct Audit {
    /// The venue whose journal is audited (its base URL).
    #[arg(long)]
    venue: String,
    /// The chain audited.
    #[arg(long)]
    chain_id: u64,
    /// The auditor's directory: its copy of the journal, its snapshots, the trees of the roots
    /// it checked (for `dexd exit --audit-dir`) and its progress. A restart resumes from it.
    #[arg(long)]
    dir: PathBuf,
    /// The chain's JSON-RPC URL, to check deposits and roots against the vault (needs --vault).
    #[arg(long, requires = "vault")]
    rpc_url: Option<String>,
    /// The vault (version 2).
    #[arg(long, requires = "rpc_url")]
    vault: Option<String>,
    /// A beacon node's URL, for the roots' data carried in blobs (default: the RPC URL, as a
    /// devnet's anvil serves both).
    #[arg(long, requires = "rpc_url")]
    beacon_url: Option<String>,
    /// The environment variable holding the vault guardian's key: vetoes a root that does not
    /// match, or that it has not verified by half its challenge period.
    #[arg(long, requires = "rpc_url")]
    guardian_key_env: Option<String>,
    /// Stop at the journal's end; exit 0 only if every check held.
    #[arg(long)]
    once: bool,
    /// Blocks on top of a root's block before the root is checked.
    #[arg(long, default_value_t = 2)]
    confirmations: u64,
    /// How long to wait before asking the venue again when its journal has nothing new, in ms.
    #[arg(long, default_value_t = 1_000)]
    poll_interval_ms: u64,
    /// Serve the auditor's Prometheus metrics at /metrics on this address.
    #[arg(long)]
    metrics_listen: Option<SocketAddr>,
    /// The most commands asked for in one page of the journal (1 to 10,000): fewer for a slow
    /// link.
    #[arg(long, default_value_t = 10_000)]
    page_commands: usize,
    /// Another source of the journal's finished segments (another auditor's --serve, or any
    /// copy), read when the venue does not give one; may be repeated. Segments are checked by
    /// their content, so any source will do.
    #[arg(long = "mirror")]
    mirrors: Vec<String>,
    /// Serve the segments this auditor has checked at /audit/journal?chainId&segment=N on this
    /// address, for other auditors' --mirror.
    #[arg(long)]
    serve: Option<SocketAddr>,
}

pub fn run_audit(arguments: Audit) -> ExitCode {
    let chain = match (arguments.rpc_url, arguments.vault) {
        (Some(rpc_url), Some(vault)) => match address_argument(&vault, "vault") {
            Ok(vault) => Some((rpc_url, dexd_custody::vault::venue_address(&vault))),
            Err(error) => {
                eprintln!("dexd audit: {error}");
                return ExitCode::from(2);
            }
        },
        _ => None,
    };
    let options = AuditOptions {
        venue: arguments.venue,
        chain_id: arguments.chain_id,
        directory: arguments.dir,
        chain,
        guardian_key_env: arguments.guardian_key_env,
        beacon_url: arguments.beacon_url,
        once: arguments.once,
        confirmations: arguments.confirmations,
        poll_interval_ms: arguments.poll_interval_ms.max(10),
        metrics_listen: arguments.metrics_listen,
        page_commands: arguments.page_commands,
        mirrors: arguments.mirrors,
        serve: arguments.serve,
    };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("the runtime starts");
    match runtime.block_on(run(options)) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(error) => {
            eprintln!("dexd audit: {error}");
            ExitCode::from(2)
        }
    }
}
