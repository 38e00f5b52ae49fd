//! Market data derived from trades: OHLC candles per interval and average-cost positions.
//!
//! Both are folded from the same trade events the engine emits, so they are as deterministic as
//! the engine. Candles keep a bounded window per series (older ones belong to the store); this
//! module does not know books, balances or wire formats.

use std::collections::VecDeque;

use crate::decimal::multiply_divide_rounding_down;
use crate::money::{Amount, Price};

/// How many candles each (pair, interval) series keeps in memory; the oldest is dropped first.
/// 10,000 one-minute candles are about a week.
pub const MAX_CANDLES_PER_SERIES: usize = 10_000;

const MINUTE_MS: u64 = 60_000;
const DAY_MS: u64 = 86_400_000;
const WEEK_MS: u64 = 7 * DAY_MS;
/// The Unix epoch fell on a Thursday; weekly candles open on Mondays, four days later.
const WEEK_OFFSET_MS: u64 = 4 * DAY_MS;

/// A candle interval.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CandleInterval {
    /// One minute.
    OneMinute,
    /// Five minutes.
    FiveMinutes,
    /// Fifteen minutes.
    FifteenMinutes,
    /// Thirty minutes.
    ThirtyMinutes,
    /// One hour.
    OneHour,
    /// Four hours.
    FourHours,
    /// One day, from 00:00 UTC.
    OneDay,
    /// One week, from Monday 00:00 UTC.
    OneWeek,
}

impl CandleInterval {
    /// Every interval, shortest first.
    pub const ALL: [CandleInterval; 8] = [
        CandleInterval::OneMinute,
        CandleInterval::FiveMinutes,
        CandleInterval::FifteenMinutes,
        CandleInterval::ThirtyMinutes,
        CandleInterval::OneHour,
        CandleInterval::FourHours,
        CandleInterval::OneDay,
        CandleInterval::OneWeek,
    ];

    /// The interval's length in ms.
    pub fn length_ms(self) -> u64 {
        match self {
            CandleInterval::OneMinute => MINUTE_MS,
            CandleInterval::FiveMinutes => 5 * MINUTE_MS,
            CandleInterval::FifteenMinutes => 15 * MINUTE_MS,
            CandleInterval::ThirtyMinutes => 30 * MINUTE_MS,
            CandleInterval::OneHour => 60 * MINUTE_MS,
            CandleInterval::FourHours => 240 * MINUTE_MS,
            CandleInterval::OneDay => DAY_MS,
            CandleInterval::OneWeek => WEEK_MS,
        }
    }

    /// The opening time of the candle that holds `time_ms`.
    pub fn open_time_ms(self, time_ms: u64) -> u64 {
        let offset = if self == CandleInterval::OneWeek {
            WEEK_OFFSET_MS
        } else {
            0
        };
        let length = self.length_ms();
        if time_ms < offset {
            return 0;
        }
        (time_ms - offset) / length * length + offset
    }

    fn index(self) -> usize {
        self as usize
    }

    /// The interval whose candles this one's are folded from where they are kept (the
    /// history keeps one-minute, one-hour and one-day candles; every interval is a whole number
    /// of its source's, aligned with it): itself for those three.
    pub fn source(self) -> CandleInterval {
        match self {
            CandleInterval::OneMinute
            | CandleInterval::FiveMinutes
            | CandleInterval::FifteenMinutes
            | CandleInterval::ThirtyMinutes => CandleInterval::OneMinute,
            CandleInterval::OneHour | CandleInterval::FourHours => CandleInterval::OneHour,
            CandleInterval::OneDay | CandleInterval::OneWeek => CandleInterval::OneDay,
        }
    }

    /// The intervals the history keeps candles of.
    pub const KEPT: [CandleInterval; 3] = [
        CandleInterval::OneMinute,
        CandleInterval::OneHour,
        CandleInterval::OneDay,
    ];

    /// Its number in [`CandleInterval::ALL`] (0 for one minute), as the history stores it.
    pub fn number(self) -> u8 {
        self as u8
    }
}

/// One OHLC candle.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Candle {
    /// When the period opens, in ms since the epoch.
    pub open_time_ms: u64,
    /// The first trade's price.
    pub open: Price,
    /// The highest trade price.
    pub high: Price,
    /// The lowest trade price.
    pub low: Price,
    /// The last trade's price.
    pub close: Price,
    /// Base traded, in base units.
    pub volume: Amount,
    /// Quote traded, in quote units.
    pub quote_volume: Amount,
    /// How many trades.
    pub trades: u64,
}

