//! Assets and pairs: their rules (decimals, tick, step, minimums, fees) and the exact conversions
//! between wire decimals and the engine's integers.
//!
//! A [`PairSpec`] is checked once, when it is built, so that every later `price × amount` is an
//! exact whole number of quote units: `tick size × step size × 10^quote decimals` must be a whole
//! number. This module does not hold balances or orders.

use crate::decimal::{format_scaled_units, power_of_ten, Decimal, DecimalError};
use crate::money::{Amount, AssetIndex, FeeRate, Price, Quantity};

/// The rules of one asset on one chain, as the engine needs them.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct AssetSpec {
    /// How many decimals the asset's smallest unit has (18 for ETH, 6 for USDC).
    pub decimals: u32,
}

/// The largest number of decimals an asset may have; 10^36 units of such an asset still leave
/// room in a `u128` for 10^2 whole coins, and no real token goes past 18.
pub const MAX_ASSET_DECIMALS: u32 = 36;

/// A pair as configured, in decimals, before it is checked.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairDefinition {
    /// The asset bought and sold.
    pub base: AssetIndex,
    /// The asset prices are quoted in.
    pub quote: AssetIndex,
    /// The price increment, in quote per base.
    pub tick_size: Decimal,
    /// The amount increment, in base.
    pub step_size: Decimal,
    /// The smallest order amount, in base.
    pub min_amount: Decimal,
    /// The smallest order value (price × amount), in quote.
    pub min_notional: Decimal,
    /// The fee rate of the resting side of a trade.
    pub maker_fee: FeeRate,
    /// The fee rate of the incoming side of a trade.
    pub taker_fee: FeeRate,
    /// A raise of these fees announced ahead: in force from its time on (contract version 5:
    /// a raise takes effect no earlier than the chain's `fee_notice_ms` after the configuration
    /// that announced it was journaled; a cut applies at once).
    pub fee_raise: Option<FeeRaise>,
}

/// A raise of a pair's fees, announced ahead of its time.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FeeRaise {
    /// The maker fee rate from `effective_at_ms` on.
    pub maker_fee: FeeRate,
    /// The taker fee rate from `effective_at_ms` on.
    pub taker_fee: FeeRate,
    /// When it applies, in ms since the epoch (the engine's time, which the journal carries).
    pub effective_at_ms: u64,
}

/// Why a pair definition is refused.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PairSpecError {
    /// The base or quote index names no asset.
    UnknownAsset,
    /// Base and quote are the same asset.
    SameAsset,
    /// A size is zero.
    ZeroSize(&'static str),
    /// The step is finer than the base asset's smallest unit.
    StepFinerThanBaseUnit,
    /// `tick × step` is not a whole number of quote units, so some fills would not be exact.
    CostNotExact,
    /// A minimum is not a multiple of the base or quote unit.
    MinimumNotExact(&'static str),
    /// A size does not fit the engine's integers.
    TooLarge(&'static str),
}

impl std::fmt::Display for PairSpecError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PairSpecError::UnknownAsset => write!(formatter, "base or quote is not an asset of the chain"),
            PairSpecError::SameAsset => write!(formatter, "base and quote must be different assets"),
            PairSpecError::ZeroSize(name) => write!(formatter, "{name} must be positive"),
            PairSpecError::StepFinerThanBaseUnit => {
                write!(
                    formatter,
                    "step size must be a whole number of the base asset's smallest unit"
                )
            }
            PairSpecError::CostNotExact => write!(
                formatter,
                "tick size × step size must be a whole number of the quote asset's smallest unit, \
                 so that every price × amount is exact"
            ),
            PairSpecError::MinimumNotExact(name) => {
                write!(formatter, "{name} has more decimals than its asset allows")
            }
            PairSpecError::TooLarge(name) => write!(formatter, "{name} is too large"),
        }
    }
}

impl std::error::Error for PairSpecError {}

/// Why a price or amount given as a decimal does not fit a pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PairValueError {
    /// The decimal itself is unacceptable (more decimals than the asset has, too large...).
    Decimal(DecimalError),
    /// Zero where a positive value is needed.
    Zero,
    /// The price is not a multiple of the tick size.
    NotOnTick,
    /// The amount is not a multiple of the step size.
    NotOnStep,
    /// The value is larger than the engine's integers hold.
    TooLarge,
}

