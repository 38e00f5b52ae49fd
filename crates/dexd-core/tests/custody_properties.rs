//! Property tests of vault custody: random streams of chain deposits (some repeated or out of
//! order, as a node may hand them over), withdrawals, payments and failures, checked after every
//! step against a model of the vault's balance on chain. Whatever the order, the vault holds
//! exactly what the venue owes (balances plus withdrawals not yet paid), every deposit is
//! credited once, and every withdrawal ends paid or credited back, never both.

use std::collections::BTreeMap;

use dexd_core::{
    Address, Amount, AssetIndex, AssetSpec, ChainDeposit, Command, CustodyMode, Engine, EngineConfig, EngineLimits,
    TransferRequest, VaultWithdrawal, WithdrawalKey,
};
use proptest::prelude::*;

const ASSETS: usize = 2;
const ACCOUNTS: u8 = 3;

#[derive(Clone, Debug)]
enum Operation {
    /// The watcher offers the deposit with this number (possibly one already credited, or one
    /// ahead of the next).
    OfferDeposit {
        number_offset: i8,
        account: u8,
        asset: u16,
        units: u128,
    },
    Withdraw {
        account: u8,
        asset: u16,
        units: u128,
    },
    Send {
        pick: usize,
    },
    Confirm {
        pick: usize,
    },
    Fail {
        pick: usize,
    },
}

fn operation() -> impl Strategy<Value = Operation> {
    prop_oneof![
        3 => (-1i8..=1, 0..ACCOUNTS, 0..ASSETS as u16, 1..1_000u128).prop_map(|(number_offset, account, asset, units)| {
            Operation::OfferDeposit { number_offset, account, asset, units }
        }),
        3 => (0..ACCOUNTS, 0..ASSETS as u16, 1..600u128).prop_map(|(account, asset, units)| Operation::Withdraw { account, asset, units }),
        2 => any::<usize>().prop_map(|pick| Operation::Send { pick }),
        2 => any::<usize>().prop_map(|pick| Operation::Confirm { pick }),
        1 => any::<usize>().prop_map(|pick| Operation::Fail { pick }),
    ]
}

