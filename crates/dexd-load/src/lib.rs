//! dexd-load: an open-loop load generator for dexd, and the two limits to compare it with.
//!
//! Requests are sent on a fixed schedule (request `i` at `start + i / rate`), whatever the
//! answers do, and each latency is measured from the request's scheduled time, so a slow server
//! cannot hide its slowness by slowing the client (coordinated omission). Workloads: `place`
//! (limit orders around a mid price, about a third crossing), `mixed` (placements, cancels, book
//! and balance reads) and `read` (books and candles). The baselines: a do-nothing axum endpoint
//! on the same runtime (the HTTP limit) and the per-order cryptography alone (the key limit).
//! This crate does not start dexd: point it at a running server.

pub mod chart;
pub mod on_chain;
pub mod stream;

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::Bytes;
use dexd_core::{Direction, OrderType, TimeInForce};
use dexd_crypto::{checksummed, hex_prefixed, OrderMessage, PrivateKey, SigningDomain};
use hdrhistogram::Histogram;
use http_body_util::{BodyExt, Full};
use hyper::header::{CONTENT_TYPE, HOST};
use hyper::{Method, StatusCode};
use hyper_util::rt::TokioIo;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};

/// What to send.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Workload {
    /// Limit orders around a mid price.
    Place,
    /// Placements, cancels, book reads and balance reads.
    Mixed,
    /// Book and candle reads.
    Read,
    /// `GET /health`, the cheapest route.
    Health,
    /// `GET /health` against the do-nothing axum server of [`start_baseline_server`].
    AxumBaseline,
    /// Placements while stream connections watch the book and trades ([`stream`]).
    Stream,
}

impl Workload {
    /// Parses a workload name.
    pub fn parse(name: &str) -> Option<Workload> {
        match name {
            "place" => Some(Workload::Place),
            "mixed" => Some(Workload::Mixed),
            "read" => Some(Workload::Read),
            "health" => Some(Workload::Health),
            "axum-baseline" => Some(Workload::AxumBaseline),
            "stream" => Some(Workload::Stream),
            _ => None,
        }
    }

    /// The workload's name.
    pub fn name(self) -> &'static str {
        match self {
            Workload::Place => "place",
            Workload::Mixed => "mixed",
            Workload::Read => "read",
            Workload::Health => "health",
            Workload::AxumBaseline => "axum-baseline",
            Workload::Stream => "stream",
        }
    }
}

/// One run's settings.
#[derive(Clone, Debug)]
pub struct RunSettings {
    /// The server, e.g. `http://127.0.0.1:8080`.
    pub target: String,
    /// What to send.
    pub workload: Workload,
    /// Offered requests per second.
    pub rate_per_second: u64,
    /// How long to offer them.
    pub duration: Duration,
    /// How many accounts place orders.
    pub accounts: usize,
    /// The chain to trade on.
    pub chain_id: u64,
    /// Where to record when placements that traded were acknowledged (the stream workload).
    pub acks: Option<Arc<stream::AckLog>>,
}

/// One run's results.
#[derive(Clone, Debug)]
pub struct RunReport {
    /// The workload.
    pub workload: Workload,
    /// The offered rate.
    pub offered_per_second: u64,
    /// Answered requests per second.
    pub achieved_per_second: f64,
    /// Requests answered 2xx.
    pub succeeded: u64,
    /// Requests refused by the venue's rules (4xx), such as cancelling an order that filled
    /// meanwhile: correct answers, counted apart.
    pub rejected: u64,
    /// Requests answered 5xx, or not at all: errors.
    pub failed: u64,
    /// Latency percentiles in µs: p50, p90, p99, p99.9, max.
    pub latency_us: [u64; 5],
}

impl RunReport {
    /// The CSV header matching [`RunReport::csv_row`].
    pub const CSV_HEADER: &'static str =
        "workload,offered_per_second,achieved_per_second,succeeded,rejected,failed,p50_us,p90_us,p99_us,p999_us,max_us";

    /// One CSV row.
    pub fn csv_row(&self) -> String {
        let [p50, p90, p99, p999, max] = self.latency_us;
        format!(
            "{},{},{:.0},{},{},{},{p50},{p90},{p99},{p999},{max}",
            self.workload.name(),
            self.offered_per_second,
            self.achieved_per_second,
            self.succeeded,
            self.rejected,
            self.failed
        )
    }
}

struct Trader {
    key: String,
    address: String,
}

/// The most accounts a run may use; their keys are derived once, before any request, so the
/// generator does not spend the machine's cores on cryptography while it measures.
pub const MAX_ACCOUNTS: usize = 1_024;

