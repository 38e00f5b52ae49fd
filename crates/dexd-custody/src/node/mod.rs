//! One vault chain's JSON-RPC node, as the watcher, the payer and the deposit path use it: the
//! few calls they make, each bounded by the chain's RPC timeout, and the node's failures sorted
//! into what they mean for dexd ([`NodeError`]).
//!
//! It signs and sends transactions it is given a signer for; it never sees or holds a key
//! otherwise, and it decides nothing about custody.

use std::time::Duration;

use alloy::eips::eip4844::BlobTransactionSidecar;
use alloy::eips::{BlockId, BlockNumberOrTag, Encodable2718};
use alloy::network::{EthereumWallet, NetworkTransactionBuilder, TransactionBuilder, TransactionBuilder4844};
use alloy::primitives::{Address as ChainAddress, Bytes, TxKind, B256, U256};
use alloy::providers::{Provider, RootProvider};
use alloy::rpc::client::RpcClient;
use alloy::rpc::types::{Filter, TransactionRequest};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::{SolCall, SolEvent};
use alloy::transports::{RpcError, TransportError};

use super::vault::{DexdVault, DexdVaultV2, Erc20};

mod logs;

pub use self::logs::{DepositLog, RequestLog, RootLog};

/// What went wrong with a request to the node.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum NodeError {
    /// The node could not be reached, timed out, or answered something unreadable: the chain is
    /// unavailable for now, and the request may be retried.
    Unavailable(String),
    /// The node answered with a JSON-RPC error (a range too large, a transaction refused...).
    Refused(String),
    /// A call or a transaction's estimate reverted; the revert data when the node gave it.
    Reverted {
        /// The node's message.
        message: String,
        /// The revert data (an ABI-encoded custom error).
        data: Option<Bytes>,
    },
}

impl std::fmt::Display for NodeError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            NodeError::Unavailable(message) => write!(formatter, "the node is unavailable: {message}"),
            NodeError::Refused(message) => write!(formatter, "the node refused: {message}"),
            NodeError::Reverted { message, .. } => write!(formatter, "reverted: {message}"),
        }
    }
}

impl std::error::Error for NodeError {}

impl From<TransportError> for NodeError {
    fn from(error: TransportError) -> NodeError {
        match &error {
            RpcError::ErrorResp(payload) => match payload.as_revert_data() {
                Some(data) => NodeError::Reverted {
                    message: without_urls(&payload.message),
                    data: Some(data),
                },
                None if payload.message.contains("revert") => NodeError::Reverted {
                    message: without_urls(&payload.message),
                    data: None,
                },
                None => NodeError::Refused(format!("{} (code {})", without_urls(&payload.message), payload.code)),
            },
            // The transport's errors name the URL they were sending to.
            _ => NodeError::Unavailable(without_urls(&error.to_string())),
        }
    }
}

/// What replaces a URL in a node's error text.
pub const REDACTED_URL: &str = "<node URL>";

/// `text` with every `http://` or `https://` URL in it replaced by [`REDACTED_URL`]: the node's
/// URL is a secret (providers put API keys in its path or query), so no error, log line or
/// answer may carry it.
pub fn without_urls(text: &str) -> String {
    let mut clean = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(start) = ["http://", "https://"]
        .iter()
        .filter_map(|scheme| rest.find(scheme))
        .min()
    {
        clean.push_str(&rest[..start]);
        clean.push_str(REDACTED_URL);
        let url = &rest[start..];
        let end = url
            .find(|character: char| character.is_whitespace() || matches!(character, ')' | '"' | '\'' | '>' | ','))
            .unwrap_or(url.len());
        rest = &url[end..];
    }
    clean.push_str(rest);
    clean
}

/// A mined transaction's outcome.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Receipt {
    /// Whether it succeeded (did not revert).
    pub succeeded: bool,
    /// The block it was mined in.
    pub block_number: u64,
    /// Gas it used.
    pub gas_used: u64,
}

