//! Scenario tests of the vault's roots as the engine records them: withdrawals payable only
//! through a final root of the venue's that covers their debit, a foreign root stopping every
//! payment until it is vetoed or superseded, settling in order, the freeze refusing what a
//! frozen vault cannot back, and the leaf of a deposit the ledger could not credit.

use crate::custody::CustodyMode;
use crate::custody_tests::root_record;
use crate::engine::{Command, Engine, EngineConfig, EngineLimits};
use crate::events::{Event, Rejection};
use crate::liabilities::{LiabilityToken, RootOrigin, RootStanding, VaultFreeze, WithdrawalWait};
use crate::money::{Address, Amount, AssetIndex, OrderId, Price, Quantity};
use crate::order::Direction;
use crate::testing::{eth_and_usdc, eth_usdc_definition, execute_checked, plain_order, ETH, USDC};
use crate::transfer::{ChainDeposit, TransferRequest, VaultWithdrawal, WithdrawalKey};

const ALICE: Address = Address::from_bytes([0xa1; 20]);

fn vault_engine() -> Engine {
    Engine::new(EngineConfig {
        assets: eth_and_usdc(),
        pairs: vec![eth_usdc_definition()],
        fee_account: Address::from_bytes([0xfe; 20]),
        custody: CustodyMode::Vault,
        limits: EngineLimits::default(),
    })
    .unwrap()
}

struct Venue {
    engine: Engine,
    time_ms: u64,
}

impl Venue {
    fn new() -> Venue {
        Venue {
            engine: vault_engine(),
            time_ms: 1_000,
        }
    }

    fn run(&mut self, command: Command) -> Result<Vec<Event>, Rejection> {
        self.time_ms += 1;
        execute_checked(&mut self.engine, command, self.time_ms)
    }

    fn credit(&mut self, deposit_id: u64, asset: Option<AssetIndex>, token: Address, units: Option<u128>) {
        self.run(Command::CreditChainDeposit(ChainDeposit {
            deposit_id,
            account: ALICE,
            token,
            asset,
            amount: units.map(Amount::from_units),
            tx_hash: [deposit_id as u8 + 1; 32],
            log_index: 0,
            block_number: 100 + deposit_id,
            block_hash: [0xbb; 32],
        }))
        .unwrap();
    }

    fn withdraw(&mut self, id: u8, units: u128) -> u64 {
        self.run(Command::RequestWithdrawal(VaultWithdrawal {
            request: TransferRequest {
                transfer_id: [id; 32],
                account: ALICE,
                asset: USDC,
                amount: Amount::from_units(units),
            },
            expiry_ms: 10_000_000,
            signature: [0x1b; 65],
        }))
        .unwrap();
        self.engine.journal_sequence()
    }

    fn root(&mut self, epoch: u64, journal_sequence: u64, origin: RootOrigin) {
        let mut record = root_record(epoch, journal_sequence);
        record.origin = origin;
        if origin == RootOrigin::Foreign {
            record.totals.clear();
        }
        self.run(Command::RecordLiabilityRoot(record)).unwrap();
    }

    fn settle(&mut self, epoch: u64, standing: RootStanding) -> Result<Vec<Event>, Rejection> {
        self.run(Command::SettleLiabilityRoot { epoch, standing })
    }

    fn payable_through(&self) -> Option<u64> {
        self.engine.custody().liabilities().payable_through()
    }

    fn wait_of(&self, id: u8) -> WithdrawalWait {
        let pending = self
            .engine
            .custody()
            .pending_withdrawal(&WithdrawalKey {
                account: ALICE,
                withdrawal_id: [id; 32],
            })
            .unwrap();
        self.engine
            .custody()
            .liabilities()
            .withdrawal_wait(pending.debited_at_sequence)
    }
}

