//! A small, explicit, versioned binary encoding of commands and records for the store.
//!
//! The command log must be readable by every later version of dexd, so its format is written out
//! field by field here rather than derived: a change to an engine type cannot silently change
//! what is on disk. Integers are big-endian. Snapshots of a chain's state are encoded in
//! [`snapshot`]. This module does no IO.

mod authorization;
mod batch_references;
mod configuration;
use configuration::ConfigurationFields;
mod liabilities;
mod met_ranges;
mod records;
pub mod snapshot;
mod subaccounts;
mod trading;
mod twaps;

pub use self::authorization::{
    decode_authorization, decode_batch_place, decode_batch_place_in, decode_stored_authorization, encode_authorization,
    encode_authorization_referring, encode_batch_order_hashes, encode_batch_place, StoredAuthorization,
    AUTHORIZATION_BY_REFERENCE_VERSION, AUTHORIZATION_ENCODING_VERSION, MAX_BATCH_ORDER_HASHES,
};
pub use self::batch_references::{BatchHashesSeen, BatchHolders, MAX_BATCHES_SEEN};
pub use self::liabilities::{decode_root_record, encode_root_record};
pub use self::records::{
    decode_candle, decode_order, decode_trade, decode_transfer, encode_candle, encode_order, encode_trade,
    encode_transfer,
};
pub(crate) use self::records::{get_order, put_order};
pub use self::subaccounts::{decode_subaccount_transfer, encode_subaccount_transfer};

use dexd_core::{
    Address, Amount, AssetIndex, ChainDeposit, ChainDepositSubmission, ChainWithdrawalRequest, Command, Direction,
    NewOrder, OrderConditions, OrderId, OrderType, PairIndex, Price, Quantity, TimeInForce, TransferRequest, Trigger,
    TriggerCondition, VaultWithdrawal, WithdrawalKey,
};

/// The version byte written first in every encoded value.
pub const FORMAT_VERSION: u8 = 1;

/// A value that could not be decoded: the store is damaged or from an unknown version.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CodecError(pub &'static str);

impl std::fmt::Display for CodecError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(formatter, "cannot decode stored value: {}", self.0)
    }
}

impl std::error::Error for CodecError {}

pub(crate) struct Writer(pub(crate) Vec<u8>);

impl Writer {
    pub(crate) fn new() -> Writer {
        Writer(vec![FORMAT_VERSION])
    }
    pub(crate) fn u8(&mut self, value: u8) {
        self.0.push(value);
    }
    pub(crate) fn u16(&mut self, value: u16) {
        self.0.extend_from_slice(&value.to_be_bytes());
    }
    pub(crate) fn u64(&mut self, value: u64) {
        self.0.extend_from_slice(&value.to_be_bytes());
    }
    pub(crate) fn u128(&mut self, value: u128) {
        self.0.extend_from_slice(&value.to_be_bytes());
    }
    pub(crate) fn bytes(&mut self, value: &[u8]) {
        self.0.extend_from_slice(value);
    }
    /// A vault event's number, account, token and the asset the token is (if the chain lists
    /// it), as a deposit's credit and a recorded request both begin.
    pub(crate) fn vault_event_subject(
        &mut self,
        number: u64,
        (account, token): (&Address, &Address),
        asset: Option<AssetIndex>,
    ) {
        self.u64(number);
        self.bytes(account.as_bytes());
        self.bytes(token.as_bytes());
        self.optional(asset, |writer, asset| writer.u16(asset.0));
    }
    /// Where a log is on chain: its transaction, its index, its block's number and hash.
    pub(crate) fn log_position(
        &mut self,
        tx_hash: &[u8; 32],
        log_index: u64,
        (block_number, block_hash): (u64, &[u8; 32]),
    ) {
        self.bytes(tx_hash);
        self.u64(log_index);
        self.u64(block_number);
        self.bytes(block_hash);
    }
    pub(crate) fn optional<T>(&mut self, value: Option<T>, put: impl FnOnce(&mut Writer, T)) {
        match value {
            None => self.u8(0),
            Some(value) => {
                self.u8(1);
                put(self, value);
            }
        }
    }
    pub(crate) fn withdrawal_keys(&mut self, keys: &[WithdrawalKey]) {
        self.u32(u32::try_from(keys.len()).expect("a batch of withdrawals is short"));
        for key in keys {
            self.bytes(key.account.as_bytes());
            self.bytes(&key.withdrawal_id);
        }
    }
    pub(crate) fn u32(&mut self, value: u32) {
        self.0.extend_from_slice(&value.to_be_bytes());
    }
    pub(crate) fn text(&mut self, value: Option<&str>) {
        match value {
            None => self.u8(0),
            Some(text) => {
                self.u8(1);
                self.u16(u16::try_from(text.len()).expect("stored texts are short"));
                self.bytes(text.as_bytes());
            }
        }
    }
}

