//! The hash behind [`Engine::state_hash`](super::Engine::state_hash): BLAKE3 over the state's
//! fields in a fixed order, fed through a buffer.
//!
//! Why BLAKE3 and a buffer: a start from a snapshot checks the restored engine against the hash
//! written with it, over every resting order (about 150 bytes each, a million of them at the
//! venue's limit). Fed field by field, SHA3-256 took about 0.3 s of that start; BLAKE3 handed
//! large slices hashes several chunks at once with the processor's vector instructions.
//! Collision resistance is what the hash is for, and BLAKE3 keeps it. It is not a checksum of a
//! file (the snapshot has its own) and not a format anyone outside the process reads.

/// Bytes gathered before they are handed to BLAKE3 (a multiple of its 1 KiB chunk).
const BUFFER_BYTES: usize = 64 * 1024;

/// A BLAKE3 hasher fed through a buffer of [`BUFFER_BYTES`].
pub(crate) struct StateHasher {
    buffer: Vec<u8>,
    hasher: blake3::Hasher,
}

impl StateHasher {
    pub(crate) fn new() -> StateHasher {
        StateHasher {
            buffer: Vec::with_capacity(BUFFER_BYTES),
            hasher: blake3::Hasher::new(),
        }
    }

    /// Feeds `bytes`.
    pub(crate) fn update(&mut self, bytes: impl AsRef<[u8]>) {
        let bytes = bytes.as_ref();
        if self.buffer.len() + bytes.len() > BUFFER_BYTES {
            self.hasher.update(&self.buffer);
            self.buffer.clear();
        }
        if bytes.len() >= BUFFER_BYTES {
            self.hasher.update(bytes);
        } else {
            self.buffer.extend_from_slice(bytes);
        }
    }

    /// Feeds a byte string of any length, preceded by its length so that it cannot run into
    /// the field after it.
    pub(crate) fn update_with_length(&mut self, bytes: &[u8]) {
        self.update((bytes.len() as u64).to_be_bytes());
        self.update(bytes);
    }

    /// The hash of everything fed.
    pub(crate) fn finalize(mut self) -> [u8; 32] {
        self.hasher.update(&self.buffer);
        self.buffer.clear();
        *self.hasher.finalize().as_bytes()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The buffer changes nothing: the hash is BLAKE3 of the concatenation, however the bytes
    /// were split.
    #[test]
    fn the_hash_is_blake3_of_everything_fed_whatever_the_pieces() {
        let bytes: Vec<u8> = (0..(3 * BUFFER_BYTES + 17))
            .map(|index| (index * 31 % 251) as u8)
            .collect();
        let expected = *blake3::hash(&bytes).as_bytes();
        for piece_bytes in [1, 7, 150, BUFFER_BYTES - 1, BUFFER_BYTES, BUFFER_BYTES + 1, bytes.len()] {
            let mut hasher = StateHasher::new();
            for piece in bytes.chunks(piece_bytes) {
                hasher.update(piece);
            }
            assert_eq!(hasher.finalize(), expected, "pieces of {piece_bytes} bytes");
        }
    }

    #[test]
    fn a_length_prefix_separates_strings_that_concatenate_alike() {
        let hash = |first: &[u8], second: &[u8]| {
            let mut hasher = StateHasher::new();
            hasher.update_with_length(first);
            hasher.update_with_length(second);
            hasher.finalize()
        };
        assert_ne!(hash(b"ab", b"c"), hash(b"a", b"bc"));
    }
}
