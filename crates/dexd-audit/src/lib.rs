//! dexd-audit: the venue made checkable, from outside it. Its journal is published in a
//! documented format ([`format`](mod@format)), with the state hashes that let a replay check itself as it
//! goes (kept by `dexd_venue::state_hashes`); `dexd audit` ([`auditor`]) follows a venue's
//! journal, checks every command's authorization, replays it with dexd's own engine, compares
//! every committed root with the vault's and keeps the leaves of every root it checked.
//!
//! A page gives a batch's order hashes once ([`page`]). The journal's finished segments are
//! kept as files, the same bytes for every reader
//! ([`segments`]).
//!
//! The venue serves the journal (`GET /audit/journal`, `dexd`'s `api::handlers::audit`, which
//! renders it with this crate's [`format`](mod@format) and [`page`]); nothing here writes to a venue's
//! journal or decides what it holds, and nothing here knows the venue's HTTP API: the auditor
//! is its own crate so that it trusts nothing of the venue's but the lower crates it shares
//! (the engine, the codec, the messages accounts sign).

#![forbid(unsafe_code)]

pub mod auditor;
pub mod format;
pub mod page;
pub mod segments;
