//! The encoding of a chain's snapshot payload: the engine's whole state ([`EngineState`]) and the
//! signatures of its resting orders (what the history's open orders hold beyond the engine's
//! records), field by field like the rest of the codec, so that a change to an engine type
//! cannot silently change what a snapshot means. Counts are checked against what remains, so
//! damaged bytes are an error, never a huge allocation. The file around the payload (header,
//! checksum) is [`crate::snapshots`].
//!
//! The payload is the format version, the length of the state without its resting orders, that
//! state, then the resting orders: one section per pair (its length in bytes, its count, then
//! each order beside its signature). A start reads the small state whole, and each of its
//! rebuilding threads reads the sections from the file a chunk at a time, decoding the orders
//! one by one ([`decode_resting_order`]) straight into its own structures: a million orders are
//! never held whole in between, neither as bytes nor decoded. Reading the file is the store's.

use dexd_core::{
    Address, AgentGrant, Amount, AssetIndex, Balance, Candle, CustodyState, EngineState, LiveBatch, Nonce, OrderRecord,
    PairSnapshot, PendingDeposit, PendingWithdrawal, Position, Price, TransferStatus, WithdrawalKey, WithdrawalOrigin,
};

use super::{get_list, get_order, put_list, put_order, CodecError, Reader, Writer};

/// What placed a resting order: the signed message's nonce and expiry and its signature. A
/// snapshot writes each beside its order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OrderSignature {
    /// The nonce of the signed EIP-712 message.
    pub nonce: [u8; 32],
    /// The expiry of the signed message, in ms since the epoch.
    pub expiry_ms: u64,
    /// The 65-byte signature.
    pub signature: [u8; 65],
    /// Its place in its batch, for an order of a batch signed once.
    pub batch: Option<crate::records::BatchPlace>,
}

/// The fewest bytes of one encoded [`OrderSignature`] (an order placed alone).
const ORDER_SIGNATURE_BYTES: usize = 32 + 8 + 65 + 1;
/// The fewest bytes an encoded order and its signature take.
const MINIMUM_RESTING_ORDER_BYTES: usize = 100 + ORDER_SIGNATURE_BYTES;
/// The most bytes an encoded order and its signature can take (a client order id's length is
/// a 16-bit number): a reader that holds this many unread bytes, or the rest of its section,
/// always holds the whole next order.
pub const MAX_RESTING_ORDER_BYTES: usize = 2 * 65_536;
/// Bytes before the state: the format version and the state's length.
pub const STATE_PREFIX_BYTES: usize = 1 + 8;
/// Bytes before a section's orders: their length in bytes and their count.
pub const SECTION_HEADER_BYTES: usize = 8 + 8;

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

pub(super) fn put_candle(writer: &mut Writer, candle: &Candle) {
    writer.u64(candle.open_time_ms);
    for price in [candle.open, candle.high, candle.low, candle.close] {
        writer.u64(price.ticks());
    }
    writer.u128(candle.volume.units());
    writer.u128(candle.quote_volume.units());
    writer.u64(candle.trades);
}

pub(super) fn get_candle(reader: &mut Reader) -> Result<Candle, CodecError> {
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
        writer.u64(pending.debited_at_sequence);
        writer.bytes(&pending.origin.canonical_bytes());
    });
    writer.u64(custody.next_chain_request_id);
    super::liabilities::put_liabilities(writer, &custody.liabilities);
    put_list(writer, &custody.used_withdrawal_ids, |writer, mark| writer.u128(*mark));
}

fn get_withdrawal_origin(reader: &mut Reader) -> Result<WithdrawalOrigin, CodecError> {
    match reader.u8()? {
        0 => Ok(WithdrawalOrigin::Signed),
        1 => Ok(WithdrawalOrigin::Requested {
            request_id: reader.u64()?,
            requested: Amount::from_units(reader.u128()?),
            deadline_ms: reader.u64()?,
            token: Address::from_bytes(reader.array()?),
        }),
        _ => Err(CodecError("a bad withdrawal origin")),
    }
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
        withdrawals: get_list(reader, 20 + 32 + 2 + 16 + 8 + 65 + 1 + 1 + 24 + 1, |reader| {
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
                    debited_at_sequence: reader.u64()?,
                    origin: get_withdrawal_origin(reader)?,
                },
            ))
        })?,
        next_chain_request_id: reader.u64()?,
        liabilities: super::liabilities::get_liabilities(reader)?,
        used_withdrawal_ids: get_list(reader, 16, |reader| reader.u128())?,
    })
}

