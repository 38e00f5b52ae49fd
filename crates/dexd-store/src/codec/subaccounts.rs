//! The binary form of subaccounts (contract version 5): the transfer command (tag
//! [`SUBACCOUNT_TRANSFER_TAG`]), the transfer as the history keeps it, and the registry's part
//! of a snapshot, field by field like the rest of the codec. This module does no IO.

use dexd_core::{Address, Amount, AssetIndex, SubaccountTransfer, SubaccountTransferRequest, SubaccountsState};

use super::{get_list, put_list, CodecError, Reader, Writer};

/// The tag of a transfer between subaccounts.
pub(super) const SUBACCOUNT_TRANSFER_TAG: u8 = 34;

/// Writes a transfer's request (after its tag).
pub(super) fn put_transfer_request(writer: &mut Writer, request: &SubaccountTransferRequest) {
    writer.bytes(request.owner.as_bytes());
    writer.u32(request.from_number);
    writer.u32(request.to_number);
    writer.u16(request.asset.0);
    writer.u128(request.amount.units());
    writer.text(Some(&request.client_transfer_id));
}

/// Reads a transfer's request (after its tag).
pub(super) fn get_transfer_request(reader: &mut Reader) -> Result<SubaccountTransferRequest, CodecError> {
    Ok(SubaccountTransferRequest {
        owner: Address::from_bytes(reader.array()?),
        from_number: reader.u32()?,
        to_number: reader.u32()?,
        asset: AssetIndex(reader.u16()?),
        amount: Amount::from_units(reader.u128()?),
        client_transfer_id: reader.text()?.ok_or(CodecError("a transfer without its id"))?,
    })
}

fn put_transfer(writer: &mut Writer, transfer: &SubaccountTransfer) {
    writer.u64(transfer.transfer_id);
    put_transfer_request(writer, &transfer.request);
    writer.u64(transfer.timestamp_ms);
}

fn get_transfer(reader: &mut Reader) -> Result<SubaccountTransfer, CodecError> {
    Ok(SubaccountTransfer {
        transfer_id: reader.u64()?,
        request: get_transfer_request(reader)?,
        timestamp_ms: reader.u64()?,
    })
}

/// Encodes a transfer between subaccounts, as the history keeps it.
pub fn encode_subaccount_transfer(transfer: &SubaccountTransfer) -> Vec<u8> {
    let mut writer = Writer::new();
    put_transfer(&mut writer, transfer);
    writer.0
}

/// Decodes a transfer between subaccounts.
pub fn decode_subaccount_transfer(bytes: &[u8]) -> Result<SubaccountTransfer, CodecError> {
    let mut reader = Reader::new(bytes)?;
    let transfer = get_transfer(&mut reader)?;
    reader.finish()?;
    Ok(transfer)
}

/// The fewest bytes of an encoded transfer.
const MINIMUM_TRANSFER_BYTES: usize = 8 + 20 + 4 + 4 + 2 + 16 + 1 + 8;

/// Writes the registry's part of a snapshot. A state without subaccounts writes nothing, so
/// its snapshot is what it was before they existed, unless a later section follows
/// (`followed`).
pub(super) fn put_state(writer: &mut Writer, state: &SubaccountsState, followed: bool) {
    if !followed && state.subaccounts.is_empty() && state.remembered.is_empty() && state.next_transfer_id <= 1 {
        return;
    }
    put_list(writer, &state.subaccounts, |writer, (owner, number)| {
        writer.bytes(owner.as_bytes());
        writer.u32(*number);
    });
    put_list(writer, &state.remembered, put_transfer);
    writer.u64(state.next_transfer_id);
}

/// Reads the registry's part of a snapshot: nothing left to read is a state without
/// subaccounts.
pub(super) fn get_state(reader: &mut Reader) -> Result<SubaccountsState, CodecError> {
    if reader.remaining() == 0 {
        return Ok(SubaccountsState::default());
    }
    Ok(SubaccountsState {
        subaccounts: get_list(reader, 24, |reader| {
            Ok((Address::from_bytes(reader.array()?), reader.u32()?))
        })?,
        remembered: get_list(reader, MINIMUM_TRANSFER_BYTES, get_transfer)?,
        next_transfer_id: reader.u64()?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{decode_command, encode_command};
    use super::*;
    use dexd_core::Command;

    fn request() -> SubaccountTransferRequest {
        SubaccountTransferRequest {
            owner: Address::from_bytes([0xa1; 20]),
            from_number: 0,
            to_number: 1_000,
            asset: AssetIndex(1),
            amount: Amount::from_units(123_456_789),
            client_transfer_id: "mm:rebalance-7".into(),
        }
    }

    #[test]
    fn a_transfer_command_and_record_read_back_as_written() {
        let command = Command::TransferBetweenSubaccounts(request());
        let bytes = encode_command(&command);
        assert_eq!(bytes[1], SUBACCOUNT_TRANSFER_TAG);
        assert_eq!(decode_command(&bytes), Ok(command));
        let transfer = SubaccountTransfer {
            transfer_id: 9,
            request: request(),
            timestamp_ms: 1_732_000_000_000,
        };
        assert_eq!(
            decode_subaccount_transfer(&encode_subaccount_transfer(&transfer)),
            Ok(transfer)
        );
        let bytes = encode_command(&Command::TransferBetweenSubaccounts(request()));
        for cut in 2..bytes.len() {
            assert!(decode_command(&bytes[..cut]).is_err(), "a cut at {cut} is an error");
        }
    }
}
