//! The PostgreSQL journal and leases against a real server (Debian's PostgreSQL, started by
//! [`super::test_server`]): appends read back in order and replayed, custody bound, and the
//! fence: a stale leader's append changes nothing, even racing a takeover.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::Duration;

use dexd_core::Address;

use super::test_server::PostgresServer;
use super::{connect, lease, Connection, PostgresJournal};
use crate::codec;
use crate::database::StoreError;
use crate::journal_interface::{replay, CommandRange, Journal, JournalRead};
use crate::records::JournalEntry;

fn deposits(from_sequence: u64, count: u64) -> Vec<JournalEntry> {
    (from_sequence..from_sequence + count)
        .map(|sequence| JournalEntry {
            sequence,
            time_ms: 1_000 + sequence,
            command: codec::encode_command(&crate::tests::deposit(
                Address::from_bytes([0xa1; 20]),
                1,
                u128::from(sequence),
            )),
            authorization: None,
        })
        .collect()
}

fn leading_journal(
    server: &PostgresServer,
    chain_id: u64,
    holder: &str,
    lease_ms: u64,
) -> (PostgresJournal, lease::Lease) {
    let mut client = connect(&server.url()).unwrap();
    let lease = lease::take(&mut client, chain_id, holder, lease_ms)
        .unwrap()
        .expect("the lease is free");
    let mut journal = PostgresJournal::open(Connection::open(&server.url()).unwrap(), chain_id).unwrap();
    journal.lead_under(Some(lease.epoch));
    (journal, lease)
}

fn sequences_and_epochs(server: &PostgresServer, chain_id: u64) -> Vec<(i64, i64)> {
    sequences_and_epochs_at(&server.url(), chain_id)
}

fn sequences_and_epochs_at(url: &str, chain_id: u64) -> Vec<(i64, i64)> {
    let mut client = connect(url).unwrap();
    client
        .query(
            "SELECT sequence, epoch FROM dexd_journal WHERE chain_id = $1 ORDER BY sequence",
            &[&(chain_id as i64)],
        )
        .unwrap()
        .iter()
        .map(|row| (row.get(0), row.get(1)))
        .collect()
}

#[test]
fn appends_are_read_back_in_order_and_replay_to_the_same_engine() {
    let server = PostgresServer::start();
    let (mut journal, _lease) = leading_journal(&server, 1, "node-a", 60_000);
    let journal_id = journal.journal_id().unwrap();
    assert_eq!(journal_id.len(), 32);
    journal.append(&deposits(1, 3)).unwrap();
    journal.append(&deposits(4, 2)).unwrap();
    assert_eq!(journal.last_sequence().unwrap(), 5);
    let mut read = Vec::new();
    let last = journal
        .for_each_command(
            CommandRange {
                through: 4,
                ..CommandRange::after(1)
            },
            &mut |command| {
                read.push((command.sequence, command.time_ms));
                Ok(())
            },
        )
        .unwrap();
    assert_eq!(last, 4);
    assert_eq!(read, vec![(2, 1_002), (3, 1_003), (4, 1_004)]);
    let replayed = replay(&mut journal, &crate::test_config::engine_config(), None).unwrap();
    assert_eq!(replayed.last_sequence, 5);
    let balance = replayed
        .engine
        .balance(&Address::from_bytes([0xa1; 20]), dexd_core::AssetIndex(1));
    assert_eq!(balance.total().units(), 1 + 2 + 3 + 4 + 5);

    // Another chain is another journal, with its own identity; the first keeps its own.
    let mut other = PostgresJournal::open(Connection::open(&server.url()).unwrap(), 2).unwrap();
    assert_eq!(other.last_sequence().unwrap(), 0);
    assert_ne!(other.journal_id().unwrap(), journal_id);
    let mut reopened = PostgresJournal::open(Connection::open(&server.url()).unwrap(), 1).unwrap();
    assert_eq!(reopened.journal_id().unwrap(), journal_id);
    assert_eq!(reopened.last_sequence().unwrap(), 5);
}

