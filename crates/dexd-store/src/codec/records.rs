//! The encoding of the history's records: an order's latest state, a trade, a transfer, field
//! by field like the commands. This module does no IO.

use dexd_core::{
    Address, Amount, AssetIndex, CancelReason, OrderId, OrderRecord, OrderStatus, PairIndex, Price, Quantity, Trade,
    Transfer, TransferKind, TransferStatus,
};

use super::{direction, get_new_order, put_new_order, CodecError, Reader, Writer};

/// Encodes an order record.
pub fn encode_order(record: &OrderRecord) -> Vec<u8> {
    let mut writer = Writer::new();
    put_order(&mut writer, record);
    writer.0
}

/// Writes an order record's fields.
pub(crate) fn put_order(writer: &mut Writer, record: &OrderRecord) {
    put_new_order(writer, &record.terms);
    writer.u64(record.filled.lots());
    writer.u128(record.cost.units());
    writer.u128(record.fee.units());
    writer.u8(record.status as u8);
    writer.u8(record.cancel_reason.map_or(0, |reason| reason as u8 + 1));
    writer.u128(record.locked.units());
    writer.u64(record.created_at_ms);
    writer.u64(record.updated_at_ms);
    writer.u64(record.sequence);
}

/// Decodes an order record.
pub fn decode_order(bytes: &[u8]) -> Result<OrderRecord, CodecError> {
    let mut reader = Reader::new(bytes)?;
    let record = get_order(&mut reader)?;
    reader.finish()?;
    Ok(record)
}

/// Reads an order record's fields.
pub(crate) fn get_order(reader: &mut Reader) -> Result<OrderRecord, CodecError> {
    Ok(OrderRecord {
        terms: get_new_order(reader)?,
        filled: Quantity::from_lots(reader.u64()?),
        cost: Amount::from_units(reader.u128()?),
        fee: Amount::from_units(reader.u128()?),
        status: match reader.u8()? {
            0 => OrderStatus::Open,
            1 => OrderStatus::Filled,
            2 => OrderStatus::Cancelled,
            3 => OrderStatus::Untriggered,
            _ => return Err(CodecError("bad status")),
        },
        cancel_reason: match reader.u8()? {
            0 => None,
            1 => Some(CancelReason::Requested),
            2 => Some(CancelReason::SelfTradePrevention),
            3 => Some(CancelReason::UnfilledRemainder),
            4 => Some(CancelReason::Switch),
            5 => Some(CancelReason::OneCancelsOther),
            6 => Some(CancelReason::Expired),
            7 => Some(CancelReason::ForcedWithdrawal),
            _ => return Err(CodecError("bad cancel reason")),
        },
        locked: Amount::from_units(reader.u128()?),
        created_at_ms: reader.u64()?,
        updated_at_ms: reader.u64()?,
        sequence: reader.u64()?,
    })
}

/// Encodes a trade.
pub fn encode_trade(trade: &Trade) -> Vec<u8> {
    let mut writer = Writer::new();
    writer.u64(trade.trade_id);
    writer.u16(trade.pair.0);
    writer.u64(trade.price.ticks());
    writer.u64(trade.quantity.lots());
    writer.u128(trade.base_amount.units());
    writer.u128(trade.cost.units());
    writer.u8(trade.taker_direction as u8);
    writer.bytes(trade.maker_order_id.as_bytes());
    writer.bytes(trade.taker_order_id.as_bytes());
    writer.bytes(trade.maker_account.as_bytes());
    writer.bytes(trade.taker_account.as_bytes());
    writer.u128(trade.maker_fee.units());
    writer.u128(trade.taker_fee.units());
    writer.u64(trade.timestamp_ms);
    writer.0
}

/// Encodes a candle, as the history keeps it.
pub fn encode_candle(candle: &dexd_core::Candle) -> Vec<u8> {
    let mut writer = Writer::new();
    super::snapshot::put_candle(&mut writer, candle);
    writer.0
}

/// Decodes a candle.
pub fn decode_candle(bytes: &[u8]) -> Result<dexd_core::Candle, CodecError> {
    let mut reader = Reader::new(bytes)?;
    let candle = super::snapshot::get_candle(&mut reader)?;
    reader.finish()?;
    Ok(candle)
}

/// Decodes a trade.
pub fn decode_trade(bytes: &[u8]) -> Result<Trade, CodecError> {
    let mut reader = Reader::new(bytes)?;
    let trade = Trade {
        trade_id: reader.u64()?,
        pair: PairIndex(reader.u16()?),
        price: Price::from_ticks(reader.u64()?).ok_or(CodecError("zero price"))?,
        quantity: Quantity::from_lots(reader.u64()?),
        base_amount: Amount::from_units(reader.u128()?),
        cost: Amount::from_units(reader.u128()?),
        taker_direction: direction(reader.u8()?)?,
        maker_order_id: OrderId::from_bytes(reader.array()?),
        taker_order_id: OrderId::from_bytes(reader.array()?),
        maker_account: Address::from_bytes(reader.array()?),
        taker_account: Address::from_bytes(reader.array()?),
        maker_fee: Amount::from_units(reader.u128()?),
        taker_fee: Amount::from_units(reader.u128()?),
        timestamp_ms: reader.u64()?,
    };
    reader.finish()?;
    Ok(trade)
}

/// Encodes a transfer.
pub fn encode_transfer(transfer: &Transfer) -> Vec<u8> {
    let mut writer = Writer::new();
    writer.bytes(&transfer.transfer_id);
    writer.u8(transfer.kind as u8);
    writer.bytes(transfer.account.as_bytes());
    writer.u16(transfer.asset.0);
    writer.u128(transfer.amount.units());
    writer.u64(transfer.timestamp_ms);
    writer.u8(transfer.status as u8);
    writer.optional(transfer.tx_hash, |writer, hash| writer.bytes(&hash));
    writer.optional(transfer.block_number, |writer, number| writer.u64(number));
    writer.u64(transfer.updated_at_ms);
    writer.0
}

/// Decodes a transfer.
pub fn decode_transfer(bytes: &[u8]) -> Result<Transfer, CodecError> {
    let mut reader = Reader::new(bytes)?;
    let transfer = Transfer {
        transfer_id: reader.array()?,
        kind: match reader.u8()? {
            0 => TransferKind::Deposit,
            1 => TransferKind::Withdrawal,
            _ => return Err(CodecError("bad transfer kind")),
        },
        account: Address::from_bytes(reader.array()?),
        asset: AssetIndex(reader.u16()?),
        amount: Amount::from_units(reader.u128()?),
        timestamp_ms: reader.u64()?,
        status: match reader.u8()? {
            0 => TransferStatus::Pending,
            1 => TransferStatus::Sent,
            2 => TransferStatus::Confirmed,
            3 => TransferStatus::Failed,
            _ => return Err(CodecError("bad transfer status")),
        },
        tx_hash: reader.optional(|reader| reader.array())?,
        block_number: reader.optional(|reader| reader.u64())?,
        updated_at_ms: reader.u64()?,
    };
    reader.finish()?;
    Ok(transfer)
}
