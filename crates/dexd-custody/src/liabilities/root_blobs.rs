//! A root's data ([`super::root_data`]) in EIP-4844 blobs: packed with alloy's sidecar builder
//! (its simple coder: 31 data bytes per field element, the length first), committed with the
//! KZG library alloy uses (c-kzg, Ethereum's trusted setup), and read back from blobs whatever
//! server handed them over: each blob's commitment is computed again and its versioned hash must
//! be the one the chain recorded, so a beacon node can withhold data but never alter it.
//!
//! It neither sends the transaction nor fetches the blobs (the payer and `dexd exit` do).

use alloy::eips::eip4844::builder::{SidecarBuilder, SidecarCoder, SimpleCoder};
use alloy::eips::eip4844::c_kzg::{self, KzgSettings};
use alloy::eips::eip4844::{
    kzg_to_versioned_hash, AsCkzg, Blob, BlobTransactionSidecar, BYTES_PER_BLOB, FIELD_ELEMENTS_PER_BLOB,
};
use alloy::primitives::B256;

/// The most blobs one root's transaction carries: the most a transaction may carry since the
/// Osaka upgrade (EIP-7594). Data that needs more goes in calldata, or in smaller slices.
pub const MAX_BLOBS_PER_ROOT: usize = 6;
/// The data bytes one blob holds with the simple coder (31 per field element).
pub const DATA_BYTES_PER_BLOB: usize = BYTES_PER_BLOB / 32 * 31;

/// Why data could not be put in blobs, or read back from them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootBlobsError {
    /// The data needs more than [`MAX_BLOBS_PER_ROOT`] blobs.
    TooManyBlobs(usize),
    /// A blob's commitment could not be computed (not a valid blob), or the library failed.
    Kzg(String),
    /// As many blobs as the chain recorded hashes were not given.
    Count {
        /// Hashes recorded.
        recorded: usize,
        /// Blobs given.
        given: usize,
    },
    /// A blob is not the one whose versioned hash the chain recorded at this position.
    NotRecorded(usize),
    /// The blobs do not decode (their length prefix or padding is wrong).
    Undecodable,
}

impl std::fmt::Display for RootBlobsError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RootBlobsError::TooManyBlobs(count) => {
                write!(
                    formatter,
                    "the data needs {count} blobs, more than {MAX_BLOBS_PER_ROOT}"
                )
            }
            RootBlobsError::Kzg(error) => write!(formatter, "KZG: {error}"),
            RootBlobsError::Count { recorded, given } => {
                write!(formatter, "{given} blobs given for {recorded} recorded")
            }
            RootBlobsError::NotRecorded(index) => {
                write!(
                    formatter,
                    "blob {index} is not the blob whose versioned hash the chain recorded"
                )
            }
            RootBlobsError::Undecodable => write!(formatter, "the blobs do not decode"),
        }
    }
}

impl std::error::Error for RootBlobsError {}

/// How many blobs `data_bytes` of data take.
pub fn blobs_needed(data_bytes: usize) -> usize {
    // The simple coder's length prefix takes one field element, then 31 bytes in each.
    (data_bytes.div_ceil(31) + 1).div_ceil(FIELD_ELEMENTS_PER_BLOB as usize)
}

/// Ethereum's trusted setup, loaded once, without the precomputed tables that only cell proofs
/// (EIP-7594) use: alloy's default loads them too, which takes seconds before the first blob.
pub fn kzg_settings() -> &'static KzgSettings {
    c_kzg::ethereum_kzg_settings(0)
}

/// The sidecar carrying `data`: its blobs, their commitments and proofs.
pub fn sidecar_of(data: &[u8]) -> Result<BlobTransactionSidecar, RootBlobsError> {
    let needed = blobs_needed(data.len());
    if needed > MAX_BLOBS_PER_ROOT {
        return Err(RootBlobsError::TooManyBlobs(needed));
    }
    SidecarBuilder::<SimpleCoder>::from_slice(data)
        .build_4844_with_settings(kzg_settings())
        .map_err(|error| RootBlobsError::Kzg(error.to_string()))
}

