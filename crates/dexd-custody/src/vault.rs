//! The vault contract as dexd sees it: bindings generated at compile time from the committed
//! artifacts (`contracts/artifacts/DexdVault.json` and `DexdVaultV2.json`, the reproducible
//! builds of `contracts/src/DexdVault.sol` and `DexdVaultV2.sol`), the minimal ERC-20 interface
//! dexd calls, and the EIP-712 `Withdrawal` an account signs.
//!
//! Both versions inherit `DexdVaultBase` (`contracts/src/DexdVaultBase.sol`: the withdrawal rule,
//! the operator, the owner's switches). Version 2 takes every call of version 1 with the same
//! selectors and events, so the watcher and the payer speak to either through `DexdVault`; the liability roots and the exit are
//! version 2's alone (`DexdVaultV2`).
//!
//! It only describes the contract; calling it is [`super::node`]'s and the payer's business.

use alloy::primitives::{Address as ChainAddress, U256};
use dexd_core::Address;

use dexd_crypto::{FieldValue, SigningDomain, TypedMessage};

alloy::sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    DexdVault,
    "../../contracts/artifacts/DexdVault.json"
);

/// Version 2's bindings, in a module of their own: both artifacts declare the shared
/// `DexdVaultBase` (its `Withdrawal` struct), which the bindings turn into a module each.
mod version_2 {
    alloy::sol!(
        #[sol(rpc)]
        #[derive(Debug)]
        DexdVaultV2,
        "../../contracts/artifacts/DexdVaultV2.json"
    );
}

pub use self::version_2::DexdVaultV2;

alloy::sol! {
    /// The part of ERC-20 dexd uses: balances and allowances for deposits from an account,
    /// and the approve it sends before a deposit.
    #[sol(rpc)]
    #[derive(Debug)]
    interface Erc20 {
        function balanceOf(address account) external view returns (uint256);
        function allowance(address owner, address spender) external view returns (uint256);
        function approve(address spender, uint256 amount) external returns (bool);
        function decimals() external view returns (uint8);
    }
}

pub use dexd_crypto::WITHDRAWAL_TYPE;

/// The terms of one withdrawal as the account signs them.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct WithdrawalTerms {
    /// Who withdraws (and is paid).
    pub account: Address,
    /// The token, or `None` for the native asset (the zero address on chain).
    pub token: Option<Address>,
    /// How much, in the token's smallest unit.
    pub amount_units: u128,
    /// The account's id of the withdrawal.
    pub withdrawal_id: [u8; 32],
    /// Until when the vault may pay it, in ms since the epoch.
    pub expiry_ms: u64,
}

impl WithdrawalTerms {
    /// The typed message, as the vault hashes it.
    pub fn typed(&self) -> TypedMessage {
        let mut amount = [0u8; 32];
        amount[16..].copy_from_slice(&self.amount_units.to_be_bytes());
        TypedMessage {
            struct_type: &WITHDRAWAL_TYPE,
            values: vec![
                FieldValue::Address(self.account),
                FieldValue::Address(self.token.unwrap_or(Address::from_bytes([0; 20]))),
                FieldValue::Uint(amount),
                FieldValue::Uint(self.withdrawal_id),
                FieldValue::uint(self.expiry_ms),
            ],
        }
    }

    /// The digest the account signs, under the chain's domain (whose verifying contract is the
    /// vault on a vault chain).
    pub fn digest(&self, domain: &SigningDomain) -> [u8; 32] {
        domain.digest(&self.typed())
    }

    /// The vault's call argument for paying this withdrawal with `signature`.
    pub fn call_argument(&self, signature: &[u8; 65]) -> DexdVaultBase::Withdrawal {
        DexdVaultBase::Withdrawal {
            account: chain_address(&self.account),
            token: self.token.map_or(ChainAddress::ZERO, |token| chain_address(&token)),
            amount: U256::from(self.amount_units),
            withdrawalId: U256::from_be_bytes(self.withdrawal_id),
            expiry: U256::from(self.expiry_ms),
            signature: signature.to_vec().into(),
        }
    }
}

/// dexd's address as alloy's.
pub fn chain_address(address: &Address) -> ChainAddress {
    ChainAddress::from(*address.as_bytes())
}

/// alloy's address as dexd's.
pub fn venue_address(address: &ChainAddress) -> Address {
    Address::from_bytes(address.into_array())
}
