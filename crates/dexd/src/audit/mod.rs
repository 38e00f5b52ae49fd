//! The venue made checkable: its journal published in a documented format (`format`), with
//! the state hashes that let a replay check itself as it goes (kept by
//! `venue::state_hashes`), and `dexd audit`,
//! the process that follows a venue's journal, checks every command's authorization, replays it
//! with dexd's own engine, compares every committed root with the vault's and keeps the leaves
//! of every root it checked ([`auditor`]).
//!
//! A page gives a batch's order hashes once ([`page`]). The journal's finished segments are
//! kept as files, the same bytes for every reader
//! ([`segments`]).
//!
//! The venue serves the journal (`GET /audit/journal`, `api::handlers::audit`); nothing here
//! writes to a venue's journal or decides what it holds.

pub mod auditor;
pub mod format;
pub mod page;
pub mod segments;
