//! The journal's encoding of a chain's configuration (`Command::Configure`, tag 28), also
//! written in a snapshot's payload: the engine's rules and the chain's description, field by
//! field. This module does no IO.

use dexd_core::{
    Address, AssetDescription, AssetIndex, AssetSpec, ChainConfiguration, ChainDescription, CustodyMode, Decimal,
    EngineConfig, EngineLimits, FeeRaise, FeeRate, PairDefinition,
};

use super::{CodecError, Reader, Writer};

/// The tag of `Command::Configure` as journals before contract version 5 wrote it (read only: no
/// fee notice, no fee raise).
pub(super) const CONFIGURE_TAG: u8 = 28;
/// The tag of `Command::Configure` with the fee notice and each pair's announced fee raise (read
/// only: no venue-signed window).
pub(super) const CONFIGURE_WITH_FEE_NOTICE_TAG: u8 = 32;
/// The tag of `Command::Configure` with the venue-signed window after the rest, and no matching
/// rules: written for a configuration without rules (as every journal before them has).
pub(super) const CONFIGURE_WITH_VENUE_WINDOW_TAG: u8 = 33;
/// The tag of `Command::Configure` with the matching rules after the venue-signed window.
pub(super) const CONFIGURE_WITH_RULES_TAG: u8 = 39;

/// The tag of `Command::SetPairHalted` (contract version 5): the pair, then 1 (halted) or 0.
pub(super) const SET_PAIR_HALTED_TAG: u8 = 38;

/// Which fields a configuration's encoding holds, by the tag it was written under.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum ConfigurationFields {
    /// [`CONFIGURE_TAG`]: no fee notice, no fee raise, no venue-signed window.
    Original,
    /// [`CONFIGURE_WITH_FEE_NOTICE_TAG`]: the fee notice and raises, no venue-signed window.
    WithFeeNotice,
    /// [`CONFIGURE_WITH_VENUE_WINDOW_TAG`] (and snapshots, which keep the rules in a section of
    /// their own): every field but the rules.
    WithVenueWindow,
    /// [`CONFIGURE_WITH_RULES_TAG`]: every field.
    WithRules,
}

/// The most assets, and separately pairs, a configuration may list (indexes are `u16`).
const MAX_LISTED: usize = u16::MAX as usize;

/// Writes a configuration with `fields` (the rules only with [`ConfigurationFields::WithRules`]).
pub(crate) fn put_configuration(writer: &mut Writer, configuration: &ChainConfiguration, fields: ConfigurationFields) {
    let ChainConfiguration { description, engine } = configuration;
    writer.u64(description.chain_id);
    writer.bytes(description.venue_contract.as_bytes());
    writer.u8(match engine.custody {
        CustodyMode::Ledger => 0,
        CustodyMode::Vault => 1,
    });
    writer.bytes(engine.fee_account.as_bytes());
    let limits = engine.limits;
    writer.u32(limits.max_open_orders_per_account);
    for limit in [
        limits.max_resting_orders,
        limits.max_accounts,
        limits.max_live_nonces,
        limits.max_live_nonces_per_account,
        limits.max_pending_transfers,
    ] {
        writer.u64(limit as u64);
    }
    writer.u16(u16::try_from(engine.assets.len()).expect("assets fit u16"));
    for (spec, asset) in engine.assets.iter().zip(&description.assets) {
        writer.text(Some(&asset.symbol));
        writer.optional(asset.token, |writer, token| writer.bytes(token.as_bytes()));
        writer.u32(spec.decimals);
    }
    writer.u16(u16::try_from(engine.pairs.len()).expect("pairs fit u16"));
    for pair in &engine.pairs {
        writer.u16(pair.base.0);
        writer.u16(pair.quote.0);
        for decimal in [pair.tick_size, pair.step_size, pair.min_amount, pair.min_notional] {
            writer.u128(decimal.mantissa());
            writer.u32(decimal.scale());
        }
        writer.u32(pair.maker_fee.parts_per_million());
        writer.u32(pair.taker_fee.parts_per_million());
    }
    // What version 5 adds, after the rest.
    writer.u64(limits.fee_notice_ms);
    for pair in &engine.pairs {
        writer.optional(pair.fee_raise, |writer, raise| {
            writer.u32(raise.maker_fee.parts_per_million());
            writer.u32(raise.taker_fee.parts_per_million());
            writer.u64(raise.effective_at_ms);
        });
    }
    writer.u64(limits.venue_signed_window_ms);
    if fields >= ConfigurationFields::WithRules {
        writer.u64(limits.rules);
    }
}

/// The tag a `Command::Configure` is written under, and its fields: a configuration without
/// rules as before they existed, so that its bytes do not change.
pub(super) fn configure_tag(configuration: &ChainConfiguration) -> (u8, ConfigurationFields) {
    if configuration.engine.limits.rules == 0 {
        (CONFIGURE_WITH_VENUE_WINDOW_TAG, ConfigurationFields::WithVenueWindow)
    } else {
        (CONFIGURE_WITH_RULES_TAG, ConfigurationFields::WithRules)
    }
}

