//! Snapshots: a start from the newest snapshot and the journal after it gives exactly the state a
//! replay of the whole journal gives (state hash, open orders with their signatures, and the
//! behaviour of the next commands); a damaged, truncated, wrong-version or foreign snapshot is
//! skipped with a warning, falling back to an older one or to the whole journal, and the state is
//! still exact. A pair the operator listed at run time comes back from a snapshot taken after it,
//! with its orders.

use crate::common;

use std::path::Path;
use std::sync::atomic::Ordering;
use std::time::Duration;

use dexd_core::{
    Address, Amount, AssetIndex, Command, Decimal, Direction, NewOrder, OrderId, OrderType, PairIndex, TimeInForce,
    TransferRequest,
};
use dexd_store::snapshots::{list_snapshots, snapshot_directory};
use dexd_store::WriteError;
use dexd_store::{Authorization, StoredOrder};
use dexd_venue::config::Config;
use dexd_venue::{Chain, Venue};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const ACCOUNTS: u8 = 6;

fn account(number: u8) -> Address {
    Address::from_bytes([number; 20])
}

fn config(every_commands: u64) -> Config {
    let mut config = Config::embedded_default();
    config.snapshots.every_commands = every_commands;
    config.snapshots.check_interval_ms = 5;
    config
}

fn order_id(number: u64) -> OrderId {
    let mut bytes = [0x0d; 32];
    bytes[24..].copy_from_slice(&number.to_be_bytes());
    OrderId::from_bytes(bytes)
}

fn authorization(number: u64) -> Option<Authorization> {
    let mut nonce = [0u8; 32];
    nonce[24..].copy_from_slice(&number.to_be_bytes());
    Some(Authorization {
        order_id: Some(order_id(number)),
        nonce,
        expiry_ms: dexd_store::now_ms() + 2_500,
        signature: [(number % 251) as u8; 65],
        client_signed: false,
        batch: None,
        claims_batch_nonce: false,
        approved_at_block: None,
    })
}

/// A seeded stream of commands: deposits, crossing and resting limit orders, cancels.
struct Traffic {
    random: StdRng,
    next_order: u64,
    next_deposit: u8,
    placed: Vec<(u8, u64)>,
}

impl Traffic {
    fn new(seed: u64) -> Traffic {
        Traffic {
            random: StdRng::seed_from_u64(seed),
            next_order: 1,
            next_deposit: 1,
            placed: Vec::new(),
        }
    }

    fn next(&mut self, chain: &Chain) -> (Command, Option<Authorization>) {
        let roll = self.random.gen_range(0..100);
        let owner = self.random.gen_range(1..=ACCOUNTS);
        if roll < 8 || self.next_deposit <= ACCOUNTS * 2 {
            let (number, asset, units) = if self.next_deposit <= ACCOUNTS * 2 {
                let number = self.next_deposit;
                (
                    number,
                    u16::from(number % 2),
                    if number.is_multiple_of(2) {
                        10u128.pow(21)
                    } else {
                        10u128.pow(12)
                    },
                )
            } else {
                (self.next_deposit, 0, 10u128.pow(18))
            };
            let account_number = if self.next_deposit <= ACCOUNTS * 2 {
                number.div_ceil(2)
            } else {
                owner
            };
            self.next_deposit = self.next_deposit.wrapping_add(1).max(ACCOUNTS * 2 + 1);
            let mut transfer_id = [0u8; 32];
            transfer_id[0] = number;
            transfer_id[1..9].copy_from_slice(&self.random.gen::<u64>().to_be_bytes());
            return (
                Command::Deposit(TransferRequest {
                    transfer_id,
                    account: account(account_number),
                    asset: AssetIndex(asset),
                    amount: Amount::from_units(units),
                }),
                None,
            );
        }
        if roll < 25 && !self.placed.is_empty() {
            let (owner, number) = self.placed[self.random.gen_range(0..self.placed.len())];
            return (
                Command::CancelOrder {
                    account: account(owner),
                    order_id: order_id(number),
                    pair: None,
                },
                None,
            );
        }
        let markets = chain.markets();
        let spec = &markets.config.pair_config(PairIndex(0)).spec;
        let number = self.next_order;
        self.next_order += 1;
        self.placed.push((owner, number));
        let price = format!("{}", 2_490 + self.random.gen_range(0..20));
        let amount = format!("0.{}", self.random.gen_range(1..10));
        let command = Command::PlaceOrder(NewOrder {
            order_id: order_id(number),
            client_order_id: self.random.gen_bool(0.3).then(|| format!("c{number}")),
            account: account(owner),
            pair: PairIndex(0),
            order_type: OrderType::Limit,
            direction: if self.random.gen_bool(0.5) {
                Direction::Buy
            } else {
                Direction::Sell
            },
            time_in_force: TimeInForce::GoodTillCancelled,
            post_only: false,
            price: Some(spec.price_from_decimal(Decimal::parse(&price).unwrap()).unwrap()),
            quantity: spec.quantity_from_decimal(Decimal::parse(&amount).unwrap()).unwrap(),
            conditions: Default::default(),
        });
        (command, authorization(number))
    }