/// The versioned hash of `blob`, computed from its KZG commitment.
pub fn versioned_hash_of(blob: &Blob) -> Result<B256, RootBlobsError> {
    // The blob as c-kzg's type, without a copy: 128 KiB copies on the stack overflow a
    // thread's stack in debug builds.
    let commitment = kzg_settings()
        .blob_to_kzg_commitment(blob.as_ckzg())
        .map_err(|error| RootBlobsError::Kzg(error.to_string()))?;
    Ok(kzg_to_versioned_hash(commitment.as_slice()))
}

/// The data `blobs` carry, each checked against the versioned hash the chain recorded for its
/// position.
pub fn data_from_blobs(blobs: &[Blob], recorded: &[B256]) -> Result<Vec<u8>, RootBlobsError> {
    if blobs.len() != recorded.len() || blobs.is_empty() {
        return Err(RootBlobsError::Count {
            recorded: recorded.len(),
            given: blobs.len(),
        });
    }
    for (index, (blob, hash)) in blobs.iter().zip(recorded).enumerate() {
        if versioned_hash_of(blob)? != *hash {
            return Err(RootBlobsError::NotRecorded(index));
        }
    }
    decode_checked(blobs)
}

/// The data of blobs whose versioned hashes the caller has checked against the recorded ones
/// (a commitment costs milliseconds: it is computed once per blob).
pub(super) fn decode_checked(blobs: &[Blob]) -> Result<Vec<u8>, RootBlobsError> {
    let mut pieces = SimpleCoder::default()
        .decode_all(blobs)
        .ok_or(RootBlobsError::Undecodable)?;
    // One slice of data was coded: one piece comes back.
    if pieces.len() != 1 {
        return Err(RootBlobsError::Undecodable);
    }
    Ok(pieces.remove(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn data(bytes: usize) -> Vec<u8> {
        (0..bytes).map(|index| (index * 7 % 251) as u8).collect()
    }

    #[test]
    fn data_comes_back_from_its_blobs_only_with_the_hashes_recorded() {
        for bytes in [
            1,
            31,
            32,
            DATA_BYTES_PER_BLOB - 31,
            DATA_BYTES_PER_BLOB,
            3 * DATA_BYTES_PER_BLOB,
        ] {
            let data = data(bytes);
            let sidecar = sidecar_of(&data).unwrap();
            assert_eq!(sidecar.blobs.len(), blobs_needed(bytes), "{bytes} bytes");
            let hashes: Vec<B256> = sidecar.versioned_hashes().collect();
            assert_eq!(data_from_blobs(&sidecar.blobs, &hashes).unwrap(), data);
        }
        let data = data(1_000);
        let sidecar = sidecar_of(&data).unwrap();
        let hashes: Vec<B256> = sidecar.versioned_hashes().collect();
        // A server that alters a byte is caught by the commitment.
        let mut altered = sidecar.blobs.clone();
        altered[0].0[100] ^= 1;
        assert_eq!(data_from_blobs(&altered, &hashes), Err(RootBlobsError::NotRecorded(0)));
        // Another root's blob, valid in itself, is not the one recorded.
        let other = sidecar_of(&data[..999]).unwrap();
        assert_eq!(
            data_from_blobs(&other.blobs, &hashes),
            Err(RootBlobsError::NotRecorded(0))
        );
        assert!(matches!(
            data_from_blobs(&[], &hashes),
            Err(RootBlobsError::Count { .. })
        ));
    }

    #[test]
    fn data_past_the_blobs_a_transaction_carries_is_refused() {
        let most = MAX_BLOBS_PER_ROOT * DATA_BYTES_PER_BLOB - 31;
        assert_eq!(blobs_needed(most), MAX_BLOBS_PER_ROOT);
        assert_eq!(sidecar_of(&data(most)).unwrap().blobs.len(), MAX_BLOBS_PER_ROOT);
        assert_eq!(
            sidecar_of(&data(most + 1)),
            Err(RootBlobsError::TooManyBlobs(MAX_BLOBS_PER_ROOT + 1))
        );
    }
}
