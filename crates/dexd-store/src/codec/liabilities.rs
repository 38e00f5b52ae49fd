//! The binary form of what the liability proofs need: the journaled facts of the vault's roots
//! (a root recorded, command tag 20, and tag 19 as the first vaults' roots were journaled; a
//! root vetoed or final, tag 21; the freeze, tag 22), the history's row of a root, and the
//! liability state of a snapshot.

use dexd_core::{
    AccountFlows, Address, Amount, AssetIndex, Command, LiabilitiesState, LiabilityRootRecord, LiabilityToken,
    RecordedRoot, RootOrigin, RootStanding, VaultFreeze,
};

use super::{get_list, put_list, CodecError, Reader, Writer};

/// The tag of `Command::RecordLiabilityRoot` as journaled before roots carried their deposit
/// count, origin and end of challenge (read, never written).
pub(super) const RECORD_ROOT_FIRST_TAG: u8 = 19;
/// The tag of `Command::RecordLiabilityRoot`.
pub(super) const RECORD_ROOT_TAG: u8 = 20;
/// The tag of `Command::SettleLiabilityRoot`.
pub(super) const SETTLE_ROOT_TAG: u8 = 21;
/// The tag of `Command::RecordVaultFreeze`.
pub(super) const RECORD_FREEZE_TAG: u8 = 22;

/// Writes a root record's fields.
pub(crate) fn put_root_record(writer: &mut Writer, record: &LiabilityRootRecord) {
    writer.u64(record.epoch);
    writer.bytes(&record.root);
    writer.u64(record.journal_sequence);
    writer.u64(record.deposit_count);
    writer.bytes(&record.tx_hash);
    writer.u64(record.block_number);
    writer.u64(record.committed_at_ms);
    writer.u64(record.final_after_ms);
    writer.u8(record.origin as u8);
    put_list(writer, &record.totals, |writer, total| writer.u128(total.units()));
}

/// Reads what [`put_root_record`] wrote.
pub(crate) fn get_root_record(reader: &mut Reader) -> Result<LiabilityRootRecord, CodecError> {
    Ok(LiabilityRootRecord {
        epoch: reader.u64()?,
        root: reader.array()?,
        journal_sequence: reader.u64()?,
        deposit_count: reader.u64()?,
        tx_hash: reader.array()?,
        block_number: reader.u64()?,
        committed_at_ms: reader.u64()?,
        final_after_ms: reader.u64()?,
        origin: match reader.u8()? {
            0 => RootOrigin::Venue,
            1 => RootOrigin::Foreign,
            _ => return Err(CodecError("bad root origin")),
        },
        totals: get_list(reader, 16, |reader| Ok(Amount::from_units(reader.u128()?)))?,
    })
}

/// Reads a root as tag 19 journaled it: the venue's own, with no deposit count, final at its
/// commit.
fn get_first_root_record(reader: &mut Reader) -> Result<LiabilityRootRecord, CodecError> {
    let epoch = reader.u64()?;
    let root = reader.array()?;
    let journal_sequence = reader.u64()?;
    let tx_hash = reader.array()?;
    let block_number = reader.u64()?;
    let committed_at_ms = reader.u64()?;
    Ok(LiabilityRootRecord {
        epoch,
        root,
        journal_sequence,
        deposit_count: 0,
        tx_hash,
        block_number,
        committed_at_ms,
        final_after_ms: committed_at_ms,
        origin: RootOrigin::Venue,
        totals: get_list(reader, 16, |reader| Ok(Amount::from_units(reader.u128()?)))?,
    })
}

fn standing(tag: u8) -> Result<RootStanding, CodecError> {
    match tag {
        0 => Ok(RootStanding::Challengeable),
        1 => Ok(RootStanding::Vetoed),
        2 => Ok(RootStanding::Final),
        _ => Err(CodecError("bad root standing")),
    }
}

/// Writes the vault's facts about roots: a root recorded, settled, the freeze.
pub(super) fn put_root_command(writer: &mut Writer, command: &Command) {
    match command {
        Command::RecordLiabilityRoot(record) => {
            writer.u8(RECORD_ROOT_TAG);
            put_root_record(writer, record);
        }
        Command::SettleLiabilityRoot { epoch, standing } => {
            writer.u8(SETTLE_ROOT_TAG);
            writer.u64(*epoch);
            writer.u8(*standing as u8);
        }
        Command::RecordVaultFreeze(freeze) => {
            writer.u8(RECORD_FREEZE_TAG);
            writer.optional(freeze.exit_epoch, |writer, epoch| writer.u64(epoch));
        }
        _ => unreachable!("only the roots' commands are written here"),
    }
}

