//! Who authorises a state change: the account's `privateKey` (the venue signs for the client and
//! drops the key), or the client's own EIP-712 signature with `account`, `nonce` and `expiry`.
//!
//! Either way the result is an [`Authorization`] over the digest of the request's typed data,
//! whose signer is the account. This module checks the form of the credential and the signature;
//! it does not claim nonces (the chain's writer does, in order, so that two requests with one
//! nonce cannot both pass) and it does not build the typed data (the handlers do).

use axum::http::StatusCode;
use dexd_core::{Address, OrderId, MAX_SIGNED_REQUEST_LIFETIME_MS};

use super::error::{signature_expired, ApiError};
use super::params::CredentialFields;
#[cfg(doc)]
use super::params::Params;
use dexd_crypto::{hex_prefixed, recover_signer, AddressCache, PrivateKey};
use dexd_store::Authorization;

/// How far ahead of the request's arrival the venue's signature for a `privateKey` request
/// expires. The engine takes a venue-signed command only while its time is within
/// `dexd_core::MAX_VENUE_SIGNED_WINDOW_MS` of that expiry, so this one is applied from 2.5 s
/// before its arrival (the leader's clock) to 7.5 s after: a writer's queue may hold it that
/// long, and nothing older than that is ever applied.
pub const VENUE_SIGNED_EXPIRY_AHEAD_MS: u64 = 2_500;

/// Who a request acts for, and the agent acting for it, if one is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Actor {
    /// The account whose orders and balances change.
    pub account: Address,
    /// The agent's address, when another key than the account's acts for it.
    pub agent: Option<Address>,
}

impl Actor {
    /// The command as the engine must see it: an agent's wrapped, so that the engine checks
    /// the approval when it applies the command (a revocation a moment before counts).
    pub fn command(&self, command: dexd_core::Command) -> dexd_core::Command {
        match self.agent {
            None => command,
            Some(agent) => dexd_core::Command::ByAgent {
                agent,
                command: Box::new(command),
            },
        }
    }

    /// The actor of a key that acts in the account's subaccount `number` (0: the account
    /// itself): the subaccount's address is the account, and the key acts for it as its owner
    /// or the owner's agent (the engine checks which, as for any agent).
    pub fn in_subaccount(self, number: u32) -> Actor {
        if number == 0 {
            return self;
        }
        Actor {
            account: dexd_core::subaccount_address(&self.account, number),
            agent: Some(self.agent.unwrap_or(self.account)),
        }
    }

    /// 403 `AGENT_NOT_ALLOWED` when an agent acts: for what only the account's own key may do.
    pub fn require_own_key(&self) -> Result<(), ApiError> {
        match self.agent {
            None => Ok(()),
            Some(_) => Err(super::error::agent_not_allowed()),
        }
    }
}

/// A request's credential, checked for form but not yet for its signature.
pub enum Credential {
    /// The account's key; the venue signs with it.
    Key {
        /// The key.
        key: PrivateKey,
        /// The chain's venue time when the request came, in ms since the epoch: the venue's
        /// signature expires a few seconds after it, by the clock the engine judges it with
        /// (which follows a chain whose blocks run ahead of the wall clock).
        venue_now_ms: u64,
    },
    /// The client's own signature.
    Signed {
        /// The account that claims to have signed.
        account: Address,
        /// The signed nonce.
        nonce: [u8; 32],
        /// The signed expiry, in ms since the epoch.
        expiry_ms: u64,
        /// The 65-byte `r ‖ s ‖ v` signature.
        signature: [u8; 65],
        /// How far ahead `expiry_ms` was when the request came, in ms. One further ahead than
        /// `max_lifetime_ms` is refused only once the signature is known good, so that a forged
        /// request learns nothing but `INVALID_SIGNATURE`, and any well-formed expiry gets an
        /// answer about the signature.
        lifetime_ms: u64,
        /// The longest this request may live: a signed request's hour, or a withdrawal's week
        /// ([`Credential::for_withdrawal`]).
        max_lifetime_ms: u64,
    },
}

impl Credential {
    /// The credential the request's fields give ([`Params::credential`]), its expiry compared
    /// with `now_ms` after every check of form, so that a malformed request is refused as
    /// malformed.
    ///
    /// With it comes who acts: for a key, its account, or with `account` given and another
    /// address, the account the key acts for as its agent (the approval is the engine's to
    /// check); for a client's signature, the account it claims (whether an agent signed is learnt
    /// from the signature, in [`Credential::authorize_actor`]).
    pub fn from_fields(
        fields: CredentialFields,
        now_ms: u64,
        addresses: &AddressCache,
    ) -> Result<(Credential, Actor), ApiError> {
        let (credential, acting_for, subaccount) = Credential::checked(fields, now_ms)?;
        let actor = credential.actor(acting_for, addresses).in_subaccount(subaccount);
        Ok((credential, actor))
    }

