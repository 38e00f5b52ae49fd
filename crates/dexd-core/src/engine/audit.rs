//! Whole-state checks of the engine: [`Engine::state_hash`], which two engines in the same
//! state share (replay, snapshots and tests compare it), and [`Engine::check_invariants`], the
//! slow audit of every invariant (untriggered orders, groups and expiries included) that tests and audits run. Neither changes anything.

use rustc_hash::FxHashMap;

use super::matching::{paid_asset, required_lock};
use super::Engine;
use crate::custody::CustodyMode;
use crate::ledger::AccountSlot;
use crate::market_data::Position;
use crate::money::{Address, AssetIndex, Price};
use crate::order::{OrderRecord, OrderStatus};
use crate::state_hash::StateHasher;

impl Engine {
    /// Feeds the journaled configuration to the state hash: the rules, the domain and the
    /// assets' names, so that two engines share a hash only under one configuration.
    fn hash_configuration(&self, hasher: &mut StateHasher) {
        let Some(description) = &self.description else {
            return;
        };
        hasher.update(b"configuration");
        hasher.update(description.chain_id.to_be_bytes());
        hasher.update(description.venue_contract.as_bytes());
        for (spec, asset) in self.config.assets.iter().zip(&description.assets) {
            hasher.update_with_length(asset.symbol.as_bytes());
            hasher.update(asset.token.map_or([0u8; 21], |token| {
                let mut bytes = [1u8; 21];
                bytes[1..].copy_from_slice(token.as_bytes());
                bytes
            }));
            hasher.update(spec.decimals.to_be_bytes());
        }
        hasher.update((self.config.pairs.len() as u64).to_be_bytes());
        for pair in &self.config.pairs {
            hasher.update(pair.base.0.to_be_bytes());
            hasher.update(pair.quote.0.to_be_bytes());
            for decimal in [pair.tick_size, pair.step_size, pair.min_amount, pair.min_notional] {
                hasher.update(decimal.mantissa().to_be_bytes());
                hasher.update(decimal.scale().to_be_bytes());
            }
            hasher.update(pair.maker_fee.parts_per_million().to_be_bytes());
            hasher.update(pair.taker_fee.parts_per_million().to_be_bytes());
            match pair.fee_raise {
                None => hasher.update([0]),
                Some(raise) => {
                    hasher.update([1]);
                    hasher.update(raise.maker_fee.parts_per_million().to_be_bytes());
                    hasher.update(raise.taker_fee.parts_per_million().to_be_bytes());
                    hasher.update(raise.effective_at_ms.to_be_bytes());
                }
            }
        }
        hasher.update(self.config.fee_account.as_bytes());
        hasher.update([u8::from(self.config.custody == CustodyMode::Vault)]);
        let limits = self.config.limits;
        for limit in [
            u64::from(limits.max_open_orders_per_account),
            limits.max_resting_orders as u64,
            limits.max_accounts as u64,
            limits.max_live_nonces as u64,
            limits.max_live_nonces_per_account as u64,
            limits.max_pending_transfers as u64,
            limits.fee_notice_ms,
        ] {
            hasher.update(limit.to_be_bytes());
        }
        // Only a configuration with rules feeds them: one without hashes as before they existed.
        if limits.rules != 0 {
            hasher.update(b"rules");
            hasher.update(limits.rules.to_be_bytes());
        }
    }

