//! Custody on chain (vault mode).
pub mod vault;
