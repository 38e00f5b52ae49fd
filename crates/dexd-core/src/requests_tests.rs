//! Scenario tests of withdrawals requested on chain (contract version 5): recorded in the vault's
//! order, the account's orders holding the token cancelled newest first as needed, at most what
//! it then holds debited (0 when it holds nothing), paid only through a final root like any
//! withdrawal, never failed; a signed withdrawal cannot take a request's id; a withdrawal the
//! vault skipped is pending again.

use crate::custody::{CustodyMode, WithdrawalOrigin};
use crate::custody_tests::root_record;
use crate::engine::{Command, Engine, EngineConfig, EngineLimits};
use crate::events::{Event, Rejection};
use crate::liabilities::RootStanding;
use crate::money::{Address, Amount, AssetIndex, OrderId, Price, Quantity};
use crate::order::{CancelReason, Direction, OrderStatus};
use crate::testing::{eth_and_usdc, eth_usdc_definition, execute_checked, plain_order, ETH, USDC};
use crate::transfer::{
    chain_request_withdrawal_id, ChainDeposit, ChainWithdrawalRequest, TransferRequest, TransferStatus,
    VaultWithdrawal, WithdrawalKey,
};

const ALICE: Address = Address::from_bytes([0xa1; 20]);
const BOB: Address = Address::from_bytes([0xb0; 20]);
const USDC_TOKEN: Address = Address::from_bytes([0x70; 20]);

struct Venue {
    engine: Engine,
    time_ms: u64,
    next_deposit: u64,
}

impl Venue {
    fn new() -> Venue {
        let engine = Engine::new(EngineConfig {
            assets: eth_and_usdc(),
            pairs: vec![eth_usdc_definition()],
            fee_account: Address::from_bytes([0xfe; 20]),
            custody: CustodyMode::Vault,
            limits: EngineLimits::default(),
        })
        .unwrap();
        Venue {
            engine,
            time_ms: 1_000,
            next_deposit: 0,
        }
    }

    fn run(&mut self, command: Command) -> Result<Vec<Event>, Rejection> {
        self.time_ms += 1;
        execute_checked(&mut self.engine, command, self.time_ms)
    }

    fn credit(&mut self, account: Address, asset: AssetIndex, units: u128) {
        let deposit_id = self.next_deposit;
        self.next_deposit += 1;
        self.run(Command::CreditChainDeposit(ChainDeposit {
            deposit_id,
            account,
            token: USDC_TOKEN,
            asset: Some(asset),
            amount: Some(Amount::from_units(units)),
            tx_hash: [deposit_id as u8 + 1; 32],
            log_index: 0,
            block_number: 100 + deposit_id,
            block_hash: [0xbb; 32],
        }))
        .unwrap();
    }

    fn buy(&mut self, id: u8, ticks: u64, lots: u64) {
        let order_id = OrderId::from_bytes([id; 32]);
        let order = plain_order(
            order_id,
            ALICE,
            Direction::Buy,
            Price::from_ticks(ticks),
            Quantity::from_lots(lots),
        );
        self.run(Command::PlaceOrder(order)).unwrap();
    }

    fn available(&self, account: Address, asset: AssetIndex) -> u128 {
        self.engine.balance(&account, asset).available.units()
    }
}

fn request(request_id: u64, account: Address, asset: Option<AssetIndex>, units: u128) -> Command {
    Command::RecordWithdrawalRequest(ChainWithdrawalRequest {
        request_id,
        account,
        token: USDC_TOKEN,
        asset,
        amount: Amount::from_units(units),
        deadline_ms: 90_000_000,
        tx_hash: [0x40 + request_id as u8; 32],
        log_index: 1,
        block_number: 500 + request_id,
        block_hash: [0xcc; 32],
    })
}

fn key(account: Address, request_id: u64) -> WithdrawalKey {
    WithdrawalKey {
        account,
        withdrawal_id: chain_request_withdrawal_id(request_id),
    }
}

