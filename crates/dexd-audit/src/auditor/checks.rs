//! The checks of one line that need nothing but the line and the chain's configuration: the
//! command's fields say what its bytes say, its authorization is of the kind its command needs,
//! and an account's signature recovers to the account (or the agent acting for it) over the
//! message rebuilt from the command. They run on every core at once, a share of the lines
//! each; what needs the chain (a deposit's event, a contract account's approval) or the state
//! (the replay) is the caller's. Signatures by signers seen before are checked many at once
//! (`dexd_crypto::signature_batch`), each one alone only when a batch does not hold.

use std::collections::HashMap;

use dexd_core::{Address, Command};
use dexd_crypto::{all_signed, recover_signer, BatchItem, RequestMessages, SignerKey, SignerKeys};

use crate::format::{render_command, CommandLine, LineAuthorization, SignedLine};

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

/// Whether `value`, written as the venue writes each part of a line (`serde_json`, compact, keys
/// in order), is `text` byte for byte: a stricter and much cheaper check than parsing `text`
/// into a value to compare.
fn written_as(value: &serde_json::Value, text: &str) -> bool {
    serde_json::to_string(value).is_ok_and(|written| written == text)
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
        LineAuthorization::Eip712(_) => "eip712",
        LineAuthorization::VaultDeposit => "vaultDeposit",
        LineAuthorization::AccountTransaction => "accountTransaction",
        LineAuthorization::System => "system",
        LineAuthorization::Unsigned => "unsigned",
    }
}

/// What a line still needs once its own fields are checked: its signature over `digest`
/// recovering to `signer`.
#[derive(Debug, Clone)]
struct PendingSignature {
    digest: [u8; 32],
    signature: [u8; 65],
    signer: dexd_core::Address,
    /// A vault withdrawal the account signed: a contract account may approve it instead.
    contract_may_approve: bool,
    /// The line's `approvedAtBlock`.
    approved_at_block: Option<u64>,
}

/// What the line's signature, recovered to `recovered`, makes of it.
fn signature_verdict(pending: &PendingSignature, recovered: Option<dexd_core::Address>) -> LineCheck {
    if recovered == Some(pending.signer) {
        return LineCheck::Holds;
    }
    if pending.contract_may_approve {
        return LineCheck::NeedsContractApproval {
            digest: pending.digest,
            at_block: pending.approved_at_block,
        };
    }
    LineCheck::Fails(format!(
        "the signature does not recover to {} over the message",
        dexd_crypto::checksummed(&pending.signer)
    ))
}

/// Every check of one line (against `messages`, the chain's configuration where the line
/// stands) but its signature's: the signature still to check
/// (`Ok`), or what the line is without it (`Err`: a line that needs no signature holds).
fn check_before_signature(line: &CommandLine, messages: &RequestMessages) -> Result<PendingSignature, LineCheck> {
    if !written_as(&render_command(&line.command, messages), &line.command_text) {
        return Err(LineCheck::Fails(
            "the command's fields differ from its encoded bytes".into(),
        ));
    }
    let expected = expected_kind(&line.command);
    let given = kind_name(&line.authorization);
    if given == "unsigned" && expected == "eip712" {
        return Err(LineCheck::Fails(
            "an account's command journaled without the account's signature".into(),
        ));
    }
    if expected != given {
        return Err(LineCheck::Fails(format!(
            "a command that needs authorization {expected} carries {given}"
        )));
    }
    let LineAuthorization::Eip712(line_signed) = &line.authorization else {
        return Err(LineCheck::Holds);
    };
    let fails = |what: String| Err(LineCheck::Fails(what));
    let Some(signed) = messages.signed_command(
        &line.command,
        line_signed.client_signed,
        (line_signed.nonce, line_signed.expiry_ms),
    ) else {
        return fails("an account's command whose signed message cannot be rebuilt".into());
    };
    let signed_type = match line_signed.batch {
        Some(_) => dexd_crypto::ORDER_BATCH_TYPE.name,
        None => signed.message.primary_type(),
    };
    if signed_type != line_signed.primary_type
        || signed.signer != line_signed.signer
        || !written_as(&signed.message.message_json(), &line_signed.message)
    {
        return fails("the signed message differs from the command's".into());
    }
    let order_digest = signed.message.digest(messages.domain());
    if let Some(order_id) = signed.digest_is_order_id {
        // An order of a batch signed once that equals one before it has its place in its id.
        let expected = match &line_signed.batch {
            Some((place, _)) if usize::from(place.index) < place.order_hashes.len() => dexd_crypto::BatchProof {
                index: usize::from(place.index),
                order_hashes: std::sync::Arc::clone(&place.order_hashes),
            }
            .order_id(messages.domain()),
            _ => order_digest,
        };
        if *order_id.as_bytes() != expected {
            return fails(format!(
                "the order id {order_id} is not the digest of the signed message"
            ));
        }
    }
    // An order of a batch signed once: its own struct hash is the batch's at its index, and the
    // signature is over the batch.
    let digest = match (&line_signed.batch, &signed.message) {
        (None, _) => order_digest,
        (Some((place, _)), dexd_crypto::SignedMessage::Order(order)) => {
            let proof = dexd_crypto::BatchProof {
                index: usize::from(place.index),
                order_hashes: std::sync::Arc::clone(&place.order_hashes),
            };
            if !proof.holds(order) {
                return fails("the order is not its batch's order at its index".into());
            }
            messages.domain().order_batch_digest(
                &order.account,
                &place.order_hashes,
                line_signed.nonce,
                line_signed.expiry_ms,
            )
        }
        (Some(_), _) => return fails("a batch signed once that is not of an order".into()),
    };
    Ok(PendingSignature {
        digest,
        signature: line_signed.signature,
        signer: signed.signer,
        contract_may_approve: matches!(line.command, Command::RequestWithdrawal(_)) && line_signed.client_signed,
        approved_at_block: line_signed.approved_at_block,
    })
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
            LineAuthorization::Eip712(SignedLine {
                batch: Some((_, claims_nonce)),
                client_signed: true,
                signature,
                ..
            }) => Some((*signature, *claims_nonce)),
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
    if !written_as(&crate::format::render_configuration(configuration), &line.command_text) {
        return LineCheck::Fails("the command's fields differ from its encoded bytes".into());
    }
    if line.authorization != LineAuthorization::System {
        return LineCheck::Fails("a configuration that claims an account's authorization".into());
    }
    LineCheck::Holds
}

