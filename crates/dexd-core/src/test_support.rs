//! What the core's unit and scenario tests share: the ETH/USDC market they trade on and the
//! checked way to run a command. Test code only; nothing here is built into the venue.

use crate::decimal::Decimal;
use crate::engine::{Command, Engine};
use crate::events::{Event, Rejection};
use crate::money::{AssetIndex, FeeRate};
use crate::pair::{AssetSpec, PairDefinition};

pub(crate) const ETH: AssetIndex = AssetIndex(0);
pub(crate) const USDC: AssetIndex = AssetIndex(1);

/// ETH (18 decimals) and USDC (6 decimals), in that order.
pub(crate) fn eth_and_usdc() -> Vec<AssetSpec> {
    vec![AssetSpec { decimals: 18 }, AssetSpec { decimals: 6 }]
}

pub(crate) fn decimal(text: &str) -> Decimal {
    Decimal::parse(text).unwrap()
}

/// ETH/USDC with tick 0.01, step 0.0001, minimum 0.001 ETH and 1 USDC, fees 0.1 % / 0.2 %.
pub(crate) fn eth_usdc_definition() -> PairDefinition {
    PairDefinition {
        base: ETH,
        quote: USDC,
        tick_size: decimal("0.01"),
        step_size: decimal("0.0001"),
        min_amount: decimal("0.001"),
        min_notional: decimal("1"),
        maker_fee: FeeRate::from_parts_per_million(1_000).unwrap(),
        taker_fee: FeeRate::from_parts_per_million(2_000).unwrap(),
        fee_raise: None,
    }
}

/// Runs a command at `time_ms` and checks what every command must keep: a rejection emits
/// nothing and changes nothing (the state hash is the same), and every invariant holds after.
pub(crate) fn execute_checked(engine: &mut Engine, command: Command, time_ms: u64) -> Result<Vec<Event>, Rejection> {
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