/// The fees and limit a transaction is sent with.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Fees {
    /// EIP-1559 maximum fee per gas, in wei.
    pub max_fee_per_gas: u128,
    /// EIP-1559 priority fee per gas, in wei.
    pub max_priority_fee_per_gas: u128,
    /// The gas limit.
    pub gas_limit: u64,
}

/// What a transaction does and what it pays: everything of it but the signer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransactionTerms {
    /// The contract called (or the account paid).
    pub to: TxKind,
    /// The call data.
    pub input: Vec<u8>,
    /// The native asset sent with it, in wei.
    pub value: U256,
    /// The sender's nonce it takes.
    pub nonce: u64,
    /// Its fees and gas limit.
    pub fees: Fees,
    /// The blobs it carries (an EIP-4844 transaction), if any.
    pub blobs: Option<BlobTerms>,
}

/// The blobs a transaction carries and what it pays per unit of blob gas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BlobTerms {
    /// The blobs, their commitments and proofs.
    pub sidecar: std::sync::Arc<BlobTransactionSidecar>,
    /// The most it pays per unit of blob gas, in wei.
    pub max_fee_per_blob_gas: u128,
}

impl BlobTerms {
    /// The versioned hashes of its blobs, in order: what `BLOBHASH` shows the contract.
    pub fn versioned_hashes(&self) -> Vec<B256> {
        self.sidecar.versioned_hashes().collect()
    }
}

/// A signed transaction, broadcast.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SentTransaction {
    /// Its hash.
    pub hash: B256,
    /// The sender's nonce it used.
    pub nonce: u64,
    /// What it pays for gas.
    pub fees: Fees,
}

/// A signed transaction not yet handed to the node.
#[derive(Debug, Clone)]
pub struct SignedTransaction {
    /// What it will be once sent.
    pub sent: SentTransaction,
    /// Its EIP-2718 encoding.
    pub raw: Vec<u8>,
}

/// The node of one vault chain.
#[derive(Clone)]
pub struct Node {
    provider: RootProvider,
    vault: ChainAddress,
    chain_id: u64,
}

/// Gas added on top of a node's estimate, in percent: estimates are exact for the state they
/// ran on, and a batch's cost moves with the state it runs on.
const GAS_MARGIN_PERCENT: u64 = 25;

impl Node {
    /// A client of `rpc_url` for the vault at `vault` on chain `chain_id`; every request times
    /// out after `timeout`.
    pub fn connect(rpc_url: &str, vault: ChainAddress, chain_id: u64, timeout: Duration) -> Result<Node, String> {
        let url = rpc_url
            .parse()
            .map_err(|error| format!("the RPC URL is not a URL: {error}"))?;
        // TLS to https:// nodes runs on rustls with the ring provider (the one the server's TLS
        // uses); it is the process's default from the first node on. A second install is refused
        // harmlessly.
        let _ = rustls::crypto::ring::default_provider().install_default();
        let http = alloy::transports::http::reqwest::Client::builder()
            .timeout(timeout)
            .build()
            .map_err(|error| format!("cannot build the HTTP client: {error}"))?;
        let client = RpcClient::new_http_with_client(http, url);
        Ok(Node {
            provider: RootProvider::new(client),
            vault,
            chain_id,
        })
    }

    /// The vault's address.
    pub fn vault(&self) -> ChainAddress {
        self.vault
    }

    /// The chain id the node reports.
    pub async fn chain_id(&self) -> Result<u64, NodeError> {
        Ok(self.provider.get_chain_id().await?)
    }

    /// Checks that the node serves the configured chain.
    pub async fn check_chain_id(&self) -> Result<(), NodeError> {
        let reported = self.chain_id().await?;
        if reported != self.chain_id {
            return Err(NodeError::Refused(format!(
                "the node serves chain {reported}, the configuration says {}",
                self.chain_id
            )));
        }
        Ok(())
    }

    /// The number of the newest block.
    pub async fn head(&self) -> Result<u64, NodeError> {
        Ok(self.provider.get_block_number().await?)
    }

