//! Dead man's switches: per account, the time at which every open order of the account on the
//! chain is cancelled unless the account sets the switch again first.
//!
//! Plain state: at most one switch per account (so the accounts' limit bounds it), ordered by
//! trigger time so that the venue's timer finds the due ones without a scan. It does not cancel
//! anything itself, and it reads no clock: the engine is told the time, and the venue journals
//! the command that fires a switch once its time has come.

use std::collections::{BTreeMap, BTreeSet};

use crate::money::Address;

/// The shortest timeout a switch may be armed with, in ms (0 disarms it).
pub const MIN_CANCEL_ALL_AFTER_MS: u64 = 5_000;
/// The longest timeout a switch may be armed with, in ms (one day).
pub const MAX_CANCEL_ALL_AFTER_MS: u64 = 86_400_000;

/// Every armed switch of a chain.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct CancelAllAfterSwitches {
    by_account: BTreeMap<Address, u64>,
    by_trigger: BTreeSet<(u64, Address)>,
}

impl CancelAllAfterSwitches {
    /// Arms the account's switch for `trigger_at_ms`, replacing any earlier one, or disarms it
    /// (`None`).
    pub fn set(&mut self, account: Address, trigger_at_ms: Option<u64>) {
        if let Some(previous) = self.by_account.remove(&account) {
            self.by_trigger.remove(&(previous, account));
        }
        if let Some(trigger_at_ms) = trigger_at_ms {
            self.by_account.insert(account, trigger_at_ms);
            self.by_trigger.insert((trigger_at_ms, account));
        }
        assert_eq!(
            self.by_account.len(),
            self.by_trigger.len(),
            "invariant: the switch indexes agree"
        );
    }

    /// When the account's switch fires, if it is armed.
    pub fn trigger_of(&self, account: &Address) -> Option<u64> {
        self.by_account.get(account).copied()
    }

    /// The armed switches whose time has come at `now_ms`, earliest first, at most `limit`.
    pub fn due(&self, now_ms: u64, limit: usize) -> Vec<(Address, u64)> {
        self.by_trigger
            .iter()
            .take_while(|(trigger_at_ms, _)| *trigger_at_ms <= now_ms)
            .take(limit)
            .map(|(trigger_at_ms, account)| (*account, *trigger_at_ms))
            .collect()
    }

    /// Every armed switch, by account: the state a snapshot keeps.
    pub fn all(&self) -> impl Iterator<Item = (&Address, &u64)> {
        self.by_account.iter()
    }

    /// How many switches are armed.
    pub fn len(&self) -> usize {
        self.by_account.len()
    }

    /// Whether none is armed.
    pub fn is_empty(&self) -> bool {
        self.by_account.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_switch_set_again_replaces_the_earlier_one_and_due_is_in_time_order() {
        let mut switches = CancelAllAfterSwitches::default();
        let first = Address::from_bytes([1; 20]);
        let second = Address::from_bytes([2; 20]);
        switches.set(first, Some(10_000));
        switches.set(second, Some(8_000));
        switches.set(first, Some(20_000));
        assert_eq!(switches.due(9_000, 10), vec![(second, 8_000)]);
        assert_eq!(switches.due(30_000, 10), vec![(second, 8_000), (first, 20_000)]);
        assert_eq!(switches.due(30_000, 1).len(), 1);
        switches.set(second, None);
        assert_eq!(switches.trigger_of(&second), None);
        assert_eq!(switches.due(30_000, 10), vec![(first, 20_000)]);
        assert_eq!(switches.len(), 1);
    }
}
