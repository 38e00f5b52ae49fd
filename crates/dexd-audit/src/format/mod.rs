//! The public journal's format, version 2 (`X-Dexd-Journal-Format: 2`): one JSON object per line,
//! a command line for every journaled command and a state hash line after every position that
//! is a multiple of [`STATE_HASH_INTERVAL`]. `docs/audit.md` describes it for whoever writes an
//! auditor in another language.
//!
//! A command line is `{"sequence", "time", "command", "encoded", "authorization"}`: the command
//! in the wire's words (symbols, decimal amounts, checksummed addresses), its exact journal bytes
//! (`encoded`, the codec's, which dexd's own auditor decodes and renders again to check that the
//! two say the same), and what authorizes it: the EIP-712 message an account signed with its
//! signature, the vault's deposit event, or `system` for what no account asks (chain facts, the
//! venue's timer, the configuration).
//!
//! This module renders lines and, in `parse`, reads them back; it reads no journal and checks
//! no signature.

use dexd_core::{
    Address, AgentGrant, ChainConfiguration, ChainDeposit, Command, CustodyMode, LiabilityRootRecord, NewOrder,
    RootOrigin, RootStanding, SwitchSetting, TransferRequest, WithdrawalKey,
};
use dexd_crypto::{checksummed, hex_prefixed, RequestMessages};
use dexd_store::codec::encode_command;
use dexd_store::{Authorization, BatchPlace};
use serde_json::{json, Map, Value};

mod parse;

pub use self::parse::parse_line;

/// The format's version, sent in [`JOURNAL_FORMAT_HEADER`].
pub const JOURNAL_FORMAT_VERSION: u32 = 2;
/// The header carrying the format's version.
pub const JOURNAL_FORMAT_HEADER: &str = "x-dexd-journal-format";
/// The header carrying the journal's end (its last position) when the page was read.
pub const JOURNAL_END_HEADER: &str = "x-dexd-journal-end";
/// A state hash line follows every position that is a multiple of this: the venue's interval.
pub use dexd_venue::state_hashes::STATE_HASH_INTERVAL;
/// The most command lines one page holds (and its default).
pub const MAX_JOURNAL_PAGE_COMMANDS: usize = 10_000;
/// The most bytes one page, or one segment, has: a reader gives up on a larger one.
pub const MAX_JOURNAL_PAGE_BYTES: usize = 16 * 1024 * 1024;