fn trader(index: usize) -> &'static Trader {
    static TRADERS: std::sync::OnceLock<Vec<Trader>> = std::sync::OnceLock::new();
    &TRADERS.get_or_init(|| (0..MAX_ACCOUNTS).map(derive_trader).collect())[index % MAX_ACCOUNTS]
}

fn derive_trader(index: usize) -> Trader {
    let mut random = StdRng::seed_from_u64(0xd3d0 + index as u64);
    loop {
        let bytes: [u8; 32] = random.gen();
        let key = hex_prefixed(&bytes);
        if let Ok(parsed) = PrivateKey::parse(&key) {
            return Trader {
                address: checksummed(&parsed.address()),
                key,
            };
        }
    }
}

/// Funds every account generously, so that placements never fail for money: one deposit after
/// the other on one connection of the kind the runs use.
pub async fn fund_accounts(settings: &RunSettings) -> Result<(), String> {
    let authority = authority_of(&settings.target);
    let mut connection = connect(&authority).await?;
    for index in 0..settings.accounts {
        let trader = trader(index);
        for (symbol, quantity) in [("ETH", "1000000"), ("USDC", "10000000000")] {
            let body = json!({"chainId": settings.chain_id.to_string(), "from": trader.address, "symbol": symbol, "quantity": quantity, "privateKey": trader.key});
            let deposit = Request {
                is_post: true,
                path: "/portfolio/deposit".to_string(),
                body: Bytes::from(body.to_string()),
                placing_account: None,
            };
            let (status, _) = tokio::time::timeout(REQUEST_TIMEOUT, exchange(&mut connection, &authority, &deposit))
                .await
                .unwrap_or_else(|_| Err("timed out".to_string()))
                .map_err(|error| format!("deposit: {error}"))?;
            if !status.is_success() {
                return Err(format!("deposit answered {status}"));
            }
        }
    }
    Ok(())
}

/// The mid price of the `place` workload, in cents of USDC (2,500.00).
const MID_PRICE_CENTS: i64 = 250_000;

/// Keep-alive connections a run opens before its first request, each worked by a task of its
/// own. Past this many requests in flight, requests wait in [`MAX_QUEUED_REQUESTS`] and their
/// latency, counted from their scheduled time, shows the wait.
pub const CONNECTIONS: usize = 512;

/// Requests scheduled but not yet taken by a connection. When it is full the scheduler waits;
/// the requests keep their scheduled times, so the wait still shows in their latency.
pub const MAX_QUEUED_REQUESTS: usize = 65_536;

/// How long one request may take before it counts as failed and its connection is replaced.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(30);

/// One request to send.
struct Request {
    is_post: bool,
    path: String,
    body: Bytes,
    /// The account placing an order, so that a later cancel can use its key.
    placing_account: Option<usize>,
}

/// A request and the moment the schedule says it leaves.
struct Job {
    scheduled: Instant,
    request: Request,
}

/// Orders placed by the mixed workload that are still open, for its cancels: (account, id).
type RecentOrders = std::sync::Mutex<Vec<(usize, String)>>;

/// The most recent orders the mixed workload remembers for its cancels.
const MAX_RECENT_ORDERS: usize = 1_000;

/// The body of a placement. Written with `format!` rather than through a JSON value: every field
/// is ASCII that needs no escaping (digits, a fixed symbol, a hex key), and the generator's CPU
/// is taken from the server it measures, on the same cores.
fn placement_body(chain: u64, buy: bool, price_cents: i64, amount_hundredths: u32, key: &str) -> Bytes {
    let direction = if buy { Direction::Buy } else { Direction::Sell }.wire_name();
    Bytes::from(format!(
        "{{\"chainId\":\"{chain}\",\"symbol\":\"ETH/USDC\",\"type\":\"limit\",\"direction\":\"{direction}\",\
         \"price\":\"{}.{:02}\",\"amount\":\"0.0{amount_hundredths}\",\"privateKey\":\"{key}\"}}",
        price_cents / 100,
        price_cents % 100
    ))
}

