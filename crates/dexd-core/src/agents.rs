//! Agents: keys an account approved to trade for it (a bot's key), each with a name and an
//! optional end. An agent may place, cancel and amend orders, cancel all and set the dead man's
//! switch for the account; it may never move funds or approve agents, which the engine's
//! dispatch enforces with [`AgentRegistry::allows`].
//!
//! Plain state with a documented limit per account; it checks names and limits, it does not
//! check signatures (the caller recovered the agent's address from one).

use std::collections::BTreeMap;

use crate::money::Address;

/// The most agents one account may have approved at once.
pub const MAX_AGENTS_PER_ACCOUNT: usize = 10;
/// The longest agent name, in characters (`A-Z a-z 0-9 . _ -`).
pub const MAX_AGENT_NAME_CHARACTERS: usize = 32;

/// One approval of an agent by an account.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AgentGrant {
    /// The agent's address.
    pub agent: Address,
    /// The account's name for it.
    pub name: String,
    /// When the approval ends, in ms since the epoch; `None`: until revoked.
    pub valid_until_ms: Option<u64>,
    /// When it was approved (or last approved again), in ms since the epoch.
    pub approved_at_ms: u64,
}

/// Why an approval was refused.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum AgentRejection {
    /// The account already has [`MAX_AGENTS_PER_ACCOUNT`] agents.
    TooManyAgents,
    /// The name is empty, too long or has a character outside `A-Z a-z 0-9 . _ -`.
    InvalidName,
    /// An account cannot be its own agent.
    SelfApproval,
    /// `valid_until_ms` is not after the approval.
    AlreadyExpired,
}

/// Whether `name` is a valid agent name.
pub fn is_valid_agent_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_AGENT_NAME_CHARACTERS
        && name
            .bytes()
            .all(|byte| byte.is_ascii_alphanumeric() || matches!(byte, b'.' | b'_' | b'-'))
}

/// Every account's agents. Ordered maps, so that iteration (the state, its hash) is
/// deterministic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AgentRegistry {
    grants: BTreeMap<Address, Vec<AgentGrant>>,
}

impl AgentRegistry {
    /// Approves `grant.agent` for `account`, or renews its approval (name and end replaced).
    pub fn approve(&mut self, account: Address, grant: AgentGrant) -> Result<(), AgentRejection> {
        if !is_valid_agent_name(&grant.name) {
            return Err(AgentRejection::InvalidName);
        }
        if grant.agent == account {
            return Err(AgentRejection::SelfApproval);
        }
        if grant.valid_until_ms.is_some_and(|until| until <= grant.approved_at_ms) {
            return Err(AgentRejection::AlreadyExpired);
        }
        let now_ms = grant.approved_at_ms;
        let is_live = |existing: &AgentGrant| existing.valid_until_ms.is_none_or(|until| until > now_ms);
        let existing = self.grants.get(&account);
        let renews = existing.is_some_and(|grants| grants.iter().any(|existing| existing.agent == grant.agent));
        let live = existing.map_or(0, |grants| grants.iter().filter(|existing| is_live(existing)).count());
        if !renews && live >= MAX_AGENTS_PER_ACCOUNT {
            return Err(AgentRejection::TooManyAgents);
        }
        // Checked: from here on the approval applies. Approvals past their end no longer count
        // against the limit and are dropped now.
        let grants = self.grants.entry(account).or_default();
        grants.retain(|existing| existing.agent != grant.agent && is_live(existing));
        grants.push(grant);
        grants.sort_unstable_by_key(|existing| existing.agent);
        assert!(
            grants.len() <= MAX_AGENTS_PER_ACCOUNT,
            "invariant: an account has at most {MAX_AGENTS_PER_ACCOUNT} agents"
        );
        Ok(())
    }

    /// Ends an approval at once; whether there was one.
    pub fn revoke(&mut self, account: &Address, agent: &Address) -> bool {
        let Some(grants) = self.grants.get_mut(account) else {
            return false;
        };
        let before = grants.len();
        grants.retain(|grant| grant.agent != *agent);
        let revoked = grants.len() < before;
        if grants.is_empty() {
            self.grants.remove(account);
        }
        revoked
    }

