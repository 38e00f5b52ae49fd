//! Scenario tests of `Command::Configure`: the journal's first command replaces the engine's
//! configuration; a later one only adds, and carries the whole state over.

use crate::configuration::{AssetDescription, ChainConfiguration};
use crate::engine::{Command, Engine};
use crate::events::Rejection;
use crate::money::{Address, Amount, AssetIndex, FeeRate, OrderId, PairIndex, Price, Quantity};
use crate::order::{Direction, NewOrder, OrderType, TimeInForce};
use crate::pair::{AssetSpec, PairDefinition};
use crate::testing::{decimal, eth_usdc_chain, eth_usdc_definition, execute_checked, ETH, USDC};
use crate::transfer::TransferRequest;

const ALICE: Address = Address::from_bytes([0xa1; 20]);

fn configuration() -> ChainConfiguration {
    eth_usdc_chain(31337)
}

/// The configuration with WBTC (8 decimals) and WBTC/USDC added, and ETH/USDC's fees changed.
fn widened() -> ChainConfiguration {
    let mut next = configuration();
    next.description.assets.push(AssetDescription {
        symbol: "WBTC".into(),
        token: Some(Address::from_bytes([0x0b; 20])),
    });
    next.engine.assets.push(AssetSpec { decimals: 8 });
    next.engine.pairs[0].taker_fee = FeeRate::from_parts_per_million(1_500).unwrap();
    next.engine.pairs.push(PairDefinition {
        base: AssetIndex(2),
        quote: USDC,
        tick_size: decimal("1"),
        step_size: decimal("0.0001"),
        min_amount: decimal("0.0001"),
        min_notional: decimal("1"),
        maker_fee: FeeRate::ZERO,
        taker_fee: FeeRate::ZERO,
        fee_raise: None,
    });
    next
}

fn deposit(asset: AssetIndex, units: u128, id: u8) -> Command {
    Command::Deposit(TransferRequest {
        transfer_id: [id; 32],
        account: ALICE,
        asset,
        amount: Amount::from_units(units),
    })
}

fn sell(id: u8) -> Command {
    Command::PlaceOrder(NewOrder {
        order_id: OrderId::from_bytes([id; 32]),
        client_order_id: None,
        account: ALICE,
        pair: PairIndex(0),
        order_type: OrderType::Limit,
        direction: Direction::Sell,
        time_in_force: TimeInForce::GoodTillCancelled,
        post_only: false,
        price: Price::from_ticks(200_000),
        quantity: Quantity::from_lots(10_000),
        conditions: Default::default(),
    })
}

/// An engine built from another configuration, configured by the journal's first command.
fn configured() -> Engine {
    let mut built_otherwise = configuration().engine;
    built_otherwise.pairs.clear();
    let mut engine = Engine::new(built_otherwise).unwrap();
    execute_checked(&mut engine, Command::Configure(Box::new(configuration())), 1).unwrap();
    engine
}

#[test]
fn the_first_configuration_replaces_what_the_engine_was_built_with() {
    let engine = configured();
    assert_eq!(engine.configuration(), Some(configuration()));
    assert_eq!(engine.pair_count(), 1);
    assert_eq!(engine.journal_sequence(), 1);
}

#[test]
fn a_later_configuration_adds_assets_and_pairs_and_keeps_every_balance_and_order() {
    let mut engine = configured();
    execute_checked(&mut engine, deposit(ETH, 5 * 10u128.pow(18), 1), 2).unwrap();
    execute_checked(&mut engine, sell(7), 3).unwrap();
    let balance_before = engine.balance(&ALICE, ETH);
    execute_checked(&mut engine, Command::Configure(Box::new(widened())), 4).unwrap();
    assert_eq!(engine.configuration(), Some(widened()));
    assert_eq!(engine.pair_count(), 2);
    assert_eq!(engine.balance(&ALICE, ETH), balance_before);
    assert!(engine.open_order(&OrderId::from_bytes([7; 32])).is_some());
    assert_eq!(engine.journal_sequence(), 4);
    // The new asset and pair work at once.
    execute_checked(&mut engine, deposit(AssetIndex(2), 10u128.pow(8), 2), 5).unwrap();
    assert_eq!(
        engine.balance(&ALICE, AssetIndex(2)).total(),
        Amount::from_units(10u128.pow(8))
    );
    // The state, configuration included, survives the plain data round trip.
    let restored = Engine::from_state(configuration().engine, &engine.state()).unwrap();
    assert_eq!(restored.state_hash(), engine.state_hash());
    assert_eq!(restored.configuration(), Some(widened()));
}