    /// A block's hash and timestamp (seconds), or `None` when the node has no such block.
    pub async fn block(&self, number: u64) -> Result<Option<(B256, u64)>, NodeError> {
        let block = self
            .provider
            .get_block_by_number(BlockNumberOrTag::Number(number))
            .await?;
        Ok(block.map(|block| (block.header.hash, block.header.timestamp)))
    }

    /// The newest block the node calls finalized; `None` before there is one.
    pub async fn finalized_block(&self) -> Result<Option<u64>, NodeError> {
        let block = self.provider.get_block_by_number(BlockNumberOrTag::Finalized).await?;
        Ok(block.map(|block| block.header.number))
    }

    /// Whether each (account, withdrawal id) is paid, as of `block`.
    pub async fn withdrawn_many(&self, keys: &[(ChainAddress, U256)], block: BlockId) -> Result<Vec<bool>, NodeError> {
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        let call = DexdVault::withdrawnManyCall {
            accounts: keys.iter().map(|(account, _)| *account).collect(),
            withdrawalIds: keys.iter().map(|(_, id)| *id).collect(),
        };
        self.view(self.vault, call, block).await
    }

    /// Whether each request made on chain was served, as of `block`.
    pub async fn requests_served(&self, request_ids: &[u64], block: BlockId) -> Result<Vec<bool>, NodeError> {
        let mut served = Vec::with_capacity(request_ids.len());
        for request_id in request_ids {
            let call = DexdVaultV2::withdrawalRequestCall {
                requestId: U256::from(*request_id),
            };
            served.push(self.view(self.vault, call, block).await?.served);
        }
        Ok(served)
    }

    /// How many withdrawals accounts had requested on chain as of `block`: the next request's
    /// number.
    pub async fn request_count(&self, block: BlockId) -> Result<U256, NodeError> {
        self.view(self.vault, DexdVaultV2::requestCountCall {}, block).await
    }

    /// How many deposits the vault had taken as of `block`: the next deposit's number.
    pub async fn deposit_count(&self, block: BlockId) -> Result<U256, NodeError> {
        self.view(self.vault, DexdVault::depositCountCall {}, block).await
    }

    /// Whether the vault takes `signature` as `account`'s authorization of `digest` (its ECDSA
    /// signature, or a contract account's ERC-1271 approval), as of the latest block.
    pub async fn vault_takes_authorization(
        &self,
        account: ChainAddress,
        digest: B256,
        signature: &[u8],
    ) -> Result<bool, NodeError> {
        self.vault_took_authorization(account, digest, signature, BlockId::latest())
            .await
    }

    /// [`Node::vault_takes_authorization`] as the vault answered at `block`: an approval a
    /// contract account gave may since have lapsed.
    pub async fn vault_took_authorization(
        &self,
        account: ChainAddress,
        digest: B256,
        signature: &[u8],
        block: BlockId,
    ) -> Result<bool, NodeError> {
        let call = DexdVault::isAuthorizedCall {
            account,
            digest,
            signature: Bytes::copy_from_slice(signature),
        };
        self.view(self.vault, call, block).await
    }

    /// The vault's operator.
    pub async fn operator(&self) -> Result<ChainAddress, NodeError> {
        self.view(self.vault, DexdVault::operatorCall {}, BlockId::latest())
            .await
    }

    /// An account's balance of a token, or of the native asset when `token` is `None`.
    pub async fn balance(
        &self,
        token: Option<ChainAddress>,
        owner: ChainAddress,
        block: BlockId,
    ) -> Result<U256, NodeError> {
        match token {
            None => Ok(self.provider.get_balance(owner).block_id(block).await?),
            Some(token) => self.view(token, Erc20::balanceOfCall { account: owner }, block).await,
        }
    }