    fn checked(fields: CredentialFields, now_ms: u64) -> Result<(Credential, Option<Address>, u32), ApiError> {
        match fields {
            CredentialFields::Key {
                key,
                acting_for,
                subaccount,
            } => Ok((
                Credential::Key {
                    key,
                    venue_now_ms: now_ms,
                },
                acting_for,
                subaccount,
            )),
            CredentialFields::Signed {
                account,
                nonce,
                expiry_ms,
                signature,
            } => {
                if expiry_ms <= now_ms {
                    return Err(signature_expired());
                }
                let credential = Credential::Signed {
                    account,
                    nonce,
                    expiry_ms,
                    signature,
                    lifetime_ms: expiry_ms - now_ms,
                    max_lifetime_ms: MAX_SIGNED_REQUEST_LIFETIME_MS,
                };
                Ok((credential, None, 0))
            }
        }
    }

    /// The credential of a withdrawal, whose signature may live a week: a vault withdrawal is
    /// paid only once a liability root covering it is past the vault's challenge period.
    pub fn for_withdrawal(mut self) -> Credential {
        if let Credential::Signed { max_lifetime_ms, .. } = &mut self {
            *max_lifetime_ms = dexd_core::MAX_SIGNED_WITHDRAWAL_LIFETIME_MS;
        }
        self
    }

    /// Who acts ([`Credential::from_fields`]).
    fn actor(&self, acting_for: Option<Address>, addresses: &AddressCache) -> Actor {
        let signer = self.account(addresses);
        match (self, acting_for) {
            (Credential::Key { .. }, Some(account)) => Actor {
                account,
                agent: (account != signer).then_some(signer),
            },
            _ => Actor {
                account: signer,
                agent: None,
            },
        }
    }

    /// [`Credential::authorize`] for an operation an agent may send: a client's signature that
    /// recovers to another address than the account's is taken as that agent's (`actor.agent`
    /// is set; the engine refuses it unless the account approved it). A signature that recovers
    /// to nothing is 401 `INVALID_SIGNATURE`.
    pub fn authorize_actor(
        &self,
        digest: [u8; 32],
        actor: &mut Actor,
        signed: ([u8; 32], u64),
        order_id: Option<OrderId>,
    ) -> Result<Authorization, ApiError> {
        if let Credential::Signed { signature, .. } = self {
            match recover_signer(digest, signature) {
                None => return Err(invalid_signature(&digest)),
                Some(signer) if signer != actor.account => actor.agent = Some(signer),
                Some(_) => {}
            }
            let signer = actor.agent.unwrap_or(actor.account);
            return self.authorize(digest, &signer, signed, order_id);
        }
        self.authorize(digest, &actor.account, signed, order_id)
    }

    /// [`Credential::authorize_client_signature`] for an operation an agent may send, as
    /// [`Credential::authorize_actor`] does (with a key, the key signs as the actor: the
    /// account's own, or its agent's).
    pub fn authorize_actor_client_signature(
        &self,
        actor: &mut Actor,
        digest_of: impl FnOnce(([u8; 32], u64)) -> [u8; 32],
    ) -> Result<Authorization, ApiError> {
        let signed = self.nonce_and_expiry(dexd_store::now_ms());
        self.authorize_actor(digest_of(signed), actor, signed, None)
    }

    /// The address a client's signature over `digest` recovers to, if it recovers at all (`None`
    /// with a key).
    pub fn recovered_signer(&self, digest: [u8; 32]) -> Option<Address> {
        match self {
            Credential::Key { .. } => None,
            Credential::Signed { signature, .. } => recover_signer(digest, signature),
        }
    }

    /// The account the request acts for (derived from the key, or as claimed by the signer).
    pub fn account(&self, addresses: &AddressCache) -> Address {
        match self {
            Credential::Key { key, .. } => addresses.address_of(key),
            Credential::Signed { account, .. } => *account,
        }
    }

