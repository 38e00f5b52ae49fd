//! The contract's JSON objects (Order, Trade, Transfer, Balance...) built from engine records.
//!
//! Every decimal is written canonically as a string; addresses are EIP-55 checksummed. Averages
//! are rounded toward zero at the larger of the quote asset's and the tick's decimals. This
//! module decides nothing and changes nothing.

use dexd_core::decimal::{format_scaled_units, multiply_divide_rounding_down, power_of_ten};
use dexd_core::{AssetIndex, Balance, Direction, LevelView, PairIndex, Price, Trade, Transfer};
use serde::Serialize;
use serde_json::{json, Value};

use dexd_crypto::{checksummed, hex_prefixed};
use dexd_store::StoredOrder;
use dexd_venue::config::{ChainConfig, PairConfig};

/// An amount of an asset, canonically.
pub fn asset_amount(chain: &ChainConfig, asset: AssetIndex, units: u128) -> String {
    format_scaled_units(units, chain.asset_config(asset).decimals)
}

/// A book level of `pair` as the contract writes it: `{"price", "amount", "orders"}`, the amount
/// in base. A level that is gone (`quantity` 0, no orders) writes amount `"0"`. The REST book and
/// the streams' book both render through this.
pub fn book_level(chain: &ChainConfig, pair: PairIndex, price: Price, quantity: u128, orders: u32) -> Value {
    let spec = &chain.pair_config(pair).spec;
    let amount = if quantity == 0 {
        "0".to_string()
    } else {
        asset_amount(chain, spec.base(), quantity.saturating_mul(spec.step_units()))
    };
    json!({"price": spec.format_price(price), "amount": amount, "orders": orders})
}

/// The text of a book level's price and amount, for the streams' checksum.
pub fn book_level_text(chain: &ChainConfig, pair: PairIndex, level: &LevelView) -> (String, String) {
    let spec = &chain.pair_config(pair).spec;
    (
        spec.format_price(level.price),
        asset_amount(chain, spec.base(), level.quantity.saturating_mul(spec.step_units())),
    )
}

/// A signed amount of quote or base units, canonically, with a leading `-` when negative.
pub fn signed_amount(units: i128, decimals: u32) -> String {
    let magnitude = format_scaled_units(units.unsigned_abs(), decimals);
    if units < 0 {
        format!("-{magnitude}")
    } else {
        magnitude
    }
}

/// `quote_units / base_units` as a price in quote per base, rounded toward zero at the larger
/// of the quote asset's and the tick's decimals; `None` when nothing was traded.
pub fn average_price(pair: &PairConfig, quote_units: u128, base_units: u128) -> Option<String> {
    if base_units == 0 {
        return None;
    }
    let spec = &pair.spec;
    let decimals = spec.quote_decimals().max(pair.definition.tick_size.scale());
    // price = (quote / 10^quote decimals) / (base / 10^base decimals), scaled by 10^decimals.
    let factor = power_of_ten(spec.base_decimals() + decimals - spec.quote_decimals())?;
    let scaled = multiply_divide_rounding_down(quote_units, factor, base_units)?;
    Some(format_scaled_units(scaled, decimals))
}

/// The contract's Order object, serialized field by field in the contract's order (no JSON
/// value is built in between: placing an order answers one, on the busiest path).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct OrderObject<'a> {
    order_id: String,
    client_order_id: Option<&'a str>,
    chain_id: String,
    account: String,
    symbol: &'a str,
    #[serde(rename = "type")]
    order_type: &'static str,
    direction: &'static str,
    time_in_force: &'static str,
    post_only: bool,
    price: Option<String>,
    amount: String,
    filled: String,
    remaining: String,
    cost: String,
    average: Option<String>,
    fee: String,
    fee_asset: &'a str,
    status: &'static str,
    cancel_reason: Option<&'static str>,
    trigger_price: Option<String>,
    trigger_condition: Option<&'static str>,
    oco_group: Option<&'a str>,
    expires_at: Option<u64>,
    /// The TWAP this order is a slice of, when it is one.
    twap_id: Option<String>,
    timestamp: u64,
    updated_at: u64,
    signature: String,
}

