//! The vault's events as the node serves them: deposits in a block range, a withdrawal's or a
//! root's event, and the searches over blocks that find them. It decides nothing about them.

use super::*;

/// One `RootCommitted` event of the vault (version 2): where it is, and the totals it carried.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootLog {
    /// The transaction that committed the root.
    pub tx_hash: B256,
    /// Its block.
    pub block_number: u64,
    /// The tokens, sorted.
    pub tokens: Vec<ChainAddress>,
    /// The total of each.
    pub totals: Vec<U256>,
}

/// A `Deposited` event as read from the chain.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DepositLog {
    /// The vault's number of the deposit.
    pub deposit_id: U256,
    /// Who deposited.
    pub account: ChainAddress,
    /// The token (zero for the native asset).
    pub token: ChainAddress,
    /// What the vault received.
    pub amount: U256,
    /// The transaction.
    pub tx_hash: B256,
    /// The event's index in its block.
    pub log_index: u64,
    /// The block.
    pub block_number: u64,
    /// The block's hash.
    pub block_hash: B256,
}

/// A `WithdrawalRequested` event as read from the chain (vault version 2, contract version 5).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestLog {
    /// The vault's number of the request.
    pub request_id: U256,
    /// Who asked.
    pub account: ChainAddress,
    /// The token (zero for the native asset).
    pub token: ChainAddress,
    /// What was asked for.
    pub amount: U256,
    /// By when it must be served, in seconds of chain time.
    pub deadline_s: U256,
    /// The transaction.
    pub tx_hash: B256,
    /// The event's index in its block.
    pub log_index: u64,
    /// The block.
    pub block_number: u64,
    /// The block's hash.
    pub block_hash: B256,
}

impl Node {
    /// The vault's `WithdrawalRequested` events in blocks `from..=to`, in chain order.
    pub async fn request_logs(&self, from: u64, to: u64) -> Result<Vec<RequestLog>, NodeError> {
        let filter = Filter::new()
            .address(self.vault)
            .event_signature(DexdVaultV2::WithdrawalRequested::SIGNATURE_HASH)
            .from_block(from)
            .to_block(to);
        let mut requests = Vec::new();
        for log in self.provider.get_logs(&filter).await? {
            if log.removed {
                continue;
            }
            let unreadable = || NodeError::Unavailable("the node returned a log without its position".into());
            let event = DexdVaultV2::WithdrawalRequested::decode_log(&log.inner)
                .map_err(|error| NodeError::Unavailable(format!("the node returned an unreadable log: {error}")))?;
            requests.push(RequestLog {
                request_id: event.requestId,
                account: event.account,
                token: event.token,
                amount: event.amount,
                deadline_s: event.deadline,
                tx_hash: log.transaction_hash.ok_or_else(unreadable)?,
                log_index: log.log_index.ok_or_else(unreadable)?,
                block_number: log.block_number.ok_or_else(unreadable)?,
                block_hash: log.block_hash.ok_or_else(unreadable)?,
            });
        }
        requests.sort_by_key(|request| (request.block_number, request.log_index));
        Ok(requests)
    }

    /// The vault's `RequestServed` event of a request in blocks `from..=to`: its transaction and
    /// block. The caller keeps the range within `max_log_range_blocks`.
    pub async fn request_served_event(
        &self,
        request_id: u64,
        from: u64,
        to: u64,
    ) -> Result<Option<(B256, u64)>, NodeError> {
        let filter = Filter::new()
            .address(self.vault)
            .event_signature(DexdVaultV2::RequestServed::SIGNATURE_HASH)
            .topic1(B256::from(U256::from(request_id)))
            .from_block(from)
            .to_block(to);
        self.first_log_position(&filter).await
    }

    /// The vault's `Deposited` events in blocks `from..=to`, in chain order.
    pub async fn deposit_logs(&self, from: u64, to: u64) -> Result<Vec<DepositLog>, NodeError> {
        let filter = Filter::new()
            .address(self.vault)
            .event_signature(DexdVault::Deposited::SIGNATURE_HASH)
            .from_block(from)
            .to_block(to);
        let mut deposits = Vec::new();
        for log in self.provider.get_logs(&filter).await? {
            let unreadable = || NodeError::Unavailable("the node returned a log without its position".into());
            let event = DexdVault::Deposited::decode_log(&log.inner)
                .map_err(|error| NodeError::Unavailable(format!("the node returned an unreadable log: {error}")))?;
            if log.removed {
                continue;
            }
            deposits.push(DepositLog {
                deposit_id: event.depositId,
                account: event.account,
                token: event.token,
                amount: event.amount,
                tx_hash: log.transaction_hash.ok_or_else(unreadable)?,
                log_index: log.log_index.ok_or_else(unreadable)?,
                block_number: log.block_number.ok_or_else(unreadable)?,
                block_hash: log.block_hash.ok_or_else(unreadable)?,
            });
        }
        deposits.sort_by_key(|deposit| (deposit.block_number, deposit.log_index));
        Ok(deposits)
    }

