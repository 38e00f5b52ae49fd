//! A real PostgreSQL server for the tests, from Debian's packages (`scripts/install-test-tools`
//! installs them): a fresh data directory made by `initdb`, a server on a free loopback port,
//! stopped (immediately) and deleted when dropped. As root, the server runs as the `postgres`
//! user, since PostgreSQL refuses to run as root.
//!
//! `DEXD_POSTGRES_BIN` names the folder of `initdb` and `postgres` when they are elsewhere than
//! the newest `/usr/lib/postgresql/<version>/bin`.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

/// A running test server.
pub struct PostgresServer {
    pub port: u16,
    folder: tempfile::TempDir,
    server: Child,
    bin: PathBuf,
}

/// The folder of PostgreSQL's server programs.
pub fn postgres_bin() -> PathBuf {
    if let Ok(bin) = std::env::var("DEXD_POSTGRES_BIN") {
        return PathBuf::from(bin);
    }
    let mut versions: Vec<(u32, PathBuf)> = std::fs::read_dir("/usr/lib/postgresql")
        .expect("PostgreSQL is installed (scripts/install-test-tools installs Debian's postgresql)")
        .filter_map(|entry| {
            let entry = entry.ok()?;
            let version = entry.file_name().to_str()?.parse().ok()?;
            let bin = entry.path().join("bin");
            bin.join("postgres").exists().then_some((version, bin))
        })
        .collect();
    versions.sort();
    versions.pop().expect("a PostgreSQL server under /usr/lib/postgresql").1
}

fn is_root() -> bool {
    use std::os::unix::fs::MetadataExt;
    std::fs::metadata("/proc/self")
        .map(|metadata| metadata.uid() == 0)
        .unwrap_or(false)
}

/// A command run as the `postgres` user when this process is root (`setpriv` execs the program
/// itself, so its pid is the server's and signals reach it).
fn as_server_user(program: &Path) -> Command {
    if is_root() {
        let mut command = Command::new("setpriv");
        command
            .args(["--reuid=postgres", "--regid=postgres", "--init-groups", "--"])
            .arg(program);
        command
    } else {
        Command::new(program)
    }
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

impl PostgresServer {
    /// Initialises and starts a server; returns once it takes connections.
    pub fn start() -> PostgresServer {
        Self::start_with(&[])
    }

    /// Like [`PostgresServer::start`], with extra `-c name=value` settings.
    pub fn start_with(settings: &[&str]) -> PostgresServer {
        let bin = postgres_bin();
        let folder = tempfile::Builder::new().prefix("dexd-postgres-").tempdir().unwrap();
        if is_root() {
            let status = Command::new("chown")
                .args(["-R", "postgres:postgres"])
                .arg(folder.path())
                .status()
                .unwrap();
            assert!(status.success());
        }
        let data = folder.path().join("data");
        let output = as_server_user(&bin.join("initdb"))
            .arg("-D")
            .arg(&data)
            .args(["-A", "trust", "-U", "dexd", "--no-sync", "-E", "UTF8"])
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "initdb: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let port = free_port();
        let mut command = as_server_user(&bin.join("postgres"));
        command
            .arg("-D")
            .arg(&data)
            .args(["-p", &port.to_string(), "-c", "listen_addresses=127.0.0.1"])
            .arg("-c")
            .arg(format!("unix_socket_directories={}", folder.path().display()));
        for setting in settings {
            command.args(["-c", setting]);
        }
        let server = command
            .stdout(Stdio::null())
            .stderr(std::fs::File::create(folder.path().join("server.log")).unwrap())
            .spawn()
            .unwrap();
        let server = PostgresServer {
            port,
            folder,
            server,
            bin,
        };
        server.wait_until_ready();
        server
    }

    /// Waits until the server takes connections (asked with `pg_isready`, so that this works
    /// inside an async test as well, where the synchronous client cannot run).
    fn wait_until_ready(&self) {
        let started = Instant::now();
        while started.elapsed() < Duration::from_secs(30) {
            let ready = Command::new(self.bin.join("pg_isready"))
                .args(["-q", "-h", "127.0.0.1", "-p", &self.port.to_string(), "-U", "dexd"])
                .status()
                .is_ok_and(|status| status.success());
            if ready {
                return;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!("PostgreSQL did not start: {}", self.log());
    }

    /// The connection URL.
    pub fn url(&self) -> String {
        format!("postgresql://dexd@127.0.0.1:{}/postgres", self.port)
    }

    /// What the server logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.path().join("server.log")).unwrap_or_default()
    }
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        // SIGQUIT: PostgreSQL's immediate shutdown.
        let _ = Command::new("kill")
            .args(["-QUIT", &self.server.id().to_string()])
            .status();
        let _ = self.server.wait();
    }
}
