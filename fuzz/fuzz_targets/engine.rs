//! The engine's command stream: any sequence of deposits, withdrawals, orders of every kind and
//! cancels, at moving times. After every command all invariants hold (no crossed book, locks
//! match open orders, per-asset conservation); a refused command emits nothing and leaves the
//! state hash unchanged.
#![no_main]

use dexd_core::{
    Address, Amount, AssetIndex, AssetSpec, Command, Decimal, Direction, Engine, EngineConfig, EngineLimits, FeeRate,
    NewOrder, OrderId, OrderType, PairDefinition, PairIndex, Price, Quantity, TimeInForce, TransferRequest,
};
use libfuzzer_sys::fuzz_target;

const ACCOUNTS: u8 = 4;

fn engine() -> Engine {
    let decimal = |text| Decimal::parse(text).unwrap();
    Engine::new(EngineConfig {
        assets: vec![AssetSpec { decimals: 18 }, AssetSpec { decimals: 6 }],
        pairs: vec![PairDefinition {
            base: AssetIndex(0),
            quote: AssetIndex(1),
            tick_size: decimal("0.01"),
            step_size: decimal("0.0001"),
            min_amount: decimal("0.0001"),
            min_notional: decimal("0.01"),
            maker_fee: FeeRate::from_parts_per_million(1_000).unwrap(),
            taker_fee: FeeRate::from_parts_per_million(2_500).unwrap(),
            fee_raise: None,
        }],
        fee_account: Address::from_bytes([0xfe; 20]),
        custody: dexd_core::CustodyMode::Ledger,
        limits: EngineLimits {
            max_open_orders_per_account: 16,
            max_resting_orders: 48,
            ..EngineLimits::default()
        },
    })
    .unwrap()
}

fn account(byte: u8) -> Address {
    Address::from_bytes([1 + byte % ACCOUNTS; 20])
}

/// Reads one command from 8 bytes.
fn command(bytes: &[u8; 8], serial: u32, placed: &[OrderId]) -> Command {
    let [kind, who, a, b, c, d, e, f] = *bytes;
    let amount = u128::from(u16::from_be_bytes([a, b])) * 10u128.pow(u32::from(c % 19));
    match kind % 8 {
        0 | 1 => Command::Deposit(TransferRequest {
            transfer_id: [0; 32],
            account: account(who),
            asset: AssetIndex(u16::from(d % 2)),
            amount: Amount::from_units(amount),
        }),
        2 => Command::Withdraw(TransferRequest {
            transfer_id: [1; 32],
            account: account(who),
            asset: AssetIndex(u16::from(d % 2)),
            amount: Amount::from_units(amount),
        }),
        3 if !placed.is_empty() => Command::CancelOrder {
            account: account(who),
            order_id: placed[usize::from(a) % placed.len()],
            pair: (b % 3 == 0).then_some(PairIndex(u16::from(c % 2))),
        },
        _ => {
            let mut id = [0u8; 32];
            id[..4].copy_from_slice(&serial.to_be_bytes());
            let market = e % 7 == 0;
            Command::PlaceOrder(NewOrder {
                order_id: OrderId::from_bytes(id),
                client_order_id: (f % 5 == 0).then(|| format!("c{}", f % 3)),
                account: account(who),
                pair: PairIndex(0),
                order_type: if market { OrderType::Market } else { OrderType::Limit },
                direction: if kind % 2 == 0 { Direction::Buy } else { Direction::Sell },
                time_in_force: match f % 4 {
                    0 => TimeInForce::ImmediateOrCancel,
                    1 => TimeInForce::FillOrKill,
                    _ => TimeInForce::GoodTillCancelled,
                },
                post_only: e % 5 == 1,
                price: (!market).then(|| Price::from_ticks(u64::from(d % 32) + 1)).flatten(),
                quantity: Quantity::from_lots(u64::from(b % 64) + 1),
            })
        }
    }
}

fuzz_target!(|data: &[u8]| {
    let mut engine = engine();
    let mut placed = Vec::new();
    let mut events = Vec::new();
    let mut time_ms = 1_700_000_000_000u64;
    for (serial, chunk) in data.chunks_exact(8).take(400).enumerate() {
        let command = command(chunk.try_into().unwrap(), serial as u32, &placed);
        if let Command::PlaceOrder(order) = &command {
            placed.push(order.order_id);
        }
        time_ms += u64::from(chunk[7] % 4) * 20_000;
        let before = engine.state_hash();
        events.clear();
        if engine.execute(command, time_ms, &mut events).is_err() {
            assert!(events.is_empty(), "a refusal emits no events");
            assert_eq!(engine.state_hash(), before, "a refusal changes nothing");
        }
        if let Err(fault) = engine.check_invariants() {
            panic!("invariant broken after command {serial}: {fault}");
        }
    }
});
