//! Scenario tests of custody: vault deposits credited exactly once, withdrawals debited, paid,
//! failed and credited back, and the two custody modes kept apart.

use crate::custody::CustodyMode;
use crate::engine::{Command, Engine, EngineConfig, EngineLimits};
use crate::events::{Event, Rejection};
use crate::liabilities::LiabilityToken;
use crate::money::{Address, Amount, AssetIndex};
use crate::testing::{eth_and_usdc, execute_checked, ETH, USDC};
use crate::transfer::{
    ChainDeposit, ChainDepositSubmission, Transfer, TransferKind, TransferRequest, TransferStatus, VaultWithdrawal,
    WithdrawalKey,
};

const ALICE: Address = Address::from_bytes([0xa1; 20]);
const BOB: Address = Address::from_bytes([0xb0; 20]);

struct Chain {
    engine: Engine,
    time_ms: u64,
}

impl Chain {
    fn new(mode: CustodyMode, max_pending_transfers: usize) -> Chain {
        let engine = Engine::new(EngineConfig {
            assets: eth_and_usdc(),
            pairs: vec![],
            fee_account: Address::from_bytes([0xfe; 20]),
            custody: mode,
            limits: EngineLimits {
                max_pending_transfers,
                ..EngineLimits::default()
            },
        })
        .unwrap();
        Chain { engine, time_ms: 1_000 }
    }

    fn vault() -> Chain {
        Chain::new(CustodyMode::Vault, 100)
    }

    /// Runs a command; a rejection must change nothing and emit nothing, and every invariant
    /// holds after each command.
    fn run(&mut self, command: Command) -> Result<Vec<Event>, Rejection> {
        self.time_ms += 1;
        execute_checked(&mut self.engine, command, self.time_ms)
    }

    fn available(&self, account: Address, asset: AssetIndex) -> u128 {
        self.engine.balance(&account, asset).available.units()
    }
}

fn chain_deposit(deposit_id: u64, account: Address, asset: Option<AssetIndex>, units: u128) -> ChainDeposit {
    ChainDeposit {
        deposit_id,
        account,
        token: Address::from_bytes([0x70; 20]),
        asset,
        amount: Some(Amount::from_units(units)),
        tx_hash: [deposit_id as u8 + 1; 32],
        log_index: 0,
        block_number: 100 + deposit_id,
        block_hash: [0xbb; 32],
    }
}

fn withdrawal(account: Address, id: u8, asset: AssetIndex, units: u128) -> VaultWithdrawal {
    VaultWithdrawal {
        request: TransferRequest {
            transfer_id: [id; 32],
            account,
            asset,
            amount: Amount::from_units(units),
        },
        expiry_ms: 10_000_000,
        signature: [0x1b; 65],
    }
}

fn key(account: Address, id: u8) -> WithdrawalKey {
    WithdrawalKey {
        account,
        withdrawal_id: [id; 32],
    }
}

fn transfers(events: &[Event]) -> Vec<Transfer> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::TransferApplied(transfer) => Some(transfer.clone()),
            _ => None,
        })
        .collect()
}

#[test]
fn a_chain_deposit_is_credited_once_and_only_in_the_vaults_order() {
    let mut chain = Chain::vault();
    let events = chain
        .run(Command::CreditChainDeposit(chain_deposit(0, ALICE, Some(USDC), 500)))
        .unwrap();
    let credited = transfers(&events);
    assert_eq!(credited.len(), 1);
    assert_eq!(credited[0].status, TransferStatus::Confirmed);
    assert_eq!(credited[0].transfer_id, [1; 32], "the id is the transaction hash");
    assert_eq!(credited[0].block_number, Some(100));
    assert_eq!(chain.available(ALICE, USDC), 500);
    // The same event again, a later one that skips a number, and an earlier block: refused.
    for repeated in [
        chain_deposit(0, ALICE, Some(USDC), 500),
        chain_deposit(2, ALICE, Some(USDC), 500),
    ] {
        assert_eq!(
            chain.run(Command::CreditChainDeposit(repeated)),
            Err(Rejection::DepositOutOfOrder)
        );
    }
    let mut behind = chain_deposit(1, BOB, Some(ETH), 7);
    behind.block_number = 99;
    assert_eq!(
        chain.run(Command::CreditChainDeposit(behind)),
        Err(Rejection::DepositOutOfOrder)
    );
    assert_eq!(chain.available(ALICE, USDC), 500, "credited exactly once");
    assert_eq!(chain.engine.custody().next_deposit_id(), 1);
    assert_eq!(chain.engine.custody().scanned_through(), Some((100, [0xbb; 32])));
}