/// Reads a command [`put_root_command`] wrote (or tag 19), after its tag.
pub(super) fn get_root_command(tag: u8, reader: &mut Reader) -> Result<Command, CodecError> {
    Ok(match tag {
        RECORD_ROOT_FIRST_TAG => Command::RecordLiabilityRoot(get_first_root_record(reader)?),
        RECORD_ROOT_TAG => Command::RecordLiabilityRoot(get_root_record(reader)?),
        SETTLE_ROOT_TAG => Command::SettleLiabilityRoot {
            epoch: reader.u64()?,
            standing: standing(reader.u8()?)?,
        },
        RECORD_FREEZE_TAG => Command::RecordVaultFreeze(VaultFreeze {
            exit_epoch: reader.optional(|reader| reader.u64())?,
        }),
        _ => return Err(CodecError("bad command tag")),
    })
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

fn put_token(writer: &mut Writer, token: &LiabilityToken) {
    match token {
        LiabilityToken::Asset(asset) => {
            writer.u8(0);
            writer.u16(asset.0);
        }
        LiabilityToken::Unlisted(address) => {
            writer.u8(1);
            writer.bytes(address.as_bytes());
        }
    }
}

fn get_token(reader: &mut Reader) -> Result<LiabilityToken, CodecError> {
    match reader.u8()? {
        0 => Ok(LiabilityToken::Asset(AssetIndex(reader.u16()?))),
        1 => Ok(LiabilityToken::Unlisted(Address::from_bytes(reader.array()?))),
        _ => Err(CodecError("bad liability token")),
    }
}

/// Writes the liability state of a snapshot.
pub(super) fn put_liabilities(writer: &mut Writer, state: &LiabilitiesState) {
    put_list(writer, &state.flows, |writer, ((account, asset), flows)| {
        writer.bytes(account.as_bytes());
        writer.u16(asset.0);
        writer.u128(flows.credited_deposits.units());
        writer.u128(flows.debited_withdrawals.units());
    });
    put_list(writer, &state.uncredited, |writer, (account, token)| {
        writer.bytes(account.as_bytes());
        put_token(writer, token);
    });
    writer.u64(state.roots_recorded);
    put_list(writer, &state.roots, |writer, root| {
        put_root_record(writer, &root.record);
        writer.u8(root.standing as u8);
    });
    writer.optional(state.freeze, |writer, freeze| {
        writer.optional(freeze.exit_epoch, |writer, epoch| writer.u64(epoch))
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
        uncredited: get_list(reader, 20 + 3, |reader| {
            Ok((Address::from_bytes(reader.array()?), get_token(reader)?))
        })?,
        roots_recorded: reader.u64()?,
        roots: get_list(reader, 8 + 32 + 8 + 8 + 32 + 8 + 8 + 8 + 1 + 8 + 1, |reader| {
            Ok(RecordedRoot {
                record: get_root_record(reader)?,
                standing: standing(reader.u8()?)?,
            })
        })?,
        freeze: reader.optional(|reader| {
            Ok(VaultFreeze {
                exit_epoch: reader.optional(|reader| reader.u64())?,
            })
        })?,
    })
}

#[cfg(test)]
mod tests {
    use super::super::{decode_command, encode_command};
    use super::{decode_root_record, encode_root_record};
    use dexd_core::{Amount, Command, LiabilityRootRecord, RootOrigin, RootStanding, VaultFreeze};

    #[test]
    fn a_root_record_round_trips_as_a_command_and_alone() {
        let record = LiabilityRootRecord {
            epoch: 3,
            root: [7; 32],
            journal_sequence: 1_234,
            deposit_count: 17,
            tx_hash: [8; 32],
            block_number: 99,
            committed_at_ms: 1_700_000_000_000,
            final_after_ms: 1_700_000_600_000,
            origin: RootOrigin::Foreign,
            totals: vec![Amount::from_units(u128::MAX), Amount::ZERO, Amount::from_units(5)],
        };
        let command = Command::RecordLiabilityRoot(record.clone());
        assert_eq!(decode_command(&encode_command(&command)).unwrap(), command);
        for command in [
            Command::SettleLiabilityRoot {
                epoch: 9,
                standing: RootStanding::Vetoed,
            },
            Command::SettleLiabilityRoot {
                epoch: 10,
                standing: RootStanding::Final,
            },
            Command::RecordVaultFreeze(VaultFreeze { exit_epoch: None }),
            Command::RecordVaultFreeze(VaultFreeze { exit_epoch: Some(4) }),
        ] {
            assert_eq!(decode_command(&encode_command(&command)).unwrap(), command);
        }
        let bytes = encode_root_record(&record);
        assert_eq!(decode_root_record(&bytes).unwrap(), record);
        assert!(decode_root_record(&bytes[..bytes.len() - 1]).is_err());
    }
}
