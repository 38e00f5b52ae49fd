//! Scenario tests of cancel all, amend, the dead man's switch and agents.

use crate::agents::AgentGrant;
use crate::engine::{Command, Engine, EngineConfig, EngineLimits, SwitchSetting};
use crate::events::{Event, Rejection};
use crate::money::{Address, Amount, OrderId, PairIndex};
use crate::order::{Amend, Direction, OrderStatus};
use crate::testing::{amend, amend_of, scenario_config, Venue, ALICE, BOB, ETH, ETH_UNIT, PAIR, USDC, USDC_UNIT};
use crate::transfer::TransferRequest;

const BOT: Address = Address::from_bytes([0xb7; 20]);

/// ETH/USDC in ledger custody, three open orders per account at most.
fn config() -> EngineConfig {
    scenario_config(EngineLimits {
        max_open_orders_per_account: 3,
        ..EngineLimits::default()
    })
}

/// The venue of [`config`]; Alice and Bob hold 10 ETH and 100,000 USDC each.
fn venue() -> Venue {
    let mut venue = Venue::new(config(), 1_000);
    for account in [ALICE, BOB] {
        venue.deposit(account, ETH, 10 * ETH_UNIT);
        venue.deposit(account, USDC, 100_000 * USDC_UNIT);
    }
    venue
}

fn cancelled_ids(events: &[Event]) -> Vec<OrderId> {
    events
        .iter()
        .filter_map(|event| match event {
            Event::OrderUpdated(record) if record.status == OrderStatus::Cancelled => Some(record.terms.order_id),
            _ => None,
        })
        .collect()
}

#[test]
fn cancel_all_cancels_every_open_order_of_the_account_and_releases_every_lock() {
    let mut venue = venue();
    let first = venue.rest(ALICE, Direction::Buy, "2000", "1");
    let second = venue.rest(ALICE, Direction::Sell, "2100", "0.5");
    let bobs = venue.rest(BOB, Direction::Buy, "1999", "1");
    let events = venue
        .run(Command::CancelAll {
            account: ALICE,
            pair: None,
        })
        .unwrap();
    assert_eq!(
        cancelled_ids(&events),
        vec![first.order_id, second.order_id],
        "oldest first"
    );
    assert_eq!(venue.engine.open_order_count(&ALICE), 0);
    assert!(venue.engine.balance(&ALICE, USDC).locked.is_zero());
    assert!(venue.engine.balance(&ALICE, ETH).locked.is_zero());
    assert!(
        venue.engine.open_order(&bobs.order_id).is_some(),
        "another account's order stays"
    );
    // Nothing left: the command still applies (it may carry a nonce) and cancels nothing.
    let events = venue
        .run(Command::CancelAll {
            account: ALICE,
            pair: Some(PAIR),
        })
        .unwrap();
    assert!(cancelled_ids(&events).is_empty());
    assert_eq!(
        venue.run(Command::CancelAll {
            account: ALICE,
            pair: Some(PairIndex(7)),
        }),
        Err(Rejection::UnknownPair)
    );
}

#[test]
fn amend_replaces_the_order_in_one_step_and_keeps_its_client_order_id() {
    let mut venue = venue();
    let old = venue.rest(ALICE, Direction::Buy, "2000", "1");
    let mut replacement = venue.quote(ALICE, Direction::Buy, "2001", "2");
    replacement.client_order_id = old.client_order_id.clone();
    let events = venue.run(amend(old.order_id, replacement.clone())).unwrap();
    assert_eq!(cancelled_ids(&events), vec![old.order_id]);
    let new = venue.engine.open_order(&replacement.order_id).unwrap();
    assert_eq!(new.terms.client_order_id, old.client_order_id);
    assert!(venue.engine.open_order(&old.order_id).is_none());
    let spec = venue.engine.pair_spec(PAIR).unwrap();
    let needed = spec.cost(replacement.price.unwrap(), replacement.quantity).unwrap();
    assert_eq!(
        venue.engine.balance(&ALICE, USDC).locked,
        needed,
        "only the new order locks"
    );
}

