//! The binary form of the trading controls' commands: cancel all, amend, the dead man's switch,
//! agents, and a command an agent sends. Tags follow the older commands' (0 to 11), which
//! `super` encodes; this module only adds its own (12 to 18, and 24: an amend with the remaining
//! amount it was built from, which tag 13, read and never written, lacks).

use dexd_core::{AgentGrant, Command, OrderId, PairIndex, Quantity};

use super::{get_command, get_new_order, put_command, put_new_order, CodecError, Reader, Writer};
use dexd_core::Address;

/// The first tag of this module's commands.
pub(super) const FIRST_TAG: u8 = 12;
/// The last.
pub(super) const LAST_TAG: u8 = 18;
/// An amend with the old order's remaining amount its replacement was built from.
pub(super) const AMEND_TAG: u8 = 24;

/// Writes one of this module's commands.
pub(super) fn put_trading_command(writer: &mut Writer, command: &Command) {
    match command {
        Command::CancelAll { account, pair } => {
            writer.u8(12);
            writer.bytes(account.as_bytes());
            writer.optional(*pair, |writer, pair| writer.u16(pair.0));
        }
        Command::AmendOrder {
            account,
            order_id,
            replacement,
            amount_from_remaining,
        } => {
            writer.u8(AMEND_TAG);
            writer.bytes(account.as_bytes());
            writer.bytes(order_id.as_bytes());
            put_new_order(writer, replacement);
            writer.optional(*amount_from_remaining, |writer, quantity| writer.u64(quantity.lots()));
        }
        Command::SetCancelAllAfter { account, trigger_at_ms } => {
            writer.u8(14);
            writer.bytes(account.as_bytes());
            writer.optional(*trigger_at_ms, |writer, trigger| writer.u64(trigger));
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
        13 => Command::AmendOrder {
            account,
            order_id: OrderId::from_bytes(reader.array()?),
            replacement: get_new_order(reader)?,
            amount_from_remaining: None,
        },
        AMEND_TAG => Command::AmendOrder {
            account,
            order_id: OrderId::from_bytes(reader.array()?),
            replacement: get_new_order(reader)?,
            amount_from_remaining: reader.optional(|reader| Ok(Quantity::from_lots(reader.u64()?)))?,
        },
        14 => Command::SetCancelAllAfter {
            account,
            trigger_at_ms: reader.optional(|reader| reader.u64())?,
        },
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
        AgentGrant, Command, Direction, NewOrder, OrderId, OrderType, PairIndex, Price, Quantity, TimeInForce,
    };

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
        };
        let commands = [
            Command::CancelAll { account, pair: None },
            Command::CancelAll {
                account,
                pair: Some(PairIndex(2)),
            },
            Command::AmendOrder {
                account,
                order_id: OrderId::from_bytes([4; 32]),
                replacement: replacement.clone(),
                amount_from_remaining: None,
            },
            Command::AmendOrder {
                account,
                order_id: OrderId::from_bytes([4; 32]),
                replacement: replacement.clone(),
                amount_from_remaining: Some(Quantity::from_lots(3)),
            },
            Command::SetCancelAllAfter {
                account,
                trigger_at_ms: Some(99),
            },
            Command::SetCancelAllAfter {
                account,
                trigger_at_ms: None,
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