    /// A BLAKE3 hash of the whole state: balances, books with their time priority, positions,
    /// candles, counters, custody. Two engines with equal hashes hold the same state.
    pub fn state_hash(&self) -> [u8; 32] {
        let mut hasher = StateHasher::new();
        if self.description.is_some() {
            self.hash_configuration(&mut hasher);
        }
        hasher.update(self.next_order_sequence.to_be_bytes());
        hasher.update(self.next_trade_id.to_be_bytes());
        hasher.update(self.journal_sequence.to_be_bytes());
        for (address, balances) in self.ledger.accounts_sorted() {
            hasher.update(address.as_bytes());
            for balance in balances {
                hasher.update(balance.available.units().to_be_bytes());
                hasher.update(balance.locked.units().to_be_bytes());
            }
        }
        for index in 0..self.assets.len() {
            let asset = AssetIndex(u16::try_from(index).expect("asset count fits u16"));
            hasher.update(self.ledger.net_deposits(asset).units().to_be_bytes());
        }
        for state in &self.pairs {
            hash_pair_state(&mut hasher, state);
        }
        let mut positions: Vec<(Address, &Vec<Position>)> = self
            .positions
            .iter()
            .enumerate()
            .filter(|(_, positions)| !positions.is_empty())
            .map(|(index, positions)| (self.ledger.address(AccountSlot::from_index(index)), positions))
            .collect();
        positions.sort_unstable_by_key(|(address, _)| *address);
        for (expiry_ms, account, nonce, signer) in self.nonces.iter_in_order() {
            hasher.update(expiry_ms.to_be_bytes());
            hasher.update(account.as_bytes());
            hasher.update(nonce.as_bytes());
            hasher.update(signer.as_bytes());
        }
        for (account, nonce, batch) in self.nonces.batches_in_order() {
            hasher.update(account.as_bytes());
            hasher.update(nonce.as_bytes());
            hasher.update(batch.identity);
            hasher.update(batch.applied.to_be_bytes());
        }
        self.custody.hash_into(&mut hasher);
        self.hash_agents_and_switches(&mut hasher);
        // Only a state with subaccounts feeds them: a state without hashes as it did before
        // they existed, so published hashes of older journals still match.
        if !self.subaccounts.is_empty() {
            hasher.update(b"subaccounts");
            self.subaccounts.hash_into(&mut hasher);
        }
        // Likewise halts: only a chain with a halted pair feeds them.
        let halted = self.halted_pairs();
        if !halted.is_empty() {
            hasher.update(b"halted");
            for pair in halted {
                hasher.update(pair.0.to_be_bytes());
            }
        }
        // Likewise met triggers waiting to fire: only while some wait.
        let met_pending = self.met_pending();
        if !met_pending.is_empty() {
            hasher.update(b"met");
            for (pair, range) in met_pending {
                hasher.update(pair.0.to_be_bytes());
                hasher.update(range.first_price.ticks().to_be_bytes());
                hasher.update(range.last_price.ticks().to_be_bytes());
                hasher.update(range.sequence_mark.to_be_bytes());
                hasher.update([u8::from(range.on_second_side)]);
                if let Some((price, sequence, order_id)) = range.cursor {
                    hasher.update(price.ticks().to_be_bytes());
                    hasher.update(sequence.to_be_bytes());
                    hasher.update(order_id.as_bytes());
                }
            }
        }
        // Likewise TWAPs: only a chain that has had one feeds them.
        if !self.twaps.is_empty() {
            hasher.update(b"twaps");
            self.twaps.hash_into(&mut hasher);
        }
        for (address, positions) in positions {
            hasher.update(address.as_bytes());
            for position in positions {
                hasher.update(position.net_base.to_be_bytes());
                hasher.update(position.open_cost_quote.to_be_bytes());
                hasher.update(position.realized_pnl_quote.to_be_bytes());
            }
        }
        hasher.finalize()
    }

    /// Every owner's count of its subaccounts' open orders is what their books hold, and every
    /// known subaccount's address is its owner's and number's.
    fn check_subaccount_counts(&self) -> Result<(), String> {
        let state = self.subaccounts.state();
        let mut counted: FxHashMap<Address, u32> = FxHashMap::default();
        for (owner, number) in &state.subaccounts {
            let address = crate::subaccounts::subaccount_address(owner, *number);
            if self.subaccounts.owner_of(&address) != Some((*owner, *number)) {
                return Err(format!("subaccount {number} of {owner} is not known at its address"));
            }
            *counted.entry(*owner).or_default() += self.open_order_count(&address);
        }
        for (owner, count) in counted {
            let kept = self.subaccounts.open_orders_of_subaccounts(&owner);
            if kept != count {
                return Err(format!(
                    "{owner}'s subaccounts hold {count} open orders, counted {kept}"
                ));
            }
        }
        Ok(())
    }