#[test]
fn a_configuration_that_does_more_than_add_is_refused_and_changes_nothing() {
    let mut engine = configured();
    execute_checked(&mut engine, deposit(ETH, 10u128.pow(18), 1), 2).unwrap();
    let mut refused = Vec::new();
    let mut decimals_changed = widened();
    decimals_changed.engine.assets[1].decimals = 8;
    refused.push(decimals_changed);
    let mut pair_removed = configuration();
    pair_removed.engine.pairs.clear();
    refused.push(pair_removed);
    let mut tick_changed = configuration();
    tick_changed.engine.pairs[0].tick_size = decimal("0.1");
    refused.push(tick_changed);
    let mut renamed = configuration();
    renamed.description.assets[0].symbol = "WETH".into();
    refused.push(renamed);
    let mut other_domain = configuration();
    other_domain.description.venue_contract = Address::from_bytes([0x56; 20]);
    refused.push(other_domain);
    let mut fee_account_changed = configuration();
    fee_account_changed.engine.fee_account = ALICE;
    refused.push(fee_account_changed);
    // The venue-signed window, once set, may narrow, never widen or go back to none.
    let mut unbound = configuration();
    unbound.engine.limits.venue_signed_window_ms = 0;
    refused.push(unbound);
    let mut too_wide = configuration();
    too_wide.engine.limits.venue_signed_window_ms = crate::MAX_VENUE_SIGNED_WINDOW_MS + 1;
    refused.push(too_wide);
    for configuration in refused {
        assert_eq!(
            execute_checked(&mut engine, Command::Configure(Box::new(configuration)), 3),
            Err(Rejection::ConfigurationRefused)
        );
    }
    let mut narrower = configuration();
    narrower.engine.limits.venue_signed_window_ms = 1_000;
    execute_checked(&mut engine, Command::Configure(Box::new(narrower.clone())), 3).unwrap();
    let mut wider_again = narrower;
    wider_again.engine.limits.venue_signed_window_ms = 2_000;
    assert_eq!(
        execute_checked(&mut engine, Command::Configure(Box::new(wider_again)), 4),
        Err(Rejection::ConfigurationRefused)
    );
}

#[test]
fn the_state_hash_covers_the_configuration() {
    let mut first = configured();
    let mut second = configured();
    assert_eq!(first.state_hash(), second.state_hash());
    let mut fees_changed = configuration();
    fees_changed.engine.pairs[0].maker_fee = FeeRate::ZERO;
    execute_checked(&mut first, Command::Configure(Box::new(configuration())), 2).unwrap();
    execute_checked(&mut second, Command::Configure(Box::new(fees_changed)), 2).unwrap();
    assert_ne!(first.state_hash(), second.state_hash());
}

#[test]
fn a_bad_configuration_is_refused_even_first() {
    let mut engine = Engine::new(configuration().engine).unwrap();
    let mut lowercase = configuration();
    lowercase.description.assets[0].symbol = "eth".into();
    let mut short = configuration();
    short.description.assets.pop();
    for configuration in [lowercase, short] {
        assert_eq!(
            execute_checked(&mut engine, Command::Configure(Box::new(configuration)), 1),
            Err(Rejection::ConfigurationRefused)
        );
    }
    assert_eq!(engine.journal_sequence(), 0);
}

#[test]
fn a_journal_of_configurations_only_takes_any_new_one_whole() {
    // A start refused after its configuration was journaled (a token's decimals wrong on
    // chain) is corrected by a configuration that changes what a later one could not.
    let mut engine = configured();
    let mut corrected = configuration();
    corrected.engine.assets[1].decimals = 8;
    corrected.description.assets[0].symbol = "WETH".into();
    assert_eq!(engine.check_configuration(&corrected), Ok(()));
    execute_checked(&mut engine, Command::Configure(Box::new(corrected.clone())), 2).unwrap();
    assert_eq!(engine.configuration(), Some(corrected.clone()));
    assert_eq!(engine.journal_sequence(), 2);
    // Once anything else is applied, only additions are taken.
    execute_checked(&mut engine, deposit(ETH, 10u128.pow(18), 1), 3).unwrap();
    let mut changed_again = corrected;
    changed_again.engine.assets[1].decimals = 6;
    assert!(engine.check_configuration(&changed_again).is_err());
    assert_eq!(
        execute_checked(&mut engine, Command::Configure(Box::new(changed_again)), 4),
        Err(Rejection::ConfigurationRefused)
    );
}

