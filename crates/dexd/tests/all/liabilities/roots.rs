//! Provable liabilities end to end: the real dexd binary on a vault (version 2) of a real node
//! (anvil). The committer commits roots; each account's proof checks against the root read from
//! the vault; the leaves rebuild the root and its totals; a restart serves the same proofs from
//! the journal; and once the operator is gone and the vault frozen, the exit calls the venue
//! gave pay each account what its leaf says, while the venue sends the frozen vault nothing.

use crate::common;

use std::time::Duration;

use alloy::eips::BlockId;
use alloy::primitives::{TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use common::chain::{ETH_UNIT, TEST_ROOT_TERMS, USDC_UNIT};
use common::vault_venue::{address_of, key_of, VaultVenue};
use dexd_core::Address;
use dexd_crypto::liability_tree::{verify, LiabilityLeaf, LiabilityTree};
use dexd_custody::deploy;
use dexd_custody::vault::{venue_address, DexdVaultV2};
use serde_json::{json, Value};

fn bytes32(text: &str) -> [u8; 32] {
    alloy::hex::decode(text.trim_start_matches("0x"))
        .unwrap()
        .try_into()
        .unwrap()
}

fn address(text: &str) -> Address {
    dexd_crypto::parse_address(text).unwrap()
}

fn units(value: &Value) -> u128 {
    value.as_str().unwrap().parse().unwrap()
}

/// The account's proof body, once the newest root has its `balance` of `symbol` (waiting at
/// most 30 s, mining a block now and then so that roots get their confirmations).
async fn proof_showing(venue: &VaultVenue, account: &PrivateKeySigner, symbol: &str, balance: u128) -> Value {
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    loop {
        let (status, body) = venue
            .get("/account/liabilityProof", &[("account", &address_of(account))])
            .await;
        if status == 200 {
            let shows = body["leaves"]
                .as_array()
                .unwrap()
                .iter()
                .any(|leaf| leaf["symbol"] == symbol && units(&leaf["balance"]) == balance);
            if shows {
                return body;
            }
        } else {
            assert_eq!(body["error"]["code"], "ROOT_NOT_FOUND", "{body}");
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no root with {balance} {symbol}: {body}"
        );
        venue.chain.mine(1).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

/// Runs `dexd exit` with a proof file (and `--freeze` when asked).
fn dexd_exit(
    venue: &VaultVenue,
    proof: &std::path::Path,
    sender: &PrivateKeySigner,
    freeze: bool,
) -> (bool, String, String) {
    let proof = proof.to_str().unwrap();
    let mut arguments = vec!["--proof", proof];
    if freeze {
        arguments.push("--freeze");
    }
    venue.dexd_exit(&arguments, sender)
}

/// Checks every leaf of a proof against the root the vault holds for its epoch.
async fn check_against_vault(venue: &VaultVenue, account: &PrivateKeySigner, proof: &Value) {
    let epoch = proof["epoch"].as_u64().unwrap();
    let stored = venue
        .chain
        .node
        .view(
            venue.chain.vault,
            DexdVaultV2::liabilityRootCall {
                epoch: U256::from(epoch),
            },
            BlockId::latest(),
        )
        .await
        .unwrap();
    assert_eq!(format!("0x{}", alloy::hex::encode(stored.root)), proof["root"]);
    assert_eq!(stored.journalSequence, proof["journalSequence"].as_u64().unwrap());
    for leaf in proof["leaves"].as_array().unwrap() {
        let entry = LiabilityLeaf {
            account: venue_address(&account.address()),
            token: address(leaf["token"].as_str().unwrap()),
            balance: units(&leaf["balance"]),
            credited_deposits: units(&leaf["creditedDeposits"]),
            debited_withdrawals: units(&leaf["debitedWithdrawals"]),
        };
        let path: Vec<[u8; 32]> = leaf["proof"]
            .as_array()
            .unwrap()
            .iter()
            .map(|node| bytes32(node.as_str().unwrap()))
            .collect();
        assert!(verify(&stored.root.0, &entry, &path), "{leaf}");
    }
}

#[tokio::test]
async fn roots_prove_every_balance_and_a_frozen_vault_pays_each_account_its_leaf() {
    let mut venue = VaultVenue::start_with_roots(1_000).await;
    let (alice, bob, dave) = (
        venue.chain.users[0].clone(),
        venue.chain.users[1].clone(),
        venue.chain.users[3].clone(),
    );
    venue
        .fund(&alice, Some(venue.chain.usdc), 1_000 * USDC_UNIT, "USDC", "1000")
        .await;
    venue.fund(&bob, None, 2 * ETH_UNIT, "ETH", "2").await;
    // A trade: Bob sells 1 ETH at 500 USDC to Alice, so balances differ from what was credited.
    for (signer, direction) in [(&bob, "sell"), (&alice, "buy")] {
        let (status, body) = venue
            .post(
                "/order/addOrder",
                json!({"symbol": "ETH/USDC", "type": "limit", "direction": direction, "price": "500",
                       "amount": "1", "privateKey": key_of(signer)}),
            )
            .await;
        assert_eq!(status, 200, "{body}");
    }
    // Alice: 500 USDC left, 1 ETH less the 0.2 % taker fee; Bob: 1 ETH, 500 USDC less 0.1 %.
    let alice_eth = ETH_UNIT - ETH_UNIT * 2 / 1_000;
    let proof = proof_showing(&venue, &alice, "ETH", alice_eth).await;
    check_against_vault(&venue, &alice, &proof).await;
    let leaves = proof["leaves"].as_array().unwrap();
    let usdc = leaves.iter().find(|leaf| leaf["symbol"] == "USDC").unwrap();
    assert_eq!(
        (
            units(&usdc["balance"]),
            units(&usdc["creditedDeposits"]),
            units(&usdc["debitedWithdrawals"])
        ),
        (500 * USDC_UNIT, 1_000 * USDC_UNIT, 0)
    );
    let eth = leaves.iter().find(|leaf| leaf["symbol"] == "ETH").unwrap();
    assert_eq!(eth["token"], "0x0000000000000000000000000000000000000000");
    assert_eq!(
        units(&eth["creditedDeposits"]),
        0,
        "Alice bought her ETH, never deposited it"
    );

    // The roots list the root with its totals; the leaves rebuild the root and the totals.
    let epoch = proof["epoch"].as_u64().unwrap();
    let (status, roots) = venue.get("/account/liabilityRoots", &[]).await;
    assert_eq!(status, 200, "{roots}");
    let listed = roots["roots"]
        .as_array()
        .unwrap()
        .iter()
        .find(|root| root["epoch"] == epoch)
        .unwrap()
        .clone();
    assert_eq!(listed["root"], proof["root"]);
    assert_eq!(listed["txHash"], proof["txHash"]);
    let receipt = venue
        .chain
        .node
        .receipt(alloy::primitives::B256::from(bytes32(
            listed["txHash"].as_str().unwrap(),
        )))
        .await
        .unwrap()
        .expect("the commit transaction is on chain");
    assert!(receipt.succeeded);
    let response = reqwest::get(format!(
        "{}/account/liabilityLeaves?chainId={}&epoch={epoch}",
        venue.client().base_url,
        venue.chain_id()
    ))
    .await
    .unwrap();
    assert_eq!(response.headers()["content-type"], "application/x-ndjson");
    let text = response.text().await.unwrap();
    let lines: Vec<Value> = text.lines().map(|line| serde_json::from_str(line).unwrap()).collect();
    let rebuilt: Vec<LiabilityLeaf> = lines
        .iter()
        .map(|line| LiabilityLeaf {
            account: address(line["account"].as_str().unwrap()),
            token: address(line["token"].as_str().unwrap()),
            balance: units(&line["balance"]),
            credited_deposits: units(&line["creditedDeposits"]),
            debited_withdrawals: units(&line["debitedWithdrawals"]),
        })
        .collect();
    assert!(rebuilt.len() >= 4, "Alice, Bob and the fee account: {text}");
    assert_eq!(
        format!("0x{}", alloy::hex::encode(LiabilityTree::build(&rebuilt, 1).root())),
        proof["root"]
    );
    for total in listed["totals"].as_array().unwrap() {
        let summed: u128 = lines
            .iter()
            .filter(|line| line["symbol"] == total["symbol"])
            .map(|line| units(&line["balance"]))
            .sum();
        assert_eq!(
            summed,
            units(&total["total"]),
            "nothing pending: the total is every balance"
        );
    }
    let (status, unknown) = venue.get("/account/liabilityLeaves", &[("epoch", "4000000")]).await;
    assert_eq!(
        (status, unknown["error"]["code"].as_str()),
        (404, Some("ROOT_NOT_FOUND"))
    );

    // A restart serves the same leaves of that root, the tree rebuilt from the journal.
    venue.restart();
    let again = reqwest::get(format!(
        "{}/account/liabilityLeaves?chainId={}&epoch={epoch}",
        venue.client().base_url,
        venue.chain_id()
    ))
    .await
    .unwrap()
    .text()
    .await
    .unwrap();
    assert_eq!(again, text);

    // The operator vanishes: no more roots; after maxRootAge anyone freezes the vault.
    let final_proof = proof_showing(&venue, &alice, "ETH", alice_eth).await;
    let bob_proof = {
        let (status, body) = venue
            .get("/account/liabilityProof", &[("account", &address_of(&bob))])
            .await;
        assert_eq!(status, 200, "{body}");
        body
    };
    venue.kill();
    let bob_proof_file = venue.folder.path().join("bob-proof.json");
    std::fs::write(&bob_proof_file, bob_proof.to_string()).unwrap();
    // `dexd exit` refuses while the vault is not frozen, and cannot freeze it before its time.
    let (succeeded, _, error) = dexd_exit(&venue, &bob_proof_file, &dave, true);
    assert!(!succeeded);
    assert!(error.contains("refuses to freeze"), "{error}");
    venue.chain.advance_time(TEST_ROOT_TERMS.max_root_age_s + 1).await;
    deploy::send_and_wait(
        &venue.chain.node,
        &dave,
        TxKind::Call(venue.chain.vault),
        alloy::sol_types::SolCall::abi_encode(&DexdVaultV2::freezeCall {}),
        U256::ZERO,
    )
    .await
    .unwrap();

    // dexd back on a frozen vault: it says so, journals the freeze once confirmed, takes no more
    // withdrawals, and sends nothing.
    venue.restart();
    venue
        .eventually("the custody shows the vault frozen", || async {
            let (_, info) = venue.get("/account/assetsInfo", &[]).await;
            info["custody"]["frozen"] == true
        })
        .await;
    venue
        .eventually("the freeze is journaled", || async {
            venue.chain.mine(1).await;
            let (_, custody) = venue.get("/account/custody", &[]).await;
            custody["frozen"] == true
        })
        .await;
    let operator_nonce = venue
        .chain
        .node
        .latest_nonce(venue.chain.operator.address())
        .await
        .unwrap();
    let (_, custody) = venue.get("/account/custody", &[]).await;
    assert!(
        custody["withdrawalsStopped"].as_str().unwrap().contains("frozen"),
        "{custody}"
    );
    venue
        .refused(
            "/portfolio/withdraw",
            json!({"from": address_of(&bob), "symbol": "USDC", "quantity": "10", "privateKey": key_of(&bob)}),
            409,
            "VAULT_FROZEN",
        )
        .await;
    for _ in 0..10 {
        venue.chain.mine(1).await;
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
    assert_eq!(
        venue
            .chain
            .node
            .latest_nonce(venue.chain.operator.address())
            .await
            .unwrap(),
        operator_nonce,
        "the operator sent nothing to the frozen vault"
    );

    // Dave sends each exit call the venue gave; each account is paid its leaf, once.
    let wallet = |token: Option<alloy::primitives::Address>, owner: alloy::primitives::Address| {
        let node = &venue.chain.node;
        async move { node.balance(token, owner, BlockId::latest()).await.unwrap() }
    };
    let alice_usdc_before = wallet(Some(venue.chain.usdc), alice.address()).await;
    let alice_eth_before = wallet(None, alice.address()).await;
    let bob_usdc_before = wallet(Some(venue.chain.usdc), bob.address()).await;
    let mut exits = Vec::new();
    for proof in [&final_proof] {
        for leaf in proof["leaves"].as_array().unwrap() {
            exits.push(alloy::hex::decode(leaf["exitCalldata"].as_str().unwrap().trim_start_matches("0x")).unwrap());
        }
    }
    for calldata in &exits {
        deploy::send_and_wait(
            &venue.chain.node,
            &dave,
            TxKind::Call(venue.chain.vault),
            calldata.clone(),
            U256::ZERO,
        )
        .await
        .unwrap();
    }
    // Bob leaves with `dexd exit`, Dave's key paying the gas.
    let (succeeded, output, error) = dexd_exit(&venue, &bob_proof_file, &dave, false);
    assert!(succeeded, "{output} {error}");
    let report: Value = serde_json::from_str(&output).unwrap();
    assert!(
        report["exits"]
            .as_array()
            .unwrap()
            .iter()
            .all(|exit| exit["sent"] == true),
        "{report}"
    );
    assert_eq!(
        wallet(Some(venue.chain.usdc), alice.address()).await - alice_usdc_before,
        U256::from(500 * USDC_UNIT)
    );
    assert_eq!(
        wallet(None, alice.address()).await - alice_eth_before,
        U256::from(alice_eth),
        "Dave paid the gas; Alice got her leaf"
    );
    let bob_usdc = bob_proof["leaves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|leaf| leaf["symbol"] == "USDC")
        .map(|leaf| units(&leaf["balance"]))
        .unwrap();
    assert_eq!(bob_usdc, 500 * USDC_UNIT - 500 * USDC_UNIT / 1_000);
    assert_eq!(
        wallet(Some(venue.chain.usdc), bob.address()).await - bob_usdc_before,
        U256::from(bob_usdc),
        "Bob's leaf pays his balance, and the withdrawal the frozen vault's chain refused took nothing"
    );
    let again = deploy::send_and_wait(
        &venue.chain.node,
        &dave,
        TxKind::Call(venue.chain.vault),
        exits[0].clone(),
        U256::ZERO,
    )
    .await;
    assert!(again.is_err(), "an exit pays once");
}