/// The next request of a workload.
fn request(settings: &RunSettings, random: &mut StdRng, recent_orders: &RecentOrders) -> Request {
    let get = |path: String| Request {
        is_post: false,
        path,
        body: Bytes::new(),
        placing_account: None,
    };
    let chain = settings.chain_id;
    let place = |random: &mut StdRng| {
        let index = random.gen_range(0..settings.accounts);
        let buy = random.gen_bool(0.5);
        // A third cross: buys up to 10 ticks above the mid, sells down to 10 below.
        let offset = random.gen_range(-20i64..10);
        let price = if buy {
            MID_PRICE_CENTS + offset
        } else {
            MID_PRICE_CENTS - offset
        };
        Request {
            is_post: true,
            path: "/order/addOrder".to_string(),
            body: placement_body(chain, buy, price, random.gen_range(1..10), &trader(index).key),
            placing_account: Some(index),
        }
    };
    let book = |random: &mut StdRng| {
        let side = if random.gen_bool(0.5) {
            "buyOrderbooks"
        } else {
            "sellOrderbooks"
        };
        get(format!("/order/{side}?chainId={chain}&pair=ETH/USDC&depth=20"))
    };
    match settings.workload {
        Workload::Health | Workload::AxumBaseline => get("/health".to_string()),
        Workload::Place | Workload::Stream => place(random),
        Workload::Read => {
            if random.gen_bool(0.5) {
                book(random)
            } else {
                get(format!(
                    "/order/tradesOHCL?chainId={chain}&pair=ETH/USDC&interval=1m&limit=60"
                ))
            }
        }
        Workload::Mixed => match random.gen_range(0..100) {
            0..50 => place(random),
            50..70 if !recent_orders.lock().expect("not poisoned").is_empty() => {
                let (index, order_id) = {
                    let mut orders = recent_orders.lock().expect("not poisoned");
                    let position = random.gen_range(0..orders.len());
                    orders.swap_remove(position)
                };
                let body = json!({"chainId": chain.to_string(), "symbol": "ETH/USDC", "orderId": order_id, "privateKey": trader(index).key});
                Request {
                    is_post: true,
                    path: "/order/cancelOrder".to_string(),
                    body: Bytes::from(body.to_string()),
                    placing_account: None,
                }
            }
            50..85 => book(random),
            _ => {
                let address = &trader(random.gen_range(0..settings.accounts)).address;
                get(format!("/account/assetBalances?chainId={chain}&account={address}"))
            }
        },
    }
}

/// What one connection's task counted.
struct Tally {
    histogram: Histogram<u64>,
    succeeded: u64,
    rejected: u64,
    failed: u64,
}

impl Tally {
    fn new() -> Tally {
        Tally {
            histogram: Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).expect("bounds are valid"),
            succeeded: 0,
            rejected: 0,
            failed: 0,
        }
    }

    fn add(&mut self, other: &Tally) {
        self.histogram.add(&other.histogram).expect("same bounds");
        self.succeeded += other.succeeded;
        self.rejected += other.rejected;
        self.failed += other.failed;
    }
}

/// `host:port` of an `http://host:port` target.
fn authority_of(target: &str) -> String {
    target.trim_start_matches("http://").trim_end_matches('/').to_string()
}

type Connection = hyper::client::conn::http1::SendRequest<Full<Bytes>>;

/// One GET of `path_and_query` on its own connection: the status and the JSON body.
pub(crate) async fn get_json(target: &str, path_and_query: &str) -> Result<(u16, Value), String> {
    let authority = authority_of(target);
    let mut connection = connect(&authority).await?;
    let path = path_and_query.trim_start_matches(target).to_string();
    let request = Request {
        is_post: false,
        path,
        body: Bytes::new(),
        placing_account: None,
    };
    let (status, body) = tokio::time::timeout(REQUEST_TIMEOUT, exchange(&mut connection, &authority, &request))
        .await
        .unwrap_or_else(|_| Err("timed out".to_string()))?;
    let body = serde_json::from_slice(&body).map_err(|error| format!("an answer that is not JSON: {error}"))?;
    Ok((status.as_u16(), body))
}

/// Opens one keep-alive HTTP/1.1 connection; its driver runs as a task of its own.
async fn connect(authority: &str) -> Result<Connection, String> {
    let stream = tokio::net::TcpStream::connect(authority)
        .await
        .map_err(|error| format!("connect to {authority}: {error}"))?;
    stream.set_nodelay(true).map_err(|error| error.to_string())?;
    let (sender, driver) = hyper::client::conn::http1::handshake(TokioIo::new(stream))
        .await
        .map_err(|error| error.to_string())?;
    tokio::spawn(driver);
    Ok(sender)
}

/// Sends one request on `connection` and reads the whole answer (so the connection can be
/// reused): its status and body.
async fn exchange(
    connection: &mut Connection,
    authority: &str,
    request: &Request,
) -> Result<(StatusCode, Bytes), String> {
    connection.ready().await.map_err(|error| error.to_string())?;
    let outgoing = hyper::Request::builder()
        .method(if request.is_post { Method::POST } else { Method::GET })
        .uri(&request.path)
        .header(HOST, authority)
        .header(CONTENT_TYPE, "application/json")
        .body(Full::new(request.body.clone()))
        .map_err(|error| error.to_string())?;
    let response = connection
        .send_request(outgoing)
        .await
        .map_err(|error| error.to_string())?;
    let status = response.status();
    let body = response
        .into_body()
        .collect()
        .await
        .map_err(|error| error.to_string())?
        .to_bytes();
    Ok((status, body))
}