pub(crate) struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    pub(crate) fn new(bytes: &'a [u8]) -> Result<Reader<'a>, CodecError> {
        let mut reader = Reader(bytes);
        if reader.u8()? != FORMAT_VERSION {
            return Err(CodecError("unknown format version"));
        }
        Ok(reader)
    }
    pub(crate) fn take(&mut self, length: usize) -> Result<&'a [u8], CodecError> {
        if self.0.len() < length {
            return Err(CodecError("truncated"));
        }
        let (head, tail) = self.0.split_at(length);
        self.0 = tail;
        Ok(head)
    }
    pub(crate) fn array<const N: usize>(&mut self) -> Result<[u8; N], CodecError> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }
    pub(crate) fn u8(&mut self) -> Result<u8, CodecError> {
        Ok(self.take(1)?[0])
    }
    pub(crate) fn flag(&mut self) -> Result<bool, CodecError> {
        match self.u8()? {
            0 => Ok(false),
            1 => Ok(true),
            _ => Err(CodecError("bad flag")),
        }
    }
    pub(crate) fn u16(&mut self) -> Result<u16, CodecError> {
        Ok(u16::from_be_bytes(self.array()?))
    }
    pub(crate) fn u64(&mut self) -> Result<u64, CodecError> {
        Ok(u64::from_be_bytes(self.array()?))
    }
    pub(crate) fn u128(&mut self) -> Result<u128, CodecError> {
        Ok(u128::from_be_bytes(self.array()?))
    }
    pub(crate) fn u32(&mut self) -> Result<u32, CodecError> {
        Ok(u32::from_be_bytes(self.array()?))
    }
    pub(crate) fn optional<T>(
        &mut self,
        get: impl FnOnce(&mut Reader<'a>) -> Result<T, CodecError>,
    ) -> Result<Option<T>, CodecError> {
        match self.u8()? {
            0 => Ok(None),
            1 => get(self).map(Some),
            _ => Err(CodecError("bad option tag")),
        }
    }
    pub(crate) fn withdrawal_keys(&mut self) -> Result<Vec<WithdrawalKey>, CodecError> {
        let count = self.u32()? as usize;
        // Each key takes 52 bytes: a count beyond what remains is damage, not an allocation.
        if count > self.0.len() / 52 {
            return Err(CodecError("truncated"));
        }
        (0..count)
            .map(|_| {
                Ok(WithdrawalKey {
                    account: Address::from_bytes(self.array()?),
                    withdrawal_id: self.array()?,
                })
            })
            .collect()
    }
    pub(crate) fn text(&mut self) -> Result<Option<String>, CodecError> {
        match self.u8()? {
            0 => Ok(None),
            1 => {
                let length = usize::from(self.u16()?);
                let bytes = self.take(length)?;
                String::from_utf8(bytes.to_vec())
                    .map(Some)
                    .map_err(|_| CodecError("text is not UTF-8"))
            }
            _ => Err(CodecError("bad option tag")),
        }
    }
    /// Bytes not read yet.
    pub(crate) fn remaining(&self) -> usize {
        self.0.len()
    }
    pub(crate) fn finish(self) -> Result<(), CodecError> {
        if self.0.is_empty() {
            Ok(())
        } else {
            Err(CodecError("trailing bytes"))
        }
    }
}

/// The bit of an order's flags byte that says it is post-only.
const POST_ONLY_FLAG: u8 = 1;
/// The bit that says its conditions (trigger, group, expiry) follow: set on every order placed
/// since contract version 4, clear on one journaled before (whose account signed the `Order`
/// type without them), which is written exactly as it was.
const CONDITIONS_FLAG: u8 = 2;
/// The bit that says the TWAP the order is a slice of follows its conditions (contract
/// version 5): set only on the orders the engine places for a TWAP.
const TWAP_FLAG: u8 = 4;