/// The review's reproduction: `configure(takerFee=100%)`, the victim's fill, `configure(back)`
/// was a clean audit. A raise now takes effect no sooner than the chain's notice after the
/// configuration that announces it; the fills before it pay the old fee, a cut applies at once,
/// and the notice itself can only go up.
#[test]
fn a_fee_raise_takes_effect_only_after_its_notice_and_a_cut_at_once() {
    const NOTICE_MS: u64 = 24 * 3_600_000;
    let mut engine = configured();
    execute_checked(&mut engine, deposit(ETH, 5 * 10u128.pow(18), 1), 2).unwrap();
    // A raise applied at once: refused, nothing changes.
    let mut gouging = configuration();
    gouging.engine.pairs[0].taker_fee = FeeRate::from_parts_per_million(1_000_000).unwrap();
    assert_eq!(
        execute_checked(&mut engine, Command::Configure(Box::new(gouging.clone())), 3),
        Err(Rejection::ConfigurationRefused)
    );
    // Announced, but sooner than the notice: refused.
    let raise = crate::pair::FeeRaise {
        maker_fee: FeeRate::from_parts_per_million(1_000).unwrap(),
        taker_fee: FeeRate::from_parts_per_million(5_000).unwrap(),
        effective_at_ms: 3 + NOTICE_MS - 1,
    };
    let mut early = configuration();
    early.engine.pairs[0].fee_raise = Some(raise);
    assert_eq!(
        execute_checked(&mut engine, Command::Configure(Box::new(early)), 3),
        Err(Rejection::ConfigurationRefused)
    );
    // What the venue journals for the file's raise: the fees in force kept, the raise announced
    // a notice ahead; journaled again later, the same announcement keeps its time.
    let announced = engine.with_fee_raises_announced(&gouging, 3);
    assert_eq!(announced.engine.pairs[0].taker_fee, eth_usdc_definition().taker_fee);
    let scheduled = announced.engine.pairs[0].fee_raise.unwrap();
    assert_eq!(scheduled.effective_at_ms, 3 + NOTICE_MS);
    execute_checked(&mut engine, Command::Configure(Box::new(announced.clone())), 3).unwrap();
    assert_eq!(engine.with_fee_raises_announced(&gouging, 1_000), announced);
    let spec = engine.pair_spec(PairIndex(0)).unwrap();
    assert_eq!(spec.fees_at(3 + NOTICE_MS - 1).1, eth_usdc_definition().taker_fee);
    assert_eq!(spec.fees_at(3 + NOTICE_MS).1.parts_per_million(), 1_000_000);
    // Once due, the file's fees are the ones in force: folded in without a raise.
    let folded = engine.with_fee_raises_announced(&gouging, 3 + NOTICE_MS);
    assert_eq!(folded, gouging);
    // A cut applies at once, and may drop the announced raise.
    let mut cut = configuration();
    cut.engine.pairs[0].taker_fee = FeeRate::from_parts_per_million(500).unwrap();
    execute_checked(&mut engine, Command::Configure(Box::new(cut)), 4).unwrap();
    assert_eq!(
        engine
            .pair_spec(PairIndex(0))
            .unwrap()
            .fees_at(u64::MAX)
            .1
            .parts_per_million(),
        500
    );
    // The notice cannot be lowered.
    let mut shorter = configuration();
    shorter.engine.pairs[0].taker_fee = FeeRate::from_parts_per_million(500).unwrap();
    shorter.engine.limits.fee_notice_ms = 1;
    assert_eq!(
        execute_checked(&mut engine, Command::Configure(Box::new(shorter)), 5),
        Err(Rejection::ConfigurationRefused)
    );
}

#[test]
fn a_fill_pays_the_fee_in_force_at_its_time() {
    const NOTICE_MS: u64 = 24 * 3_600_000;
    let mut engine = configured();
    execute_checked(&mut engine, deposit(ETH, 5 * 10u128.pow(18), 1), 2).unwrap();
    let mut raised = configuration();
    raised.engine.pairs[0].taker_fee = FeeRate::from_parts_per_million(10_000).unwrap();
    let announced = engine.with_fee_raises_announced(&raised, 3);
    execute_checked(&mut engine, Command::Configure(Box::new(announced)), 3).unwrap();
    let bob = Address::from_bytes([0xb0; 20]);
    let buy = |id: u8| {
        Command::PlaceOrder(NewOrder {
            order_id: OrderId::from_bytes([id; 32]),
            client_order_id: None,
            account: bob,
            pair: PairIndex(0),
            order_type: OrderType::Limit,
            direction: Direction::Buy,
            time_in_force: TimeInForce::ImmediateOrCancel,
            post_only: false,
            price: Price::from_ticks(200_000),
            quantity: Quantity::from_lots(10_000),
            conditions: Default::default(),
        })
    };
    execute_checked(
        &mut engine,
        Command::Deposit(TransferRequest {
            transfer_id: [9; 32],
            account: bob,
            asset: USDC,
            amount: Amount::from_units(10_000 * 10u128.pow(6)),
        }),
        4,
    )
    .unwrap();
    execute_checked(&mut engine, sell(7), 5).unwrap();
    execute_checked(&mut engine, sell(8), 6).unwrap();
    let fee_of = |events: Vec<crate::events::Event>| {
        events
            .into_iter()
            .find_map(|event| match event {
                crate::events::Event::TradeExecuted(trade) => Some(trade.taker_fee),
                _ => None,
            })
            .expect("a trade")
    };
    let before = fee_of(execute_checked(&mut engine, buy(1), NOTICE_MS).unwrap());
    let after = fee_of(execute_checked(&mut engine, buy(2), 3 + NOTICE_MS).unwrap());
    assert_eq!(after.units(), before.units() * 5, "0.2 % then 1 %");
}

