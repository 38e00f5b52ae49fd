//! The engine configuration the store's tests run: chain 1 of dexd's embedded configuration
//! (five assets, four pairs against ETH and WBTC), written out so that the store's tests need
//! nothing above this crate.

use dexd_core::{
    Address, AssetIndex, AssetSpec, CustodyMode, Decimal, EngineConfig, EngineLimits, FeeRate, PairDefinition,
};

/// Chain 1 of the embedded configuration, with its default limits.
pub(crate) fn engine_config() -> EngineConfig {
    let decimal = |text: &str| Decimal::parse(text).expect("a valid decimal");
    let pair = |base: u16, quote: u16, min_amount: &str| PairDefinition {
        base: AssetIndex(base),
        quote: AssetIndex(quote),
        tick_size: decimal("0.01"),
        step_size: decimal("0.0001"),
        min_amount: decimal(min_amount),
        min_notional: decimal("1"),
        maker_fee: FeeRate::from_parts_per_million(1_000).expect("a valid fee"),
        taker_fee: FeeRate::from_parts_per_million(2_000).expect("a valid fee"),
        fee_raise: None,
    };
    let mut fee_account = [0u8; 20];
    fee_account[18..].copy_from_slice(&[0xfe, 0xe1]);
    EngineConfig {
        assets: [18, 6, 6, 8, 18].map(|decimals| AssetSpec { decimals }).to_vec(),
        pairs: vec![
            pair(0, 1, "0.001"),
            pair(3, 1, "0.0001"),
            pair(0, 2, "0.001"),
            pair(0, 4, "0.001"),
        ],
        fee_account: Address::from_bytes(fee_account),
        custody: CustodyMode::Ledger,
        limits: EngineLimits::default(),
    }
}