    /// The nonce and expiry to sign with: the client's, or for a key a random nonce and an expiry
    /// [`VENUE_SIGNED_EXPIRY_AHEAD_MS`] after `now_ms`. The engine applies a venue-signed
    /// command only within its window (5 s) of that expiry and claims its nonce, so the
    /// venue's signature, which anyone may read back, is applied once and never later, whether
    /// sent again by the venue or replayed as a client's request.
    pub fn nonce_and_expiry(&self, now_ms: u64) -> ([u8; 32], u64) {
        match self {
            Credential::Key { venue_now_ms, .. } => {
                let mut nonce = [0u8; 32];
                nonce[16..].copy_from_slice(&rand::random::<[u8; 16]>());
                (
                    nonce,
                    now_ms.max(*venue_now_ms).saturating_add(VENUE_SIGNED_EXPIRY_AHEAD_MS),
                )
            }
            Credential::Signed { nonce, expiry_ms, .. } => (*nonce, *expiry_ms),
        }
    }

    /// Signs `digest` with the key, or checks that the client's signature over it recovers to
    /// the account: 401 `INVALID_SIGNATURE` when it does not. `signed` is what
    /// [`Credential::nonce_and_expiry`] gave for the digest. The key is dropped with the
    /// credential (a batch signs each of its orders with one).
    pub fn authorize(
        &self,
        digest: [u8; 32],
        account: &Address,
        signed: ([u8; 32], u64),
        order_id: Option<OrderId>,
    ) -> Result<Authorization, ApiError> {
        let (nonce, expiry_ms) = signed;
        let (signature, client_signed) = match self {
            Credential::Key { key, .. } => (key.sign_digest(digest), false),
            Credential::Signed {
                signature,
                lifetime_ms,
                max_lifetime_ms,
                ..
            } => {
                if recover_signer(digest, signature).as_ref() != Some(account) {
                    return Err(invalid_signature(&digest));
                }
                refuse_too_long_a_life(*lifetime_ms, *max_lifetime_ms)?;
                (*signature, true)
            }
        };
        Ok(Authorization {
            order_id,
            nonce,
            expiry_ms,
            signature,
            client_signed,
            batch: None,
            claims_batch_nonce: false,
            approved_at_block: None,
        })
    }

    /// Like [`Credential::authorize`] for a client's signature that the account's own contract
    /// has approved (ERC-1271, asked by the caller: only a vault chain's withdrawal, which the
    /// vault verifies the same way, takes one). With a key there is nothing to approve.
    /// `approved_at_block` is the block the vault was asked at.
    pub fn authorize_approved_by_account_contract(
        self,
        signed: ([u8; 32], u64),
        approved_at_block: u64,
    ) -> Result<Authorization, ApiError> {
        let Credential::Signed {
            signature,
            lifetime_ms,
            max_lifetime_ms,
            ..
        } = self
        else {
            return Err(ApiError::internal());
        };
        refuse_too_long_a_life(lifetime_ms, max_lifetime_ms)?;
        let (nonce, expiry_ms) = signed;
        Ok(Authorization {
            order_id: None,
            nonce,
            expiry_ms,
            signature,
            client_signed: true,
            batch: None,
            claims_batch_nonce: false,
            approved_at_block: Some(approved_at_block),
        })
    }

    /// For every request but an order: with a key, the venue signs the digest `digest_of` gives
    /// for a nonce it draws and an expiry of now (so that the journal holds the key's signature
    /// of every command, which an auditor checks, and it can never be replayed as a client's
    /// request); with a client's signature, its check over the digest of the client's nonce and
    /// expiry, and the authorization whose nonce the writer claims.
    pub fn authorize_client_signature(
        &self,
        account: &Address,
        digest_of: impl FnOnce(([u8; 32], u64)) -> [u8; 32],
    ) -> Result<Authorization, ApiError> {
        let signed = self.nonce_and_expiry(dexd_store::now_ms());
        self.authorize(digest_of(signed), account, signed, None)
    }
}

fn refuse_too_long_a_life(lifetime_ms: u64, max_lifetime_ms: u64) -> Result<(), ApiError> {
    if lifetime_ms > max_lifetime_ms {
        return Err(ApiError::invalid(
            "expiry",
            format!("must be at most {max_lifetime_ms} ms after now (ms since the epoch)"),
        ));
    }
    Ok(())
}

/// 401 `INVALID_SIGNATURE` for a signature that does not recover to the account over `digest`.
pub fn invalid_signature(digest: &[u8; 32]) -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "INVALID_SIGNATURE",
        format!(
            "the signature does not recover to account over the request's EIP-712 digest {}; \
             see GET /account/eip712 for the types and the canonical form of each field",
            hex_prefixed(digest)
        ),
    )
    .on("signature")
}