#[test]
fn a_refused_amend_leaves_the_old_order_as_it_was() {
    let mut venue = venue();
    let old = venue.rest(ALICE, Direction::Buy, "2000", "1");
    let hash_before = venue.engine.state_hash();
    // Far more than Alice's 100,000 USDC, even with the old order's 2,000 released.
    let mut too_big = venue.quote(ALICE, Direction::Buy, "2000", "60");
    too_big.client_order_id = old.client_order_id.clone();
    let refused = venue.run(amend(old.order_id, too_big));
    assert_eq!(refused, Err(Rejection::InsufficientBalance));
    assert_eq!(venue.engine.state_hash(), hash_before);
    // The client order id is still the old order's: a new order cannot take it.
    let mut clash = venue.quote(ALICE, Direction::Buy, "1990", "0.1");
    clash.client_order_id = old.client_order_id.clone();
    assert_eq!(
        venue.run(Command::PlaceOrder(clash)),
        Err(Rejection::DuplicateClientOrderId)
    );
    // Amending the money the old order already holds is fine: 2,000 released, 2,000 relocked.
    let mut same_money = venue.quote(ALICE, Direction::Buy, "1000", "2");
    same_money.client_order_id = old.client_order_id.clone();
    venue.run(amend(old.order_id, same_money)).unwrap();
}

#[test]
fn amend_refuses_another_accounts_order_a_closed_one_and_changed_terms() {
    let mut venue = venue();
    let old = venue.rest(ALICE, Direction::Buy, "2000", "1");
    let mut replacement = venue.quote(BOB, Direction::Buy, "2001", "1");
    replacement.client_order_id = old.client_order_id.clone();
    assert_eq!(
        venue.run(amend(old.order_id, replacement.clone())),
        Err(Rejection::NotOwner)
    );
    let mut other_direction = venue.quote(ALICE, Direction::Sell, "2001", "1");
    other_direction.client_order_id = old.client_order_id.clone();
    assert!(matches!(
        venue.run(amend(old.order_id, other_direction)),
        Err(Rejection::InvalidOrder(_))
    ));
    // Bob's sell fills Alice's order: it is no longer open.
    let taker = venue.quote(BOB, Direction::Sell, "2000", "1");
    venue.run(Command::PlaceOrder(taker)).unwrap();
    let mut late = venue.quote(ALICE, Direction::Buy, "2001", "1");
    late.client_order_id = old.client_order_id.clone();
    assert_eq!(venue.run(amend(old.order_id, late)), Err(Rejection::OrderNotFound));
}

/// What the client of an amend did not sign is bound to the old order: a journaled amend whose
/// replacement changes the price it said it kept, or an amount it said was the remaining one,
/// is refused (the auditor replays the engine, so such a line is a `FAIL`).
#[test]
fn an_amend_cannot_change_the_price_or_amount_it_says_it_kept() {
    let mut venue = venue();
    let old = venue.rest(ALICE, Direction::Buy, "2000", "1");
    let mut gouged = venue.quote(ALICE, Direction::Buy, "2100", "1");
    gouged.client_order_id = old.client_order_id.clone();
    assert!(matches!(
        venue.run(Command::AmendOrder(Amend {
            keeps_price: true,
            ..amend_of(old.order_id, gouged)
        })),
        Err(Rejection::InvalidOrder(_))
    ));
    let mut doubled = venue.quote(ALICE, Direction::Buy, "2000", "2");
    doubled.client_order_id = old.client_order_id.clone();
    assert!(matches!(
        venue.run(Command::AmendOrder(Amend {
            amount_from_remaining: Some(old.quantity),
            keeps_price: true,
            ..amend_of(old.order_id, doubled)
        })),
        Err(Rejection::InvalidOrder(_))
    ));
    // Kept as said, it applies.
    let mut kept = venue.quote(ALICE, Direction::Buy, "2000", "1");
    kept.client_order_id = old.client_order_id.clone();
    venue
        .run(Command::AmendOrder(Amend {
            amount_from_remaining: Some(old.quantity),
            keeps_price: true,
            ..amend_of(old.order_id, kept)
        }))
        .unwrap();
}

#[test]
fn amend_at_the_open_order_limit_does_not_count_the_old_order_twice() {
    let mut venue = venue();
    let old = venue.rest(ALICE, Direction::Buy, "2000", "0.1");
    venue.rest(ALICE, Direction::Buy, "1999", "0.1");
    venue.rest(ALICE, Direction::Buy, "1998", "0.1");
    let mut replacement = venue.quote(ALICE, Direction::Buy, "1997", "0.1");
    replacement.client_order_id = old.client_order_id.clone();
    venue.run(amend(old.order_id, replacement)).unwrap();
    assert_eq!(venue.engine.open_order_count(&ALICE), 3);
}