#[test]
fn a_withdrawal_is_payable_only_through_a_final_root_of_the_venues_that_covers_its_debit() {
    let mut venue = Venue::new();
    venue.credit(0, Some(USDC), Address::from_bytes([0x70; 20]), Some(1_000));
    let first = venue.withdraw(1, 100);
    assert_eq!(first, 2, "the engine counts its journal positions");
    assert_eq!(venue.wait_of(1), WithdrawalWait::Root);
    assert_eq!(venue.payable_through(), None, "no root at all");

    venue.root(0, first, RootOrigin::Venue);
    let second = venue.withdraw(2, 100);
    assert_eq!(
        venue.wait_of(1),
        WithdrawalWait::Challenge {
            payable_after_ms: 65_000
        }
    );
    assert_eq!(venue.wait_of(2), WithdrawalWait::Root, "debited after the root");
    assert_eq!(venue.payable_through(), None, "the root can still be vetoed");

    venue.settle(0, RootStanding::Final).unwrap();
    assert_eq!(venue.payable_through(), Some(first));
    assert_eq!(venue.wait_of(1), WithdrawalWait::Payment);
    assert_eq!(venue.wait_of(2), WithdrawalWait::Root);

    // A vetoed root covers nothing; the next one does once final.
    venue.root(1, second, RootOrigin::Venue);
    venue.settle(1, RootStanding::Vetoed).unwrap();
    assert_eq!(venue.wait_of(2), WithdrawalWait::Root);
    assert_eq!(venue.payable_through(), Some(first));
    venue.root(2, second, RootOrigin::Venue);
    venue.settle(2, RootStanding::Final).unwrap();
    assert_eq!(venue.payable_through(), Some(second));
    // A final root of the venue's lets go of the roots before it.
    let kept: Vec<u64> = venue
        .engine
        .custody()
        .liabilities()
        .roots()
        .map(|root| root.record.epoch)
        .collect();
    assert_eq!(kept, vec![2]);
}

#[test]
fn a_foreign_root_stops_every_payment_until_it_is_vetoed_or_a_later_root_of_the_venues_is_final() {
    let mut venue = Venue::new();
    venue.credit(0, Some(USDC), Address::from_bytes([0x70; 20]), Some(1_000));
    let first = venue.withdraw(1, 100);
    venue.root(0, first, RootOrigin::Venue);
    venue.settle(0, RootStanding::Final).unwrap();
    assert_eq!(venue.payable_through(), Some(first));

    // A stolen key plants a root: nothing is paid, though root 0 still covers the withdrawal.
    venue.root(1, u64::MAX, RootOrigin::Foreign);
    assert_eq!(venue.payable_through(), None);
    assert_eq!(
        venue
            .engine
            .custody()
            .liabilities()
            .unresolved_foreign_root()
            .map(|root| root.epoch),
        Some(1)
    );
    // It is never the root proofs are served from.
    assert_eq!(
        venue
            .engine
            .custody()
            .liabilities()
            .newest_venue_root()
            .map(|root| root.epoch),
        Some(0)
    );
    venue.settle(1, RootStanding::Vetoed).unwrap();
    assert_eq!(venue.payable_through(), Some(first), "vetoed: payments go on");

    // Another foreign root, never vetoed (past its challenge period): resolved only once a later
    // root of the venue's is final.
    venue.root(2, 3, RootOrigin::Foreign);
    venue.settle(2, RootStanding::Final).unwrap();
    assert_eq!(venue.payable_through(), None);
    venue.root(3, first, RootOrigin::Venue);
    assert_eq!(venue.payable_through(), None, "the venue's root is not final yet");
    venue.settle(3, RootStanding::Final).unwrap();
    assert_eq!(venue.payable_through(), Some(first));
    assert!(venue.engine.custody().liabilities().unresolved_foreign_root().is_none());
}