#[test]
fn a_batch_s_hashes_are_stored_once_and_read_back_whole() {
    let server = PostgresServer::start();
    let (mut journal, _lease) = leading_journal(&server, 1, "node-a", 60_000);
    journal.append(&deposits(1, 3)).unwrap();
    crate::batch_references_tests::batch_hashes_are_written_once_and_read_back_whole(&mut journal);
    let mut client = connect(&server.url()).unwrap();
    let holders: i64 = client
        .query_one(
            "SELECT count(*) FROM dexd_journal WHERE chain_id = 1 AND length(authorization_record) > 600",
            &[],
        )
        .unwrap()
        .get(0);
    assert_eq!(holders, 1, "of the twenty orders of a batch, one row holds its hashes");
}

#[test]
fn a_journal_is_bound_to_its_custody() {
    let server = PostgresServer::start();
    let mut journal = PostgresJournal::open(Connection::open(&server.url()).unwrap(), 7).unwrap();
    journal.bind_custody("ledger").unwrap();
    journal.bind_custody("ledger").unwrap();
    let refused = journal.bind_custody("vault 0xabc on chain 7").unwrap_err();
    assert!(
        matches!(&refused, StoreError::Inconsistent(message) if message.contains("ledger") && message.contains("0xabc")),
        "{refused}"
    );
}

#[test]
fn a_node_without_the_lease_or_with_an_old_epoch_never_appends() {
    let server = PostgresServer::start();
    // Without any epoch, nothing is appended.
    let mut unled = PostgresJournal::open(Connection::open(&server.url()).unwrap(), 1).unwrap();
    assert!(matches!(unled.append(&deposits(1, 1)), Err(StoreError::Fenced(_))));

    let (mut first, first_lease) = leading_journal(&server, 1, "node-a", 300);
    assert_eq!(first_lease.epoch, 1);
    first.append(&deposits(1, 2)).unwrap();
    // While its lease lasts, no one else takes it.
    let mut client_b = connect(&server.url()).unwrap();
    assert_eq!(lease::take(&mut client_b, 1, "node-b", 300).unwrap(), None);
    let holder = lease::holder(&mut client_b, 1).unwrap().unwrap();
    assert_eq!((holder.holder.as_str(), holder.epoch), ("node-a", 1));
    assert!(holder.remaining_ms > 0 && holder.remaining_ms <= 300, "{holder:?}");

    // node-a stalls past its lease; node-b takes the chain under a new epoch.
    std::thread::sleep(Duration::from_millis(400));
    let second_lease = lease::take(&mut client_b, 1, "node-b", 60_000).unwrap().unwrap();
    assert_eq!(second_lease.epoch, 2);
    let mut second = PostgresJournal::open(Connection::open(&server.url()).unwrap(), 1).unwrap();
    second.lead_under(Some(second_lease.epoch));

    // node-a wakes: its append (even at the right place) and its renewal are refused.
    let refused = first.append(&deposits(3, 1)).unwrap_err();
    assert!(
        matches!(&refused, StoreError::Fenced(message) if message.contains("node-b") && message.contains("epoch 2")),
        "{refused}"
    );
    let mut client_a = connect(&server.url()).unwrap();
    assert!(!lease::renew(&mut client_a, &first_lease, 300).unwrap());
    assert!(lease::renew(&mut client_a, &second_lease, 60_000).unwrap());
    second.append(&deposits(3, 1)).unwrap();
    // A batch at the wrong place is refused too: the journal ends at 3.
    let misplaced = second.append(&deposits(3, 1)).unwrap_err();
    assert!(
        matches!(&misplaced, StoreError::Fenced(message) if message.contains("ends at 3")),
        "{misplaced}"
    );
    assert_eq!(sequences_and_epochs(&server, 1), vec![(1, 1), (2, 1), (3, 2)]);
}

#[test]
fn a_released_lease_is_taken_at_once_and_a_restarted_holder_gets_a_new_epoch() {
    let server = PostgresServer::start();
    let mut client = connect(&server.url()).unwrap();
    let first = lease::take(&mut client, 1, "node-a", 60_000).unwrap().unwrap();
    // The same node again (after a restart): a new epoch, so its old self is fenced.
    let again = lease::take(&mut client, 1, "node-a", 60_000).unwrap().unwrap();
    assert_eq!(again.epoch, first.epoch + 1);
    lease::release(&mut client, &again).unwrap();
    let taken = lease::take(&mut client, 1, "node-b", 60_000).unwrap().unwrap();
    assert_eq!(taken.epoch, again.epoch + 1);
}