#[test]
fn the_switch_fires_once_at_its_time_and_a_later_setting_replaces_it() {
    let mut venue = venue();
    let order = venue.rest(ALICE, Direction::Buy, "2000", "1");
    let trigger = venue.time_ms + 10_000;
    venue
        .run(Command::SetCancelAllAfter {
            account: ALICE,
            setting: SwitchSetting::AtMs(trigger),
        })
        .unwrap();
    // Too early: refused, nothing changes.
    assert_eq!(
        venue.run(Command::FireCancelAllAfter {
            account: ALICE,
            trigger_at_ms: trigger,
        }),
        Err(Rejection::SwitchNotDue)
    );
    assert_eq!(venue.engine.switches().due(trigger, 10), vec![(ALICE, trigger)]);
    venue.time_ms = trigger;
    let events = venue
        .run(Command::FireCancelAllAfter {
            account: ALICE,
            trigger_at_ms: trigger,
        })
        .unwrap();
    assert_eq!(cancelled_ids(&events), vec![order.order_id]);
    assert!(venue.engine.switches().is_empty());
    assert_eq!(
        venue.run(Command::FireCancelAllAfter {
            account: ALICE,
            trigger_at_ms: trigger,
        }),
        Err(Rejection::SwitchNotDue),
        "a switch fires once"
    );
    // Set again before its time: the old trigger no longer fires.
    venue.rest(ALICE, Direction::Buy, "2000", "1");
    let first = venue.time_ms + 5_000;
    venue
        .run(Command::SetCancelAllAfter {
            account: ALICE,
            setting: SwitchSetting::AtMs(first),
        })
        .unwrap();
    venue
        .run(Command::SetCancelAllAfter {
            account: ALICE,
            setting: SwitchSetting::AtMs(first + 60_000),
        })
        .unwrap();
    venue.time_ms = first + 1;
    assert_eq!(
        venue.run(Command::FireCancelAllAfter {
            account: ALICE,
            trigger_at_ms: first,
        }),
        Err(Rejection::SwitchNotDue)
    );
    assert_eq!(venue.engine.open_order_count(&ALICE), 1);
}

#[test]
fn an_agent_trades_for_the_account_that_approved_it_and_never_moves_funds() {
    let mut venue = venue();
    let order = venue.quote(ALICE, Direction::Buy, "2000", "1");
    let by_bot = |command: Command| Command::ByAgent {
        agent: BOT,
        command: Box::new(command),
    };
    assert_eq!(
        venue.run(by_bot(Command::PlaceOrder(order.clone()))),
        Err(Rejection::AgentNotAllowed),
        "never approved"
    );
    let until = venue.time_ms + 100_000;
    venue
        .run(Command::ApproveAgent {
            account: ALICE,
            grant: AgentGrant {
                agent: BOT,
                name: "maker-bot".to_string(),
                valid_until_ms: Some(until),
                approved_at_ms: 0,
            },
        })
        .unwrap();
    assert_eq!(
        venue.engine.agents_of(&ALICE, venue.time_ms)[0].approved_at_ms,
        venue.time_ms
    );
    venue.run(by_bot(Command::PlaceOrder(order.clone()))).unwrap();
    assert_eq!(venue.engine.open_order(&order.order_id).unwrap().terms.account, ALICE);
    let withdraw = Command::Withdraw(TransferRequest {
        transfer_id: [1; 32],
        account: ALICE,
        asset: USDC,
        amount: Amount::from_units(1),
    });
    assert_eq!(venue.run(by_bot(withdraw)), Err(Rejection::AgentNotAllowed));
    let approve = Command::ApproveAgent {
        account: ALICE,
        grant: AgentGrant {
            agent: BOB,
            name: "other".to_string(),
            valid_until_ms: None,
            approved_at_ms: 0,
        },
    };
    assert_eq!(venue.run(by_bot(approve)), Err(Rejection::AgentNotAllowed));
    // Bob never approved the bot.
    let bobs = venue.quote(BOB, Direction::Sell, "2100", "1");
    assert_eq!(
        venue.run(by_bot(Command::PlaceOrder(bobs))),
        Err(Rejection::AgentNotAllowed)
    );
    // Past its end, then revoked.
    let late = venue.quote(ALICE, Direction::Buy, "1990", "0.1");
    venue.time_ms = until;
    assert_eq!(
        venue.run(by_bot(Command::PlaceOrder(late.clone()))),
        Err(Rejection::AgentNotAllowed)
    );
    venue
        .run(Command::RevokeAgent {
            account: ALICE,
            agent: BOT,
        })
        .unwrap();
    assert_eq!(
        venue.run(Command::RevokeAgent {
            account: ALICE,
            agent: BOT,
        }),
        Err(Rejection::AgentNotFound)
    );
}

