//! TLS: the service over HTTPS with a certificate made for the test, and the warning when it
//! listens beyond loopback in clear.

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};

use dexd_venue::config::Config;

struct Certificate {
    directory: tempfile::TempDir,
    pem: String,
}

impl Certificate {
    fn for_localhost() -> Certificate {
        let generated = rcgen::generate_simple_self_signed(vec!["localhost".to_string()]).unwrap();
        let directory = tempfile::tempdir().unwrap();
        std::fs::write(directory.path().join("cert.pem"), generated.cert.pem()).unwrap();
        std::fs::write(directory.path().join("key.pem"), generated.key_pair.serialize_pem()).unwrap();
        Certificate {
            directory,
            pem: generated.cert.pem(),
        }
    }

    fn cert_path(&self) -> std::path::PathBuf {
        self.directory.path().join("cert.pem")
    }

    fn key_path(&self) -> std::path::PathBuf {
        self.directory.path().join("key.pem")
    }
}

#[tokio::test]
async fn the_service_answers_over_https_and_refuses_plain_http_on_the_tls_port() {
    let certificate = Certificate::for_localhost();
    let tls = dexd::tls::load_server_config(&certificate.cert_path(), &certificate.key_path()).unwrap();
    let data_dir = tempfile::tempdir().unwrap();
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let port = listener.local_addr().unwrap().port();
    let (stop, stopped) = tokio::sync::oneshot::channel::<()>();
    let data_path = data_dir.path().to_path_buf();
    tokio::spawn(async move {
        dexd::serve_with_tls(
            Config::embedded_default(),
            &data_path,
            listener,
            Some(tls),
            async move {
                let _ = stopped.await;
            },
        )
        .await
        .unwrap();
    });
    let client = reqwest::Client::builder()
        .add_root_certificate(reqwest::Certificate::from_pem(certificate.pem.as_bytes()).unwrap())
        .build()
        .unwrap();
    for _ in 0..6_000 {
        let ready = client.get(format!("https://localhost:{port}/ready")).send().await;
        if ready.is_ok_and(|response| response.status() == 200) {
            break;
        }
        tokio::time::sleep(std::time::Duration::from_millis(10)).await;
    }
    let response = client
        .get(format!("https://localhost:{port}/account/assetPairs?chainId=1"))
        .send()
        .await
        .unwrap();
    assert_eq!(response.status(), 200);
    let body: serde_json::Value = response.json().await.unwrap();
    assert_eq!(body["pairs"][0]["symbol"], "ETH/USDC");

    let plain = reqwest::Client::new()
        .get(format!("http://localhost:{port}/health"))
        .send()
        .await;
    assert!(plain.is_err(), "plain HTTP on the TLS port must not be served");
    drop(stop);
}

#[test]
fn unusable_tls_files_are_refused_with_a_clear_message() {
    let certificate = Certificate::for_localhost();
    let swapped = dexd::tls::load_server_config(&certificate.key_path(), &certificate.cert_path());
    assert!(swapped.unwrap_err().to_string().contains("no PEM certificate"));
    let missing = dexd::tls::load_server_config(&certificate.cert_path(), std::path::Path::new("/nonexistent.pem"));
    assert!(missing.unwrap_err().to_string().contains("cannot read"));
}

/// Starts the binary and returns what it logged up to the line that says it listens.
fn log_until_listening(arguments: &[&str]) -> String {
    let data_dir = tempfile::tempdir().unwrap();
    let mut child = Command::new(env!("CARGO_BIN_EXE_dexd"))
        .args(["serve", "--data-dir"])
        .arg(data_dir.path())
        .args(arguments)
        .env("RUST_LOG", "info")
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .unwrap();
    let mut log = String::new();
    for line in BufReader::new(child.stdout.take().unwrap()).lines() {
        let line = line.unwrap();
        log.push_str(&line);
        log.push('\n');
        if line.contains("dexd listening") {
            break;
        }
    }
    child.kill().unwrap();
    child.wait().unwrap();
    log
}

#[test]
fn listening_beyond_loopback_in_clear_is_warned_about_and_with_tls_it_is_not() {
    let clear = log_until_listening(&["--listen", "0.0.0.0:0"]);
    assert!(clear.contains("WARN") && clear.contains("in clear"), "{clear}");
    let loopback = log_until_listening(&["--listen", "127.0.0.1:0"]);
    assert!(!loopback.contains("in clear"), "{loopback}");
    let certificate = Certificate::for_localhost();
    let cert = certificate.cert_path();
    let key = certificate.key_path();
    let secure = log_until_listening(&[
        "--listen",
        "0.0.0.0:0",
        "--tls-cert",
        cert.to_str().unwrap(),
        "--tls-key",
        key.to_str().unwrap(),
    ]);
    assert!(!secure.contains("in clear") && secure.contains("https"), "{secure}");
}