pub(crate) fn put_new_order(writer: &mut Writer, order: &NewOrder) {
    writer.bytes(order.order_id.as_bytes());
    writer.text(order.client_order_id.as_deref());
    writer.bytes(order.account.as_bytes());
    writer.u16(order.pair.0);
    writer.u8(order.order_type as u8);
    writer.u8(order.direction as u8);
    writer.u8(order.time_in_force as u8);
    let conditions = order.conditions();
    let with_conditions = !conditions.signed_without_conditions;
    let flags = u8::from(order.post_only) * POST_ONLY_FLAG
        + u8::from(with_conditions) * CONDITIONS_FLAG
        + u8::from(conditions.twap_id.is_some()) * TWAP_FLAG;
    writer.u8(flags);
    writer.u64(order.price.map_or(0, Price::ticks));
    writer.u64(order.quantity.lots());
    if with_conditions {
        writer.optional(conditions.trigger, |writer, trigger| {
            writer.u8(trigger.condition as u8);
            writer.u64(trigger.price.ticks());
        });
        writer.text(conditions.oco_group.as_deref());
        writer.optional(conditions.expires_at_ms, |writer, expires_at_ms| {
            writer.u64(expires_at_ms)
        });
    }
    if let Some(twap_id) = conditions.twap_id {
        writer.u64(twap_id);
    }
}

pub(crate) fn get_new_order(reader: &mut Reader) -> Result<NewOrder, CodecError> {
    let order_id = OrderId::from_bytes(reader.array()?);
    let client_order_id = reader.text()?;
    let account = Address::from_bytes(reader.array()?);
    let pair = PairIndex(reader.u16()?);
    let order_type = match reader.u8()? {
        0 => OrderType::Limit,
        1 => OrderType::Market,
        _ => return Err(CodecError("bad order type")),
    };
    let direction = direction(reader.u8()?)?;
    let time_in_force = match reader.u8()? {
        0 => TimeInForce::GoodTillCancelled,
        1 => TimeInForce::ImmediateOrCancel,
        2 => TimeInForce::FillOrKill,
        _ => return Err(CodecError("bad time in force")),
    };
    let flags = reader.u8()?;
    if flags > POST_ONLY_FLAG + CONDITIONS_FLAG + TWAP_FLAG {
        return Err(CodecError("bad order flags"));
    }
    let price = Price::from_ticks(reader.u64()?);
    let quantity = Quantity::from_lots(reader.u64()?);
    let mut conditions = if flags & CONDITIONS_FLAG == 0 {
        OrderConditions {
            signed_without_conditions: true,
            ..OrderConditions::default()
        }
    } else {
        OrderConditions {
            trigger: reader.optional(|reader| {
                let condition = match reader.u8()? {
                    0 => TriggerCondition::Above,
                    1 => TriggerCondition::Below,
                    _ => return Err(CodecError("bad trigger condition")),
                };
                let price = Price::from_ticks(reader.u64()?).ok_or(CodecError("a zero trigger price"))?;
                Ok(Trigger { price, condition })
            })?,
            oco_group: reader.text()?,
            expires_at_ms: reader.optional(|reader| reader.u64())?,
            twap_id: None,
            signed_without_conditions: false,
        }
    };
    if flags & TWAP_FLAG != 0 {
        conditions.twap_id = Some(reader.u64()?);
    }
    Ok(NewOrder {
        order_id,
        client_order_id,
        account,
        pair,
        order_type,
        direction,
        time_in_force,
        post_only: flags & POST_ONLY_FLAG != 0,
        price,
        quantity,
        conditions: conditions.boxed(),
    })
}

pub(crate) fn direction(tag: u8) -> Result<Direction, CodecError> {
    match tag {
        0 => Ok(Direction::Buy),
        1 => Ok(Direction::Sell),
        _ => Err(CodecError("bad direction")),
    }
}

fn put_transfer_request(writer: &mut Writer, request: &TransferRequest) {
    writer.bytes(&request.transfer_id);
    writer.bytes(request.account.as_bytes());
    writer.u16(request.asset.0);
    writer.u128(request.amount.units());
}

fn get_transfer_request(reader: &mut Reader) -> Result<TransferRequest, CodecError> {
    Ok(TransferRequest {
        transfer_id: reader.array()?,
        account: Address::from_bytes(reader.array()?),
        asset: AssetIndex(reader.u16()?),
        amount: Amount::from_units(reader.u128()?),
    })
}