#[test]
fn agents_and_switches_survive_a_restore_from_state() {
    let mut venue = venue();
    venue
        .run(Command::ApproveAgent {
            account: ALICE,
            grant: AgentGrant {
                agent: BOT,
                name: "bot".to_string(),
                valid_until_ms: None,
                approved_at_ms: 0,
            },
        })
        .unwrap();
    venue
        .run(Command::SetCancelAllAfter {
            account: BOB,
            setting: SwitchSetting::AtMs(99_000),
        })
        .unwrap();
    venue.rest(ALICE, Direction::Buy, "2000", "1");
    let restored = Engine::from_state(config(), &venue.engine.state()).unwrap();
    assert_eq!(restored.state_hash(), venue.engine.state_hash());
    restored.check_invariants().unwrap();
    assert!(restored.agent_allowed(&ALICE, &BOT, 5_000));
    assert_eq!(restored.switches().trigger_of(&BOB), Some(99_000));
}

#[test]
fn an_address_with_nothing_on_the_chain_holds_no_nonce_switch_or_agent() {
    let mut venue = venue();
    const STRANGER: Address = Address::from_bytes([0x5e; 20]);
    let claim = crate::nonces::NonceClaim {
        nonce: crate::nonces::Nonce::from_bytes([1; 32]),
        expiry_ms: 100_000,
        batch: None,
        venue_signed: false,
    };
    // A signed cancel all of nothing would have held the nonce for an hour.
    let mut events = Vec::new();
    let refused = venue.engine.execute_signed(
        Command::CancelAll {
            account: STRANGER,
            pair: None,
        },
        Some(claim),
        venue.time_ms + 1,
        &mut events,
    );
    assert_eq!(refused, Err(Rejection::UnknownAccount));
    assert_eq!(venue.engine.state().nonces.len(), 0);
    assert_eq!(
        venue.run(Command::SetCancelAllAfter {
            account: STRANGER,
            setting: SwitchSetting::AtMs(60_000),
        }),
        Err(Rejection::UnknownAccount)
    );
    assert_eq!(
        venue.run(Command::ApproveAgent {
            account: STRANGER,
            grant: AgentGrant {
                agent: BOT,
                name: "bot".into(),
                valid_until_ms: None,
                approved_at_ms: 0,
            },
        }),
        Err(Rejection::UnknownAccount)
    );
    // Turning a switch off asks nothing, and an account with a deposit may hold all three.
    venue
        .run(Command::SetCancelAllAfter {
            account: STRANGER,
            setting: SwitchSetting::Off,
        })
        .unwrap();
    venue
        .run(Command::SetCancelAllAfter {
            account: ALICE,
            setting: SwitchSetting::AtMs(60_000),
        })
        .unwrap();
}

#[test]
fn an_amend_that_kept_the_remaining_amount_is_refused_once_the_order_filled_since() {
    let mut venue = venue();
    let old = venue.rest(ALICE, Direction::Sell, "2000", "1");
    // The venue read 1 ETH left to sell; then Bob's buy fills 0.4 of it.
    let remaining_read = venue.engine.open_order(&old.order_id).unwrap().remaining();
    let taker = venue.quote(BOB, Direction::Buy, "2000", "0.4");
    venue.run(Command::PlaceOrder(taker)).unwrap();
    let mut replacement = venue.quote(ALICE, Direction::Sell, "2010", "1");
    replacement.client_order_id = old.client_order_id.clone();
    replacement.quantity = remaining_read;
    // Selling 1 again would sell the filled 0.4 twice.
    assert_eq!(
        venue.run(Command::AmendOrder(Amend {
            amount_from_remaining: Some(remaining_read),
            ..amend_of(old.order_id, replacement.clone())
        })),
        Err(Rejection::OrderChanged)
    );
    let remaining_now = venue.engine.open_order(&old.order_id).unwrap().remaining();
    replacement.quantity = remaining_now;
    venue
        .run(Command::AmendOrder(Amend {
            account: ALICE,
            order_id: old.order_id,
            replacement,
            amount_from_remaining: Some(remaining_now),
            keeps_price: false,
        }))
        .unwrap();
    assert_eq!(
        venue.engine.balance(&ALICE, ETH).locked,
        venue.engine.pair_spec(PAIR).unwrap().base_amount(remaining_now),
        "only what was left is for sale"
    );
}