#[test]
fn a_deposit_of_an_unlisted_token_or_too_large_takes_its_number_and_credits_nothing() {
    let mut chain = Chain::vault();
    let events = chain
        .run(Command::CreditChainDeposit(chain_deposit(0, ALICE, None, 500)))
        .unwrap();
    assert!(events.is_empty());
    let mut huge = chain_deposit(1, ALICE, Some(ETH), 0);
    huge.amount = None;
    assert!(chain.run(Command::CreditChainDeposit(huge)).unwrap().is_empty());
    chain
        .run(Command::CreditChainDeposit(chain_deposit(
            2,
            ALICE,
            Some(ETH),
            u128::MAX,
        )))
        .unwrap();
    // The next one would overflow the asset's total: it takes its number, nothing is credited.
    let events = chain
        .run(Command::CreditChainDeposit(chain_deposit(3, BOB, Some(ETH), 1)))
        .unwrap();
    assert!(events.is_empty());
    assert_eq!(chain.available(BOB, ETH), 0);
    assert_eq!(chain.engine.custody().next_deposit_id(), 4);
}

#[test]
fn a_submitted_deposit_is_pending_then_confirmed_under_its_transaction_hash_with_what_arrived() {
    let mut chain = Chain::vault();
    let tx_hash = [1; 32];
    let events = chain
        .run(Command::SubmitChainDeposit(ChainDepositSubmission {
            tx_hash,
            account: ALICE,
            asset: USDC,
            amount: Amount::from_units(1_000),
        }))
        .unwrap();
    let pending = transfers(&events);
    assert_eq!(pending[0].status, TransferStatus::Pending);
    assert_eq!(pending[0].tx_hash, Some(tx_hash));
    assert_eq!(
        chain.available(ALICE, USDC),
        0,
        "nothing is credited before the confirmations"
    );
    let submitted_at = pending[0].timestamp_ms;
    // A fee-on-transfer token: the vault received 990.
    let events = chain
        .run(Command::CreditChainDeposit(chain_deposit(0, ALICE, Some(USDC), 990)))
        .unwrap();
    let confirmed = transfers(&events);
    assert_eq!(confirmed[0].transfer_id, tx_hash);
    assert_eq!(confirmed[0].status, TransferStatus::Confirmed);
    assert_eq!(confirmed[0].amount.units(), 990);
    assert_eq!(
        confirmed[0].timestamp_ms, submitted_at,
        "the same transfer, now confirmed"
    );
    assert!(chain.engine.custody().pending_deposits().is_empty());
    assert_eq!(chain.available(ALICE, USDC), 990);
}

#[test]
fn a_failed_deposit_credits_nothing_and_a_second_deposit_in_one_transaction_gets_its_own_id() {
    let mut chain = Chain::vault();
    chain
        .run(Command::SubmitChainDeposit(ChainDepositSubmission {
            tx_hash: [9; 32],
            account: ALICE,
            asset: ETH,
            amount: Amount::from_units(5),
        }))
        .unwrap();
    let events = chain.run(Command::FailChainDeposit { tx_hash: [9; 32] }).unwrap();
    assert_eq!(transfers(&events)[0].status, TransferStatus::Failed);
    assert_eq!(
        chain.run(Command::FailChainDeposit { tx_hash: [9; 32] }),
        Err(Rejection::TransferNotPending)
    );
    assert_eq!(chain.available(ALICE, ETH), 0);
    let first = chain_deposit(0, ALICE, Some(ETH), 5);
    let mut second = chain_deposit(1, ALICE, Some(ETH), 6);
    second.tx_hash = first.tx_hash;
    second.log_index = 1;
    second.block_number = first.block_number;
    let first_id = transfers(&chain.run(Command::CreditChainDeposit(first)).unwrap())[0].transfer_id;
    let second_id = transfers(&chain.run(Command::CreditChainDeposit(second)).unwrap())[0].transfer_id;
    assert_ne!(first_id, second_id);
    assert_eq!(chain.available(ALICE, ETH), 11);
}

