//! The `dexd` command line: `dexd serve` runs the venue; `dexd vault ...` deploys and governs a
//! vault on any chain; `dexd devnet-setup` prepares a local devnet; `dexd exit` leaves a frozen
//! vault with a proof; `dexd audit` checks a venue's public journal. `dexd serve --demo` adds a built-in market to look around.
//!
//! This file parses arguments, sets up logging and signal handling, and hands over to
//! [`dexd::serve`] (or to `chain_commands.rs` for the chain subcommands). It holds no venue
//! logic.

mod admin_command;
mod audit_command;
mod chain_commands;
mod exit_command;

use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};
use dexd_venue::config::{Config, DEFAULT_CONFIG_TOML};
use tracing_subscriber::EnvFilter;

/// The allocator: mimalloc, because glibc's malloc and free took about an eighth of the request
/// threads' time under load (see BENCHMARKS.md).
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// dexd: a trading venue for asset pairs on blockchain networks, over HTTP.
#[derive(Parser)]
#[command(version, about, long_about = None)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Run the venue's HTTP service.
    Serve {
        /// The address and port to listen on. Listening beyond loopback without TLS sends private
        /// keys across the network in clear: give --tls-cert and --tls-key, or put a TLS proxy in
        /// front.
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: SocketAddr,
        /// A PEM certificate chain: serve HTTPS instead of HTTP (needs --tls-key).
        #[arg(long, requires = "tls_key")]
        tls_cert: Option<PathBuf>,
        /// The PEM private key of --tls-cert.
        #[arg(long, requires = "tls_cert")]
        tls_key: Option<PathBuf>,
        /// A TOML file of chains, assets, pairs and limits; without it the embedded default
        /// (Ethereum 1, Sepolia 11155111, Arbitrum 42161) is used.
        #[arg(long)]
        config: Option<PathBuf>,
        /// Where the venue keeps its data: one SQLite database per chain
        /// (`chain-<id>.sqlite3`), created on first start.
        #[arg(long, default_value = "dexd-data")]
        data_dir: PathBuf,
        /// Run a built-in demo market on every pair: a market maker quoting around a wandering
        /// price and takers trading against it, from demo accounts made at start (ledger chains
        /// on the embedded journal only). The way to look around.
        #[arg(long)]
        demo: bool,
        /// Serve the operator's API (halt and resume pairs) on this address, apart from the
        /// public one; it takes requests bearing the token in --admin-token-env.
        #[arg(long)]
        admin_listen: Option<SocketAddr>,
        /// The environment variable holding the operator's token (at least 32 bytes).
        #[arg(long, default_value = dexd::admin::DEFAULT_ADMIN_TOKEN_ENV)]
        admin_token_env: String,
    },
    /// Call a venue's operator API (`dexd serve --admin-listen`), the token from the environment.
    Admin(admin_command::Admin),
    /// Print the embedded default configuration, as a starting point for your own.
    DefaultConfig,
    /// Copy a data directory while the service runs: each chain's history, then its journal
    /// (SQLite's VACUUM INTO, consistent at one journal command), then its snapshots. Restoring
    /// is starting `dexd serve --data-dir` on the copy.
    Backup {
        /// The data directory of the running (or stopped) service.
        #[arg(long)]
        data_dir: PathBuf,
        /// Where the copy goes: a new or empty folder.
        #[arg(long)]
        to: PathBuf,
    },
    /// Deploy and govern a vault contract on a chain (keys from files or environment variables,
    /// never from the command line).
    #[command(subcommand)]
    Vault(chain_commands::VaultCommand),
    /// Prepare a local devnet (anvil) for dexd: deploy the vault and test tokens, fund test
    /// accounts, and write a configuration and devnet.json into a folder (scripts/devnet runs it).
    DevnetSetup(chain_commands::DevnetSetup),
    /// Leave a frozen vault (version 2) with a proof the venue served: check each leaf against
    /// the vault's exit root and send its exit (keys from files or environment variables).
    Exit(exit_command::Exit),
    /// Follow a venue's public journal and check it: every command's signature or chain event,
    /// its replay, the state hashes, and on a vault chain every root against the vault's (and,
    /// with the guardian's key, veto a bad one). Keeps what an exit needs in its directory.
    Audit(audit_command::Audit),
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    match cli.command {
        Command::DefaultConfig => {
            print!("{DEFAULT_CONFIG_TOML}");
            ExitCode::SUCCESS
        }
        Command::Backup { data_dir, to } => backup(&data_dir, &to),
        Command::Vault(command) => chain_commands::run_vault(command),
        Command::DevnetSetup(setup) => chain_commands::run_devnet_setup(setup),
        Command::Exit(arguments) => exit_command::run_exit(arguments),
        Command::Audit(arguments) => {
            init_logging();
            audit_command::run_audit(arguments)
        }
        Command::Serve {
            listen,
            config,
            data_dir,
            tls_cert,
            tls_key,
            demo,
            admin_listen,
            admin_token_env,
        } => {
            let admin = match admin_listen {
                None => None,
                Some(address) => match dexd::admin::AdminToken::from_environment(&admin_token_env) {
                    Ok(token) => Some((address, token)),
                    Err(reason) => {
                        eprintln!("dexd: {reason}");
                        return ExitCode::from(2);
                    }
                },
            };
            serve(listen, config, data_dir, tls_cert.zip(tls_key), demo, admin)
        }
        Command::Admin(arguments) => admin_command::run_admin(arguments),
    }
}