fn cancelled(events: &[Event]) -> Vec<(OrderId, Option<CancelReason>)> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::OrderUpdated(record) if record.status == OrderStatus::Cancelled => {
                Some((record.terms.order_id, record.cancel_reason))
            }
            _ => None,
        })
        .collect()
}

#[test]
fn a_request_cancels_the_newest_orders_holding_the_token_and_debits_what_it_can() {
    let mut venue = Venue::new();
    venue.credit(ALICE, USDC, 10_000_000);
    // Three buys lock USDC: 1, 2 and 3 USDC-worth, oldest first.
    venue.buy(1, 100, 10_000);
    venue.buy(2, 100, 20_000);
    venue.buy(3, 100, 30_000);
    let locked_before = venue.engine.balance(&ALICE, USDC).locked.units();
    assert!(locked_before > 0);
    let available_before = venue.available(ALICE, USDC);
    // Alice asks for a little more than is available: the newest order alone is cancelled.
    let asked = available_before + 1;
    let events = venue.run(request(0, ALICE, Some(USDC), asked)).unwrap();
    assert_eq!(
        cancelled(&events),
        vec![(OrderId::from_bytes([3; 32]), Some(CancelReason::ForcedWithdrawal))]
    );
    let pending = venue
        .engine
        .custody()
        .pending_withdrawal(&key(ALICE, 0))
        .unwrap()
        .clone();
    assert_eq!(pending.amount.units(), asked, "what was asked, now that it is free");
    assert_eq!(pending.expiry_ms, u64::MAX, "a request never expires");
    assert!(matches!(
        pending.origin,
        WithdrawalOrigin::Requested { request_id: 0, .. }
    ));
    assert_eq!(venue.engine.custody().next_chain_request_id(), 1);

    // More than all Alice holds: every order holding USDC goes, and all of it is debited.
    let events = venue.run(request(1, ALICE, Some(USDC), u128::from(u64::MAX))).unwrap();
    assert_eq!(cancelled(&events).len(), 2);
    assert_eq!(venue.engine.balance(&ALICE, USDC).total().units(), 0);
    let second = venue.engine.custody().pending_withdrawal(&key(ALICE, 1)).unwrap();
    assert_eq!(second.amount.units(), 10_000_000 - asked);

    // Bob holds nothing: recorded all the same, with nothing to pay. A token the chain does not
    // list: the same. Neither changes a balance.
    venue.run(request(2, BOB, Some(ETH), 5)).unwrap();
    venue.run(request(3, BOB, None, 5)).unwrap();
    for request_id in [2, 3] {
        let pending = venue
            .engine
            .custody()
            .pending_withdrawal(&key(BOB, request_id))
            .unwrap();
        assert_eq!(pending.amount, Amount::ZERO);
    }
    // Out of the vault's order, or again: refused, nothing changes.
    assert_eq!(
        venue.run(request(9, BOB, Some(ETH), 5)),
        Err(Rejection::DepositOutOfOrder)
    );
    assert_eq!(
        venue.run(request(3, BOB, Some(ETH), 5)),
        Err(Rejection::DepositOutOfOrder)
    );
}