fn account(index: u8) -> Address {
    Address::from_bytes([index + 1; 20])
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 300, ..ProptestConfig::default() })]

    #[test]
    fn the_vault_always_holds_what_the_venue_owes(operations in prop::collection::vec(operation(), 1..200)) {
        let config = EngineConfig {
            assets: vec![AssetSpec { decimals: 6 }; ASSETS],
            pairs: vec![],
            fee_account: Address::from_bytes([0xfe; 20]),
            custody: CustodyMode::Vault,
            limits: EngineLimits::default(),
        };
        let mut engine = Engine::new(config.clone()).unwrap();
        // The model: what the vault holds on chain per asset, the deposits the chain has made
        // (by number), and each withdrawal's fate.
        let mut on_chain = [0u128; ASSETS];
        let mut credited_numbers = Vec::new();
        let mut paid: BTreeMap<WithdrawalKey, u128> = BTreeMap::new();
        let mut credited_back: BTreeMap<WithdrawalKey, u128> = BTreeMap::new();
        let mut next_withdrawal_id = 0u64;
        let mut time_ms = 1_000u64;
        let mut block = 10u64;
        for operation in &operations {
            time_ms += 1;
            let pending: Vec<(WithdrawalKey, u128)> = engine
                .custody()
                .pending_withdrawals()
                .map(|(key, withdrawal)| (*key, withdrawal.amount.units()))
                .collect();
            let command = match operation {
                Operation::OfferDeposit { number_offset, account: index, asset, units } => {
                    let next = engine.custody().next_deposit_id();
                    let Some(number) = next.checked_add_signed(i64::from(*number_offset)) else { continue };
                    block += 1;
                    Command::CreditChainDeposit(ChainDeposit {
                        token: Address::from_bytes([0x70; 20]),
                        deposit_id: number,
                        account: account(*index),
                        asset: Some(AssetIndex(*asset)),
                        amount: Some(Amount::from_units(*units)),
                        tx_hash: [number as u8; 32],
                        log_index: 0,
                        block_number: block,
                        block_hash: [block as u8; 32],
                    })
                }
                Operation::Withdraw { account: index, asset, units } => {
                    next_withdrawal_id += 1;
                    let mut withdrawal_id = [0u8; 32];
                    withdrawal_id[24..].copy_from_slice(&next_withdrawal_id.to_be_bytes());
                    Command::RequestWithdrawal(VaultWithdrawal {
                        request: TransferRequest {
                            transfer_id: withdrawal_id,
                            account: account(*index),
                            asset: AssetIndex(*asset),
                            amount: Amount::from_units(*units),
                        },
                        expiry_ms: time_ms + 1_000,
                        signature: [0x1b; 65],
                    })
                }
                Operation::Send { pick } | Operation::Confirm { pick } | Operation::Fail { pick } => {
                    if pending.is_empty() {
                        continue;
                    }
                    let (key, _) = pending[pick % pending.len()];
                    match operation {
                        Operation::Send { .. } => Command::MarkWithdrawalsSent { tx_hash: [7; 32], withdrawals: vec![key] },
                        Operation::Confirm { .. } => Command::ConfirmWithdrawals { tx_hash: [7; 32], block_number: block, withdrawals: vec![key] },
                        _ => Command::FailWithdrawal(key),
                    }
                }
            };
            let before = engine.state_hash();
            let mut events = Vec::new();
            let result = engine.execute(command.clone(), time_ms, &mut events);
            match (&command, &result) {
                (Command::CreditChainDeposit(deposit), Ok(())) => {
                    prop_assert!(!credited_numbers.contains(&deposit.deposit_id), "deposit {} credited twice", deposit.deposit_id);
                    credited_numbers.push(deposit.deposit_id);
                    on_chain[usize::from(deposit.asset.unwrap().0)] += deposit.amount.unwrap().units();
                }
                (Command::ConfirmWithdrawals { withdrawals, .. }, Ok(())) => {
                    for key in withdrawals {
                        let (_, units) = pending.iter().find(|(pending_key, _)| pending_key == key).unwrap();
                        let asset = engine_asset_of(&events);
                        on_chain[asset] -= units;
                        prop_assert!(paid.insert(*key, *units).is_none());
                        prop_assert!(!credited_back.contains_key(key), "paid after it was credited back");
                    }
                }
                (Command::FailWithdrawal(key), Ok(())) => {
                    let (_, units) = pending.iter().find(|(pending_key, _)| pending_key == key).unwrap();
                    prop_assert!(credited_back.insert(*key, *units).is_none());
                    prop_assert!(!paid.contains_key(key), "credited back after it was paid");
                }
                (_, Err(_)) => {
                    prop_assert!(events.is_empty());
                    prop_assert_eq!(before, engine.state_hash(), "a refusal changed the state");
                }
                _ => {}
            }
            engine.check_invariants().map_err(TestCaseError::fail)?;
            for (index, held) in on_chain.iter().enumerate() {
                let asset = AssetIndex(index as u16);
                let owed = engine.net_deposits(asset).units() + engine.custody().pending_withdrawal_units(asset).units();
                prop_assert_eq!(*held, owed, "asset {}: the vault holds {} and the venue owes {}", index, held, owed);
            }
        }
        // The custody state survives a snapshot: restored, the engine is the same.
        let restored = Engine::from_state(config, &engine.state()).map_err(|error| TestCaseError::fail(error.to_string()))?;
        prop_assert_eq!(restored.state_hash(), engine.state_hash());
        prop_assert_eq!(restored.state(), engine.state());
        let numbers: Vec<u64> = (0..credited_numbers.len() as u64).collect();
        prop_assert_eq!(credited_numbers, numbers, "deposits are credited in the vault's order, none skipped");
    }
}

/// The asset of the withdrawal a confirmation event names.
fn engine_asset_of(events: &[dexd_core::Event]) -> usize {
    events
        .iter()
        .find_map(|event| match event {
            dexd_core::Event::TransferApplied(transfer) => Some(usize::from(transfer.asset.0)),
            _ => None,
        })
        .expect("a confirmation names its transfer")
}
