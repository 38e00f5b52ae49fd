//! Every pair's candles from its first trade, in the history (`candles`): the projector folds
//! each batch's trades into the one-minute, one-hour and one-day candles they fall in, and a
//! read folds those into any interval of the contract (five minutes from minutes, four hours
//! from hours, a week from days), newest first or paging forward from a time.
//!
//! The engine keeps the newest candles in memory for the streams; this module is what lets
//! `GET /order/tradesOHCL` reach back to the first trade. It reads and writes SQLite only through
//! the connection it is given; it decides nothing about what a candle is (`dexd_core`'s
//! `Candle::fold` does).

use std::collections::BTreeMap;

use dexd_core::{Candle, CandleInterval, PairIndex, Trade};
use rusqlite::{params, Connection, OptionalExtension, Transaction};

use super::database::{to_sql_integer, StoreError};
use crate::codec;

/// What a candle read asks for: the candles that open within `[start_ms, end_ms]`, `limit` of
/// them: the newest (`forward_from` none), or the oldest opening at or after `forward_from`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CandleQuery {
    /// The earliest opening time, in ms.
    pub start_ms: u64,
    /// The latest opening time, in ms.
    pub end_ms: u64,
    /// How many candles at most.
    pub limit: usize,
    /// Page forward from this opening time (a cursor), oldest first; `None`: the newest.
    pub forward_from: Option<u64>,
}

/// A page of candles, oldest first, and where the next page opens when paging forward and more
/// remain in the range.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CandlePage {
    /// The candles, oldest first.
    pub candles: Vec<Candle>,
    /// The opening time of the next candle in the range, when paging forward and there is one.
    pub next_cursor: Option<u64>,
}

/// Folds a batch's trades into the kept candles they fall in, each candle read once and
/// written once.
pub(super) fn project_candles<'a>(
    transaction: &Transaction<'_>,
    trades: impl Iterator<Item = &'a Trade>,
) -> Result<(), StoreError> {
    let mut touched: BTreeMap<(u16, u8, u64), Candle> = BTreeMap::new();
    let mut read = transaction
        .prepare_cached("SELECT record FROM candles WHERE pair = ?1 AND interval = ?2 AND open_time_ms = ?3")?;
    for trade in trades {
        for interval in CandleInterval::KEPT {
            let open_time_ms = interval.open_time_ms(trade.timestamp_ms);
            let key = (trade.pair.0, interval.number(), open_time_ms);
            let of_trade = Candle::of_trade(open_time_ms, trade.price, trade.base_amount, trade.cost);
            if let Some(candle) = touched.get_mut(&key) {
                candle.fold(&of_trade);
                continue;
            }
            let stored: Option<Vec<u8>> = read
                .query_row(params![key.0, key.1, to_sql_integer(open_time_ms)], |row| row.get(0))
                .optional()?;
            let candle = match stored {
                Some(bytes) => {
                    let mut candle = codec::decode_candle(&bytes)?;
                    candle.fold(&of_trade);
                    candle
                }
                None => of_trade,
            };
            touched.insert(key, candle);
        }
    }
    let mut write = transaction.prepare_cached(
        "INSERT OR REPLACE INTO candles (pair, interval, open_time_ms, record) VALUES (?1, ?2, ?3, ?4)",
    )?;
    for ((pair, interval, open_time_ms), candle) in touched {
        write.execute(params![
            pair,
            interval,
            to_sql_integer(open_time_ms),
            codec::encode_candle(&candle)
        ])?;
    }
    Ok(())
}

