//! A data directory that stops taking writes, as when the disk fills: the real binary under a
//! file size limit (`RLIMIT_FSIZE`, lowered and raised from outside with `prlimit`, which binds
//! root too, unlike file permissions). Every write past the limit fails in the kernel, as on a
//! full disk. The venue must answer 503 `UNAVAILABLE`, apply nothing, keep serving reads, resume
//! writing when the limit is raised, and lose nothing across a SIGKILL afterwards. Also the other
//! way a process leaves its data directory: a graceful stop (SIGTERM), after which the history,
//! written without syncs while running, must be on disk and marked closed cleanly.

use crate::common;

use std::time::Duration;

use common::{assert_error, BinaryServer, TestServer, Trader};
use serde_json::{json, Value};

/// Sets the soft file size limit of process `pid`, keeping its hard limit; `None` raises it to
/// the hard limit.
fn set_file_size_limit(pid: u32, soft_bytes: Option<u64>) {
    let pid = libc::pid_t::try_from(pid).unwrap();
    let mut current = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: prlimit reads and writes only the two rlimit structs, which outlive the calls.
    let read = unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, std::ptr::null(), &mut current) };
    assert_eq!(read, 0, "prlimit (read): {}", std::io::Error::last_os_error());
    let limit = libc::rlimit {
        rlim_cur: soft_bytes.map_or(current.rlim_max, |bytes| bytes.min(current.rlim_max)),
        rlim_max: current.rlim_max,
    };
    // SAFETY: as above.
    let written = unsafe { libc::prlimit(pid, libc::RLIMIT_FSIZE, &limit, std::ptr::null_mut()) };
    assert_eq!(written, 0, "prlimit (write): {}", std::io::Error::last_os_error());
}

async fn deposits(client: &TestServer, trader: &Trader) -> Vec<Value> {
    client
        .account_list("/portfolio/depositHistories", trader, "deposits")
        .await
}

async fn open_orders(client: &TestServer, trader: &Trader) -> Vec<Value> {
    client.account_list("/order/openOrders", trader, "orders").await
}

async fn assert_balance(client: &TestServer, trader: &Trader, total: &str, locked: &str) {
    let balance = client.balance(trader, "USDC").await;
    assert_eq!(
        (balance["total"].as_str(), balance["locked"].as_str()),
        (Some(total), Some(locked)),
        "{balance}"
    );
}

#[tokio::test]
async fn a_data_directory_that_takes_no_writes_answers_503_keeps_reads_and_recovers() {
    let data_dir = tempfile::tempdir().unwrap();
    let server = BinaryServer::start(data_dir.path());
    let client = TestServer::at(&server.base_url);
    let alice = Trader::new(0xa1);
    client.deposit(&alice, "USDC", "100").await;
    // The history has the first deposit before the disk fills.
    assert_eq!(deposits(&client, &alice).await.len(), 1);

    set_file_size_limit(server.child.id(), Some(4_096));
    let deposit =
        json!({"chainId": "1", "from": alice.address, "symbol": "USDC", "quantity": "5", "privateKey": alice.key});
    let order = json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy",
        "price": "10", "amount": "1", "privateKey": alice.key});
    for _ in 0..3 {
        let refused = client.post_json("/portfolio/deposit", deposit.clone()).await;
        assert_error(&refused, 503, "UNAVAILABLE", None);
        assert!(
            refused.1["error"]["message"]
                .as_str()
                .unwrap()
                .contains("could not be written to disk"),
            "{}",
            refused.1
        );
        assert_error(
            &client.post_json("/order/addOrder", order.clone()).await,
            503,
            "UNAVAILABLE",
            None,
        );
    }
    // Reads go on and show nothing of the refused changes.
    assert_balance(&client, &alice, "100", "0").await;
    let (status, book) = client
        .get("/order/buyOrderbooks", &[("chainId", "1"), ("pair", "ETH/USDC")])
        .await;
    assert_eq!((status, &book["levels"]), (200, &json!([])));
    assert_eq!(deposits(&client, &alice).await.len(), 1);
    assert!(open_orders(&client, &alice).await.is_empty());

    set_file_size_limit(server.child.id(), None);
    let mut recovered = false;
    for _ in 0..50 {
        if client.post_json("/portfolio/deposit", deposit.clone()).await.0 == 200 {
            recovered = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert!(recovered, "writes resume once the data directory takes them again");
    let (status, placed) = client.post_json("/order/addOrder", order.clone()).await;
    assert_eq!(status, 200, "{placed}");
    assert_balance(&client, &alice, "105", "10").await;

    drop(server);
    let restarted = BinaryServer::start(data_dir.path());
    let client = TestServer::at(&restarted.base_url);
    assert_balance(&client, &alice, "105", "10").await;
    assert_eq!(deposits(&client, &alice).await.len(), 2);
    assert_eq!(open_orders(&client, &alice).await.len(), 1);
}

/// A meta value of the history of chain 1 in `data_dir`.
fn history_meta(data_dir: &std::path::Path, key: &str) -> String {
    let history = rusqlite::Connection::open(dexd_store::history_path(data_dir, 1)).unwrap();
    history
        .query_row("SELECT value FROM meta WHERE key = ?1", [key], |row| row.get(0))
        .unwrap()
}

#[tokio::test]
async fn a_graceful_stop_puts_the_history_on_disk_and_marks_it_closed_cleanly() {
    let data_dir = tempfile::tempdir().unwrap();
    let mut server = BinaryServer::start(data_dir.path());
    let client = TestServer::at(&server.base_url);
    let alice = Trader::new(0xa1);
    client.deposit(&alice, "USDC", "100").await;
    let placed = client.limit(&alice, "buy", "10", "1").await;
    assert_eq!(
        history_meta(data_dir.path(), "closed_cleanly"),
        "0",
        "a running history is not closed"
    );

    let exit = server.stop_gracefully().await;
    assert!(exit.success(), "dexd stopped with {exit}");
    assert_eq!(history_meta(data_dir.path(), "closed_cleanly"), "1");
    assert_eq!(
        history_meta(data_dir.path(), "projected_sequence"),
        "3",
        "the configuration and both commands are in the history"
    );

    let restarted = BinaryServer::start(data_dir.path());
    let client = TestServer::at(&restarted.base_url);
    let orders = open_orders(&client, &alice).await;
    assert_eq!(orders.len(), 1);
    assert_eq!(orders[0]["orderId"], placed["order"]["orderId"]);
    assert_eq!(deposits(&client, &alice).await.len(), 1);
}
