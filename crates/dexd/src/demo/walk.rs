//! The demo market's prices and sizes: a seeded random walk per pair, and the maker's ladder and
//! the takers' orders drawn from it, all in the pair's own increments (ticks of price, steps of
//! amount).
//!
//! Pure and deterministic: a [`PairWalk`] draws the same numbers in the same order on every
//! second whatever the venue answers, so two runs with the same seed quote and trade alike. It
//! knows nothing of accounts, the venue or HTTP (the market in `market.rs` sends what it draws).

use dexd_core::{Decimal, Direction};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

/// The seed every demo starts from (mixed with the chain and the pair), so that two runs look
/// alike.
pub const DEMO_SEED: u64 = 0x00de_c0de_2026_1125;

/// Levels the maker quotes on each side.
pub const LEVELS_PER_SIDE: usize = 5;
/// Taker accounts per chain; each taker order picks one.
pub const TAKERS_PER_CHAIN: usize = 2;
/// The walk's volatility: the standard deviation of the log price per second (about 0.5 % a
/// minute, so one-minute candles have bodies and wicks).
const VOLATILITY_PER_SECOND: f64 = 0.0006;
/// How strongly the price is pulled back to its reference each second: it wanders a few percent
/// (a stationary deviation of about 2 %) and never drifts away for good.
const MEAN_REVERSION_PER_SECOND: f64 = 0.0005;
/// Half the maker's spread, as a fraction of the price.
const HALF_SPREAD_FRACTION: f64 = 0.0004;
/// The distance between two of the maker's levels, as a fraction of the price.
const LEVEL_GAP_FRACTION: f64 = 0.0003;
/// The chance that a taker trades in a given second (one trade every three seconds or so on
/// each pair: a human pace).
const TAKER_CHANCE_PER_SECOND: f64 = 0.3;
/// The fewest ticks a reference price spans, so that the walk moves in small increments.
const MINIMUM_PRICE_TICKS: u64 = 1_000;
/// What a level of the book is worth, in US dollars, when the quote asset's dollar value is
/// known.
const LEVEL_VALUE_USD: f64 = 2_500.0;
/// A level's worth as a multiple of the pair's minimum order value, when it is not.
const LEVEL_VALUE_MIN_NOTIONALS: f64 = 100.0;

/// Rough dollar values of well-known assets: where the demo's prices start. Other assets count
/// as one dollar.
pub fn reference_value_usd(symbol: &str) -> Option<f64> {
    match symbol.to_ascii_uppercase().as_str() {
        "ETH" | "WETH" | "STETH" => Some(3_000.0),
        "BTC" | "WBTC" | "CBBTC" | "TBTC" => Some(60_000.0),
        "USDC" | "USDT" | "DAI" | "USDC.E" | "USDS" | "PYUSD" | "FDUSD" => Some(1.0),
        "ARB" | "OP" | "MATIC" | "POL" => Some(0.8),
        "SOL" => Some(150.0),
        "LINK" => Some(15.0),
        _ => None,
    }
}

/// A pair's increments and minimums, as the walk needs them.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct PairGrid {
    /// The price increment.
    pub tick_size: Decimal,
    /// The amount increment.
    pub step_size: Decimal,
    /// The smallest amount, in steps.
    pub min_amount_steps: u64,
    /// The smallest order value, in quote.
    pub min_notional: f64,
}

impl PairGrid {
    /// The grid of a pair's rules; `None` when a minimum does not fit (a pair no demo can size).
    pub fn new(tick_size: Decimal, step_size: Decimal, min_amount: Decimal, min_notional: Decimal) -> Option<PairGrid> {
        let step = as_number(step_size);
        let min_amount_steps = (as_number(min_amount) / step).ceil();
        if !(min_amount_steps.is_finite() && min_amount_steps < 1e15) || as_number(tick_size) <= 0.0 {
            return None;
        }
        Some(PairGrid {
            tick_size,
            step_size,
            min_amount_steps: (min_amount_steps as u64).max(1),
            min_notional: as_number(min_notional),
        })
    }

