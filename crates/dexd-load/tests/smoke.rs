//! A short, slow run of every workload against a real server, so the load generator keeps
//! working. The full benchmark is not part of the test suite.

use std::time::Duration;

use dexd_load::{fund_accounts, run, start_baseline_server, RunSettings, Workload};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_workload_runs_without_errors_at_a_low_rate() {
    let data_dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let target = format!("http://{}", listener.local_addr().unwrap());
    let path = data_dir.path().to_path_buf();
    tokio::spawn(async move {
        dexd::serve(
            dexd_venue::config::Config::embedded_default(),
            &path,
            listener,
            std::future::pending(),
        )
        .await
        .unwrap();
    });
    // The chains start after the listener; wait until /ready says they have.
    let address = target.trim_start_matches("http://").to_string();
    for _ in 0..6_000 {
        if ready(&address).await {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    let settings = RunSettings {
        target,
        workload: Workload::Place,
        rate_per_second: 100,
        duration: Duration::from_secs(1),
        accounts: 8,
        chain_id: 1,
        acks: None,
    };
    fund_accounts(&settings).await.unwrap();
    for workload in [Workload::Place, Workload::Mixed, Workload::Read] {
        let report = run(RunSettings {
            workload,
            ..settings.clone()
        })
        .await;
        assert_eq!(report.failed, 0, "{workload:?}: {report:?}");
        assert_eq!(report.succeeded + report.rejected, 100, "{workload:?}: {report:?}");
        // Only cancels racing a fill may be refused, and they are a small share.
        assert!(report.rejected <= 20, "{workload:?}: {report:?}");
        assert!(report.latency_us[0] > 0 && report.latency_us[4] >= report.latency_us[2]);
    }
    // The stream workload: subscribers take their snapshots, placements trade, and the trades
    // reach the book's subscribers; the paced depth views reach theirs.
    for watched in [
        dexd_load::stream::WatchedBook::Book,
        dexd_load::stream::WatchedBook::Depth { interval_ms: 100 },
    ] {
        let acks = std::sync::Arc::new(dexd_load::stream::AckLog::default());
        let subscribers = dexd_load::stream::open_subscribers(&settings.target, 1, 20, watched, false, acks.clone())
            .await
            .unwrap();
        let report = run(RunSettings {
            workload: Workload::Stream,
            acks: Some(acks),
            ..settings.clone()
        })
        .await;
        assert_eq!(report.failed, 0, "{watched:?}: {report:?}");
        let streams = subscribers.finish().await;
        assert_eq!((streams.connections, streams.closed), (20, 0), "{watched:?}");
        assert!(streams.messages > 40, "{watched:?}: {streams:?}");
        if watched == dexd_load::stream::WatchedBook::Book {
            assert!(
                streams.samples + streams.before_ack > 0,
                "trades reached the measuring subscribers: {streams:?}"
            );
        }
    }
    let baseline = start_baseline_server();
    let report = run(RunSettings {
        target: baseline.address.clone(),
        workload: Workload::AxumBaseline,
        ..settings
    })
    .await;
    assert_eq!((report.succeeded, report.failed), (100, 0));
    assert!(report.csv_row().starts_with("axum-baseline,100,"));
    // The chart is drawn from the CSV that runs write.
    let scratch = tempfile::tempdir().unwrap();
    let csv = scratch.path().join("results.csv");
    std::fs::write(
        &csv,
        format!("{}\n{}\n", dexd_load::RunReport::CSV_HEADER, report.csv_row()),
    )
    .unwrap();
    let svg = scratch.path().join("latency.svg");
    dexd_load::chart::draw(&csv, &svg).unwrap();
    assert!(std::fs::read_to_string(&svg).unwrap().contains("axum-baseline p99"));
}

/// Whether `GET /ready` answers 200 (one plain HTTP/1.1 exchange).
async fn ready(address: &str) -> bool {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let Ok(mut stream) = tokio::net::TcpStream::connect(address).await else {
        return false;
    };
    let request = format!("GET /ready HTTP/1.1\r\nHost: {address}\r\nConnection: close\r\n\r\n");
    if stream.write_all(request.as_bytes()).await.is_err() {
        return false;
    }
    let mut answer = Vec::new();
    let _ = stream.read_to_end(&mut answer).await;
    answer.starts_with(b"HTTP/1.1 200")
}
