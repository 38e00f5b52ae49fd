//! The encoding of a chain's snapshot payload: the engine's whole state ([`EngineState`]) and the
//! signatures of its resting orders (what the history's open orders hold beyond the engine's
//! records), field by field like the rest of the codec, so that a change to an engine type
//! cannot silently change what a snapshot means. Counts are checked against what remains, so
//! damaged bytes are an error, never a huge allocation. The file around the payload (header,
//! checksum) is the store's (`store/snapshots.rs`).

use dexd_core::{
    Address, Amount, AssetIndex, Balance, Candle, CustodyState, EngineState, Nonce, PairSnapshot, PendingDeposit,
    PendingWithdrawal, Position, Price, TransferStatus, WithdrawalKey,
};

use super::{get_order, put_order, CodecError, Reader, Writer};

/// What placed a resting order: the signed message's nonce and expiry and its signature, by the
/// order's sequence. A snapshot lists them in the order of the engine's resting orders (pair by
/// pair, bids then asks, in priority), one for each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderSignature {
    /// The order's engine sequence.
    pub sequence: u64,
    /// The nonce of the signed EIP-712 message.
    pub nonce: [u8; 32],
    /// The expiry of the signed message, in ms since the epoch.
    pub expiry_ms: u64,
    /// The 65-byte signature.
    pub signature: [u8; 65],
}

/// Bytes of one encoded [`OrderSignature`].
const ORDER_SIGNATURE_BYTES: usize = 8 + 32 + 8 + 65;

/// Writes a collection's length, then each item.
fn put_list<T>(writer: &mut Writer, items: &[T], mut put: impl FnMut(&mut Writer, &T)) {
    writer.u64(items.len() as u64);
    for item in items {
        put(writer, item);
    }
}

/// Reads a collection written by [`put_list`]; `minimum_item_bytes` bounds the count by what
/// remains.
fn get_list<'a, T>(
    reader: &mut Reader<'a>,
    minimum_item_bytes: usize,
    mut get: impl FnMut(&mut Reader<'a>) -> Result<T, CodecError>,
) -> Result<Vec<T>, CodecError> {
    let count = reader.u64()?;
    if count > (reader.remaining() / minimum_item_bytes.max(1)) as u64 {
        return Err(CodecError("a count beyond the bytes that remain"));
    }
    (0..count).map(|_| get(reader)).collect()
}

fn put_balance(writer: &mut Writer, balance: &Balance) {
    writer.u128(balance.available.units());
    writer.u128(balance.locked.units());
}

fn get_balance(reader: &mut Reader) -> Result<Balance, CodecError> {
    Ok(Balance {
        available: Amount::from_units(reader.u128()?),
        locked: Amount::from_units(reader.u128()?),
    })
}

fn put_candle(writer: &mut Writer, candle: &Candle) {
    writer.u64(candle.open_time_ms);
    for price in [candle.open, candle.high, candle.low, candle.close] {
        writer.u64(price.ticks());
    }
    writer.u128(candle.volume.units());
    writer.u128(candle.quote_volume.units());
    writer.u64(candle.trades);
}

fn get_candle(reader: &mut Reader) -> Result<Candle, CodecError> {
    let open_time_ms = reader.u64()?;
    let mut prices = [Price::from_ticks(1).expect("one tick"); 4];
    for price in &mut prices {
        *price = Price::from_ticks(reader.u64()?).ok_or(CodecError("a zero price"))?;
    }
    Ok(Candle {
        open_time_ms,
        open: prices[0],
        high: prices[1],
        low: prices[2],
        close: prices[3],
        volume: Amount::from_units(reader.u128()?),
        quote_volume: Amount::from_units(reader.u128()?),
        trades: reader.u64()?,
    })
}

fn put_position(writer: &mut Writer, position: &Position) {
    writer.bytes(&position.net_base.to_be_bytes());
    writer.u128(position.open_cost_quote);
    writer.bytes(&position.realized_pnl_quote.to_be_bytes());
}

fn get_position(reader: &mut Reader) -> Result<Position, CodecError> {
    Ok(Position {
        net_base: i128::from_be_bytes(reader.array()?),
        open_cost_quote: reader.u128()?,
        realized_pnl_quote: i128::from_be_bytes(reader.array()?),
    })
}

fn put_custody(writer: &mut Writer, custody: &CustodyState) {
    writer.u64(custody.next_deposit_id);
    writer.optional(custody.last_credited_tx, |writer, hash| writer.bytes(&hash));
    writer.optional(custody.scanned_through, |writer, (block, hash)| {
        writer.u64(block);
        writer.bytes(&hash);
    });
    writer.u64(custody.next_request_number);
    put_list(writer, &custody.pending_deposits, |writer, (hash, pending)| {
        writer.bytes(hash);
        writer.bytes(pending.account.as_bytes());
        writer.u16(pending.asset.0);
        writer.u128(pending.amount.units());
        writer.u64(pending.created_at_ms);
    });
    put_list(writer, &custody.withdrawals, |writer, (key, pending)| {
        writer.bytes(key.account.as_bytes());
        writer.bytes(&key.withdrawal_id);
        writer.u16(pending.asset.0);
        writer.u128(pending.amount.units());
        writer.u64(pending.expiry_ms);
        writer.bytes(&pending.signature);
        writer.u8(pending.status as u8);
        writer.optional(pending.tx_hash, |writer, hash| writer.bytes(&hash));
        writer.u64(pending.created_at_ms);
        writer.u64(pending.request_number);
    });
}

