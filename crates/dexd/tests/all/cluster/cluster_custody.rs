//! Vault custody on a cluster, black box: two real `dexd` nodes sharing a journal in a real
//! PostgreSQL, on a real node (anvil) with the vault deployed. Only the chain's leader credits
//! deposits and pays withdrawals. The leader is SIGKILLed at random moments (before a payment
//! is sent, while it is in flight, before it is confirmed) and the other node takes the chain
//! over: every withdrawal is still paid exactly once, as the vault's events show; a deposit is
//! credited once by whichever node leads; both nodes end with the same balances; and the vault
//! holds exactly what the venue owes. With blocks held back, one payment waits in the node's
//! pool, not one per node.

use crate::common;

use std::path::PathBuf;
use std::time::Duration;

use common::chain::{BackgroundMiner, TestChain, USDC_UNIT};
use common::cluster::{leader_other_than, write_node_config, LEASE_MS};
use common::vault_venue::{deposit_body, VaultVenue};
use common::{BinaryServer, TestServer};
use dexd_store::postgres::test_server::PostgresServer;
use serde_json::json;

/// One node of the test's cluster: its name, configuration and data directory.
struct ClusterNode {
    id: &'static str,
    config: PathBuf,
    data: PathBuf,
}

/// What a node logged.
type Log = std::sync::Arc<std::sync::Mutex<String>>;

impl ClusterNode {
    fn start(&self) -> BinaryServer {
        BinaryServer::start_with(&self.data, Some(&self.config))
    }

    fn start_logging(&self, log: &Log) -> BinaryServer {
        BinaryServer::start_logging(&self.data, Some(&self.config), "info", Some(log.clone()))
    }
}

/// The operator's payment transactions on chain (its liability roots left out): how many were
/// mined, and how many of them reverted (a payment sent in vain: the vault refused a withdrawal
/// already paid).
async fn operator_transactions(venue: &VaultVenue) -> (usize, usize) {
    let node = &venue.chain.node;
    let operator = format!("{:#x}", venue.chain.operator.address());
    let head = node.head().await.unwrap();
    let (mut mined, mut reverted) = (0, 0);
    for number in 0..=head {
        let block = node
            .raw_request("eth_getBlockByNumber", json!([format!("{number:#x}"), true]))
            .await
            .unwrap();
        for transaction in block["transactions"].as_array().unwrap() {
            if transaction["from"].as_str().unwrap().to_lowercase() != operator {
                continue;
            }
            // Only payments: the operator also commits a liability root every second.
            use alloy::sol_types::SolCall;
            use dexd_custody::vault::DexdVaultV2;
            let input = transaction["input"].as_str().unwrap();
            let commits = [
                DexdVaultV2::commitRootCall::SELECTOR,
                DexdVaultV2::commitRootWithDataCall::SELECTOR,
            ];
            if commits
                .iter()
                .any(|selector| input.starts_with(&format!("0x{}", alloy::hex::encode(selector))))
            {
                continue;
            }
            mined += 1;
            let receipt = node
                .raw_request("eth_getTransactionReceipt", json!([transaction["hash"]]))
                .await
                .unwrap();
            if receipt["status"] != "0x1" {
                reverted += 1;
            }
        }
    }
    (mined, reverted)
}

