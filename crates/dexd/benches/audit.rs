//! Whether an auditor keeps up with the venue it checks, on this machine's cores:
//!
//! 1. **The venue's durable write rate, signatures included.** The venue (in process, SQLite,
//!    the embedded ledger chain 1) takes client-signed commands of 512 accounts (placements, a
//!    fifth of them followed by the account's cancel), one submitter each, in order; each
//!    recovers the signature before it queues the command, as the API does. The commands are
//!    signed beforehand (signing is the client's work).
//! 2. **The auditor's check rate.** The same data directory is served by `dexd::serve` on port 0,
//!    and the auditor (`dexd audit --once`, in process) checks its whole journal from position
//!    1: every line parsed, every signature recovered, every command replayed, every state
//!    hash compared, its copy written.
//! 3. **Lag while following.** The venue serves and takes the same kind of commands over HTTP at
//!    a steady offered rate while an auditor follows it; the lag (the venue's journal end less
//!    the auditor's position) is sampled every 50 ms.
//!
//! `cargo bench -p dexd --bench audit`. `DEXD_BENCH_COMMANDS` sets the commands of phases 1 and
//! 2 (default 200,000), `DEXD_BENCH_RATE` the offered commands per second of phase 3 (default
//! 2,000) and `DEXD_BENCH_SECONDS` its length (default 10).

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

#[path = "../tests/all/common/journal_end.rs"]
mod journal_end;
mod workload;

use dexd::audit::auditor::AuditOptions;
use dexd_core::{Amount, AssetIndex, Command, OrderId, PairIndex, TransferRequest};
use dexd_crypto::{recover_signer, PrivateKey, RequestMessages};
use dexd_store::Authorization;
use dexd_venue::config::Config;
use dexd_venue::Chain;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The allocator the `dexd` binary uses, so that the benchmark measures what the service runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ACCOUNTS: usize = 512;
const SUBMITTERS: usize = ACCOUNTS;
/// How long a signed request stays valid (well inside the venue's hour).
const EXPIRY_AFTER_MS: u64 = 1_800_000;

fn key(index: usize) -> PrivateKey {
    let mut bytes = [0x11u8; 32];
    bytes[28..].copy_from_slice(&(index as u32 + 1).to_be_bytes());
    PrivateKey::parse(&format!("0x{}", hex::encode(bytes))).expect("a valid key")
}

/// One command signed by its account as a client would, with the digest the venue recovers the
/// signature over.
struct Signed {
    command: Command,
    authorization: Authorization,
    digest: [u8; 32],
}

/// Signs `command` (an order's id is set to its digest, as the API requires).
fn sign(messages: &RequestMessages, key: &PrivateKey, mut command: Command, random: &mut StdRng) -> Signed {
    let mut nonce = [0u8; 32];
    nonce[16..].copy_from_slice(&random.gen::<[u8; 16]>());
    let expiry_ms = dexd_store::now_ms() + EXPIRY_AFTER_MS;
    let signed = messages
        .signed_command(&command, true, (nonce, expiry_ms))
        .expect("a command accounts sign");
    let digest = signed.message.digest(messages.domain());
    let order_id = signed.digest_is_order_id.map(|_| OrderId::from_bytes(digest));
    if let (Command::PlaceOrder(order), Some(order_id)) = (&mut command, order_id) {
        order.order_id = order_id;
    }
    Signed {
        command,
        authorization: Authorization {
            order_id,
            nonce,
            expiry_ms,
            signature: key.sign_digest(digest),
            client_signed: true,
            batch: None,
            claims_batch_nonce: false,
            approved_at_block: None,
        },
        digest,
    }
}

/// Each account's commands, in its order: its deposits, then placements around the mid price,
/// a fifth of them cancelled by their next command.
fn signed_commands(messages: &RequestMessages, assets: usize, commands: usize) -> Vec<Vec<Signed>> {
    let per_account = commands / ACCOUNTS;
    let accounts: Vec<usize> = (0..ACCOUNTS).collect();
    let threads = std::thread::available_parallelism().map_or(2, usize::from);
    std::thread::scope(|scope| {
        let handles: Vec<_> = accounts
            .chunks(ACCOUNTS.div_ceil(threads))
            .map(|chunk| {
                scope.spawn(move || {
                    chunk
                        .iter()
                        .map(|&index| account_commands(messages, assets, index, per_account))
                        .collect::<Vec<_>>()
                })
            })
            .collect();
        handles.into_iter().flat_map(|handle| handle.join().unwrap()).collect()
    })
}

