//! `dexd audit` checks each root's data from the chain alone: a root committed with the
//! operator's key whose tree is the venue's own (so every other check passes) but whose data
//! would not rebuild it (an account listed that the tree does not hold) is vetoed as `DATA-MISMATCH` by the guardian;
//! the venue's honest roots around it are found good, and their data archived. An auditor whose
//! beacon node has nothing (blobs dropped, or the node gone) waits on a root's data while it can
//! still be vetoed, then records the tree it checked and says the data was not checked.

use crate::common;

use std::time::Duration;

use alloy::primitives::TxKind;
use alloy::sol_types::SolCall;
use common::chain::{BackgroundMiner, USDC_UNIT};
use common::vault_calls::view;
use common::vault_venue::{key_of, VaultVenue};
use dexd_crypto::liability_tree::LiabilityLeaf;
use dexd_custody::deploy;
use dexd_custody::liabilities::chain_data::ChainData;
use dexd_custody::liabilities::root_data::ListedAccount;
use dexd_custody::vault::DexdVaultV2;

use super::audit_vault::{root_count, start_guardian, vault_arguments, vault_root};
use common::auditor::RunningAuditor;

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_root_whose_data_would_not_rebuild_it_is_vetoed_as_data_mismatch() {
    // Two minutes to veto (the chain's clock runs with the wall's): a loaded machine's auditor
    // still judges the copy inside its period, so the line is the veto's, not "ended before".
    const CHALLENGE_PERIOD_S: u64 = 120;
    let (venue, _alice) = VaultVenue::start_with_alice_funded(CHALLENGE_PERIOD_S).await;
    let bob = venue.chain.users[1].clone();
    venue
        .fund(&bob, Some(venue.chain.usdc), 250 * USDC_UNIT, "USDC", "250")
        .await;
    let _miner = BackgroundMiner::start(venue.chain.node.clone());
    let directory = tempfile::tempdir().unwrap();
    let auditor = start_guardian(
        &venue,
        &venue.client().base_url,
        directory.path(),
        &key_of(&venue.chain.guardian),
        &[],
    );
    // A root of the venue's with both accounts in its tree, checked good.
    let newest_epoch = loop {
        let epoch = root_count(&venue).await.max(1) - 1;
        let line = auditor
            .wait_for_line("a root checked", Duration::from_secs(60), |line| {
                line.starts_with(&format!("root {epoch} "))
            })
            .await;
        assert!(line.contains(" ok "), "{line}");
        if line.ends_with("leaves 2") || line.ends_with("leaves 3") {
            break epoch;
        }
        tokio::time::sleep(Duration::from_millis(200)).await;
    };

    // The stolen key copies the newest root (its root, position, deposit count and totals: the
    // replay agrees with all of it) with data that leaves out one account. A root of the venue's
    // may come first (each is at a later position): then the copy is of that one.
    let mut reader = ChainData::new(venue.chain.node.clone(), Some(&venue.chain.anvil.endpoint()), 10_000);
    let mut attempts = 0;
    let (copied_epoch, planted_epoch) = loop {
        let copied_epoch = root_count(&venue).await - 1;
        let mut data = reader.root_data(copied_epoch).await.unwrap();
        // An account the tree does not hold, listed with a balance: a rebuild from this data
        // would owe it, and the root would not come out.
        let stranger = dexd_core::Address::from_bytes([0xfe; 20]);
        assert!(data.accounts.iter().all(|listed| listed.account < stranger), "{data:?}");
        data.accounts.push(ListedAccount {
            account: stranger,
            leaves: vec![LiabilityLeaf {
                account: stranger,
                token: dexd_custody::vault::venue_address(&venue.chain.usdc),
                balance: USDC_UNIT,
                credited_deposits: 0,
                debited_withdrawals: 0,
            }],
        });
        let stored = vault_root(&venue, copied_epoch).await;
        let head = venue.chain.node.head().await.unwrap();
        let event = venue
            .chain
            .node
            .find_root_committed_event(copied_epoch, stored.committedAt.to(), (0, head), 10_000)
            .await
            .unwrap()
            .unwrap();
        let planted_data = data.encode();
        let planted_data_hash = alloy::primitives::keccak256(&planted_data);
        let plant = DexdVaultV2::commitRootWithDataCall {
            root: stored.root,
            journalSequence: stored.journalSequence,
            depositCount_: alloy::primitives::U256::from(stored.depositCount),
            tokens: event.tokens,
            totals: event.totals,
            data: planted_data.into(),
        };
        match deploy::send_and_wait(
            &venue.chain.node,
            &venue.chain.operator,
            TxKind::Call(venue.chain.vault),
            plant.abi_encode(),
            alloy::primitives::U256::ZERO,
        )
        .await
        {
            // A root of the venue's may be mined just after the copy, before the count is read:
            // the copy's epoch is the one whose data hash is the copy's data's.
            Ok(receipt) if receipt.succeeded => {
                let count = root_count(&venue).await;
                let mut planted = None;
                for epoch in copied_epoch + 1..count {
                    let data_hash = view(
                        &venue.chain,
                        DexdVaultV2::rootDataCall {
                            epoch: alloy::primitives::U256::from(epoch),
                        },
                    )
                    .await;
                    if data_hash == planted_data_hash {
                        planted = Some(epoch);
                    }
                }
                break (
                    copied_epoch,
                    planted.expect("the copy's data is in one of the roots after the copied one"),
                );
            }
            outcome => {
                attempts += 1;
                assert!(attempts < 10, "the copy was never taken: {outcome:?}");
            }
        }
    };
    assert_eq!(
        vault_root(&venue, planted_epoch).await.root,
        vault_root(&venue, copied_epoch).await.root
    );
    let line = auditor
        .wait_for_line("the copied root judged", Duration::from_secs(60), |line| {
            line.starts_with(&format!("root {planted_epoch} "))
        })
        .await;
    assert!(
        line.starts_with(&format!("root {planted_epoch} DATA-MISMATCH vetoed 0x")),
        "{line}"
    );
    assert!(line.contains("0 missing, 1 not to be listed"), "{line}");
    assert!(
        vault_root(&venue, planted_epoch).await.vetoed,
        "the veto is in the vault"
    );

    // The venue's next root, whose data may name the same root value as its previous, is good.
    let next = planted_epoch + 1;
    let line = auditor
        .wait_for_line("the next root judged", Duration::from_secs(60), |line| {
            line.starts_with(&format!("root {next} "))
        })
        .await;
    assert!(line.starts_with(&format!("root {next} ok ")), "{line}");
    assert!(!vault_root(&venue, next).await.vetoed);
    // Every root found good has its data archived, in the encoding the chain carried.
    let archive = directory
        .path()
        .join("root-data")
        .join(format!("chain-{}", venue.chain.chain_id));
    let archived: Vec<String> = std::fs::read_dir(&archive)
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    let original = reader.root_data(newest_epoch).await.unwrap();
    let name = format!("{newest_epoch:010}-{}.dxrd", alloy::hex::encode(original.root));
    assert!(archived.len() as u64 > newest_epoch, "{archived:?}");
    assert!(archived.contains(&name), "{archived:?}");
    assert_eq!(std::fs::read(archive.join(&name)).unwrap(), original.encode());
    assert!(!archived
        .iter()
        .any(|file| file.starts_with(&format!("{planted_epoch:010}-"))));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn data_no_beacon_node_serves_is_noted_once_no_veto_can_come() {
    // A challenge period of 2 s (the test terms); blocks keep coming so that it passes.
    let (venue, _alice) = VaultVenue::start_with_alice_funded(2).await;
    let _miner = BackgroundMiner::start(venue.chain.node.clone());
    let directory = tempfile::tempdir().unwrap();
    let mut arguments = vault_arguments(&venue);
    // Nothing listens there: every blob is missing.
    arguments.extend(["--beacon-url".into(), "http://127.0.0.1:9".into()]);
    let arguments: Vec<&str> = arguments.iter().map(String::as_str).collect();
    let auditor = RunningAuditor::start(
        &venue.client().base_url,
        venue.chain.chain_id,
        directory.path(),
        &arguments,
        &[],
    );
    let line = auditor
        .wait_for_line("root 0 decided", Duration::from_secs(60), |line| {
            line.starts_with("root 0 ")
        })
        .await;
    assert!(line.starts_with("root 0 ok journalSequence "), "{line}");
    assert!(
        line.contains("(its data not checked: the root's data could not be read"),
        "{line}"
    );
    assert!(!vault_root(&venue, 0).await.vetoed);
    // Nothing was archived that was not checked.
    let archive = directory
        .path()
        .join("root-data")
        .join(format!("chain-{}", venue.chain.chain_id));
    assert!(!archive.exists() || std::fs::read_dir(&archive).unwrap().next().is_none());
}