/// A page of `pair`'s candles of `interval`, folded from the kept candles of its source.
pub(super) fn read_candles(
    connection: &Connection,
    pair: PairIndex,
    interval: CandleInterval,
    query: CandleQuery,
) -> Result<CandlePage, StoreError> {
    let source = interval.source();
    let length = interval.length_ms();
    // A candle opens within [start, end] when the source candles it folds open within
    // [the first opening at or after start, the opening of end's candle + its length).
    let first = interval.open_time_ms(query.start_ms);
    let first = if first < query.start_ms {
        first.saturating_add(length)
    } else {
        first
    };
    let first = query
        .forward_from
        .map_or(first, |cursor| first.max(interval.open_time_ms(cursor)));
    let past = interval.open_time_ms(query.end_ms).saturating_add(length);
    let forward = query.forward_from.is_some();
    let sql = if forward {
        "SELECT record FROM candles WHERE pair = ?1 AND interval = ?2 AND open_time_ms >= ?3 AND open_time_ms < ?4
         ORDER BY open_time_ms ASC"
    } else {
        "SELECT record FROM candles WHERE pair = ?1 AND interval = ?2 AND open_time_ms >= ?3 AND open_time_ms < ?4
         ORDER BY open_time_ms DESC"
    };
    let mut statement = connection.prepare_cached(sql)?;
    let mut rows = statement.query(params![
        pair.0,
        source.number(),
        to_sql_integer(first),
        to_sql_integer(past)
    ])?;
    // Source candles in the order read, until one would open the (limit + 1)th candle: its
    // opening is the next page's cursor.
    let mut taken: Vec<Candle> = Vec::new();
    let mut openings = 0usize;
    let mut last_opening = None;
    let mut next_cursor = None;
    while let Some(row) = rows.next()? {
        let candle = codec::decode_candle(&row.get::<_, Vec<u8>>(0)?)?;
        let opening = interval.open_time_ms(candle.open_time_ms);
        if last_opening != Some(opening) {
            if openings == query.limit {
                next_cursor = forward.then_some(opening);
                break;
            }
            openings += 1;
            last_opening = Some(opening);
        }
        taken.push(candle);
    }
    if !forward {
        taken.reverse();
    }
    Ok(CandlePage {
        candles: dexd_core::market_data::fold_candles(interval, taken),
        next_cursor,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use dexd_core::testing::{SplitMix, ALICE, BOB};
    use dexd_core::{Amount, Direction, OrderId, Price, Quantity};

    const PAIR: PairIndex = PairIndex(0);
    const DAY_MS: u64 = 86_400_000;

    fn history() -> Connection {
        let connection = Connection::open_in_memory().unwrap();
        connection.execute_batch(super::super::history::HISTORY_SCHEMA).unwrap();
        connection
    }

    fn trade(trade_id: u64, timestamp_ms: u64, price: u64, base: u128) -> Trade {
        Trade {
            trade_id,
            pair: PAIR,
            price: Price::from_ticks(price).unwrap(),
            quantity: Quantity::from_lots(1),
            base_amount: Amount::from_units(base),
            cost: Amount::from_units(base * u128::from(price)),
            taker_direction: Direction::Buy,
            maker_order_id: OrderId::from_bytes([1; 32]),
            taker_order_id: OrderId::from_bytes([2; 32]),
            maker_account: ALICE,
            taker_account: BOB,
            maker_fee: Amount::ZERO,
            taker_fee: Amount::ZERO,
            timestamp_ms,
        }
    }

    /// The obvious candles: every trade folded straight into its period, oldest first.
    fn naive(trades: &[Trade], interval: CandleInterval) -> Vec<Candle> {
        let mut candles: BTreeMap<u64, Candle> = BTreeMap::new();
        for trade in trades {
            let open = interval.open_time_ms(trade.timestamp_ms);
            let of_trade = Candle::of_trade(open, trade.price, trade.base_amount, trade.cost);
            candles
                .entry(open)
                .and_modify(|candle| candle.fold(&of_trade))
                .or_insert(of_trade);
        }
        candles.into_values().collect()
    }

    /// Five weeks of trades, in batches of random size, a few seconds to hours apart.
    fn five_weeks() -> (Connection, Vec<Trade>) {
        let mut connection = history();
        let mut random = SplitMix(7);
        let mut trades = Vec::new();
        let mut time_ms = 1_767_225_600_000 + 3 * 3_600_000 + 17;
        while time_ms < 1_767_225_600_000 + 35 * DAY_MS {
            let gap_bound = if random.below(10) == 0 { 20_000_000 } else { 90_000 };
            time_ms += 1 + random.below(gap_bound);
            trades.push(trade(
                trades.len() as u64 + 1,
                time_ms,
                900 + random.below(200),
                1 + u128::from(random.below(50)),
            ));
        }
        for batch in trades.chunks(97) {
            let transaction = connection.transaction().unwrap();
            project_candles(&transaction, batch.iter()).unwrap();
            transaction.commit().unwrap();
        }
        (connection, trades)
    }

    fn read(connection: &Connection, interval: CandleInterval, query: CandleQuery) -> CandlePage {
        read_candles(connection, PAIR, interval, query).unwrap()
    }

    #[test]
    fn every_interval_read_from_the_kept_candles_is_the_trades_folded_straight() {
        let (connection, trades) = five_weeks();
        for interval in CandleInterval::ALL {
            let expected = naive(&trades, interval);
            let everything = CandleQuery {
                start_ms: 0,
                end_ms: u64::MAX,
                limit: 1_000_000,
                forward_from: None,
            };
            assert_eq!(
                read(&connection, interval, everything).candles,
                expected,
                "{interval:?}"
            );
            // The newest few, within a range that starts inside a candle (that one is left out:
            // it opens before the range).
            let start_ms = expected[3].open_time_ms + 1;
            let newest = read(
                &connection,
                interval,
                CandleQuery {
                    start_ms,
                    end_ms: u64::MAX,
                    limit: 2,
                    forward_from: None,
                },
            );
            assert_eq!(newest.candles, expected[expected.len() - 2..].to_vec(), "{interval:?}");
            assert_eq!(newest.next_cursor, None);
        }
    }

    #[test]
    fn paging_forward_by_cursor_visits_every_candle_once_in_order() {
        let (connection, trades) = five_weeks();
        for interval in [
            CandleInterval::OneMinute,
            CandleInterval::FourHours,
            CandleInterval::OneWeek,
        ] {
            let expected = naive(&trades, interval);
            let mut seen = Vec::new();
            let mut cursor = Some(0);
            let mut pages = 0;
            while let Some(from) = cursor {
                let page = read(
                    &connection,
                    interval,
                    CandleQuery {
                        start_ms: 0,
                        end_ms: u64::MAX,
                        limit: 7,
                        forward_from: Some(from),
                    },
                );
                assert!(page.candles.len() <= 7);
                seen.extend(page.candles);
                cursor = page.next_cursor;
                pages += 1;
            }
            assert_eq!(seen, expected, "{interval:?}");
            assert_eq!(pages, expected.len().div_ceil(7).max(1), "{interval:?}");
            // A range ending inside: candles opening after its end are left out.
            let end_ms = expected[5].open_time_ms;
            let page = read(
                &connection,
                interval,
                CandleQuery {
                    start_ms: 0,
                    end_ms,
                    limit: 100,
                    forward_from: Some(expected[2].open_time_ms),
                },
            );
            assert_eq!(page.candles, expected[2..=5].to_vec(), "{interval:?}");
            assert_eq!(page.next_cursor, None);
        }
    }
}
