//! Agents (`/account/approveAgent`, `revokeAgent`, `agents`): an account approves another key
//! to trade for it. Only the account's own key (or signature) approves or revokes; an agent
//! never does (403 `AGENT_NOT_ALLOWED`). What an agent may do is the engine's to enforce.

use std::sync::Arc;

use dexd_core::{AgentGrant, Command};
use dexd_crypto::checksummed;
use dexd_store::now_ms;
use serde_json::{json, Value};

use super::{own_account_write, own_signature, signing_domain, spend_write_budget, write_error, Answer};
use crate::api::error::ApiError;
use crate::api::operations::{ACCOUNT, AGENT_NAME, AGENT_VALID_UNTIL, APPROVED_AGENT, REVOKED_AGENT};
use crate::api::params::Params;
use crate::api::state::AppState;

/// An agent as the answers write it.
fn agent_object(grant: &AgentGrant) -> Value {
    json!({
        "agent": checksummed(&grant.agent),
        "name": grant.name,
        "validUntil": grant.valid_until_ms,
        "approvedAt": grant.approved_at_ms,
    })
}

/// POST /account/approveAgent
pub async fn approve_agent(app: Arc<AppState>, params: Params) -> Answer {
    let (chain, credential, account) = own_account_write(&app, &params)?;
    let agent = params.require(&APPROVED_AGENT)?;
    let name = params.require(&AGENT_NAME)?;
    let valid_until_ms = params.read(&AGENT_VALID_UNTIL)?;
    if valid_until_ms.is_some_and(|until| until <= now_ms()) {
        return Err(crate::api::error::valid_until_passed());
    }
    if agent == account {
        return Err(crate::api::error::agent_is_account());
    }
    let grant = AgentGrant {
        agent,
        name,
        valid_until_ms,
        approved_at_ms: 0,
    };
    let digest_of =
        |signed| signing_domain(&chain).digest(&chain.markets().messages.approve_agent(&account, &grant, signed));
    let authorization = own_signature(&chain, &credential, &account, digest_of)?;
    spend_write_budget(&app, &chain, &account)?;
    let command = Command::ApproveAgent { account, grant };
    crate::api::written::submit(&chain, command, authorization)
        .await
        .map_err(write_error)?;
    let grant = chain
        .read_engine(|engine| engine.agents_of(&account, now_ms()))
        .into_iter()
        .find(|grant| grant.agent == agent)
        .ok_or_else(|| ApiError::unavailable("the approval ended before it could be read back"))?;
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&account),
        "agent": agent_object(&grant),
    }))
}

/// POST /account/revokeAgent
pub async fn revoke_agent(app: Arc<AppState>, params: Params) -> Answer {
    let (chain, credential, account) = own_account_write(&app, &params)?;
    let agent = params.require(&REVOKED_AGENT)?;
    let digest_of =
        |signed| signing_domain(&chain).digest(&chain.markets().messages.revoke_agent(&account, &agent, signed));
    let authorization = own_signature(&chain, &credential, &account, digest_of)?;
    spend_write_budget(&app, &chain, &account)?;
    crate::api::written::submit(&chain, Command::RevokeAgent { account, agent }, authorization)
        .await
        .map_err(write_error)?;
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&account),
        "agent": checksummed(&agent),
        "revoked": true,
    }))
}

/// GET /account/agents
pub async fn agents(app: Arc<AppState>, params: Params) -> Answer {
    let chain = params.chain(&app.venue)?;
    let account = params.require(&ACCOUNT)?;
    let grants = chain.read_engine(|engine| engine.agents_of(&account, now_ms()));
    let agents: Vec<Value> = grants.iter().map(agent_object).collect();
    Ok(json!({
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&account),
        "agents": agents,
    }))
}
