//! The binary form of a pair's met triggers waiting to fire (the engine's `MetRange`s, under
//! `RULE_MET_TRIGGERS_QUEUED`), the snapshot's last optional section, field by field like the
//! rest of the codec. This module does no IO.

use dexd_core::triggers::MetRange;
use dexd_core::Price;

use super::{CodecError, Reader, Writer};

/// A met range waiting to fire: its pair, prices, mark, side and cursor.
pub(super) fn put_met_range(writer: &mut Writer, (pair, range): &(dexd_core::PairIndex, MetRange)) {
    writer.u16(pair.0);
    writer.u64(range.first_price.ticks());
    writer.u64(range.last_price.ticks());
    writer.u64(range.sequence_mark);
    writer.u8(u8::from(range.on_second_side));
    writer.optional(range.cursor.as_ref(), |writer, (price, sequence, order_id)| {
        writer.u64(price.ticks());
        writer.u64(*sequence);
        writer.bytes(order_id.as_bytes());
    });
}

pub(super) fn get_met_range(reader: &mut Reader) -> Result<(dexd_core::PairIndex, MetRange), CodecError> {
    fn price(reader: &mut Reader) -> Result<Price, CodecError> {
        Price::from_ticks(reader.u64()?).ok_or(CodecError("a zero price"))
    }
    let pair = dexd_core::PairIndex(reader.u16()?);
    let first_price = price(reader)?;
    let last_price = price(reader)?;
    let sequence_mark = reader.u64()?;
    let on_second_side = match reader.u8()? {
        0 => false,
        1 => true,
        _ => return Err(CodecError("bad side flag")),
    };
    let cursor = reader.optional(|reader| {
        Ok((
            price(reader)?,
            reader.u64()?,
            dexd_core::OrderId::from_bytes(reader.array()?),
        ))
    })?;
    Ok((
        pair,
        MetRange {
            first_price,
            last_price,
            sequence_mark,
            on_second_side,
            cursor,
        },
    ))
}
