//! A batch's order hashes written once in the journal: the first row of a batch signed once
//! that an append writes holds the hashes, and the batch's other rows in that append name it
//! ([`super::AUTHORIZATION_BY_REFERENCE_VERSION`]). [`BatchHolders`] decides, for a writer,
//! which row holds; [`BatchHashesSeen`] puts the hashes back, for a reader, from a row read
//! before or, past the start of what it reads, from the holder's row fetched alone.
//!
//! A reference never leaves its append (one transaction), so it never names a row that is not
//! durable with it, and it always names an earlier row. This module does no IO: a reader hands
//! it a function that fetches one row's stored authorization.

use std::collections::HashMap;
use std::sync::Arc;

use super::authorization::{decode_stored_authorization, StoredAuthorization};
use super::CodecError;
use crate::records::{Authorization, BatchPlace};

/// The most batches a reader remembers; past it, it forgets them all and fetches a holder's
/// row when a reference names one it no longer has (a batch's rows are written together, so a
/// reference names a recent row).
pub const MAX_BATCHES_SEEN: usize = 1_024;

/// A batch's order hashes, shared by its orders.
type OrderHashes = Arc<[[u8; 32]]>;

/// For one append: the row that holds each batch's hashes so far, by the batch's shared hashes.
#[derive(Default)]
pub struct BatchHolders {
    /// By the address of the batch's shared hashes: the sequence of the row that holds them and
    /// the hashes themselves (kept so that the address cannot be reused during the append, and
    /// compared, so that only the same hashes are ever named).
    holders: HashMap<usize, (u64, OrderHashes)>,
}

impl BatchHolders {
    /// The row an authorization at `sequence` can name for its batch's hashes, or `None` when it
    /// must hold them itself (its batch's first row in this append, or no batch at all).
    pub fn holder_for(&mut self, sequence: u64, authorization: &Option<Authorization>) -> Option<u64> {
        let batch = authorization.as_ref()?.batch.as_ref()?;
        let key = Arc::as_ptr(&batch.order_hashes).cast::<u8>() as usize;
        match self.holders.get(&key) {
            Some((holder, hashes)) if *hashes == batch.order_hashes && *holder < sequence => Some(*holder),
            _ => {
                self.holders.insert(key, (sequence, Arc::clone(&batch.order_hashes)));
                None
            }
        }
    }
}

/// For one read of the journal, in order: the hashes of the batches whose rows it has read.
#[derive(Default)]
pub struct BatchHashesSeen {
    by_holder: HashMap<u64, OrderHashes>,
}

impl BatchHashesSeen {
    /// The authorization of the row at `sequence`, stored as `bytes`, whole: a reference to its
    /// batch's hashes is resolved from a row read before, or from `fetch_holder`'s bytes of the
    /// holder's row. A reference that names no earlier row holding a batch of its count is
    /// refused.
    pub fn read<E: From<CodecError>>(
        &mut self,
        sequence: u64,
        bytes: Option<Vec<u8>>,
        fetch_holder: impl FnOnce(u64) -> Result<Option<Vec<u8>>, E>,
    ) -> Result<Option<Authorization>, E> {
        let bad = || E::from(CodecError("a batch place's holder row does not hold it"));
        match decode_stored_authorization(bytes)? {
            StoredAuthorization::Whole(authorization) => {
                if let Some(batch) = authorization
                    .as_ref()
                    .and_then(|authorization| authorization.batch.as_ref())
                {
                    self.remember(sequence, &batch.order_hashes);
                }
                Ok(authorization)
            }
            StoredAuthorization::BatchReference {
                mut authorization,
                index,
                count,
                holder_sequence,
            } => {
                if holder_sequence >= sequence {
                    return Err(bad());
                }
                let order_hashes = match self.by_holder.get(&holder_sequence) {
                    Some(hashes) => Arc::clone(hashes),
                    None => {
                        let holder = match decode_stored_authorization(fetch_holder(holder_sequence)?)? {
                            StoredAuthorization::Whole(Some(Authorization { batch: Some(batch), .. })) => batch,
                            _ => return Err(bad()),
                        };
                        self.remember(holder_sequence, &holder.order_hashes);
                        holder.order_hashes
                    }
                };
                if order_hashes.len() != usize::from(count) || usize::from(index) >= order_hashes.len() {
                    return Err(bad());
                }
                authorization.batch = Some(BatchPlace { index, order_hashes });
                Ok(Some(authorization))
            }
        }
    }

    fn remember(&mut self, sequence: u64, hashes: &OrderHashes) {
        if self.by_holder.len() >= MAX_BATCHES_SEEN {
            self.by_holder.clear();
        }
        self.by_holder.insert(sequence, Arc::clone(hashes));
    }
}

#[cfg(test)]
mod tests {
    use dexd_core::OrderId;

    use super::super::{encode_authorization, encode_authorization_referring};
    use super::*;

