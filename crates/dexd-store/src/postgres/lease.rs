//! A chain's lease: which node leads it, under which epoch, until when.
//!
//! A node takes a lease that has ended (or is its own, after a restart), and the epoch goes up
//! by one each time it changes hands, so every leader's epoch is new. The leader renews the
//! lease well before it ends; a renewal names the epoch, so a node whose lease was taken can
//! never renew it again. Times are PostgreSQL's clock (`clock_timestamp()`).
//!
//! The lease is what a node believes; the fence is the journal's append, which checks the epoch
//! in the same statement ([`super::PostgresJournal`]). A node must stop acting as leader once
//! `lease_ms` has passed, by its own monotonic clock, since it sent its last successful renewal,
//! whatever it has heard since; this module gives the database's answers, the caller keeps time.

use super::{from_bigint, postgres_error, to_bigint, StoreError};

/// A lease held: the chain, the holder and the epoch it appends under.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Lease {
    /// The chain led.
    pub chain_id: u64,
    /// The node that holds it.
    pub holder: String,
    /// Its epoch: greater than every earlier leader's.
    pub epoch: u64,
}

/// A chain's lease as the database has it now.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LeaseHolder {
    /// The node holding it (its lease may have ended).
    pub holder: String,
    /// The epoch it holds.
    pub epoch: u64,
    /// Milliseconds until it ends; 0 once it has.
    pub remaining_ms: u64,
    /// Milliseconds since it ended; 0 while it lasts.
    pub ended_for_ms: u64,
}

/// Takes the lease of `chain_id` for `holder` for `lease_ms`, if it has ended, was never taken,
/// or is `holder`'s own; the epoch then goes up by one. `None` while another node holds it.
pub fn take(
    client: &mut postgres::Client,
    chain_id: u64,
    holder: &str,
    lease_ms: u64,
) -> Result<Option<Lease>, StoreError> {
    let row = client
        .query_opt(
            "INSERT INTO dexd_leases AS lease (chain_id, holder, epoch, expires_at)
             VALUES ($1, $2, 1, clock_timestamp() + $3 * interval '1 millisecond')
             ON CONFLICT (chain_id) DO UPDATE
                 SET holder = EXCLUDED.holder, epoch = lease.epoch + 1, expires_at = EXCLUDED.expires_at
                 WHERE lease.expires_at <= clock_timestamp() OR lease.holder = EXCLUDED.holder
             RETURNING epoch",
            &[&to_bigint(chain_id), &holder, &(lease_ms as f64)],
        )
        .map_err(postgres_error)?;
    row.map(|row| {
        Ok(Lease {
            chain_id,
            holder: holder.to_string(),
            epoch: from_bigint(row.get(0))?,
        })
    })
    .transpose()
}

/// Renews a lease for `lease_ms` from now: `false` when the lease has passed to another epoch,
/// and then the caller no longer leads.
pub fn renew(client: &mut postgres::Client, lease: &Lease, lease_ms: u64) -> Result<bool, StoreError> {
    let renewed = client
        .execute(
            "UPDATE dexd_leases SET expires_at = clock_timestamp() + $4 * interval '1 millisecond'
             WHERE chain_id = $1 AND holder = $2 AND epoch = $3",
            &[
                &to_bigint(lease.chain_id),
                &lease.holder,
                &to_bigint(lease.epoch),
                &(lease_ms as f64),
            ],
        )
        .map_err(postgres_error)?;
    Ok(renewed == 1)
}

/// Gives a lease up at once (a clean stop), so that another node need not wait for it to end.
pub fn release(client: &mut postgres::Client, lease: &Lease) -> Result<(), StoreError> {
    client
        .execute(
            "UPDATE dexd_leases SET expires_at = clock_timestamp()
             WHERE chain_id = $1 AND holder = $2 AND epoch = $3",
            &[&to_bigint(lease.chain_id), &lease.holder, &to_bigint(lease.epoch)],
        )
        .map_err(postgres_error)?;
    Ok(())
}

/// Who holds the lease of `chain_id` now, if anyone ever has.
pub fn holder(client: &mut postgres::Client, chain_id: u64) -> Result<Option<LeaseHolder>, StoreError> {
    let row = client
        .query_opt(
            "SELECT holder, epoch,
                 GREATEST(0, FLOOR(EXTRACT(EPOCH FROM expires_at - clock_timestamp()) * 1000))::BIGINT,
                 GREATEST(0, FLOOR(EXTRACT(EPOCH FROM clock_timestamp() - expires_at) * 1000))::BIGINT
             FROM dexd_leases WHERE chain_id = $1",
            &[&to_bigint(chain_id)],
        )
        .map_err(postgres_error)?;
    row.map(|row| {
        Ok(LeaseHolder {
            holder: row.get(0),
            epoch: from_bigint(row.get(1))?,
            remaining_ms: from_bigint(row.get(2))?,
            ended_for_ms: from_bigint(row.get(3))?,
        })
    })
    .transpose()
}

/// How many leases a node leads a chain before handing it over to the chain's preferred node
/// ([`super::directory::preferred_leader`]): long enough that a node whose beat came late once
/// does not make the chains move back and forth.
pub const HANDOVER_AFTER_LEASES: u32 = 3;

