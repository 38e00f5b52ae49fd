//! Durability: the state rebuilt from the store equals the state before the stop, and a write
//! that cannot reach the disk is answered 503 with nothing of it left in memory.

use crate::common;

use std::time::Duration;

use common::{assert_error, Trader};
use dexd_core::{
    Address, Amount, AssetIndex, Command, Direction, NewOrder, OrderId, OrderType, PairIndex, TimeInForce,
    TransferRequest,
};
use dexd_venue::config::Config;
use dexd_venue::Venue;
use serde_json::json;

fn account(byte: u8) -> Address {
    Address::from_bytes([byte; 20])
}

fn deposit(byte: u8, asset: u16, units: u128, id: u8) -> Command {
    Command::Deposit(TransferRequest {
        transfer_id: [id; 32],
        account: account(byte),
        asset: AssetIndex(asset),
        amount: Amount::from_units(units),
    })
}

fn order(byte: u8, id: u8, direction: Direction, price: &str, amount: &str, venue: &Venue) -> Command {
    let chain = venue.chain(1).unwrap();
    let markets = chain.markets();
    let spec = &markets.config.pair_config(PairIndex(0)).spec;
    Command::PlaceOrder(NewOrder {
        order_id: OrderId::from_bytes([id; 32]),
        client_order_id: Some(format!("c{id}")),
        account: account(byte),
        pair: PairIndex(0),
        order_type: OrderType::Limit,
        direction,
        time_in_force: TimeInForce::GoodTillCancelled,
        post_only: false,
        price: Some(
            spec.price_from_decimal(dexd_core::Decimal::parse(price).unwrap())
                .unwrap(),
        ),
        quantity: spec
            .quantity_from_decimal(dexd_core::Decimal::parse(amount).unwrap())
            .unwrap(),
        conditions: Default::default(),
    })
}

fn authorization(id: u8) -> Option<dexd_store::Authorization> {
    Some(dexd_store::Authorization {
        order_id: Some(OrderId::from_bytes([id; 32])),
        nonce: [id; 32],
        // The venue's own expiry for a key's order: 2.5 s after it signs.
        expiry_ms: dexd_store::now_ms() + 2_500,
        signature: [id; 65],
        client_signed: false,
        batch: None,
        claims_batch_nonce: false,
        approved_at_block: None,
    })
}

#[tokio::test]
async fn the_rebuilt_state_hash_equals_the_state_hash_before_the_stop() {
    let data_dir = tempfile::tempdir().unwrap();
    let before = {
        let venue = Venue::start(Config::embedded_default(), data_dir.path()).unwrap();
        let chain = venue.chain(1).unwrap();
        chain.submit(deposit(1, 0, 10u128.pow(19), 1), None).await.unwrap();
        chain.submit(deposit(2, 1, 100_000_000_000, 2), None).await.unwrap();
        for (id, (price, amount)) in [("2500", "1"), ("2510", "2"), ("2520", "0.5")].iter().enumerate() {
            let id = 10 + id as u8;
            chain
                .submit(order(1, id, Direction::Sell, price, amount, &venue), authorization(id))
                .await
                .unwrap();
        }
        chain
            .submit(order(2, 20, Direction::Buy, "2515", "2.5", &venue), authorization(20))
            .await
            .unwrap();
        chain
            .submit(order(2, 21, Direction::Buy, "2400", "1", &venue), authorization(21))
            .await
            .unwrap();
        chain
            .submit(
                Command::CancelOrder {
                    account: account(2),
                    order_id: OrderId::from_bytes([21; 32]),
                    pair: None,
                },
                None,
            )
            .await
            .unwrap();
        let hash = chain.state_hash();
        assert_ne!(
            hash,
            Venue::start(Config::embedded_default(), tempfile::tempdir().unwrap().path())
                .unwrap()
                .chain(1)
                .unwrap()
                .state_hash()
        );
        hash
    };
    let venue = Venue::start(Config::embedded_default(), data_dir.path()).unwrap();
    let chain = venue.chain(1).unwrap();
    assert_eq!(chain.state_hash(), before);
    // Time priority, client order ids and locks came back too: the next orders behave the same.
    let duplicate = chain
        .submit(order(1, 30, Direction::Sell, "2600", "1", &venue), authorization(30))
        .await;
    assert!(duplicate.is_ok());
    let reused_client_id = Command::PlaceOrder(match order(1, 31, Direction::Sell, "2600", "1", &venue) {
        Command::PlaceOrder(mut terms) => {
            terms.client_order_id = Some("c12".into());
            terms
        }
        _ => unreachable!(),
    });
    assert_eq!(
        chain.submit(reused_client_id, authorization(31)).await.unwrap_err(),
        dexd_store::WriteError::Rejected(dexd_core::Rejection::DuplicateClientOrderId)
    );
    let stored = chain
        .history()
        .await
        .unwrap()
        .order(&OrderId::from_bytes([21; 32]))
        .unwrap()
        .unwrap();
    assert_eq!(stored.record.status, dexd_core::OrderStatus::Cancelled);
    assert_eq!(stored.signature, [21; 65]);
}

