//! `dexd audit` (the real binary) following a venue: started, its output lines collected as they
//! come, waited on, and its copy's position read from its directory.

use std::io::BufRead;
use std::process::{Child, Command, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// A running `dexd audit`, killed when dropped.
pub struct RunningAuditor {
    child: Child,
    lines: Arc<Mutex<Vec<String>>>,
    /// Its log (standard error), shown when a wait fails.
    errors: Arc<Mutex<Vec<String>>>,
    pub directory: std::path::PathBuf,
    pub chain_id: u64,
}

impl RunningAuditor {
    /// Starts `dexd audit` with `arguments` after `--venue`, `--chain-id` and `--dir`, polling
    /// every 50 ms; the environment variables `environment` are set for it.
    pub fn start(
        venue: &str,
        chain_id: u64,
        directory: &std::path::Path,
        arguments: &[&str],
        environment: &[(&str, &str)],
    ) -> RunningAuditor {
        let mut child = Command::new(env!("CARGO_BIN_EXE_dexd"))
            .args(["audit", "--venue", venue, "--chain-id", &chain_id.to_string()])
            .args(["--poll-interval-ms", "50", "--dir"])
            .arg(directory)
            .args(arguments)
            .envs(environment.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        let lines = collect_lines(child.stdout.take().unwrap());
        let errors = collect_lines(child.stderr.take().unwrap());
        RunningAuditor {
            child,
            lines,
            errors,
            directory: directory.to_path_buf(),
            chain_id,
        }
    }

    /// Every line printed so far.
    pub fn output(&self) -> Vec<String> {
        self.lines.lock().unwrap().clone()
    }

    /// Waits (up to `timeout`) for a line `wanted` accepts; returns it.
    pub async fn wait_for_line(&self, what: &str, timeout: Duration, wanted: impl Fn(&str) -> bool) -> String {
        let deadline = Instant::now() + timeout;
        loop {
            if let Some(line) = self.output().into_iter().find(|line| wanted(line)) {
                return line;
            }
            assert!(
                Instant::now() < deadline,
                "{what}: the auditor printed {:#?}\nand logged {:#?}",
                self.output(),
                self.errors.lock().unwrap()
            );
            tokio::time::sleep(Duration::from_millis(50)).await;
        }
    }

    /// The last position of the auditor's copy of the journal (0 before its first page).
    pub fn checked_through(&self) -> u64 {
        dexd_store::JournalReader::open(&self.directory, self.chain_id)
            .ok()
            .and_then(|reader| {
                let mut reader: Box<dyn dexd_store::JournalRead> = Box::new(reader);
                reader.last_sequence().ok()
            })
            .unwrap_or(0)
    }

    /// Stops it (SIGKILL).
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

impl Drop for RunningAuditor {
    fn drop(&mut self) {
        self.kill();
    }
}

/// The lines `stream` gives, collected by a thread as they come.
fn collect_lines(stream: impl std::io::Read + Send + 'static) -> Arc<Mutex<Vec<String>>> {
    let lines = Arc::new(Mutex::new(Vec::new()));
    let collected = Arc::clone(&lines);
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stream).lines() {
            let Ok(line) = line else { break };
            collected.lock().unwrap().push(line);
        }
    });
    lines
}

/// A free local port for a listener the test names (bound and released at once).
pub fn free_local_address() -> std::net::SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}