#[test]
fn a_withdrawal_is_debited_at_once_then_sent_then_confirmed_and_leaves_the_pending_set() {
    let mut chain = Chain::vault();
    chain
        .run(Command::CreditChainDeposit(chain_deposit(0, ALICE, Some(USDC), 1_000)))
        .unwrap();
    let events = chain
        .run(Command::RequestWithdrawal(withdrawal(ALICE, 7, USDC, 400)))
        .unwrap();
    assert_eq!(transfers(&events)[0].status, TransferStatus::Pending);
    assert_eq!(transfers(&events)[0].kind, TransferKind::Withdrawal);
    assert_eq!(chain.available(ALICE, USDC), 600);
    assert_eq!(chain.engine.custody().pending_withdrawal_units(USDC).units(), 400);
    assert_eq!(chain.engine.net_deposits(USDC).units(), 600);
    // The same id again while pending, and more than the balance: refused.
    assert_eq!(
        chain.run(Command::RequestWithdrawal(withdrawal(ALICE, 7, USDC, 1))),
        Err(Rejection::DuplicateTransfer)
    );
    assert_eq!(
        chain.run(Command::RequestWithdrawal(withdrawal(ALICE, 8, USDC, 601))),
        Err(Rejection::InsufficientBalance)
    );
    // Not sent before a final root of the venue's covers the debit.
    let debit = chain.engine.journal_sequence();
    let mark_sent = Command::MarkWithdrawalsSent {
        tx_hash: [0xaa; 32],
        withdrawals: vec![key(ALICE, 7)],
    };
    assert_eq!(chain.run(mark_sent.clone()), Err(Rejection::WithdrawalNotCovered));
    chain.run(Command::RecordLiabilityRoot(root_record(0, debit))).unwrap();
    assert_eq!(
        chain.run(mark_sent.clone()),
        Err(Rejection::WithdrawalNotCovered),
        "the root can still be vetoed"
    );
    chain
        .run(Command::SettleLiabilityRoot {
            epoch: 0,
            standing: crate::liabilities::RootStanding::Final,
        })
        .unwrap();
    let sent = chain
        .run(Command::MarkWithdrawalsSent {
            tx_hash: [0xaa; 32],
            withdrawals: vec![key(ALICE, 7)],
        })
        .unwrap();
    assert_eq!(transfers(&sent)[0].status, TransferStatus::Sent);
    assert_eq!(transfers(&sent)[0].tx_hash, Some([0xaa; 32]));
    // A replacement at the same nonce records its own hash.
    chain
        .run(Command::MarkWithdrawalsSent {
            tx_hash: [0xab; 32],
            withdrawals: vec![key(ALICE, 7)],
        })
        .unwrap();
    let confirmed = chain
        .run(Command::ConfirmWithdrawals {
            tx_hash: [0xab; 32],
            block_number: 500,
            withdrawals: vec![key(ALICE, 7)],
        })
        .unwrap();
    assert_eq!(transfers(&confirmed)[0].status, TransferStatus::Confirmed);
    assert_eq!(transfers(&confirmed)[0].block_number, Some(500));
    assert_eq!(chain.engine.custody().pending_withdrawal_units(USDC).units(), 0);
    assert_eq!(chain.engine.custody().pending_withdrawals().count(), 0);
    // Paid once: it can neither be confirmed again nor failed (credited back) afterwards.
    assert_eq!(
        chain.run(Command::FailWithdrawal(key(ALICE, 7))),
        Err(Rejection::TransferNotPending)
    );
    assert_eq!(
        chain.run(Command::ConfirmWithdrawals {
            tx_hash: [0xab; 32],
            block_number: 500,
            withdrawals: vec![key(ALICE, 7)],
        }),
        Err(Rejection::TransferNotPending)
    );
    assert_eq!(chain.available(ALICE, USDC), 600);
    // Its id is used for the chain's life: debiting it again long after it was paid is refused
    // (the vault would take it as paid by the first payment), by the state restored from a
    // snapshot too; the same id is another account's own.
    let restored = crate::Engine::from_state(chain.engine.config().clone(), &chain.engine.state()).unwrap();
    assert_eq!(restored.state_hash(), chain.engine.state_hash());
    chain.engine = restored;
    assert_eq!(
        chain.run(Command::RequestWithdrawal(withdrawal(ALICE, 7, USDC, 1))),
        Err(Rejection::Nonce(crate::NonceRejection::Reused))
    );
    chain
        .run(Command::CreditChainDeposit(chain_deposit(1, BOB, Some(USDC), 10)))
        .unwrap();
    chain
        .run(Command::RequestWithdrawal(withdrawal(BOB, 7, USDC, 1)))
        .unwrap();
}

