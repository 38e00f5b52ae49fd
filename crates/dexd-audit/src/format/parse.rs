//! Reading a journal line back: its fields as the text has them, with the command and the
//! signed message kept as their exact text (the auditor compares them byte for byte with its
//! own rendering), and nothing parsed into a JSON value. It checks the line's shape only.

use std::borrow::Cow;

use dexd_crypto::{parse_address, parse_hex_bytes};
use dexd_store::codec::decode_command;
use dexd_store::BatchPlace;
use serde_json::value::RawValue;

use super::{CommandLine, JournalLine, LineAuthorization, SignedLine};

/// A line's fields as its text has them, the command and the signed message kept as their
/// exact text: nothing is parsed into a JSON value (what reading a journal spent most on).
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct LineText<'a> {
    sequence: Option<u64>,
    #[serde(borrow)]
    state_hash: Option<Cow<'a, str>>,
    time: Option<u64>,
    #[serde(borrow)]
    command: Option<&'a RawValue>,
    #[serde(borrow)]
    encoded: Option<Cow<'a, str>>,
    #[serde(borrow)]
    authorization: Option<AuthorizationText<'a>>,
}

/// A line's `authorization`, as [`LineText`] reads it.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct AuthorizationText<'a> {
    #[serde(borrow)]
    kind: Option<Cow<'a, str>>,
    #[serde(borrow)]
    primary_type: Option<Cow<'a, str>>,
    #[serde(borrow)]
    signer: Option<Cow<'a, str>>,
    #[serde(borrow)]
    message: Option<&'a RawValue>,
    #[serde(borrow)]
    nonce: Option<Cow<'a, str>>,
    expiry: Option<u64>,
    #[serde(borrow)]
    signature: Option<Cow<'a, str>>,
    client_signed: Option<bool>,
    #[serde(borrow)]
    batch: Option<BatchText<'a>>,
    approved_at_block: Option<u64>,
}

/// A line's `batch`, as [`LineText`] reads it.
#[derive(serde::Deserialize)]
#[serde(rename_all = "camelCase")]
struct BatchText<'a> {
    index: Option<u64>,
    #[serde(borrow)]
    order_hashes: Option<Vec<Cow<'a, str>>>,
    claims_nonce: Option<bool>,
}

/// Parses one line. An error names what is wrong with it.
pub fn parse_line(text: &str) -> Result<JournalLine, String> {
    let line: LineText<'_> = serde_json::from_str(text).map_err(|error| format!("not a journal line: {error}"))?;
    let sequence = line.sequence.ok_or("no sequence")?;
    if let Some(hash) = line.state_hash {
        let state_hash = parse_hex_bytes::<32>(&hash).ok_or("a state hash that is not 0x + 64 hex digits")?;
        return Ok(JournalLine::StateHash { sequence, state_hash });
    }
    let time_ms = line.time.ok_or("no time")?;
    let encoded = line
        .encoded
        .as_deref()
        .and_then(|text| text.strip_prefix("0x"))
        .and_then(|digits| hex::decode(digits).ok())
        .ok_or("no encoded command")?;
    let command = decode_command(&encoded).map_err(|error| format!("the encoded command: {error}"))?;
    let command_text = line.command.ok_or("no command")?.get().into();
    let authorization = parse_authorization(line.authorization.ok_or("no authorization")?)?;
    Ok(JournalLine::Command(Box::new(CommandLine {
        sequence,
        time_ms,
        command,
        command_text,
        authorization,
    })))
}

/// A line's `batch`: the order's index, the batch's order hashes, and whether it claims the
/// nonce.
fn parse_batch(batch: BatchText<'_>) -> Result<(BatchPlace, bool), String> {
    let index = batch
        .index
        .and_then(|index| u8::try_from(index).ok())
        .ok_or("a batch without its index")?;
    // A line without `orderHashes` takes them from an earlier line of its batch
    // (`page::link_batch_hashes`); until then they are empty.
    let order_hashes: Vec<[u8; 32]> = match batch.order_hashes {
        None => Vec::new(),
        Some(hashes) => {
            let hashes: Vec<[u8; 32]> = hashes
                .iter()
                .map(|hash| parse_hex_bytes::<32>(hash))
                .collect::<Option<_>>()
                .ok_or("a batch's order hash that is not 0x + 64 hex digits")?;
            if hashes.is_empty()
                || hashes.len() > dexd_crypto::MAX_ORDERS_PER_BATCH_SIGNATURE
                || usize::from(index) >= hashes.len()
            {
                return Err("a batch of 1 to 50 orders whose index is one of them".into());
            }
            hashes
        }
    };
    let claims_nonce = batch.claims_nonce.ok_or("a batch without claimsNonce")?;
    Ok((
        BatchPlace {
            index,
            order_hashes: order_hashes.into(),
        },
        claims_nonce,
    ))
}

fn parse_authorization(authorization: AuthorizationText<'_>) -> Result<LineAuthorization, String> {
    let text = |value: &Option<Cow<'_, str>>, name: &str| {
        value
            .as_deref()
            .map(str::to_string)
            .ok_or(format!("authorization without {name}"))
    };
    match authorization.kind.as_deref() {
        Some("eip712") => Ok(LineAuthorization::Eip712(SignedLine {
            primary_type: text(&authorization.primary_type, "primaryType")?,
            signer: parse_address(&text(&authorization.signer, "signer")?).map_err(|_| "a bad signer")?,
            message: authorization
                .message
                .ok_or("authorization without message")?
                .get()
                .into(),
            nonce: parse_hex_bytes::<32>(&text(&authorization.nonce, "nonce")?).ok_or("a bad nonce")?,
            expiry_ms: authorization.expiry.ok_or("a bad expiry")?,
            signature: parse_hex_bytes::<65>(&text(&authorization.signature, "signature")?).ok_or("a bad signature")?,
            client_signed: authorization
                .client_signed
                .ok_or("authorization without clientSigned")?,
            batch: authorization.batch.map(parse_batch).transpose()?,
            approved_at_block: authorization.approved_at_block,
        })),
        Some("vaultDeposit") => Ok(LineAuthorization::VaultDeposit),
        Some("accountTransaction") => Ok(LineAuthorization::AccountTransaction),
        Some("system") => Ok(LineAuthorization::System),
        Some("unsigned") => Ok(LineAuthorization::Unsigned),
        _ => Err("an authorization of no known kind".into()),
    }
}
