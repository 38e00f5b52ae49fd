//! What the benchmarks on a real node share: the pinned anvil (or `DEXD_ANVIL`) and its funded
//! keys as signers.

use std::path::PathBuf;

use alloy::signers::local::PrivateKeySigner;

/// The anvil binary the npm package ships, or the one `DEXD_ANVIL` names.
pub fn anvil_path() -> PathBuf {
    std::env::var_os("DEXD_ANVIL").map(PathBuf::from).unwrap_or_else(|| {
        PathBuf::from(env!("CARGO_MANIFEST_DIR"))
            .join("../../contracts/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil")
    })
}

/// Anvil's funded key number `index`, as a signer.
pub fn signer(anvil: &alloy::node_bindings::AnvilInstance, index: usize) -> PrivateKeySigner {
    PrivateKeySigner::from_signing_key(anvil.keys()[index].clone().into())
}
