//! Scenario tests of subaccounts (contract version 5): transfers between an owner's
//! subaccounts (moved once, remembered by id, refused whole), trading in a subaccount (locks
//! and fills land there, never on the owner), who may act for one (its owner, the owner's
//! agents; nobody moves funds for the owner but the owner), and the liability tree's leaf of
//! the owner counting them.

use crate::agents::AgentGrant;
use crate::engine::{Command, Engine, EngineLimits};
use crate::events::{Event, Rejection};
use crate::money::{Address, Amount, AssetIndex};
use crate::order::Direction;
use crate::subaccounts::{subaccount_address, SubaccountTransferRequest, TRANSFER_ID_MEMORY_MS};
use crate::testing::{scenario_config, Venue, ALICE, BOB, ETH, ETH_UNIT, USDC, USDC_UNIT};

const BOT: Address = Address::from_bytes([0xb7; 20]);

fn venue() -> Venue {
    let mut venue = Venue::new(scenario_config(EngineLimits::default()), 1_000);
    for account in [ALICE, BOB] {
        venue.deposit(account, ETH, 10 * ETH_UNIT);
        venue.deposit(account, USDC, 100_000 * USDC_UNIT);
    }
    venue
}

fn transfer(from_number: u32, to_number: u32, asset: AssetIndex, units: u128, id: &str) -> Command {
    Command::TransferBetweenSubaccounts(SubaccountTransferRequest {
        owner: ALICE,
        from_number,
        to_number,
        asset,
        amount: Amount::from_units(units),
        client_transfer_id: id.into(),
    })
}

fn available(engine: &Engine, account: Address, asset: AssetIndex) -> u128 {
    engine.balance(&account, asset).available.units()
}

#[test]
fn a_transfer_moves_available_funds_once_and_is_answered_again_by_its_id() {
    let mut venue = venue();
    let first = subaccount_address(&ALICE, 1);
    let events = venue.run(transfer(0, 1, USDC, 40_000 * USDC_UNIT, "fund-1")).unwrap();
    assert_eq!(available(&venue.engine, ALICE, USDC), 60_000 * USDC_UNIT);
    assert_eq!(available(&venue.engine, first, USDC), 40_000 * USDC_UNIT);
    let recorded: Vec<_> = events
        .iter()
        .filter_map(|event| match event {
            Event::SubaccountTransferred(transfer) => Some(transfer.clone()),
            _ => None,
        })
        .collect();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].to_address(), first);
    let balances = events
        .iter()
        .filter(|event| matches!(event, Event::BalanceUpdated { .. }))
        .count();
    assert_eq!(balances, 2, "both sides' balances are published");

    let hash = venue.engine.state_hash();
    assert_eq!(
        venue.run(transfer(0, 1, USDC, 40_000 * USDC_UNIT, "fund-1")),
        Err(Rejection::TransferAlreadyApplied)
    );
    assert_eq!(
        venue.run(transfer(0, 1, USDC, 1, "fund-1")),
        Err(Rejection::TransferIdReused)
    );
    assert_eq!(venue.engine.state_hash(), hash, "a transfer sent again moves nothing");
    let request = SubaccountTransferRequest {
        owner: ALICE,
        from_number: 0,
        to_number: 1,
        asset: USDC,
        amount: Amount::from_units(40_000 * USDC_UNIT),
        client_transfer_id: "fund-1".into(),
    };
    assert_eq!(
        venue.engine.remembered_subaccount_transfer(&request, venue.time_ms),
        Some(recorded[0].clone())
    );
    // A day later the id is forgotten and may move funds again.
    venue.time_ms += TRANSFER_ID_MEMORY_MS;
    venue.run(transfer(0, 1, USDC, 40_000 * USDC_UNIT, "fund-1")).unwrap();
    assert_eq!(available(&venue.engine, first, USDC), 80_000 * USDC_UNIT);
}

