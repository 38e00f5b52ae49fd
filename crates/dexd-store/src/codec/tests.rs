//! Round trips and refusals of the journal codec: every command kind encodes and decodes to
//! itself, and damaged or unknown bytes are refused, never misread.

use super::*;
use dexd_core::{CancelReason, OrderRecord, OrderStatus};

fn sample_order() -> NewOrder {
    NewOrder {
        order_id: OrderId::from_bytes([7; 32]),
        client_order_id: Some("bot-42".into()),
        account: Address::from_bytes([9; 20]),
        pair: PairIndex(3),
        order_type: OrderType::Limit,
        direction: Direction::Sell,
        time_in_force: TimeInForce::FillOrKill,
        post_only: true,
        price: Price::from_ticks(250_000),
        quantity: Quantity::from_lots(15),
        conditions: Default::default(),
    }
}

#[test]
fn every_command_round_trips() {
    let request = TransferRequest {
        transfer_id: [1; 32],
        account: Address::from_bytes([2; 20]),
        asset: AssetIndex(1),
        amount: Amount::from_units(u128::MAX),
    };
    for command in [
        Command::PlaceOrder(sample_order()),
        Command::PlaceOrder(NewOrder {
            price: None,
            order_type: OrderType::Market,
            client_order_id: None,
            ..sample_order()
        }),
        Command::CancelOrder {
            account: Address::from_bytes([3; 20]),
            order_id: OrderId::from_bytes([4; 32]),
            pair: None,
        },
        Command::Deposit(request.clone()),
        Command::FireMetTriggers { pair: PairIndex(3) },
        Command::Withdraw(request.clone()),
        Command::SubmitChainDeposit(ChainDepositSubmission {
            tx_hash: [5; 32],
            account: Address::from_bytes([6; 20]),
            asset: AssetIndex(2),
            amount: Amount::from_units(77),
        }),
        Command::CreditChainDeposit(ChainDeposit {
            deposit_id: 12,
            account: Address::from_bytes([6; 20]),
            token: Address::from_bytes([0x70; 20]),
            asset: Some(AssetIndex(2)),
            amount: None,
            tx_hash: [5; 32],
            log_index: 3,
            block_number: 1_000,
            block_hash: [8; 32],
        }),
        Command::CreditChainDeposit(ChainDeposit {
            deposit_id: 13,
            account: Address::from_bytes([6; 20]),
            token: Address::from_bytes([0x71; 20]),
            asset: None,
            amount: Some(Amount::from_units(u128::MAX)),
            tx_hash: [5; 32],
            log_index: 4,
            block_number: 1_001,
            block_hash: [9; 32],
        }),
        Command::FailChainDeposit { tx_hash: [5; 32] },
        Command::RecordDepositScan {
            block_number: 1_002,
            block_hash: [10; 32],
        },
        Command::RequestWithdrawal(VaultWithdrawal {
            request,
            expiry_ms: 1_700_000_000_000,
            signature: [0x1b; 65],
        }),
        Command::MarkWithdrawalsSent {
            tx_hash: [11; 32],
            withdrawals: vec![
                WithdrawalKey {
                    account: Address::from_bytes([2; 20]),
                    withdrawal_id: [1; 32],
                },
                WithdrawalKey {
                    account: Address::from_bytes([3; 20]),
                    withdrawal_id: [4; 32],
                },
            ],
        },
        Command::ConfirmWithdrawals {
            tx_hash: [11; 32],
            block_number: 1_003,
            withdrawals: vec![WithdrawalKey {
                account: Address::from_bytes([2; 20]),
                withdrawal_id: [1; 32],
            }],
        },
        Command::FailWithdrawal(WithdrawalKey {
            account: Address::from_bytes([3; 20]),
            withdrawal_id: [4; 32],
        }),
    ] {
        assert_eq!(decode_command(&encode_command(&command)).unwrap(), command);
    }
}

#[test]
fn a_credit_journaled_before_deposits_carried_their_token_still_reads() {
    let credit = ChainDeposit {
        deposit_id: 12,
        account: Address::from_bytes([6; 20]),
        token: Address::from_bytes([0x70; 20]),
        asset: Some(AssetIndex(2)),
        amount: Some(Amount::from_units(5)),
        tx_hash: [5; 32],
        log_index: 3,
        block_number: 1_000,
        block_hash: [8; 32],
    };
    let mut bytes = encode_command(&Command::CreditChainDeposit(credit.clone()));
    // Tag 5 is tag 23 without the token's 20 bytes after the account.
    assert_eq!(bytes[1], CREDIT_DEPOSIT_TAG);
    bytes[1] = 5;
    bytes.drain(2 + 8 + 20..2 + 8 + 40);
    let read = decode_command(&bytes).unwrap();
    assert_eq!(
        read,
        Command::CreditChainDeposit(ChainDeposit {
            token: Address::from_bytes([0; 20]),
            ..credit
        })
    );
}