/// The contract's Order object.
pub fn order<'a>(chain: &'a ChainConfig, stored: &'a StoredOrder) -> OrderObject<'a> {
    let record = &stored.record;
    let pair = chain.pair_config(record.terms.pair);
    let spec = &pair.spec;
    let base = |quantity| asset_amount(chain, spec.base(), spec.base_amount(quantity).units());
    let fee_asset = match record.terms.direction {
        Direction::Buy => spec.base(),
        Direction::Sell => spec.quote(),
    };
    let filled_units = spec.base_amount(record.filled).units();
    let conditions = record.terms.conditions();
    OrderObject {
        order_id: record.terms.order_id.to_string(),
        client_order_id: record.terms.client_order_id.as_deref(),
        chain_id: chain.chain_id.to_string(),
        account: checksummed(&record.terms.account),
        symbol: &pair.symbol,
        order_type: record.terms.order_type.wire_name(),
        direction: record.terms.direction.wire_name(),
        time_in_force: record.terms.time_in_force.wire_name(),
        post_only: record.terms.post_only,
        price: record.terms.price.map(|price| spec.format_price(price)),
        amount: base(record.terms.quantity),
        filled: base(record.filled),
        remaining: base(record.remaining()),
        cost: asset_amount(chain, spec.quote(), record.cost.units()),
        average: average_price(pair, record.cost.units(), filled_units),
        fee: asset_amount(chain, fee_asset, record.fee.units()),
        fee_asset: &chain.asset_config(fee_asset).symbol,
        status: record.status.wire_name(),
        cancel_reason: record.cancel_reason.map(|reason| reason.wire_name()),
        trigger_price: conditions.trigger.map(|trigger| spec.format_price(trigger.price)),
        trigger_condition: conditions.trigger.map(|trigger| trigger.condition.wire_name()),
        oco_group: conditions.oco_group.as_deref(),
        expires_at: conditions.expires_at_ms,
        twap_id: conditions.twap_id.map(|twap_id| twap_id.to_string()),
        timestamp: record.created_at_ms,
        updated_at: record.updated_at_ms,
        // A TWAP's slice has no signature of its own: the TWAP's signed terms authorize it.
        signature: match conditions.twap_id {
            Some(_) => String::new(),
            None => hex_prefixed(&stored.signature),
        },
    }
}

/// The contract's Trade object, serialized without a JSON value in between (see [`OrderObject`]).
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct TradeObject<'a> {
    trade_id: String,
    chain_id: String,
    symbol: &'a str,
    price: String,
    amount: String,
    cost: String,
    taker_direction: &'static str,
    maker_order_id: String,
    taker_order_id: String,
    timestamp: u64,
}

impl TradeObject<'_> {
    /// The trade as a line of `/market/trades.csv`: `tradeId,timestamp,price,amount,cost,
    /// takerDirection,makerOrderId,takerOrderId` and a newline (no field holds a comma or quote).
    pub fn csv_line(&self) -> String {
        format!(
            "{},{},{},{},{},{},{},{}\n",
            self.trade_id,
            self.timestamp,
            self.price,
            self.amount,
            self.cost,
            self.taker_direction,
            self.maker_order_id,
            self.taker_order_id
        )
    }
}

/// The contract's Trade object.
pub fn trade<'a>(chain: &'a ChainConfig, trade: &Trade) -> TradeObject<'a> {
    let pair = chain.pair_config(trade.pair);
    TradeObject {
        trade_id: trade.trade_id.to_string(),
        chain_id: chain.chain_id.to_string(),
        symbol: &pair.symbol,
        price: pair.spec.format_price(trade.price),
        amount: asset_amount(chain, pair.spec.base(), trade.base_amount.units()),
        cost: asset_amount(chain, pair.spec.quote(), trade.cost.units()),
        taker_direction: trade.taker_direction.wire_name(),
        maker_order_id: trade.maker_order_id.to_string(),
        taker_order_id: trade.taker_order_id.to_string(),
        timestamp: trade.timestamp_ms,
    }
}

/// One of an account's own fills: the contract's Trade with the account's side of it.
#[derive(Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AccountTradeObject<'a> {
    #[serde(flatten)]
    trade: TradeObject<'a>,
    order_id: String,
    role: &'static str,
    fee: String,
    fee_asset: &'a str,
}

/// `trade` as a fill of `account`, which is its maker or its taker (never both: an order never
/// fills against its own account). The fee is in the asset the account received: base for the
/// buyer, quote for the seller.
pub fn account_trade<'a>(
    chain: &'a ChainConfig,
    trade: &Trade,
    account: &dexd_core::Address,
) -> AccountTradeObject<'a> {
    let pair = chain.pair_config(trade.pair);
    let is_maker = trade.maker_account == *account;
    let account_buys = (trade.taker_direction == Direction::Buy) != is_maker;
    let fee_asset = if account_buys {
        pair.spec.base()
    } else {
        pair.spec.quote()
    };
    let (order_id, fee) = if is_maker {
        (trade.maker_order_id, trade.maker_fee)
    } else {
        (trade.taker_order_id, trade.taker_fee)
    };
    AccountTradeObject {
        trade: self::trade(chain, trade),
        order_id: order_id.to_string(),
        role: if is_maker { "maker" } else { "taker" },
        fee: asset_amount(chain, fee_asset, fee.units()),
        fee_asset: &chain.asset_config(fee_asset).symbol,
    }
}

/// The contract's Transfer object.
pub fn transfer(chain: &ChainConfig, transfer: &Transfer) -> Value {
    json!({
        "id": hex_prefixed(&transfer.transfer_id),
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&transfer.account),
        "symbol": chain.asset_config(transfer.asset).symbol,
        "quantity": asset_amount(chain, transfer.asset, transfer.amount.units()),
        "status": transfer.status.wire_name(),
        "txHash": transfer.tx_hash.as_ref().map(|hash| hex_prefixed(hash)),
        "blockNumber": transfer.block_number,
        "timestamp": transfer.timestamp_ms,
        "updatedAt": transfer.updated_at_ms,
    })
}