    /// Runs `count` commands; returns each one's outcome (events, or the rejection).
    async fn run(&mut self, chain: &Chain, count: usize) -> Vec<Result<dexd_store::Events, WriteError>> {
        let mut outcomes = Vec::with_capacity(count);
        for _ in 0..count {
            let (command, authorization) = self.next(chain);
            outcomes.push(chain.submit(command, authorization).await);
        }
        outcomes
    }
}

/// Every account's open orders as the history holds them, with their signatures, once the
/// history holds every acknowledged command.
async fn open_orders(chain: &Chain) -> Vec<Vec<(String, [u8; 32], u64, Vec<u8>)>> {
    chain.history().await.expect("the history catches up");
    (1..=ACCOUNTS)
        .map(|number| {
            let (orders, _) = chain.open_orders_at_mark(&account(number));
            orders
                .into_iter()
                .map(|order: StoredOrder| {
                    (
                        format!("{:?}", order.record),
                        order.nonce,
                        order.expiry_ms,
                        order.signature.to_vec(),
                    )
                })
                .collect()
        })
        .collect()
}

async fn wait_for_snapshots(chain: &Chain, at_least: u64) {
    for _ in 0..2_000 {
        if chain.snapshots.written_total.load(Ordering::Acquire) >= at_least {
            return;
        }
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    panic!("fewer than {at_least} snapshots were written in 10 s");
}

/// A data directory with a journal of 460 commands, snapshots written along the way, and a tail
/// after the newest; returns the state hash and open orders before the stop.
async fn prepared(data_dir: &Path) -> ([u8; 32], Vec<Vec<(String, [u8; 32], u64, Vec<u8>)>>) {
    let venue = Venue::start(config(100), data_dir).unwrap();
    let chain = venue.chain(1).unwrap();
    let mut traffic = Traffic::new(7);
    for round in 1..=4u64 {
        // Rejected commands (cancels of closed orders, orders beyond a balance) are not
        // journaled: run until the journal has grown enough for the next snapshot.
        let mut batches = 0;
        while chain.snapshots.written_total.load(Ordering::Acquire) < round {
            traffic.run(&chain, 20).await;
            batches += 1;
            assert!(batches < 100, "no snapshot after 2,000 commands");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        wait_for_snapshots(&chain, round).await;
    }
    // The tail after the newest snapshot.
    traffic.run(&chain, 20).await;
    let state = (chain.state_hash(), open_orders(&chain).await);
    assert!(
        chain.read_engine(|engine| engine.resting_order_count()) > 10,
        "the traffic leaves orders resting"
    );
    venue.close().await;
    state
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_start_from_a_snapshot_has_the_state_of_the_whole_journal_and_behaves_the_same() {
    let original = tempfile::tempdir().unwrap();
    let (hash, orders) = prepared(original.path()).await;
    let snapshots = list_snapshots(&snapshot_directory(original.path(), 1)).unwrap();
    assert_eq!(snapshots.len(), 2, "two snapshots are kept: {snapshots:?}");
    let copy = tempfile::tempdir().unwrap();
    common::copy_directory(original.path(), copy.path());

    let from_snapshot = Venue::start(config(1_000_000), original.path()).unwrap();
    let chain = from_snapshot.chain(1).unwrap();
    let restored_at = chain.snapshots.newest_sequence.load(Ordering::Acquire);
    assert_eq!(restored_at, snapshots[0].sequence, "the newest snapshot is used");
    assert!(restored_at < chain.journaled_sequence(), "a tail is replayed after it");
    assert_eq!(chain.state_hash(), hash);
    assert!(open_orders(&chain).await == orders, "the open orders differ");

    let from_journal = Venue::start(config(0), copy.path()).unwrap();
    let replayed = from_journal.chain(1).unwrap();
    assert_eq!(replayed.snapshots.newest_sequence.load(Ordering::Acquire), 0);
    assert_eq!(replayed.state_hash(), hash);

    // The same next commands give the same events on both (time priority, locks, client order
    // ids and nonces came back), and the same state.
    let (mut first, mut second) = (Traffic::new(99), Traffic::new(99));
    first.next_order = 10_000;
    second.next_order = 10_000;
    first.next_deposit = 200;
    second.next_deposit = 200;
    let outcomes = first.run(&chain, 150).await;
    let expected = second.run(&replayed, 150).await;
    for (index, (outcome, expected)) in outcomes.iter().zip(&expected).enumerate() {
        // Events carry the wall clock's time, which differs between the two runs.
        assert_eq!(
            without_times(&format!("{outcome:?}")),
            without_times(&format!("{expected:?}")),
            "command {index} after the restart"
        );
    }
    assert!(outcomes.iter().any(|outcome| outcome.as_ref().is_ok_and(|events| events
        .iter()
        .any(|event| matches!(event, dexd_core::Event::TradeExecuted(_))))));
    // The state hash covers the times too, which differ; balances and open orders do not.
    async fn view(chain: &Chain) -> String {
        let balances: Vec<_> = (1..=ACCOUNTS)
            .flat_map(|number| [0u16, 1].map(|asset| (number, asset)))
            .map(|(number, asset)| chain.read_engine(|engine| engine.balance(&account(number), AssetIndex(asset))))
            .collect();
        // An order's signed expiry is the wall clock's too (the venue's window of its time).
        let orders: Vec<Vec<_>> = open_orders(chain)
            .await
            .into_iter()
            .map(|orders| {
                orders
                    .into_iter()
                    .map(|(record, nonce, _expiry, signature)| (record, nonce, signature))
                    .collect()
            })
            .collect();
        without_times(&format!("{balances:?} {orders:?}"))
    }
    assert!(
        view(&chain).await == view(&replayed).await,
        "the states differ after the same commands"
    );
    from_snapshot.close().await;
    from_journal.close().await;
}

/// A debug rendering with every `..._ms: <number>` replaced by `..._ms: _`.
fn without_times(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("_ms: ") {
        out.push_str(&rest[..at + 5]);
        rest = rest[at + 5..].trim_start_matches(|character: char| character.is_ascii_digit());
        out.push('_');
    }
    out.push_str(rest);
    out
}

/// The damages a snapshot file can suffer.
#[derive(Debug, Clone, Copy)]
enum Damage {
    Truncated,
    BitFlipped,
    WrongVersion,
    Empty,
}

fn damage(path: &Path, damage: Damage) {
    let mut bytes = std::fs::read(path).unwrap();
    match damage {
        Damage::Truncated => bytes.truncate(bytes.len() * 2 / 3),
        Damage::BitFlipped => {
            let middle = bytes.len() / 2;
            bytes[middle] ^= 0x10;
        }
        Damage::WrongVersion => {
            // A whole file of another format version, its checksum correct.
            bytes[11] = bytes[11].wrapping_add(1);
            let length = bytes.len() - 4;
            let checksum = crc32fast::hash(&bytes[..length]).to_be_bytes();
            bytes[length..].copy_from_slice(&checksum);
        }
        Damage::Empty => bytes.clear(),
    }
    std::fs::write(path, bytes).unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_snapshots_are_skipped_and_the_state_is_still_exact() {
    let original = tempfile::tempdir().unwrap();
    let (hash, orders) = prepared(original.path()).await;
    let snapshots = list_snapshots(&snapshot_directory(original.path(), 1)).unwrap();
    let (newest, older) = (snapshots[0].sequence, snapshots[1].sequence);
    let cases: &[(&[Damage], u64)] = &[
        (&[Damage::Truncated], older),
        (&[Damage::BitFlipped], older),
        (&[Damage::WrongVersion], older),
        (&[Damage::Empty], older),
        (&[Damage::BitFlipped, Damage::Truncated], 0),
        (&[], newest),
    ];
    for (damages, expected_start) in cases {
        let data_dir = tempfile::tempdir().unwrap();
        common::copy_directory(original.path(), data_dir.path());
        let files = list_snapshots(&snapshot_directory(data_dir.path(), 1)).unwrap();
        for (file, kind) in files.iter().zip(damages.iter()) {
            damage(&file.path, *kind);
        }
        // A partial file left by a crash during a write is deleted, never read.
        let partial = snapshot_directory(data_dir.path(), 1).join(format!("{:020}.snapshot-partial", newest + 5));
        std::fs::write(&partial, b"DEXDSNAP partial").unwrap();
        let venue = Venue::start(config(1_000_000), data_dir.path()).unwrap();
        let chain = venue.chain(1).unwrap();
        assert_eq!(
            chain.snapshots.newest_sequence.load(Ordering::Acquire),
            *expected_start,
            "{damages:?}: the start used the wrong snapshot"
        );
        assert_eq!(chain.state_hash(), hash, "{damages:?}");
        assert!(
            open_orders(&chain).await == orders,
            "{damages:?}: the open orders differ"
        );
        assert!(!partial.exists(), "the partial snapshot is deleted");
        venue.close().await;
    }

    // A snapshot written under another engine configuration is not used; the journal is, and
    // the new configuration is journaled after it, changing nothing else.
    let data_dir = tempfile::tempdir().unwrap();
    common::copy_directory(original.path(), data_dir.path());
    let journal_end = {
        let venue = Venue::start(config(1_000_000), data_dir.path()).unwrap();
        let end = venue.chain(1).unwrap().read_engine(|engine| engine.journal_sequence());
        venue.close().await;
        end
    };
    let mut other = config(1_000_000);
    other.limits.max_open_orders_per_account += 1;
    let venue = Venue::start(other.clone(), data_dir.path()).unwrap();
    let chain = venue.chain(1).unwrap();
    assert_eq!(chain.snapshots.newest_sequence.load(Ordering::Acquire), 0);
    // The writer journals the new configuration as it starts leading, before any request.
    assert!(
        chain
            .wait_for_position(journal_end + 1, std::time::Duration::from_secs(10))
            .await,
        "the configuration journaled"
    );
    assert!(open_orders(&chain).await == orders);
    let (sequence, limit) = chain.read_engine(|engine| {
        (
            engine.journal_sequence(),
            engine
                .configuration()
                .map(|configuration| configuration.engine.limits.max_open_orders_per_account),
        )
    });
    assert_eq!(sequence, journal_end + 1, "one command: the configuration");
    assert_eq!(limit, Some(other.limits.max_open_orders_per_account));
    venue.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_snapshot_ahead_of_the_history_is_not_used() {
    // After a machine crash the history is rebuilt from the journal (its mark is 0): a snapshot
    // cannot stand in for the history rows it does not hold, so the whole journal is replayed.
    let original = tempfile::tempdir().unwrap();
    let (hash, orders) = prepared(original.path()).await;
    let history = dexd_store::history_path(original.path(), 1);
    for suffix in ["", "-wal", "-shm"] {
        let _ = std::fs::remove_file(format!("{}{suffix}", history.display()));
    }
    assert_eq!(
        list_snapshots(&snapshot_directory(original.path(), 1)).unwrap().len(),
        2
    );
    let venue = Venue::start(config(1_000_000), original.path()).unwrap();
    let chain = venue.chain(1).unwrap();
    assert_eq!(chain.snapshots.newest_sequence.load(Ordering::Acquire), 0);
    assert_eq!(chain.state_hash(), hash);
    assert!(open_orders(&chain).await == orders, "the open orders differ");
    venue.close().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_pair_listed_at_run_time_comes_back_from_a_snapshot_and_its_orders_with_it() {
    let data = tempfile::tempdir().unwrap();
    let venue = Venue::start(config(100), data.path()).unwrap();
    let chain = venue.chain(1).unwrap();
    // WBTC/USDT listed at run time, as the operator's API does it.
    let (wbtc, usdt) = {
        let markets = chain.markets();
        (
            markets.config.asset("WBTC").unwrap(),
            markets.config.asset("USDT").unwrap(),
        )
    };
    let eth_usdc = chain.markets().configuration.engine.pairs[0].clone();
    let (listed_at, _) = chain
        .reconfigure(Box::new(move |current: &dexd_core::ChainConfiguration, _| {
            let mut next = current.clone();
            next.engine.pairs.push(dexd_core::PairDefinition {
                base: wbtc,
                quote: usdt,
                fee_raise: None,
                ..eth_usdc
            });
            Ok(next)
        }))
        .await
        .unwrap();
    let listed = chain.markets().config.pair("WBTC/USDT").expect("listed once durable");
    chain
        .submit(
            Command::Deposit(TransferRequest {
                transfer_id: [0x77; 32],
                account: account(1),
                asset: wbtc,
                amount: Amount::from_units(100_000_000),
            }),
            None,
        )
        .await
        .unwrap();
    let spec = chain.markets().config.pair_config(listed).spec.clone();
    let order = NewOrder {
        order_id: order_id(9_999),
        client_order_id: None,
        account: account(1),
        pair: listed,
        order_type: OrderType::Limit,
        direction: Direction::Sell,
        time_in_force: TimeInForce::GoodTillCancelled,
        post_only: false,
        price: Some(spec.price_from_decimal(Decimal::parse("60000").unwrap()).unwrap()),
        quantity: spec.quantity_from_decimal(Decimal::parse("0.5").unwrap()).unwrap(),
        conditions: Default::default(),
    };
    chain
        .submit(Command::PlaceOrder(order), authorization(9_999))
        .await
        .unwrap();
    // Enough traffic for a snapshot after the listing.
    let mut traffic = Traffic::new(11);
    let mut batches = 0;
    while list_snapshots(&snapshot_directory(data.path(), 1))
        .unwrap()
        .first()
        .is_none_or(|newest| newest.sequence <= listed_at)
    {
        traffic.run(&chain, 20).await;
        batches += 1;
        assert!(batches < 100, "no snapshot after the listing");
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
    let hash = chain.state_hash();
    venue.close().await;

    let venue = Venue::start(config(1_000_000), data.path()).unwrap();
    let chain = venue.chain(1).unwrap();
    assert!(
        chain.snapshots.newest_sequence.load(Ordering::Acquire) > listed_at,
        "the start used a snapshot taken after the listing"
    );
    assert_eq!(chain.state_hash(), hash);
    assert_eq!(chain.markets().config.pair("WBTC/USDT"), Some(listed));
    let resting = chain
        .read_engine(|engine| engine.book_levels(listed, Direction::Sell, 10))
        .unwrap();
    assert_eq!(resting.0.len(), 1, "the listed pair's order rests again");
    venue.close().await;
}
