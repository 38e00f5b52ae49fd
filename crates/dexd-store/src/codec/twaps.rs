//! The binary form of TWAP orders (contract version 5): the three commands (tags
//! [`START_TWAP_TAG`], [`CANCEL_TWAP_TAG`], [`RUN_TWAP_SLICE_TAG`]) and the registry's part of a
//! snapshot, field by field like the rest of the codec. This module does no IO.

use dexd_core::{Address, Amount, Command, NewTwap, PairIndex, Price, Quantity, TwapRecord, TwapStatus, TwapsState};

use super::{direction, get_list, put_list, CodecError, Reader, Writer};

/// The tag of `Command::StartTwap`.
pub(super) const START_TWAP_TAG: u8 = 35;
/// The tag of `Command::CancelTwap`.
pub(super) const CANCEL_TWAP_TAG: u8 = 36;
/// The tag of `Command::RunTwapSlice`.
pub(super) const RUN_TWAP_SLICE_TAG: u8 = 37;

/// Writes a TWAP command, its tag first.
pub(super) fn put_twap_command(writer: &mut Writer, command: &Command) {
    match command {
        Command::StartTwap(terms) => {
            writer.u8(START_TWAP_TAG);
            put_terms(writer, terms);
        }
        Command::CancelTwap { account, twap_id } => {
            writer.u8(CANCEL_TWAP_TAG);
            writer.bytes(account.as_bytes());
            writer.u64(*twap_id);
        }
        Command::RunTwapSlice { twap_id, slice } => {
            writer.u8(RUN_TWAP_SLICE_TAG);
            writer.u64(*twap_id);
            writer.u32(*slice);
        }
        _ => unreachable!("only TWAP commands are written here"),
    }
}

/// Reads a TWAP command after its tag.
pub(super) fn get_twap_command(tag: u8, reader: &mut Reader) -> Result<Command, CodecError> {
    Ok(match tag {
        START_TWAP_TAG => Command::StartTwap(get_terms(reader)?),
        CANCEL_TWAP_TAG => Command::CancelTwap {
            account: Address::from_bytes(reader.array()?),
            twap_id: reader.u64()?,
        },
        RUN_TWAP_SLICE_TAG => Command::RunTwapSlice {
            twap_id: reader.u64()?,
            slice: reader.u32()?,
        },
        _ => return Err(CodecError("bad command tag")),
    })
}

fn put_terms(writer: &mut Writer, terms: &NewTwap) {
    writer.bytes(terms.account.as_bytes());
    writer.u16(terms.pair.0);
    writer.u8(terms.direction as u8);
    writer.u64(terms.quantity.lots());
    writer.u64(terms.duration_ms);
    writer.u64(terms.interval_ms);
    writer.u64(terms.limit_price.map_or(0, Price::ticks));
    writer.text(terms.client_twap_id.as_deref());
}

fn get_terms(reader: &mut Reader) -> Result<NewTwap, CodecError> {
    Ok(NewTwap {
        account: Address::from_bytes(reader.array()?),
        pair: PairIndex(reader.u16()?),
        direction: direction(reader.u8()?)?,
        quantity: Quantity::from_lots(reader.u64()?),
        duration_ms: reader.u64()?,
        interval_ms: reader.u64()?,
        limit_price: Price::from_ticks(reader.u64()?),
        client_twap_id: reader.text()?,
    })
}

fn put_record(writer: &mut Writer, twap: &TwapRecord) {
    writer.u64(twap.twap_id);
    put_terms(writer, &twap.terms);
    writer.u64(twap.started_at_ms);
    writer.u8(twap.status as u8);
    writer.u64(twap.filled.lots());
    writer.u128(twap.cost.units());
    writer.u32(twap.slices_run);
    writer.u32(twap.next_slice);
    writer.u64(twap.updated_at_ms);
}

fn get_record(reader: &mut Reader) -> Result<TwapRecord, CodecError> {
    Ok(TwapRecord {
        twap_id: reader.u64()?,
        terms: get_terms(reader)?,
        started_at_ms: reader.u64()?,
        status: match reader.u8()? {
            0 => TwapStatus::Running,
            1 => TwapStatus::Completed,
            2 => TwapStatus::Cancelled,
            _ => return Err(CodecError("bad TWAP status")),
        },
        filled: Quantity::from_lots(reader.u64()?),
        cost: Amount::from_units(reader.u128()?),
        slices_run: reader.u32()?,
        next_slice: reader.u32()?,
        updated_at_ms: reader.u64()?,
    })
}

