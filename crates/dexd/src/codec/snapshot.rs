//! The encoding of a chain's snapshot payload: the engine's whole state ([`EngineState`]) and the
//! signatures of its resting orders (what the history's open orders hold beyond the engine's
//! records), field by field like the rest of the codec, so that a change to an engine type
//! cannot silently change what a snapshot means. Counts are checked against what remains, so
//! damaged bytes are an error, never a huge allocation. The file around the payload (header,
//! checksum) is the store's (`store/snapshots.rs`).
//!
//! The resting orders come last, one section per pair, each order followed by its signature,
//! and each section preceded by its length in bytes. Decoding leaves them encoded
//! ([`RestingOrders`]): a start rebuilds the engine's books and the history's open orders on
//! separate threads, each decoding the orders straight into its own structures, so that a
//! million orders are never held a third time in between.

use dexd_core::{
    Address, Amount, AssetIndex, Balance, Candle, CustodyState, EngineState, Nonce, OrderRecord, PairSnapshot,
    PendingDeposit, PendingWithdrawal, Position, Price, TransferStatus, WithdrawalKey,
};

use super::{get_order, put_order, CodecError, Reader, Writer};

/// What placed a resting order: the signed message's nonce and expiry and its signature. A
/// snapshot writes each beside its order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct OrderSignature {
    /// The nonce of the signed EIP-712 message.
    pub nonce: [u8; 32],
    /// The expiry of the signed message, in ms since the epoch.
    pub expiry_ms: u64,
    /// The 65-byte signature.
    pub signature: [u8; 65],
}

/// Bytes of one encoded [`OrderSignature`].
const ORDER_SIGNATURE_BYTES: usize = 32 + 8 + 65;
/// The fewest bytes an encoded order and its signature take.
const MINIMUM_RESTING_ORDER_BYTES: usize = 100 + ORDER_SIGNATURE_BYTES;

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
    // Sized once: collecting through `Result` would grow the vector by doubling, moving a
    // million orders several times over fresh memory.
    let mut items = Vec::with_capacity(count as usize);
    for _ in 0..count {
        items.push(get(reader)?);
    }
    Ok(items)
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
    writer.bytes(&order.nonce);
    writer.u64(order.expiry_ms);
    writer.bytes(&order.signature);
}

fn get_order_signature(reader: &mut Reader) -> Result<OrderSignature, CodecError> {
    Ok(OrderSignature {
        nonce: reader.array()?,
        expiry_ms: reader.u64()?,
        signature: reader.array()?,
    })
}

/// Encodes a snapshot's payload. `signatures` are those of the resting orders, in the order
/// of `state`'s lists (pair by pair, bids then asks, in priority): one for each.
pub fn encode_snapshot(state: &EngineState, signatures: &[OrderSignature]) -> Vec<u8> {
    let resting_orders: usize = state.pairs.iter().map(|pair| pair.orders.len()).sum();
    assert_eq!(
        resting_orders,
        signatures.len(),
        "invariant: a snapshot has one signature for each resting order"
    );
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
    let mut signatures = signatures.iter();
    for pair in &state.pairs {
        let length_at = writer.0.len();
        writer.u64(0);
        writer.u64(pair.orders.len() as u64);
        for order in &pair.orders {
            put_order(&mut writer, order);
            put_order_signature(&mut writer, signatures.next().expect("counted above"));
        }
        let length = (writer.0.len() - length_at - 8) as u64;
        writer.0[length_at..length_at + 8].copy_from_slice(&length.to_be_bytes());
    }
    writer.0
}

/// The resting orders of a decoded snapshot, still encoded: one section per pair, each decoded
/// on demand, as often as wanted, by any thread.
pub struct RestingOrders<'a> {
    sections: Vec<RestingOrderSection<'a>>,
}

#[derive(Clone, Copy)]
struct RestingOrderSection<'a> {
    count: usize,
    bytes: &'a [u8],
}

impl<'a> RestingOrders<'a> {
    /// How many orders rest, on all pairs.
    pub fn len(&self) -> usize {
        self.sections.iter().map(|section| section.count).sum()
    }

