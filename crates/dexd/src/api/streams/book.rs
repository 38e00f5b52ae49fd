//! The book of the live streams: what changed between two views of a pair's book within a
//! subscription's depth (the levels whose amount or order count changed, appeared, or left the
//! view, those with amount `"0"`), and the contract's checksum of a view.
//!
//! Pure functions over level lists; rendering numbers is left to the caller's pair rules.

use dexd_core::{LevelView, Price};

/// The levels of each side the checksum covers.
pub const CHECKSUM_LEVELS: usize = 25;

/// One changed level: its new aggregate, or `None` when it left the view.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LevelChange {
    /// The level's price.
    pub price: Price,
    /// Its new quantity (lots) and order count, or `None` when removed.
    pub level: Option<(u128, u32)>,
}

/// The changes from `old` to `new` (each a side's levels, best first, already cut to the
/// subscription's depth), best first by the side's order (`descending` for bids).
pub fn changes(old: &[LevelView], new: &[LevelView], descending: bool) -> Vec<LevelChange> {
    let mut changed: Vec<LevelChange> = Vec::new();
    for level in new {
        let before = old.iter().find(|known| known.price == level.price);
        if before.is_none_or(|known| known.quantity != level.quantity || known.orders != level.orders) {
            changed.push(LevelChange {
                price: level.price,
                level: Some((level.quantity, level.orders)),
            });
        }
    }
    for level in old {
        if !new.iter().any(|now| now.price == level.price) {
            changed.push(LevelChange {
                price: level.price,
                level: None,
            });
        }
    }
    if descending {
        changed.sort_by_key(|level| std::cmp::Reverse(level.price));
    } else {
        changed.sort_by_key(|level| level.price);
    }
    changed
}

/// The contract's checksum: CRC-32 (IEEE) of the top [`CHECKSUM_LEVELS`] bids then the top asks,
/// each best first, each written `price:amount` with `format` (canonical decimals), joined by
/// `|`.
pub fn checksum(bids: &[LevelView], asks: &[LevelView], format: impl Fn(&LevelView) -> (String, String)) -> u32 {
    let mut text = String::new();
    for level in bids
        .iter()
        .take(CHECKSUM_LEVELS)
        .chain(asks.iter().take(CHECKSUM_LEVELS))
    {
        if !text.is_empty() {
            text.push('|');
        }
        let (price, amount) = format(level);
        text.push_str(&price);
        text.push(':');
        text.push_str(&amount);
    }
    crc32fast::hash(text.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn level(price: u64, quantity: u128, orders: u32) -> LevelView {
        LevelView {
            price: Price::from_ticks(price).unwrap(),
            quantity,
            orders,
        }
    }

    /// Applies changes to a side, as a client does.
    fn apply(side: &[LevelView], changes: &[LevelChange], descending: bool) -> Vec<LevelView> {
        let mut levels: Vec<LevelView> = side.to_vec();
        for change in changes {
            levels.retain(|known| known.price != change.price);
            if let Some((quantity, orders)) = change.level {
                levels.push(LevelView {
                    price: change.price,
                    quantity,
                    orders,
                });
            }
        }
        if descending {
            levels.sort_by_key(|level| std::cmp::Reverse(level.price));
        } else {
            levels.sort_by_key(|level| level.price);
        }
        levels
    }

    #[test]
    fn the_changes_turn_the_old_view_into_the_new_one_best_first() {
        let old = vec![level(105, 3, 1), level(104, 2, 2), level(101, 1, 1)];
        let new = vec![level(106, 1, 1), level(104, 5, 3), level(101, 1, 1)];
        let changes = changes(&old, &new, true);
        assert_eq!(
            changes,
            vec![
                LevelChange {
                    price: Price::from_ticks(106).unwrap(),
                    level: Some((1, 1))
                },
                LevelChange {
                    price: Price::from_ticks(105).unwrap(),
                    level: None
                },
                LevelChange {
                    price: Price::from_ticks(104).unwrap(),
                    level: Some((5, 3))
                },
            ]
        );
        assert_eq!(apply(&old, &changes, true), new);
        let asks_old = vec![level(110, 1, 1), level(111, 1, 1)];
        let asks_new = vec![level(111, 2, 1), level(112, 1, 1)];
        let ask_changes = super::changes(&asks_old, &asks_new, false);
        assert_eq!(apply(&asks_old, &ask_changes, false), asks_new);
        assert!(super::changes(&new, &new, true).is_empty());
    }

    #[test]
    fn the_checksum_is_crc32_of_the_top_levels_in_the_contracts_text() {
        let bids: Vec<LevelView> = (0..30).map(|index| level(200 - index, 1, 1)).collect();
        let asks = vec![level(201, 2, 1)];
        let format = |level: &LevelView| (level.price.ticks().to_string(), level.quantity.to_string());
        let mut expected = (0..25).map(|index| format!("{}:1", 200 - index)).collect::<Vec<_>>();
        expected.push("201:2".into());
        assert_eq!(
            checksum(&bids, &asks, format),
            crc32fast::hash(expected.join("|").as_bytes())
        );
        assert_eq!(checksum(&[level(1, 1, 1)], &[], format), crc32fast::hash(b"1:1"));
        assert_eq!(crc32fast::hash(b"123456789"), 0xCBF4_3926, "IEEE CRC-32 check value");
    }
}
