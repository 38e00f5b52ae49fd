//! The public journal and `dexd audit`: replay, state hashes, roots, the guardian's veto.

mod audit_root_data;
mod audit_vault;
mod every_way;
pub(crate) mod journal;
mod segments;