    /// The agents and the dead man's switches, for the state hash.
    fn hash_agents_and_switches(&self, hasher: &mut StateHasher) {
        for (account, grant) in self.agents.all() {
            hasher.update(account.as_bytes());
            hasher.update(grant.agent.as_bytes());
            hasher.update((grant.name.len() as u64).to_be_bytes());
            hasher.update(grant.name.as_bytes());
            hasher.update(grant.valid_until_ms.map_or(u64::MAX, |until| until).to_be_bytes());
            hasher.update(grant.approved_at_ms.to_be_bytes());
        }
        for (account, trigger_at_ms) in self.switches.all() {
            hasher.update(account.as_bytes());
            hasher.update(trigger_at_ms.to_be_bytes());
        }
    }

    /// Checks every invariant of the whole state; slow, for tests and audits:
    /// no book is crossed and each is well formed; every open order's lock is exactly what its
    /// remainder needs; every account's locked balance is the sum of its open orders' locks;
    /// per asset, all totals (fee account included) sum to deposits minus withdrawals; the
    /// indexes (locations, open order counts, client order ids) agree with the books.
    pub fn check_invariants(&self) -> Result<(), String> {
        let mut expected_locks: FxHashMap<(Address, AssetIndex), u128> = FxHashMap::default();
        let mut expected_counts: FxHashMap<Address, u32> = FxHashMap::default();
        self.check_resting_orders(&mut expected_locks, &mut expected_counts)?;
        self.check_waiting_orders(&mut expected_locks, &mut expected_counts)?;
        self.check_groups_and_expiries()?;
        self.check_subaccount_counts()?;
        for (address, balances) in self.ledger.accounts_sorted() {
            for (index, balance) in balances.iter().enumerate() {
                let asset = AssetIndex(u16::try_from(index).expect("asset count fits u16"));
                let expected = expected_locks.get(&(*address, asset)).copied().unwrap_or(0);
                if balance.locked.units() != expected {
                    return Err(format!(
                        "{address} locks {} of asset {index}, its orders {expected}",
                        balance.locked.units()
                    ));
                }
            }
        }
        self.check_open_order_lists(&expected_counts)?;
        self.custody.check_invariants()?;
        if self.custody.mode() == CustodyMode::Vault {
            self.custody.liabilities().check_against(&self.ledger)?;
        }
        self.ledger.check_conservation()
    }

    /// Every resting order: its book well formed, its lock what its remainder needs, open, and
    /// in the order index; what it locks and counts added to the accounts' expected figures.
    fn check_resting_orders(
        &self,
        expected_locks: &mut FxHashMap<(Address, AssetIndex), u128>,
        expected_counts: &mut FxHashMap<Address, u32>,
    ) -> Result<(), String> {
        let mut resting = 0usize;
        for (index, state) in self.pairs.iter().enumerate() {
            state.book.check_structure()?;
            for record in state.book.orders_in_priority() {
                resting += 1;
                let required = required_lock(&state.spec, record);
                if record.locked != required {
                    return Err(format!(
                        "order {} locks {:?}, needs {:?}",
                        record.terms.order_id, record.locked, required
                    ));
                }
                if record.status != OrderStatus::Open || record.remaining().is_zero() {
                    return Err(format!("order {} rests but is not open", record.terms.order_id));
                }
                let asset = paid_asset(&state.spec, record.terms.direction);
                *expected_locks.entry((record.terms.account, asset)).or_default() += record.locked.units();
                *expected_counts.entry(record.terms.account).or_default() += 1;
                match self.order_locations.get(&record.terms.order_id) {
                    Some((pair, _)) if usize::from(pair.0) == index => {}
                    _ => return Err(format!("order {} missing from the index", record.terms.order_id)),
                }
            }
        }
        if resting != self.order_locations.len() {
            return Err("the order index holds orders that no book does".to_string());
        }
        Ok(())
    }