/// Works one connection: takes the next scheduled request, sends it, counts the answer, until
/// the schedule ends. A connection that fails is replaced before the next request.
async fn work_connection(
    authority: String,
    mut connection: Option<Connection>,
    jobs: async_channel::Receiver<Job>,
    recent_orders: Arc<RecentOrders>,
    remembers_orders: bool,
    acks: Option<Arc<stream::AckLog>>,
) -> Tally {
    let mut tally = Tally::new();
    while let Ok(Job { scheduled, request }) = jobs.recv().await {
        if connection.as_ref().is_none_or(|sender| sender.is_closed()) {
            connection = connect(&authority).await.ok();
        }
        let answer = match connection.as_mut() {
            Some(sender) => tokio::time::timeout(REQUEST_TIMEOUT, exchange(sender, &authority, &request))
                .await
                .unwrap_or_else(|_| Err("timed out".to_string())),
            None => Err("no connection".to_string()),
        };
        match answer {
            Ok((status, _)) if status.is_client_error() => tally.rejected += 1,
            Ok((status, body)) if status.is_success() => {
                // Only the mixed workload cancels what it placed; other workloads do not parse.
                if let Some(account) = request.placing_account.filter(|_| remembers_orders) {
                    remember_open_order(&recent_orders, account, &body);
                }
                if let (Some(acks), Some(_)) = (&acks, request.placing_account) {
                    acks.record(&body);
                }
                tally.succeeded += 1;
            }
            Ok(_) => tally.failed += 1,
            Err(_) => {
                tally.failed += 1;
                connection = None;
            }
        }
        let latency_us = scheduled.elapsed().as_micros().clamp(1, 120_000_000) as u64;
        tally.histogram.record(latency_us).expect("latency within bounds");
    }
    tally
}

fn remember_open_order(recent_orders: &RecentOrders, account: usize, body: &[u8]) {
    let Ok(value) = serde_json::from_slice::<Value>(body) else {
        return;
    };
    if value["order"]["status"] == "open" {
        let mut orders = recent_orders.lock().expect("not poisoned");
        orders.push((
            account,
            value["order"]["orderId"].as_str().unwrap_or_default().to_string(),
        ));
        let excess = orders.len().saturating_sub(MAX_RECENT_ORDERS);
        orders.drain(..excess);
    }
}