/// A fee rate written as a decimal fraction of what it is taken from (`0.001` is 0.1 %): at most
/// 1, with at most 6 decimals (a rate is whole parts per million); `None` otherwise.
pub fn fee_rate_from_decimal(rate: Decimal) -> Option<FeeRate> {
    rate.to_scaled_units(6)
        .ok()
        .and_then(|parts| u32::try_from(parts).ok())
        .and_then(FeeRate::from_parts_per_million)
}

/// A fee rate as the decimal fraction the API and the configuration write (`0.001`).
pub fn fee_rate_text(rate: FeeRate) -> String {
    format_scaled_units(u128::from(rate.parts_per_million()), 6)
}

/// A checked pair: every conversion and cost below is exact.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PairSpec {
    base: AssetIndex,
    quote: AssetIndex,
    base_decimals: u32,
    quote_decimals: u32,
    tick_size: Decimal,
    step_units: u128,
    quote_units_per_tick_lot: u128,
    min_quantity: Quantity,
    min_notional: Amount,
    maker_fee: FeeRate,
    taker_fee: FeeRate,
    fee_raise: Option<FeeRaise>,
}

impl PairSpec {
    /// Checks a definition against its chain's assets.
    pub fn new(definition: &PairDefinition, assets: &[AssetSpec]) -> Result<PairSpec, PairSpecError> {
        let base_asset = assets
            .get(usize::from(definition.base.0))
            .ok_or(PairSpecError::UnknownAsset)?;
        let quote_asset = assets
            .get(usize::from(definition.quote.0))
            .ok_or(PairSpecError::UnknownAsset)?;
        if definition.base == definition.quote {
            return Err(PairSpecError::SameAsset);
        }
        for (name, value) in [("tick size", definition.tick_size), ("step size", definition.step_size)] {
            if value.is_zero() {
                return Err(PairSpecError::ZeroSize(name));
            }
        }
        let step_units = definition
            .step_size
            .to_scaled_units(base_asset.decimals)
            .map_err(|error| match error {
                DecimalError::TooPrecise => PairSpecError::StepFinerThanBaseUnit,
                _ => PairSpecError::TooLarge("step size"),
            })?;
        if step_units > u128::from(u64::MAX) {
            return Err(PairSpecError::TooLarge("step size"));
        }
        let quote_units_per_tick_lot =
            exact_product_in_units(definition.tick_size, definition.step_size, quote_asset.decimals)?;
        let min_units = definition
            .min_amount
            .to_scaled_units(base_asset.decimals)
            .map_err(|_| PairSpecError::MinimumNotExact("minimum amount"))?;
        let min_notional_units = definition
            .min_notional
            .to_scaled_units(quote_asset.decimals)
            .map_err(|_| PairSpecError::MinimumNotExact("minimum notional"))?;
        let min_lots =
            u64::try_from(min_units.div_ceil(step_units)).map_err(|_| PairSpecError::TooLarge("minimum amount"))?;
        Ok(PairSpec {
            base: definition.base,
            quote: definition.quote,
            base_decimals: base_asset.decimals,
            quote_decimals: quote_asset.decimals,
            tick_size: definition.tick_size,
            step_units,
            quote_units_per_tick_lot,
            min_quantity: Quantity::from_lots(min_lots),
            min_notional: Amount::from_units(min_notional_units),
            maker_fee: definition.maker_fee,
            taker_fee: definition.taker_fee,
            fee_raise: definition.fee_raise,
        })
    }

    /// The base asset.
    pub fn base(&self) -> AssetIndex {
        self.base
    }

    /// The quote asset.
    pub fn quote(&self) -> AssetIndex {
        self.quote
    }

    /// The maker fee rate.
    pub fn maker_fee(&self) -> FeeRate {
        self.maker_fee
    }

    /// The taker fee rate.
    pub fn taker_fee(&self) -> FeeRate {
        self.taker_fee
    }

    /// The raise of the fees announced, if one is.
    pub fn fee_raise(&self) -> Option<FeeRaise> {
        self.fee_raise
    }

    /// The (maker, taker) fee rates in force at `now_ms`: the announced raise's once its time
    /// has come, the configured ones before.
    pub fn fees_at(&self, now_ms: u64) -> (FeeRate, FeeRate) {
        match self.fee_raise {
            Some(raise) if now_ms >= raise.effective_at_ms => (raise.maker_fee, raise.taker_fee),
            _ => (self.maker_fee, self.taker_fee),
        }
    }