/// Renders a command in the wire's words. `messages` names the pairs and assets (a journal's
/// indexes only grow, so the current configuration names every earlier command's).
pub fn render_command(command: &Command, messages: &RequestMessages) -> Value {
    let pair_symbol = |pair: dexd_core::PairIndex| messages.pair_symbol(pair).to_string();
    match command {
        Command::PlaceOrder(order) => {
            let mut object = order_fields(order, messages);
            object.insert("type".into(), json!("placeOrder"));
            Value::Object(object)
        }
        Command::CancelOrder {
            account,
            order_id,
            pair,
        } => json!({
            "type": "cancelOrder",
            "account": checksummed(account),
            "orderId": order_id.to_string(),
            "symbol": pair.map(pair_symbol),
        }),
        Command::Deposit(request) => transfer("deposit", request, messages),
        Command::Withdraw(request) => transfer("withdraw", request, messages),
        Command::SubmitChainDeposit(submission) => json!({
            "type": "submitChainDeposit",
            "txHash": hex_prefixed(&submission.tx_hash),
            "account": checksummed(&submission.account),
            "symbol": messages.asset_symbol(submission.asset),
            "amount": messages.asset_amount(submission.asset, submission.amount.units()),
        }),
        Command::CreditChainDeposit(deposit) => credit(deposit, messages),
        Command::FailChainDeposit { tx_hash } => json!({"type": "failChainDeposit", "txHash": hex_prefixed(tx_hash)}),
        Command::RecordDepositScan {
            block_number,
            block_hash,
        } => json!({
            "type": "recordDepositScan",
            "blockNumber": block_number,
            "blockHash": hex_prefixed(block_hash),
        }),
        Command::RequestWithdrawal(withdrawal) => {
            let request = &withdrawal.request;
            json!({
                "type": "requestWithdrawal",
                "withdrawalId": hex_prefixed(&request.transfer_id),
                "account": checksummed(&request.account),
                "symbol": messages.asset_symbol(request.asset),
                "amount": messages.asset_amount(request.asset, request.amount.units()),
                "expiry": withdrawal.expiry_ms,
                "signature": hex_prefixed(&withdrawal.signature),
            })
        }
        Command::MarkWithdrawalsSent { tx_hash, withdrawals } => json!({
            "type": "markWithdrawalsSent",
            "txHash": hex_prefixed(tx_hash),
            "withdrawals": withdrawal_keys(withdrawals),
        }),
        Command::ConfirmWithdrawals {
            tx_hash,
            block_number,
            withdrawals,
        } => json!({
            "type": "confirmWithdrawals",
            "txHash": hex_prefixed(tx_hash),
            "blockNumber": block_number,
            "withdrawals": withdrawal_keys(withdrawals),
        }),
        Command::MarkWithdrawalsUnpaid { tx_hash, withdrawals } => json!({
            "type": "markWithdrawalsUnpaid",
            "txHash": hex_prefixed(tx_hash),
            "withdrawals": withdrawal_keys(withdrawals),
        }),
        Command::RecordWithdrawalRequest(request) => json!({
            "type": "recordWithdrawalRequest",
            "requestId": request.request_id,
            "account": checksummed(&request.account),
            "token": checksummed(&request.token),
            "symbol": request.asset.map(|asset| messages.asset_symbol(asset).to_string()),
            "units": request.amount.units().to_string(),
            "deadline": request.deadline_ms,
            "txHash": hex_prefixed(&request.tx_hash),
            "logIndex": request.log_index,
            "blockNumber": request.block_number,
            "blockHash": hex_prefixed(&request.block_hash),
        }),
        Command::FailWithdrawal(key) => json!({
            "type": "failWithdrawal",
            "account": checksummed(&key.account),
            "withdrawalId": hex_prefixed(&key.withdrawal_id),
        }),
        Command::RecordLiabilityRoot(record) => root(record, messages),
        Command::SettleLiabilityRoot { epoch, standing } => json!({
            "type": "settleLiabilityRoot",
            "epoch": epoch,
            "standing": match standing {
                RootStanding::Challengeable => "challengeable",
                RootStanding::Vetoed => "vetoed",
                RootStanding::Final => "final",
            },
        }),
        Command::RecordVaultFreeze(freeze) => json!({"type": "recordVaultFreeze", "exitEpoch": freeze.exit_epoch}),
        Command::CancelAll { account, pair } => json!({
            "type": "cancelAll",
            "account": checksummed(account),
            "symbol": pair.map(pair_symbol),
        }),
        Command::AmendOrder(amend) => {
            let spec = messages.pair_spec(amend.replacement.pair);
            json!({
                "type": "amendOrder",
                "account": checksummed(&amend.account),
                "orderId": amend.order_id.to_string(),
                "replacement": Value::Object(order_fields(&amend.replacement, messages)),
                "amountFromRemaining": amend.amount_from_remaining.map(|quantity| {
                    messages.asset_amount(spec.base(), spec.base_amount(quantity).units())
                }),
                "keepsPrice": amend.keeps_price,
            })
        }
        Command::SetCancelAllAfter { account, setting } => {
            let (timeout_ms, trigger_at_ms) = match setting {
                SwitchSetting::Off => (Some(0), None),
                SwitchSetting::AfterMs(timeout_ms) => (Some(*timeout_ms), None),
                SwitchSetting::AtMs(trigger_at_ms) => (None, Some(*trigger_at_ms)),
            };
            json!({
                "type": "setCancelAllAfter",
                "account": checksummed(account),
                "timeoutMs": timeout_ms,
                "triggerAt": trigger_at_ms,
            })
        }
        Command::ExpireOrder { order_id } => json!({"type": "expireOrder", "orderId": order_id.to_string()}),
        Command::FireCancelAllAfter { account, trigger_at_ms } => json!({
            "type": "fireCancelAllAfter",
            "account": checksummed(account),
            "triggerAt": trigger_at_ms,
        }),
        Command::ApproveAgent { account, grant } => approval(account, grant),
        Command::RevokeAgent { account, agent } => json!({
            "type": "revokeAgent",
            "account": checksummed(account),
            "agent": checksummed(agent),
        }),
        Command::ByAgent { agent, command } => json!({
            "type": "byAgent",
            "agent": checksummed(agent),
            "command": render_command(command, messages),
        }),
        Command::TransferBetweenSubaccounts(request) => json!({
            "type": "transferBetweenSubaccounts",
            "account": checksummed(&request.owner),
            "fromSubaccount": request.from_number,
            "toSubaccount": request.to_number,
            "symbol": messages.asset_symbol(request.asset),
            "quantity": messages.asset_amount(request.asset, request.amount.units()),
            "clientTransferId": request.client_transfer_id,
        }),
        Command::StartTwap(terms) => {
            let spec = messages.pair_spec(terms.pair);
            json!({
                "type": "startTwap",
                "account": checksummed(&terms.account),
                "symbol": pair_symbol(terms.pair),
                "direction": terms.direction.wire_name(),
                "amount": messages.asset_amount(spec.base(), spec.base_amount(terms.quantity).units()),
                "durationMs": terms.duration_ms,
                "intervalMs": terms.interval_ms,
                "limitPrice": terms.limit_price.map(|price| spec.format_price(price)),
                "clientTwapId": terms.client_twap_id,
            })
        }
        Command::CancelTwap { account, twap_id } => json!({
            "type": "cancelTwap",
            "account": checksummed(account),
            "twapId": twap_id.to_string(),
        }),
        Command::RunTwapSlice { twap_id, slice } => json!({
            "type": "runTwapSlice",
            "twapId": twap_id.to_string(),
            "slice": slice,
        }),
        Command::FireMetTriggers { pair } => json!({
            "type": "fireMetTriggers",
            "symbol": pair_symbol(*pair),
        }),
        Command::SetPairHalted { pair, halted } => json!({
            "type": "setPairHalted",
            "symbol": pair_symbol(*pair),
            "halted": halted,
        }),
        Command::Configure(configuration) => render_configuration(configuration),
    }
}