/// Encodes a command.
pub fn encode_command(command: &Command) -> Vec<u8> {
    let mut writer = Writer::new();
    put_command(&mut writer, command);
    writer.0
}

/// Writes a command's tag and fields (an agent's command holds another).
pub(crate) fn put_command(writer: &mut Writer, command: &Command) {
    match command {
        Command::PlaceOrder(order) => {
            writer.u8(0);
            put_new_order(writer, order);
        }
        Command::CancelOrder {
            account,
            order_id,
            pair,
        } => {
            writer.u8(if pair.is_some() { CANCEL_ON_PAIR_TAG } else { 1 });
            writer.bytes(account.as_bytes());
            writer.bytes(order_id.as_bytes());
            if let Some(pair) = pair {
                writer.u16(pair.0);
            }
        }
        Command::Deposit(request) => {
            writer.u8(2);
            put_transfer_request(writer, request);
        }
        Command::Withdraw(request) => {
            writer.u8(3);
            put_transfer_request(writer, request);
        }
        Command::SubmitChainDeposit(submission) => {
            writer.u8(4);
            writer.bytes(&submission.tx_hash);
            writer.bytes(submission.account.as_bytes());
            writer.u16(submission.asset.0);
            writer.u128(submission.amount.units());
        }
        Command::CreditChainDeposit(deposit) => {
            writer.u8(CREDIT_DEPOSIT_TAG);
            writer.vault_event_subject(deposit.deposit_id, (&deposit.account, &deposit.token), deposit.asset);
            writer.optional(deposit.amount, |writer, amount| writer.u128(amount.units()));
            writer.log_position(
                &deposit.tx_hash,
                deposit.log_index,
                (deposit.block_number, &deposit.block_hash),
            );
        }
        Command::FailChainDeposit { tx_hash } => {
            writer.u8(6);
            writer.bytes(tx_hash);
        }
        Command::RecordDepositScan {
            block_number,
            block_hash,
        } => {
            writer.u8(7);
            writer.u64(*block_number);
            writer.bytes(block_hash);
        }
        Command::RequestWithdrawal(withdrawal) => {
            writer.u8(8);
            put_transfer_request(writer, &withdrawal.request);
            writer.u64(withdrawal.expiry_ms);
            writer.bytes(&withdrawal.signature);
        }
        Command::MarkWithdrawalsSent { tx_hash, withdrawals } => {
            writer.u8(9);
            writer.bytes(tx_hash);
            writer.withdrawal_keys(withdrawals);
        }
        Command::ConfirmWithdrawals {
            tx_hash,
            block_number,
            withdrawals,
        } => {
            writer.u8(10);
            writer.bytes(tx_hash);
            writer.u64(*block_number);
            writer.withdrawal_keys(withdrawals);
        }
        Command::FailWithdrawal(key) => {
            writer.u8(11);
            writer.withdrawal_keys(std::slice::from_ref(key));
        }
        Command::MarkWithdrawalsUnpaid { tx_hash, withdrawals } => {
            writer.u8(MARK_UNPAID_TAG);
            writer.bytes(tx_hash);
            writer.withdrawal_keys(withdrawals);
        }
        Command::RecordWithdrawalRequest(request) => {
            writer.u8(WITHDRAWAL_REQUEST_TAG);
            writer.vault_event_subject(request.request_id, (&request.account, &request.token), request.asset);
            writer.u128(request.amount.units());
            writer.u64(request.deadline_ms);
            writer.log_position(
                &request.tx_hash,
                request.log_index,
                (request.block_number, &request.block_hash),
            );
        }
        Command::CancelAll { .. }
        | Command::AmendOrder(_)
        | Command::SetCancelAllAfter { .. }
        | Command::FireCancelAllAfter { .. }
        | Command::ApproveAgent { .. }
        | Command::RevokeAgent { .. }
        | Command::ByAgent { .. } => trading::put_trading_command(writer, command),
        Command::RecordLiabilityRoot(_) | Command::SettleLiabilityRoot { .. } | Command::RecordVaultFreeze(_) => {
            liabilities::put_root_command(writer, command)
        }
        Command::TransferBetweenSubaccounts(request) => {
            writer.u8(subaccounts::SUBACCOUNT_TRANSFER_TAG);
            subaccounts::put_transfer_request(writer, request);
        }
        Command::StartTwap(_) | Command::CancelTwap { .. } | Command::RunTwapSlice { .. } => {
            twaps::put_twap_command(writer, command)
        }
        Command::SetPairHalted { pair, halted } => {
            writer.u8(configuration::SET_PAIR_HALTED_TAG);
            writer.u16(pair.0);
            writer.u8(u8::from(*halted));
        }
        Command::ExpireOrder { order_id } => {
            writer.u8(EXPIRE_ORDER_TAG);
            writer.bytes(order_id.as_bytes());
        }
        Command::FireMetTriggers { pair } => {
            writer.u8(FIRE_MET_TRIGGERS_TAG);
            writer.u16(pair.0);
        }
        Command::Configure(configuration) => {
            let (tag, fields) = configuration::configure_tag(configuration);
            writer.u8(tag);
            configuration::put_configuration(writer, configuration, fields);
        }
    }
}

