//! Fixtures the engine's tests and benchmarks share, and the crates above it through
//! the `testing` feature: a market to trade on ([`Market`], the ETH/USDC pair of the unit tests),
//! account addresses and order ids shaped like real ones, plain orders, a deposit, a small
//! deterministic generator ([`SplitMix`]) so that a stream of commands is the same on every
//! run, the checked way to run a command, and a [`Venue`] that runs a scenario's commands one
//! millisecond apart.
//!
//! Test and benchmark code only: built for this crate's unit tests; its own property tests and
//! benchmarks include this file (`#[path]`), since a crate's dev targets cannot turn on its own
//! features; other crates' tests and benchmarks take it with the `testing` feature, which only
//! dev-dependencies turn on, so nothing of the venue is built with it. It names the engine as
//! `dexd_core` (the crate calls itself so too), so that it compiles the same in each of those
//! places.

use dexd_core::{
    Address, Amend, Amount, AssetDescription, AssetIndex, AssetSpec, ChainConfiguration, ChainDescription, Command,
    CustodyMode, Decimal, Direction, Engine, EngineConfig, EngineLimits, Event, FeeRate, NewOrder, OrderId, OrderType,
    PairDefinition, PairIndex, PairSpec, Price, Quantity, Rejection, TimeInForce, TransferRequest,
};

/// ETH, the unit tests' base asset.
pub const ETH: AssetIndex = AssetIndex(0);
/// USDC, the unit tests' quote asset.
pub const USDC: AssetIndex = AssetIndex(1);

/// One whole USDC in units.
pub const USDC_UNIT: u128 = 1_000_000;
/// One whole ETH in units.
pub const ETH_UNIT: u128 = 1_000_000_000_000_000_000;
/// The scenario tests' traders.
pub const ALICE: Address = Address::from_bytes([0xa1; 20]);
/// A second trader.
pub const BOB: Address = Address::from_bytes([0xb0; 20]);
/// A third trader.
pub const CAROL: Address = Address::from_bytes([0xc0; 20]);

/// ETH (18 decimals) and USDC (6 decimals), in that order.
pub fn eth_and_usdc() -> Vec<AssetSpec> {
    vec![AssetSpec { decimals: 18 }, AssetSpec { decimals: 6 }]
}

/// A decimal written in a test.
///
/// # Panics
///
/// When `text` is not a decimal.
pub fn decimal(text: &str) -> Decimal {
    Decimal::parse(text).unwrap()
}

/// ETH/USDC with tick 0.01, step 0.0001, minimum 0.001 ETH and 1 USDC, fees 0.1 % / 0.2 %.
pub fn eth_usdc_definition() -> PairDefinition {
    let market = Market {
        min_amount: "0.001",
        min_notional: "1",
        ..Market::eth_usdc()
    };
    market.config().pairs.remove(0)
}

/// The scenario tests' engine: [`eth_usdc_definition`] in ledger custody under `limits`.
pub fn scenario_config(limits: EngineLimits) -> EngineConfig {
    EngineConfig {
        assets: eth_and_usdc(),
        pairs: vec![eth_usdc_definition()],
        fee_account: FEE_ACCOUNT,
        custody: CustodyMode::Ledger,
        limits,
    }
}

/// A chain of [`scenario_config`] as `Command::Configure` carries it: native ETH, and USDC at
/// a token address of `0x0c` bytes.
pub fn eth_usdc_chain(chain_id: u64) -> ChainConfiguration {
    ChainConfiguration {
        description: ChainDescription {
            chain_id,
            venue_contract: Address::from_bytes([0x55; 20]),
            assets: vec![
                AssetDescription {
                    symbol: "ETH".into(),
                    token: None,
                },
                AssetDescription {
                    symbol: "USDC".into(),
                    token: Some(Address::from_bytes([0x0c; 20])),
                },
            ],
        },
        engine: scenario_config(EngineLimits::default()),
    }
}

