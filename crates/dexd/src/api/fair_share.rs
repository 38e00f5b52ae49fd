//! Fair shares of a scarce reader's slot among client addresses: at most `capacity` holders at
//! once, and when all are taken the waiters are served one address at a time in turn, so that a
//! flood from some addresses makes each of the others wait for one turn per flooding address,
//! never for the flood. The public journal's pages and segments are read through it
//! (`handlers::audit`), so a guardian's read comes even while others hammer the journal.
//!
//! It does not rate-limit (the client address's budget does that, `rate_limit`) and does not
//! tell addresses apart behind a proxy (the connection's address is the client's, as for the
//! rate limit).

use std::collections::{HashMap, VecDeque};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::oneshot;

/// Why a reader was turned away.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Refusal {
    /// Its address already has as many readers waiting as one address may.
    TooManyFromAddress,
    /// As many addresses are waiting as the gate keeps, or its wait ran out.
    Busy,
}

/// The limits of a [`FairGate`].
#[derive(Debug, Clone, Copy)]
pub struct FairGateLimits {
    /// Holders at once.
    pub capacity: usize,
    /// Readers of one address waiting at once (more get [`Refusal::TooManyFromAddress`]).
    pub max_waiting_per_address: usize,
    /// Addresses waiting at once (more get [`Refusal::Busy`]).
    pub max_waiting_addresses: usize,
    /// How long a reader waits for its turn before [`Refusal::Busy`].
    pub max_wait_ms: u64,
}

struct GateState {
    holders: usize,
    /// Each waiting address's readers, oldest first.
    waiting: HashMap<IpAddr, VecDeque<oneshot::Sender<()>>>,
    /// The waiting addresses in the order of their turns.
    turns: VecDeque<IpAddr>,
}

/// A gate that hands its slots out in turn by client address.
pub struct FairGate {
    limits: FairGateLimits,
    state: parking_lot::Mutex<GateState>,
}

/// A slot of the gate, given back when dropped.
pub struct FairPermit {
    gate: Arc<FairGate>,
}

impl Drop for FairPermit {
    fn drop(&mut self) {
        self.gate.hand_on();
    }
}

impl FairGate {
    /// A gate with `limits`.
    pub fn new(limits: FairGateLimits) -> Arc<FairGate> {
        assert!(limits.capacity > 0, "a gate lets someone through");
        Arc::new(FairGate {
            limits,
            state: parking_lot::Mutex::new(GateState {
                holders: 0,
                waiting: HashMap::new(),
                turns: VecDeque::new(),
            }),
        })
    }

    /// A slot for a reader from `address`: at once when one is free and nobody waits, else on
    /// its address's turn.
    pub async fn enter(self: &Arc<Self>, address: IpAddr) -> Result<FairPermit, Refusal> {
        let mut turn = {
            let mut state = self.state.lock();
            if state.holders < self.limits.capacity && state.turns.is_empty() {
                state.holders += 1;
                return Ok(FairPermit { gate: Arc::clone(self) });
            }
            let addresses_waiting = state.waiting.len();
            let queue_exists = state.waiting.contains_key(&address);
            if !queue_exists && addresses_waiting >= self.limits.max_waiting_addresses {
                return Err(Refusal::Busy);
            }
            let queue = state.waiting.entry(address).or_default();
            if queue.len() >= self.limits.max_waiting_per_address {
                return Err(Refusal::TooManyFromAddress);
            }
            let (handed, turn) = oneshot::channel();
            queue.push_back(handed);
            if !queue_exists {
                state.turns.push_back(address);
            }
            turn
        };
        let wait = Duration::from_millis(self.limits.max_wait_ms);
        match tokio::time::timeout(wait, &mut turn).await {
            Ok(Ok(())) => Ok(FairPermit { gate: Arc::clone(self) }),
            Ok(Err(_)) => Err(Refusal::Busy),
            Err(_) => {
                // A slot handed over just as the wait ran out is this reader's: taken and kept.
                // Otherwise the closed receiver makes the gate pass its turn on.
                turn.close();
                match turn.try_recv() {
                    Ok(()) => Ok(FairPermit { gate: Arc::clone(self) }),
                    Err(_) => Err(Refusal::Busy),
                }
            }
        }
    }