/// Checks every line, on `threads` threads, each taking a contiguous share; with the
/// keys of the signers first seen in these lines (to remember in `keys` for the next).
///
/// A share's signatures by signers whose key is known (from `keys`, or from an earlier line of
/// the share) are checked in one batch ([`dexd_crypto::all_signed`]), at well under half the
/// cost of recovering each; a signer's first signature is recovered, which gives its key. When
/// a batch does not hold, each of its signatures is recovered to find which do not.
pub fn check_lines(
    lines: &[&CommandLine],
    messages: &RequestMessages,
    threads: usize,
    keys: &SignerKeys,
) -> (Vec<LineCheck>, Vec<(Address, SignerKey)>) {
    let threads = threads.max(1);
    if lines.len() < 64 || threads == 1 {
        return check_share(lines, messages, keys);
    }
    let share = lines.len().div_ceil(threads);
    std::thread::scope(|scope| {
        let handles: Vec<_> = lines
            .chunks(share)
            .map(|chunk| scope.spawn(move || check_share(chunk, messages, keys)))
            .collect();
        let mut checks = Vec::with_capacity(lines.len());
        let mut learnt = Vec::new();
        for handle in handles {
            let (share_checks, share_keys) = handle.join().expect("a check never panics");
            checks.extend(share_checks);
            learnt.extend(share_keys);
        }
        (checks, learnt)
    })
}

/// [`check_lines`]' work on one share, on this thread.
fn check_share(
    lines: &[&CommandLine],
    messages: &RequestMessages,
    keys: &SignerKeys,
) -> (Vec<LineCheck>, Vec<(Address, SignerKey)>) {
    let mut checks = Vec::with_capacity(lines.len());
    let mut learnt: HashMap<Address, SignerKey> = HashMap::new();
    // The lines whose signature the batch checks (their check `Holds` until it fails).
    let mut batched: Vec<(usize, PendingSignature)> = Vec::new();
    for line in lines {
        let pending = match check_before_signature(line, messages) {
            Ok(pending) => pending,
            Err(check) => {
                checks.push(check);
                continue;
            }
        };
        if keys.get(&pending.signer).is_some() || learnt.contains_key(&pending.signer) {
            batched.push((checks.len(), pending));
            checks.push(LineCheck::Holds);
            continue;
        }
        let recovered = SignerKey::recover(pending.digest, &pending.signature);
        if let Some((address, key)) = recovered.filter(|(address, _)| *address == pending.signer) {
            learnt.insert(address, key);
        }
        checks.push(signature_verdict(&pending, recovered.map(|(address, _)| address)));
    }
    let items: Vec<BatchItem<'_>> = batched
        .iter()
        .map(|(_, pending)| BatchItem {
            digest: pending.digest,
            signature: &pending.signature,
            key: keys
                .get(&pending.signer)
                .or_else(|| learnt.get(&pending.signer))
                .expect("a batched signature's key is known"),
        })
        .collect();
    if !all_signed(&items) {
        for (index, pending) in &batched {
            checks[*index] = signature_verdict(pending, recover_signer(pending.digest, &pending.signature));
        }
    }
    (checks, learnt.into_iter().collect())
}
