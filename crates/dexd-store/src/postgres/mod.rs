//! The PostgreSQL backend: one database that several dexd nodes share, holding each chain's
//! journal and the lease that says which node leads the chain, under which epoch.
//!
//! - [`schema`]: the tables and their migrations, run under an advisory lock so that nodes
//!   starting together do not race.
//! - [`journal`]: [`PostgresJournal`], the [`crate::Journal`] whose every append checks, in the
//!   same statement, the appender's epoch and the journal's last sequence: a stale leader
//!   (paused, partitioned, slow) can never append.
//! - [`directory`]: the nodes, their URLs and liveness, and each chain's leader (`GET /cluster`).
//! - [`snapshot_store`]: the newest snapshot files of each chain, shared by the nodes.
//! - [`lease`]: taking, renewing and reading a chain's lease. Lease times are the database's
//!   clock, never a node's, so nodes whose clocks disagree still agree on who leads.
//!
//! This module does not run a leader's loop, follow a journal on a follower or forward writes
//! (the venue does); it uses the synchronous `postgres` client, made for a thread of its own such
//! as the chain's writer, and must not be called from inside an async runtime's threads.

pub mod directory;
pub mod journal;
pub mod lease;
pub mod schema;
pub mod snapshot_store;

pub use self::journal::PostgresJournal;
pub use self::lease::{Lease, LeaseHolder, LeaseKeeper};
/// The synchronous PostgreSQL client the backend runs on, for the crates above that hold one.
pub use ::postgres::Client;

use super::database::StoreError;

/// How long a statement may run before PostgreSQL cancels it: long enough for a large batch on
/// a loaded server, short enough that a writer stuck on a dead primary gives up and steps down.
pub const STATEMENT_TIMEOUT_MS: u64 = 10_000;

/// How long a connection attempt to one host may take, when the URL sets no `connect_timeout`:
/// shorter than a lease, so that a node whose database moved finds the new primary in time.
pub const CONNECT_TIMEOUT_MS: u64 = 2_000;

/// Connects to the database at `url` (a libpq connection string or URL, which may list several
/// hosts with `target_session_attrs=read-write` so that a promoted standby is found), with
/// [`STATEMENT_TIMEOUT_MS`], and brings the schema up to date.
///
/// With `sslmode=require` the connection is TLS (rustls), and the server's certificate is
/// verified against its host name, as libpq's `verify-full` does: against the certificates of
/// `sslrootcert=<PEM file>` when the URL names one, else the system's trusted roots. Without
/// it, the connection is in clear: keep it on loopback or a private network.
pub fn connect(url: &str) -> Result<postgres::Client, StoreError> {
    let (url, root_certificates) = take_root_certificates(url)?;
    let mut config: postgres::Config = url
        .parse()
        .map_err(|error: postgres::Error| StoreError::Postgres(format!("the PostgreSQL URL is unusable: {error}")))?;
    config.application_name("dexd");
    if config.get_connect_timeout().is_none() {
        config.connect_timeout(std::time::Duration::from_millis(CONNECT_TIMEOUT_MS));
    }
    let mut client = if config.get_ssl_mode() == postgres::config::SslMode::Require {
        config.connect(tls_connector(root_certificates)?)
    } else {
        config.connect(postgres::NoTls)
    }
    .map_err(postgres_error)?;
    client
        // Notices (a table that exists already, at each connection's migration) are not news.
        .batch_execute(&format!(
            "SET statement_timeout = {STATEMENT_TIMEOUT_MS}; SET client_min_messages = warning"
        ))
        .map_err(postgres_error)?;
    schema::migrate(&mut client)?;
    Ok(client)
}

/// The URL without its `sslrootcert=<file>` parameter (which the driver does not know), and the
/// certificates of that file.
fn take_root_certificates(
    url: &str,
) -> Result<(String, Option<Vec<rustls::pki_types::CertificateDer<'static>>>), StoreError> {
    // A URL carries its parameters after `?`, joined by `&`; a key=value string is all
    // parameters, joined by spaces.
    let (head, parameters, separator) = if url.contains("://") {
        match url.split_once('?') {
            Some((head, parameters)) => (Some(head), parameters, "&"),
            None => return Ok((url.to_string(), None)),
        }
    } else {
        (None, url, " ")
    };
    let mut file = None;
    let kept: Vec<&str> = parameters
        .split(separator)
        .filter(|parameter| match parameter.strip_prefix("sslrootcert=") {
            Some(path) => {
                file = Some(path.to_string());
                false
            }
            None => true,
        })
        .collect();
    let Some(file) = file else {
        return Ok((url.to_string(), None));
    };
    let url = match head {
        Some(head) if kept.is_empty() => head.to_string(),
        Some(head) => format!("{head}?{}", kept.join("&")),
        None => kept.join(" "),
    };
    let text = std::fs::read(&file)
        .map_err(|error| StoreError::Postgres(format!("cannot read sslrootcert {file}: {error}")))?;
    let certificates = rustls_pemfile::certs(&mut text.as_slice())
        .collect::<Result<Vec<_>, _>>()
        .map_err(|error| StoreError::Postgres(format!("sslrootcert {file} is not PEM certificates: {error}")))?;
    if certificates.is_empty() {
        return Err(StoreError::Postgres(format!("sslrootcert {file} holds no certificate")));
    }
    Ok((url, Some(certificates)))
}