/// Decodes a command.
pub fn decode_command(bytes: &[u8]) -> Result<Command, CodecError> {
    let mut reader = Reader::new(bytes)?;
    let command = get_command(&mut reader)?;
    reader.finish()?;
    Ok(command)
}

/// Reads a command's tag and fields.
pub(crate) fn get_command(reader: &mut Reader) -> Result<Command, CodecError> {
    let command = match reader.u8()? {
        0 => Command::PlaceOrder(get_new_order(reader)?),
        1 => Command::CancelOrder {
            account: Address::from_bytes(reader.array()?),
            order_id: OrderId::from_bytes(reader.array()?),
            pair: None,
        },
        CANCEL_ON_PAIR_TAG => Command::CancelOrder {
            account: Address::from_bytes(reader.array()?),
            order_id: OrderId::from_bytes(reader.array()?),
            pair: Some(PairIndex(reader.u16()?)),
        },
        configuration::CONFIGURE_TAG => Command::Configure(Box::new(configuration::get_configuration(
            reader,
            ConfigurationFields::Original,
        )?)),
        configuration::CONFIGURE_WITH_FEE_NOTICE_TAG => Command::Configure(Box::new(configuration::get_configuration(
            reader,
            ConfigurationFields::WithFeeNotice,
        )?)),
        configuration::CONFIGURE_WITH_VENUE_WINDOW_TAG => Command::Configure(Box::new(
            configuration::get_configuration(reader, ConfigurationFields::WithVenueWindow)?,
        )),
        configuration::CONFIGURE_WITH_RULES_TAG => Command::Configure(Box::new(configuration::get_configuration(
            reader,
            ConfigurationFields::WithRules,
        )?)),
        2 => Command::Deposit(get_transfer_request(reader)?),
        3 => Command::Withdraw(get_transfer_request(reader)?),
        4 => Command::SubmitChainDeposit(ChainDepositSubmission {
            tx_hash: reader.array()?,
            account: Address::from_bytes(reader.array()?),
            asset: AssetIndex(reader.u16()?),
            amount: Amount::from_units(reader.u128()?),
        }),
        5 => Command::CreditChainDeposit(get_chain_deposit(reader, false)?),
        6 => Command::FailChainDeposit {
            tx_hash: reader.array()?,
        },
        7 => Command::RecordDepositScan {
            block_number: reader.u64()?,
            block_hash: reader.array()?,
        },
        8 => Command::RequestWithdrawal(VaultWithdrawal {
            request: get_transfer_request(reader)?,
            expiry_ms: reader.u64()?,
            signature: reader.array()?,
        }),
        9 => Command::MarkWithdrawalsSent {
            tx_hash: reader.array()?,
            withdrawals: reader.withdrawal_keys()?,
        },
        10 => Command::ConfirmWithdrawals {
            tx_hash: reader.array()?,
            block_number: reader.u64()?,
            withdrawals: reader.withdrawal_keys()?,
        },
        11 => {
            let mut keys = reader.withdrawal_keys()?;
            if keys.len() != 1 {
                return Err(CodecError("a failed withdrawal names one withdrawal"));
            }
            Command::FailWithdrawal(keys.remove(0))
        }
        tag @ (trading::FIRST_TAG..=trading::LAST_TAG
        | trading::AMEND_TAG
        | trading::AMEND_KEEPING_PRICE_TAG
        | trading::SWITCH_TAG) => trading::get_trading_command(tag, reader)?,
        tag @ liabilities::RECORD_ROOT_FIRST_TAG..=liabilities::RECORD_FREEZE_TAG => {
            liabilities::get_root_command(tag, reader)?
        }
        CREDIT_DEPOSIT_TAG => Command::CreditChainDeposit(get_chain_deposit(reader, true)?),
        subaccounts::SUBACCOUNT_TRANSFER_TAG => {
            Command::TransferBetweenSubaccounts(subaccounts::get_transfer_request(reader)?)
        }
        tag @ twaps::START_TWAP_TAG..=twaps::RUN_TWAP_SLICE_TAG => twaps::get_twap_command(tag, reader)?,
        configuration::SET_PAIR_HALTED_TAG => Command::SetPairHalted {
            pair: PairIndex(reader.u16()?),
            halted: match reader.u8()? {
                0 => false,
                1 => true,
                _ => return Err(CodecError("bad halt flag")),
            },
        },
        EXPIRE_ORDER_TAG => Command::ExpireOrder {
            order_id: OrderId::from_bytes(reader.array()?),
        },
        FIRE_MET_TRIGGERS_TAG => Command::FireMetTriggers {
            pair: PairIndex(reader.u16()?),
        },
        MARK_UNPAID_TAG => Command::MarkWithdrawalsUnpaid {
            tx_hash: reader.array()?,
            withdrawals: reader.withdrawal_keys()?,
        },
        WITHDRAWAL_REQUEST_TAG => Command::RecordWithdrawalRequest(ChainWithdrawalRequest {
            request_id: reader.u64()?,
            account: Address::from_bytes(reader.array()?),
            token: Address::from_bytes(reader.array()?),
            asset: reader.optional(|reader| Ok(AssetIndex(reader.u16()?)))?,
            amount: Amount::from_units(reader.u128()?),
            deadline_ms: reader.u64()?,
            tx_hash: reader.array()?,
            log_index: reader.u64()?,
            block_number: reader.u64()?,
            block_hash: reader.array()?,
        }),
        _ => return Err(CodecError("bad command tag")),
    };
    Ok(command)
}

