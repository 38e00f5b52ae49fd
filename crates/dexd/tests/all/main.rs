//! dexd's black-box tests, one binary with a module per area: each starts the real server on
//! port 0 (and, where it needs them, the real EVM node, PostgreSQL or Chromium) and speaks to it
//! as a client would. One binary links the crate once instead of once per file.
//!
//! Run one area or one file with a filter: `cargo test -p dexd --test all custody::vault_mode`.
//! The fault injection tests are a binary of their own (`tests/faults.rs`): their failpoints are
//! global to the process they run in.

mod common;

mod api;
mod audit;
mod cluster;
mod custody;
mod durability;
mod liabilities;
mod page;
mod streams;