fn order_fields(order: &NewOrder, messages: &RequestMessages) -> Map<String, Value> {
    let message = messages.order(order, [0; 32], 0);
    let fields = json!({
        "orderId": order.order_id.to_string(),
        "clientOrderId": order.client_order_id,
        "account": checksummed(&order.account),
        "symbol": message.symbol,
        "orderType": message.order_type,
        "direction": message.direction,
        "timeInForce": message.time_in_force,
        "postOnly": order.post_only,
        "price": order.price.map(|_| message.price.clone()),
        "amount": message.amount,
    });
    let Value::Object(mut fields) = fields else {
        unreachable!("an object")
    };
    // An order journaled before the conditions existed renders as it did then.
    if !message.without_conditions {
        let or_null = |text: &str| (!text.is_empty()).then(|| text.to_string());
        fields.insert("triggerPrice".into(), json!(or_null(&message.trigger_price)));
        fields.insert("triggerCondition".into(), json!(or_null(&message.trigger_condition)));
        fields.insert("ocoGroup".into(), json!(or_null(&message.oco_group)));
        fields.insert("expiresAt".into(), json!(order.conditions().expires_at_ms));
    }
    fields
}

fn transfer(kind: &str, request: &TransferRequest, messages: &RequestMessages) -> Value {
    json!({
        "type": kind,
        "transferId": hex_prefixed(&request.transfer_id),
        "account": checksummed(&request.account),
        "symbol": messages.asset_symbol(request.asset),
        "amount": messages.asset_amount(request.asset, request.amount.units()),
    })
}