fn backup(data_dir: &std::path::Path, to: &std::path::Path) -> ExitCode {
    match dexd_store::backup::backup(data_dir, to) {
        Ok(chains) => {
            for chain in chains {
                println!(
                    "chain {}: journal through command {} (history through {}), {} snapshot(s)",
                    chain.chain_id, chain.journal_sequence, chain.history_sequence, chain.snapshots
                );
            }
            println!(
                "backup written to {}; restore: dexd serve --data-dir {}",
                to.display(),
                to.display()
            );
            ExitCode::SUCCESS
        }
        Err(error) => {
            eprintln!("dexd backup: {error}");
            ExitCode::FAILURE
        }
    }
}

/// Logs to standard error (a command whose standard output is its result: the auditor's lines),
/// at `info` unless `RUST_LOG` says otherwise.
fn init_logging() {
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .with_writer(std::io::stderr)
        .init();
}

fn serve(
    listen: SocketAddr,
    config_path: Option<PathBuf>,
    data_dir: PathBuf,
    tls_files: Option<(PathBuf, PathBuf)>,
    demo: bool,
    admin: Option<(SocketAddr, dexd::admin::AdminToken)>,
) -> ExitCode {
    // Request threads append log lines to a buffer that a log thread writes out every few
    // milliseconds: one write per interval instead of one per line, off the path of the request.
    let (log_writer, _flush_log_on_exit) = dexd::log_output::buffered_log(std::io::stdout());
    tracing_subscriber::fmt()
        .with_env_filter(EnvFilter::try_from_default_env().unwrap_or_else(|_| EnvFilter::new("info")))
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stdout()))
        .with_writer(log_writer)
        .init();
    let config = match config_path {
        None => Config::embedded_default(),
        Some(path) => match Config::load(&path) {
            Ok(config) => config,
            Err(error) => {
                eprintln!("dexd: {}: {error}", path.display());
                return ExitCode::from(2);
            }
        },
    };
    if demo {
        if let Some(reason) = dexd::demo::refusal(&config) {
            eprintln!("dexd: {reason}");
            return ExitCode::from(2);
        }
    }
    let tls = match tls_files {
        None => None,
        Some((certificate, key)) => match dexd::tls::load_server_config(&certificate, &key) {
            Ok(tls) => Some(tls),
            Err(error) => {
                eprintln!("dexd: {error}");
                return ExitCode::from(2);
            }
        },
    };
    if tls.is_none() && !listen.ip().is_loopback() {
        tracing::warn!(%listen, "listening beyond loopback without TLS: private keys in requests would cross the network in clear; give --tls-cert and --tls-key or put a TLS proxy in front");
    }
    let scheme = if tls.is_some() { "https" } else { "http" };
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the runtime starts");
    let code = runtime.block_on(async move {
        #[cfg(unix)]
        report_file_size_limit();
        let listener = match tokio::net::TcpListener::bind(listen).await {
            Ok(listener) => listener,
            Err(error) => {
                eprintln!("dexd: cannot listen on {listen}: {error}");
                return ExitCode::from(2);
            }
        };
        tracing::info!(address = %listener.local_addr().map(|a| a.to_string()).unwrap_or_default(), scheme, "dexd listening");
        let admin = match admin {
            None => None,
            Some((address, token)) => match tokio::net::TcpListener::bind(address).await {
                Ok(admin_listener) => Some((admin_listener, token)),
                Err(error) => {
                    eprintln!("dexd: cannot listen on {address} for the admin API: {error}");
                    return ExitCode::from(2);
                }
            },
        };
        let options = dexd::ServeOptions { tls, demo, admin };
        match dexd::serve_with_options(config, &data_dir, listener, options, shutdown_signal()).await {
            Ok(()) => ExitCode::SUCCESS,
            Err(error) => {
                eprintln!("dexd: {error}");
                ExitCode::FAILURE
            }
        }
    });
    // A stop during the start leaves a chain's replay running on a blocking thread; nothing of it
    // needs to finish (it has acknowledged nothing), so the process does not wait for it.
    runtime.shutdown_timeout(std::time::Duration::from_millis(100));
    code
}

/// A write past the process's file size limit (`RLIMIT_FSIZE`) raises SIGXFSZ, whose default
/// action kills the process. Handling it turns such a write into the error it also returns
/// (EFBIG), which the store answers like a full disk: 503 for the write, reads go on. PostgreSQL
/// makes the same choice.
#[cfg(unix)]
fn report_file_size_limit() {
    use tokio::signal::unix::{signal, SignalKind};
    match signal(SignalKind::from_raw(libc::SIGXFSZ)) {
        Ok(mut file_size_signal) => {
            tokio::spawn(async move {
                while file_size_signal.recv().await.is_some() {
                    tracing::warn!(
                        "a write went past the file size limit (RLIMIT_FSIZE); writes fail until it is raised"
                    );
                }
            });
        }
        Err(error) => tracing::warn!(%error, "cannot handle SIGXFSZ; a write past the file size limit will stop dexd"),
    }
}

async fn shutdown_signal() {
    let interrupt = async {
        let _ = tokio::signal::ctrl_c().await;
    };
    #[cfg(unix)]
    let terminate = async {
        if let Ok(mut signal) = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate()) {
            signal.recv().await;
        }
    };
    #[cfg(not(unix))]
    let terminate = std::future::pending::<()>();
    tokio::select! {
        () = interrupt => {},
        () = terminate => {},
    }
    tracing::info!("shutting down: finishing requests in flight");
}