fn get_custody(reader: &mut Reader) -> Result<CustodyState, CodecError> {
    Ok(CustodyState {
        next_deposit_id: reader.u64()?,
        last_credited_tx: reader.optional(|reader| reader.array())?,
        scanned_through: reader.optional(|reader| Ok((reader.u64()?, reader.array()?)))?,
        next_request_number: reader.u64()?,
        pending_deposits: get_list(reader, 32 + 20 + 2 + 16 + 8, |reader| {
            Ok((
                reader.array()?,
                PendingDeposit {
                    account: Address::from_bytes(reader.array()?),
                    asset: AssetIndex(reader.u16()?),
                    amount: Amount::from_units(reader.u128()?),
                    created_at_ms: reader.u64()?,
                },
            ))
        })?,
        withdrawals: get_list(reader, 20 + 32 + 2 + 16 + 8 + 65 + 1 + 1 + 16, |reader| {
            let key = WithdrawalKey {
                account: Address::from_bytes(reader.array()?),
                withdrawal_id: reader.array()?,
            };
            Ok((
                key,
                PendingWithdrawal {
                    asset: AssetIndex(reader.u16()?),
                    amount: Amount::from_units(reader.u128()?),
                    expiry_ms: reader.u64()?,
                    signature: reader.array()?,
                    status: match reader.u8()? {
                        0 => TransferStatus::Pending,
                        1 => TransferStatus::Sent,
                        _ => return Err(CodecError("a settled withdrawal in a snapshot")),
                    },
                    tx_hash: reader.optional(|reader| reader.array())?,
                    created_at_ms: reader.u64()?,
                    request_number: reader.u64()?,
                },
            ))
        })?,
    })
}

fn put_order_signature(writer: &mut Writer, order: &OrderSignature) {
    writer.u64(order.sequence);
    writer.bytes(&order.nonce);
    writer.u64(order.expiry_ms);
    writer.bytes(&order.signature);
}

fn get_order_signature(reader: &mut Reader) -> Result<OrderSignature, CodecError> {
    Ok(OrderSignature {
        sequence: reader.u64()?,
        nonce: reader.array()?,
        expiry_ms: reader.u64()?,
        signature: reader.array()?,
    })
}

/// Encodes a snapshot's payload.
pub fn encode_snapshot(state: &EngineState, signatures: &[OrderSignature]) -> Vec<u8> {
    let resting_orders: usize = state.pairs.iter().map(|pair| pair.orders.len()).sum();
    let mut writer = Writer(Vec::with_capacity(
        1024 + resting_orders * (200 + ORDER_SIGNATURE_BYTES),
    ));
    writer.u8(super::FORMAT_VERSION);
    writer.u64(state.next_order_sequence);
    writer.u64(state.next_trade_id);
    writer.u64(state.last_time_ms);
    put_list(&mut writer, &state.accounts, |writer, (address, balances)| {
        writer.bytes(address.as_bytes());
        put_list(writer, balances, put_balance);
    });
    put_list(&mut writer, &state.net_deposits, |writer, amount| {
        writer.u128(amount.units())
    });
    put_list(&mut writer, &state.pairs, |writer, pair| {
        writer.u64(pair.book_sequence);
        writer.optional(pair.last_price, |writer, price| writer.u64(price.ticks()));
        put_list(writer, &pair.orders, put_order);
        for series in &pair.candles {
            put_list(writer, series, put_candle);
        }
    });
    put_list(&mut writer, &state.positions, |writer, (slot, positions)| {
        writer.u32(*slot);
        put_list(writer, positions, put_position);
    });
    put_list(&mut writer, &state.nonces, |writer, (expiry, account, nonce)| {
        writer.u64(*expiry);
        writer.bytes(account.as_bytes());
        writer.bytes(nonce.as_bytes());
    });
    put_custody(&mut writer, &state.custody);
    put_list(&mut writer, signatures, put_order_signature);
    writer.0
}

/// Decodes a snapshot's payload.
pub fn decode_snapshot(bytes: &[u8]) -> Result<(EngineState, Vec<OrderSignature>), CodecError> {
    let mut reader = Reader::new(bytes)?;
    let next_order_sequence = reader.u64()?;
    let next_trade_id = reader.u64()?;
    let last_time_ms = reader.u64()?;
    let accounts = get_list(&mut reader, 20 + 8, |reader| {
        Ok((Address::from_bytes(reader.array()?), get_list(reader, 32, get_balance)?))
    })?;
    let net_deposits = get_list(&mut reader, 16, |reader| Ok(Amount::from_units(reader.u128()?)))?;
    let pairs = get_list(&mut reader, 8 + 1 + 8 + 8 * 8, |reader| {
        let book_sequence = reader.u64()?;
        let last_price =
            reader.optional(|reader| Price::from_ticks(reader.u64()?).ok_or(CodecError("a zero price")))?;
        let orders = get_list(reader, 100, get_order)?;
        let mut candles: [Vec<Candle>; 8] = Default::default();
        for series in &mut candles {
            *series = get_list(reader, 80, get_candle)?;
        }
        Ok(PairSnapshot {
            book_sequence,
            last_price,
            orders,
            candles,
        })
    })?;
    let positions = get_list(&mut reader, 4 + 8, |reader| {
        Ok((reader.u32()?, get_list(reader, 48, get_position)?))
    })?;
    let nonces = get_list(&mut reader, 8 + 20 + 32, |reader| {
        Ok((
            reader.u64()?,
            Address::from_bytes(reader.array()?),
            Nonce::from_bytes(reader.array()?),
        ))
    })?;
    let custody = get_custody(&mut reader)?;
    let signatures = get_list(&mut reader, ORDER_SIGNATURE_BYTES, get_order_signature)?;
    reader.finish()?;
    Ok((
        EngineState {
            next_order_sequence,
            next_trade_id,
            last_time_ms,
            accounts,
            net_deposits,
            pairs,
            positions,
            nonces,
            custody,
        },
        signatures,
    ))
}