fn credit(deposit: &ChainDeposit, messages: &RequestMessages) -> Value {
    json!({
        "type": "creditChainDeposit",
        "depositId": deposit.deposit_id,
        "account": checksummed(&deposit.account),
        "token": checksummed(&deposit.token),
        "symbol": deposit.asset.map(|asset| messages.asset_symbol(asset).to_string()),
        "units": deposit.amount.map(|amount| amount.units().to_string()),
        "txHash": hex_prefixed(&deposit.tx_hash),
        "logIndex": deposit.log_index,
        "blockNumber": deposit.block_number,
        "blockHash": hex_prefixed(&deposit.block_hash),
    })
}

fn withdrawal_keys(keys: &[WithdrawalKey]) -> Value {
    Value::Array(
        keys.iter()
            .map(|key| json!({"account": checksummed(&key.account), "withdrawalId": hex_prefixed(&key.withdrawal_id)}))
            .collect(),
    )
}

fn root(record: &LiabilityRootRecord, messages: &RequestMessages) -> Value {
    json!({
        "type": "recordLiabilityRoot",
        "epoch": record.epoch,
        "root": hex_prefixed(&record.root),
        "journalSequence": record.journal_sequence,
        "depositCount": record.deposit_count,
        "txHash": hex_prefixed(&record.tx_hash),
        "blockNumber": record.block_number,
        "committedAt": record.committed_at_ms,
        "finalAfter": record.final_after_ms,
        "origin": match record.origin {
            RootOrigin::Venue => "venue",
            RootOrigin::Foreign => "foreign",
        },
        "totals": record
            .totals
            .iter()
            .enumerate()
            .map(|(index, total)| json!({
                "symbol": messages.asset_symbol(dexd_core::AssetIndex(index as u16)),
                "units": total.units().to_string(),
            }))
            .collect::<Vec<_>>(),
    })
}

fn approval(account: &Address, grant: &AgentGrant) -> Value {
    json!({
        "type": "approveAgent",
        "account": checksummed(account),
        "agent": checksummed(&grant.agent),
        "name": grant.name,
        "validUntil": grant.valid_until_ms,
        "approvedAt": grant.approved_at_ms,
    })
}

/// A configuration in the wire's words.
pub fn render_configuration(configuration: &ChainConfiguration) -> Value {
    let ChainConfiguration { description, engine } = configuration;
    let limits = engine.limits;
    let mut rendered = json!({
        "type": "configure",
        "chainId": description.chain_id.to_string(),
        "venueContract": checksummed(&description.venue_contract),
        "custody": match engine.custody {
            CustodyMode::Ledger => "ledger",
            CustodyMode::Vault => "vault",
        },
        "feeAccount": checksummed(&engine.fee_account),
        "limits": {
            "maxOpenOrdersPerAccount": limits.max_open_orders_per_account,
            "maxRestingOrders": limits.max_resting_orders,
            "maxAccounts": limits.max_accounts,
            "maxLiveNonces": limits.max_live_nonces,
            "maxLiveNoncesPerAccount": limits.max_live_nonces_per_account,
            "maxPendingTransfers": limits.max_pending_transfers,
            "feeNoticeMs": limits.fee_notice_ms,
            "venueSignedWindowMs": limits.venue_signed_window_ms,
        },
        "assets": description.assets.iter().zip(&engine.assets).map(|(asset, spec)| json!({
            "symbol": asset.symbol,
            "token": asset.token.as_ref().map(checksummed),
            "decimals": spec.decimals,
        })).collect::<Vec<_>>(),
        "pairs": engine.pairs.iter().enumerate().map(|(index, pair)| json!({
            "symbol": configuration.pair_symbol(index),
            "tickSize": pair.tick_size.to_string(),
            "stepSize": pair.step_size.to_string(),
            "minAmount": pair.min_amount.to_string(),
            "minNotional": pair.min_notional.to_string(),
            "makerFeePpm": pair.maker_fee.parts_per_million(),
            "takerFeePpm": pair.taker_fee.parts_per_million(),
            "feeRaise": pair.fee_raise.map(|raise| json!({
                "makerFeePpm": raise.maker_fee.parts_per_million(),
                "takerFeePpm": raise.taker_fee.parts_per_million(),
                "effectiveAt": raise.effective_at_ms,
            })),
        })).collect::<Vec<_>>(),
    });
    // The matching rules only when the configuration has some, so that a line of a journal
    // written before them renders as it did.
    if limits.rules != 0 {
        rendered["limits"]["rules"] = json!(limits.rules);
    }
    rendered
}