    /// The smallest order quantity.
    pub fn min_quantity(&self) -> Quantity {
        self.min_quantity
    }

    /// The smallest order value, in quote units.
    pub fn min_notional(&self) -> Amount {
        self.min_notional
    }

    /// How many base units one lot is.
    pub fn step_units(&self) -> u128 {
        self.step_units
    }

    /// How many quote units one tick × one lot costs.
    pub fn quote_units_per_tick_lot(&self) -> u128 {
        self.quote_units_per_tick_lot
    }

    /// The base asset's decimals.
    pub fn base_decimals(&self) -> u32 {
        self.base_decimals
    }

    /// The quote asset's decimals.
    pub fn quote_decimals(&self) -> u32 {
        self.quote_decimals
    }

    /// Parses a price: at most as many decimals as the quote asset, and a positive multiple of the
    /// tick size.
    pub fn price_from_decimal(&self, price: Decimal) -> Result<Price, PairValueError> {
        if price.scale() > self.quote_decimals {
            return Err(PairValueError::Decimal(DecimalError::TooPrecise));
        }
        if price.is_zero() {
            return Err(PairValueError::Zero);
        }
        let common_scale = price.scale().max(self.tick_size.scale());
        let scale_up = |value: Decimal| {
            power_of_ten(common_scale - value.scale())
                .and_then(|factor| value.mantissa().checked_mul(factor))
                .ok_or(PairValueError::TooLarge)
        };
        let price_scaled = scale_up(price)?;
        let tick_scaled = scale_up(self.tick_size)?;
        if price_scaled % tick_scaled != 0 {
            return Err(PairValueError::NotOnTick);
        }
        let ticks = u64::try_from(price_scaled / tick_scaled).map_err(|_| PairValueError::TooLarge)?;
        Price::from_ticks(ticks).ok_or(PairValueError::Zero)
    }

    /// Parses an amount of base: at most as many decimals as the base asset, and a positive
    /// multiple of the step size.
    pub fn quantity_from_decimal(&self, amount: Decimal) -> Result<Quantity, PairValueError> {
        let units = amount
            .to_scaled_units(self.base_decimals)
            .map_err(PairValueError::Decimal)?;
        if units == 0 {
            return Err(PairValueError::Zero);
        }
        if units % self.step_units != 0 {
            return Err(PairValueError::NotOnStep);
        }
        let lots = u64::try_from(units / self.step_units).map_err(|_| PairValueError::TooLarge)?;
        Ok(Quantity::from_lots(lots))
    }

    /// The price as a canonical decimal string in quote per base.
    pub fn format_price(&self, price: Price) -> String {
        let units = u128::from(price.ticks()) * self.tick_size.mantissa();
        format_scaled_units(units, self.tick_size.scale())
    }

    /// The quantity in base units.
    pub fn base_amount(&self, quantity: Quantity) -> Amount {
        // Checked at construction: step_units ≤ u64::MAX, so lots × step_units fits in a u128.
        Amount::from_units(u128::from(quantity.lots()) * self.step_units)
    }

    /// The exact quote cost of `quantity` at `price`, or `None` when it does not fit a `u128`.
    pub fn cost(&self, price: Price, quantity: Quantity) -> Option<Amount> {
        (u128::from(price.ticks()) * u128::from(quantity.lots()))
            .checked_mul(self.quote_units_per_tick_lot)
            .map(Amount::from_units)
    }

    /// How many whole lots `budget` buys at `price`, rounded down.
    pub fn affordable_quantity_rounded_down(&self, price: Price, budget: Amount) -> Quantity {
        let per_lot = u128::from(price.ticks()) * self.quote_units_per_tick_lot;
        let lots = budget.units() / per_lot;
        Quantity::from_lots(u64::try_from(lots).unwrap_or(u64::MAX))
    }
}

/// `tick × step × 10^decimals` as a whole number, or the reason it is not one.
fn exact_product_in_units(tick: Decimal, step: Decimal, decimals: u32) -> Result<u128, PairSpecError> {
    let mantissa = tick
        .mantissa()
        .checked_mul(step.mantissa())
        .ok_or(PairSpecError::TooLarge("tick size × step size"))?;
    let product =
        Decimal::from_parts(mantissa, tick.scale() + step.scale()).map_err(|_| PairSpecError::CostNotExact)?;
    let units = product.to_scaled_units(decimals).map_err(|error| match error {
        DecimalError::TooPrecise => PairSpecError::CostNotExact,
        _ => PairSpecError::TooLarge("tick size × step size"),
    })?;
    if units > u128::from(u64::MAX) {
        return Err(PairSpecError::TooLarge("tick size × step size"));
    }
    Ok(units)
}