    /// What `owner` allows `spender` to take of `token`.
    pub async fn allowance(
        &self,
        token: ChainAddress,
        owner: ChainAddress,
        spender: ChainAddress,
    ) -> Result<U256, NodeError> {
        self.view(token, Erc20::allowanceCall { owner, spender }, BlockId::latest())
            .await
    }

    /// A token's decimals.
    pub async fn decimals(&self, token: ChainAddress) -> Result<u8, NodeError> {
        self.view(token, Erc20::decimalsCall {}, BlockId::latest()).await
    }

    /// Calls a view function of contract `to` at `block` and decodes its answer.
    pub async fn view<Call: SolCall>(
        &self,
        to: ChainAddress,
        call: Call,
        block: BlockId,
    ) -> Result<Call::Return, NodeError> {
        let output = self.call(None, to, call.abi_encode(), U256::ZERO, block).await?;
        Call::abi_decode_returns(&output)
            .map_err(|error| NodeError::Unavailable(format!("unreadable answer of {}: {error}", Call::SIGNATURE)))
    }

    /// The vault's (version 2) liability root of `epoch`, as the chain holds it at `block`.
    pub async fn liability_root(
        &self,
        epoch: u64,
        block: BlockId,
    ) -> Result<<DexdVaultV2::liabilityRootCall as SolCall>::Return, NodeError> {
        let call = DexdVaultV2::liabilityRootCall {
            epoch: U256::from(epoch),
        };
        self.view(self.vault(), call, block).await
    }

    /// Runs a call without sending it (`eth_call`).
    pub async fn call(
        &self,
        from: Option<ChainAddress>,
        to: ChainAddress,
        input: Vec<u8>,
        value: U256,
        block: BlockId,
    ) -> Result<Bytes, NodeError> {
        let mut request = TransactionRequest::default()
            .with_to(to)
            .with_input(input)
            .with_value(value);
        if let Some(from) = from {
            request = request.with_from(from);
        }
        Ok(self.provider.call(request).block(block).await?)
    }

    /// A call run as the transaction that would follow it: from `from`, at the EIP-1559 fees
    /// `(max_fee_per_gas, max_priority_fee_per_gas)` it would pay, so that code which looks at
    /// `tx.gasprice` or the sender sees what the transaction will show it.
    pub async fn call_as_sent(
        &self,
        from: ChainAddress,
        (to, input, value): (ChainAddress, Vec<u8>, U256),
        (max_fee_per_gas, max_priority_fee_per_gas): (u128, u128),
        block: BlockId,
    ) -> Result<Bytes, NodeError> {
        let request = TransactionRequest::default()
            .with_from(from)
            .with_to(to)
            .with_input(input)
            .with_value(value)
            .with_max_fee_per_gas(max_fee_per_gas)
            .with_max_priority_fee_per_gas(max_priority_fee_per_gas);
        Ok(self.provider.call(request).block(block).await?)
    }

    /// [`Node::estimate_gas`] of the transaction as it will be sent, at its fees
    /// ([`Node::call_as_sent`]).
    pub async fn estimate_gas_as_sent(
        &self,
        from: ChainAddress,
        (to, input, value): (ChainAddress, &[u8], U256),
        (max_fee_per_gas, max_priority_fee_per_gas): (u128, u128),
        blobs: Option<&BlobTerms>,
    ) -> Result<u64, NodeError> {
        let mut request = TransactionRequest::default()
            .with_from(from)
            .with_to(to)
            .with_input(input.to_vec())
            .with_value(value)
            .with_max_fee_per_gas(max_fee_per_gas)
            .with_max_priority_fee_per_gas(max_priority_fee_per_gas);
        // The contract sees the blobs' versioned hashes (`BLOBHASH`), not the blobs.
        if let Some(blobs) = blobs {
            request.blob_versioned_hashes = Some(blobs.versioned_hashes());
            request.max_fee_per_blob_gas = Some(blobs.max_fee_per_blob_gas);
        }
        let estimate = self.provider.estimate_gas(request).await?;
        Ok(estimate.saturating_add(estimate * GAS_MARGIN_PERCENT / 100))
    }