#[test]
fn a_withdrawal_that_can_never_be_paid_is_credited_back_once() {
    let mut chain = Chain::vault();
    chain
        .run(Command::CreditChainDeposit(chain_deposit(0, BOB, Some(ETH), 50)))
        .unwrap();
    chain
        .run(Command::RequestWithdrawal(withdrawal(BOB, 1, ETH, 50)))
        .unwrap();
    assert_eq!(chain.available(BOB, ETH), 0);
    let events = chain.run(Command::FailWithdrawal(key(BOB, 1))).unwrap();
    assert_eq!(transfers(&events)[0].status, TransferStatus::Failed);
    assert_eq!(chain.available(BOB, ETH), 50);
    assert_eq!(chain.engine.net_deposits(ETH).units(), 50);
    assert_eq!(
        chain.run(Command::FailWithdrawal(key(BOB, 1))),
        Err(Rejection::TransferNotPending)
    );
    assert_eq!(chain.available(BOB, ETH), 50, "credited back exactly once");
}

#[test]
fn withdrawals_come_out_oldest_first_and_a_batch_is_refused_whole_if_one_is_not_pending() {
    let mut chain = Chain::vault();
    chain
        .run(Command::CreditChainDeposit(chain_deposit(0, ALICE, Some(USDC), 100)))
        .unwrap();
    for id in [5, 3, 9] {
        chain
            .run(Command::RequestWithdrawal(withdrawal(ALICE, id, USDC, 10)))
            .unwrap();
    }
    let order: Vec<u8> = chain
        .engine
        .custody()
        .pending_withdrawals()
        .map(|(key, _)| key.withdrawal_id[0])
        .collect();
    assert_eq!(order, vec![5, 3, 9]);
    assert_eq!(
        chain.run(Command::MarkWithdrawalsSent {
            tx_hash: [1; 32],
            withdrawals: vec![key(ALICE, 5), key(ALICE, 4)],
        }),
        Err(Rejection::TransferNotPending)
    );
    assert_eq!(
        chain.run(Command::MarkWithdrawalsSent {
            tx_hash: [1; 32],
            withdrawals: vec![],
        }),
        Err(Rejection::TransferNotPending)
    );
}

#[test]
fn the_pending_limit_is_enforced_and_the_two_modes_keep_their_own_commands() {
    let mut chain = Chain::new(CustodyMode::Vault, 2);
    chain
        .run(Command::CreditChainDeposit(chain_deposit(0, ALICE, Some(USDC), 100)))
        .unwrap();
    chain
        .run(Command::RequestWithdrawal(withdrawal(ALICE, 1, USDC, 1)))
        .unwrap();
    chain
        .run(Command::RequestWithdrawal(withdrawal(ALICE, 2, USDC, 1)))
        .unwrap();
    assert_eq!(
        chain.run(Command::RequestWithdrawal(withdrawal(ALICE, 3, USDC, 1))),
        Err(Rejection::TooManyPendingTransfers)
    );
    // A vault chain never mints from nothing.
    let mint = TransferRequest {
        transfer_id: [0; 32],
        account: ALICE,
        asset: USDC,
        amount: Amount::from_units(1),
    };
    assert_eq!(
        chain.run(Command::Deposit(mint.clone())),
        Err(Rejection::WrongCustodyMode)
    );
    assert_eq!(
        chain.run(Command::Withdraw(mint.clone())),
        Err(Rejection::WrongCustodyMode)
    );
    let mut ledger = Chain::new(CustodyMode::Ledger, 2);
    assert_eq!(
        ledger.run(Command::CreditChainDeposit(chain_deposit(0, ALICE, Some(USDC), 100))),
        Err(Rejection::WrongCustodyMode)
    );
    assert_eq!(
        ledger.run(Command::RequestWithdrawal(withdrawal(ALICE, 1, USDC, 1))),
        Err(Rejection::WrongCustodyMode)
    );
    let events = ledger.run(Command::Deposit(mint)).unwrap();
    assert_eq!(transfers(&events)[0].status, TransferStatus::Confirmed);
}