/// Runs a command at `time_ms` and checks what every command must keep: a rejection emits
/// nothing and changes nothing (the state hash is the same), and every invariant holds after.
pub fn execute_checked(engine: &mut Engine, command: Command, time_ms: u64) -> Result<Vec<Event>, Rejection> {
    let before = engine.state_hash();
    let mut events = Vec::new();
    let result = engine.execute(command, time_ms, &mut events);
    if result.is_err() {
        assert!(events.is_empty(), "a rejection emits no events");
        assert_eq!(before, engine.state_hash(), "a rejection changes nothing");
    }
    engine.check_invariants().unwrap();
    result.map(|()| events)
}

/// A plain good-till-cancelled order on [`PAIR`] with `order_id`, its price and amount written as
/// decimals on `spec`: a limit at `price`, or a market order when it is `None`.
///
/// # Panics
///
/// When the price or amount is not on the pair's tick or step (a test written wrongly).
pub fn order_of_decimals(
    spec: &PairSpec,
    order_id: OrderId,
    account: Address,
    direction: Direction,
    (price, amount): (Option<&str>, &str),
) -> NewOrder {
    plain_order(
        order_id,
        account,
        direction,
        price.map(|text| spec.price_from_decimal(decimal(text)).unwrap()),
        spec.quantity_from_decimal(decimal(amount)).unwrap(),
    )
}

/// A good-till-cancelled order on [`PAIR`], a limit at `price` or a market order without one.
pub fn plain_order(
    order_id: OrderId,
    account: Address,
    direction: Direction,
    price: Option<Price>,
    quantity: Quantity,
) -> NewOrder {
    NewOrder {
        order_id,
        client_order_id: None,
        account,
        pair: PAIR,
        order_type: if price.is_some() {
            OrderType::Limit
        } else {
            OrderType::Market
        },
        direction,
        time_in_force: TimeInForce::GoodTillCancelled,
        post_only: false,
        price,
        quantity,
        conditions: None,
    }
}

/// The base asset of a [`Market`]'s one pair.
pub const BASE: AssetIndex = AssetIndex(0);
/// The quote asset of a [`Market`]'s one pair.
pub const QUOTE: AssetIndex = AssetIndex(1);
/// A [`Market`]'s one pair.
pub const PAIR: PairIndex = PairIndex(0);
/// The account fees are paid to.
pub const FEE_ACCOUNT: Address = Address::from_bytes([0xfe; 20]);

/// A chain of two assets and one pair between them, base first: what the engine's tests and
/// benchmarks trade on. Build one from [`Market::eth_usdc`] or [`Market::whole_units`] and
/// change what a test needs (`Market { limits, ..Market::eth_usdc() }`).
#[derive(Debug, Clone)]
pub struct Market {
    /// The base's and the quote's decimals.
    pub decimals: [u32; 2],
    /// The price step, in quote per base.
    pub tick_size: &'static str,
    /// The amount step, in base.
    pub step_size: &'static str,
    /// The smallest amount, in base.
    pub min_amount: &'static str,
    /// The smallest notional, in quote.
    pub min_notional: &'static str,
    /// The maker's and the taker's fee, in parts per million.
    pub fees_ppm: [u32; 2],
    /// Who holds the funds.
    pub custody: CustodyMode,
    /// The engine's limits.
    pub limits: EngineLimits,
}

impl Market {
    /// ETH (18 decimals) against USDC (6): tick 0.01, step 0.0001, no notional minimum, fees
    /// 0.1 % / 0.2 %, the ledger, the default limits.
    pub fn eth_usdc() -> Market {
        Market {
            decimals: [18, 6],
            tick_size: "0.01",
            step_size: "0.0001",
            min_amount: "0.0001",
            min_notional: "0",
            fees_ppm: [1_000, 2_000],
            custody: CustodyMode::Ledger,
            limits: EngineLimits::default(),
        }
    }

    /// Two assets of 2 decimals where a tick and a lot are one unit and nothing has a minimum,
    /// so that a property test's numbers are the engine's: fees 0.1 % / 0.25 %.
    pub fn whole_units() -> Market {
        Market {
            decimals: [2, 2],
            tick_size: "1",
            step_size: "1",
            min_amount: "0",
            fees_ppm: [1_000, 2_500],
            ..Market::eth_usdc()
        }
    }