    /// Every untriggered order: its trigger book well formed, its lock its share of its group's,
    /// untriggered and unfilled, in the waiting index and nowhere else; what it locks and counts
    /// added to the accounts' expected figures.
    fn check_waiting_orders(
        &self,
        expected_locks: &mut FxHashMap<(Address, AssetIndex), u128>,
        expected_counts: &mut FxHashMap<Address, u32>,
    ) -> Result<(), String> {
        let mut waiting = 0usize;
        for (index, state) in self.pairs.iter().enumerate() {
            state.triggers.check_structure()?;
            for record in state.triggers.orders_by_sequence() {
                waiting += 1;
                let order_id = record.terms.order_id;
                let share = self.oco_share(&state.spec, record);
                if record.locked != share {
                    return Err(format!(
                        "untriggered order {order_id} locks {:?}, its share is {share:?}",
                        record.locked
                    ));
                }
                // (A trigger the last price meets may still wait: in its pair's queue of met
                // ranges, or in a journal from before that rule, beyond one command's bound.)
                if record.status != OrderStatus::Untriggered || !record.filled.is_zero() {
                    return Err(format!("order {order_id} waits but is not untriggered, or has filled"));
                }
                if self.waiting_orders.get(&order_id).map(|pair| usize::from(pair.0)) != Some(index) {
                    return Err(format!("order {order_id} missing from the waiting index"));
                }
                let asset = paid_asset(&state.spec, record.terms.direction);
                *expected_locks.entry((record.terms.account, asset)).or_default() += record.locked.units();
                *expected_counts.entry(record.terms.account).or_default() += 1;
            }
        }
        if waiting != self.waiting_orders.len() {
            return Err("the waiting index holds orders that no trigger book does".to_string());
        }
        if self
            .waiting_orders
            .keys()
            .any(|order_id| self.order_locations.contains_key(order_id))
        {
            return Err("an order id both rests and waits".to_string());
        }
        Ok(())
    }

    /// Each account's list of open orders holds exactly its resting orders (`expected_counts`
    /// of them, counted from the books), and the client order ids index exactly the resting
    /// orders that have one.
    fn check_open_order_lists(&self, expected_counts: &FxHashMap<Address, u32>) -> Result<(), String> {
        let counts: FxHashMap<Address, u32> = self
            .open_orders
            .iter()
            .enumerate()
            .filter(|(_, orders)| !orders.is_empty())
            .map(|(index, orders)| {
                let count = u32::try_from(orders.len()).expect("open orders per account fit u32");
                (self.ledger.address(AccountSlot::from_index(index)), count)
            })
            .collect();
        if &counts != expected_counts {
            return Err("open order counts disagree with the books".to_string());
        }
        self.open_orders.check_waiting_positions()?;
        for (index, orders) in self.open_orders.iter().enumerate() {
            let slot = AccountSlot::from_index(index);
            let owner = self.ledger.address(slot);
            // Each resting entry names a live order of this account, whose node keeps this
            // place, and which the index by id finds there.
            for (position, (pair, key)) in orders.resting.iter().enumerate() {
                let entry = self
                    .pairs
                    .get(usize::from(pair.0))
                    .and_then(|state| state.book.checked_get(*key));
                let Some((record, account_slot, owner_position)) = entry else {
                    return Err(format!("{owner} lists a resting order where none rests"));
                };
                let order_id = record.terms.order_id;
                if record.terms.account != owner || account_slot != slot {
                    return Err(format!("order {order_id} is listed as open for {owner} but is not"));
                }
                if owner_position as usize != position {
                    return Err(format!("order {order_id} is not at the place its book keeps"));
                }
                if self.order_locations.get(&order_id) != Some(&(*pair, *key)) {
                    return Err(format!(
                        "order {order_id} is listed where the index by id does not put it"
                    ));
                }
            }
            for order_id in &orders.waiting {
                if self.open_order(order_id).map(|record| record.terms.account) != Some(owner) {
                    return Err(format!("order {order_id} is listed as open for {owner} but is not"));
                }
                if !self.waiting_orders.contains_key(order_id) {
                    return Err(format!(
                        "{owner}'s resting and waiting orders are listed in each other's place"
                    ));
                }
            }
        }
        let client_ids: usize = self.client_order_ids.values().map(|ids| ids.len()).sum();
        let with_client_ids = self
            .order_locations
            .keys()
            .chain(self.waiting_orders.keys())
            .filter(|id| {
                self.open_order(id)
                    .is_some_and(|record| record.terms.client_order_id.is_some())
            })
            .count();
        if client_ids != with_client_ids {
            return Err("client order ids disagree with the books".to_string());
        }
        Ok(())
    }
}