impl Candle {
    /// The candle of one trade, in the period that opens at `open_time_ms`.
    pub fn of_trade(open_time_ms: u64, price: Price, base: Amount, quote: Amount) -> Candle {
        Candle {
            open_time_ms,
            open: price,
            high: price,
            low: price,
            close: price,
            volume: base,
            quote_volume: quote,
            trades: 1,
        }
    }

    /// Folds in a later candle of the same period (a trade's, or a shorter interval's): the
    /// high and low widen, the close is the later one's, volumes and trades add up (volumes
    /// saturate rather than wrap).
    pub fn fold(&mut self, later: &Candle) {
        self.high = self.high.max(later.high);
        self.low = self.low.min(later.low);
        self.close = later.close;
        self.volume = self
            .volume
            .checked_add(later.volume)
            .unwrap_or(Amount::from_units(u128::MAX));
        self.quote_volume = self
            .quote_volume
            .checked_add(later.quote_volume)
            .unwrap_or(Amount::from_units(u128::MAX));
        self.trades += later.trades;
    }
}

/// The candles of one pair, for every interval.
///
/// A trade updates only the one-minute candle. When a minute closes, its candle is folded into
/// every longer interval; a query for a longer interval folds in the minute still open. The
/// results are the same as folding every trade into every interval, at an eighth of the work
/// on the trade path.
#[derive(Clone, Debug, Default)]
pub struct CandleSeries {
    series: [VecDeque<Candle>; 8],
}

impl CandleSeries {
    /// Folds one trade in.
    pub fn record_trade(&mut self, time_ms: u64, price: Price, base: Amount, quote: Amount) {
        let minutes = &mut self.series[CandleInterval::OneMinute.index()];
        if let Some(candle) = minutes.back_mut() {
            if time_ms >= candle.open_time_ms && time_ms - candle.open_time_ms < MINUTE_MS {
                candle.fold(&Candle::of_trade(candle.open_time_ms, price, base, quote));
                return;
            }
        }
        // The open minute closes: fold it into the longer intervals before a new one opens.
        if let Some(closed) = minutes.back().copied() {
            for interval in &CandleInterval::ALL[1..] {
                let series = &mut self.series[interval.index()];
                fold_minute(series, *interval, &closed);
                if series.len() > MAX_CANDLES_PER_SERIES {
                    series.pop_front();
                }
            }
        }
        let minutes = &mut self.series[CandleInterval::OneMinute.index()];
        if minutes.len() == MAX_CANDLES_PER_SERIES {
            minutes.pop_front();
        }
        minutes.push_back(Candle::of_trade(
            CandleInterval::OneMinute.open_time_ms(time_ms),
            price,
            base,
            quote,
        ));
    }

    /// The candles that open within `[start_ms, end_ms]`, oldest first; when more than `limit`
    /// match, the newest `limit` of them.
    pub fn candles(&self, interval: CandleInterval, start_ms: u64, end_ms: u64, limit: usize) -> Vec<Candle> {
        let mut series: VecDeque<Candle> = self.series[interval.index()].clone();
        if interval != CandleInterval::OneMinute {
            if let Some(open_minute) = self.series[CandleInterval::OneMinute.index()].back() {
                fold_minute(&mut series, interval, open_minute);
            }
        }
        let matching: Vec<Candle> = series
            .into_iter()
            .filter(|candle| candle.open_time_ms >= start_ms && candle.open_time_ms <= end_ms)
            .collect();
        let skip = matching.len().saturating_sub(limit);
        matching.into_iter().skip(skip).collect()
    }

    /// The series of each interval in [`CandleInterval::ALL`]'s order, oldest first, for a
    /// snapshot.
    pub fn series(&self) -> [Vec<Candle>; 8] {
        std::array::from_fn(|index| self.series[index].iter().copied().collect())
    }

    /// A series restored from [`CandleSeries::series`].
    pub fn restore(series: [Vec<Candle>; 8]) -> CandleSeries {
        CandleSeries {
            series: series.map(VecDeque::from),
        }
    }

    /// Every candle of every interval, for the state hash.
    pub fn all(&self) -> impl Iterator<Item = &Candle> {
        self.series.iter().flat_map(|series| series.iter())
    }
}