    /// The engine's configuration.
    ///
    /// # Panics
    ///
    /// When a size or fee is not one the engine takes (a fixture written wrongly).
    pub fn config(&self) -> EngineConfig {
        let decimal = |text: &str| Decimal::parse(text).expect("a fixture's decimal");
        let fee = |parts_per_million: u32| FeeRate::from_parts_per_million(parts_per_million).expect("a fixture's fee");
        EngineConfig {
            assets: self.decimals.map(|decimals| AssetSpec { decimals }).to_vec(),
            pairs: vec![PairDefinition {
                base: BASE,
                quote: QUOTE,
                tick_size: decimal(self.tick_size),
                step_size: decimal(self.step_size),
                min_amount: decimal(self.min_amount),
                min_notional: decimal(self.min_notional),
                maker_fee: fee(self.fees_ppm[0]),
                taker_fee: fee(self.fees_ppm[1]),
                fee_raise: None,
            }],
            fee_account: FEE_ACCOUNT,
            custody: self.custody,
            limits: self.limits,
        }
    }

    /// A new engine on this market.
    ///
    /// # Panics
    ///
    /// When the engine refuses the configuration (a fixture written wrongly).
    pub fn engine(&self) -> Engine {
        Engine::new(self.config()).expect("a fixture's configuration")
    }

    /// This market with an account's limit of open orders raised to `max_open_orders`, as a
    /// venue raises a market maker's.
    pub fn with_open_order_limit(self, max_open_orders: u32) -> Market {
        Market {
            limits: EngineLimits {
                max_open_orders_per_account: max_open_orders,
                ..self.limits
            },
            ..self
        }
    }

    /// A new engine on this market where each of `traders` holds `units` of both assets, by
    /// ledger deposits at time 0.
    ///
    /// # Panics
    ///
    /// When the engine refuses the configuration or a deposit (a fixture written wrongly).
    pub fn funded_engine(&self, traders: impl IntoIterator<Item = Address>, units: u128) -> Engine {
        let mut engine = self.engine();
        let mut events = Vec::new();
        for trader in traders {
            for asset in [BASE, QUOTE] {
                engine
                    .execute(deposit(trader, asset, units), 0, &mut events)
                    .expect("a fixture's deposit applies");
            }
        }
        engine
    }
}

/// A small deterministic generator (SplitMix64): the same seed gives the same stream on every
/// run and machine. Not for anything but tests.
#[derive(Debug, Clone)]
pub struct SplitMix(pub u64);