#[test]
fn a_malformed_or_unfunded_transfer_is_refused_and_changes_nothing() {
    let mut venue = venue();
    venue.run(transfer(0, 2, ETH, ETH_UNIT, "seed")).unwrap();
    let hash = venue.engine.state_hash();
    let refused = [
        (transfer(0, 0, USDC, 1, "same"), "the same subaccount"),
        (transfer(0, 1_001, USDC, 1, "far"), "a number past 1000"),
        (transfer(1_001, 0, USDC, 1, "far-from"), "a number past 1000"),
        (transfer(0, 1, USDC, 0, "zero"), "a zero amount"),
        (transfer(0, 1, USDC, 1, ""), "an empty id"),
        (transfer(0, 1, USDC, 1, "spaced id"), "an id with a space"),
        (transfer(0, 1, USDC, 1, &"x".repeat(65)), "an id of 65 characters"),
        (transfer(0, 1, AssetIndex(9), 1, "asset"), "an unknown asset"),
        (
            transfer(2, 3, ETH, ETH_UNIT + 1, "more"),
            "more than the subaccount holds",
        ),
        (transfer(4, 0, ETH, 1, "empty"), "a subaccount that holds nothing"),
        (
            transfer(0, 1, USDC, 100_000 * USDC_UNIT + 1, "all"),
            "more than the owner holds",
        ),
    ];
    for (command, what) in refused {
        assert!(venue.run(command).is_err(), "{what} is refused");
        assert_eq!(venue.engine.state_hash(), hash, "{what} changes nothing");
    }
    // A locked balance cannot be moved: an order holds it.
    let sub = subaccount_address(&ALICE, 2);
    let order = venue.order(sub, Direction::Sell, Some("2500"), "1");
    venue.place(order).unwrap();
    assert_eq!(
        venue.run(transfer(2, 0, ETH, 1, "locked")),
        Err(Rejection::InsufficientBalance)
    );
}

#[test]
fn an_order_of_a_subaccount_locks_and_fills_there_never_on_the_owner() {
    let mut venue = venue();
    let maker = subaccount_address(&ALICE, 7);
    venue.run(transfer(0, 7, USDC, 5_000 * USDC_UNIT, "mm")).unwrap();
    let owner_before = venue.engine.balance(&ALICE, USDC);
    let bid = venue.order(maker, Direction::Buy, Some("2000"), "2");
    venue
        .run(Command::ByAgent {
            agent: ALICE,
            command: Box::new(Command::PlaceOrder(bid)),
        })
        .expect("the owner signs for its subaccount");
    assert_eq!(venue.engine.balance(&maker, USDC).locked.units(), 4_000 * USDC_UNIT);
    let sell = venue.order(BOB, Direction::Sell, None, "1");
    venue.place(sell).unwrap();
    let bought = venue.engine.balance(&maker, ETH).total().units();
    assert!(
        bought > 0 && bought <= ETH_UNIT,
        "the fill's base (less the fee) reaches the subaccount"
    );
    assert_eq!(venue.engine.balance(&maker, USDC).locked.units(), 2_000 * USDC_UNIT);
    assert_eq!(
        venue.engine.balance(&ALICE, USDC),
        owner_before,
        "the owner's balance never moves"
    );
    assert_eq!(venue.engine.balance(&ALICE, ETH).total().units(), 10 * ETH_UNIT);
    assert_eq!(venue.engine.position(&ALICE, crate::testing::PAIR).net_base, 0);
    assert_ne!(venue.engine.position(&maker, crate::testing::PAIR).net_base, 0);
}

#[test]
fn the_owner_and_its_agents_trade_for_a_subaccount_and_nobody_else_does() {
    let mut venue = venue();
    let sub = subaccount_address(&ALICE, 3);
    let unfunded = subaccount_address(&ALICE, 4);
    venue.run(transfer(0, 3, ETH, 2 * ETH_UNIT, "bot")).unwrap();
    let by = |agent: Address, order| Command::ByAgent {
        agent,
        command: Box::new(Command::PlaceOrder(order)),
    };
    let order = venue.order(sub, Direction::Sell, Some("3000"), "0.1");
    assert_eq!(
        venue.run(by(BOB, order.clone())),
        Err(Rejection::AgentNotAllowed),
        "another account"
    );
    assert_eq!(
        venue.run(by(BOT, order.clone())),
        Err(Rejection::AgentNotAllowed),
        "an agent not approved"
    );
    let never_funded = venue.order(unfunded, Direction::Sell, Some("3000"), "0.1");
    assert_eq!(
        venue.run(by(ALICE, never_funded)),
        Err(Rejection::AgentNotAllowed),
        "a subaccount never funded is not known to be Alice's"
    );
    venue
        .run(Command::ApproveAgent {
            account: ALICE,
            grant: AgentGrant {
                agent: BOT,
                name: "bot".into(),
                valid_until_ms: None,
                approved_at_ms: 0,
            },
        })
        .unwrap();
    venue
        .run(by(BOT, order))
        .expect("the owner's agent trades for the subaccount");
    let agent_transfer = Command::ByAgent {
        agent: BOT,
        command: Box::new(transfer(3, 0, ETH, 1, "steal")),
    };
    assert_eq!(
        venue.run(agent_transfer),
        Err(Rejection::AgentNotAllowed),
        "agents never move funds"
    );
}