    fn tick(&self) -> f64 {
        as_number(self.tick_size)
    }

    fn step(&self) -> f64 {
        as_number(self.step_size)
    }

    /// A price in ticks, written as the API takes it.
    pub fn price_text(&self, price_ticks: u64) -> String {
        scaled_text(self.tick_size, price_ticks)
    }

    /// An amount in steps, written as the API takes it.
    pub fn amount_text(&self, amount_steps: u64) -> String {
        scaled_text(self.step_size, amount_steps)
    }

    /// The fewest steps an order at this price may have: the minimum amount, and one step more
    /// than the minimum value needs (a margin over the rounding of floating point).
    pub fn min_steps_at(&self, price_ticks: u64) -> u64 {
        let value_per_step = price_ticks as f64 * self.tick() * self.step();
        let for_notional = (self.min_notional / value_per_step).ceil() as u64 + 1;
        self.min_amount_steps.max(for_notional)
    }
}

/// A decimal increment times a count, in the decimal form the API reads.
fn scaled_text(increment: Decimal, count: u64) -> String {
    let units = increment.mantissa().saturating_mul(u128::from(count));
    dexd_core::decimal::format_scaled_units(units, increment.scale())
}

/// A decimal as a floating-point number (the walk's prices and the funding's sizes, never money
/// the venue books).
pub(super) fn as_number(value: Decimal) -> f64 {
    value.mantissa() as f64 / 10f64.powi(value.scale() as i32)
}

/// One of the maker's resting orders.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Quote {
    /// Buy (a bid) or sell (an ask).
    pub direction: Direction,
    /// Its price, in ticks.
    pub price_ticks: u64,
    /// Its amount, in steps.
    pub amount_steps: u64,
}

/// A taker's order: immediate-or-cancel at a price through the first levels of the other side.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TakerOrder {
    /// Which of the chain's takers sends it.
    pub taker: usize,
    /// Buy or sell.
    pub direction: Direction,
    /// Its limit price, in ticks.
    pub limit_price_ticks: u64,
    /// Its amount, in steps.
    pub amount_steps: u64,
    /// How far into the second it is sent, in ms (so trades do not land on whole seconds).
    pub delay_ms: u64,
}

/// What one second of the walk gives.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Second {
    /// The price the maker quotes around, in ticks.
    pub mid_ticks: u64,
    /// The distance between two levels, in ticks (at least one).
    pub level_gap_ticks: u64,
    /// The maker's ladder: bids from the best down, then asks from the best up.
    pub ladder: Vec<Quote>,
    /// A taker's order this second, if one trades.
    pub taker: Option<TakerOrder>,
}

/// One pair's walk.
#[derive(Debug)]
pub struct PairWalk {
    random: StdRng,
    grid: PairGrid,
    log_price: f64,
    log_reference: f64,
    /// A level's typical amount, in steps.
    level_steps: f64,
}

impl PairWalk {
    /// A walk from `reference_price` (in quote per base); the seed fixes every draw after it.
    /// `quote_value_usd` sizes the levels when the quote asset's dollar value is known.
    pub fn new(seed: u64, grid: PairGrid, reference_price: f64, quote_value_usd: Option<f64>) -> PairWalk {
        let floor_price = MINIMUM_PRICE_TICKS as f64 * grid.tick();
        let reference = if reference_price.is_finite() && reference_price > floor_price {
            reference_price
        } else {
            floor_price
        };
        let level_value = match quote_value_usd {
            Some(value) if value > 0.0 => LEVEL_VALUE_USD / value,
            _ => grid.min_notional * LEVEL_VALUE_MIN_NOTIONALS,
        };
        let level_steps = (level_value / (reference * grid.step())).max(grid.min_amount_steps as f64 * 4.0);
        PairWalk {
            random: StdRng::seed_from_u64(seed),
            grid,
            log_price: reference.ln(),
            log_reference: reference.ln(),
            level_steps,
        }
    }

    /// The pair's grid.
    pub fn grid(&self) -> &PairGrid {
        &self.grid
    }