/// The tag of `Command::ExpireOrder`.
const EXPIRE_ORDER_TAG: u8 = 29;

/// The tag of `Command::FireMetTriggers`.
const FIRE_MET_TRIGGERS_TAG: u8 = 40;

/// The tag of `Command::MarkWithdrawalsUnpaid`.
const MARK_UNPAID_TAG: u8 = 30;

/// The tag of `Command::RecordWithdrawalRequest`.
const WITHDRAWAL_REQUEST_TAG: u8 = 31;

/// The tag of `Command::CancelOrder` with the pair the account named (tag 1, still written for
/// a cancel without one, has none).
const CANCEL_ON_PAIR_TAG: u8 = 25;

/// The tag of `Command::CreditChainDeposit` with the token's address (tag 5, read and never
/// written, has none: its token reads as the zero address).
const CREDIT_DEPOSIT_TAG: u8 = 23;

fn get_chain_deposit(reader: &mut Reader, with_token: bool) -> Result<ChainDeposit, CodecError> {
    let deposit_id = reader.u64()?;
    let account = Address::from_bytes(reader.array()?);
    let token = if with_token {
        Address::from_bytes(reader.array()?)
    } else {
        Address::from_bytes([0; 20])
    };
    Ok(ChainDeposit {
        deposit_id,
        account,
        token,
        asset: reader.optional(|reader| Ok(AssetIndex(reader.u16()?)))?,
        amount: reader.optional(|reader| Ok(Amount::from_units(reader.u128()?)))?,
        tx_hash: reader.array()?,
        log_index: reader.u64()?,
        block_number: reader.u64()?,
        block_hash: reader.array()?,
    })
}

/// Writes a collection's length, then each item.
pub(crate) fn put_list<T>(writer: &mut Writer, items: &[T], mut put: impl FnMut(&mut Writer, &T)) {
    writer.u64(items.len() as u64);
    for item in items {
        put(writer, item);
    }
}

/// Reads a collection written by [`put_list`]; `minimum_item_bytes` bounds the count by what
/// remains.
pub(crate) fn get_list<'a, T>(
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

#[cfg(test)]
mod tests;