#[test]
fn the_owner_s_leaf_counts_its_subaccounts_and_a_restore_keeps_them() {
    let mut venue = venue();
    venue.run(transfer(0, 1, USDC, 30_000 * USDC_UNIT, "a")).unwrap();
    venue.run(transfer(0, 2, ETH, 3 * ETH_UNIT, "b")).unwrap();
    let entries = venue.engine.liability_entries();
    let alice: Vec<_> = entries.iter().filter(|entry| entry.account == ALICE).collect();
    assert_eq!(alice.len(), 2);
    assert!(alice.iter().all(|entry| {
        let expected = if entry.token == crate::liabilities::LiabilityToken::Asset(ETH) {
            10 * ETH_UNIT
        } else {
            100_000 * USDC_UNIT
        };
        entry.balance.units() == expected
    }));
    assert!(entries
        .iter()
        .all(|entry| entry.account != subaccount_address(&ALICE, 1) && entry.account != subaccount_address(&ALICE, 2)));

    let restored = Engine::from_state(venue.engine.config().clone(), &venue.engine.state()).unwrap();
    assert_eq!(restored.state_hash(), venue.engine.state_hash());
    assert_eq!(restored.subaccounts_of(&ALICE), venue.engine.subaccounts_of(&ALICE));
    assert_eq!(restored.subaccounts_of(&ALICE).len(), 2);
}

#[test]
fn an_owner_s_open_orders_over_all_its_subaccounts_are_bounded() {
    // Two open orders per account: twenty for an owner over itself and its subaccounts.
    let limits = EngineLimits {
        max_open_orders_per_account: 2,
        ..EngineLimits::default()
    };
    let mut venue = Venue::new(scenario_config(limits), 1_000);
    venue.deposit(ALICE, USDC, 100_000 * USDC_UNIT);
    let mut placed = Vec::new();
    let bid = |venue: &mut Venue, number: u32| {
        let order = venue.order(subaccount_address(&ALICE, number), Direction::Buy, Some("100"), "1");
        let result = if number == 0 {
            venue.place(order.clone())
        } else {
            // The owner signs for its subaccount.
            venue.run(Command::ByAgent {
                agent: ALICE,
                command: Box::new(Command::PlaceOrder(order.clone())),
            })
        };
        (result, order)
    };
    for number in 0..=10u32 {
        if number > 0 {
            venue
                .run(transfer(0, number, USDC, 1_000 * USDC_UNIT, &format!("fund-{number}")))
                .unwrap();
        }
        for _ in 0..2 {
            let (result, order) = bid(&mut venue, number);
            if number < 10 {
                assert!(
                    result.is_ok(),
                    "order {} of subaccount {number}: {result:?}",
                    placed.len()
                );
                placed.push(order);
            } else {
                assert_eq!(
                    result.err(),
                    Some(Rejection::TooManyOpenOrders),
                    "the owner holds twenty"
                );
            }
        }
    }
    venue
        .run(Command::CancelOrder {
            account: placed[5].account,
            order_id: placed[5].order_id,
            pair: None,
        })
        .unwrap();
    assert!(bid(&mut venue, 10).0.is_ok(), "one cancelled makes room");
    let restored = Engine::from_state(venue.engine.config().clone(), &venue.engine.state()).unwrap();
    restored.check_invariants().unwrap();
    assert_eq!(restored.state_hash(), venue.engine.state_hash());
}