fn account_commands(messages: &RequestMessages, assets: usize, index: usize, count: usize) -> Vec<Signed> {
    let key = key(index);
    let account = key.address();
    let mut random = StdRng::seed_from_u64(index as u64);
    let mut list = Vec::with_capacity(count);
    for asset in 0..assets {
        let deposit = Command::Deposit(TransferRequest {
            transfer_id: random.gen(),
            account,
            asset: AssetIndex(asset as u16),
            amount: Amount::from_units(10u128.pow(30)),
        });
        list.push(sign(messages, &key, deposit, &mut random));
    }
    while list.len() < count {
        let (placement, _) = workload::place(&mut random, account);
        let placed = sign(messages, &key, placement, &mut random);
        let order_id = placed.authorization.order_id.expect("a placement's id");
        list.push(placed);
        if random.gen_range(0..5) == 0 {
            let cancel = Command::CancelOrder {
                account,
                order_id,
                pair: Some(PairIndex(0)),
            };
            list.push(sign(messages, &key, cancel, &mut random));
        }
    }
    list
}

/// Phase 1: the commands through the venue, each signature recovered first; accepted commands
/// per second.
async fn write(chain: Arc<Chain>, commands: Vec<Vec<Signed>>) -> (u64, f64) {
    let accepted = Arc::new(AtomicU64::new(0));
    // Each account's commands stay in order; an account's share of submitters takes its list
    // in turn (the submitters of one account share one queue).
    let queues: Vec<Arc<tokio::sync::Mutex<std::vec::IntoIter<Signed>>>> = commands
        .into_iter()
        .map(|list| Arc::new(tokio::sync::Mutex::new(list.into_iter())))
        .collect();
    let started = Instant::now();
    let tasks: Vec<_> = (0..SUBMITTERS)
        .map(|task| {
            let queue = Arc::clone(&queues[task % ACCOUNTS]);
            let (chain, accepted) = (Arc::clone(&chain), Arc::clone(&accepted));
            tokio::spawn(async move {
                loop {
                    // Holding the account's queue across the submit keeps its commands in order.
                    let mut queue = queue.lock().await;
                    let Some(signed) = queue.next() else { break };
                    let account = signed.command.account().expect("an account's command");
                    assert_eq!(
                        recover_signer(signed.digest, &signed.authorization.signature),
                        Some(account)
                    );
                    if chain.submit(signed.command, Some(signed.authorization)).await.is_ok() {
                        accepted.fetch_add(1, Ordering::Relaxed);
                    }
                }
            })
        })
        .collect();
    for task in tasks {
        task.await.unwrap();
    }
    let accepted = accepted.load(Ordering::Relaxed);
    (accepted, accepted as f64 / started.elapsed().as_secs_f64())
}