/// A thread that renews a lease every third of `lease_ms` on a connection of its own, and says
/// whether the node still leads: no longer once a renewal is refused (the lease passed to
/// another epoch), once `lease_ms` has passed, by this machine's monotonic clock, since the
/// last renewal that succeeded was sent, or once it hands the chain over to its preferred node
/// (after [`HANDOVER_AFTER_LEASES`] leases, releasing the lease for that node to take). It never
/// takes the lease back; a new lease is a new epoch, taken at start.
pub struct LeaseKeeper {
    leading: std::sync::Arc<std::sync::atomic::AtomicBool>,
    stop: std::sync::mpsc::SyncSender<()>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl LeaseKeeper {
    /// Starts renewing `lease` (taken for `lease_ms`) on `connection`; `on_lost` runs once if
    /// the lease is lost.
    pub fn start(
        connection: super::Connection,
        lease: Lease,
        lease_ms: u64,
        on_lost: std::sync::Arc<dyn Fn() + Send + Sync>,
    ) -> LeaseKeeper {
        let leading = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(true));
        let (stop, stopped) = std::sync::mpsc::sync_channel::<()>(1);
        let thread = {
            let leading = std::sync::Arc::clone(&leading);
            std::thread::Builder::new()
                .name(format!("lease-{}", lease.chain_id))
                .spawn(move || renew_until_lost(connection, &lease, lease_ms, (&leading, on_lost.as_ref()), &stopped))
                .expect("the lease thread starts")
        };
        LeaseKeeper {
            leading,
            stop,
            thread: Some(thread),
        }
    }

    /// Whether the node still leads the chain, as far as it knows.
    pub fn is_leading(&self) -> bool {
        self.leading.load(std::sync::atomic::Ordering::Acquire)
    }
}

/// The lease thread: renews the lease every third of its length until asked to stop (it then
/// gives the lease up), until another node holds it, or until it runs out unrenewed; after
/// [`HANDOVER_AFTER_LEASES`] leases it hands the chain to its preferred leader. `leading` goes
/// false and `on_lost` runs once when the lease is lost.
fn renew_until_lost(
    mut connection: super::Connection,
    lease: &Lease,
    lease_ms: u64,
    (leading, on_lost): (&std::sync::atomic::AtomicBool, &(dyn Fn() + Send + Sync)),
    stopped: &std::sync::mpsc::Receiver<()>,
) {
    use std::sync::atomic::Ordering;
    use std::time::{Duration, Instant};
    let lease_length = Duration::from_millis(lease_ms);
    let leading_since = Instant::now();
    let mut leads_until = leading_since + lease_length;
    loop {
        match stopped.recv_timeout(lease_length / 3) {
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {}
            Ok(()) | Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => {
                give_up(&mut connection, lease);
                return;
            }
        }
        let sent = Instant::now();
        // A lost connection is made again (the database restarted or failed
        // over): the renewal checks the epoch, so it succeeds only if the lease
        // is still this node's.
        match connection.client().and_then(|client| renew(client, lease, lease_ms)) {
            Ok(true) => {
                leads_until = sent + lease_length;
                if leading_since.elapsed() >= lease_length * HANDOVER_AFTER_LEASES {
                    if let Some(preferred) = preferred_elsewhere(&mut connection, lease, lease_ms) {
                        tracing::info!(
                            chain_id = lease.chain_id,
                            epoch = lease.epoch,
                            to = %preferred,
                            "handing the chain over to its preferred leader, to spread the chains"
                        );
                        leading.store(false, Ordering::Release);
                        on_lost();
                        give_up(&mut connection, lease);
                        return;
                    }
                }
            }
            Ok(false) => {
                tracing::error!(
                    chain_id = lease.chain_id,
                    epoch = lease.epoch,
                    "the chain's lease passed to another node: this node no longer leads it"
                );
                leading.store(false, Ordering::Release);
                on_lost();
                return;
            }
            Err(error) => {
                tracing::warn!(chain_id = lease.chain_id, %error, "cannot renew the chain's lease")
            }
        }
        if Instant::now() >= leads_until {
            tracing::error!(
                chain_id = lease.chain_id,
                epoch = lease.epoch,
                "the chain's lease ran out unrenewed: this node no longer leads it"
            );
            leading.store(false, Ordering::Release);
            on_lost();
            return;
        }
    }
}

/// Releases the lease, so that another node takes the chain at once; a failure only costs the
/// other node the wait for the lease to end.
fn give_up(connection: &mut super::Connection, lease: &Lease) {
    if let Err(error) = connection.client().and_then(|client| release(client, lease)) {
        tracing::warn!(chain_id = lease.chain_id, %error, "cannot give the lease up");
    }
}

/// The chain's preferred leader, if it is another node than the lease's holder.
fn preferred_elsewhere(connection: &mut super::Connection, lease: &Lease, lease_ms: u64) -> Option<String> {
    let client = connection.client().ok()?;
    super::directory::preferred_leader(client, lease.chain_id, lease_ms)
        .ok()
        .flatten()
        .filter(|preferred| *preferred != lease.holder)
}

impl Drop for LeaseKeeper {
    /// Gives the lease up (a clean stop), so that another node takes the chain at once.
    fn drop(&mut self) {
        let _ = self.stop.try_send(());
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}