#[test]
fn a_request_is_paid_through_a_final_root_never_failed_and_its_id_is_its_own() {
    let mut venue = Venue::new();
    venue.credit(ALICE, USDC, 1_000);
    // A signed withdrawal may not take an id of the requests' range.
    let reserved = Command::RequestWithdrawal(VaultWithdrawal {
        request: TransferRequest {
            transfer_id: chain_request_withdrawal_id(0),
            account: ALICE,
            asset: USDC,
            amount: Amount::from_units(1),
        },
        expiry_ms: 10_000_000,
        signature: [0x1b; 65],
    });
    assert_eq!(venue.run(reserved), Err(Rejection::ReservedWithdrawalId));
    venue.run(request(0, ALICE, Some(USDC), 400)).unwrap();
    let debit = venue.engine.journal_sequence();
    let sent = Command::MarkWithdrawalsSent {
        tx_hash: [0xaa; 32],
        withdrawals: vec![key(ALICE, 0)],
    };
    assert_eq!(venue.run(sent.clone()), Err(Rejection::WithdrawalNotCovered));
    venue.run(Command::RecordLiabilityRoot(root_record(0, debit))).unwrap();
    venue
        .run(Command::SettleLiabilityRoot {
            epoch: 0,
            standing: RootStanding::Final,
        })
        .unwrap();
    venue.run(sent).unwrap();
    assert_eq!(
        venue.run(Command::FailWithdrawal(key(ALICE, 0))),
        Err(Rejection::TransferNotPending),
        "a request is served, never failed"
    );
    // The transaction did not serve it (it reverted): pending again, then served.
    let unpaid = venue
        .run(Command::MarkWithdrawalsUnpaid {
            tx_hash: [0xaa; 32],
            withdrawals: vec![key(ALICE, 0)],
        })
        .unwrap();
    assert!(matches!(
        &unpaid[..],
        [Event::TransferApplied(transfer)] if transfer.status == TransferStatus::Pending && transfer.tx_hash.is_none()
    ));
    assert_eq!(
        venue.run(Command::MarkWithdrawalsUnpaid {
            tx_hash: [0xaa; 32],
            withdrawals: vec![key(ALICE, 0)],
        }),
        Err(Rejection::TransferNotPending),
        "only a withdrawal marked sent"
    );
    venue
        .run(Command::MarkWithdrawalsSent {
            tx_hash: [0xab; 32],
            withdrawals: vec![key(ALICE, 0)],
        })
        .unwrap();
    venue
        .run(Command::ConfirmWithdrawals {
            tx_hash: [0xab; 32],
            block_number: 900,
            withdrawals: vec![key(ALICE, 0)],
        })
        .unwrap();
    assert_eq!(venue.engine.custody().pending_withdrawals().count(), 0);
    assert_eq!(venue.available(ALICE, USDC), 600);
}

/// Found by the random exit test: an account with a balance and no order ever (its slot in the
/// open-order index not yet made) asked for more than it held, and the engine indexed past the
/// index's end.
#[test]
fn a_request_of_an_account_that_never_placed_an_order_is_recorded() {
    let mut venue = Venue::new();
    venue.credit(ALICE, USDC, 10_000_000);
    venue.credit(BOB, USDC, 50);
    venue.buy(1, 100, 10_000);
    venue.run(request(0, BOB, Some(USDC), 80)).unwrap();
    let pending = venue.engine.custody().pending_withdrawal(&key(BOB, 0)).unwrap();
    assert_eq!(pending.amount.units(), 50);
}

#[test]
fn a_request_on_chain_gathers_what_the_owner_s_subaccounts_hold() {
    use crate::subaccounts::{subaccount_address, SubaccountTransferRequest};
    let mut venue = Venue::new();
    venue.credit(ALICE, USDC, 1_000);
    for (number, units) in [(2, 300), (5, 500)] {
        venue
            .run(Command::TransferBetweenSubaccounts(SubaccountTransferRequest {
                owner: ALICE,
                from_number: 0,
                to_number: number,
                asset: USDC,
                amount: Amount::from_units(units),
                client_transfer_id: format!("to-{number}"),
            }))
            .unwrap();
    }
    // Alice holds 200 herself, 300 in number 2 and 500 in number 5; she asks the vault for 600.
    let events = venue.run(request(0, ALICE, Some(USDC), 600)).unwrap();
    let gathered = events
        .iter()
        .filter(|event| matches!(event, Event::SubaccountTransferred(_)))
        .count();
    assert_eq!(gathered, 2, "number 2 whole, then 100 of number 5");
    assert_eq!(venue.available(ALICE, USDC), 0);
    assert_eq!(venue.available(subaccount_address(&ALICE, 2), USDC), 0);
    assert_eq!(venue.available(subaccount_address(&ALICE, 5), USDC), 400);
    let pending = venue
        .engine
        .custody()
        .pending_withdrawal(&key(ALICE, 0))
        .expect("pending");
    assert_eq!(pending.amount.units(), 600);
}
