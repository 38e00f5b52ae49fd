//! The checks of one line that need nothing but the line and the chain's configuration: the
//! command's fields say what its bytes say, its authorization is of the kind its command needs,
//! and an account's signature recovers to the account (or the agent acting for it) over the
//! message rebuilt from the command. They run on every core at once, a share of the lines
//! each; what needs the chain (a deposit's event, a contract account's approval) or the state
//! (the replay) is the caller's.

use dexd_core::Command;
use dexd_crypto::{recover_signer, RequestMessages};

use crate::audit::format::{render_command, CommandLine, LineAuthorization};

/// What a line's own checks found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineCheck {
    /// Everything holds.
    Holds,
    /// A vault withdrawal whose signature does not recover to the account: a contract account's
    /// signature, which only the vault's `isAuthorized` can approve (over this digest).
    NeedsContractApproval {
        /// The digest the account's contract must approve.
        digest: [u8; 32],
        /// The block the venue asked the vault at (the line's `approvedAtBlock`; the latest for
        /// a line written before lines recorded it).
        at_block: Option<u64>,
    },
    /// Something does not hold: what, in words.
    Fails(String),
}

/// The kind of authorization a command needs.
fn expected_kind(command: &Command) -> &'static str {
    match command {
        Command::CreditChainDeposit(_) => "vaultDeposit",
        Command::SubmitChainDeposit(_) => "accountTransaction",
        command if command.account().is_some() => "eip712",
        _ => "system",
    }
}

fn kind_name(authorization: &LineAuthorization) -> &'static str {
    match authorization {
        LineAuthorization::Eip712 { .. } => "eip712",
        LineAuthorization::VaultDeposit => "vaultDeposit",
        LineAuthorization::AccountTransaction => "accountTransaction",
        LineAuthorization::System => "system",
        LineAuthorization::Unsigned => "unsigned",
    }
}

/// Checks one line against `messages` (the chain's configuration where the line stands).
pub fn check_line(line: &CommandLine, messages: &RequestMessages) -> LineCheck {
    if render_command(&line.command, messages) != line.command_json {
        return LineCheck::Fails("the command's fields differ from its encoded bytes".into());
    }
    let expected = expected_kind(&line.command);
    let given = kind_name(&line.authorization);
    if given == "unsigned" && expected == "eip712" {
        return LineCheck::Fails("an account's command journaled without the account's signature".into());
    }
    if expected != given {
        return LineCheck::Fails(format!("a command that needs authorization {expected} carries {given}"));
    }
    let LineAuthorization::Eip712 {
        primary_type,
        signer,
        message,
        nonce,
        expiry_ms,
        signature,
        client_signed,
        batch,
        approved_at_block,
    } = &line.authorization
    else {
        return LineCheck::Holds;
    };
    let Some(signed) = messages.signed_command(&line.command, *client_signed, (*nonce, *expiry_ms)) else {
        return LineCheck::Fails("an account's command whose signed message cannot be rebuilt".into());
    };
    let signed_type = match batch {
        Some(_) => dexd_crypto::ORDER_BATCH_TYPE.name,
        None => signed.message.primary_type(),
    };
    if signed_type != primary_type || signed.signer != *signer || signed.message.message_json() != **message {
        return LineCheck::Fails("the signed message differs from the command's".into());
    }
    let order_digest = signed.message.digest(messages.domain());
    if let Some(order_id) = signed.digest_is_order_id {
        if *order_id.as_bytes() != order_digest {
            return LineCheck::Fails(format!(
                "the order id {order_id} is not the digest of the signed message"
            ));
        }
    }
    // An order of a batch signed once: its own struct hash is the batch's at its index, and the
    // signature is over the batch.
    let digest = match (batch, &signed.message) {
        (None, _) => order_digest,
        (Some((place, _)), dexd_crypto::SignedMessage::Order(order)) => {
            let proof = dexd_crypto::BatchProof {
                index: usize::from(place.index),
                order_hashes: std::sync::Arc::clone(&place.order_hashes),
            };
            if !proof.holds(order) {
                return LineCheck::Fails("the order is not its batch's order at its index".into());
            }
            messages
                .domain()
                .order_batch_digest(&order.account, &place.order_hashes, *nonce, *expiry_ms)
        }
        (Some(_), _) => return LineCheck::Fails("a batch signed once that is not of an order".into()),
    };
    if recover_signer(digest, signature) == Some(signed.signer) {
        return LineCheck::Holds;
    }
    if matches!(line.command, Command::RequestWithdrawal(_)) && *client_signed {
        return LineCheck::NeedsContractApproval {
            digest,
            at_block: *approved_at_block,
        };
    }
    LineCheck::Fails(format!(
        "the signature does not recover to {} over the message",
        dexd_crypto::checksummed(&signed.signer)
    ))
}

/// The one check of batches signed once that needs the lines in order: an order of a
/// client-signed batch that does not claim the batch's nonce must come right after its batch's
/// orders, the first of which claimed it (the venue journals a batch's orders together). Without
/// it, a venue could place a batch's orders again with no claim of the nonce to refuse them.
#[derive(Debug, Default)]
pub struct BatchClaims {
    /// Whether a line was seen since the start (the first line may follow a claim before it).
    started: bool,
    /// The batch, by its signature, whose orders the last lines were, its nonce claimed.
    claimed_by: Option<[u8; 65]>,
}

impl BatchClaims {
    /// Takes the next line's authorization; what fails, in words.
    pub fn follow(&mut self, authorization: &LineAuthorization) -> Result<(), String> {
        let started = std::mem::replace(&mut self.started, true);
        let member = match authorization {
            LineAuthorization::Eip712 {
                batch: Some((_, claims_nonce)),
                client_signed: true,
                signature,
                ..
            } => Some((*signature, *claims_nonce)),
            _ => None,
        };
        match member {
            None => {
                self.claimed_by = None;
                Ok(())
            }
            Some((signature, true)) => {
                self.claimed_by = Some(signature);
                Ok(())
            }
            Some((signature, false)) if !started || self.claimed_by == Some(signature) => {
                self.claimed_by = Some(signature);
                Ok(())
            }
            Some(_) => Err("an order of a batch signed once that follows no claim of the batch's nonce".into()),
        }
    }
}

/// The checks of a configuration's line: its fields say what its bytes say, and nobody signs it.
pub fn check_configuration_line(line: &CommandLine) -> LineCheck {
    let Command::Configure(configuration) = &line.command else {
        return LineCheck::Fails("not a configuration".into());
    };
    if crate::audit::format::render_configuration(configuration) != line.command_json {
        return LineCheck::Fails("the command's fields differ from its encoded bytes".into());
    }
    if line.authorization != LineAuthorization::System {
        return LineCheck::Fails("a configuration that claims an account's authorization".into());
    }
    LineCheck::Holds
}

/// [`check_line`] for every line, on `threads` threads, each taking a contiguous share.
pub fn check_lines(lines: &[&CommandLine], messages: &RequestMessages, threads: usize) -> Vec<LineCheck> {
    let threads = threads.max(1);
    if lines.len() < 64 || threads == 1 {
        return lines.iter().map(|line| check_line(line, messages)).collect();
    }
    let share = lines.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = lines
            .chunks(share)
            .map(|chunk| scope.spawn(move || chunk.iter().map(|line| check_line(line, messages)).collect::<Vec<_>>()))
            .collect();
        handles
            .into_iter()
            .flat_map(|handle| handle.join().expect("a check never panics"))
            .collect()
    })
}