    /// A level's typical amount, in steps (what funding is sized from).
    pub fn level_steps(&self) -> u64 {
        self.level_steps.ceil() as u64
    }

    /// The reference price, in ticks.
    pub fn reference_ticks(&self) -> u64 {
        self.ticks_of(self.log_reference.exp())
    }

    fn ticks_of(&self, price: f64) -> u64 {
        ((price / self.grid.tick()).round() as u64).max(1)
    }

    /// A standard normal draw (Box–Muller).
    fn normal(&mut self) -> f64 {
        let uniform: f64 = self.random.gen_range(f64::EPSILON..1.0);
        let angle: f64 = self.random.gen_range(0.0..std::f64::consts::TAU);
        (-2.0 * uniform.ln()).sqrt() * angle.cos()
    }

    /// Moves the walk one second on and draws the maker's ladder and maybe a taker's order.
    /// Every call draws the same count of numbers, so the sequence never depends on what was
    /// sent.
    pub fn advance(&mut self) -> Second {
        let shock = self.normal();
        self.log_price +=
            MEAN_REVERSION_PER_SECOND * (self.log_reference - self.log_price) + VOLATILITY_PER_SECOND * shock;
        let price = self.log_price.exp();
        let mid_ticks = self.ticks_of(price);
        let half_spread_ticks = self.ticks_of(price * HALF_SPREAD_FRACTION).max(1);
        let level_gap_ticks = self.ticks_of(price * LEVEL_GAP_FRACTION).max(1);
        let mut ladder = Vec::with_capacity(2 * LEVELS_PER_SIDE);
        for direction in [Direction::Buy, Direction::Sell] {
            for level in 0..LEVELS_PER_SIDE as u64 {
                let distance = half_spread_ticks + level * level_gap_ticks;
                let price_ticks = match direction {
                    Direction::Buy => mid_ticks.saturating_sub(distance).max(1),
                    Direction::Sell => mid_ticks + distance,
                };
                let size_factor: f64 = self.random.gen_range(0.6..1.4) * (1.0 + 0.6 * level as f64);
                let amount_steps = self.amount_at(price_ticks, size_factor);
                ladder.push(Quote {
                    direction,
                    price_ticks,
                    amount_steps,
                });
            }
        }
        let trades = self.random.gen_bool(TAKER_CHANCE_PER_SECOND);
        let taker = self.random.gen_range(0..TAKERS_PER_CHAIN);
        let direction = if self.random.gen_bool(0.5) {
            Direction::Buy
        } else {
            Direction::Sell
        };
        let size_factor = self.random.gen_range(0.3..2.0);
        let delay_ms = self.random.gen_range(0..900);
        // Through the best three levels of the other side, whatever the maker quoted last.
        let reach = half_spread_ticks + 2 * level_gap_ticks;
        let limit_price_ticks = match direction {
            Direction::Buy => mid_ticks + reach,
            Direction::Sell => mid_ticks.saturating_sub(reach).max(1),
        };
        let taker = trades.then(|| TakerOrder {
            taker,
            direction,
            limit_price_ticks,
            amount_steps: self.amount_at(limit_price_ticks, size_factor),
            delay_ms,
        });
        Second {
            mid_ticks,
            level_gap_ticks,
            ladder,
            taker,
        }
    }

    fn amount_at(&self, price_ticks: u64, size_factor: f64) -> u64 {
        ((self.level_steps * size_factor).round() as u64).max(self.grid.min_steps_at(price_ticks))
    }
}

/// The seed of one pair's walk: the demo's seed mixed with the chain and the pair, so that pairs
/// differ from each other and not from one run to the next.
pub fn pair_seed(chain_id: u64, pair_symbol: &str) -> u64 {
    let mut seed = DEMO_SEED ^ chain_id.rotate_left(17);
    for byte in pair_symbol.bytes() {
        seed = (seed ^ u64::from(byte)).wrapping_mul(0x100_0000_01b3);
    }
    seed
}

#[cfg(test)]
mod tests {
    use super::*;

    fn grid() -> PairGrid {
        let decimal = |text| Decimal::parse(text).unwrap();
        PairGrid::new(decimal("0.01"), decimal("0.0001"), decimal("0.001"), decimal("1")).unwrap()
    }