    /// Whether `agent` may trade for `account` at `now_ms`.
    pub fn allows(&self, account: &Address, agent: &Address, now_ms: u64) -> bool {
        self.grants.get(account).is_some_and(|grants| {
            grants
                .iter()
                .any(|grant| grant.agent == *agent && grant.valid_until_ms.is_none_or(|until| until > now_ms))
        })
    }

    /// The agents of `account` that are valid at `now_ms`, by address.
    pub fn of_account(&self, account: &Address, now_ms: u64) -> Vec<AgentGrant> {
        self.grants
            .get(account)
            .map(|grants| {
                grants
                    .iter()
                    .filter(|grant| grant.valid_until_ms.is_none_or(|until| until > now_ms))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Every grant, by account then agent: the state a snapshot keeps.
    pub fn all(&self) -> impl Iterator<Item = (&Address, &AgentGrant)> {
        self.grants
            .iter()
            .flat_map(|(account, grants)| grants.iter().map(move |grant| (account, grant)))
    }

    /// The registry holding `grants` (from [`AgentRegistry::all`]); refuses more than the limit
    /// for one account.
    pub fn restore(grants: impl IntoIterator<Item = (Address, AgentGrant)>) -> Result<AgentRegistry, String> {
        let mut registry = AgentRegistry::default();
        for (account, grant) in grants {
            let list = registry.grants.entry(account).or_default();
            if list.len() >= MAX_AGENTS_PER_ACCOUNT || list.iter().any(|existing| existing.agent == grant.agent) {
                return Err(format!("{account} has too many or repeated agents"));
            }
            list.push(grant);
            list.sort_unstable_by_key(|existing| existing.agent);
        }
        Ok(registry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn address(byte: u8) -> Address {
        Address::from_bytes([byte; 20])
    }

    fn grant(agent: u8, valid_until_ms: Option<u64>) -> AgentGrant {
        AgentGrant {
            agent: address(agent),
            name: "bot-1".to_string(),
            valid_until_ms,
            approved_at_ms: 1_000,
        }
    }

    #[test]
    fn an_agent_acts_until_revoked_or_past_its_end() {
        let mut registry = AgentRegistry::default();
        registry.approve(address(1), grant(2, Some(5_000))).unwrap();
        assert!(registry.allows(&address(1), &address(2), 4_999));
        assert!(!registry.allows(&address(1), &address(2), 5_000));
        assert!(
            !registry.allows(&address(3), &address(2), 2_000),
            "approved by another account"
        );
        registry.approve(address(1), grant(2, None)).unwrap();
        assert!(registry.allows(&address(1), &address(2), 9_000));
        assert!(registry.revoke(&address(1), &address(2)));
        assert!(!registry.allows(&address(1), &address(2), 2_000));
        assert!(!registry.revoke(&address(1), &address(2)));
    }

    #[test]
    fn the_limit_names_and_self_approval_are_enforced() {
        let mut registry = AgentRegistry::default();
        for agent in 0..MAX_AGENTS_PER_ACCOUNT {
            registry.approve(address(200), grant(agent as u8 + 10, None)).unwrap();
        }
        assert_eq!(
            registry.approve(address(200), grant(99, None)),
            Err(AgentRejection::TooManyAgents)
        );
        // Renewing an existing agent is not a new one.
        registry.approve(address(200), grant(10, Some(9_000))).unwrap();
        let mut named = grant(99, None);
        named.name = "no spaces".to_string();
        assert_eq!(registry.approve(address(1), named), Err(AgentRejection::InvalidName));
        assert_eq!(
            registry.approve(address(1), grant(1, None)),
            Err(AgentRejection::SelfApproval)
        );
        assert_eq!(
            registry.approve(address(1), grant(2, Some(1_000))),
            Err(AgentRejection::AlreadyExpired)
        );
        assert!(is_valid_agent_name("a.b_c-D9"));
        assert!(!is_valid_agent_name(&"x".repeat(33)));
        let restored =
            AgentRegistry::restore(registry.all().map(|(account, grant)| (*account, grant.clone()))).unwrap();
        assert_eq!(restored, registry);
    }
}