/// The fewest bytes of an encoded TWAP.
const MINIMUM_RECORD_BYTES: usize = 8 + 20 + 2 + 1 + 8 * 4 + 1 + 8 + 1 + 8 + 16 + 4 + 4 + 8;

/// Whether a snapshot carries a TWAP section: only a chain that has had a TWAP writes one, so
/// other snapshots are what they were before TWAPs existed.
pub(super) fn has_state(state: &TwapsState) -> bool {
    !state.twaps.is_empty() || state.next_twap_id > 1
}

/// Writes the registry's part of a snapshot (nothing for a chain that never had a TWAP, unless
/// a later section follows: `followed`).
pub(super) fn put_state(writer: &mut Writer, state: &TwapsState, followed: bool) {
    if !followed && !has_state(state) {
        return;
    }
    put_list(writer, &state.twaps, put_record);
    writer.u64(state.next_twap_id);
}

/// Reads the registry's part of a snapshot: nothing left to read is a chain without TWAPs.
pub(super) fn get_state(reader: &mut Reader) -> Result<TwapsState, CodecError> {
    if reader.remaining() == 0 {
        return Ok(TwapsState::default());
    }
    Ok(TwapsState {
        twaps: get_list(reader, MINIMUM_RECORD_BYTES, get_record)?,
        next_twap_id: reader.u64()?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{decode_command, encode_command};
    use super::*;
    use dexd_core::Direction;

    fn terms() -> NewTwap {
        NewTwap {
            account: Address::from_bytes([0xa1; 20]),
            pair: PairIndex(2),
            direction: Direction::Sell,
            quantity: Quantity::from_lots(12_345),
            duration_ms: 3_600_000,
            interval_ms: 60_000,
            limit_price: Price::from_ticks(199_000),
            client_twap_id: Some("slow-sell".into()),
        }
    }

    #[test]
    fn the_twap_commands_read_back_as_written_and_a_cut_is_an_error() {
        let commands = [
            Command::StartTwap(terms()),
            Command::StartTwap(NewTwap {
                limit_price: None,
                client_twap_id: None,
                ..terms()
            }),
            Command::CancelTwap {
                account: Address::from_bytes([0xb0; 20]),
                twap_id: 77,
            },
            Command::RunTwapSlice { twap_id: 77, slice: 59 },
            Command::SetPairHalted {
                pair: PairIndex(3),
                halted: true,
            },
            Command::SetPairHalted {
                pair: PairIndex(0),
                halted: false,
            },
            Command::ByAgent {
                agent: Address::from_bytes([0xc0; 20]),
                command: Box::new(Command::StartTwap(terms())),
            },
        ];
        for command in commands {
            let bytes = encode_command(&command);
            assert_eq!(decode_command(&bytes), Ok(command));
            for cut in 2..bytes.len() {
                assert!(decode_command(&bytes[..cut]).is_err(), "a cut at {cut} is an error");
            }
        }
    }

    #[test]
    fn a_registry_reads_back_as_written() {
        let state = TwapsState {
            twaps: vec![TwapRecord {
                twap_id: 3,
                terms: terms(),
                started_at_ms: 1_732_000_000_000,
                status: TwapStatus::Cancelled,
                filled: Quantity::from_lots(400),
                cost: Amount::from_units(987_654_321),
                slices_run: 4,
                next_slice: 6,
                updated_at_ms: 1_732_000_400_000,
            }],
            next_twap_id: 4,
        };
        let mut writer = Writer::new();
        put_state(&mut writer, &state, false);
        let mut reader = Reader::new(&writer.0).unwrap();
        assert_eq!(get_state(&mut reader), Ok(state));
        let mut empty = Writer::new();
        put_state(&mut empty, &TwapsState::default(), false);
        assert_eq!(empty.0.len(), 1, "a chain without TWAPs writes nothing but the version");
    }
}
