//! Custody on chain (vault mode).
pub mod deploy;
pub mod node;
pub mod vault;