#[cfg(test)]
mod tests {
    use super::*;

    use crate::testing::{decimal, eth_and_usdc, eth_usdc_definition};

    /// A fee rate reads from at most 6 decimals up to 1, and writes back as it was read.
    #[test]
    fn a_fee_rate_reads_and_writes_as_a_decimal_fraction() {
        for (text, parts_per_million) in [("0", 0), ("0.001", 1_000), ("0.000001", 1), ("1", 1_000_000)] {
            let rate = fee_rate_from_decimal(decimal(text)).unwrap();
            assert_eq!(rate.parts_per_million(), parts_per_million, "{text}");
            assert_eq!(decimal(&fee_rate_text(rate)), decimal(text), "{text}");
        }
        for text in ["0.0000001", "1.000001", "2"] {
            assert_eq!(fee_rate_from_decimal(decimal(text)), None, "{text}");
        }
    }

    fn eth_usdc() -> PairSpec {
        PairSpec::new(&eth_usdc_definition(), &eth_and_usdc()).unwrap()
    }

    #[test]
    fn costs_are_exact_in_quote_units() {
        let pair = eth_usdc();
        assert_eq!(pair.quote_units_per_tick_lot(), 1);
        let price = pair.price_from_decimal(decimal("2500.5")).unwrap();
        let quantity = pair.quantity_from_decimal(decimal("1.5")).unwrap();
        assert_eq!(pair.cost(price, quantity).unwrap(), Amount::from_units(3_750_750_000));
        assert_eq!(pair.format_price(price), "2500.5");
        assert_eq!(
            pair.base_amount(quantity),
            Amount::from_units(1_500_000_000_000_000_000)
        );
        assert_eq!(pair.min_quantity(), Quantity::from_lots(10));
    }

    #[test]
    fn refuses_prices_off_tick_and_amounts_off_step() {
        let pair = eth_usdc();
        assert_eq!(
            pair.price_from_decimal(decimal("2500.001")),
            Err(PairValueError::NotOnTick)
        );
        assert_eq!(
            pair.price_from_decimal(decimal("2500.0000001")),
            Err(PairValueError::Decimal(DecimalError::TooPrecise))
        );
        assert_eq!(pair.price_from_decimal(decimal("0")), Err(PairValueError::Zero));
        assert_eq!(
            pair.quantity_from_decimal(decimal("0.00001")),
            Err(PairValueError::NotOnStep)
        );
        assert_eq!(
            pair.quantity_from_decimal(decimal("0.0000000000000000001")),
            Err(PairValueError::Decimal(DecimalError::TooPrecise))
        );
        assert_eq!(pair.quantity_from_decimal(decimal("0")), Err(PairValueError::Zero));
        assert_eq!(
            pair.quantity_from_decimal(decimal("100000000000000000")),
            Err(PairValueError::TooLarge)
        );
    }

    #[test]
    fn refuses_pairs_whose_fills_would_not_be_exact() {
        let assets = [AssetSpec { decimals: 8 }, AssetSpec { decimals: 6 }];
        let definition = PairDefinition {
            base: AssetIndex(0),
            quote: AssetIndex(1),
            tick_size: decimal("0.01"),
            step_size: decimal("0.00001"),
            min_amount: decimal("0"),
            min_notional: decimal("0"),
            maker_fee: FeeRate::ZERO,
            taker_fee: FeeRate::ZERO,
            fee_raise: None,
        };
        assert_eq!(PairSpec::new(&definition, &assets), Err(PairSpecError::CostNotExact));
        let finer_than_unit = PairDefinition {
            step_size: decimal("0.000000001"),
            ..definition.clone()
        };
        assert_eq!(
            PairSpec::new(&finer_than_unit, &assets),
            Err(PairSpecError::StepFinerThanBaseUnit)
        );
        let same = PairDefinition {
            quote: AssetIndex(0),
            ..definition
        };
        assert_eq!(PairSpec::new(&same, &assets), Err(PairSpecError::SameAsset));
    }
}
