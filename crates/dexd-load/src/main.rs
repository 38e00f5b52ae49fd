//! The `dexd-load` command line: see the crate documentation.

use std::io::Write;
use std::time::Duration;

use clap::Parser;
use dexd_load::{
    account_lines, fund_accounts, key_limit_per_core, run, signing_limit_per_core, start_baseline_server, RunReport,
    RunSettings, Workload,
};

/// The allocator, as in dexd: glibc's malloc and free were about a fifth of the generator's time,
/// on the cores it shares with the server it measures. The do-nothing axum baseline runs in this
/// process, so it has the same allocator as dexd.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Open-loop load against a running dexd, with the HTTP and key limits beside it.
#[derive(Parser)]
#[command(version, about)]
struct Cli {
    /// The dexd server.
    #[arg(long, default_value = "http://127.0.0.1:8080")]
    target: String,
    /// place, mixed, read, health, stream (placements while --subscribers connections watch the
    /// book and trades), or axum-baseline (the do-nothing axum endpoint alone).
    #[arg(long, default_value = "place")]
    workload: String,
    /// Offered rates (requests per second), one run each.
    #[arg(long, value_delimiter = ',', default_value = "1000")]
    rates: Vec<u64>,
    /// Seconds per run.
    #[arg(long, default_value_t = 10)]
    seconds: u64,
    /// Accounts that place orders.
    #[arg(long, default_value_t = 64)]
    accounts: usize,
    /// Also measure the do-nothing axum endpoint at the same rates (the HTTP limit).
    #[arg(long)]
    baseline: bool,
    /// Also measure the per-order cryptography alone (the key limit).
    #[arg(long)]
    key_limit: bool,
    /// Also measure the per-order signing alone, the key derived once (the signing limit of a
    /// batch).
    #[arg(long)]
    signing_limit: bool,
    /// Only fund the accounts, and write their keys and addresses to this file (`key address`
    /// a line), for another client to trade with.
    #[arg(long)]
    fund_only: Option<std::path::PathBuf>,
    /// The chain to trade on.
    #[arg(long, default_value_t = 1)]
    chain_id: u64,
    /// Fund the accounts through the vault of this devnet (its devnet.json, from scripts/devnet)
    /// instead of ledger deposits.
    #[arg(long)]
    fund_on_chain: Option<std::path::PathBuf>,
    /// Stream connections for --workload stream.
    #[arg(long, default_value_t = 1000)]
    subscribers: usize,
    /// The server's process id, to measure its memory per stream connection and its CPU time
    /// during each run.
    #[arg(long)]
    server_pid: Option<u32>,
    /// For --workload stream: what each connection watches, `book` (depth 25, every change, and
    /// the trades) or `depth` (the top 10 levels whole, paced by --depth-interval-ms, alone).
    #[arg(long, default_value = "book")]
    stream_channel: String,
    /// The pace of --stream-channel depth: 100 or 1000 ms.
    #[arg(long, default_value_t = 100)]
    depth_interval_ms: u16,
    /// For --workload stream: every connection tags its subscriptions with the same id, so the
    /// server frames each message once for all of them (by default each has its own).
    #[arg(long)]
    stream_shared_id: bool,
    /// Append results to this CSV file.
    #[arg(long)]
    csv: Option<std::path::PathBuf>,
    /// Instead of running: draw the chart of latency against offered load from this CSV file.
    #[arg(long)]
    chart_from: Option<std::path::PathBuf>,
    /// Where `--chart-from` writes its SVG.
    #[arg(long, default_value = "latency.svg")]
    chart_to: std::path::PathBuf,
}

/// The generator runs on one thread: at 8,000 requests/s it needs well under a core, and with a
/// second worker it spent CPU handing tasks between threads, taken from the server it measures.
#[tokio::main(flavor = "current_thread")]
async fn main() -> Result<(), String> {
    let cli = Cli::parse();
    if let Some(csv) = &cli.chart_from {
        dexd_load::chart::draw(csv, &cli.chart_to)?;
        println!("chart written to {}", cli.chart_to.display());
        return Ok(());
    }
    let workload =
        Workload::parse(&cli.workload).ok_or("workload must be place, mixed, read, health, stream or axum-baseline")?;
    let mut reports = Vec::new();
    if cli.key_limit {
        let per_core = key_limit_per_core(Duration::from_secs(3));
        println!("key limit: {per_core:.0} orders/s per core (address derivation + EIP-712 signing)");
    }
    if cli.signing_limit {
        let per_core = signing_limit_per_core(Duration::from_secs(3));
        println!("signing limit: {per_core:.0} orders/s per core (EIP-712 signing, the key derived once)");
    }
    if cli.baseline || workload == Workload::AxumBaseline {
        let baseline = start_baseline_server();
        for rate in &cli.rates {
            let settings = RunSettings {
                target: baseline.address.clone(),
                workload: Workload::AxumBaseline,
                rate_per_second: *rate,
                duration: Duration::from_secs(cli.seconds),
                accounts: 1,
                chain_id: 1,
                acks: None,
            };
            let report = run(settings).await;
            print_report("axum baseline", &report);
            reports.push(report);
        }
    }
    if workload == Workload::AxumBaseline {
        return write_csv(cli.csv.as_deref(), &reports);
    }
    let settings = RunSettings {
        target: cli.target.clone(),
        workload,
        rate_per_second: 1,
        duration: Duration::from_secs(cli.seconds),
        accounts: cli.accounts,
        chain_id: cli.chain_id,
        acks: None,
    };
    if let Some(file) = &cli.fund_only {
        fund_accounts(&settings).await?;
        std::fs::write(file, account_lines(cli.accounts)).map_err(|error| format!("{}: {error}", file.display()))?;
        println!("{} accounts funded; keys in {}", cli.accounts, file.display());
        return Ok(());
    }
    if workload != Workload::Health && workload != Workload::Read {
        match &cli.fund_on_chain {
            None => fund_accounts(&settings).await?,
            Some(devnet) => dexd_load::on_chain::fund_accounts_on_chain(&settings, devnet).await?,
        }
    }
    if workload == Workload::Stream {
        return run_stream(&cli, settings).await;
    }
    for rate in &cli.rates {
        let cpu_before = cli.server_pid.and_then(dexd_load::stream::cpu_seconds);
        let report = run(RunSettings {
            rate_per_second: *rate,
            ..settings.clone()
        })
        .await;
        print_report("dexd", &report);
        print_server_cpu(cli.server_pid, cpu_before, None);
        reports.push(report);
    }
    write_csv(cli.csv.as_deref(), &reports)
}