/// A leader appends as fast as it can while another node takes its chain over: every batch
/// the old leader had acknowledged is in the journal, under its epoch; nothing of its epoch
/// comes after the new leader's first command; and the journal has no gap.
#[test]
fn a_takeover_racing_appends_leaves_one_history_without_gaps() {
    let server = PostgresServer::start();
    for round in 0..3u64 {
        let chain_id = 10 + round;
        let (mut old, _old_lease) = leading_journal(&server, chain_id, "node-a", 150);
        let stop = Arc::new(AtomicBool::new(false));
        let appender = {
            let stop = Arc::clone(&stop);
            std::thread::spawn(move || {
                let mut acknowledged = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    match old.append(&deposits(acknowledged + 1, 5)) {
                        Ok(()) => acknowledged += 5,
                        Err(StoreError::Fenced(_)) => break,
                        Err(error) => panic!("{error}"),
                    }
                }
                acknowledged
            })
        };
        let mut client = connect(&server.url()).unwrap();
        let new_lease = loop {
            if let Some(lease) = lease::take(&mut client, chain_id, "node-b", 60_000).unwrap() {
                break lease;
            }
            std::thread::sleep(Duration::from_millis(5 + round * 7));
        };
        let mut new = PostgresJournal::open(Connection::open(&server.url()).unwrap(), chain_id).unwrap();
        new.lead_under(Some(new_lease.epoch));
        let start = new.last_sequence().unwrap() + 1;
        new.append(&deposits(start, 5)).unwrap();
        let acknowledged_by_old = appender.join().unwrap();
        stop.store(true, Ordering::Relaxed);
        let rows = sequences_and_epochs(&server, chain_id);
        assert!(acknowledged_by_old > 0, "the old leader appended before the takeover");
        for (index, (sequence, epoch)) in rows.iter().enumerate() {
            assert_eq!(*sequence, index as i64 + 1, "no gap");
            let expected_epoch = if (*sequence as u64) < start {
                1
            } else {
                new_lease.epoch as i64
            };
            assert_eq!(*epoch, expected_epoch, "sequence {sequence}");
        }
        assert_eq!(
            start - 1,
            acknowledged_by_old,
            "every acknowledged batch, and only those, of the old epoch"
        );
        assert_eq!(rows.len() as u64, start + 4);
    }
}

/// The primary stops at once (`-m immediate`) and its synchronous standby is promoted: the
/// journal, on a URL naming both hosts, connects again to the new primary, where every append
/// it had acknowledged is, and goes on appending under the same lease.
#[test]
fn a_journal_goes_on_on_the_promoted_standby_with_every_acknowledged_append() {
    let mut primary = PostgresServer::start_primary();
    let standby = PostgresServer::start_standby_of(&primary);
    let url = format!(
        "postgresql://dexd@127.0.0.1:{},127.0.0.1:{}/postgres?target_session_attrs=read-write",
        primary.port, standby.port
    );
    let mut client = connect(&url).unwrap();
    let held = lease::take(&mut client, 1, "node-a", 60_000).unwrap().unwrap();
    let mut journal = PostgresJournal::open(Connection::open(&url).unwrap(), 1).unwrap();
    journal.lead_under(Some(held.epoch));
    for start in (1..=40).step_by(8) {
        journal.append(&deposits(start, 8)).unwrap();
    }
    primary.stop_immediately();
    assert!(
        journal.append(&deposits(41, 4)).is_err(),
        "no primary, nothing acknowledged"
    );
    assert!(
        journal.last_sequence().is_err(),
        "the standby is read-only until promoted"
    );
    standby.promote();
    assert_eq!(
        journal.last_sequence().unwrap(),
        40,
        "every acknowledged append is there"
    );
    journal.append(&deposits(41, 4)).unwrap();
    assert_eq!(
        sequences_and_epochs_at(&url, 1),
        (1..=44)
            .map(|sequence| (sequence, held.epoch as i64))
            .collect::<Vec<_>>()
    );
}