    /// The gas a transaction would use, with `GAS_MARGIN_PERCENT` on top; a revert is
    /// [`NodeError::Reverted`].
    pub async fn estimate_gas(
        &self,
        from: ChainAddress,
        to: ChainAddress,
        input: &[u8],
        value: U256,
    ) -> Result<u64, NodeError> {
        let request = TransactionRequest::default()
            .with_from(from)
            .with_to(to)
            .with_input(input.to_vec())
            .with_value(value);
        let estimate = self.provider.estimate_gas(request).await?;
        Ok(estimate.saturating_add(estimate * GAS_MARGIN_PERCENT / 100))
    }

    /// The node's EIP-1559 fee estimate.
    pub async fn fee_estimate(&self) -> Result<(u128, u128), NodeError> {
        let estimate = self.provider.estimate_eip1559_fees().await?;
        Ok((estimate.max_fee_per_gas, estimate.max_priority_fee_per_gas))
    }

    /// The chain's blob base fee now, in wei per unit of blob gas (EIP-4844).
    pub async fn blob_base_fee(&self) -> Result<u128, NodeError> {
        Ok(self.provider.get_blob_base_fee().await?)
    }

    /// The next nonce of an account, counting its transactions waiting in the node's pool.
    pub async fn pending_nonce(&self, account: ChainAddress) -> Result<u64, NodeError> {
        Ok(self.provider.get_transaction_count(account).pending().await?)
    }

    /// The nonce of an account as of the newest block.
    pub async fn latest_nonce(&self, account: ChainAddress) -> Result<u64, NodeError> {
        Ok(self.provider.get_transaction_count(account).latest().await?)
    }

    /// Signs a transaction (EIP-1559, this chain) with `signer`, without sending it: its hash is
    /// known (and can be journaled) before the node ever sees it.
    pub async fn sign(
        &self,
        signer: &PrivateKeySigner,
        terms: TransactionTerms,
    ) -> Result<SignedTransaction, NodeError> {
        let TransactionTerms {
            to,
            input,
            value,
            nonce,
            fees,
            blobs,
        } = terms;
        let mut request = TransactionRequest::default()
            .with_from(signer.address())
            .with_kind(to)
            .with_input(input)
            .with_value(value)
            .with_nonce(nonce)
            .with_chain_id(self.chain_id)
            .with_gas_limit(fees.gas_limit)
            .with_max_fee_per_gas(fees.max_fee_per_gas)
            .with_max_priority_fee_per_gas(fees.max_priority_fee_per_gas);
        if let Some(blobs) = blobs {
            request = request
                .with_blob_sidecar_4844(BlobTransactionSidecar::clone(&blobs.sidecar))
                .with_max_fee_per_blob_gas(blobs.max_fee_per_blob_gas);
        }
        let wallet = EthereumWallet::from(signer.clone());
        let envelope = request
            .build(&wallet)
            .await
            .map_err(|error| NodeError::Refused(format!("the transaction cannot be built: {error}")))?;
        Ok(SignedTransaction {
            sent: SentTransaction {
                hash: *envelope.tx_hash(),
                nonce,
                fees,
            },
            raw: envelope.encoded_2718(),
        })
    }

    /// Hands a signed transaction to the node.
    pub async fn broadcast(&self, signed: &SignedTransaction) -> Result<SentTransaction, NodeError> {
        // The pending-transaction handle is not needed: the payer and the deposit path poll the
        // receipt themselves, so that a restart loses nothing it held.
        let _pending = self.provider.send_raw_transaction(&signed.raw).await?;
        Ok(signed.sent)
    }

    /// Signs a transaction and hands it to the node.
    pub async fn send(&self, signer: &PrivateKeySigner, terms: TransactionTerms) -> Result<SentTransaction, NodeError> {
        let signed = self.sign(signer, terms).await?;
        self.broadcast(&signed).await
    }

