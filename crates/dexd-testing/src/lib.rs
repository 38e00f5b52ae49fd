//! The engine's test fixtures (`dexd_core::testing`) for the tests and benchmarks of dexd's
//! crates, the engine's own included: a crate's integration tests and benchmarks cannot turn on
//! a feature of that crate itself, but a dev-dependency on this one turns on `dexd-core`'s
//! `testing` for them alone (features of dev-dependencies reach only the targets that use them).
//!
//! It adds nothing of its own.

pub use dexd_core::testing::*;