/// A TLS connector that verifies the server against `root_certificates`, or the system's roots.
fn tls_connector(
    root_certificates: Option<Vec<rustls::pki_types::CertificateDer<'static>>>,
) -> Result<tokio_postgres_rustls::MakeRustlsConnect, StoreError> {
    let mut roots = rustls::RootCertStore::empty();
    let certificates = match root_certificates {
        Some(certificates) => certificates,
        None => rustls_native_certs::load_native_certs().certs,
    };
    for certificate in certificates {
        roots
            .add(certificate)
            .map_err(|error| StoreError::Postgres(format!("a root certificate is unusable: {error}")))?;
    }
    let config =
        rustls::ClientConfig::builder_with_provider(std::sync::Arc::new(rustls::crypto::ring::default_provider()))
            .with_safe_default_protocol_versions()
            .map_err(|error| StoreError::Postgres(format!("TLS cannot be set up: {error}")))?
            .with_root_certificates(roots)
            .with_no_client_auth();
    Ok(tokio_postgres_rustls::MakeRustlsConnect::new(config))
}

/// A connection that is made again once lost: the server restarted, or failed over to its
/// standby (found again through the URL's hosts and `target_session_attrs=read-write`). A
/// statement that fails with the connection is not retried here: its caller learns of the
/// failure, and the next call connects again.
pub struct Connection {
    url: String,
    client: Option<postgres::Client>,
    /// How many times a connection was made, so that statements prepared on an earlier one are
    /// prepared again.
    generation: u64,
}

impl Connection {
    /// Connects to `url` now.
    pub fn open(url: &str) -> Result<Connection, StoreError> {
        let client = connect(url)?;
        Ok(Connection {
            url: url.to_string(),
            client: Some(client),
            generation: 1,
        })
    }

    /// The client, connected again first if the connection was lost.
    pub fn client(&mut self) -> Result<&mut postgres::Client, StoreError> {
        if self.client.as_ref().is_none_or(postgres::Client::is_closed) {
            self.client = None;
            let client = connect(&self.url)?;
            self.generation += 1;
            tracing::info!(generation = self.generation, "connected to PostgreSQL again");
            self.client = Some(client);
        }
        Ok(self.client.as_mut().expect("invariant: connected just above"))
    }

    /// Which connection [`Connection::client`] last returned (see `generation`).
    pub fn generation(&self) -> u64 {
        self.generation
    }
}

impl Drop for Connection {
    /// The synchronous client closes its connection on a runtime of its own, which panics on a
    /// thread that drives an async runtime (a connection the HTTP layer held, dropped at a
    /// graceful stop): it is closed on a thread of its own.
    fn drop(&mut self) {
        if let Some(client) = self.client.take() {
            let _ = std::thread::spawn(move || drop(client)).join();
        }
    }
}

/// A PostgreSQL error as a [`StoreError`], its text without the connection's URL (which may
/// carry a password): the driver's messages name hosts and SQL states, never the URL.
pub(crate) fn postgres_error(error: postgres::Error) -> StoreError {
    StoreError::Postgres(error.to_string())
}

/// An unsigned number as PostgreSQL's BIGINT; every sequence, epoch and time dexd keeps fits.
pub(crate) fn to_bigint(value: u64) -> i64 {
    i64::try_from(value).expect("a journal value fits in a BIGINT")
}

/// A BIGINT read back; the tables hold no negative value.
pub(crate) fn from_bigint(value: i64) -> Result<u64, StoreError> {
    u64::try_from(value).map_err(|_| StoreError::Inconsistent(format!("a negative value {value} in the journal")))
}

#[cfg(any(test, feature = "postgres-test-server"))]
pub mod test_server;
#[cfg(test)]
mod tests;