/// Offers the workload at the fixed rate for the duration and reports what came back.
///
/// [`CONNECTIONS`] connections are opened first. Then request `i` is queued at
/// `start + i / rate` (the scheduler wakes every millisecond or so and queues every request that
/// is due), whatever the answers do; each connection's task takes the next queued request as soon
/// as its previous answer is in, and every latency counts from the scheduled moment.
pub async fn run(settings: RunSettings) -> RunReport {
    let authority = authority_of(&settings.target);
    let rate = settings.rate_per_second.max(1);
    let interval = Duration::from_secs_f64(1.0 / rate as f64);
    let total = (settings.duration.as_secs_f64() * settings.rate_per_second as f64) as u64;
    let recent_orders: Arc<RecentOrders> = Arc::default();
    let remembers_orders = settings.workload == Workload::Mixed;
    let (queue, jobs) = async_channel::bounded::<Job>(MAX_QUEUED_REQUESTS);
    let mut workers = Vec::with_capacity(CONNECTIONS);
    for _ in 0..CONNECTIONS {
        let connection = connect(&authority).await.ok();
        workers.push(tokio::spawn(work_connection(
            authority.clone(),
            connection,
            jobs.clone(),
            recent_orders.clone(),
            remembers_orders,
            settings.acks.clone(),
        )));
    }
    drop(jobs);
    let mut random = StdRng::seed_from_u64(7);
    let started = Instant::now();
    let mut queued = 0u64;
    while queued < total {
        let scheduled = started + interval.mul_f64(queued as f64);
        tokio::time::sleep_until(scheduled.into()).await;
        let due = ((started.elapsed().as_secs_f64() * rate as f64) as u64 + 1).min(total);
        while queued < due {
            let scheduled = started + interval.mul_f64(queued as f64);
            let request = request(&settings, &mut random, &recent_orders);
            if queue.send(Job { scheduled, request }).await.is_err() {
                break;
            }
            queued += 1;
        }
    }
    queue.close();
    let mut tally = Tally::new();
    for worker in workers {
        if let Ok(worker_tally) = worker.await {
            tally.add(&worker_tally);
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    RunReport {
        workload: settings.workload,
        offered_per_second: settings.rate_per_second,
        achieved_per_second: tally.succeeded as f64 / elapsed,
        succeeded: tally.succeeded,
        rejected: tally.rejected,
        failed: tally.failed,
        latency_us: [
            tally.histogram.value_at_quantile(0.5),
            tally.histogram.value_at_quantile(0.9),
            tally.histogram.value_at_quantile(0.99),
            tally.histogram.value_at_quantile(0.999),
            tally.histogram.max(),
        ],
    }
}

/// A do-nothing axum server, for the HTTP limit, on a runtime of its own built as dexd builds its
/// own (multi-threaded, one worker per core): the generator runs on a single thread, which must
/// not be the server's too. Stopped when dropped.
pub struct BaselineServer {
    runtime: Option<tokio::runtime::Runtime>,
    /// `http://127.0.0.1:port`.
    pub address: String,
}

impl Drop for BaselineServer {
    fn drop(&mut self) {
        if let Some(runtime) = self.runtime.take() {
            // Also allowed from inside another runtime, unlike dropping it.
            runtime.shutdown_background();
        }
    }
}

/// Starts the do-nothing axum server on a loopback port.
pub fn start_baseline_server() -> BaselineServer {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .enable_all()
        .build()
        .expect("the baseline's runtime starts");
    let listener = std::net::TcpListener::bind("127.0.0.1:0").expect("a loopback port is free");
    listener.set_nonblocking(true).expect("the socket can be non-blocking");
    let address = format!("http://{}", listener.local_addr().expect("bound"));
    runtime.spawn(async move {
        let listener = tokio::net::TcpListener::from_std(listener).expect("a tokio listener");
        let router = axum::Router::new().route("/health", axum::routing::get(|| async { "{\"status\":\"ok\"}" }));
        axum::serve(listener, router).await
    });
    BaselineServer {
        runtime: Some(runtime),
        address,
    }
}

/// A counter as a uint256 word.
fn alloy_word(count: u64) -> [u8; 32] {
    let mut word = [0u8; 32];
    word[24..].copy_from_slice(&count.to_be_bytes());
    word
}

/// The key limit: orders per second that one core can derive an address for and sign, as the
/// service does for each order (address derivation plus EIP-712 digest and signature).
pub fn key_limit_per_core(duration: Duration) -> f64 {
    crypto_limit_per_core(duration, true)
}

/// The signing limit: orders per second that one core can sign (EIP-712 digest and signature)
/// with a key already parsed and its address derived, as a batch does for all but its first.
pub fn signing_limit_per_core(duration: Duration) -> f64 {
    crypto_limit_per_core(duration, false)
}

/// The accounts' keys and addresses, a line each (`key address`), for a client of another
/// project to place orders with (the batch benchmark's wrk script).
pub fn account_lines(accounts: usize) -> String {
    (0..accounts)
        .map(|index| format!("{} {}\n", trader(index).key, trader(index).address))
        .collect()
}

fn crypto_limit_per_core(duration: Duration, derive_each: bool) -> f64 {
    let domain = SigningDomain::new(1, dexd_core::Address::from_bytes([0xde; 20]));
    let started = Instant::now();
    let mut count = 0u64;
    let parsed = PrivateKey::parse(&trader(0).key).expect("a valid key");
    let parsed_address = parsed.address();
    while started.elapsed() < duration {
        let derived;
        let (key, account) = if derive_each {
            derived = PrivateKey::parse(&trader((count % 64) as usize).key).expect("a valid key");
            let account = derived.address();
            (&derived, account)
        } else {
            (&parsed, parsed_address)
        };
        let message = OrderMessage {
            account,
            symbol: "ETH/USDC".into(),
            order_type: OrderType::Limit.wire_name().into(),
            direction: Direction::Buy.wire_name().into(),
            time_in_force: TimeInForce::GoodTillCancelled.wire_name().into(),
            post_only: false,
            price: "2500".into(),
            amount: "0.01".into(),
            client_order_id: String::new(),
            nonce: alloy_word(count),
            expiry_ms: 0,
            trigger_price: String::new(),
            trigger_condition: String::new(),
            oco_group: String::new(),
            expires_at_ms: 0,
            without_conditions: false,
        };
        std::hint::black_box(key.sign_digest(domain.order_digest(&message)));
        count += 1;
    }
    count as f64 / started.elapsed().as_secs_f64()
}
