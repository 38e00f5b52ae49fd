//! The binary form of the trading controls' commands: cancel all, amend, the dead man's switch,
//! agents, and a command an agent sends. Tags follow the older commands' (0 to 11), which
//! `super` encodes; this module only adds its own (12 to 18; 24 and 26, amends; 27, the
//! switch). Tags read and never written: 13 (an amend without the remaining amount it was
//! built from), 24 (without whether it kept the price), 14 (the switch as a trigger time rather
//! than the timeout the account signed).

use dexd_core::{AgentGrant, Amend, Command, OrderId, PairIndex, Quantity, SwitchSetting};

use super::{get_command, get_new_order, put_command, put_new_order, CodecError, Reader, Writer};
use dexd_core::Address;

/// The first tag of this module's commands.
pub(super) const FIRST_TAG: u8 = 12;
/// The last.
pub(super) const LAST_TAG: u8 = 18;
/// An amend with the old order's remaining amount its replacement was built from (read only).
pub(super) const AMEND_TAG: u8 = 24;
/// An amend with that amount and whether it kept the old price.
pub(super) const AMEND_KEEPING_PRICE_TAG: u8 = 26;
/// The switch as the account set it: off, after a timeout, or (from tag 14) at a time.
pub(super) const SWITCH_TAG: u8 = 27;

/// Writes one of this module's commands.
pub(super) fn put_trading_command(writer: &mut Writer, command: &Command) {
    match command {
        Command::CancelAll { account, pair } => {
            writer.u8(12);
            writer.bytes(account.as_bytes());
            writer.optional(*pair, |writer, pair| writer.u16(pair.0));
        }
        Command::AmendOrder(amend) => {
            writer.u8(AMEND_KEEPING_PRICE_TAG);
            writer.bytes(amend.account.as_bytes());
            writer.bytes(amend.order_id.as_bytes());
            put_new_order(writer, &amend.replacement);
            writer.optional(amend.amount_from_remaining, |writer, quantity| {
                writer.u64(quantity.lots())
            });
            writer.u8(u8::from(amend.keeps_price));
        }
        Command::SetCancelAllAfter { account, setting } => {
            writer.u8(SWITCH_TAG);
            writer.bytes(account.as_bytes());
            let (kind, value) = match setting {
                SwitchSetting::Off => (0, 0),
                SwitchSetting::AfterMs(timeout_ms) => (1, *timeout_ms),
                SwitchSetting::AtMs(trigger_at_ms) => (2, *trigger_at_ms),
            };
            writer.u8(kind);
            writer.u64(value);
        }
        Command::FireCancelAllAfter { account, trigger_at_ms } => {
            writer.u8(15);
            writer.bytes(account.as_bytes());
            writer.u64(*trigger_at_ms);
        }
        Command::ApproveAgent { account, grant } => {
            writer.u8(16);
            writer.bytes(account.as_bytes());
            writer.bytes(grant.agent.as_bytes());
            writer.text(Some(&grant.name));
            writer.optional(grant.valid_until_ms, |writer, until| writer.u64(until));
            writer.u64(grant.approved_at_ms);
        }
        Command::RevokeAgent { account, agent } => {
            writer.u8(17);
            writer.bytes(account.as_bytes());
            writer.bytes(agent.as_bytes());
        }
        Command::ByAgent { agent, command } => {
            writer.u8(18);
            writer.bytes(agent.as_bytes());
            put_command(writer, command);
        }
        _ => unreachable!("the older commands are encoded by the codec's root"),
    }
}

/// Reads one of this module's commands after its `tag`.
pub(super) fn get_trading_command(tag: u8, reader: &mut Reader) -> Result<Command, CodecError> {
    let account = Address::from_bytes(reader.array()?);
    Ok(match tag {
        12 => Command::CancelAll {
            account,
            pair: reader.optional(|reader| Ok(PairIndex(reader.u16()?)))?,
        },
        13 => Command::AmendOrder(Amend {
            account,
            order_id: OrderId::from_bytes(reader.array()?),
            replacement: get_new_order(reader)?,
            amount_from_remaining: None,
            keeps_price: false,
        }),
        AMEND_TAG | AMEND_KEEPING_PRICE_TAG => Command::AmendOrder(Amend {
            account,
            order_id: OrderId::from_bytes(reader.array()?),
            replacement: get_new_order(reader)?,
            amount_from_remaining: reader.optional(|reader| Ok(Quantity::from_lots(reader.u64()?)))?,
            keeps_price: tag == AMEND_KEEPING_PRICE_TAG && reader.flag()?,
        }),
        14 => Command::SetCancelAllAfter {
            account,
            setting: reader
                .optional(|reader| reader.u64())?
                .map_or(SwitchSetting::Off, SwitchSetting::AtMs),
        },
        SWITCH_TAG => {
            let kind = reader.u8()?;
            let value = reader.u64()?;
            Command::SetCancelAllAfter {
                account,
                setting: match kind {
                    0 if value == 0 => SwitchSetting::Off,
                    1 => SwitchSetting::AfterMs(value),
                    2 => SwitchSetting::AtMs(value),
                    _ => return Err(CodecError("bad switch setting")),
                },
            }
        }
        15 => Command::FireCancelAllAfter {
            account,
            trigger_at_ms: reader.u64()?,
        },
        16 => Command::ApproveAgent {
            account,
            grant: AgentGrant {
                agent: Address::from_bytes(reader.array()?),
                name: reader.text()?.ok_or(CodecError("an agent without a name"))?,
                valid_until_ms: reader.optional(|reader| reader.u64())?,
                approved_at_ms: reader.u64()?,
            },
        },
        17 => Command::RevokeAgent {
            account,
            agent: Address::from_bytes(reader.array()?),
        },
        18 => {
            // The agent's address came first, where the others have the account.
            let command = get_command(reader)?;
            if matches!(command, Command::ByAgent { .. }) {
                return Err(CodecError("an agent's command inside another"));
            }
            Command::ByAgent {
                agent: account,
                command: Box::new(command),
            }
        }
        _ => return Err(CodecError("bad command tag")),
    })
}

