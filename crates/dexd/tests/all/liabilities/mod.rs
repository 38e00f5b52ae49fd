//! Liability roots and the exit: the trees, proofs, roots on the vault and everyone's exit.

mod exit_from_chain;
mod exit_holds;
mod exit_random;
mod liability_tree;
mod root_data_chain;
mod roots;
mod vault_exit;
mod vault_liabilities;
mod vault_requests;
