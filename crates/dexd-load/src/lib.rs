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

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use dexd::crypto::{checksummed, OrderMessage, PrivateKey, SigningDomain};
use hdrhistogram::Histogram;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use serde_json::{json, Value};
use tokio::sync::Mutex;

/// The most requests in flight at once; past it, a request waits for a slot and its latency,
/// counted from its scheduled time, shows the wait.
pub const MAX_IN_FLIGHT: usize = 4_096;

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
}

impl Workload {
    /// Parses a workload name.
    pub fn parse(name: &str) -> Option<Workload> {
        match name {
            "place" => Some(Workload::Place),
            "mixed" => Some(Workload::Mixed),
            "read" => Some(Workload::Read),
            "health" => Some(Workload::Health),
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
        let key = format!("0x{}", hex_string(&bytes));
        if let Ok(parsed) = PrivateKey::parse(&key) {
            return Trader {
                address: checksummed(&parsed.address()),
                key,
            };
        }
    }
}

fn hex_string(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}

fn http_client() -> reqwest::Client {
    reqwest::Client::builder()
        .pool_max_idle_per_host(MAX_IN_FLIGHT)
        .timeout(Duration::from_secs(30))
        .build()
        .expect("the HTTP client builds")
}

/// Funds every account generously, so that placements never fail for money.
pub async fn fund_accounts(settings: &RunSettings) -> Result<(), String> {
    let http = http_client();
    for index in 0..settings.accounts {
        let trader = trader(index);
        for (symbol, quantity) in [("ETH", "1000000"), ("USDC", "10000000000")] {
            let body = json!({"chainId": settings.chain_id.to_string(), "from": trader.address, "symbol": symbol, "quantity": quantity, "privateKey": trader.key});
            let response = http
                .post(format!("{}/portfolio/deposit", settings.target))
                .json(&body)
                .send()
                .await
                .map_err(|error| format!("deposit: {error}"))?;
            if !response.status().is_success() {
                return Err(format!("deposit answered {}", response.status()));
            }
        }
    }
    Ok(())
}

/// The mid price of the `place` workload, in cents of USDC (2,500.00).
const MID_PRICE_CENTS: i64 = 250_000;

/// One request to send.
struct Request {
    is_post: bool,
    path: String,
    body: Value,
    /// The account placing an order, so that a later cancel can use its key.
    placing_account: Option<usize>,
}

/// The next request of a workload.
fn request(
    settings: &RunSettings,
    random: &mut StdRng,
    recent_orders: &std::sync::Mutex<Vec<(usize, String)>>,
) -> Request {
    let get = |path: String| Request {
        is_post: false,
        path,
        body: Value::Null,
        placing_account: None,
    };
    let chain = settings.chain_id.to_string();
    let place = |random: &mut StdRng| {
        let index = random.gen_range(0..settings.accounts);
        let trader = trader(index);
        let buy = random.gen_bool(0.5);
        // A third cross: buys up to 10 ticks above the mid, sells down to 10 below.
        let offset = random.gen_range(-20i64..10);
        let price = if buy {
            MID_PRICE_CENTS + offset
        } else {
            MID_PRICE_CENTS - offset
        };
        let body = json!({
            "chainId": chain, "symbol": "ETH/USDC", "type": "limit", "direction": if buy { "buy" } else { "sell" },
            "price": format!("{}.{:02}", price / 100, price % 100), "amount": format!("0.0{}", random.gen_range(1..10)),
            "privateKey": trader.key,
        });
        Request {
            is_post: true,
            path: "/order/addOrder".to_string(),
            body,
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
        Workload::Place => place(random),
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
                let body = json!({"chainId": chain, "symbol": "ETH/USDC", "orderId": order_id, "privateKey": trader(index).key});
                Request {
                    is_post: true,
                    path: "/order/cancelOrder".to_string(),
                    body,
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

/// Offers the workload at the fixed rate for the duration and reports what came back.
pub async fn run(settings: RunSettings) -> RunReport {
    let http = http_client();
    let interval = Duration::from_secs_f64(1.0 / settings.rate_per_second.max(1) as f64);
    let total = (settings.duration.as_secs_f64() * settings.rate_per_second as f64) as u64;
    let histogram = Arc::new(Mutex::new(
        Histogram::<u64>::new_with_bounds(1, 120_000_000, 3).expect("bounds are valid"),
    ));
    let succeeded = Arc::new(AtomicU64::new(0));
    let rejected = Arc::new(AtomicU64::new(0));
    let failed = Arc::new(AtomicU64::new(0));
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_IN_FLIGHT));
    let recent_orders: Arc<std::sync::Mutex<Vec<(usize, String)>>> = Arc::default();
    let mut random = StdRng::seed_from_u64(7);
    let remembers_orders = settings.workload == Workload::Mixed;
    let started = Instant::now();
    let mut tasks = Vec::with_capacity(total as usize);
    for number in 0..total {
        let scheduled = started + interval.mul_f64(number as f64);
        tokio::time::sleep_until(scheduled.into()).await;
        let Request {
            is_post,
            path,
            body,
            placing_account,
        } = request(&settings, &mut random, &recent_orders);
        let counters = (succeeded.clone(), rejected.clone(), failed.clone());
        let (http, histogram, slots, recent_orders) =
            (http.clone(), histogram.clone(), slots.clone(), recent_orders.clone());
        let url = format!("{}{path}", settings.target);
        tasks.push(tokio::spawn(async move {
            let _slot = slots.acquire().await.expect("the semaphore stays open");
            let answer = if is_post {
                http.post(&url).json(&body).send().await
            } else {
                http.get(&url).send().await
            };
            let outcome = match answer {
                Ok(response) if response.status().is_client_error() => {
                    // Read to the end, so that the connection goes back to the pool.
                    let _ = response.bytes().await;
                    &counters.1
                }
                Ok(response) if response.status().is_success() => {
                    // Only the mixed workload cancels what it placed; other workloads read the
                    // body without parsing it. This process shares the server's cores: with
                    // this and mimalloc, its CPU per placement at 4,000/s fell from about
                    // 115 µs to 90 µs.
                    if let Some(account) = placing_account.filter(|_| remembers_orders) {
                        if let Ok(value) = response.json::<Value>().await {
                            if value["order"]["status"] == "open" {
                                let mut orders = recent_orders.lock().expect("not poisoned");
                                orders.push((
                                    account,
                                    value["order"]["orderId"].as_str().unwrap_or_default().to_string(),
                                ));
                                let excess = orders.len().saturating_sub(1_000);
                                orders.drain(..excess);
                            }
                        }
                    } else {
                        let _ = response.bytes().await;
                    }
                    &counters.0
                }
                _ => &counters.2,
            };
            let latency = scheduled.elapsed().as_micros().max(1) as u64;
            histogram
                .lock()
                .await
                .record(latency.min(120_000_000))
                .expect("latency within bounds");
            outcome.fetch_add(1, Ordering::Relaxed);
        }));
    }
    for task in tasks {
        let _ = task.await;
    }
    let elapsed = started.elapsed().as_secs_f64();
    let histogram = histogram.lock().await;
    let succeeded = succeeded.load(Ordering::Relaxed);
    RunReport {
        workload: settings.workload,
        offered_per_second: settings.rate_per_second,
        achieved_per_second: succeeded as f64 / elapsed,
        succeeded,
        rejected: rejected.load(Ordering::Relaxed),
        failed: failed.load(Ordering::Relaxed),
        latency_us: [
            histogram.value_at_quantile(0.5),
            histogram.value_at_quantile(0.9),
            histogram.value_at_quantile(0.99),
            histogram.value_at_quantile(0.999),
            histogram.max(),
        ],
    }
}

/// Starts a do-nothing axum server on the same runtime settings, for the HTTP limit; returns its
/// address.
pub async fn start_baseline_server() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port is free");
    let address = listener.local_addr().expect("bound");
    let router = axum::Router::new().route("/health", axum::routing::get(|| async { "{\"status\":\"ok\"}" }));
    tokio::spawn(async move { axum::serve(listener, router).await });
    format!("http://{address}")
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
    let domain = SigningDomain::new(1, dexd_core::Address::from_bytes([0xde; 20]));
    let started = Instant::now();
    let mut count = 0u64;
    while started.elapsed() < duration {
        let key = PrivateKey::parse(&trader((count % 64) as usize).key).expect("a valid key");
        let message = OrderMessage {
            account: key.address(),
            symbol: "ETH/USDC".into(),
            order_type: "limit".into(),
            direction: "buy".into(),
            time_in_force: "GTC".into(),
            post_only: false,
            price: "2500".into(),
            amount: "0.01".into(),
            client_order_id: String::new(),
            nonce: alloy_word(count),
            expiry_ms: 0,
        };
        std::hint::black_box(key.sign_digest(domain.order_digest(&message)));
        count += 1;
    }
    count as f64 / started.elapsed().as_secs_f64()
}
