//! A real PostgreSQL server for the tests, from Debian's packages (`scripts/install-test-tools`
//! installs them): a fresh data directory made by `initdb`, a server on a free loopback port,
//! stopped (immediately) and deleted when dropped. As root, the server runs as the `postgres`
//! user, since PostgreSQL refuses to run as root. Also a primary with a synchronous standby
//! ([`PostgresServer::start_primary`], [`PostgresServer::start_standby_of`]), which a test can
//! stop at once and promote, as a failover does.
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
    server: Option<Child>,
    bin: PathBuf,
}

/// The name a synchronous standby connects with, and the primary waits for.
pub const STANDBY_NAME: &str = "standby";

/// The settings of a primary whose every commit waits for its synchronous standby.
const PRIMARY_SETTINGS: [&str; 4] = [
    "wal_level=replica",
    "max_wal_senders=4",
    "synchronous_commit=on",
    "synchronous_standby_names=standby",
];

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

    /// A primary whose commits wait for a synchronous standby named [`STANDBY_NAME`]: start
    /// one with [`PostgresServer::start_standby_of`] before anything is written, or every commit
    /// waits.
    pub fn start_primary() -> PostgresServer {
        Self::start_with(&PRIMARY_SETTINGS)
    }

    /// A synchronous standby of `primary`, streaming from it (copied with `pg_basebackup`); it
    /// returns once the primary reports it as its synchronous standby.
    pub fn start_standby_of(primary: &PostgresServer) -> PostgresServer {
        let bin = postgres_bin();
        let folder = server_folder();
        let data = folder.path().join("data");
        let output = as_server_user(&bin.join("pg_basebackup"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &primary.port.to_string(),
                "-U",
                "dexd",
                "-X",
                "stream",
                "-R",
                "-D",
            ])
            .arg(&data)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "pg_basebackup: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        let conninfo = format!(
            "primary_conninfo=host=127.0.0.1 port={} user=dexd application_name={STANDBY_NAME}",
            primary.port
        );
        // Once promoted, it is a primary waiting for a standby of its own only if given one.
        let standby = Self::run(bin, folder, &[&conninfo, "synchronous_standby_names="]);
        let started = Instant::now();
        while primary.sql("SELECT sync_state FROM pg_stat_replication") != "sync" {
            assert!(
                started.elapsed() < Duration::from_secs(30),
                "the standby never became synchronous: {}",
                standby.log()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
        standby
    }

    /// Like [`PostgresServer::start`], with extra `-c name=value` settings.
    pub fn start_with(settings: &[&str]) -> PostgresServer {
        let bin = postgres_bin();
        let folder = server_folder();
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
        Self::run(bin, folder, settings)
    }

    /// Starts the server of the data directory in `folder`.
    fn run(bin: PathBuf, folder: tempfile::TempDir, settings: &[&str]) -> PostgresServer {
        let data = folder.path().join("data");
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
            server: Some(server),
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

    /// Runs one SQL statement with `psql` (usable inside an async test, where the synchronous
    /// client cannot run); returns its output, trimmed.
    pub fn sql(&self, statement: &str) -> String {
        let output = Command::new(self.bin.join("psql"))
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "-U",
                "dexd",
                "-d",
                "postgres",
                "-tAXc",
            ])
            .arg(statement)
            .output()
            .unwrap();
        assert!(
            output.status.success(),
            "psql {statement}: {}",
            String::from_utf8_lossy(&output.stderr)
        );
        String::from_utf8_lossy(&output.stdout).trim().to_string()
    }

    /// Stops the server at once, as `pg_ctl stop -m immediate` does (SIGQUIT): no checkpoint,
    /// connections cut.
    pub fn stop_immediately(&mut self) {
        if let Some(mut server) = self.server.take() {
            let _ = Command::new("kill").args(["-QUIT", &server.id().to_string()]).status();
            let _ = server.wait();
        }
    }

    /// Promotes a standby to primary (`pg_promote`, waiting for it to finish).
    pub fn promote(&self) {
        assert_eq!(self.sql("SELECT pg_promote(true, 30)"), "t", "{}", self.log());
    }

    /// What the server logged.
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.folder.path().join("server.log")).unwrap_or_default()
    }
}

/// A folder for a server's data (or its certificate and key), owned by the server's user.
pub fn server_folder() -> tempfile::TempDir {
    let folder = tempfile::Builder::new().prefix("dexd-postgres-").tempdir().unwrap();
    if is_root() {
        let status = Command::new("chown")
            .args(["-R", "postgres:postgres"])
            .arg(folder.path())
            .status()
            .unwrap();
        assert!(status.success());
    }
    folder
}

impl Drop for PostgresServer {
    fn drop(&mut self) {
        self.stop_immediately();
    }
}
