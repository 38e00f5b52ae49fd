//! A page (or a segment) of the public journal as the venue writes it and as a reader links it
//! back: a batch's order hashes are given once per page, on the first line of the batch, and a
//! reader gives each later line of the batch those hashes. Lines themselves are rendered and
//! parsed by [`super::format`]; nothing here reads a journal or checks a signature.

use dexd_crypto::RequestMessages;
use dexd_store::Authorization;
use serde_json::Value;

use super::format::{command_line_with, state_hash_line, JournalLine, LineAuthorization, SignedLine};
use dexd_core::Command;

/// Writes a page (or a segment) of the journal: its lines in order, each followed by a newline,
/// a batch's order hashes only on the first line of the batch in the page (a batch of 50 would
/// otherwise repeat 50 hashes on each of its 50 lines). A reader takes the hashes of a line
/// without them from the nearest earlier line of the page with the same signature
/// ([`link_batch_hashes`]).
pub struct PageWriter<'a> {
    messages: &'a RequestMessages,
    body: Vec<u8>,
    /// The signature of the last batch whose hashes the page gave.
    last_batch_signature: Option<[u8; 65]>,
}

impl<'a> PageWriter<'a> {
    /// An empty page, naming pairs and assets with `messages`.
    pub fn new(messages: &'a RequestMessages) -> PageWriter<'a> {
        PageWriter {
            messages,
            body: Vec::new(),
            last_batch_signature: None,
        }
    }

    /// Appends a command's line.
    pub fn command(&mut self, sequence: u64, time_ms: u64, command: &Command, authorization: Option<&Authorization>) {
        let batch_signature = authorization
            .filter(|authorization| authorization.batch.is_some())
            .map(|authorization| authorization.signature);
        let with_order_hashes = batch_signature.is_none() || batch_signature != self.last_batch_signature;
        if batch_signature.is_some() {
            self.last_batch_signature = batch_signature;
        }
        let line = command_line_with(
            (sequence, time_ms),
            command,
            authorization,
            self.messages,
            with_order_hashes,
        );
        self.push(&line);
    }

    /// Appends a state hash line.
    pub fn state_hash(&mut self, sequence: u64, state_hash: &[u8; 32]) {
        self.push(&state_hash_line(sequence, state_hash));
    }

    fn push(&mut self, line: &Value) {
        serde_json::to_writer(&mut self.body, line).expect("a JSON value always serializes");
        self.body.push(b'\n');
    }

    /// The bytes written so far.
    pub fn len(&self) -> usize {
        self.body.len()
    }

    /// Whether nothing was written.
    pub fn is_empty(&self) -> bool {
        self.body.is_empty()
    }

    /// The page.
    pub fn into_bytes(self) -> Vec<u8> {
        self.body
    }
}

/// Gives each batch line of a parsed page that came without its order hashes those of the
/// nearest earlier batch line with the same signature (what [`PageWriter`] left out), and
/// turns a line that has none to take, or whose index is past them, into an error. A wrong
/// link cannot pass: the hashes are checked against the batch's signature.
pub fn link_batch_hashes(lines: &mut [Result<JournalLine, String>]) {
    // The signature of the last batch line that gave its hashes, and the hashes.
    type GivenHashes = ([u8; 65], std::sync::Arc<[[u8; 32]]>);
    let mut last: Option<GivenHashes> = None;
    for line in lines.iter_mut() {
        let Ok(JournalLine::Command(command)) = line else {
            continue;
        };
        let LineAuthorization::Eip712(SignedLine {
            signature,
            batch: Some((place, _)),
            ..
        }) = &mut command.authorization
        else {
            continue;
        };
        if place.order_hashes.is_empty() {
            match &last {
                Some((last_signature, hashes)) if last_signature == signature => {
                    place.order_hashes = std::sync::Arc::clone(hashes);
                }
                _ => {
                    *line = Err("a batch line without order hashes after no line of its batch".into());
                    continue;
                }
            }
        } else {
            last = Some((*signature, std::sync::Arc::clone(&place.order_hashes)));
        }
        if usize::from(place.index) >= place.order_hashes.len() {
            *line = Err("a batch of 1 to 50 orders whose index is one of them".into());
        }
    }
}
