//! The public journal as the API serves it (`/audit/journal`): per chain, its finished segments'
//! files, the lock under which one request builds a segment, and the fair gate of its readers.
//! What a page or a segment holds is `handlers::audit`'s and `dexd_audit`'s; this module only
//! keeps what the requests share.

use std::collections::HashMap;
use std::sync::Arc;

use crate::api::fair_share::{FairGate, FairGateLimits};
use dexd_audit::segments::SegmentFiles;

/// The journal's readers per chain: pages and segment builds at once; more wait their address's
/// turn (`api::fair_share`). Two, on a machine whose other cores belong to the writer.
pub const JOURNAL_READER_LIMITS: FairGateLimits = FairGateLimits {
    capacity: 2,
    max_waiting_per_address: 4,
    max_waiting_addresses: 4_096,
    max_wait_ms: 30_000,
};

/// One chain's public journal as served: its segment files, the lock that lets one request
/// build a segment at a time, and the gate of its readers.
pub struct ServedJournal {
    /// The chain's finished segments, as files.
    pub(crate) segments: Arc<SegmentFiles>,
    /// Held while a segment is built, so that one request builds it.
    pub(crate) building: tokio::sync::Mutex<()>,
    /// The gate of the chain's readers.
    pub(crate) readers: Arc<FairGate>,
}

/// Every chain's [`ServedJournal`].
pub struct ServedJournals {
    pub(crate) chains: HashMap<u64, ServedJournal>,
}

impl ServedJournals {
    /// The journals of the venue's chains, their segments kept under each chain's data folder.
    pub fn new(venue: &dexd_venue::Venue) -> ServedJournals {
        let chains = venue
            .chains()
            .map(|chain| {
                let chain_id = chain.chain_id;
                let served = ServedJournal {
                    segments: Arc::new(SegmentFiles::new(chain.data_dir(), chain_id)),
                    building: tokio::sync::Mutex::new(()),
                    readers: FairGate::new(JOURNAL_READER_LIMITS),
                };
                (chain_id, served)
            })
            .collect();
        ServedJournals { chains }
    }
}