/// The journal after the operator listed WBTC and WBTC/USDC at run time and cut ETH/USDC's taker
/// fee (`widened`), against a file that lists DAI and ETH/DAI besides what it had.
fn file_with_dai() -> ChainConfiguration {
    let mut file = configuration();
    file.description.assets.push(AssetDescription {
        symbol: "DAI".into(),
        token: Some(Address::from_bytes([0xda; 20])),
    });
    file.engine.assets.push(AssetSpec { decimals: 18 });
    file.engine.pairs.push(PairDefinition {
        base: ETH,
        quote: AssetIndex(2),
        ..eth_usdc_definition()
    });
    file
}

#[test]
fn a_start_keeps_what_was_listed_at_run_time_at_its_index_and_adds_the_files_after_it() {
    let journal = widened();
    let merged = file_with_dai().merged_with_journal(&journal, true);
    let symbols: Vec<&str> = merged
        .description
        .assets
        .iter()
        .map(|asset| asset.symbol.as_str())
        .collect();
    assert_eq!(symbols, ["ETH", "USDC", "WBTC", "DAI"]);
    assert_eq!(merged.engine.assets[2].decimals, 8);
    assert_eq!(merged.engine.pairs.len(), 3);
    assert_eq!(
        (merged.engine.pairs[1].base, merged.engine.pairs[1].quote),
        (AssetIndex(2), USDC)
    );
    // The file's ETH/DAI names DAI where the merged list has it (3), not where the file did (2).
    assert_eq!(
        (merged.engine.pairs[2].base, merged.engine.pairs[2].quote),
        (ETH, AssetIndex(3))
    );
    assert_eq!(journal.check_change_to(&merged), Ok(()));
    // An engine under the journal takes it, every pair and balance kept.
    let mut engine = configured();
    execute_checked(&mut engine, deposit(ETH, 10u128.pow(18), 1), 2).unwrap();
    execute_checked(&mut engine, Command::Configure(Box::new(journal)), 3).unwrap();
    // The file's ETH/USDC fee is above the run-time cut: a raise, announced as every raise is.
    let announced = engine.with_fee_raises_announced(&merged, 4);
    assert!(announced.engine.pairs[0].fee_raise.is_some());
    execute_checked(&mut engine, Command::Configure(Box::new(announced.clone())), 4).unwrap();
    assert_eq!(engine.configuration(), Some(announced));
    assert_eq!(
        engine.balance(&ALICE, ETH).available,
        Amount::from_units(10u128.pow(18))
    );
}

#[test]
fn a_pair_both_hold_is_the_files_only_when_the_file_changed() {
    let journal = widened();
    let cut = journal.engine.pairs[0].taker_fee;
    let file = configuration();
    assert_ne!(file.engine.pairs[0].taker_fee, cut);
    let same_file = file.merged_with_journal(&journal, false);
    assert_eq!(same_file.engine.pairs[0].taker_fee, cut, "the run-time cut stands");
    assert_eq!(same_file, journal, "nothing to journal when the file did not change");
    let edited = file.merged_with_journal(&journal, true);
    assert_eq!(
        edited.engine.pairs[0].taker_fee, file.engine.pairs[0].taker_fee,
        "the edited file applies"
    );
    assert_eq!(
        edited.engine.pairs[1], journal.engine.pairs[1],
        "the run-time pair is kept either way"
    );
}

#[test]
fn a_kept_pair_keeps_its_announced_raise_time_and_all() {
    let mut engine = configured();
    execute_checked(&mut engine, deposit(USDC, 1_000, 1), 2).unwrap();
    let mut raised = configuration();
    raised.engine.pairs[0].taker_fee = FeeRate::from_parts_per_million(9_000).unwrap();
    let announced = engine.with_fee_raises_announced(&raised, 1_000);
    let raise = announced.engine.pairs[0].fee_raise.expect("a raise is announced");
    execute_checked(&mut engine, Command::Configure(Box::new(announced.clone())), 1_000).unwrap();
    // A change that carries the journal's pair as it is (a listing) keeps the raise's time.
    let again = engine.with_fee_raises_announced(&announced, 50_000);
    assert_eq!(again.engine.pairs[0].fee_raise, Some(raise));
    assert_eq!(again, announced);
}
