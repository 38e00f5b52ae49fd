//! The nonce of a batch of orders signed once (contract version 4: by a client, or by the venue
//! with the key), claimed in the writer: every order of the batch carries the batch's nonce, and
//! one of them must claim it.
//!
//! The first of a copy's orders the engine applies claims the nonce (its authorization is
//! journaled saying so, so a replay claims it again at the same place); the others follow that
//! claim. An order refused for another reason (its balance) claims nothing, and the next one
//! tries. A claim refused for the nonce itself (used before, expired, the registry full)
//! refuses the rest of that copy with it: a batch sent again is refused whole.
//!
//! A copy is what one request brought: its orders reach the writer as one group, applied with
//! nothing between them. Two copies of one batch (a client's retry, thirty at once) are two
//! groups, possibly in one batch of writes, and each must claim; the state here is reset at
//! every request's start. The engine holds every order to the claim as well (each order of a
//! batch applied at most once, `dexd_core::BatchSlot`), so that a copy this module took for
//! another could still place nothing twice.

use dexd_core::{NonceClaim, Rejection};
use dexd_store::Authorization;

/// The copy of a client-signed batch whose orders are being applied.
#[derive(Default)]
pub(crate) struct BatchNonce {
    /// The batch, by its signature.
    signature: Option<[u8; 65]>,
    /// One of its orders claimed the nonce.
    claimed: bool,
    /// The claim was refused for the nonce: every other order of the copy gets this.
    refused: Option<Rejection>,
}

impl BatchNonce {
    /// The nonce claim `authorization`'s command makes (marking a batch's claimant in it), or
    /// the refusal every order of a copy whose claim was refused gets. `starts_request` says
    /// the command is the first of what its request sent: a new copy starts there.
    pub(crate) fn claim_for(
        &mut self,
        authorization: &mut Option<Authorization>,
        starts_request: bool,
    ) -> Result<Option<NonceClaim>, Rejection> {
        if starts_request {
            *self = BatchNonce::default();
        }
        let Some(authorization) = authorization.as_mut() else {
            return Ok(None);
        };
        if authorization.batch.is_none() {
            return Ok(Some(authorization.claim()));
        }
        if self.signature == Some(authorization.signature) {
            if let Some(refused) = self.refused {
                return Err(refused);
            }
            if self.claimed {
                authorization.claims_batch_nonce = false;
                return Ok(Some(authorization.claim()));
            }
        } else {
            *self = BatchNonce {
                signature: Some(authorization.signature),
                claimed: false,
                refused: None,
            };
        }
        authorization.claims_batch_nonce = true;
        Ok(Some(authorization.claim()))
    }

    /// Takes note of what the engine did with a command whose claim [`BatchNonce::claim_for`]
    /// gave.
    pub(crate) fn applied(
        &mut self,
        claim: Option<NonceClaim>,
        authorization: &Option<Authorization>,
        result: &Result<(), Rejection>,
    ) {
        let claims_for_batch = authorization
            .as_ref()
            .is_some_and(|authorization| authorization.batch.is_some() && authorization.claims_batch_nonce);
        if claim.is_none() || !claims_for_batch {
            return;
        }
        match result {
            Ok(()) => self.claimed = true,
            Err(rejection @ Rejection::Nonce(_)) => self.refused = Some(*rejection),
            Err(_) => {}
        }
    }
}