impl Engine {
    /// Each group holds one or two open orders of one account, pair and direction, at most one
    /// of them without a trigger; the expiry index holds exactly the open orders that expire.
    fn check_groups_and_expiries(&self) -> Result<(), String> {
        for ((account, group), members) in &self.oco_groups {
            let records: Vec<&OrderRecord> = members.iter().filter_map(|member| self.open_order(member)).collect();
            if records.len() != members.len() || records.is_empty() || records.len() > 2 {
                return Err(format!(
                    "group {group} holds orders that are not open, or none, or three"
                ));
            }
            let first = &records[0].terms;
            let alike = records.iter().all(|record| {
                record.terms.account == *account
                    && record.terms.pair == first.pair
                    && record.terms.direction == first.direction
                    && record.terms.conditions().oco_group.as_ref() == Some(group)
            });
            let resting = records
                .iter()
                .filter(|record| record.terms.conditions().trigger.is_none())
                .count();
            if !alike || resting > 1 {
                return Err(format!("group {group} mixes orders, or two of them rest"));
            }
        }
        let expiring = self
            .order_locations
            .keys()
            .chain(self.waiting_orders.keys())
            .filter_map(|order_id| self.open_order(order_id))
            .filter_map(|record| Some((record.terms.conditions().expires_at_ms?, record.terms.order_id)));
        let expected: std::collections::BTreeSet<(u64, crate::money::OrderId)> = expiring.collect();
        if expected != self.expiries {
            return Err("the expiry index disagrees with the open orders".to_string());
        }
        Ok(())
    }
}

/// A pair's part of the state hash: its last price, its book in time priority, its waiting
/// orders (only when some wait), its candles.
fn hash_pair_state(hasher: &mut StateHasher, state: &super::PairState) {
    hasher.update(state.last_price.map_or(0, Price::ticks).to_be_bytes());
    for record in state.book.orders_in_priority() {
        hash_order(hasher, record);
    }
    // Only when some wait, so that a state without conditional orders hashes as it did
    // before they existed (the journals' published state hashes stay checkable).
    if !state.triggers.is_empty() {
        hasher.update(b"untriggered");
        hasher.update((state.triggers.len() as u64).to_be_bytes());
        for record in state.triggers.orders_by_sequence() {
            hash_order(hasher, record);
        }
    }
    for candle in state.candles.all() {
        for value in [
            candle.open_time_ms,
            candle.open.ticks(),
            candle.high.ticks(),
            candle.low.ticks(),
            candle.close.ticks(),
            candle.trades,
        ] {
            hasher.update(value.to_be_bytes());
        }
        hasher.update(candle.volume.units().to_be_bytes());
        hasher.update(candle.quote_volume.units().to_be_bytes());
    }
}

fn hash_order(hasher: &mut StateHasher, record: &OrderRecord) {
    hasher.update(record.terms.order_id.as_bytes());
    hasher.update(record.terms.account.as_bytes());
    hasher.update_with_length(record.terms.client_order_id.as_deref().unwrap_or("").as_bytes());
    hasher.update([
        record.terms.direction as u8,
        record.terms.time_in_force as u8,
        u8::from(record.terms.post_only),
    ]);
    hasher.update(record.terms.price.map_or(0, Price::ticks).to_be_bytes());
    for value in [
        record.terms.quantity.lots(),
        record.filled.lots(),
        record.created_at_ms,
        record.updated_at_ms,
        record.sequence,
    ] {
        hasher.update(value.to_be_bytes());
    }
    for value in [record.cost, record.fee, record.locked] {
        hasher.update(value.units().to_be_bytes());
    }
    let conditions = record.terms.conditions();
    if !conditions.is_empty() {
        hasher.update(b"conditions");
        match conditions.trigger {
            None => hasher.update([0u8; 9]),
            Some(trigger) => {
                hasher.update([1 + trigger.condition as u8]);
                hasher.update(trigger.price.ticks().to_be_bytes());
            }
        }
        hasher.update_with_length(conditions.oco_group.as_deref().unwrap_or("").as_bytes());
        hasher.update(conditions.expires_at_ms.unwrap_or(0).to_be_bytes());
    }
}