/// An account's (or its agent's) EIP-712 signature of a command, as its line gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedLine {
    /// The message's primary type.
    pub primary_type: String,
    /// Who must have signed.
    pub signer: Address,
    /// The signed message, as the line's text has it (compared byte for byte with the
    /// message the command makes, as the venue renders it).
    pub message: Box<str>,
    /// The nonce and expiry the engine's claim uses (for a vault withdrawal, its id and
    /// expiry).
    pub nonce: [u8; 32],
    /// In ms since the epoch.
    pub expiry_ms: u64,
    /// The 65-byte signature.
    pub signature: [u8; 65],
    /// Whether the client signed (its nonce is claimed), or the venue with the account's key.
    pub client_signed: bool,
    /// For an order of a batch signed once (primary type `OrderBatch`, the message being the
    /// order's own): its place in the batch, and whether its command claims the batch's
    /// nonce (`batch` in the line: `{"index", "orderHashes", "claimsNonce"}`).
    pub batch: Option<(BatchPlace, bool)>,
    /// For a withdrawal a contract account approved (ERC-1271): the block the venue asked
    /// the vault at (`approvedAtBlock`), where the auditor asks too.
    pub approved_at_block: Option<u64>,
}

/// What authorizes a command, as its line says (`authorization.kind`).
// Most lines are signed (the large variant); boxing it would add an allocation to nearly every
// line for the few that are not.
#[allow(clippy::large_enum_variant)]
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LineAuthorization {
    /// An account's (or its agent's) EIP-712 signature.
    Eip712(SignedLine),
    /// The vault's `Deposited` event a credit records.
    VaultDeposit,
    /// A deposit transaction the venue sent with the account's key.
    AccountTransaction,
    /// Nobody's: the chain's facts, the venue's timer, the configuration.
    System,
    /// An account's command journaled without its signature (before the format was published):
    /// it cannot be checked.
    Unsigned,
}

/// The authorization of a journaled command as its line carries it.
pub fn render_authorization(
    command: &Command,
    authorization: Option<&Authorization>,
    messages: &RequestMessages,
) -> Value {
    render_authorization_with(command, authorization, messages, true)
}

/// [`render_authorization`], with a batch's order hashes left out when `with_order_hashes` is
/// false (a page gives them once, on the first line of the batch: `page::PageWriter`).
fn render_authorization_with(
    command: &Command,
    authorization: Option<&Authorization>,
    messages: &RequestMessages,
    with_order_hashes: bool,
) -> Value {
    match command {
        Command::CreditChainDeposit(deposit) => {
            return json!({
                "kind": "vaultDeposit",
                "depositId": deposit.deposit_id,
                "txHash": hex_prefixed(&deposit.tx_hash),
                "logIndex": deposit.log_index,
                "blockNumber": deposit.block_number,
            })
        }
        Command::SubmitChainDeposit(submission) => {
            return json!({"kind": "accountTransaction", "txHash": hex_prefixed(&submission.tx_hash)})
        }
        _ => {}
    }
    if command.account().is_none() {
        return json!({"kind": "system"});
    }
    // A vault withdrawal carries its signature in the command; any other account command in
    // its authorization.
    let (nonce, expiry_ms, signature, client_signed) = match (command, authorization) {
        (Command::RequestWithdrawal(withdrawal), authorization) => (
            withdrawal.request.transfer_id,
            withdrawal.expiry_ms,
            withdrawal.signature,
            authorization.is_some_and(|authorization| authorization.client_signed),
        ),
        (_, Some(authorization)) => (
            authorization.nonce,
            authorization.expiry_ms,
            authorization.signature,
            authorization.client_signed,
        ),
        (_, None) => return json!({"kind": "unsigned"}),
    };
    let Some(signed) = messages.signed_command(command, client_signed, (nonce, expiry_ms)) else {
        return json!({"kind": "unsigned"});
    };
    let mut line = json!({
        "kind": "eip712",
        "primaryType": signed.message.primary_type(),
        "signer": checksummed(&signed.signer),
        "message": signed.message.message_json(),
        "nonce": hex_prefixed(&nonce),
        "expiry": expiry_ms,
        "signature": hex_prefixed(&signature),
        "clientSigned": client_signed,
    });
    if let Some(block) = authorization.and_then(|authorization| authorization.approved_at_block) {
        line["approvedAtBlock"] = json!(block);
    }
    if let Some((authorization, batch)) =
        authorization.and_then(|authorization| Some((authorization, authorization.batch.as_ref()?)))
    {
        line["primaryType"] = json!(dexd_crypto::ORDER_BATCH_TYPE.name);
        line["batch"] = json!({
            "index": batch.index,
            "claimsNonce": authorization.claims_batch_nonce,
        });
        if with_order_hashes {
            line["batch"]["orderHashes"] = dexd_crypto::order_batch::order_hashes_json(&batch.order_hashes);
        }
    }
    line
}