    /// Gives a slot back: to the next address in turn that still waits, or to the gate.
    fn hand_on(&self) {
        let mut state = self.state.lock();
        while let Some(address) = state.turns.pop_front() {
            let Some(queue) = state.waiting.get_mut(&address) else {
                continue;
            };
            let next = queue.pop_front();
            if queue.is_empty() {
                state.waiting.remove(&address);
            } else {
                state.turns.push_back(address);
            }
            if let Some(next) = next {
                if next.send(()).is_ok() {
                    return;
                }
            }
        }
        assert!(state.holders > 0, "a slot given back was taken");
        state.holders -= 1;
    }

    /// Slots held now.
    #[cfg(test)]
    fn holders(&self) -> usize {
        self.state.lock().holders
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn gate(capacity: usize) -> Arc<FairGate> {
        FairGate::new(FairGateLimits {
            capacity,
            max_waiting_per_address: 100,
            max_waiting_addresses: 10,
            max_wait_ms: 5_000,
        })
    }

    fn address(last: u8) -> IpAddr {
        IpAddr::from([10, 0, 0, last])
    }

    #[tokio::test]
    async fn a_flooding_address_waits_its_turn_behind_a_single_reader() {
        let gate = gate(1);
        let held = gate.enter(address(1)).await.unwrap();
        let (order_sender, mut order) = tokio::sync::mpsc::unbounded_channel();
        // Twenty readers from one address queue first, then one from another.
        let mut readers = Vec::new();
        for number in 0..20u8 {
            let (gate, order_sender) = (Arc::clone(&gate), order_sender.clone());
            readers.push(tokio::spawn(async move {
                let permit = gate.enter(address(1)).await.unwrap();
                order_sender.send(number).unwrap();
                tokio::task::yield_now().await;
                drop(permit);
            }));
            tokio::task::yield_now().await;
        }
        let (other_gate, other_sender) = (Arc::clone(&gate), order_sender.clone());
        readers.push(tokio::spawn(async move {
            let permit = other_gate.enter(address(2)).await.unwrap();
            other_sender.send(100).unwrap();
            drop(permit);
        }));
        tokio::task::yield_now().await;
        drop(held);
        for reader in readers {
            reader.await.unwrap();
        }
        let mut served = Vec::new();
        while let Ok(number) = order.try_recv() {
            served.push(number);
        }
        assert_eq!(served.len(), 21);
        // The other address is served second: after one of the flood's, not after all of them.
        assert_eq!(served.iter().position(|&number| number == 100), Some(1), "{served:?}");
        assert_eq!(gate.holders(), 0);
    }

    #[tokio::test]
    async fn limits_turn_readers_away_and_a_wait_that_runs_out_gives_nothing_back_twice() {
        let gate = FairGate::new(FairGateLimits {
            capacity: 1,
            max_waiting_per_address: 1,
            max_waiting_addresses: 1,
            max_wait_ms: 50,
        });
        let held = gate.enter(address(1)).await.unwrap();
        let waiting = {
            let gate = Arc::clone(&gate);
            tokio::spawn(async move { gate.enter(address(1)).await.map(drop) })
        };
        tokio::task::yield_now().await;
        assert_eq!(gate.enter(address(1)).await.err(), Some(Refusal::TooManyFromAddress));
        assert_eq!(gate.enter(address(2)).await.err(), Some(Refusal::Busy));
        assert_eq!(waiting.await.unwrap().err(), Some(Refusal::Busy), "the wait ran out");
        drop(held);
        assert_eq!(gate.holders(), 0);
        let again = gate.enter(address(3)).await.unwrap();
        assert_eq!(gate.holders(), 1);
        drop(again);
        assert_eq!(gate.holders(), 0);
    }
}
