//! The fixtures themselves: what they build is what the engine takes.

use crate::testing::*;
use crate::{Command, Direction};

#[test]
fn the_markets_are_ones_the_engine_takes() {
    Market::eth_usdc().engine();
    Market::whole_units().engine();
}

#[test]
fn accounts_and_ids_are_distinct_and_keep_their_number() {
    assert_ne!(account(1), account(2));
    assert_ne!(order_id(1), order_id(2));
    assert_eq!(order_id(7).as_bytes()[..8], 7u64.to_be_bytes());
    let mut first = SplitMix(3);
    let mut second = SplitMix(3);
    assert_eq!(first.next_u64(), second.next_u64());
    assert!(first.below(10) < 10);
}

#[test]
fn a_funded_account_places_a_limit_order() {
    let mut engine = Market::eth_usdc().engine();
    let mut events = Vec::new();
    engine
        .execute(deposit(account(0), QUOTE, 10u128.pow(12)), 1, &mut events)
        .unwrap();
    let buy = order(1, account(0), Direction::Buy, Some(100_000), 10_000);
    engine.execute(Command::PlaceOrder(buy), 2, &mut events).unwrap();
    assert!(engine.open_order(&order_id(1)).is_some());
}