#[test]
fn roots_settle_once_and_final_only_in_epoch_order() {
    let mut venue = Venue::new();
    venue.root(0, 0, RootOrigin::Venue);
    venue.root(1, 0, RootOrigin::Venue);
    assert_eq!(
        venue.settle(1, RootStanding::Final),
        Err(Rejection::RootOutOfOrder),
        "root 0 is not settled yet"
    );
    let events = venue.settle(1, RootStanding::Vetoed).unwrap();
    assert_eq!(
        events,
        vec![Event::LiabilityRootSettled {
            epoch: 1,
            standing: RootStanding::Vetoed
        }]
    );
    assert_eq!(
        venue.settle(1, RootStanding::Vetoed),
        Err(Rejection::RootOutOfOrder),
        "once"
    );
    assert_eq!(
        venue.settle(0, RootStanding::Challengeable),
        Err(Rejection::RootOutOfOrder)
    );
    assert_eq!(
        venue.settle(7, RootStanding::Final),
        Err(Rejection::RootOutOfOrder),
        "unknown"
    );
    venue.settle(0, RootStanding::Final).unwrap();
    assert_eq!(
        venue.settle(0, RootStanding::Vetoed),
        Err(Rejection::RootOutOfOrder),
        "final stays"
    );
}

#[test]
fn a_frozen_vault_takes_no_order_deposit_or_withdrawal_and_pays_nothing() {
    let mut venue = Venue::new();
    venue.credit(0, Some(USDC), Address::from_bytes([0x70; 20]), Some(10_000_000));
    let first = venue.withdraw(1, 100);
    venue.root(0, first, RootOrigin::Venue);
    venue.settle(0, RootStanding::Final).unwrap();
    let order = plain_order(
        OrderId::from_bytes([7; 32]),
        ALICE,
        Direction::Buy,
        Price::from_ticks(100),
        Quantity::from_lots(10_000),
    );
    venue.run(Command::PlaceOrder(order.clone())).unwrap();
    let events = venue
        .run(Command::RecordVaultFreeze(VaultFreeze { exit_epoch: Some(0) }))
        .unwrap();
    assert_eq!(events, vec![Event::VaultFrozen(VaultFreeze { exit_epoch: Some(0) })]);
    assert_eq!(venue.payable_through(), None);
    let mut another = order.clone();
    another.order_id = OrderId::from_bytes([8; 32]);
    assert_eq!(venue.run(Command::PlaceOrder(another)), Err(Rejection::VaultFrozen));
    assert_eq!(
        venue.run(Command::RequestWithdrawal(VaultWithdrawal {
            request: TransferRequest {
                transfer_id: [2; 32],
                account: ALICE,
                asset: USDC,
                amount: Amount::from_units(1),
            },
            expiry_ms: 10_000_000,
            signature: [0x1b; 65],
        })),
        Err(Rejection::VaultFrozen)
    );
    assert_eq!(
        venue.run(Command::RecordVaultFreeze(VaultFreeze { exit_epoch: Some(0) })),
        Err(Rejection::RootOutOfOrder),
        "frozen once"
    );
    // Cancels are still taken: they change nothing the vault backs.
    venue
        .run(Command::CancelOrder {
            account: ALICE,
            order_id: order.order_id,
            pair: None,
        })
        .unwrap();
}

#[test]
fn a_deposit_the_ledger_could_not_credit_still_has_a_leaf() {
    let mut venue = Venue::new();
    let unlisted = Address::from_bytes([0x55; 20]);
    venue.credit(0, None, unlisted, Some(5));
    venue.credit(1, Some(ETH), Address::from_bytes([0; 20]), None);
    assert_eq!(venue.engine.custody().next_deposit_id(), 2, "both took their numbers");
    let entries: Vec<(Address, LiabilityToken, u128)> = venue
        .engine
        .liability_entries()
        .into_iter()
        .map(|entry| (entry.account, entry.token, entry.balance.units()))
        .collect();
    assert_eq!(
        entries,
        vec![
            (ALICE, LiabilityToken::Asset(ETH), 0),
            (ALICE, LiabilityToken::Unlisted(unlisted), 0)
        ]
    );
    // Once the pair has a credited entry, it is that entry alone.
    venue.credit(2, Some(ETH), Address::from_bytes([0; 20]), Some(9));
    let entries: Vec<(LiabilityToken, u128)> = venue
        .engine
        .liability_entries()
        .into_iter()
        .map(|entry| (entry.token, entry.balance.units()))
        .collect();
    assert_eq!(
        entries,
        vec![(LiabilityToken::Asset(ETH), 9), (LiabilityToken::Unlisted(unlisted), 0)]
    );
}
