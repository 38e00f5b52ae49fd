//! The public audit log on a ledger venue, and `dexd audit` (the real binary) reading it: every
//! kind of account command in both credential modes checks, state hashes included; a journal
//! tampered with (a command altered, one left out, a forged signature, a state hash) is
//! reported with its position; an auditor killed mid-way resumes without checking or counting
//! anything twice.

use crate::common;

use std::sync::Arc;

use common::auditor::RunningAuditor;
use common::signer::{eip712, Signer};
use common::{TestServer, Trader};

use super::every_way::trade_every_way;
use serde_json::{json, Value};

/// The journal of chain 1 as served: every line, from position 1.
async fn journal_lines(server: &TestServer) -> (Vec<String>, u64) {
    let mut lines = Vec::new();
    let mut from = 1u64;
    loop {
        let response = server
            .client
            .get(format!("{}/audit/journal", server.base_url))
            .query(&[("chainId", "1"), ("from", &from.to_string())])
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        assert_eq!(response.headers()["x-dexd-journal-format"], "2");
        let end: u64 = response.headers()["x-dexd-journal-end"]
            .to_str()
            .unwrap()
            .parse()
            .unwrap();
        let text = response.text().await.unwrap();
        let page: Vec<String> = text.lines().map(str::to_string).collect();
        let commands = page.iter().filter(|line| !line.contains("\"stateHash\"")).count() as u64;
        lines.extend(page);
        from += commands;
        if from > end {
            return (lines, end);
        }
        if commands == 0 {
            // The state hash of a multiple of 10,000 is not known yet.
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}

/// Runs `dexd audit --once` against `venue` with the directory `dir`; its success, standard
/// output and standard error.
pub(crate) async fn audit_once(venue: &str, dir: &std::path::Path) -> (bool, String, String) {
    let output = audit_once_with(venue, dir, &[]).await;
    (
        output.status.success(),
        String::from_utf8_lossy(&output.stdout).into_owned(),
        String::from_utf8_lossy(&output.stderr).into_owned(),
    )
}

/// Runs `dexd audit --once` against `venue` with the directory `dir` and the arguments `more`.
pub(super) async fn audit_once_with(venue: &str, dir: &std::path::Path, more: &[&str]) -> std::process::Output {
    tokio::process::Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args([
            "audit",
            "--venue",
            venue,
            "--chain-id",
            "1",
            "--once",
            "--poll-interval-ms",
            "20",
            "--dir",
        ])
        .arg(dir)
        .args(more)
        .output()
        .await
        .unwrap()
}

pub(super) async fn post_ok(server: &TestServer, path: &str, body: Value) -> Value {
    let (status, answer) = server.post_json(path, body).await;
    assert_eq!(status, 200, "{path}: {answer}");
    answer
}

/// Batches of resting orders, each cancelled by a cancel all, until the journal passes `until`.
async fn fill_journal(server: &TestServer, until: u64) {
    let bulk = Trader::new(0xb1);
    server.deposit(&bulk, "USDC", "100000000").await;
    let orders: Vec<Value> = (0..50)
        .map(|index| {
            json!({"symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": format!("{}", 100 + index), "amount": "0.01"})
        })
        .collect();
    loop {
        let response = server
            .client
            .post(format!("{}/order/batchOrders", server.base_url))
            .json(&json!({"chainId": "1", "privateKey": bulk.key, "orders": orders}))
            .send()
            .await
            .unwrap();
        assert_eq!(response.status(), 200);
        let sequence: u64 = response.headers()["x-dexd-sequence"].to_str().unwrap().parse().unwrap();
        post_ok(
            server,
            "/order/cancelAll",
            json!({"chainId": "1", "privateKey": bulk.key}),
        )
        .await;
        if sequence > until {
            return;
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_command_of_a_ledger_venue_checks_with_its_state_hashes() {
    let server = TestServer::start().await;
    let deposits = trade_every_way(&server).await + 1;
    fill_journal(&server, 10_050).await;
    let (lines, end) = journal_lines(&server).await;
    assert!(end > 10_050);
    // The configuration first, a state hash right after position 10,000, every account
    // command signed.
    let first: Value = serde_json::from_str(&lines[0]).unwrap();
    assert_eq!(first["command"]["type"], "configure");
    assert_eq!(first["authorization"]["kind"], "system");
    let hash_at = lines.iter().position(|line| line.contains("\"stateHash\"")).unwrap();
    let before: Value = serde_json::from_str(&lines[hash_at - 1]).unwrap();
    let hash: Value = serde_json::from_str(&lines[hash_at]).unwrap();
    assert_eq!(
        (before["sequence"].as_u64(), hash["sequence"].as_u64()),
        (Some(10_000), Some(10_000))
    );
    for line in &lines {
        let line: Value = serde_json::from_str(line).unwrap();
        if line["command"]["account"].is_string() || line["command"]["type"] == "byAgent" {
            assert_eq!(line["authorization"]["kind"], "eip712", "{line}");
        }
    }
    // Past the end: no lines (far past it: Carol's switch may fire meanwhile and journal one
    // more command). In ledger mode: no roots.
    let past = server
        .client
        .get(format!(
            "{}/audit/journal?chainId=1&from={}",
            server.base_url,
            end + 1_000_000
        ))
        .send()
        .await
        .unwrap();
    assert_eq!(past.status(), 200);
    assert!(past.text().await.unwrap().is_empty());
    let (status, roots) = server.get("/audit/roots", &[("chainId", "1")]).await;
    assert_eq!(
        (status, roots["roots"].as_array().map(Vec::len)),
        (200, Some(0)),
        "{roots}"
    );

    let directory = tempfile::tempdir().unwrap();
    let (held, output, errors) = audit_once(&server.base_url, directory.path()).await;
    assert!(held, "{output}\n{errors}");
    assert!(!output.contains("FAIL"), "{output}");
    assert!(
        output.contains(&format!("ledger deposits: {deposits} not checkable against a chain")),
        "{output}"
    );
}

/// A venue that serves `lines` as its journal (honouring `from` and `limit`, and `segment`), as
/// a venue that tampered with its own would: each page gives a batch's order hashes on its first
/// line of the batch, as the format has it.
pub(super) async fn serve_journal(lines: Vec<String>, end: u64) -> String {
    serve_journal_padded(lines, end, usize::MAX).await
}

/// [`serve_journal`], with every page of more than `padded_over` commands (segments included)
/// made larger than a page may be by 17 MiB of empty lines.
async fn serve_journal_padded(lines: Vec<String>, end: u64, padded_over: usize) -> String {
    let lines = Arc::new(lines);
    let router = axum::Router::new().route(
        "/audit/journal",
        axum::routing::get(move |axum::extract::RawQuery(query): axum::extract::RawQuery| {
            let lines = Arc::clone(&lines);
            let query: std::collections::HashMap<String, String> =
                form_urlencoded::parse(query.unwrap_or_default().as_bytes())
                    .into_owned()
                    .collect();
            async move {
                let segment: Option<u64> = query.get("segment").and_then(|segment| segment.parse().ok());
                let from: u64 = match segment {
                    Some(segment) => segment * 10_000 + 1,
                    None => query.get("from").and_then(|from| from.parse().ok()).unwrap_or(1),
                };
                let limit: usize = query
                    .get("limit")
                    .and_then(|limit| limit.parse().ok())
                    .unwrap_or(10_000);
                let mut page = Vec::new();
                let mut commands = 0;
                for line in lines.iter() {
                    let value: Value = serde_json::from_str(line).unwrap();
                    if value["sequence"].as_u64().unwrap() < from {
                        continue;
                    }
                    let is_command = value.get("stateHash").is_none();
                    if is_command && commands == limit {
                        break;
                    }
                    commands += usize::from(is_command);
                    page.push(value);
                }
                let mut body = paged(&lines, page);
                if commands > padded_over || (segment.is_some() && padded_over < 10_000) {
                    body.push_str(&"\n".repeat(17 * 1024 * 1024));
                }
                (
                    [
                        ("x-dexd-journal-format", "2".to_string()),
                        ("x-dexd-journal-end", end.to_string()),
                    ],
                    body,
                )
            }
        }),
    );
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let address = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, router).await.unwrap() });
    format!("http://{address}")
}

/// A page of `page`'s lines as the format gives it: a batch's order hashes on the first line of
/// each run of its lines (taken from the first line of `all` that has them), on no other.
fn paged(all: &[String], page: Vec<Value>) -> String {
    let mut hashes_by_signature = std::collections::HashMap::new();
    for line in all {
        let value: Value = serde_json::from_str(line).unwrap();
        let authorization = &value["authorization"];
        if !authorization["batch"]["orderHashes"].is_null() {
            hashes_by_signature
                .entry(authorization["signature"].to_string())
                .or_insert_with(|| authorization["batch"]["orderHashes"].clone());
        }
    }
    let mut body = String::new();
    let mut last_signature = None;
    for mut value in page {
        if value["authorization"]["batch"].is_object() {
            let signature = value["authorization"]["signature"].to_string();
            if last_signature.as_ref() == Some(&signature) {
                value["authorization"]["batch"]
                    .as_object_mut()
                    .unwrap()
                    .remove("orderHashes");
            } else if value["authorization"]["batch"]["orderHashes"].is_null() {
                value["authorization"]["batch"]["orderHashes"] = hashes_by_signature[&signature].clone();
            }
            last_signature = Some(signature);
        }
        body.push_str(&value.to_string());
        body.push('\n');
    }
    body
}

fn find(lines: &[String], matches: impl Fn(&Value) -> bool) -> usize {
    lines
        .iter()
        .position(|line| matches(&serde_json::from_str(line).unwrap()))
        .unwrap()
}

fn sequence_of(line: &str) -> u64 {
    serde_json::from_str::<Value>(line).unwrap()["sequence"]
        .as_u64()
        .unwrap()
}

/// A line re-rendered from a changed command, as a venue that altered it would serve it: its
/// fields and bytes agree, its signature is the original one.
fn altered(line: &str, change: impl FnOnce(&mut dexd_core::Command)) -> String {
    let dexd::audit::format::JournalLine::Command(parsed) = dexd::audit::format::parse_line(line).unwrap() else {
        panic!("a command line")
    };
    let authorization = parsed.journal_authorization();
    let mut command = parsed.command;
    change(&mut command);
    let config = dexd_venue::config::Config::embedded_default();
    let chain = config.chains.iter().find(|chain| chain.chain_id == 1).unwrap();
    let messages = dexd_crypto::RequestMessages::new(&chain.configuration(&config.limits)).unwrap();
    dexd::audit::format::command_line(
        parsed.sequence,
        parsed.time_ms,
        &command,
        authorization.as_ref(),
        &messages,
    )
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tampered_journal_is_reported_with_the_position() {
    let server = TestServer::start().await;
    trade_every_way(&server).await;
    let (lines, end) = journal_lines(&server).await;
    let honest = serve_journal(lines.clone(), end).await;
    let directory = tempfile::tempdir().unwrap();
    let (held, output, errors) = audit_once(&honest, directory.path()).await;
    assert!(held, "the honest copy checks: {output}\n{errors}");

    let carol_deposit = find(&lines, |line| {
        line["command"]["type"] == "deposit" && line["authorization"]["clientSigned"] == true
    });
    let order = find(&lines, |line| line["command"]["type"] == "placeOrder");
    let withdrawal = find(&lines, |line| line["command"]["type"] == "withdraw");
    let mut cases: Vec<(&str, Vec<String>, u64)> = Vec::new();
    // A deposit's amount raised, its fields and bytes made to agree.
    let mut raised = lines.clone();
    raised[carol_deposit] = altered(&lines[carol_deposit], |command| {
        if let dexd_core::Command::Deposit(request) = command {
            request.amount = dexd_core::Amount::from_units(request.amount.units() * 10);
        }
    });
    cases.push(("a deposit raised", raised, sequence_of(&lines[carol_deposit])));
    // A command left out.
    let mut gap = lines.clone();
    gap.remove(order);
    cases.push(("a command left out", gap, sequence_of(&lines[order])));
    // A withdrawal signed by another key over the same message.
    let mut forged = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[withdrawal]).unwrap();
    let mallory = Signer::new(0x66);
    let (signature, _) = mallory.sign(
        &eip712(&server).await,
        "Withdraw",
        value["authorization"]["message"].clone(),
    );
    value["authorization"]["signature"] = json!(signature);
    forged[withdrawal] = value.to_string();
    cases.push(("a forged signature", forged, sequence_of(&lines[withdrawal])));
    // The command's fields changed, its bytes not.
    let mut fields = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[order]).unwrap();
    value["command"]["price"] = json!("1");
    fields[order] = value.to_string();
    cases.push(("the fields unlike the bytes", fields, sequence_of(&lines[order])));

    // A batch signed once: its claim of the nonce dropped (its orders could then be placed
    // again), or the hashes of its orders changed (the signature is of another batch).
    let claimant = find(&lines, |line| line["authorization"]["batch"]["claimsNonce"] == true);
    let mut unclaimed = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[claimant]).unwrap();
    value["authorization"]["batch"]["claimsNonce"] = json!(false);
    unclaimed[claimant] = value.to_string();
    cases.push((
        "a batch's nonce claim dropped",
        unclaimed,
        sequence_of(&lines[claimant]),
    ));
    // The page gives the batch's hashes once, on its first line: another order's hash changed
    // there makes the signature another batch's.
    let follower = claimant + 1;
    let value: Value = serde_json::from_str(&lines[follower]).unwrap();
    assert_eq!(value["authorization"]["batch"]["claimsNonce"], false, "{value}");
    assert!(
        value["authorization"]["batch"]["orderHashes"].is_null(),
        "given once: {value}"
    );
    let mut rehashed = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[claimant]).unwrap();
    value["authorization"]["batch"]["orderHashes"][1] = json!(format!("0x{}", "11".repeat(32)));
    rehashed[claimant] = value.to_string();
    cases.push(("a batch's other order changed", rehashed, sequence_of(&lines[claimant])));
    // A filled order of a batch journaled again right after its batch, following the same
    // claim: the same order placed twice (what a client's retry did before each order of a
    // batch was held to the claim in the engine).
    let filled = find(&lines, |line| {
        line["authorization"]["batch"]["claimsNonce"] == false && line["command"]["timeInForce"] == "IOC"
    });
    let mut replayed = lines.clone();
    let mut value: Value = serde_json::from_str(&lines[filled]).unwrap();
    let next: Value = serde_json::from_str(&lines[filled + 1]).unwrap();
    value["sequence"] = next["sequence"].clone();
    value["time"] = next["time"].clone();
    replayed[filled + 1] = value.to_string();
    cases.push((
        "a batch's filled order placed again",
        replayed,
        sequence_of(&lines[filled + 1]),
    ));

    // Every account command is bound to its signer. A cancel all the venue signed with alice's
    // key, journaled again in place of the next line (it would cancel her new orders), and
    // carol's own cancel all relabelled as the venue's (so that its nonce would not count):
    // the first reuses its nonce, the second's expiry is ten minutes from its time, beyond the
    // venue's window.
    for (what, client_signed) in [
        ("a venue-signed command journaled again", false),
        ("a client's command relabelled as the venue's", true),
    ] {
        let original = find(&lines, |line| {
            line["command"]["type"] == "cancelAll" && line["authorization"]["clientSigned"] == client_signed
        });
        let mut copied = lines.clone();
        let mut value: Value = serde_json::from_str(&lines[original]).unwrap();
        let next: Value = serde_json::from_str(&lines[original + 1]).unwrap();
        value["sequence"] = next["sequence"].clone();
        value["time"] = next["time"].clone();
        value["authorization"]["clientSigned"] = json!(false);
        copied[original + 1] = value.to_string();
        cases.push((what, copied, sequence_of(&lines[original + 1])));
    }

    // A configuration that raises a fee at once, journaled in place of a command (the review's
    // `configure(takerFee=100%)`, a victim's fill, `configure(back)`): a raise must be announced
    // a notice ahead, so the replay refuses it.
    let mut gouging = lines.clone();
    let config = dexd_venue::config::Config::embedded_default();
    let chain = config.chains.iter().find(|chain| chain.chain_id == 1).unwrap();
    let mut raised = chain.configuration(&config.limits);
    raised.engine.pairs[0].taker_fee = dexd_core::FeeRate::from_parts_per_million(1_000_000).unwrap();
    let messages = dexd_crypto::RequestMessages::new(&raised).unwrap();
    let replaced: Value = serde_json::from_str(&lines[order]).unwrap();
    gouging[order] = dexd::audit::format::command_line(
        sequence_of(&lines[order]),
        replaced["time"].as_u64().unwrap(),
        &dexd_core::Command::Configure(Box::new(raised)),
        None,
        &messages,
    )
    .to_string();
    cases.push(("a fee raised at once", gouging, sequence_of(&lines[order])));

    for (what, tampered, position) in cases {
        let venue = serve_journal(tampered, end).await;
        let directory = tempfile::tempdir().unwrap();
        let (held, output, errors) = audit_once(&venue, directory.path()).await;
        assert!(!held, "{what}: {output}\n{errors}");
        assert!(output.contains(&format!("FAIL {position} ")), "{what}: {output}");
        // The copy holds what checked, and nothing from the failure on.
        let copy = dexd_store::JournalReader::open(directory.path(), 1).unwrap();
        let mut copy: Box<dyn dexd_store::JournalRead> = Box::new(copy);
        assert_eq!(copy.last_sequence().unwrap(), position - 1, "{what}");
    }
}

