//! What every request of the API shares ([`AppState`]): the venue, custody, the streams, the
//! rate limits, the cluster, the served journal and the server's gauges. Every handler, the
//! router and the stream connections take it; it holds no request logic beyond charging a
//! batch's items to its client's budget.

use std::net::IpAddr;
use std::sync::Arc;

use tokio::sync::Semaphore;

use super::error::{too_many_requests, ApiError};
use super::operations::{BATCH_CANCEL_ITEMS, BATCH_ORDER_ITEMS};
use super::params::Params;
use super::rate_limit::RateLimits;
use super::served_journals::ServedJournals;
use super::streams::Streams;
use dexd_custody::Custodians;
use dexd_venue::Venue;

/// Everything the API serves: the venue's chains, and the custody of its vault chains.
pub struct AppState {
    /// The venue: its chains, limits and rate limits.
    pub venue: Arc<Venue>,
    /// The watchers and payers of the vault chains (none on ledger chains).
    pub custody: Arc<Custodians>,
    /// The live streams (`/ws`).
    pub streams: Arc<Streams>,
    /// The server's metrics.
    pub telemetry: Arc<dexd_venue::telemetry::Telemetry>,
    /// The server's HTTP connections, to report them.
    pub connections: ConnectionGauge,
    /// Addresses of keys seen recently.
    pub addresses: dexd_crypto::AddressCache,
    /// Request budgets per client IP and per account.
    pub rate_limits: RateLimits,
    /// This node in its cluster (a cluster of one on the embedded journal).
    pub cluster: Arc<crate::cluster::Cluster>,
    /// The HTTP client that forwards writes to a chain's leader.
    pub forwarder: alloy_reqwest::Client,
    /// Whether the built-in demo market runs (`dexd serve --demo`): the page says so.
    pub demo: bool,
    /// The public journal as served: segment files and the readers' fair gates.
    pub journals: ServedJournals,
}

impl AppState {
    /// A batch's items beyond the first taken from the client address's budget: each item's
    /// signature is checked (or made) on its own, so a batch of 50 costs what 50 requests do, over
    /// HTTP as over the stream.
    pub(crate) fn charge_batch_items(&self, client: IpAddr, params: &Params) -> Result<(), ApiError> {
        let items = params
            .list_length(&BATCH_ORDER_ITEMS)
            .max(params.list_length(&BATCH_CANCEL_ITEMS));
        let more = u32::try_from(items.saturating_sub(1)).unwrap_or(u32::MAX);
        self.rate_limits
            .check_ip_more(client, more)
            .map_err(|wait| too_many_requests("this address is sending batch items faster than allowed", wait))
    }
}

/// The server's HTTP connection limit, to report how much of it is in use.
#[derive(Clone)]
pub struct ConnectionGauge {
    /// The semaphore the accept loop takes a permit of per connection.
    pub semaphore: Arc<Semaphore>,
    /// Its number of permits (`[limits] max_connections`).
    pub capacity: usize,
}

impl ConnectionGauge {
    /// Connections open now.
    pub fn open(&self) -> usize {
        self.capacity.saturating_sub(self.semaphore.available_permits())
    }
}