#[tokio::test]
async fn a_vault_chains_withdrawals_are_paid_once_across_leader_changes() {
    use rand::{Rng, SeedableRng};
    let seed = std::env::var("DEXD_CLUSTER_CUSTODY_SEED").map_or(20_261_124, |seed| seed.parse().unwrap());
    let mut rng = rand::rngs::StdRng::seed_from_u64(seed);
    let postgres = PostgresServer::start();
    let chain = TestChain::start().await;
    let chain_id = chain.chain_id;
    let node_url = chain.anvil.endpoint();
    let folder = tempfile::tempdir().unwrap();
    let base = std::fs::read_to_string(chain.write_dexd_config(folder.path(), &node_url)).unwrap();
    let nodes = ["node-a", "node-b"].map(|id| ClusterNode {
        id,
        config: write_node_config(folder.path(), &base, &postgres.url(), id),
        data: folder.path().join(id),
    });
    // `venue` queries its server, which is always the chain's leader; `follower` is the other.
    let mut venue = VaultVenue {
        chain,
        folder,
        config: nodes[0].config.clone(),
        server: Some(nodes[0].start()),
    };
    let mut leading = 0;
    assert_eq!(
        leader_other_than(&venue.client().base_url, chain_id, None, Duration::from_secs(10)).await,
        "node-a"
    );
    let follower_log = Log::default();
    let mut follower = nodes[1].start_logging(&follower_log);

    let alice = venue.chain.users[0].clone();
    venue
        .fund(&alice, Some(venue.chain.usdc), 1_000 * USDC_UNIT, "USDC", "1000")
        .await;
    let before = venue.usdc_in_wallet(&alice).await;
    let mut withdrawals = Vec::new();

    // Only the leader pays: with blocks held back, one payment is sent, not one per node.
    let node = venue.chain.node.clone();
    node.raw_request("evm_setAutomine", json!([false])).await.unwrap();
    let mut body = deposit_body(&alice, "USDC", "5");
    body["chainId"] = json!(chain_id.to_string());
    let (status, answer) = TestServer::at(&follower.base_url)
        .post_json("/portfolio/withdraw", body)
        .await;
    assert_eq!(status, 200, "{answer}");
    withdrawals.push((answer["withdrawal"]["id"].as_str().unwrap().to_string(), 5));
    // Both nodes poll every 100 ms, and the payer replaces a transaction (at the same nonce)
    // only after 2 s: once the leader's transaction waits, a second second shows no other.
    let operator = format!("{:#x}", venue.chain.operator.address());
    let waiting = || async {
        let mut nonces = Vec::new();
        for tag in ["latest", "pending"] {
            let nonce = node
                .raw_request("eth_getTransactionCount", json!([operator, tag]))
                .await
                .unwrap();
            nonces.push(u64::from_str_radix(nonce.as_str().unwrap().trim_start_matches("0x"), 16).unwrap());
        }
        nonces[1] - nonces[0]
    };
    // A root mined just before blocks were held back waits for its confirmations, and the
    // payer sends nothing while it does: an empty block now and then gives them, until the
    // leader has a transaction waiting.
    let deadline = std::time::Instant::now() + Duration::from_secs(20);
    let mut next_block = std::time::Instant::now() + Duration::from_secs(1);
    while waiting().await == 0 {
        assert!(std::time::Instant::now() < deadline, "the leader sent nothing");
        if std::time::Instant::now() >= next_block {
            node.raw_request("anvil_mine", json!(["0x1"])).await.unwrap();
            next_block = std::time::Instant::now() + Duration::from_secs(1);
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    tokio::time::sleep(Duration::from_millis(1_000)).await;
    assert_eq!(waiting().await, 1, "one payment waits to be mined, not one per node");
    let follower_said = follower_log.lock().unwrap().clone();
    assert!(
        !follower_said.contains("withdrawals sent to the vault"),
        "the follower paid: {follower_said}"
    );
    node.raw_request("evm_setAutomine", json!([true])).await.unwrap();

    let _miner = BackgroundMiner::start(node.clone());
    for round in 0..4 {
        let units = rng.gen_range(1..=50u128);
        let mut body = deposit_body(&alice, "USDC", &units.to_string());
        body["chainId"] = json!(chain_id.to_string());
        // Every other withdrawal goes to the follower, which forwards it to the leader.
        let to = if round % 2 == 0 {
            &follower.base_url
        } else {
            &venue.client().base_url
        };
        let (status, answer) = TestServer::at(to).post_json("/portfolio/withdraw", body).await;
        assert_eq!(status, 200, "seed {seed} round {round}: {answer}");
        withdrawals.push((answer["withdrawal"]["id"].as_str().unwrap().to_string(), units));
        // The leader dies before the payment is sent, after, or after it was mined.
        tokio::time::sleep(Duration::from_millis(rng.gen_range(0..1_200))).await;
        venue.kill();
        let took_over = leader_other_than(
            &follower.base_url,
            chain_id,
            Some(nodes[leading].id),
            Duration::from_millis(LEASE_MS + 5_000),
        )
        .await;
        assert_eq!(took_over, nodes[1 - leading].id, "seed {seed} round {round}");
        // The dead node comes back, and follows.
        let restarted = nodes[leading].start();
        venue.server = Some(std::mem::replace(&mut follower, restarted));
        leading = 1 - leading;
    }
    venue.wait_for_every_withdrawal_confirmed(&alice).await;
    venue
        .assert_usdc_withdrawals_paid_once(&alice, &withdrawals, before, &format!("seed {seed}"))
        .await;
    let paid: u128 = withdrawals.iter().map(|(_, units)| units).sum();
    // Only the leader pays: a payment is sent again at most once per leader change (the new
    // leader may send one the old leader's transaction, not mined yet, pays first).
    let (mined, reverted) = operator_transactions(&venue).await;
    assert!(
        reverted <= withdrawals.len() && mined <= 2 * withdrawals.len(),
        "seed {seed}: {mined} operator transactions, {reverted} in vain"
    );

    // A deposit after the changes is credited once, by the leader of the moment.
    let bob = venue.chain.users[1].clone();
    venue
        .fund(&bob, Some(venue.chain.usdc), 250 * USDC_UNIT, "USDC", "250")
        .await;
    assert_eq!(venue.transfers(&bob, "deposit").await.len(), 1);
    venue.assert_conserved().await;

    // The follower shows the same: it follows the leader's journal.
    let leader_view = (
        venue.balance(&alice, "USDC").await,
        venue.balance(&bob, "USDC").await,
        venue.transfers(&alice, "withdraw").await,
    );
    assert_eq!(leader_view.0["total"], (1_000 - paid).to_string().as_str());
    venue.server = Some(follower);
    venue
        .eventually("the follower shows the leader's state", || async {
            (
                venue.balance(&alice, "USDC").await,
                venue.balance(&bob, "USDC").await,
                venue.transfers(&alice, "withdraw").await,
            ) == leader_view
        })
        .await;
    venue.assert_conserved().await;
}