    fn order_of(hashes: &Arc<[[u8; 32]]>, index: u8) -> Option<Authorization> {
        Some(Authorization {
            order_id: Some(OrderId::from_bytes([index; 32])),
            nonce: [7; 32],
            expiry_ms: 99,
            signature: [5; 65],
            client_signed: true,
            batch: Some(BatchPlace {
                index,
                order_hashes: Arc::clone(hashes),
            }),
            claims_batch_nonce: index == 0,
            approved_at_block: None,
        })
    }

    /// Three orders of one batch and one of another, as a writer encodes one append of them
    /// from `first`.
    fn appended(first: u64) -> (Vec<Option<Authorization>>, Vec<Option<Vec<u8>>>) {
        let one: Arc<[[u8; 32]]> = vec![[1; 32], [2; 32], [3; 32]].into();
        let other: Arc<[[u8; 32]]> = vec![[9; 32]].into();
        let authorizations = vec![
            order_of(&one, 0),
            order_of(&one, 1),
            None,
            order_of(&other, 0),
            order_of(&one, 2),
        ];
        let mut holders = BatchHolders::default();
        let rows = authorizations
            .iter()
            .enumerate()
            .map(|(offset, authorization)| {
                let sequence = first + offset as u64;
                encode_authorization_referring(authorization, holders.holder_for(sequence, authorization))
            })
            .collect();
        (authorizations, rows)
    }

    #[test]
    fn a_batch_is_held_by_its_first_row_and_read_back_whole() {
        let (authorizations, rows) = appended(10);
        let whole = encode_authorization(&authorizations[1]).unwrap().len();
        assert_eq!(
            rows[1].as_ref().unwrap()[0],
            super::super::AUTHORIZATION_BY_REFERENCE_VERSION
        );
        assert_eq!(
            rows[1].as_ref().unwrap().len(),
            whole - 3 * 32 + 8,
            "the hashes replaced by a position"
        );
        assert_eq!(
            rows[0],
            encode_authorization(&authorizations[0]),
            "the first holds them"
        );
        assert_eq!(
            rows[3],
            encode_authorization(&authorizations[3]),
            "another batch holds its own"
        );
        let mut seen = BatchHashesSeen::default();
        for (offset, row) in rows.into_iter().enumerate() {
            let read = seen
                .read::<CodecError>(10 + offset as u64, row, |_| panic!("every holder was read before"))
                .unwrap();
            assert_eq!(read, authorizations[offset]);
        }
    }

    #[test]
    fn a_read_that_starts_inside_a_batch_fetches_the_holder_once() {
        let (authorizations, rows) = appended(10);
        let mut seen = BatchHashesSeen::default();
        let mut fetched = Vec::new();
        for offset in [1usize, 2, 3, 4] {
            let read = seen
                .read::<CodecError>(10 + offset as u64, rows[offset].clone(), |holder| {
                    fetched.push(holder);
                    Ok(rows[(holder - 10) as usize].clone())
                })
                .unwrap();
            assert_eq!(read, authorizations[offset]);
        }
        assert_eq!(fetched, vec![10], "the holder fetched once, then remembered");
    }

    #[test]
    fn a_reference_to_no_holder_or_the_wrong_batch_is_refused() {
        let (_, rows) = appended(10);
        let reference = rows[1].clone();
        // The holder's row holds no batch, or a batch of another count, or is not earlier.
        for holder_row in [None, rows[2].clone(), rows[3].clone()] {
            let mut seen = BatchHashesSeen::default();
            assert!(seen
                .read::<CodecError>(11, reference.clone(), |_| Ok(holder_row.clone()))
                .is_err());
        }
        let mut seen = BatchHashesSeen::default();
        assert!(
            seen.read::<CodecError>(9, reference.clone(), |_| Ok(rows[0].clone()))
                .is_err(),
            "a reference names an earlier row"
        );
        // Cut short, or with an index past its count, it does not read.
        let mut cut = reference.clone().unwrap();
        cut.pop();
        assert!(decode_stored_authorization(Some(cut)).is_err());
        let mut past = reference.unwrap();
        let index_at = past.len() - 10;
        past[index_at] = 3;
        assert!(decode_stored_authorization(Some(past)).is_err());
        // The whole decoder refuses a reference rather than read half of it.
        assert!(super::super::decode_authorization(rows[1].clone()).is_err());
    }

    #[test]
    fn only_the_same_hashes_are_named_and_only_by_a_later_row() {
        let one: Arc<[[u8; 32]]> = vec![[1; 32], [2; 32]].into();
        let equal_copy: Arc<[[u8; 32]]> = vec![[1; 32], [2; 32]].into();
        let mut holders = BatchHolders::default();
        assert_eq!(holders.holder_for(5, &order_of(&one, 0)), None);
        assert_eq!(holders.holder_for(6, &order_of(&one, 1)), Some(5));
        assert_eq!(
            holders.holder_for(7, &order_of(&equal_copy, 1)),
            None,
            "another allocation holds its own copy"
        );
        assert_eq!(holders.holder_for(8, &None), None);
    }
}