    fn walk(seed: u64) -> PairWalk {
        PairWalk::new(seed, grid(), 3_000.0, Some(1.0))
    }

    #[test]
    fn the_same_seed_walks_the_same_way() {
        let (mut first, mut second) = (walk(7), walk(7));
        for _ in 0..1_000 {
            assert_eq!(first.advance(), second.advance());
        }
        let mut other = walk(8);
        let mut first = walk(7);
        assert!((0..10).any(|_| first.advance() != other.advance()));
    }

    #[test]
    fn ladders_are_ordered_uncrossed_and_tradable() {
        let mut walk = walk(pair_seed(1, "ETH/USDC"));
        let grid = *walk.grid();
        for _ in 0..20_000 {
            let second = walk.advance();
            let (bids, asks) = second.ladder.split_at(LEVELS_PER_SIDE);
            assert!(bids.iter().all(|quote| quote.direction == Direction::Buy));
            assert!(asks.iter().all(|quote| quote.direction == Direction::Sell));
            assert!(bids.windows(2).all(|pair| pair[0].price_ticks > pair[1].price_ticks));
            assert!(asks.windows(2).all(|pair| pair[0].price_ticks < pair[1].price_ticks));
            assert!(bids[0].price_ticks < second.mid_ticks && second.mid_ticks < asks[0].price_ticks);
            for quote in &second.ladder {
                // The venue's own rules: the minimum amount and the minimum value, exactly.
                assert!(quote.amount_steps >= grid.min_amount_steps);
                let value_hundredths = u128::from(quote.price_ticks) * u128::from(quote.amount_steps);
                assert!(value_hundredths >= 1_000_000, "{quote:?} is worth less than 1 USDC");
            }
            if let Some(taker) = second.taker {
                assert!(taker.taker < TAKERS_PER_CHAIN && taker.delay_ms < 1_000);
                match taker.direction {
                    Direction::Buy => assert!(taker.limit_price_ticks > asks[2].price_ticks - 1),
                    Direction::Sell => assert!(taker.limit_price_ticks < bids[2].price_ticks + 1),
                }
            }
        }
    }

    #[test]
    fn the_price_wanders_but_stays_near_its_reference() {
        let mut walk = walk(pair_seed(1, "ETH/USDC"));
        let reference = walk.reference_ticks() as f64;
        let (mut lowest, mut highest) = (f64::MAX, 0.0f64);
        // A day of seconds.
        for _ in 0..86_400 {
            let mid = walk.advance().mid_ticks as f64;
            lowest = lowest.min(mid);
            highest = highest.max(mid);
        }
        assert!(highest / lowest > 1.01, "the price barely moved: {lowest} to {highest}");
        assert!(
            lowest > reference * 0.85 && highest < reference * 1.15,
            "{lowest} to {highest} around {reference}"
        );
    }

    #[test]
    fn takers_trade_at_a_human_pace() {
        let mut walk = walk(3);
        let trades = (0..3_600).filter(|_| walk.advance().taker.is_some()).count();
        assert!((900..1_300).contains(&trades), "{trades} trades in an hour");
    }

    #[test]
    fn prices_and_amounts_are_written_exactly() {
        let grid = grid();
        assert_eq!(grid.price_text(300_012), "3000.12");
        assert_eq!(grid.amount_text(15), "0.0015");
        assert_eq!(grid.min_steps_at(300_000), 10);
        // At a price of 1, the minimum value (1 USDC) needs 10,000 steps, and one more.
        assert_eq!(grid.min_steps_at(100), 10_001);
    }

    #[test]
    fn a_tiny_reference_is_raised_to_a_thousand_ticks() {
        let walk = PairWalk::new(1, grid(), 0.000_1, None);
        assert_eq!(walk.reference_ticks(), MINIMUM_PRICE_TICKS);
        assert_eq!(reference_value_usd("weth"), Some(3_000.0));
        assert_eq!(reference_value_usd("XYZ"), None);
    }
}