/// The stream workload: subscribers connect and take their snapshots, then placements run at
/// each rate while they read; memory per connection from the server's resident size.
async fn run_stream(cli: &Cli, settings: RunSettings) -> Result<(), String> {
    let acks = std::sync::Arc::new(dexd_load::stream::AckLog::default());
    let before = cli.server_pid.and_then(dexd_load::stream::resident_bytes);
    let started = std::time::Instant::now();
    let watched = match cli.stream_channel.as_str() {
        "book" => dexd_load::stream::WatchedBook::Book,
        "depth" => dexd_load::stream::WatchedBook::Depth {
            interval_ms: cli.depth_interval_ms,
        },
        _ => return Err("stream-channel must be book or depth".into()),
    };
    let subscribers = dexd_load::stream::open_subscribers(
        &cli.target,
        cli.chain_id,
        cli.subscribers,
        watched,
        cli.stream_shared_id,
        acks.clone(),
    )
    .await?;
    let after = cli.server_pid.and_then(dexd_load::stream::resident_bytes);
    println!(
        "{} stream connections subscribed to the {} in {:.1} s",
        cli.subscribers,
        cli.stream_channel,
        started.elapsed().as_secs_f64()
    );
    if let (Some(before), Some(after)) = (before, after) {
        println!(
            "server memory: {:.1} MiB before, {:.1} MiB after: {:.1} KiB per connection",
            before as f64 / 1_048_576.0,
            after as f64 / 1_048_576.0,
            after.saturating_sub(before) as f64 / 1024.0 / cli.subscribers as f64
        );
    }
    let cpu_before = cli.server_pid.and_then(dexd_load::stream::cpu_seconds);
    let messages_before = subscribers.messages();
    for rate in &cli.rates {
        let report = run(RunSettings {
            rate_per_second: *rate,
            workload: Workload::Place,
            acks: Some(acks.clone()),
            ..settings.clone()
        })
        .await;
        print_report("dexd + streams", &report);
    }
    print_server_cpu(
        cli.server_pid,
        cpu_before,
        Some(subscribers.messages() - messages_before),
    );
    let report = subscribers.finish().await;
    let [p50, p90, p99, p999, max] = report.latency_us;
    println!(
        "streams: {} connections, {} messages ({:.1} MB), {} closed by the server; delivery of trades after \
         their acknowledgment ({} samples, {} arrived before the acknowledgment): p50 {p50} µs  p90 {p90} µs  \
         p99 {p99} µs  p99.9 {p999} µs  max {max} µs",
        report.connections,
        report.messages,
        report.bytes as f64 / 1e6,
        report.closed,
        report.samples,
        report.before_ack
    );
    Ok(())
}

/// Appends the runs to the CSV file, with its header when the file is new.
fn write_csv(path: Option<&std::path::Path>, reports: &[RunReport]) -> Result<(), String> {
    if let Some(path) = path {
        let new = !path.exists();
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .map_err(|error| error.to_string())?;
        if new {
            writeln!(file, "{}", RunReport::CSV_HEADER).map_err(|error| error.to_string())?;
        }
        for report in reports {
            writeln!(file, "{}", report.csv_row()).map_err(|error| error.to_string())?;
        }
    }
    Ok(())
}

/// The server's CPU time since `before`, and per delivered message when `messages` is known.
fn print_server_cpu(server_pid: Option<u32>, before: Option<f64>, messages: Option<u64>) {
    let (Some(before), Some(after)) = (before, server_pid.and_then(dexd_load::stream::cpu_seconds)) else {
        return;
    };
    let used = after - before;
    match messages {
        Some(messages) if messages > 0 => println!(
            "server CPU: {used:.2} s during the runs; {messages} messages delivered: {:.2} µs of server CPU per message (placements included)",
            used * 1e6 / messages as f64
        ),
        _ => println!("server CPU: {used:.2} s during the run"),
    }
}

fn print_report(server: &str, report: &RunReport) {
    let [p50, p90, p99, p999, max] = report.latency_us;
    println!(
        "{server:>14} {:>7} offered {:>7}/s achieved {:>9.0}/s rejected {:>6} errors {:>6}  p50 {p50} µs  p90 {p90} µs  p99 {p99} µs  p99.9 {p999} µs  max {max} µs",
        report.workload.name(),
        report.offered_per_second,
        report.achieved_per_second,
        report.rejected,
        report.failed
    );
}
