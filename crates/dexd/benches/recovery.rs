//! Recovery time: a journal that rebuilds into 1,000,000 resting orders after 1,000,000 trades
//! is written, then `Venue::start` is timed (journal read, replay through the engine).
//!
//! `cargo bench -p dexd --bench recovery`. `DEXD_RECOVERY_SCALE=0.1` runs a tenth of it.
//! The journal is marked as already projected, as it is after a clean run: the measurement is
//! the rebuild of the engine, which every start does.

use std::time::{Duration, Instant};

use dexd::config::Config;
use dexd::store::{self, Authorization, JournalEntry};
use dexd::venue::Venue;
use dexd_core::{
    Address, Amount, AssetIndex, Command, Direction, Engine, NewOrder, OrderId, OrderType, PairIndex, Price, Quantity,
    TimeInForce, TransferRequest,
};

/// The allocator the `dexd` binary uses, so that the benchmark measures what the service runs.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CHUNK: usize = 20_000;
const SELLERS: u64 = 5_000;

fn order(number: u64, account: Address, direction: Direction, ticks: u64, lots: u64) -> Command {
    let mut id = [0u8; 32];
    id[..8].copy_from_slice(&number.wrapping_mul(0x9e37_79b9_7f4a_7c15).to_be_bytes());
    id[24..].copy_from_slice(&number.to_be_bytes());
    Command::PlaceOrder(NewOrder {
        order_id: OrderId::from_bytes(id),
        client_order_id: None,
        account,
        pair: PairIndex(0),
        order_type: OrderType::Limit,
        direction,
        time_in_force: TimeInForce::GoodTillCancelled,
        post_only: false,
        price: Price::from_ticks(ticks),
        quantity: Quantity::from_lots(lots),
    })
}

fn main() {
    let scale: f64 = std::env::var("DEXD_RECOVERY_SCALE")
        .ok()
        .and_then(|text| text.parse().ok())
        .unwrap_or(1.0);
    let trades = (1_000_000.0 * scale) as u64;
    // Sells of 20 lots, buys of 10: the buys fill the oldest half of the sells completely and
    // leave `trades` sells resting.
    let sells = trades + trades / 2;
    let data_dir = tempfile::tempdir().unwrap();
    let config = Config::embedded_default();
    let engine_config = config.chain(1).unwrap().engine_config(&config.limits);
    // Sellers are spread so that none passes the open-order limit per account.
    let seller = |number: u64| {
        let mut bytes = [0x51u8; 20];
        bytes[12..].copy_from_slice(&(number % SELLERS).to_be_bytes());
        Address::from_bytes(bytes)
    };
    let buyer = Address::from_bytes([0xb1; 20]);
    let deposit = |account, asset| {
        Command::Deposit(TransferRequest {
            transfer_id: [1; 32],
            account,
            asset: AssetIndex(asset),
            amount: Amount::from_units(10u128.pow(30)),
        })
    };
    let mut commands: Vec<Command> = (0..SELLERS).map(|number| deposit(seller(number), 0)).collect();
    commands.push(deposit(buyer, 1));
    commands
        .extend((0..sells).map(|number| order(number, seller(number), Direction::Sell, 250_000 + number % 5_000, 20)));
    commands.extend((0..trades).map(|number| order(sells + number, buyer, Direction::Buy, 300_000, 10)));
    let written = Instant::now();
    {
        let (mut journal, _projector, _reader) = store::open(data_dir.path(), 1, Duration::from_secs(5)).unwrap();
        let mut engine = Engine::new(engine_config).unwrap();
        let mut events = Vec::new();
        let mut sequence = 0u64;
        for chunk in commands.chunks(CHUNK) {
            let entries: Vec<JournalEntry> = chunk
                .iter()
                .map(|command| {
                    sequence += 1;
                    events.clear();
                    engine
                        .execute(command.clone(), 1_700_000_000_000 + sequence, &mut events)
                        .expect("the generated journal is valid");
                    let authorization = match command {
                        Command::PlaceOrder(order) => Some(Authorization {
                            order_id: Some(order.order_id),
                            nonce: [0; 32],
                            expiry_ms: 0,
                            signature: [0; 65],
                            client_signed: false,
                        }),
                        _ => None,
                    };
                    JournalEntry {
                        sequence,
                        time_ms: 1_700_000_000_000 + sequence,
                        command: dexd::codec::encode_command(command),
                        authorization,
                    }
                })
                .collect();
            journal.append(&entries).unwrap();
        }
        // The history is marked as written, as after a clean stop: recovery is the replay alone.
        let database = rusqlite::Connection::open(store::history_path(data_dir.path(), 1)).unwrap();
        database
            .execute(
                "UPDATE meta SET value = ?1 WHERE key = 'projected_sequence'",
                [sequence.to_string()],
            )
            .unwrap();
        println!(
            "journal written: {sequence} commands ({} resting orders, {} trades expected) in {:.1} s",
            engine.resting_order_count(),
            trades,
            written.elapsed().as_secs_f64()
        );
    }
    let started = Instant::now();
    let venue = Venue::start(config, data_dir.path()).unwrap();
    let elapsed = started.elapsed();
    let chain = venue.chain(1).unwrap();
    let resting = chain.read_engine(|engine| engine.resting_order_count());
    println!(
        "recovery: {resting} resting orders after {trades} trades rebuilt in {:.2} s",
        elapsed.as_secs_f64()
    );
}