#[test]
fn a_scan_record_only_moves_forward() {
    let mut chain = Chain::vault();
    chain
        .run(Command::RecordDepositScan {
            block_number: 10,
            block_hash: [1; 32],
        })
        .unwrap();
    assert_eq!(
        chain.run(Command::RecordDepositScan {
            block_number: 10,
            block_hash: [2; 32],
        }),
        Err(Rejection::DepositOutOfOrder)
    );
    assert_eq!(chain.engine.custody().scanned_through(), Some((10, [1; 32])));
}

pub(crate) fn root_record(epoch: u64, journal_sequence: u64) -> crate::liabilities::LiabilityRootRecord {
    crate::liabilities::LiabilityRootRecord {
        epoch,
        root: [epoch as u8 + 1; 32],
        journal_sequence,
        deposit_count: 2,
        tx_hash: [9; 32],
        block_number: 40 + epoch,
        committed_at_ms: 5_000,
        final_after_ms: 65_000,
        origin: crate::liabilities::RootOrigin::Venue,
        totals: vec![Amount::ZERO, Amount::from_units(1_000)],
    }
}

#[test]
fn the_tree_entries_count_credits_and_debits_and_a_failed_withdrawal_is_taken_back() {
    let mut chain = Chain::vault();
    chain
        .run(Command::CreditChainDeposit(chain_deposit(0, ALICE, Some(USDC), 1_000)))
        .unwrap();
    chain
        .run(Command::CreditChainDeposit(chain_deposit(1, BOB, Some(ETH), 70)))
        .unwrap();
    chain
        .run(Command::RequestWithdrawal(withdrawal(ALICE, 7, USDC, 400)))
        .unwrap();
    chain
        .run(Command::RequestWithdrawal(withdrawal(ALICE, 8, USDC, 100)))
        .unwrap();
    chain.run(Command::FailWithdrawal(key(ALICE, 8))).unwrap();
    let entries: Vec<(Address, LiabilityToken, u128, u128, u128)> = chain
        .engine
        .liability_entries()
        .into_iter()
        .map(|entry| {
            (
                entry.account,
                entry.token,
                entry.balance.units(),
                entry.flows.credited_deposits.units(),
                entry.flows.debited_withdrawals.units(),
            )
        })
        .collect();
    // Alice: 1,000 credited, 400 debited and pending, the failed 100 back in her balance and out
    // of her debits. Bob: 70 ETH. Nobody else has an entry; zero assets are left out.
    assert_eq!(
        entries,
        vec![
            (ALICE, LiabilityToken::Asset(USDC), 600, 1_000, 400),
            (BOB, LiabilityToken::Asset(ETH), 70, 70, 0)
        ]
    );
}

#[test]
fn liability_roots_are_recorded_in_epoch_order_on_a_vault_chain_only() {
    let mut chain = Chain::vault();
    assert_eq!(
        chain.run(Command::RecordLiabilityRoot(root_record(1, 10))),
        Err(Rejection::RootOutOfOrder),
        "epoch 0 comes first"
    );
    let events = chain.run(Command::RecordLiabilityRoot(root_record(0, 10))).unwrap();
    assert_eq!(events, vec![Event::LiabilityRootRecorded(root_record(0, 10))]);
    assert_eq!(
        chain.run(Command::RecordLiabilityRoot(root_record(0, 10))),
        Err(Rejection::RootOutOfOrder),
        "recorded once"
    );
    let mut short = root_record(1, 10);
    short.totals.pop();
    assert_eq!(
        chain.run(Command::RecordLiabilityRoot(short)),
        Err(Rejection::RootOutOfOrder),
        "a total for every asset"
    );
    chain.run(Command::RecordLiabilityRoot(root_record(1, 10))).unwrap();
    assert_eq!(chain.engine.custody().liabilities().roots_recorded(), 2);
    let mut ledger = Chain::new(CustodyMode::Ledger, 100);
    assert_eq!(
        ledger.run(Command::RecordLiabilityRoot(root_record(0, 1))),
        Err(Rejection::WrongCustodyMode)
    );
}
