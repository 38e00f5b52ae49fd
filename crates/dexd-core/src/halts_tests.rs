//! Scenario tests of halted pairs (contract version 5, the operator's `SetPairHalted`): a halted
//! pair takes cancels only (no order, trigger order, amend or TWAP slice), a resumed one trades
//! again, and the halt is part of the state a snapshot restores.

use crate::engine::{Command, Engine, EngineLimits};
use crate::events::{Event, Rejection};
use crate::order::Direction;
use crate::testing::{scenario_config, Venue, ALICE, BOB, ETH, ETH_UNIT, PAIR, USDC, USDC_UNIT};
use crate::twaps::NewTwap;

fn venue() -> Venue {
    let mut venue = Venue::new(scenario_config(EngineLimits::default()), 1_000_000);
    for account in [ALICE, BOB] {
        venue.deposit(account, ETH, 10 * ETH_UNIT);
        venue.deposit(account, USDC, 100_000 * USDC_UNIT);
    }
    venue
}

fn halt(halted: bool) -> Command {
    Command::SetPairHalted { pair: PAIR, halted }
}

#[test]
fn a_halted_pair_takes_cancels_only_and_trades_again_once_resumed() {
    let mut venue = venue();
    let resting = venue.rest(BOB, Direction::Sell, "2000", "1");
    let before = venue.engine.state_hash();
    venue.run(halt(true)).unwrap();
    assert_ne!(venue.engine.state_hash(), before, "a halt is part of the state");
    assert!(venue.engine.is_pair_halted(PAIR));
    let taker = venue.order(ALICE, Direction::Buy, Some("2000"), "0.5");
    assert_eq!(venue.place(taker), Err(Rejection::PairHalted));
    // A TWAP starts, but its slice places nothing while the pair is halted.
    let spec = venue.engine.pair_spec(PAIR).unwrap().clone();
    let twap = NewTwap {
        account: ALICE,
        pair: PAIR,
        direction: Direction::Buy,
        quantity: spec.quantity_from_decimal(crate::testing::decimal("1")).unwrap(),
        duration_ms: 300_000,
        interval_ms: 30_000,
        limit_price: None,
        client_twap_id: None,
    };
    venue.run(Command::StartTwap(twap)).unwrap();
    let slice = venue.run(Command::RunTwapSlice { twap_id: 1, slice: 0 }).unwrap();
    assert!(
        !slice.iter().any(|event| matches!(event, Event::OrderUpdated(_))),
        "{slice:?}"
    );
    // Cancels go through.
    let cancel = Command::CancelOrder {
        account: BOB,
        order_id: resting.order_id,
        pair: Some(PAIR),
    };
    venue.run(cancel).unwrap();

    let restored = Engine::from_state(scenario_config(EngineLimits::default()), &venue.engine.state()).unwrap();
    assert_eq!(restored.state_hash(), venue.engine.state_hash());
    assert!(restored.is_pair_halted(PAIR));

    venue.run(halt(false)).unwrap();
    assert!(venue.engine.halted_pairs().is_empty());
    venue.rest(BOB, Direction::Sell, "2000", "1");
    let taker = venue.order(ALICE, Direction::Buy, Some("2000"), "0.5");
    assert!(venue.place(taker).is_ok());
    assert_eq!(
        venue.run(Command::SetPairHalted {
            pair: crate::money::PairIndex(9),
            halted: true
        }),
        Err(Rejection::UnknownPair)
    );
}
