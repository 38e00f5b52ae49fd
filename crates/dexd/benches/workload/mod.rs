//! The placement stream shared by the durable and projector benchmarks: limit orders of random
//! ids around a mid price, about a third of them crossing the touch; the order and
//! authorization builders the recovery benchmark writes its journal with; and the runtime and
//! venue start the in-process benchmarks share.

use dexd_core::{Address, Command, Direction, NewOrder, OrderId, OrderType, PairIndex, Price, Quantity, TimeInForce};
use dexd_store::Authorization;
use rand::rngs::StdRng;
use rand::Rng;

/// The mid price the orders are placed around, in ticks.
pub const MID_PRICE_TICKS: u64 = 250_000;

/// A random limit order of `account`, with the venue's (unsigned) authorization of it, for now.
pub fn place(random: &mut StdRng, account: Address) -> (Command, Authorization) {
    let order_id = OrderId::from_bytes(random.gen());
    let direction = if random.gen_bool(0.5) {
        Direction::Buy
    } else {
        Direction::Sell
    };
    // About a third of the orders cross the touch.
    let offset = random.gen_range(0..30u64);
    let price = match direction {
        Direction::Buy => MID_PRICE_TICKS + 10 - offset,
        Direction::Sell => MID_PRICE_TICKS - 10 + offset,
    };
    let lots = random.gen_range(10..200);
    (
        limit_order(order_id, account, direction, price, lots),
        venue_authorization(order_id, dexd_store::now_ms() + 2_500),
    )
}

/// A good-till-cancelled limit order on the first pair.
pub fn limit_order(order_id: OrderId, account: Address, direction: Direction, price_ticks: u64, lots: u64) -> Command {
    Command::PlaceOrder(NewOrder {
        order_id,
        client_order_id: None,
        account,
        pair: PairIndex(0),
        order_type: OrderType::Limit,
        direction,
        time_in_force: TimeInForce::GoodTillCancelled,
        post_only: false,
        price: Price::from_ticks(price_ticks),
        quantity: Quantity::from_lots(lots),
        conditions: Default::default(),
    })
}

/// The authorization journaled beside a placement: the benchmarks sign nothing (signing is
/// measured on its own), so its signature is zero; its nonce is the order id and its expiry
/// `expiry_ms` (within the venue's window of the command's time), as the venue's own are.
pub fn venue_authorization(order_id: OrderId, expiry_ms: u64) -> Authorization {
    Authorization {
        order_id: Some(order_id),
        nonce: *order_id.as_bytes(),
        expiry_ms,
        signature: [0; 65],
        client_signed: false,
        batch: None,
        claims_batch_nonce: false,
        approved_at_block: None,
    }
}

/// The benchmarks' runtime: two worker threads, the machine's two cores.
#[allow(dead_code)]
pub fn two_core_runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap()
}

/// Starts a venue on `data_dir` off the runtime's threads (opening runs synchronous clients).
#[allow(dead_code)]
pub async fn start_venue(config: dexd_venue::config::Config, data_dir: std::path::PathBuf) -> dexd_venue::Venue {
    tokio::task::spawn_blocking(move || dexd_venue::Venue::start(config, &data_dir))
        .await
        .unwrap()
        .unwrap()
}