/// The chains are dealt to the alive nodes in turn, by id; a node that stops beating drops out.
#[test]
fn chains_are_dealt_to_the_alive_nodes_in_turn() {
    let server = PostgresServer::start();
    let mut client = connect(&server.url()).unwrap();
    for chain_id in [42161, 1, 11155111] {
        PostgresJournal::open(Connection::open(&server.url()).unwrap(), chain_id).unwrap();
    }
    assert_eq!(
        super::directory::preferred_leader(&mut client, 1, 60_000).unwrap(),
        None,
        "no node alive"
    );
    for node in ["node-b", "node-a"] {
        super::directory::announce(&mut client, node, "http://127.0.0.1:1").unwrap();
    }
    let preferred = |client: &mut postgres::Client, alive_within_ms| {
        [1, 42161, 11155111].map(|chain_id| {
            super::directory::preferred_leader(client, chain_id, alive_within_ms)
                .unwrap()
                .unwrap()
        })
    };
    assert_eq!(preferred(&mut client, 60_000), ["node-a", "node-b", "node-a"]);
    // node-b's beat is older than the window: only node-a is alive.
    std::thread::sleep(Duration::from_millis(300));
    super::directory::announce(&mut client, "node-a", "http://127.0.0.1:1").unwrap();
    assert_eq!(preferred(&mut client, 200), ["node-a", "node-a", "node-a"]);
    assert_eq!(
        super::directory::preferred_leader(&mut client, 5, 60_000).unwrap(),
        None,
        "no journal"
    );
}

/// A CA and a server certificate for 127.0.0.1 signed by it, written into a folder the server's
/// user owns (the key readable by it only, as PostgreSQL demands): the folder, and the CA's PEM.
fn tls_files() -> (tempfile::TempDir, std::path::PathBuf) {
    use std::os::unix::fs::PermissionsExt;
    let folder = super::test_server::server_folder();
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut ca_params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    ca_params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let ca = ca_params.self_signed(&ca_key).unwrap();
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&server_key, &ca, &ca_key)
        .unwrap();
    let write = |name: &str, text: String| {
        let path = folder.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        let _ = std::process::Command::new("chown")
            .arg("postgres:postgres")
            .arg(&path)
            .status();
        path
    };
    write("server.crt", server.pem());
    write("server.key", server_key.serialize_pem());
    let ca_file = folder.path().join("ca.pem");
    std::fs::write(&ca_file, ca.pem()).unwrap();
    (folder, ca_file)
}

/// `sslmode=require` is TLS, verified: against `sslrootcert` it connects (and the server sees
/// TLS); without a root that signed the server's certificate it is refused; and a server
/// without TLS is refused rather than spoken to in clear.
#[test]
fn sslmode_require_is_verified_tls() {
    let (files, ca_file) = tls_files();
    let cert = files.path().join("server.crt");
    let key = files.path().join("server.key");
    let server = PostgresServer::start_with(&[
        "ssl=on",
        &format!("ssl_cert_file={}", cert.display()),
        &format!("ssl_key_file={}", key.display()),
    ]);
    let verified = format!("{}?sslmode=require&sslrootcert={}", server.url(), ca_file.display());
    let mut client = connect(&verified).unwrap();
    let row = client
        .query_one("SELECT ssl FROM pg_stat_ssl WHERE pid = pg_backend_pid()", &[])
        .unwrap();
    assert!(row.get::<_, bool>(0), "the session is TLS");
    let mut journal = PostgresJournal::open(Connection::open(&verified).unwrap(), 1).unwrap();
    assert_eq!(journal.last_sequence().unwrap(), 0);
    // The same in the key=value form.
    let key_value = format!(
        "host=127.0.0.1 port={} user=dexd dbname=postgres sslmode=require sslrootcert={}",
        server.port,
        ca_file.display()
    );
    connect(&key_value).unwrap();

    let unverified = connect(&format!("{}?sslmode=require", server.url()))
        .err()
        .expect("an unverified server is refused");
    assert!(unverified.to_string().contains("TLS"), "{unverified}");
    let clear_only = PostgresServer::start();
    let refused = connect(&format!(
        "{}?sslmode=require&sslrootcert={}",
        clear_only.url(),
        ca_file.display()
    ));
    assert!(refused.is_err(), "a server without TLS is not spoken to in clear");
    let missing = connect(&format!(
        "{}?sslmode=require&sslrootcert=/nonexistent.pem",
        server.url()
    ))
    .err()
    .expect("a missing root file is an error");
    assert!(missing.to_string().contains("/nonexistent.pem"), "{missing}");
}
