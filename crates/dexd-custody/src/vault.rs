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

#[cfg(test)]
mod tests {
    use super::*;

    /// The vault's digest of a withdrawal as its source computes it, with alloy's ABI encoding
    /// and domain: `keccak256(0x1901 ‖ domainSeparator ‖ keccak256(abi.encode(WITHDRAWAL_TYPEHASH,
    /// account, token, amount, withdrawalId, expiry)))`, written apart from dexd's typed messages.
    fn vault_digest(domain: &alloy::sol_types::Eip712Domain, terms: &WithdrawalTerms) -> [u8; 32] {
        use alloy::primitives::keccak256;
        use alloy::sol_types::SolValue;
        let type_hash =
            keccak256("Withdrawal(address account,address token,uint256 amount,uint256 withdrawalId,uint256 expiry)");
        let token = terms.token.map_or(ChainAddress::ZERO, |token| chain_address(&token));
        let struct_hash = keccak256(
            (
                type_hash,
                chain_address(&terms.account),
                token,
                U256::from(terms.amount_units),
                U256::from_be_bytes(terms.withdrawal_id),
                U256::from(terms.expiry_ms),
            )
                .abi_encode(),
        );
        let mut preimage = vec![0x19, 0x01];
        preimage.extend_from_slice(domain.separator().as_slice());
        preimage.extend_from_slice(struct_hash.as_slice());
        keccak256(preimage).0
    }

    fn terms(token: Option<Address>) -> WithdrawalTerms {
        WithdrawalTerms {
            account: Address::from_bytes([0x11; 20]),
            token,
            amount_units: 123_456_789_000_000_000_000_000,
            withdrawal_id: [0x7f; 32],
            expiry_ms: 1_800_000_000_000,
        }
    }

    #[test]
    fn the_withdrawal_digest_is_the_one_the_vault_computes() {
        let vault = Address::from_bytes([0x42; 20]);
        let domain = SigningDomain::new(8453, vault);
        let alloy_domain = alloy::sol_types::eip712_domain! {
            name: "dexd",
            version: "1",
            chain_id: 8453,
            verifying_contract: chain_address(&vault),
        };
        for token in [None, Some(Address::from_bytes([0x0c; 20]))] {
            let terms = terms(token);
            assert_eq!(
                terms.digest(&domain),
                vault_digest(&alloy_domain, &terms),
                "token {token:?}"
            );
        }
        // Another chain or vault is another digest: a signature for one is void on the other.
        let terms = terms(None);
        assert_ne!(terms.digest(&domain), terms.digest(&SigningDomain::new(1, vault)));
        assert_ne!(
            terms.digest(&domain),
            terms.digest(&SigningDomain::new(8453, Address::from_bytes([0x43; 20])))
        );
    }

    #[test]
    fn the_call_argument_carries_exactly_the_signed_terms() {
        let terms = terms(Some(Address::from_bytes([0x0c; 20])));
        let signature = [0xab; 65];
        let argument = terms.call_argument(&signature);
        assert_eq!(venue_address(&argument.account), terms.account);
        assert_eq!(venue_address(&argument.token), Address::from_bytes([0x0c; 20]));
        assert_eq!(argument.amount, U256::from(terms.amount_units));
        assert_eq!(argument.withdrawalId.to_be_bytes::<32>(), terms.withdrawal_id);
        assert_eq!(argument.expiry, U256::from(terms.expiry_ms));
        assert_eq!(argument.signature.as_ref(), &signature[..]);
        let native = WithdrawalTerms { token: None, ..terms }.call_argument(&signature);
        assert_eq!(native.token, ChainAddress::ZERO, "the native asset is the zero address");
    }
}