fn put_order_signature(writer: &mut Writer, order: &OrderSignature) {
    writer.bytes(&order.nonce);
    writer.u64(order.expiry_ms);
    writer.bytes(&order.signature);
    // 0 for an order placed alone, else 1, its batch place's length and the place.
    match &order.batch {
        None => writer.u8(0),
        Some(batch) => {
            let place = super::authorization::encode_batch_place(batch);
            writer.u8(1);
            writer.u16(u16::try_from(place.len()).expect("a batch place is under 2 KB"));
            writer.bytes(&place);
        }
    }
}

fn get_order_signature(reader: &mut Reader) -> Result<OrderSignature, CodecError> {
    let nonce = reader.array()?;
    let expiry_ms = reader.u64()?;
    let signature = reader.array()?;
    let batch = match reader.u8()? {
        0 => None,
        1 => {
            let length = usize::from(reader.u16()?);
            Some(super::authorization::decode_batch_place(reader.take(length)?)?)
        }
        _ => return Err(CodecError("bad batch place flag")),
    };
    Ok(OrderSignature {
        nonce,
        expiry_ms,
        signature,
        batch,
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
    writer.u64(0);
    writer.u64(state.next_order_sequence);
    writer.u64(state.next_trade_id);
    writer.u64(state.last_time_ms);
    writer.u64(state.journal_sequence);
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
    put_list(
        &mut writer,
        &state.nonces,
        |writer, (expiry, account, nonce, signer)| {
            writer.u64(*expiry);
            writer.bytes(account.as_bytes());
            writer.bytes(nonce.as_bytes());
            writer.bytes(signer.as_bytes());
        },
    );
    put_list(&mut writer, &state.batch_nonces, |writer, (account, nonce, batch)| {
        writer.bytes(account.as_bytes());
        writer.bytes(nonce.as_bytes());
        writer.bytes(&batch.identity);
        writer.u64(batch.applied);
    });
    put_custody(&mut writer, &state.custody);
    put_list(&mut writer, &state.agents, |writer, (account, grant)| {
        writer.bytes(account.as_bytes());
        writer.bytes(grant.agent.as_bytes());
        writer.text(Some(&grant.name));
        writer.optional(grant.valid_until_ms, |writer, until| writer.u64(until));
        writer.u64(grant.approved_at_ms);
    });
    put_list(&mut writer, &state.switches, |writer, (account, trigger_at_ms)| {
        writer.bytes(account.as_bytes());
        writer.u64(*trigger_at_ms);
    });
    writer.optional(state.configuration.as_ref(), |writer, configuration| {
        super::configuration::put_configuration(
            writer,
            configuration,
            super::configuration::ConfigurationFields::WithVenueWindow,
        )
    });
    // Optional sections, each written only when it or a later one holds something (a state
    // without them is encoded as before they existed): subaccounts, TWAPs, halted pairs, the
    // configuration's matching rules (its encoding above is the one without them), the met
    // ranges waiting to fire (which only a rule makes, so the rules precede them).
    let rules = state
        .configuration
        .as_ref()
        .map_or(0, |configuration| configuration.engine.limits.rules);
    let halts = rules != 0 || !state.halted_pairs.is_empty();
    let twaps = halts || super::twaps::has_state(&state.twaps);
    super::subaccounts::put_state(&mut writer, &state.subaccounts, twaps);
    super::twaps::put_state(&mut writer, &state.twaps, halts);
    if halts {
        put_list(&mut writer, &state.halted_pairs, |writer, pair| writer.u16(pair.0));
    }
    if rules != 0 {
        writer.u64(rules);
    }
    if !state.met_pending.is_empty() {
        assert!(
            rules & dexd_core::RULE_MET_TRIGGERS_QUEUED != 0,
            "invariant: met triggers wait only under their rule"
        );
        put_list(&mut writer, &state.met_pending, super::met_ranges::put_met_range);
    }
    let state_length = (writer.0.len() - STATE_PREFIX_BYTES) as u64;
    writer.0[1..STATE_PREFIX_BYTES].copy_from_slice(&state_length.to_be_bytes());
    let mut signatures = signatures.iter();
    for pair in &state.pairs {
        let length_at = writer.0.len();
        writer.u64(0);
        writer.u64(pair.orders.len() as u64);
        for order in &pair.orders {
            put_order(&mut writer, order);
            put_order_signature(&mut writer, signatures.next().expect("counted above"));
        }
        let length = (writer.0.len() - length_at - SECTION_HEADER_BYTES) as u64;
        writer.0[length_at..length_at + 8].copy_from_slice(&length.to_be_bytes());
    }
    writer.0
}

/// The length of the state from the payload's first [`STATE_PREFIX_BYTES`].
pub fn state_length(prefix: &[u8; STATE_PREFIX_BYTES]) -> Result<u64, CodecError> {
    let mut reader = Reader::new(prefix)?;
    reader.u64()
}

/// Decodes the state from the payload's prefix and state (the first [`STATE_PREFIX_BYTES`] and
/// the [`state_length`] after them): the engine's state with every pair's list of orders
/// empty. Its resting orders follow it, a section for each of its pairs.
pub fn decode_state(bytes: &[u8]) -> Result<EngineState, CodecError> {
    let mut reader = Reader::new(bytes)?;
    if reader.u64()? != reader.remaining() as u64 {
        return Err(CodecError("the state's length differs from its bytes"));
    }
    let next_order_sequence = reader.u64()?;
    let next_trade_id = reader.u64()?;
    let last_time_ms = reader.u64()?;
    let journal_sequence = reader.u64()?;
    let accounts = get_list(&mut reader, 20 + 8, |reader| {
        Ok((Address::from_bytes(reader.array()?), get_list(reader, 32, get_balance)?))
    })?;
    let net_deposits = get_list(&mut reader, 16, |reader| Ok(Amount::from_units(reader.u128()?)))?;
    let pairs = get_list(&mut reader, 8 + 1 + 8 * 8, get_pair_snapshot)?;
    let positions = get_list(&mut reader, 4 + 8, |reader| {
        Ok((reader.u32()?, get_list(reader, 48, get_position)?))
    })?;
    let nonces = get_list(&mut reader, 8 + 20 + 32 + 20, |reader| {
        Ok((
            reader.u64()?,
            Address::from_bytes(reader.array()?),
            Nonce::from_bytes(reader.array()?),
            Address::from_bytes(reader.array()?),
        ))
    })?;
    let batch_nonces = get_list(&mut reader, 20 + 32 + 32 + 8, get_batch_nonce)?;
    let custody = get_custody(&mut reader)?;
    let agents = get_list(&mut reader, 20 + 20 + 1 + 1 + 8, get_agent)?;
    let switches = get_list(&mut reader, 20 + 8, |reader| {
        Ok((Address::from_bytes(reader.array()?), reader.u64()?))
    })?;
    let configuration = reader.optional(|reader| {
        super::configuration::get_configuration(reader, super::configuration::ConfigurationFields::WithVenueWindow)
    })?;
    let subaccounts = super::subaccounts::get_state(&mut reader)?;
    let twaps = super::twaps::get_state(&mut reader)?;
    let halted_pairs = if reader.remaining() == 0 {
        Vec::new()
    } else {
        get_list(&mut reader, 2, |reader| Ok(dexd_core::PairIndex(reader.u16()?)))?
    };
    let mut configuration = configuration;
    if reader.remaining() != 0 {
        let rules = reader.u64()?;
        match configuration.as_mut() {
            Some(configuration) => configuration.engine.limits.rules = rules,
            None => return Err(CodecError("matching rules without a configuration")),
        }
    }
    let met_pending = if reader.remaining() == 0 {
        Vec::new()
    } else {
        get_list(&mut reader, 2 + 8 + 8 + 8 + 1 + 1, super::met_ranges::get_met_range)?
    };
    reader.finish()?;
    Ok(EngineState {
        next_order_sequence,
        next_trade_id,
        last_time_ms,
        journal_sequence,
        accounts,
        net_deposits,
        pairs,
        positions,
        nonces,
        batch_nonces,
        custody,
        agents,
        switches,
        subaccounts,
        twaps,
        halted_pairs,
        met_pending,
        configuration,
    })
}

/// A pair's part of the state: its book's sequence, its last price, its candles (its orders
/// follow in its section).
fn get_pair_snapshot(reader: &mut Reader) -> Result<PairSnapshot, CodecError> {
    let book_sequence = reader.u64()?;
    let last_price = reader.optional(|reader| Price::from_ticks(reader.u64()?).ok_or(CodecError("a zero price")))?;
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
}

/// A live batch nonce: its account, its nonce, and the batch it names.
fn get_batch_nonce(reader: &mut Reader) -> Result<(Address, Nonce, LiveBatch), CodecError> {
    Ok((
        Address::from_bytes(reader.array()?),
        Nonce::from_bytes(reader.array()?),
        LiveBatch {
            identity: reader.array()?,
            applied: reader.u64()?,
        },
    ))
}

/// An account's agent.
fn get_agent(reader: &mut Reader) -> Result<(Address, AgentGrant), CodecError> {
    let account = Address::from_bytes(reader.array()?);
    Ok((
        account,
        AgentGrant {
            agent: Address::from_bytes(reader.array()?),
            name: reader.text()?.ok_or(CodecError("an agent without a name"))?,
            valid_until_ms: reader.optional(|reader| reader.u64())?,
            approved_at_ms: reader.u64()?,
        },
    ))
}

/// A section's header: the length of its orders in bytes and their count, checked against
/// each other.
pub fn section_header(header: &[u8; SECTION_HEADER_BYTES]) -> Result<(u64, u64), CodecError> {
    let length = u64::from_be_bytes(header[..8].try_into().expect("8 bytes"));
    let count = u64::from_be_bytes(header[8..].try_into().expect("8 bytes"));
    if count > length / MINIMUM_RESTING_ORDER_BYTES as u64 {
        return Err(CodecError("a count beyond the bytes of its section"));
    }
    Ok((length, count))
}

/// Decodes the resting order and signature at the start of `bytes`; returns them and how many
/// bytes they took.
pub fn decode_resting_order(bytes: &[u8]) -> Result<(OrderRecord, OrderSignature, usize), CodecError> {
    let mut reader = Reader(bytes);
    let order = get_order(&mut reader)?;
    let signature = get_order_signature(&mut reader)?;
    Ok((order, signature, bytes.len() - reader.remaining()))
}

#[cfg(test)]
pub(crate) mod tests {
    use dexd_core::{
        Command, Direction, Engine, EngineConfig, NewOrder, OrderId, OrderType, PairIndex, Quantity, TimeInForce,
    };

    use super::*;

    /// An engine of the embedded configuration's first chain with resting buys of two accounts
    /// (one with a client order id), and a signature for each.
    pub(crate) fn engine_with_resting_orders() -> (Engine, EngineConfig, Vec<OrderSignature>) {
        let engine_config = crate::test_config::engine_config();
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
                    conditions: Default::default(),
                });
                engine.execute(place, 2, &mut events).unwrap();
            }
        }
        let signatures = (0..6u8)
            .map(|number| OrderSignature {
                nonce: [number; 32],
                expiry_ms: u64::from(number) * 1_000,
                signature: [number + 100; 65],
                // Every other order of a batch signed once.
                batch: (number % 2 == 1).then(|| crate::BatchPlace {
                    index: number / 2,
                    order_hashes: vec![[number; 32]; 3].into(),
                }),
            })
            .collect();
        (engine, engine_config, signatures)
    }

    /// The payload's state, and each pair's resting orders decoded as a reader of the file
    /// would: section by section, order by order.
    #[allow(clippy::type_complexity)]
    fn decode(bytes: &[u8]) -> Result<(EngineState, Vec<Vec<(OrderRecord, OrderSignature)>>), CodecError> {
        let prefix: &[u8; STATE_PREFIX_BYTES] = bytes[..STATE_PREFIX_BYTES].try_into().unwrap();
        let sections_at = STATE_PREFIX_BYTES + state_length(prefix)? as usize;
        let state = decode_state(bytes.get(..sections_at).ok_or(CodecError("short"))?)?;
        let mut at = sections_at;
        let mut pairs = Vec::new();
        for _ in 0..state.pairs.len() {
            let header = bytes.get(at..at + SECTION_HEADER_BYTES).ok_or(CodecError("short"))?;
            let (length, count) = section_header(header.try_into().unwrap())?;
            let mut section = &bytes[at + SECTION_HEADER_BYTES..at + SECTION_HEADER_BYTES + length as usize];
            let mut orders = Vec::new();
            for _ in 0..count {
                let (order, signature, taken) = decode_resting_order(section)?;
                orders.push((order, signature));
                section = &section[taken..];
            }
            assert!(section.is_empty(), "a section's length covers its orders exactly");
            pairs.push(orders);
            at += SECTION_HEADER_BYTES + length as usize;
        }
        assert_eq!(at, bytes.len());
        Ok((state, pairs))
    }

    #[test]
    fn the_resting_orders_decode_beside_their_signatures_and_restore_the_same_engine() {
        let (engine, engine_config, signatures) = engine_with_resting_orders();
        let state = engine.state();
        let bytes = encode_snapshot(&state, &signatures);
        let (decoded, pairs) = decode(&bytes).unwrap();
        let orders: Vec<(OrderRecord, OrderSignature)> = pairs.iter().flatten().cloned().collect();
        let written: Vec<OrderRecord> = state.pairs.iter().flat_map(|pair| pair.orders.clone()).collect();
        assert_eq!(
            orders.iter().map(|(order, _)| order.clone()).collect::<Vec<_>>(),
            written
        );
        assert_eq!(
            orders
                .iter()
                .map(|(_, signature)| signature.clone())
                .collect::<Vec<_>>(),
            signatures
        );
        let mut without_orders = state.clone();
        for pair in &mut without_orders.pairs {
            pair.orders.clear();
        }
        assert_eq!(decoded, without_orders);
        let restored = Engine::from_state_and_orders(engine_config, &decoded, |pair| {
            pairs[pair].clone().into_iter().map(|(order, _)| Ok(order))
        })
        .unwrap();
        assert_eq!(restored.state_hash(), engine.state_hash());
    }

    #[test]
    fn a_state_of_the_wrong_length_and_a_section_counting_more_orders_than_its_bytes_are_refused() {
        let (engine, _, signatures) = engine_with_resting_orders();
        let state = engine.state();
        let bytes = encode_snapshot(&state, &signatures);
        let prefix: &[u8; STATE_PREFIX_BYTES] = bytes[..STATE_PREFIX_BYTES].try_into().unwrap();
        let sections_at = STATE_PREFIX_BYTES + state_length(prefix).unwrap() as usize;
        assert!(decode_state(&bytes[..sections_at - 1]).is_err());
        assert!(decode_state(&bytes[..sections_at + 1]).is_err());
        let header: [u8; SECTION_HEADER_BYTES] = bytes[sections_at..sections_at + SECTION_HEADER_BYTES]
            .try_into()
            .unwrap();
        let (length, count) = section_header(&header).unwrap();
        assert_eq!(count, 6);
        let mut overcounted = header;
        overcounted[8..].copy_from_slice(&(length / MINIMUM_RESTING_ORDER_BYTES as u64 + 1).to_be_bytes());
        assert_eq!(
            section_header(&overcounted),
            Err(CodecError("a count beyond the bytes of its section"))
        );
        let first_order = &bytes[sections_at + SECTION_HEADER_BYTES..];
        assert!(decode_resting_order(&first_order[..MINIMUM_RESTING_ORDER_BYTES - 1]).is_err());
    }

    /// Damage that a checksum would catch is still no reason to panic: every decoder of the
    /// payload answers damaged bytes with an error or a value, whatever the bytes.
    #[test]
    fn damaged_payloads_decode_to_errors_never_to_panics() {
        use rand::{Rng, SeedableRng};
        let (engine, _, signatures) = engine_with_resting_orders();
        let bytes = encode_snapshot(&engine.state(), &signatures);
        let mut random = rand::rngs::StdRng::seed_from_u64(20261123);
        for _ in 0..3_000 {
            let mut damaged = bytes.clone();
            for _ in 0..random.gen_range(1..4) {
                let at = random.gen_range(0..damaged.len());
                damaged[at] ^= 1 << random.gen_range(0..8);
            }
            damaged.truncate(random.gen_range(damaged.len() / 2..=damaged.len()));
            let _ = decode_state(&damaged);
            if let Some(prefix) = damaged.first_chunk::<STATE_PREFIX_BYTES>() {
                let _ = state_length(prefix);
            }
            let mut at = 0;
            while at < damaged.len() {
                match decode_resting_order(&damaged[at..]) {
                    Ok((_, _, taken)) => at += taken.max(1),
                    Err(_) => at += 1,
                }
            }
            for window in damaged.windows(SECTION_HEADER_BYTES).step_by(97) {
                let _ = section_header(window.try_into().unwrap());
            }
        }
    }
}