    /// Whether no order rests.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The resting orders of the pair of index `pair` (there is a section for each of the
    /// state's pairs), with their signatures, in priority.
    pub fn of_pair(&self, pair: usize) -> RestingOrderDecoder<'a> {
        let section = self.sections[pair];
        RestingOrderDecoder {
            reader: Reader(section.bytes),
            left: section.count,
            failed: false,
        }
    }

    /// Every resting order with its signature, pair by pair.
    pub fn iter(&self) -> impl Iterator<Item = Result<(OrderRecord, OrderSignature), CodecError>> + '_ {
        (0..self.sections.len()).flat_map(|pair| self.of_pair(pair))
    }
}

/// Decodes one pair's resting orders; after an error it yields nothing more. Bytes left after
/// the last order are an error too.
pub struct RestingOrderDecoder<'a> {
    reader: Reader<'a>,
    left: usize,
    failed: bool,
}

impl Iterator for RestingOrderDecoder<'_> {
    type Item = Result<(OrderRecord, OrderSignature), CodecError>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        if self.left == 0 {
            if self.reader.remaining() == 0 {
                return None;
            }
            self.failed = true;
            return Some(Err(CodecError("bytes after a pair's resting orders")));
        }
        self.left -= 1;
        let decoded = get_order(&mut self.reader).and_then(|order| Ok((order, get_order_signature(&mut self.reader)?)));
        self.failed = decoded.is_err();
        Some(decoded)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.left, Some(self.left + 1))
    }
}