/// A page over the size bound is not the end: the auditor asks for it again with fewer
/// commands, so no line size can stop it (a segment too large is read in pages too).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_page_over_the_size_bound_is_read_again_in_smaller_pages() {
    let server = TestServer::start().await;
    trade_every_way(&server).await;
    let (lines, end) = journal_lines(&server).await;
    let venue = serve_journal_padded(lines, end, 4).await;
    let directory = tempfile::tempdir().unwrap();
    let (held, output, errors) = audit_once(&venue, directory.path()).await;
    assert!(held, "{output}\n{errors}");
    let copy = dexd_store::JournalReader::open(directory.path(), 1).unwrap();
    let mut copy: Box<dyn dexd_store::JournalRead> = Box::new(copy);
    assert_eq!(copy.last_sequence().unwrap(), end);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_auditor_killed_mid_way_resumes_without_checking_twice() {
    let server = TestServer::start().await;
    let deposits = trade_every_way(&server).await + 1;
    fill_journal(&server, 12_000).await;
    let (_, end) = journal_lines(&server).await;
    let directory = tempfile::tempdir().unwrap();
    // Following, 500 commands a page: killed once it has checked some.
    let mut follower = RunningAuditor::start(&server.base_url, 1, directory.path(), &["--page-commands", "500"], &[]);
    let copy_path = directory.path().join("chain-1.sqlite3");
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(120);
    loop {
        let checked = follower.checked_through();
        if copy_path.exists() && checked > 0 && checked < end {
            break;
        }
        assert!(checked < end, "the auditor finished before it could be killed");
        assert!(std::time::Instant::now() < deadline, "the auditor checked nothing");
        tokio::time::sleep(std::time::Duration::from_millis(5)).await;
    }
    follower.kill();
    let (held, output, errors) = audit_once(&server.base_url, directory.path()).await;
    assert!(held, "{output}\n{errors}");
    // Each deposit counted once, across the two runs.
    assert!(
        output.contains(&format!("ledger deposits: {deposits} not checkable against a chain")),
        "{output}"
    );
    let reader = dexd_store::JournalReader::open(directory.path(), 1).unwrap();
    let mut reader: Box<dyn dexd_store::JournalRead> = Box::new(reader);
    assert_eq!(reader.last_sequence().unwrap(), end);
}