    /// A transaction's receipt, once it is mined.
    pub async fn receipt(&self, hash: B256) -> Result<Option<Receipt>, NodeError> {
        let receipt = self.provider.get_transaction_receipt(hash).await?;
        Ok(receipt.and_then(|receipt| {
            Some(Receipt {
                succeeded: receipt.status(),
                block_number: receipt.block_number?,
                gas_used: receipt.gas_used,
            })
        }))
    }

    /// Waits for a transaction's receipt, polling every `poll`, for at most `timeout`.
    pub async fn wait_for_receipt(&self, hash: B256, poll: Duration, timeout: Duration) -> Result<Receipt, NodeError> {
        let deadline = tokio::time::Instant::now() + timeout;
        loop {
            if let Some(receipt) = self.receipt(hash).await? {
                return Ok(receipt);
            }
            if tokio::time::Instant::now() >= deadline {
                return Err(NodeError::Unavailable(format!(
                    "transaction {hash} was not mined within {} ms",
                    timeout.as_millis()
                )));
            }
            tokio::time::sleep(poll).await;
        }
    }

    /// Sends a transaction from `signer` at its next nonce, with the node's fee estimate and a
    /// gas estimate (a revert in the estimate is returned, and nothing is sent).
    pub async fn send_estimated(
        &self,
        signer: &PrivateKeySigner,
        to: TxKind,
        input: Vec<u8>,
        value: U256,
    ) -> Result<SentTransaction, NodeError> {
        let from = signer.address();
        let mut request = TransactionRequest::default()
            .with_from(from)
            .with_kind(to)
            .with_input(input.clone())
            .with_value(value);
        request.to = Some(to);
        let estimate = self.provider.estimate_gas(request).await?;
        let gas_limit = estimate.saturating_add(estimate * GAS_MARGIN_PERCENT / 100);
        let (max_fee_per_gas, max_priority_fee_per_gas) = self.fee_estimate().await?;
        let nonce = self.pending_nonce(from).await?;
        let fees = Fees {
            max_fee_per_gas,
            max_priority_fee_per_gas,
            gas_limit,
        };
        self.send(
            signer,
            TransactionTerms {
                to,
                input,
                value,
                nonce,
                fees,
                blobs: None,
            },
        )
        .await
    }

    /// A mined or waiting transaction's input and the versioned hashes of the blobs it carried
    /// (none for a transaction without blobs); `None` when the node does not know it.
    pub async fn transaction_payload(&self, hash: B256) -> Result<Option<(Bytes, Vec<B256>)>, NodeError> {
        use alloy::consensus::Transaction as _;
        let Some(transaction) = self.provider.get_transaction_by_hash(hash).await? else {
            return Ok(None);
        };
        let hashes = transaction
            .blob_versioned_hashes()
            .map(|hashes| hashes.to_vec())
            .unwrap_or_default();
        Ok(Some((transaction.input().clone(), hashes)))
    }

    /// Whether the node knows a transaction at all (mined or waiting in its pool).
    pub async fn knows_transaction(&self, hash: B256) -> Result<bool, NodeError> {
        Ok(self.provider.get_transaction_by_hash(hash).await?.is_some())
    }

    /// Sends `method` with JSON parameters: for the test and devnet helpers that drive a local
    /// node (`anvil_mine`, `evm_snapshot`...).
    pub async fn raw_request(
        &self,
        method: &'static str,
        params: serde_json::Value,
    ) -> Result<serde_json::Value, NodeError> {
        Ok(self
            .provider
            .raw_request::<_, serde_json::Value>(method.into(), params)
            .await?)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_are_taken_out_of_node_errors() {
        let text =
            "error sending request for url (https://eth.example/v2/SECRET-KEY?x=1); retry http://127.0.0.1:8545/";
        let clean = without_urls(text);
        assert_eq!(clean, "error sending request for url (<node URL>); retry <node URL>");
        assert!(!clean.contains("SECRET"));
        assert_eq!(without_urls("no address here"), "no address here");
    }
}