/// A command's line.
pub fn command_line(
    sequence: u64,
    time_ms: u64,
    command: &Command,
    authorization: Option<&Authorization>,
    messages: &RequestMessages,
) -> Value {
    command_line_with((sequence, time_ms), command, authorization, messages, true)
}

/// [`command_line`], with a batch's order hashes left out when `with_order_hashes` is false
/// (what `page::PageWriter` does for every line of a batch after its first in a page).
pub(crate) fn command_line_with(
    (sequence, time_ms): (u64, u64),
    command: &Command,
    authorization: Option<&Authorization>,
    messages: &RequestMessages,
    with_order_hashes: bool,
) -> Value {
    json!({
        "sequence": sequence,
        "time": time_ms,
        "command": render_command(command, messages),
        "encoded": hex_prefixed(&encode_command(command)),
        "authorization": render_authorization_with(command, authorization, messages, with_order_hashes),
    })
}

/// A state hash line: the engine's state hash after `sequence`.
pub fn state_hash_line(sequence: u64, state_hash: &[u8; 32]) -> Value {
    json!({"sequence": sequence, "stateHash": hex_prefixed(state_hash)})
}

/// One line of the journal, parsed.
#[derive(Debug, Clone)]
pub enum JournalLine {
    /// A command.
    Command(Box<CommandLine>),
    /// The state hash after a position.
    StateHash {
        /// The position.
        sequence: u64,
        /// The hash.
        state_hash: [u8; 32],
    },
}

/// A command line, parsed: the command decoded from its bytes.
#[derive(Debug, Clone)]
pub struct CommandLine {
    /// Its journal position.
    pub sequence: u64,
    /// The time the engine ran it at.
    pub time_ms: u64,
    /// The command, decoded from `encoded`.
    pub command: Command,
    /// The command as the line's text has it (compared byte for byte with the decoded
    /// command's rendering: the venue writes each line as `serde_json` writes its value).
    pub command_text: Box<str>,
    /// What authorizes it.
    pub authorization: LineAuthorization,
}

impl CommandLine {
    /// The authorization the journal holds for it (what a copy of the journal stores and its
    /// replay claims a nonce from).
    pub fn journal_authorization(&self) -> Option<Authorization> {
        let LineAuthorization::Eip712(signed) = &self.authorization else {
            return None;
        };
        let order_id = match &self.command {
            Command::PlaceOrder(order) => Some(order.order_id),
            Command::AmendOrder(amend) => Some(amend.replacement.order_id),
            Command::ByAgent { command, .. } => match command.as_ref() {
                Command::PlaceOrder(order) => Some(order.order_id),
                Command::AmendOrder(amend) => Some(amend.replacement.order_id),
                _ => None,
            },
            _ => None,
        };
        Some(Authorization {
            order_id,
            nonce: signed.nonce,
            expiry_ms: signed.expiry_ms,
            signature: signed.signature,
            client_signed: signed.client_signed,
            batch: signed.batch.as_ref().map(|(place, _)| place.clone()),
            claims_batch_nonce: signed.batch.as_ref().is_some_and(|(_, claims)| *claims),
            approved_at_block: signed.approved_at_block,
        })
    }
}
