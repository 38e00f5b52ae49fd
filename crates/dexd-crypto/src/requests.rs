//! The one home of the messages accounts sign: for each request (an order, a cancel, an amend,
//! a transfer, a vault withdrawal, cancel all, the switch, an agent's approval or revocation)
//! the EIP-712 message, built from the engine's command and the chain's configuration.
//!
//! The handlers build what a request asks for as a command and sign (or check) the message
//! this module makes of it; an auditor rebuilds the same message from the journaled command and
//! checks the journaled signature against it. So what was signed and what was applied cannot
//! differ: both are the command. Chain facts are signed by nobody; this module has no message
//! for them. It holds no key and checks no signature.

use dexd_core::decimal::format_scaled_units;
use dexd_core::{
    AgentGrant, AssetIndex, ChainConfiguration, Command, NewOrder, NewTwap, OrderId, PairIndex, PairSpec,
    PairSpecError, SubaccountTransferRequest, SwitchSetting, TransferKind, VaultWithdrawal,
};
use serde_json::Value;

use crate::eip712::{
    FieldValue, OrderMessage, SigningDomain, TypedMessage, AMEND_ORDER_TYPE, APPROVE_AGENT_TYPE, CANCEL_ALL_AFTER_TYPE,
    CANCEL_ALL_TYPE, CANCEL_ORDER_TYPE, CANCEL_TWAP_TYPE, DEPOSIT_TYPE, REVOKE_AGENT_TYPE, SUBACCOUNT_TRANSFER_TYPE,
    TWAP_TYPE, WITHDRAWAL_TYPE, WITHDRAW_TYPE,
};
use dexd_core::Address;

/// The signed messages of one chain: its domain and the names and units of its assets and
/// pairs.
#[derive(Debug, Clone)]
pub struct RequestMessages {
    domain: SigningDomain,
    /// Each asset's symbol and decimals.
    assets: Vec<(String, u32)>,
    /// Each asset's token (`None`: the native asset).
    tokens: Vec<Option<Address>>,
    /// Each pair's symbol and rules.
    pairs: Vec<(String, PairSpec)>,
}

/// A message an account signed: an order (whose digest is encoded in place, on the busiest
/// path) or any other request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SignedMessage {
    /// An order (boxed: with its conditions it is several times the size of the other).
    Order(Box<OrderMessage>),
    /// Any other request.
    Other(TypedMessage),
}

impl SignedMessage {
    /// Its EIP-712 digest under `domain`.
    pub fn digest(&self, domain: &SigningDomain) -> [u8; 32] {
        match self {
            SignedMessage::Order(order) => domain.order_digest(order),
            SignedMessage::Other(message) => domain.digest(message),
        }
    }

    /// The typed message.
    pub fn typed(&self) -> TypedMessage {
        match self {
            SignedMessage::Order(order) => order.typed(),
            SignedMessage::Other(message) => message.clone(),
        }
    }

    /// Its primary type's name (`Order`, `CancelOrder`, ...).
    pub fn primary_type(&self) -> &'static str {
        match self {
            SignedMessage::Order(_) => crate::eip712::ORDER_TYPE.name,
            SignedMessage::Other(message) => message.struct_type.name,
        }
    }

    /// Its fields as the JSON of typed data's `message`.
    pub fn message_json(&self) -> Value {
        self.typed().message_json()
    }
}

/// What a journaled command's signer signed, and what the signature must show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SignedCommand {
    /// The message.
    pub message: SignedMessage,
    /// Who must have signed it: the account, or the agent acting for it.
    pub signer: Address,
    /// The order id the digest must be (a placement's, an amend's replacement), if any.
    pub digest_is_order_id: Option<OrderId>,
}

impl RequestMessages {
    /// The messages of a chain configured as `configuration`.
    pub fn new(configuration: &ChainConfiguration) -> Result<RequestMessages, PairSpecError> {
        let description = &configuration.description;
        let assets = description
            .assets
            .iter()
            .zip(&configuration.engine.assets)
            .map(|(asset, spec)| (asset.symbol.clone(), spec.decimals))
            .collect();
        let tokens = description.assets.iter().map(|asset| asset.token).collect();
        let pairs = configuration
            .engine
            .pairs
            .iter()
            .enumerate()
            .map(|(index, definition)| {
                Ok((
                    configuration.pair_symbol(index),
                    PairSpec::new(definition, &configuration.engine.assets)?,
                ))
            })
            .collect::<Result<_, PairSpecError>>()?;
        Ok(RequestMessages {
            domain: SigningDomain::new(description.chain_id, description.venue_contract),
            assets,
            tokens,
            pairs,
        })
    }

    /// The chain's EIP-712 domain.
    pub fn domain(&self) -> &SigningDomain {
        &self.domain
    }