#[tokio::test]
async fn subaccounts_come_back_with_the_same_state_hash_from_the_journal_and_from_a_snapshot() {
    let owner = account(1);
    let transfer = |to_number: u32, units: u128, id: &str| {
        Command::TransferBetweenSubaccounts(dexd_core::SubaccountTransferRequest {
            owner,
            from_number: 0,
            to_number,
            asset: AssetIndex(1),
            amount: Amount::from_units(units),
            client_transfer_id: id.into(),
        })
    };
    let data_dir = tempfile::tempdir().unwrap();
    let before = {
        let venue = Venue::start(Config::embedded_default(), data_dir.path()).unwrap();
        let chain = venue.chain(1).unwrap();
        chain.submit(deposit(1, 1, 100_000_000_000, 1), None).await.unwrap();
        chain.submit(transfer(3, 40_000_000_000, "a"), None).await.unwrap();
        chain.submit(transfer(1_000, 1_000_000, "b"), None).await.unwrap();
        let mut in_third = order(1, 40, Direction::Buy, "2000", "1", &venue);
        if let Command::PlaceOrder(terms) = &mut in_third {
            terms.account = dexd_core::subaccount_address(&owner, 3);
        }
        chain
            .submit(
                Command::ByAgent {
                    agent: owner,
                    command: Box::new(in_third),
                },
                authorization(40),
            )
            .await
            .unwrap();
        chain.state_hash()
    };
    // From the journal alone.
    let hash = {
        let venue = Venue::start(Config::embedded_default(), data_dir.path()).unwrap();
        let chain = venue.chain(1).unwrap();
        assert_eq!(chain.state_hash(), before);
        // The remembered id came back: the same transfer again is refused as applied.
        assert_eq!(
            chain.submit(transfer(3, 40_000_000_000, "a"), None).await.unwrap_err(),
            dexd_store::WriteError::Rejected(dexd_core::Rejection::TransferAlreadyApplied)
        );
        chain.state_hash()
    };
    assert_eq!(hash, before, "a refused transfer changes nothing");
    // From a snapshot: taken after every command from here on, then restored with the rest.
    let snapshots = common::snapshot_config(data_dir.path(), 1);
    let after = {
        let venue = Venue::start(Config::load(&snapshots).unwrap(), data_dir.path()).unwrap();
        let chain = venue.chain(1).unwrap();
        chain.submit(transfer(7, 5_000_000, "c"), None).await.unwrap();
        tokio::time::sleep(Duration::from_millis(300)).await;
        chain.state_hash()
    };
    assert!(common::snapshot_files(data_dir.path()) > 0, "a snapshot was written");
    let venue = Venue::start(Config::load(&snapshots).unwrap(), data_dir.path()).unwrap();
    let chain = venue.chain(1).unwrap();
    assert_eq!(chain.state_hash(), after);
    assert_ne!(after, before);
}

#[tokio::test]
async fn a_locked_database_answers_503_changes_nothing_and_recovers() {
    let data_dir = tempfile::tempdir().unwrap();
    let mut config = Config::embedded_default();
    config.limits.write_lock_timeout_ms = 100;
    let server = common::TestServer::start_in(config, data_dir.path()).await;
    let alice = Trader::new(0xa1);
    server.deposit(&alice, "USDC", "100").await;
    let database = rusqlite::Connection::open(dexd_store::database_path(data_dir.path(), 1)).unwrap();
    database.execute_batch("BEGIN EXCLUSIVE").unwrap();
    let deposit =
        json!({"chainId": "1", "from": alice.address, "symbol": "USDC", "quantity": "5", "privateKey": alice.key});
    assert_error(
        &server.post_json("/portfolio/deposit", deposit.clone()).await,
        503,
        "UNAVAILABLE",
        None,
    );
    let order = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "10", "amount": "1", "privateKey": alice.key});
    assert_error(
        &server.post_json("/order/addOrder", order).await,
        503,
        "UNAVAILABLE",
        None,
    );
    // Reads go on while writes cannot, and show nothing of the refused changes.
    let balance = server.balance(&alice, "USDC").await;
    assert_eq!(
        (balance["total"].as_str(), balance["locked"].as_str()),
        (Some("100"), Some("0"))
    );
    let (_, book) = server
        .get("/order/buyOrderbooks", &[("chainId", "1"), ("pair", "ETH/USDC")])
        .await;
    assert_eq!(book["levels"], json!([]));
    database.execute_batch("ROLLBACK").unwrap();
    drop(database);
    let mut recovered = false;
    for _ in 0..50 {
        let (status, _) = server.post_json("/portfolio/deposit", deposit.clone()).await;
        if status == 200 {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "writes resume when the database is free again");
    assert_eq!(server.balance(&alice, "USDC").await["total"], "105");
    let (_, deposits) = server
        .get(
            "/portfolio/depositHistories",
            &[("chainId", "1"), ("account", &alice.address)],
        )
        .await;
    assert_eq!(deposits["deposits"].as_array().unwrap().len(), 2);
}