#[test]
fn records_round_trip_and_damage_is_detected() {
    let record = OrderRecord {
        terms: sample_order(),
        filled: Quantity::from_lots(5),
        cost: Amount::from_units(1_250_000),
        fee: Amount::from_units(3),
        status: OrderStatus::Cancelled,
        cancel_reason: Some(CancelReason::SelfTradePrevention),
        locked: Amount::ZERO,
        created_at_ms: 1,
        updated_at_ms: 2,
        sequence: 99,
    };
    let bytes = encode_order(&record);
    assert_eq!(decode_order(&bytes).unwrap(), record);
    // Every cancel reason reads back (a new one once had no decoding: its closed orders could
    // not be read from the history).
    for name in dexd_core::wire_names::CANCEL_REASON_NAMES {
        let reason = CancelReason::from_wire_name(name).unwrap();
        let cancelled = OrderRecord {
            cancel_reason: Some(reason),
            ..record.clone()
        };
        assert_eq!(decode_order(&encode_order(&cancelled)).unwrap(), cancelled, "{name}");
    }
    assert!(decode_order(&bytes[..bytes.len() - 1]).is_err());
    let mut wrong_version = bytes.clone();
    wrong_version[0] = 99;
    assert!(decode_order(&wrong_version).is_err());
    let mut longer = bytes;
    longer.push(0);
    assert!(decode_order(&longer).is_err());
}

/// A configuration with matching rules is written under its own tag and reads back with them;
/// one without is written as before the rules existed (tag 33), byte for byte.
#[test]
fn a_configuration_keeps_its_matching_rules_and_one_without_its_old_bytes() {
    let with_rules = dexd_core::testing::eth_usdc_chain(1);
    assert_eq!(with_rules.engine.limits.rules, dexd_core::CURRENT_RULES);
    let bytes = encode_command(&Command::Configure(Box::new(with_rules.clone())));
    assert_eq!(bytes[1], 39);
    assert_eq!(
        decode_command(&bytes),
        Ok(Command::Configure(Box::new(with_rules.clone())))
    );
    let mut without = with_rules;
    without.engine.limits.rules = 0;
    let bytes = encode_command(&Command::Configure(Box::new(without.clone())));
    assert_eq!(bytes[1], 33);
    assert_eq!(decode_command(&bytes), Ok(Command::Configure(Box::new(without))));
}

/// A snapshot of a chain with matching rules and a halted pair reads back whole: the rules,
/// kept apart from the configuration's encoding, come back into it.
#[test]
fn a_snapshot_keeps_the_matching_rules_and_the_halts() {
    let configuration = dexd_core::testing::eth_usdc_chain(1);
    let mut engine = dexd_core::Engine::new(configuration.engine.clone()).unwrap();
    let mut events = Vec::new();
    engine
        .execute(Command::Configure(Box::new(configuration)), 1, &mut events)
        .unwrap();
    engine
        .execute(
            Command::SetPairHalted {
                pair: PairIndex(0),
                halted: true,
            },
            2,
            &mut events,
        )
        .unwrap();
    let state = engine.state();
    let payload = snapshot::encode_snapshot(&state, &[]);
    let prefix: [u8; snapshot::STATE_PREFIX_BYTES] = payload[..snapshot::STATE_PREFIX_BYTES].try_into().unwrap();
    let length = snapshot::state_length(&prefix).unwrap() as usize;
    let decoded = snapshot::decode_state(&payload[..snapshot::STATE_PREFIX_BYTES + length]).unwrap();
    assert_eq!(decoded, state);
    assert_eq!(
        decoded.configuration.unwrap().engine.limits.rules,
        dexd_core::CURRENT_RULES
    );
    // Met ranges waiting to fire follow the rules, each with its walk's place.
    let price = |ticks| dexd_core::Price::from_ticks(ticks).unwrap();
    let mut waiting = state;
    let mut walked = dexd_core::triggers::MetRange::new(price(240_000), price(200_000), 77);
    walked.on_second_side = true;
    walked.cursor = Some((price(210_000), 12, dexd_core::OrderId::from_bytes([7; 32])));
    waiting.met_pending = vec![
        (PairIndex(0), walked),
        (
            PairIndex(0),
            dexd_core::triggers::MetRange::new(price(200_000), price(200_000), 80),
        ),
    ];
    let payload = snapshot::encode_snapshot(&waiting, &[]);
    let prefix: [u8; snapshot::STATE_PREFIX_BYTES] = payload[..snapshot::STATE_PREFIX_BYTES].try_into().unwrap();
    let length = snapshot::state_length(&prefix).unwrap() as usize;
    let decoded = snapshot::decode_state(&payload[..snapshot::STATE_PREFIX_BYTES + length]).unwrap();
    assert_eq!(decoded, waiting);
}