    /// A pair's `BASE/QUOTE` symbol.
    pub fn pair_symbol(&self, pair: PairIndex) -> &str {
        &self.pairs[usize::from(pair.0)].0
    }

    /// A pair's rules.
    pub fn pair_spec(&self, pair: PairIndex) -> &PairSpec {
        &self.pairs[usize::from(pair.0)].1
    }

    /// An asset's symbol.
    pub fn asset_symbol(&self, asset: AssetIndex) -> &str {
        &self.assets[usize::from(asset.0)].0
    }

    /// An amount of an asset in its smallest units, as the canonical decimal of the wire.
    pub fn asset_amount(&self, asset: AssetIndex, units: u128) -> String {
        format_scaled_units(units, self.assets[usize::from(asset.0)].1)
    }

    /// Whether the chain has this pair (a command of a journal names it by index).
    fn has_pair(&self, pair: PairIndex) -> bool {
        usize::from(pair.0) < self.pairs.len()
    }

    fn has_asset(&self, asset: AssetIndex) -> bool {
        usize::from(asset.0) < self.assets.len()
    }

    /// The `Order` an order's account signs (the venue signs the same for a `privateKey`).
    pub fn order(&self, order: &NewOrder, nonce: [u8; 32], expiry_ms: u64) -> OrderMessage {
        let (symbol, spec) = &self.pairs[usize::from(order.pair.0)];
        let conditions = order.conditions();
        OrderMessage {
            account: order.account,
            symbol: symbol.clone(),
            order_type: order.order_type.wire_name().to_string(),
            direction: order.direction.wire_name().to_string(),
            time_in_force: order.time_in_force.wire_name().to_string(),
            post_only: order.post_only,
            price: order.price.map(|price| spec.format_price(price)).unwrap_or_default(),
            amount: self.asset_amount(spec.base(), spec.base_amount(order.quantity).units()),
            client_order_id: order.client_order_id.clone().unwrap_or_default(),
            nonce,
            expiry_ms,
            trigger_price: conditions
                .trigger
                .map(|trigger| spec.format_price(trigger.price))
                .unwrap_or_default(),
            trigger_condition: conditions
                .trigger
                .map(|trigger| trigger.condition.wire_name().to_string())
                .unwrap_or_default(),
            oco_group: conditions.oco_group.clone().unwrap_or_default(),
            expires_at_ms: conditions.expires_at_ms.unwrap_or(0),
            without_conditions: conditions.signed_without_conditions,
        }
    }