    /// The vault's `Withdrawn` event of an account's withdrawal id in blocks `from..=to`: its
    /// transaction and block. Providers cap the range a log query may span: the caller keeps it
    /// within the configured `max_log_range_blocks`.
    pub async fn withdrawn_event(
        &self,
        account: ChainAddress,
        withdrawal_id: U256,
        from: u64,
        to: u64,
    ) -> Result<Option<(B256, u64)>, NodeError> {
        let filter = self
            .withdrawn_filter(from, to)
            .topic1(B256::from(withdrawal_id))
            .topic2(account.into_word());
        self.first_log_position(&filter).await
    }

    /// The `RootCommitted` event of a liability root's epoch (vault version 2) in blocks
    /// `from..=to`, with its tokens and totals. The caller keeps the range within
    /// `max_log_range_blocks`.
    pub async fn root_committed_event(&self, epoch: U256, from: u64, to: u64) -> Result<Option<RootLog>, NodeError> {
        let filter = Filter::new()
            .address(self.vault)
            .event_signature(DexdVaultV2::RootCommitted::SIGNATURE_HASH)
            .topic1(B256::from(epoch))
            .from_block(from)
            .to_block(to);
        for log in self.provider.get_logs(&filter).await? {
            if log.removed {
                continue;
            }
            let event = DexdVaultV2::RootCommitted::decode_log(&log.inner)
                .map_err(|error| NodeError::Unavailable(format!("the node returned an unreadable log: {error}")))?;
            let (Some(tx_hash), Some(block_number)) = (log.transaction_hash, log.block_number) else {
                continue;
            };
            return Ok(Some(RootLog {
                tx_hash,
                block_number,
                tokens: event.tokens.clone(),
                totals: event.totals.clone(),
            }));
        }
        Ok(None)
    }

    /// The `RootCommitted` event of `epoch`, committed at block time `committed_at_s`: found in
    /// the blocks of that second (block times only grow, so a binary search over the blocks
    /// from `start_block` to `head` finds them, however old the root is), read in ranges of at
    /// most `max_range_blocks` (halved when the node refuses one).
    pub async fn find_root_committed_event(
        &self,
        epoch: u64,
        committed_at_s: u64,
        (start_block, head): (u64, u64),
        max_range_blocks: u64,
    ) -> Result<Option<RootLog>, NodeError> {
        let first = self.first_block_at_or_after(committed_at_s, start_block, head).await?;
        let after = self
            .first_block_at_or_after(committed_at_s.saturating_add(1), start_block, head)
            .await?;
        let last = after.saturating_sub(1).max(first).min(head);
        let mut range_blocks = max_range_blocks.max(1);
        let mut from = first;
        while from <= last {
            let to = last.min(from.saturating_add(range_blocks - 1));
            match self.root_committed_event(U256::from(epoch), from, to).await {
                Ok(Some(found)) => return Ok(Some(found)),
                Ok(None) => from = to + 1,
                Err(NodeError::Refused(_)) if to > from => range_blocks = (to - from + 1).div_ceil(2),
                Err(error) => return Err(error),
            }
        }
        Ok(None)
    }

    /// The first block from `start_block` whose time is at or after `time_s` (the block after
    /// `head` when there is none).
    pub async fn first_block_at_or_after(&self, time_s: u64, start_block: u64, head: u64) -> Result<u64, NodeError> {
        let (mut low, mut high) = (start_block, head.saturating_add(1));
        while low < high {
            let middle = low + (high - low) / 2;
            let Some((_, block_time_s)) = self.block(middle).await? else {
                return Err(NodeError::Unavailable(format!("the node has no block {middle}")));
            };
            if block_time_s < time_s {
                low = middle + 1;
            } else {
                high = middle;
            }
        }
        Ok(low)
    }

    /// The first of the vault's `Withdrawn` events, of any account, in blocks `from..=to`: its
    /// transaction and block. The caller keeps the range within `max_log_range_blocks`.
    pub async fn first_withdrawn_event(&self, from: u64, to: u64) -> Result<Option<(B256, u64)>, NodeError> {
        self.first_log_position(&self.withdrawn_filter(from, to)).await
    }

    fn withdrawn_filter(&self, from: u64, to: u64) -> Filter {
        Filter::new()
            .address(self.vault)
            .event_signature(DexdVault::Withdrawn::SIGNATURE_HASH)
            .from_block(from)
            .to_block(to)
    }

    /// The transaction and block of the first log `filter` finds that was not removed.
    async fn first_log_position(&self, filter: &Filter) -> Result<Option<(B256, u64)>, NodeError> {
        let logs = self.provider.get_logs(filter).await?;
        Ok(logs
            .iter()
            .filter(|log| !log.removed)
            .find_map(|log| Some((log.transaction_hash?, log.block_number?))))
    }
}