/// A transfer between two subaccounts of one owner (contract version 5).
pub fn subaccount_transfer(chain: &ChainConfig, transfer: &dexd_core::SubaccountTransfer) -> Value {
    let request = &transfer.request;
    json!({
        "transferId": transfer.transfer_id.to_string(),
        "clientTransferId": request.client_transfer_id,
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&request.owner),
        "fromSubaccount": request.from_number,
        "toSubaccount": request.to_number,
        "from": checksummed(&transfer.from_address()),
        "to": checksummed(&transfer.to_address()),
        "symbol": chain.asset_config(request.asset).symbol,
        "quantity": asset_amount(chain, request.asset, request.amount.units()),
        "timestamp": transfer.timestamp_ms,
    })
}

/// A TWAP order (contract version 5).
pub fn twap(chain: &ChainConfig, twap: &dexd_core::TwapRecord) -> Value {
    let terms = &twap.terms;
    let pair = chain.pair_config(terms.pair);
    let spec = &pair.spec;
    let base = |quantity| asset_amount(chain, spec.base(), spec.base_amount(quantity).units());
    let slices_planned = terms.slice_count();
    let running = twap.status == dexd_core::TwapStatus::Running;
    json!({
        "twapId": twap.twap_id.to_string(),
        "clientTwapId": terms.client_twap_id,
        "chainId": chain.chain_id.to_string(),
        "account": checksummed(&terms.account),
        "symbol": pair.symbol,
        "direction": terms.direction.wire_name(),
        "amount": base(terms.quantity),
        "filled": base(twap.filled),
        "remaining": base(twap.remaining()),
        "cost": asset_amount(chain, spec.quote(), twap.cost.units()),
        "average": average_price(pair, twap.cost.units(), spec.base_amount(twap.filled).units()),
        "limitPrice": terms.limit_price.map(|price| spec.format_price(price)),
        "durationMs": terms.duration_ms,
        "intervalMs": terms.interval_ms,
        "status": match twap.status {
            dexd_core::TwapStatus::Running => "running",
            dexd_core::TwapStatus::Completed => "completed",
            dexd_core::TwapStatus::Cancelled => "cancelled",
        },
        "slices": twap.slices_run,
        "slicesPlanned": slices_planned,
        "nextSliceAt": running.then(|| twap.slice_due_at_ms(twap.next_slice)),
        "startedAt": twap.started_at_ms,
        "endsAt": twap.started_at_ms.saturating_add(terms.duration_ms),
        "updatedAt": twap.updated_at_ms,
    })
}

/// The contract's candle object (as in `/order/tradesOHCL`).
pub fn candle(chain: &ChainConfig, pair: dexd_core::PairIndex, candle: &dexd_core::Candle) -> Value {
    let spec = &chain.pair_config(pair).spec;
    json!({
        "openTime": candle.open_time_ms,
        "open": spec.format_price(candle.open),
        "high": spec.format_price(candle.high),
        "low": spec.format_price(candle.low),
        "close": spec.format_price(candle.close),
        "volume": asset_amount(chain, spec.base(), candle.volume.units()),
        "quoteVolume": asset_amount(chain, spec.quote(), candle.quote_volume.units()),
        "trades": candle.trades,
    })
}

/// The contract's Balance object.
pub fn balance(chain: &ChainConfig, asset: AssetIndex, balance: Balance) -> Value {
    json!({
        "symbol": chain.asset_config(asset).symbol,
        "total": asset_amount(chain, asset, balance.total().units()),
        "available": asset_amount(chain, asset, balance.available.units()),
        "locked": asset_amount(chain, asset, balance.locked.units()),
    })
}

/// What `GET /order/orderDetail` adds for an order of a batch signed once: enough to check its
/// signature without the venue. The order's own `Order` struct hash is `orderHashes[index]`;
/// `hashStruct(OrderBatch)` is `keccak256(typeHash ‖ account ‖ keccak256(orderHashes…) ‖ nonce ‖
/// expiry)`; the signature recovers, over `digest`, to the account or an agent it approved.
pub fn batch_proof(domain: &dexd_crypto::SigningDomain, stored: &StoredOrder, batch: &dexd_store::BatchPlace) -> Value {
    let digest = domain.order_batch_digest(
        &stored.record.terms.account,
        &batch.order_hashes,
        stored.nonce,
        stored.expiry_ms,
    );
    json!({
        "primaryType": dexd_crypto::ORDER_BATCH_TYPE.name,
        "encodedType": dexd_crypto::ORDER_BATCH_TYPE.encode_type(),
        "index": batch.index,
        "orderHashes": dexd_crypto::order_batch::order_hashes_json(&batch.order_hashes),
        "account": dexd_crypto::checksummed(&stored.record.terms.account),
        "nonce": alloy_primitives::U256::from_be_bytes(stored.nonce).to_string(),
        "expiry": stored.expiry_ms,
        "digest": hex_prefixed(&digest),
        "signature": hex_prefixed(&stored.signature),
    })
}