/// Merges a one-minute candle into a longer interval's series.
fn fold_minute(series: &mut VecDeque<Candle>, interval: CandleInterval, minute: &Candle) {
    let open_time_ms = interval.open_time_ms(minute.open_time_ms);
    match series.back_mut() {
        Some(candle) if candle.open_time_ms == open_time_ms => candle.fold(minute),
        _ => series.push_back(Candle {
            open_time_ms,
            ..*minute
        }),
    }
}

/// Folds `candles` (of a shorter interval, oldest first) into `interval`'s, oldest first.
pub fn fold_candles(interval: CandleInterval, candles: impl IntoIterator<Item = Candle>) -> Vec<Candle> {
    let mut folded: VecDeque<Candle> = VecDeque::new();
    for candle in candles {
        fold_minute(&mut folded, interval, &candle);
    }
    folded.into()
}

/// An account's average-cost position on one pair. Amounts are in base units and quote units.
///
/// `net_base` is base bought minus base sold. `open_cost_quote` is the quote cost of the open
/// net amount (positive for long and short alike); the average entry price is their ratio.
/// When a fill reduces the position, the cost removed is proportional to the amount closed,
/// rounded down to a whole quote unit, and the difference to the fill's value is realized.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Position {
    /// Base bought minus base sold.
    pub net_base: i128,
    /// The cost of the open net amount, in quote units.
    pub open_cost_quote: u128,
    /// Profit or loss realized when the net amount was reduced, in quote units.
    pub realized_pnl_quote: i128,
}

impl Position {
    /// Folds one fill in: `base` bought (`is_buy`) or sold at total value `quote`.
    pub fn record_fill(&mut self, is_buy: bool, base: u128, quote: u128) {
        let base_signed = i128::try_from(base).unwrap_or(i128::MAX);
        let increases = self.net_base == 0 || (self.net_base > 0) == is_buy;
        if increases {
            self.open_cost_quote = self.open_cost_quote.saturating_add(quote);
            self.net_base = if is_buy {
                self.net_base.saturating_add(base_signed)
            } else {
                self.net_base.saturating_sub(base_signed)
            };
            return;
        }
        let open_amount = self.net_base.unsigned_abs();
        let closed = base.min(open_amount);
        let removed_cost =
            multiply_divide_rounding_down(self.open_cost_quote, closed, open_amount).unwrap_or(self.open_cost_quote);
        // The quote value of the closing part of this fill, in proportion to the whole fill.
        let closing_value = multiply_divide_rounding_down(quote, closed, base).unwrap_or(quote);
        let closing_value_signed = i128::try_from(closing_value).unwrap_or(i128::MAX);
        let removed_cost_signed = i128::try_from(removed_cost).unwrap_or(i128::MAX);
        let realized = if self.net_base > 0 {
            closing_value_signed - removed_cost_signed
        } else {
            removed_cost_signed - closing_value_signed
        };
        self.realized_pnl_quote = self.realized_pnl_quote.saturating_add(realized);
        self.open_cost_quote -= removed_cost;
        let closed_signed = i128::try_from(closed).unwrap_or(i128::MAX);
        self.net_base = if is_buy {
            self.net_base + closed_signed
        } else {
            self.net_base - closed_signed
        };
        if self.net_base == 0 {
            self.open_cost_quote = 0;
        }
        let rest = base - closed;
        if rest > 0 {
            self.record_fill(is_buy, rest, quote - closing_value);
        }
    }