    /// `CancelOrder(account, symbol, orderId, nonce, expiry)`.
    pub fn cancel(
        &self,
        account: &Address,
        pair: PairIndex,
        order_id: &OrderId,
        signed: ([u8; 32], u64),
    ) -> TypedMessage {
        TypedMessage {
            struct_type: &CANCEL_ORDER_TYPE,
            values: vec![
                FieldValue::Address(*account),
                FieldValue::Text(self.pair_symbol(pair).to_string()),
                FieldValue::Bytes32(*order_id.as_bytes()),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// `Deposit` or `Withdraw(account, symbol, quantity, nonce, expiry)` (ledger custody).
    pub fn transfer(
        &self,
        kind: TransferKind,
        account: &Address,
        asset: AssetIndex,
        units: u128,
        signed: ([u8; 32], u64),
    ) -> TypedMessage {
        TypedMessage {
            struct_type: match kind {
                TransferKind::Deposit => &DEPOSIT_TYPE,
                TransferKind::Withdrawal => &WITHDRAW_TYPE,
            },
            values: vec![
                FieldValue::Address(*account),
                FieldValue::Text(self.asset_symbol(asset).to_string()),
                FieldValue::Text(self.asset_amount(asset, units)),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// `CancelAll(account, symbol, nonce, expiry)`, `symbol` `""` for every pair.
    pub fn cancel_all(&self, account: &Address, pair: Option<PairIndex>, signed: ([u8; 32], u64)) -> TypedMessage {
        TypedMessage {
            struct_type: &CANCEL_ALL_TYPE,
            values: vec![
                FieldValue::Address(*account),
                FieldValue::Text(pair.map(|pair| self.pair_symbol(pair).to_string()).unwrap_or_default()),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// `AmendOrder(account, symbol, orderId, price, amount, nonce, expiry)`: `""` for the price
    /// or the amount the client left as it was; the replacement's id is its digest.
    pub fn amend(
        &self,
        account: &Address,
        order_id: &OrderId,
        replacement: &NewOrder,
        (price_given, amount_given): (bool, bool),
        signed: ([u8; 32], u64),
    ) -> TypedMessage {
        let spec = self.pair_spec(replacement.pair);
        let price = match replacement.price {
            Some(price) if price_given => spec.format_price(price),
            _ => String::new(),
        };
        let amount = if amount_given {
            self.asset_amount(spec.base(), spec.base_amount(replacement.quantity).units())
        } else {
            String::new()
        };
        TypedMessage {
            struct_type: &AMEND_ORDER_TYPE,
            values: vec![
                FieldValue::Address(*account),
                FieldValue::Text(self.pair_symbol(replacement.pair).to_string()),
                FieldValue::Bytes32(*order_id.as_bytes()),
                FieldValue::Text(price),
                FieldValue::Text(amount),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// `CancelAllAfter(account, timeoutMs, nonce, expiry)`, `timeoutMs` 0 to turn it off.
    pub fn cancel_all_after(&self, account: &Address, timeout_ms: u64, signed: ([u8; 32], u64)) -> TypedMessage {
        TypedMessage {
            struct_type: &CANCEL_ALL_AFTER_TYPE,
            values: vec![
                FieldValue::Address(*account),
                FieldValue::uint(timeout_ms),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// `ApproveAgent(account, agent, name, validUntil, nonce, expiry)`, `validUntil` 0: until
    /// revoked.
    pub fn approve_agent(&self, account: &Address, grant: &AgentGrant, signed: ([u8; 32], u64)) -> TypedMessage {
        TypedMessage {
            struct_type: &APPROVE_AGENT_TYPE,
            values: vec![
                FieldValue::Address(*account),
                FieldValue::Address(grant.agent),
                FieldValue::Text(grant.name.clone()),
                FieldValue::uint(grant.valid_until_ms.unwrap_or(0)),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// The vault's `Withdrawal(account, token, amount, withdrawalId, expiry)` (vault custody),
    /// `token` the zero address for the native asset.
    pub fn vault_withdrawal(&self, withdrawal: &VaultWithdrawal) -> TypedMessage {
        let request = &withdrawal.request;
        let mut amount = [0u8; 32];
        amount[16..].copy_from_slice(&request.amount.units().to_be_bytes());
        let token = self.tokens[usize::from(request.asset.0)].unwrap_or(Address::from_bytes([0; 20]));
        TypedMessage {
            struct_type: &WITHDRAWAL_TYPE,
            values: vec![
                FieldValue::Address(request.account),
                FieldValue::Address(token),
                FieldValue::Uint(amount),
                FieldValue::Uint(request.transfer_id),
                FieldValue::uint(withdrawal.expiry_ms),
            ],
        }
    }

    /// `Transfer(account, fromSubaccount, toSubaccount, symbol, quantity, clientTransferId,
    /// nonce, expiry)`: the owner moves funds between two of its subaccounts.
    pub fn subaccount_transfer(&self, request: &SubaccountTransferRequest, signed: ([u8; 32], u64)) -> TypedMessage {
        TypedMessage {
            struct_type: &SUBACCOUNT_TRANSFER_TYPE,
            values: vec![
                FieldValue::Address(request.owner),
                FieldValue::uint(u64::from(request.from_number)),
                FieldValue::uint(u64::from(request.to_number)),
                FieldValue::Text(self.asset_symbol(request.asset).to_string()),
                FieldValue::Text(self.asset_amount(request.asset, request.amount.units())),
                FieldValue::Text(request.client_transfer_id.clone()),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// `Twap(account, symbol, direction, amount, durationMs, intervalMs, limitPrice,
    /// clientTwapId, nonce, expiry)`: a TWAP order started.
    pub fn twap(&self, terms: &NewTwap, signed: ([u8; 32], u64)) -> TypedMessage {
        let (symbol, spec) = &self.pairs[usize::from(terms.pair.0)];
        TypedMessage {
            struct_type: &TWAP_TYPE,
            values: vec![
                FieldValue::Address(terms.account),
                FieldValue::Text(symbol.clone()),
                FieldValue::Text(terms.direction.wire_name().to_string()),
                FieldValue::Text(self.asset_amount(spec.base(), spec.base_amount(terms.quantity).units())),
                FieldValue::uint(terms.duration_ms),
                FieldValue::uint(terms.interval_ms),
                FieldValue::Text(
                    terms
                        .limit_price
                        .map(|price| spec.format_price(price))
                        .unwrap_or_default(),
                ),
                FieldValue::Text(terms.client_twap_id.clone().unwrap_or_default()),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// `CancelTwap(account, twapId, nonce, expiry)`.
    pub fn cancel_twap(&self, account: &Address, twap_id: u64, signed: ([u8; 32], u64)) -> TypedMessage {
        TypedMessage {
            struct_type: &CANCEL_TWAP_TYPE,
            values: vec![
                FieldValue::Address(*account),
                FieldValue::uint(twap_id),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// `RevokeAgent(account, agent, nonce, expiry)`.
    pub fn revoke_agent(&self, account: &Address, agent: &Address, signed: ([u8; 32], u64)) -> TypedMessage {
        TypedMessage {
            struct_type: &REVOKE_AGENT_TYPE,
            values: vec![
                FieldValue::Address(*account),
                FieldValue::Address(*agent),
                FieldValue::Uint(signed.0),
                FieldValue::uint(signed.1),
            ],
        }
    }

    /// What the signer of a journaled `command` signed, with the nonce and expiry of its
    /// signature: `client_signed` tells an amend the client signed (`AmendOrder`) from one the
    /// venue signed with the account's key (the replacement as an `Order`). A vault withdrawal
    /// carries its own signed id and expiry (`signed` is not used). `None` for what no account
    /// signs (chain facts, the venue's timer, configurations), for commands journaled before
    /// their signed fields were (a cancel without its pair, a switch as a trigger time), and
    /// for a command naming a pair or asset the chain does not have.
    pub fn signed_command(
        &self,
        command: &Command,
        client_signed: bool,
        signed: ([u8; 32], u64),
    ) -> Option<SignedCommand> {
        let (nonce, expiry_ms) = signed;
        let own = |message: SignedMessage, account: Address, digest_is_order_id: Option<OrderId>| {
            Some(SignedCommand {
                message,
                signer: account,
                digest_is_order_id,
            })
        };
        match command {
            Command::PlaceOrder(order) => {
                if !self.has_pair(order.pair) {
                    return None;
                }
                own(
                    SignedMessage::Order(Box::new(self.order(order, nonce, expiry_ms))),
                    order.account,
                    Some(order.order_id),
                )
            }
            Command::CancelOrder {
                account,
                order_id,
                pair: Some(pair),
            } if self.has_pair(*pair) => own(
                SignedMessage::Other(self.cancel(account, *pair, order_id, signed)),
                *account,
                None,
            ),
            Command::Deposit(request) | Command::Withdraw(request) if self.has_asset(request.asset) => {
                let kind = if matches!(command, Command::Deposit(_)) {
                    TransferKind::Deposit
                } else {
                    TransferKind::Withdrawal
                };
                own(
                    SignedMessage::Other(self.transfer(
                        kind,
                        &request.account,
                        request.asset,
                        request.amount.units(),
                        signed,
                    )),
                    request.account,
                    None,
                )
            }
            Command::CancelAll { account, pair } if pair.is_none_or(|pair| self.has_pair(pair)) => own(
                SignedMessage::Other(self.cancel_all(account, *pair, signed)),
                *account,
                None,
            ),
            Command::AmendOrder(amend) if self.has_pair(amend.replacement.pair) => {
                let replacement = &amend.replacement;
                let message = if client_signed {
                    SignedMessage::Other(self.amend(
                        &amend.account,
                        &amend.order_id,
                        replacement,
                        (!amend.keeps_price, amend.amount_from_remaining.is_none()),
                        signed,
                    ))
                } else {
                    SignedMessage::Order(Box::new(self.order(replacement, nonce, expiry_ms)))
                };
                own(message, amend.account, Some(replacement.order_id))
            }
            Command::SetCancelAllAfter { account, setting } => {
                let timeout_ms = match setting {
                    SwitchSetting::Off => 0,
                    SwitchSetting::AfterMs(timeout_ms) => *timeout_ms,
                    SwitchSetting::AtMs(_) => return None,
                };
                own(
                    SignedMessage::Other(self.cancel_all_after(account, timeout_ms, signed)),
                    *account,
                    None,
                )
            }
            Command::ApproveAgent { account, grant } => own(
                SignedMessage::Other(self.approve_agent(account, grant, signed)),
                *account,
                None,
            ),
            Command::RevokeAgent { account, agent } => own(
                SignedMessage::Other(self.revoke_agent(account, agent, signed)),
                *account,
                None,
            ),
            Command::TransferBetweenSubaccounts(request) if self.has_asset(request.asset) => own(
                SignedMessage::Other(self.subaccount_transfer(request, signed)),
                request.owner,
                None,
            ),
            Command::StartTwap(terms) if self.has_pair(terms.pair) => {
                own(SignedMessage::Other(self.twap(terms, signed)), terms.account, None)
            }
            Command::CancelTwap { account, twap_id } => own(
                SignedMessage::Other(self.cancel_twap(account, *twap_id, signed)),
                *account,
                None,
            ),
            Command::RequestWithdrawal(withdrawal) if self.has_asset(withdrawal.request.asset) => own(
                SignedMessage::Other(self.vault_withdrawal(withdrawal)),
                withdrawal.request.account,
                None,
            ),
            Command::ByAgent { agent, command } => {
                let mut inner = self.signed_command(command, client_signed, signed)?;
                inner.signer = *agent;
                Some(inner)
            }
            _ => None,
        }
    }
}
