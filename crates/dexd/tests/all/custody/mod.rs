//! Custody on a real EVM node (anvil): the vault contract, deposits, withdrawals, keys and the soak.

mod contract_build;
mod deposits;
mod forced_withdrawals;
mod key_safety;
mod soak_custody;
mod twap_schedule;
mod vault_contract;
mod vault_contract_accounts;
mod vault_mode;
mod vault_start;
mod withdrawals;