#[tokio::test]
async fn commands_journaled_but_not_yet_projected_reach_the_history_at_start() {
    let data_dir = tempfile::tempdir().unwrap();
    {
        // A journal written as the writer would, with the projector stopped before it wrote.
        let (mut journal, _projector, _reader) = dexd_store::open(data_dir.path(), 1, Duration::from_secs(1)).unwrap();
        let entries: Vec<dexd_store::JournalEntry> = (1..=3u8)
            .map(|number| dexd_store::JournalEntry {
                sequence: u64::from(number),
                time_ms: 1_000 * u64::from(number),
                command: dexd_store::codec::encode_command(&deposit(7, 1, 1_000_000 * u128::from(number), number)),
                authorization: None,
            })
            .collect();
        journal.append(&entries).unwrap();
    }
    let venue = Venue::start(Config::embedded_default(), data_dir.path()).unwrap();
    let chain = venue.chain(1).unwrap();
    let history = chain.history().await.unwrap();
    let request = dexd_store::PageRequest {
        limit: 10,
        cursor: None,
        start_ms: 0,
        end_ms: u64::MAX,
    };
    let deposits = history
        .transfers(&account(7), dexd_core::TransferKind::Deposit, request)
        .unwrap();
    let amounts: Vec<u128> = deposits.items.iter().map(|transfer| transfer.amount.units()).collect();
    assert_eq!(amounts, vec![3_000_000, 2_000_000, 1_000_000]);
    assert_eq!(
        chain
            .read_engine(|engine| engine.balance(&account(7), AssetIndex(1)))
            .total()
            .units(),
        6_000_000
    );
}

/// A raise of a pair's fees in the configuration is not applied at a restart: the journal takes
/// it as announced, effective a day later (`[limits] fee_notice_ms`), `/account/assetPairs`
/// shows it, fills until then pay the fees in force, and a restart later keeps the same time.
/// A cut applies at once.
#[tokio::test]
async fn a_fee_raise_in_the_configuration_is_announced_and_applies_only_after_its_notice() {
    let data_dir = tempfile::tempdir().unwrap();
    let (alice, bob) = (Trader::new(0xa1), Trader::new(0xb0));
    {
        let server = common::TestServer::start_in(Config::embedded_default(), data_dir.path()).await;
        server.deposit(&alice, "USDC", "10000").await;
        server.deposit(&bob, "ETH", "5").await;
        // Stopped whole before the next start on the same folder (a drop stops it in the
        // background, which under load could overlap the next start).
        server.stop().await;
    }
    let mut raised = Config::embedded_default();
    let chain = raised.chains.iter_mut().find(|chain| chain.chain_id == 1).unwrap();
    let taker_fee_before = chain.pairs[0].definition.taker_fee;
    chain.pairs[0].definition.taker_fee = dexd_core::FeeRate::from_parts_per_million(50_000).unwrap();
    let restarted_at = dexd_store::now_ms();
    let effective_at = {
        let server = common::TestServer::start_in(raised.clone(), data_dir.path()).await;
        let (status, pairs) = server.get("/account/assetPairs", &[("chainId", "1")]).await;
        assert_eq!(status, 200, "{pairs}");
        let pair = &pairs["pairs"][0];
        assert_eq!(pair["takerFee"], "0.002", "the fee in force stays: {pair}");
        assert_eq!(pair["feeRaise"]["takerFee"], "0.05", "{pair}");
        let effective_at = pair["feeRaise"]["effectiveAt"].as_u64().unwrap();
        assert!(
            effective_at >= restarted_at + dexd_core::DEFAULT_FEE_NOTICE_MS,
            "a day's notice: {pair}"
        );
        // A fill now pays the fee in force: 0.2 % of 1 ETH.
        server.limit(&bob, "sell", "2000", "1").await;
        server.limit(&alice, "buy", "2000", "1").await;
        assert_eq!(server.balance(&alice, "ETH").await["total"], "0.998");
        server.stop().await;
        effective_at
    };
    // Restarted again with the same file: the announcement keeps its time.
    {
        let server = common::TestServer::start_in(raised.clone(), data_dir.path()).await;
        let (_, pairs) = server.get("/account/assetPairs", &[("chainId", "1")]).await;
        assert_eq!(pairs["pairs"][0]["feeRaise"]["effectiveAt"], effective_at);
        server.stop().await;
    }
    // A cut applies at once, and the announced raise is gone with it.
    let mut cut = Config::embedded_default();
    let chain = cut.chains.iter_mut().find(|chain| chain.chain_id == 1).unwrap();
    assert!(taker_fee_before.parts_per_million() > 1_000);
    chain.pairs[0].definition.taker_fee = dexd_core::FeeRate::from_parts_per_million(1_000).unwrap();
    let server = common::TestServer::start_in(cut, data_dir.path()).await;
    let (_, pairs) = server.get("/account/assetPairs", &[("chainId", "1")]).await;
    assert_eq!(pairs["pairs"][0]["takerFee"], "0.001", "{pairs}");
    assert_eq!(pairs["pairs"][0]["feeRaise"], serde_json::Value::Null, "{pairs}");
}