impl SplitMix {
    /// The next 64 bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut value = self.0;
        value = (value ^ (value >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        value = (value ^ (value >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        value ^ (value >> 31)
    }

    /// A number below `bound` (which must not be 0).
    pub fn below(&mut self, bound: u64) -> u64 {
        self.next_u64() % bound
    }
}

/// Uniform bytes derived from a number, as real addresses and order ids (keccak outputs) are,
/// distinct for each `domain`.
pub fn digest_bytes<const N: usize>(number: u64, domain: u64) -> [u8; N] {
    let mut random = SplitMix(number.wrapping_mul(0x9e37_79b9).wrapping_add(domain));
    let mut bytes = [0u8; N];
    for chunk in bytes.chunks_mut(8) {
        let word = random.next_u64().to_be_bytes();
        chunk.copy_from_slice(&word[..chunk.len()]);
    }
    bytes
}

/// The account of trader `index`: an address as uniform as a real one.
pub fn account(index: u64) -> Address {
    Address::from_bytes(digest_bytes(index, 1))
}

/// Order `number`'s id: uniform like a digest, with the number in its first eight bytes (so a
/// comparison with another book can find it back).
pub fn order_id(number: u64) -> OrderId {
    let mut bytes: [u8; 32] = digest_bytes(number, 2);
    bytes[..8].copy_from_slice(&number.to_be_bytes());
    OrderId::from_bytes(bytes)
}

/// A plain good-till-cancelled order on [`PAIR`]: a limit at `price_ticks`, or a market order
/// when it is `None`; no conditions, no client id.
pub fn order(number: u64, account: Address, direction: Direction, price_ticks: Option<u64>, lots: u64) -> NewOrder {
    plain_order(
        order_id(number),
        account,
        direction,
        price_ticks.and_then(Price::from_ticks),
        Quantity::from_lots(lots),
    )
}

/// A ledger deposit of `units` of `asset` to `account`.
pub fn deposit(account: Address, asset: AssetIndex, units: u128) -> Command {
    Command::Deposit(TransferRequest {
        transfer_id: [0; 32],
        account,
        asset,
        amount: Amount::from_units(units),
    })
}

/// Runs every command of `stream` at time 0, refusals included (a benchmark's measured loop):
/// the engine as the stream leaves it.
pub fn run_stream(mut engine: Engine, stream: Vec<Command>, events: &mut Vec<Event>) -> Engine {
    for command in stream {
        events.clear();
        let _ = engine.execute(command, 0, events);
    }
    engine
}

/// An amend of `order_id` into `replacement`, asked by the replacement's account, with the price
/// and amount the replacement gives (nothing left out, so nothing taken from the old order).
pub fn amend(order_id: OrderId, replacement: NewOrder) -> Command {
    Command::AmendOrder(amend_of(order_id, replacement))
}

/// The [`Amend`] of [`amend`], for a test to change what it kept of the old order.
pub fn amend_of(order_id: OrderId, replacement: NewOrder) -> Amend {
    Amend {
        account: replacement.account,
        order_id,
        replacement,
        amount_from_remaining: None,
        keeps_price: false,
    }
}

/// An engine driven as a scenario test drives it: each command one millisecond after the last,
/// every one run checked ([`execute_checked`]), its orders numbered as they are made.
#[derive(Clone)]
pub struct Venue {
    /// The engine, to read.
    pub engine: Engine,
    /// The time the last command ran at.
    pub time_ms: u64,
    next_order_number: u32,
}

impl Venue {
    /// A venue of `config` whose first command runs just after `start_ms`.
    pub fn new(config: EngineConfig, start_ms: u64) -> Venue {
        Venue {
            engine: Engine::new(config).expect("a valid configuration"),
            time_ms: start_ms,
            next_order_number: 0,
        }
    }

    /// Runs `command` a millisecond after the last one.
    pub fn run(&mut self, command: Command) -> Result<Vec<Event>, Rejection> {
        self.time_ms += 1;
        execute_checked(&mut self.engine, command, self.time_ms)
    }

    /// Deposits `units` of `asset` to `account` on the ledger.
    pub fn deposit(&mut self, account: Address, asset: AssetIndex, units: u128) {
        self.run(deposit(account, asset, units))
            .expect("a ledger deposit applies");
    }

    /// The next order on [`PAIR`], given in decimals: a limit at `price`, or a market order.
    pub fn order(&mut self, account: Address, direction: Direction, price: Option<&str>, amount: &str) -> NewOrder {
        self.next_order_number += 1;
        let number = self.next_order_number.to_be_bytes();
        let mut id = [0u8; 32];
        id[..4].copy_from_slice(&number);
        // The engine hashes an id by its last eight bytes, as a digest's are.
        id[28..].copy_from_slice(&number);
        let spec = self.engine.pair_spec(PAIR).expect("the venue trades PAIR");
        order_of_decimals(spec, OrderId::from_bytes(id), account, direction, (price, amount))
    }

    /// The next limit order, labelled with a client order id of its own (`quote-N`).
    pub fn quote(&mut self, account: Address, direction: Direction, price: &str, amount: &str) -> NewOrder {
        let order = self.order(account, direction, Some(price), amount);
        NewOrder {
            client_order_id: Some(format!("quote-{}", self.next_order_number)),
            ..order
        }
    }

    /// Places `order`.
    pub fn place(&mut self, order: NewOrder) -> Result<Vec<Event>, Rejection> {
        self.run(Command::PlaceOrder(order))
    }

    /// Places the next quote, which must be taken: it rests or fills.
    pub fn rest(&mut self, account: Address, direction: Direction, price: &str, amount: &str) -> NewOrder {
        let order = self.quote(account, direction, price, amount);
        self.place(order.clone()).expect("the quote is taken");
        order
    }
}