/// Reads a configuration holding `fields`: one written before the fee notice gets the default
/// notice and no raise, one before the venue-signed window a window of zero (its venue-signed
/// commands claimed nothing).
pub(crate) fn get_configuration(
    reader: &mut Reader,
    fields: ConfigurationFields,
) -> Result<ChainConfiguration, CodecError> {
    let chain_id = reader.u64()?;
    let venue_contract = Address::from_bytes(reader.array()?);
    let custody = match reader.u8()? {
        0 => CustodyMode::Ledger,
        1 => CustodyMode::Vault,
        _ => return Err(CodecError("bad custody mode")),
    };
    let fee_account = Address::from_bytes(reader.array()?);
    let max_open_orders_per_account = reader.u32()?;
    let mut limit = || -> Result<usize, CodecError> {
        usize::try_from(reader.u64()?).map_err(|_| CodecError("a limit does not fit"))
    };
    let limits = EngineLimits {
        max_open_orders_per_account,
        max_resting_orders: limit()?,
        max_accounts: limit()?,
        max_live_nonces: limit()?,
        max_live_nonces_per_account: limit()?,
        max_pending_transfers: limit()?,
        fee_notice_ms: dexd_core::DEFAULT_FEE_NOTICE_MS,
        venue_signed_window_ms: 0,
        rules: 0,
    };
    let (assets, specs) = get_assets(reader)?;
    let mut pairs = get_pairs(reader)?;
    let mut limits = limits;
    if fields >= ConfigurationFields::WithFeeNotice {
        limits.fee_notice_ms = reader.u64()?;
        for pair in &mut pairs {
            pair.fee_raise = reader.optional(|reader| {
                let mut fee = || -> Result<FeeRate, CodecError> {
                    FeeRate::from_parts_per_million(reader.u32()?).ok_or(CodecError("bad fee rate"))
                };
                let (maker_fee, taker_fee) = (fee()?, fee()?);
                Ok(FeeRaise {
                    maker_fee,
                    taker_fee,
                    effective_at_ms: reader.u64()?,
                })
            })?;
        }
    }
    if fields >= ConfigurationFields::WithVenueWindow {
        limits.venue_signed_window_ms = reader.u64()?;
    }
    if fields >= ConfigurationFields::WithRules {
        limits.rules = reader.u64()?;
    }
    Ok(ChainConfiguration {
        description: ChainDescription {
            chain_id,
            venue_contract,
            assets,
        },
        engine: EngineConfig {
            assets: specs,
            pairs,
            fee_account,
            custody,
            limits,
        },
    })
}

/// A configuration's assets: each one's symbol and token, and its decimals.
fn get_assets(reader: &mut Reader) -> Result<(Vec<AssetDescription>, Vec<AssetSpec>), CodecError> {
    let asset_count = usize::from(reader.u16()?);
    let mut assets = Vec::with_capacity(asset_count.min(MAX_LISTED));
    let mut specs = Vec::with_capacity(asset_count.min(MAX_LISTED));
    for _ in 0..asset_count {
        let symbol = reader.text()?.ok_or(CodecError("an asset without a symbol"))?;
        let token = reader.optional(|reader| Ok(Address::from_bytes(reader.array()?)))?;
        assets.push(AssetDescription { symbol, token });
        specs.push(AssetSpec {
            decimals: reader.u32()?,
        });
    }
    Ok((assets, specs))
}

/// A configuration's pairs, without fee raises (read after them, in newer configurations).
fn get_pairs(reader: &mut Reader) -> Result<Vec<PairDefinition>, CodecError> {
    let pair_count = usize::from(reader.u16()?);
    let mut pairs = Vec::with_capacity(pair_count.min(MAX_LISTED));
    for _ in 0..pair_count {
        let base = AssetIndex(reader.u16()?);
        let quote = AssetIndex(reader.u16()?);
        let mut decimal = || -> Result<Decimal, CodecError> {
            let mantissa = reader.u128()?;
            Decimal::from_parts(mantissa, reader.u32()?).map_err(|_| CodecError("bad decimal"))
        };
        let (tick_size, step_size, min_amount, min_notional) = (decimal()?, decimal()?, decimal()?, decimal()?);
        let mut fee = || -> Result<FeeRate, CodecError> {
            FeeRate::from_parts_per_million(reader.u32()?).ok_or(CodecError("bad fee rate"))
        };
        let (maker_fee, taker_fee) = (fee()?, fee()?);
        pairs.push(PairDefinition {
            base,
            quote,
            tick_size,
            step_size,
            min_amount,
            min_notional,
            maker_fee,
            taker_fee,
            fee_raise: None,
        });
    }
    Ok(pairs)
}

#[cfg(test)]
mod tests {
    use super::super::{decode_command, encode_command};
    use dexd_core::{Command, CustodyMode, FeeRaise, FeeRate};

    #[test]
    fn a_configuration_round_trips_and_a_damaged_one_is_an_error() {
        let mut configuration = dexd_core::testing::eth_usdc_chain(8453);
        configuration.engine.custody = CustodyMode::Vault;
        configuration.engine.pairs[0].fee_raise = Some(FeeRaise {
            maker_fee: FeeRate::from_parts_per_million(200).unwrap(),
            taker_fee: FeeRate::from_parts_per_million(500).unwrap(),
            effective_at_ms: 1_800_000_000_000,
        });
        let command = Command::Configure(Box::new(configuration));
        let bytes = encode_command(&command);
        assert_eq!(decode_command(&bytes).unwrap(), command);
        for cut in 1..bytes.len() {
            assert!(decode_command(&bytes[..cut]).is_err(), "cut at {cut}");
        }
    }
}