    /// The unrealized profit or loss of the open net amount at `mark_quote_value`, the quote
    /// value of the whole open amount at the mark price.
    pub fn unrealized_pnl_quote(&self, mark_quote_value: u128) -> i128 {
        let mark = i128::try_from(mark_quote_value).unwrap_or(i128::MAX);
        let cost = i128::try_from(self.open_cost_quote).unwrap_or(i128::MAX);
        if self.net_base >= 0 {
            mark - cost
        } else {
            cost - mark
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn price(ticks: u64) -> Price {
        Price::from_ticks(ticks).unwrap()
    }

    #[test]
    fn candles_open_on_their_period_boundaries() {
        assert_eq!(CandleInterval::OneMinute.open_time_ms(119_999), 60_000);
        assert_eq!(CandleInterval::OneHour.open_time_ms(3_600_000 * 5 + 1), 3_600_000 * 5);
        // 1970-01-05 was the first Monday.
        assert_eq!(CandleInterval::OneWeek.open_time_ms(4 * DAY_MS), 4 * DAY_MS);
        assert_eq!(CandleInterval::OneWeek.open_time_ms(11 * DAY_MS - 1), 4 * DAY_MS);
        // 2024-11-18 (a Monday) 00:00 UTC.
        assert_eq!(
            CandleInterval::OneWeek.open_time_ms(1_732_000_000_000),
            1_731_888_000_000
        );
    }

    #[test]
    fn candles_fold_trades_and_skip_empty_periods() {
        let mut candles = CandleSeries::default();
        candles.record_trade(60_000, price(10), Amount::from_units(1), Amount::from_units(10));
        candles.record_trade(61_000, price(12), Amount::from_units(2), Amount::from_units(24));
        candles.record_trade(62_000, price(9), Amount::from_units(1), Amount::from_units(9));
        candles.record_trade(240_000, price(11), Amount::from_units(1), Amount::from_units(11));
        let minutes = candles.candles(CandleInterval::OneMinute, 0, u64::MAX, 10);
        assert_eq!(minutes.len(), 2);
        assert_eq!(
            minutes[0],
            Candle {
                open_time_ms: 60_000,
                open: price(10),
                high: price(12),
                low: price(9),
                close: price(9),
                volume: Amount::from_units(4),
                quote_volume: Amount::from_units(43),
                trades: 3,
            }
        );
        assert_eq!(minutes[1].open_time_ms, 240_000);
        assert_eq!(
            candles.candles(CandleInterval::OneMinute, 0, u64::MAX, 1)[0].open_time_ms,
            240_000
        );
        assert_eq!(
            candles.candles(CandleInterval::FiveMinutes, 0, u64::MAX, 10)[0].trades,
            4
        );
    }

    #[test]
    fn longer_intervals_agree_with_folding_every_trade_directly() {
        let mut candles = CandleSeries::default();
        let trades: Vec<(u64, u64)> = (0..500u64)
            .map(|i| (i * 37_003 % 3_000_000 + i * 40_000, 100 + (i * 7919) % 50))
            .collect();
        let mut sorted = trades.clone();
        sorted.sort();
        for (time, ticks) in &sorted {
            candles.record_trade(
                *time,
                price(*ticks),
                Amount::from_units(2),
                Amount::from_units(2 * u128::from(*ticks)),
            );
        }
        for interval in CandleInterval::ALL {
            let mut expected: Vec<Candle> = Vec::new();
            for (time, ticks) in &sorted {
                let open_time_ms = interval.open_time_ms(*time);
                let quote = Amount::from_units(2 * u128::from(*ticks));
                match expected.last_mut() {
                    Some(candle) if candle.open_time_ms == open_time_ms => {
                        candle.high = candle.high.max(price(*ticks));
                        candle.low = candle.low.min(price(*ticks));
                        candle.close = price(*ticks);
                        candle.volume = candle.volume.checked_add(Amount::from_units(2)).unwrap();
                        candle.quote_volume = candle.quote_volume.checked_add(quote).unwrap();
                        candle.trades += 1;
                    }
                    _ => expected.push(Candle {
                        open_time_ms,
                        open: price(*ticks),
                        high: price(*ticks),
                        low: price(*ticks),
                        close: price(*ticks),
                        volume: Amount::from_units(2),
                        quote_volume: quote,
                        trades: 1,
                    }),
                }
            }
            assert_eq!(
                candles.candles(interval, 0, u64::MAX, usize::MAX),
                expected,
                "{interval:?}"
            );
        }
    }

    #[test]
    fn positions_use_average_cost() {
        let mut position = Position::default();
        position.record_fill(true, 10, 1_000); // long 10 at 100
        position.record_fill(true, 10, 1_200); // long 20, cost 2,200 (average 110)
        position.record_fill(false, 5, 600); // sell 5 at 120: realize 600 - 550 = 50
        assert_eq!(position.net_base, 15);
        assert_eq!(position.open_cost_quote, 1_650);
        assert_eq!(position.realized_pnl_quote, 50);
        position.record_fill(false, 20, 2_000); // sell 20 at 100: close 15 (realize 1,500 - 1,650), short 5
        assert_eq!(position.net_base, -5);
        assert_eq!(position.realized_pnl_quote, 50 - 150);
        assert_eq!(position.open_cost_quote, 500);
        assert_eq!(position.unrealized_pnl_quote(450), 50);
    }
}