/// Serves `data_dir` on port 0 until the returned sender is dropped; the base URL.
async fn serve(config: Config, data_dir: std::path::PathBuf) -> (String, tokio::sync::oneshot::Sender<()>) {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    tokio::spawn(async move {
        dexd::serve(config, &data_dir, listener, async move {
            let _ = stopped.await;
        })
        .await
        .unwrap();
    });
    let base_url = format!("http://{address}");
    let client = reqwest::Client::new();
    let deadline = Instant::now() + Duration::from_secs(120);
    while !client
        .get(format!("{base_url}/ready"))
        .send()
        .await
        .is_ok_and(|response| response.status() == 200)
    {
        assert!(Instant::now() < deadline, "the venue did not get ready");
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    (base_url, stop)
}

/// Waits until the venue serves the state hash of the last multiple of 10,000 in its journal
/// (its keeper, a low-priority thread, catches up after a start).
async fn wait_for_state_hashes(client: &reqwest::Client, base_url: &str, end: u64) {
    let last = end / 10_000 * 10_000;
    if last == 0 {
        return;
    }
    loop {
        let text = client
            .get(format!("{base_url}/audit/journal?chainId=1&from={last}&limit=1"))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        if text.contains("stateHash") {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn audit_options(base_url: &str, directory: &std::path::Path, once: bool) -> AuditOptions {
    AuditOptions {
        venue: base_url.to_string(),
        chain_id: 1,
        directory: directory.to_path_buf(),
        chain: None,
        guardian_key_env: None,
        beacon_url: None,
        once,
        confirmations: 0,
        poll_interval_ms: 20,
        metrics_listen: None,
        page_commands: 10_000,
        mirrors: Vec::new(),
        serve: None,
    }
}

/// Phase 3: client-signed placements over HTTP at `rate` per second for `seconds`, an auditor
/// following; the lag's samples (commands).
async fn follow(base_url: &str, messages: &RequestMessages, rate: u64, seconds: u64) -> Vec<u64> {
    let directory = tempfile::tempdir().unwrap();
    let client = reqwest::Client::new();
    // On a runtime of its own, as the separate process it would be (it runs until the
    // benchmark's process ends).
    let options = audit_options(base_url, directory.path(), false);
    std::thread::spawn(move || {
        let runtime = workload::two_core_runtime();
        let _ = runtime.block_on(dexd::audit::auditor::run(options));
    });
    // The auditor first catches up with what phase 1 wrote.
    let end = journal_end::journal_end(&client, base_url, 1).await;
    while copy_position(directory.path()) < end {
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let sent = Arc::new(AtomicU64::new(0));
    let stop_at = Instant::now() + Duration::from_secs(seconds);
    let mut senders = Vec::new();
    for index in 0..ACCOUNTS {
        let (client, base_url, sent) = (client.clone(), base_url.to_string(), Arc::clone(&sent));
        let messages = messages.clone();
        let interval_ms = (1_000 * ACCOUNTS as u64 / rate.max(1)).max(1);
        senders.push(tokio::spawn(async move {
            let key = key(index);
            let mut random = StdRng::seed_from_u64(1_000 + index as u64);
            let mut ticker = tokio::time::interval(Duration::from_millis(interval_ms));
            while Instant::now() < stop_at {
                ticker.tick().await;
                let (placement, _) = workload::place(&mut random, key.address());
                let signed = sign(&messages, &key, placement, &mut random);
                let body = order_body(&signed, &messages);
                if client
                    .post(format!("{base_url}/order/addOrder"))
                    .json(&body)
                    .send()
                    .await
                    .is_ok_and(|response| response.status() == 200)
                {
                    sent.fetch_add(1, Ordering::Relaxed);
                }
            }
        }));
    }
    let mut samples = Vec::new();
    while Instant::now() < stop_at {
        tokio::time::sleep(Duration::from_millis(50)).await;
        let end = journal_end::journal_end(&client, base_url, 1).await;
        samples.push(end.saturating_sub(copy_position(directory.path())));
    }
    for sender in senders {
        sender.await.unwrap();
    }
    println!(
        "phase 3: {} placements over HTTP in {seconds} s",
        sent.load(Ordering::Relaxed)
    );
    samples
}

/// The signed request body of a placement (the client's own signature): the signed message's
/// fields under the request's names.
fn order_body(signed: &Signed, messages: &RequestMessages) -> serde_json::Value {
    let message = messages
        .signed_command(
            &signed.command,
            true,
            (signed.authorization.nonce, signed.authorization.expiry_ms),
        )
        .expect("a placement")
        .message
        .message_json();
    serde_json::json!({
        "chainId": "1",
        "account": message["account"],
        "symbol": message["symbol"],
        "type": message["orderType"],
        "direction": message["direction"],
        "timeInForce": message["timeInForce"],
        "price": message["price"],
        "amount": message["amount"],
        "nonce": message["nonce"],
        "expiry": signed.authorization.expiry_ms,
        "signature": dexd_crypto::hex_prefixed(&signed.authorization.signature),
    })
}

/// The last position of the auditor's copy in `directory`.
fn copy_position(directory: &std::path::Path) -> u64 {
    dexd_store::JournalReader::open(directory, 1)
        .ok()
        .and_then(|reader| {
            let mut reader: Box<dyn dexd_store::JournalRead> = Box::new(reader);
            reader.last_sequence().ok()
        })
        .unwrap_or(0)
}

fn main() {
    let commands: usize = std::env::var("DEXD_BENCH_COMMANDS").map_or(200_000, |text| text.parse().unwrap());
    let rate: u64 = std::env::var("DEXD_BENCH_RATE").map_or(2_000, |text| text.parse().unwrap());
    let seconds: u64 = std::env::var("DEXD_BENCH_SECONDS").map_or(10, |text| text.parse().unwrap());
    let runtime = workload::two_core_runtime();
    let data_dir = tempfile::tempdir().unwrap();
    let mut config = Config::embedded_default();
    config.limits.write_queue_capacity = 4_096;
    let (accepted, write_rate, messages) = runtime.block_on(async {
        let data_path = data_dir.path().to_path_buf();
        let venue_config = config.clone();
        let venue = workload::start_venue(venue_config, data_path).await;
        let chain = venue.chain(1).unwrap();
        let messages = chain.markets().messages.clone();
        let assets = chain.read_engine(|engine| engine.config().assets.len());
        let signing = Instant::now();
        let signed = tokio::task::block_in_place(|| signed_commands(&messages, assets, commands));
        println!(
            "signed {} commands in {:.1} s (the clients' work, not counted)",
            signed.iter().map(Vec::len).sum::<usize>(),
            signing.elapsed().as_secs_f64()
        );
        let (accepted, rate) = write(Arc::clone(&chain), signed).await;
        drop(chain);
        venue.close().await;
        (accepted, rate, messages)
    });
    println!(
        "phase 1, the venue: {accepted} commands accepted, {write_rate:.0} commands/s durable (signatures recovered)"
    );
    let data_path = data_dir.path().to_path_buf();
    runtime.block_on(async {
        let (base_url, _stop) = serve(config, data_path).await;
        let client = reqwest::Client::new();
        let end = journal_end::journal_end(&client, &base_url, 1).await;
        wait_for_state_hashes(&client, &base_url, end).await;
        let directory = tempfile::tempdir().unwrap();
        let started = Instant::now();
        let held = dexd::audit::auditor::run(audit_options(&base_url, directory.path(), true))
            .await
            .unwrap();
        let elapsed = started.elapsed().as_secs_f64();
        assert!(held, "the venue's journal checks");
        println!(
            "phase 2, the auditor: {end} commands checked in {elapsed:.2} s, {:.0} commands/s ({:.2}x the venue's rate)",
            end as f64 / elapsed,
            end as f64 / elapsed / write_rate
        );
        // The finished segments: their size, the first read (which renders the file) and a
        // second one (from the file).
        for segment in 0..(end / 10_000).min(3) {
            let url = format!("{base_url}/audit/journal?chainId=1&segment={segment}");
            let first = Instant::now();
            let bytes = client.get(&url).send().await.unwrap().bytes().await.unwrap().len();
            let first_ms = first.elapsed().as_secs_f64() * 1e3;
            let again = Instant::now();
            let same = client.get(&url).send().await.unwrap().bytes().await.unwrap().len();
            assert_eq!(same, bytes);
            println!(
                "segment {segment}: {bytes} bytes ({} a position), first read {first_ms:.0} ms (rendered into its file), again {:.0} ms (from the file)",
                bytes / 10_000,
                again.elapsed().as_secs_f64() * 1e3
            );
        }
        let mut samples = follow(&base_url, &messages, rate, seconds).await;
        samples.sort_unstable();
        let at = |quantile: f64| samples[((samples.len() - 1) as f64 * quantile) as usize];
        println!(
            "phase 3, following at {rate} commands/s offered: lag p50 {} p99 {} max {} commands ({} samples)",
            at(0.5),
            at(0.99),
            samples.last().unwrap(),
            samples.len()
        );
    });
}
