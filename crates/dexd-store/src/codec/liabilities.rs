//! The binary form of what the liability proofs need: the journaled record of a root the vault
//! committed (command tag 19, and the history's row), and the accounts' flows through the vault
//! in a snapshot.

use dexd_core::{AccountFlows, Address, Amount, AssetIndex, Command, LiabilitiesState, LiabilityRootRecord};

use super::{get_list, put_list, CodecError, Reader, Writer};

/// The tag of `Command::RecordLiabilityRoot`.
pub(super) const RECORD_ROOT_TAG: u8 = 19;

/// Writes a root record's fields.
pub(crate) fn put_root_record(writer: &mut Writer, record: &LiabilityRootRecord) {
    writer.u64(record.epoch);
    writer.bytes(&record.root);
    writer.u64(record.journal_sequence);
    writer.bytes(&record.tx_hash);
    writer.u64(record.block_number);
    writer.u64(record.committed_at_ms);
    put_list(writer, &record.totals, |writer, total| writer.u128(total.units()));
}

/// Reads what [`put_root_record`] wrote.
pub(crate) fn get_root_record(reader: &mut Reader) -> Result<LiabilityRootRecord, CodecError> {
    Ok(LiabilityRootRecord {
        epoch: reader.u64()?,
        root: reader.array()?,
        journal_sequence: reader.u64()?,
        tx_hash: reader.array()?,
        block_number: reader.u64()?,
        committed_at_ms: reader.u64()?,
        totals: get_list(reader, 16, |reader| Ok(Amount::from_units(reader.u128()?)))?,
    })
}

/// Writes `Command::RecordLiabilityRoot`.
pub(super) fn put_record_root_command(writer: &mut Writer, record: &LiabilityRootRecord) {
    writer.u8(RECORD_ROOT_TAG);
    put_root_record(writer, record);
}

/// Reads `Command::RecordLiabilityRoot` after its tag.
pub(super) fn get_record_root_command(reader: &mut Reader) -> Result<Command, CodecError> {
    Ok(Command::RecordLiabilityRoot(get_root_record(reader)?))
}

/// Encodes a root record alone (the history's row).
pub fn encode_root_record(record: &LiabilityRootRecord) -> Vec<u8> {
    let mut writer = Writer::new();
    put_root_record(&mut writer, record);
    writer.0
}

/// Decodes what [`encode_root_record`] wrote.
pub fn decode_root_record(bytes: &[u8]) -> Result<LiabilityRootRecord, CodecError> {
    let mut reader = Reader::new(bytes)?;
    let record = get_root_record(&mut reader)?;
    reader.finish()?;
    Ok(record)
}

/// Writes the liability state of a snapshot.
pub(super) fn put_liabilities(writer: &mut Writer, state: &LiabilitiesState) {
    put_list(writer, &state.flows, |writer, ((account, asset), flows)| {
        writer.bytes(account.as_bytes());
        writer.u16(asset.0);
        writer.u128(flows.credited_deposits.units());
        writer.u128(flows.debited_withdrawals.units());
    });
    writer.u64(state.roots_recorded);
    writer.optional(state.newest_root.as_ref(), |writer, record| {
        put_root_record(writer, record)
    });
}

/// Reads what [`put_liabilities`] wrote.
pub(super) fn get_liabilities(reader: &mut Reader) -> Result<LiabilitiesState, CodecError> {
    Ok(LiabilitiesState {
        flows: get_list(reader, 20 + 2 + 16 + 16, |reader| {
            Ok((
                (Address::from_bytes(reader.array()?), AssetIndex(reader.u16()?)),
                AccountFlows {
                    credited_deposits: Amount::from_units(reader.u128()?),
                    debited_withdrawals: Amount::from_units(reader.u128()?),
                },
            ))
        })?,
        roots_recorded: reader.u64()?,
        newest_root: reader.optional(get_root_record)?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{decode_command, encode_command};
    use super::{decode_root_record, encode_root_record};
    use dexd_core::{Amount, Command, LiabilityRootRecord};

    #[test]
    fn a_root_record_round_trips_as_a_command_and_alone() {
        let record = LiabilityRootRecord {
            epoch: 3,
            root: [7; 32],
            journal_sequence: 1_234,
            tx_hash: [8; 32],
            block_number: 99,
            committed_at_ms: 1_700_000_000_000,
            totals: vec![Amount::from_units(u128::MAX), Amount::ZERO, Amount::from_units(5)],
        };
        let command = Command::RecordLiabilityRoot(record.clone());
        assert_eq!(decode_command(&encode_command(&command)).unwrap(), command);
        let bytes = encode_root_record(&record);
        assert_eq!(decode_root_record(&bytes).unwrap(), record);
        assert!(decode_root_record(&bytes[..bytes.len() - 1]).is_err());
    }
}
