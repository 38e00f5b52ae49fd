//! `scripts/cluster DIR --nodes 3`, black box: it starts PostgreSQL (a primary and a synchronous
//! standby, Debian's) and three dexd nodes (the binary cargo built for these tests), describes
//! them in `DIR/cluster.json` as the contract says, the nodes see each other alive and spread
//! the chains over themselves (each leads one of the three), a write through one node is read
//! back through another; a node and the primary killed leave the rest running, and once the
//! standby is promoted a surviving node writes; an interrupt stops everything left, cleanly.

use crate::common;

use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// Waits up to `within` for `ready` to give a value.
async fn eventually<T>(what: &str, within: Duration, mut ready: impl AsyncFnMut() -> Option<T>) -> T {
    let started = Instant::now();
    loop {
        if let Some(value) = ready().await {
            return value;
        }
        assert!(started.elapsed() < within, "timed out waiting for {what}");
        tokio::time::sleep(Duration::from_millis(200)).await;
    }
}

fn process_exists(pid: u64) -> bool {
    Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn scripts_cluster_starts_a_primary_a_standby_and_three_nodes_that_spread_the_chains() {
    let folder = tempfile::tempdir().unwrap();
    // PostgreSQL runs as its own user when the tests run as root: it must reach the folder.
    std::fs::set_permissions(folder.path(), std::os::unix::fs::PermissionsExt::from_mode(0o755)).unwrap();
    let dir = folder.path().join("cluster");
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../scripts/cluster");
    let mut script = tokio::process::Command::new(script);
    script
        .arg(&dir)
        .args(["--nodes", "3"])
        .env("DEXD_BIN", env!("CARGO_BIN_EXE_dexd"))
        .stdout(std::process::Stdio::null())
        .kill_on_drop(true);
    // The test sends the script a Ctrl-C (SIGINT). A shell that started the tests in the
    // background left SIGINT ignored, which every child inherits and which a script cannot trap
    // again: the script would never stop. Its own default, as in a terminal, is restored.
    // SAFETY: between fork and exec, only an async-signal-safe call (signal) is made.
    unsafe {
        script.pre_exec(|| {
            libc::signal(libc::SIGINT, libc::SIG_DFL);
            Ok(())
        });
    }
    let mut script = script.spawn().unwrap();
    let description: Value = eventually("cluster.json", Duration::from_secs(120), async || {
        let text = std::fs::read_to_string(dir.join("cluster.json")).ok()?;
        serde_json::from_str(&text).ok()
    })
    .await;
    let postgres = &description["postgres"];
    let url = postgres["url"].as_str().unwrap();
    for server in ["primary", "standby"] {
        let port = postgres[server]["port"].as_u64().unwrap();
        assert!(url.contains(&format!("127.0.0.1:{port}")), "{url}");
        assert!(Path::new(postgres[server]["dataDir"].as_str().unwrap())
            .join("PG_VERSION")
            .exists());
    }
    assert!(url.contains("target_session_attrs=read-write"), "{url}");
    assert!(Path::new(postgres["bin"].as_str().unwrap()).join("postgres").exists());
    let nodes = description["nodes"].as_array().unwrap();
    assert_eq!(nodes.len(), 3);
    let ids: Vec<&str> = nodes.iter().map(|node| node["id"].as_str().unwrap()).collect();
    for node in nodes {
        assert!(process_exists(node["pid"].as_u64().unwrap()));
        assert!(Path::new(node["config"].as_str().unwrap()).exists());
        assert!(Path::new(node["dataDir"].as_str().unwrap()).is_dir());
    }
    let http = reqwest::Client::new();
    let url_of = |index: usize| nodes[index]["url"].as_str().unwrap().to_string();

    // Every node sees the three alive, and the three chains spread: one leader each.
    let cluster: Value = eventually(
        "the chains spread over the nodes",
        Duration::from_secs(60),
        async || {
            let cluster = common::cluster::view(&url_of(2)).await?;
            let alive = cluster["nodes"]
                .as_array()?
                .iter()
                .filter(|node| node["alive"] == true)
                .count();
            let mut leaders: Vec<&str> = cluster["chains"]
                .as_array()?
                .iter()
                .filter_map(|chain| chain["leader"].as_str())
                .collect();
            leaders.sort();
            (alive == 3 && leaders == ids).then(|| cluster.clone())
        },
    )
    .await;
    assert_eq!(cluster["node"], ids[2]);

    // A write through the first node, read back through the last at its position.
    let trader = common::Trader::new(0x5c);
    let written = http
        .post(format!("{}/portfolio/deposit", url_of(0)))
        .json(&json!({"chainId": "1", "from": trader.address, "symbol": "USDC", "quantity": "3", "privateKey": trader.key}))
        .send()
        .await
        .unwrap();
    assert_eq!(written.status(), 200);
    let position = written.headers()["x-dexd-sequence"].to_str().unwrap().to_string();
    let read = common::cluster::balances_at(&url_of(2), &trader.address, &position).await;
    assert_eq!(common::balance_in(&read, "USDC")["total"], "3", "{read}");

    // A newcomer kills a node and the PostgreSQL primary to watch a failover (SIGKILL, both):
    // the script keeps the rest running. Once the standby is promoted, a surviving node takes
    // the chains and a write through it is durable.
    let script_pid = script.id().unwrap() as i32;
    let killed_node = nodes[0]["pid"].as_u64().unwrap();
    let primary_data = Path::new(postgres["primary"]["dataDir"].as_str().unwrap());
    let postmaster = std::fs::read_to_string(primary_data.join("postmaster.pid")).unwrap();
    let primary_pid: i32 = postmaster.lines().next().unwrap().trim().parse().unwrap();
    for pid in [killed_node as i32, primary_pid] {
        // SAFETY: kill only sends a signal to a process the script started for this test.
        assert_eq!(unsafe { libc::kill(pid, libc::SIGKILL) }, 0);
    }
    let promoted = std::process::Command::new(Path::new(postgres["bin"].as_str().unwrap()).join("psql"))
        .args(["-h", "127.0.0.1", "-p", &postgres["standby"]["port"].to_string()])
        .args(["-U", "dexd", "-d", "postgres", "-tAXc", "SELECT pg_promote(true, 30)"])
        .output()
        .unwrap();
    assert_eq!(String::from_utf8_lossy(&promoted.stdout).trim(), "t", "{promoted:?}");
    let trader = common::Trader::new(0x5d);
    let deposit =
        json!({"chainId": "1", "from": trader.address, "symbol": "USDC", "quantity": "4", "privateKey": trader.key});
    eventually(
        "a write through a surviving node",
        Duration::from_secs(90),
        async || {
            let written = http
                .post(format!("{}/portfolio/deposit", url_of(1)))
                .json(&deposit)
                .send()
                .await
                .ok()?;
            (written.status() == 200).then_some(())
        },
    )
    .await;
    assert!(process_exists(script_pid as u64), "the script went on");
    for index in [1, 2] {
        assert!(
            process_exists(nodes[index]["pid"].as_u64().unwrap()),
            "node {index} went on"
        );
    }
    let standby_data = Path::new(postgres["standby"]["dataDir"].as_str().unwrap());
    assert!(standby_data.join("postmaster.pid").exists(), "the standby went on");

    // An interrupt stops everything left, nodes first, each cleanly.
    // SAFETY: kill only sends a signal to the child this test started.
    assert_eq!(unsafe { libc::kill(script_pid, libc::SIGINT) }, 0);
    tokio::time::timeout(Duration::from_secs(60), script.wait())
        .await
        .expect("the script stopped")
        .unwrap();
    for node in &nodes[1..] {
        assert!(!process_exists(node["pid"].as_u64().unwrap()), "{node} still runs");
        let log =
            std::fs::read_to_string(Path::new(node["config"].as_str().unwrap()).with_file_name("dexd.log")).unwrap();
        assert!(!log.contains("panicked"), "{log}");
        assert!(log.contains("the history is on disk and closed cleanly"), "{log}");
    }
    assert!(!standby_data.join("postmaster.pid").exists(), "the standby still runs");
}