#[cfg(test)]
mod tests {
    use super::super::{decode_command, encode_command};
    use dexd_core::Address;
    use dexd_core::{
        AgentGrant, Amend, Command, Direction, NewOrder, OrderId, OrderType, PairIndex, Price, Quantity, SwitchSetting,
        TimeInForce,
    };

    /// Tags read and never written: what they decode to.
    #[test]
    fn commands_journaled_before_their_signed_fields_still_decode() {
        let account = [1u8; 20];
        // Tag 14, a switch armed for time 99.
        let mut switch = vec![super::super::FORMAT_VERSION, 14];
        switch.extend_from_slice(&account);
        switch.extend_from_slice(&[1, 0, 0, 0, 0, 0, 0, 0, 99]);
        assert_eq!(
            decode_command(&switch).unwrap(),
            Command::SetCancelAllAfter {
                account: Address::from_bytes(account),
                setting: SwitchSetting::AtMs(99),
            }
        );
        // Tag 1, a cancel without its pair.
        let mut cancel = vec![super::super::FORMAT_VERSION, 1];
        cancel.extend_from_slice(&account);
        cancel.extend_from_slice(&[7; 32]);
        assert_eq!(
            decode_command(&cancel).unwrap(),
            Command::CancelOrder {
                account: Address::from_bytes(account),
                order_id: OrderId::from_bytes([7; 32]),
                pair: None,
            }
        );
        // A switch setting out of range is damage.
        let mut damaged = vec![super::super::FORMAT_VERSION, super::SWITCH_TAG];
        damaged.extend_from_slice(&account);
        damaged.extend_from_slice(&[3, 0, 0, 0, 0, 0, 0, 0, 1]);
        assert!(decode_command(&damaged).is_err());
    }

    #[test]
    fn every_trading_command_round_trips() {
        let account = Address::from_bytes([1; 20]);
        let agent = Address::from_bytes([2; 20]);
        let replacement = NewOrder {
            order_id: OrderId::from_bytes([3; 32]),
            client_order_id: Some("q-1".to_string()),
            account,
            pair: PairIndex(1),
            order_type: OrderType::Limit,
            direction: Direction::Sell,
            time_in_force: TimeInForce::GoodTillCancelled,
            post_only: true,
            price: Price::from_ticks(42),
            quantity: Quantity::from_lots(7),
            conditions: Default::default(),
        };
        let commands = [
            Command::CancelAll { account, pair: None },
            Command::CancelAll {
                account,
                pair: Some(PairIndex(2)),
            },
            Command::AmendOrder(Amend {
                account,
                order_id: OrderId::from_bytes([4; 32]),
                replacement: replacement.clone(),
                amount_from_remaining: None,
                keeps_price: true,
            }),
            Command::AmendOrder(Amend {
                account,
                order_id: OrderId::from_bytes([4; 32]),
                replacement: replacement.clone(),
                amount_from_remaining: Some(Quantity::from_lots(3)),
                keeps_price: false,
            }),
            Command::SetCancelAllAfter {
                account,
                setting: SwitchSetting::AtMs(99),
            },
            Command::SetCancelAllAfter {
                account,
                setting: SwitchSetting::AfterMs(5_000),
            },
            Command::SetCancelAllAfter {
                account,
                setting: SwitchSetting::Off,
            },
            Command::FireCancelAllAfter {
                account,
                trigger_at_ms: 99,
            },
            Command::ApproveAgent {
                account,
                grant: AgentGrant {
                    agent,
                    name: "bot".to_string(),
                    valid_until_ms: Some(5),
                    approved_at_ms: 4,
                },
            },
            Command::RevokeAgent { account, agent },
            Command::ByAgent {
                agent,
                command: Box::new(Command::PlaceOrder(replacement)),
            },
        ];
        for command in commands {
            assert_eq!(decode_command(&encode_command(&command)).unwrap(), command);
        }
        let nested = Command::ByAgent {
            agent,
            command: Box::new(Command::ByAgent {
                agent,
                command: Box::new(Command::CancelAll { account, pair: None }),
            }),
        };
        assert!(decode_command(&encode_command(&nested)).is_err());
    }
}
