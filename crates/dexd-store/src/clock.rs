//! The wall clock that stamps journaled commands.
//!
//! The engine reads no clock: the writer passes this time in with each command and journals it,
//! so that a replay runs every command at the time it first ran. Custody uses the same clock for
//! the times it records. Nothing else here reads the time.

use std::time::{SystemTime, UNIX_EPOCH};

/// The wall clock in ms since the Unix epoch (0 before the epoch, `u64::MAX` far after it).
pub fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|elapsed| u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX))
        .unwrap_or(0)
}