/// Decodes a snapshot's payload: the engine's state with every pair's list of orders empty,
/// and the resting orders left encoded.
pub fn decode_snapshot(bytes: &[u8]) -> Result<(EngineState, RestingOrders<'_>), CodecError> {
    let mut reader = Reader::new(bytes)?;
    let next_order_sequence = reader.u64()?;
    let next_trade_id = reader.u64()?;
    let last_time_ms = reader.u64()?;
    let accounts = get_list(&mut reader, 20 + 8, |reader| {
        Ok((Address::from_bytes(reader.array()?), get_list(reader, 32, get_balance)?))
    })?;
    let net_deposits = get_list(&mut reader, 16, |reader| Ok(Amount::from_units(reader.u128()?)))?;
    let pairs = get_list(&mut reader, 8 + 1 + 8 * 8, |reader| {
        let book_sequence = reader.u64()?;
        let last_price =
            reader.optional(|reader| Price::from_ticks(reader.u64()?).ok_or(CodecError("a zero price")))?;
        let mut candles: [Vec<Candle>; 8] = Default::default();
        for series in &mut candles {
            *series = get_list(reader, 80, get_candle)?;
        }
        Ok(PairSnapshot {
            book_sequence,
            last_price,
            orders: Vec::new(),
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
    let mut sections = Vec::with_capacity(pairs.len());
    for _ in 0..pairs.len() {
        let length = usize::try_from(reader.u64()?).map_err(|_| CodecError("a section beyond the bytes"))?;
        let mut section = Reader(reader.take(length)?);
        let count = section.u64()?;
        if count > (section.remaining() / MINIMUM_RESTING_ORDER_BYTES) as u64 {
            return Err(CodecError("a count beyond the bytes that remain"));
        }
        sections.push(RestingOrderSection {
            count: count as usize,
            bytes: section.0,
        });
    }
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
        RestingOrders { sections },
    ))
}

#[cfg(test)]
mod tests {
    use dexd_core::{
        Command, Direction, Engine, EngineConfig, NewOrder, OrderId, OrderType, PairIndex, Quantity, TimeInForce,
    };

    use super::*;

    /// An engine of the embedded configuration's first chain with resting buys of two accounts
    /// (one with a client order id), and a signature for each.
    fn engine_with_resting_orders() -> (Engine, EngineConfig, Vec<OrderSignature>) {
        let config = crate::config::Config::embedded_default();
        let engine_config = config.chain(1).unwrap().engine_config(&config.limits);
        let mut engine = Engine::new(engine_config.clone()).unwrap();
        let mut events = Vec::new();
        for number in 1..=2u8 {
            let account = Address::from_bytes([number; 20]);
            for asset in 0..2 {
                let deposit = Command::Deposit(dexd_core::TransferRequest {
                    transfer_id: [number * 2 + asset as u8; 32],
                    account,
                    asset: AssetIndex(asset),
                    amount: Amount::from_units(10u128.pow(30)),
                });
                engine.execute(deposit, 1, &mut events).unwrap();
            }
            for order in 0..3u64 {
                let place = Command::PlaceOrder(NewOrder {
                    order_id: OrderId::from_bytes([number * 10 + order as u8; 32]),
                    client_order_id: (order == 1).then(|| format!("client-{number}")),
                    account,
                    pair: PairIndex(0),
                    order_type: OrderType::Limit,
                    direction: Direction::Buy,
                    time_in_force: TimeInForce::GoodTillCancelled,
                    post_only: false,
                    price: Price::from_ticks(90_000 + order * 10),
                    quantity: Quantity::from_lots(1_000 * (1 + order)),
                });
                engine.execute(place, 2, &mut events).unwrap();
            }
        }
        let signatures = (0..6u8)
            .map(|number| OrderSignature {
                nonce: [number; 32],
                expiry_ms: u64::from(number) * 1_000,
                signature: [number + 100; 65],
            })
            .collect();
        (engine, engine_config, signatures)
    }

    #[test]
    fn the_resting_orders_decode_beside_their_signatures_and_restore_the_same_engine() {
        let (engine, engine_config, signatures) = engine_with_resting_orders();
        let state = engine.state();
        let bytes = encode_snapshot(&state, &signatures);
        let (decoded, resting) = decode_snapshot(&bytes).unwrap();
        let orders: Vec<(OrderRecord, OrderSignature)> = resting.iter().map(Result::unwrap).collect();
        let written: Vec<OrderRecord> = state.pairs.iter().flat_map(|pair| pair.orders.clone()).collect();
        assert_eq!(
            orders.iter().map(|(order, _)| order.clone()).collect::<Vec<_>>(),
            written
        );
        assert_eq!(
            orders.iter().map(|(_, signature)| *signature).collect::<Vec<_>>(),
            signatures
        );
        assert_eq!(resting.len(), 6);
        let mut without_orders = state.clone();
        for pair in &mut without_orders.pairs {
            pair.orders.clear();
        }
        assert_eq!(decoded, without_orders);
        let restored = Engine::from_state_and_orders(engine_config, &decoded, |pair| {
            resting
                .of_pair(pair)
                .map(|item| item.map(|(order, _)| order).map_err(|error| error.to_string()))
        })
        .unwrap();
        assert_eq!(restored.state_hash(), engine.state_hash());
    }

    #[test]
    fn a_section_with_bytes_after_its_orders_or_more_orders_than_bytes_is_refused() {
        let (engine, _, signatures) = engine_with_resting_orders();
        let state = engine.state();
        assert!(state.pairs.len() >= 2 && state.pairs.last().unwrap().orders.is_empty());
        let bytes = encode_snapshot(&state, &signatures);
        // The last pair's section ends the payload: its length (8) and its count (0).
        let section_at = bytes.len() - 16;
        assert_eq!(
            &bytes[section_at..],
            &[&8u64.to_be_bytes()[..], &0u64.to_be_bytes()[..]].concat()[..]
        );
        let mut trailing = bytes.clone();
        trailing[section_at..section_at + 8].copy_from_slice(&9u64.to_be_bytes());
        trailing.push(0xff);
        let (_, resting) = decode_snapshot(&trailing).unwrap();
        let last = state.pairs.len() - 1;
        assert_eq!(
            resting.of_pair(last).collect::<Vec<_>>(),
            vec![Err(CodecError("bytes after a pair's resting orders"))]
        );
        let mut overcounted = bytes.clone();
        overcounted[section_at + 8..].copy_from_slice(&1u64.to_be_bytes());
        assert!(decode_snapshot(&overcounted).is_err());
        assert!(decode_snapshot(&bytes[..bytes.len() - 1]).is_err());
    }
}
