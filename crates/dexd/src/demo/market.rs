//! One pair's demo market. Every second the pair's walk moves; the maker cancels and requotes
//! its ladder when the price has moved a level or a taker has traded, and keeps its dead
//! man's switch armed; now and then a taker sends an immediate-or-cancel order through the first
//! levels, and after some of its buys a stop-loss that expires if it does not fire. Every request goes through the API's own handlers with the demo account's key, as a
//! client's would: checked, signed, budgeted and journaled like any other.
//!
//! While the chain's write queue is long (real clients keep the writer busy) it steps aside for
//! that second. It decides nothing about prices (the walk does) and holds no balance of its
//! own: an account short of funds gets another ledger deposit.

use std::future::Future;
use std::sync::Arc;
use std::time::{Duration, Instant};

use dexd_core::{Direction, OrderType, TimeInForce, TriggerCondition};
use serde_json::{json, Value};
use tokio::sync::watch;

use super::accounts::DemoAccount;
use super::walk::{PairWalk, Quote, Second};
use crate::api::error::ApiError;
use crate::api::handlers;
use crate::api::params::Params;
use crate::api::state::AppState;

/// How often the walk moves and the maker looks at its quotes.
pub const DEMO_SECOND_MS: u64 = 1_000;
/// The maker's dead man's switch: its orders are cancelled this long after the demo stops
/// answering (a crash, a kill), so no stale ladder outlives it.
pub const MAKER_SWITCH_TIMEOUT_MS: u64 = 30_000;
/// How often the maker re-arms its switch.
const MAKER_SWITCH_REFRESH_SECONDS: u64 = 10;
/// The longest the maker leaves a ladder in place when nothing moves, in seconds.
const REQUOTE_AT_LEAST_EVERY_SECONDS: u64 = 15;
/// The demo steps aside while the venue is busy: in a second when the chain's write queue
/// holds more than this many requests, it neither quotes nor trades (its walk still moves, so
/// the sequence of prices stays the same).
pub const STEP_ASIDE_QUEUE_DEPTH: usize = 64;
/// How often a pair's unexpected refusals are logged at most.
const WARNING_INTERVAL: Duration = Duration::from_secs(60);

/// An asset deposit that tops an account up: a symbol and a decimal quantity.
#[derive(Clone, Debug)]
pub(super) struct TopUp {
    pub(super) symbol: String,
    pub(super) quantity: String,
}

/// A chain's takers, shared by its pairs' markets, and what tops each of them up.
pub(super) struct Takers {
    pub(super) accounts: Vec<DemoAccount>,
    pub(super) top_ups: Vec<TopUp>,
}

/// One pair's maker and what tops it up, and the chain's takers.
pub(super) struct PairMarket {
    pub(super) app: Arc<AppState>,
    pub(super) chain_id: u64,
    pub(super) symbol: String,
    pub(super) walk: PairWalk,
    pub(super) maker: DemoAccount,
    pub(super) maker_top_ups: Vec<TopUp>,
    pub(super) takers: Arc<Takers>,
}

/// Calls a handler with parameters written as a JSON object, as a request body would bring them.
async fn call<T, Answer>(
    app: &Arc<AppState>,
    handler: impl FnOnce(Arc<AppState>, Params) -> Answer,
    fields: Value,
) -> Result<T, ApiError>
where
    Answer: Future<Output = Result<T, ApiError>>,
{
    let Value::Object(object) = fields else {
        return Err(ApiError::internal());
    };
    let params = Params::from_json_object(object)?;
    handler(Arc::clone(app), params).await
}

/// Deposits each top-up into `account` (ledger chains credit at once).
pub(super) async fn fund(
    app: &Arc<AppState>,
    chain_id: u64,
    account: &DemoAccount,
    top_ups: &[TopUp],
) -> Result<(), ApiError> {
    for top_up in top_ups {
        call(
            app,
            handlers::deposit,
            json!({
                "chainId": chain_id.to_string(),
                "from": account.address_text(),
                "symbol": top_up.symbol,
                "quantity": top_up.quantity,
                "privateKey": account.key_text(),
            }),
        )
        .await?;
    }
    Ok(())
}

impl PairMarket {
    /// Runs until `stop` turns true, then cancels the maker's orders.
    pub(super) async fn run(mut self, mut stop: watch::Receiver<bool>) {
        let mut clock = tokio::time::interval(Duration::from_millis(DEMO_SECOND_MS));
        clock.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
        let mut quoted_mid_ticks: Option<u64> = None;
        let mut seconds_since_quote = 0u64;
        let mut traded = false;
        let mut last_warning: Option<Instant> = None;
        for second_number in 0u64.. {
            tokio::select! {
                _ = clock.tick() => {}
                _ = stop.wait_for(|stopped| *stopped) => break,
            }
            let second = self.walk.advance();
            seconds_since_quote += 1;
            if second_number % MAKER_SWITCH_REFRESH_SECONDS == 0 {
                if let Err(error) = self.arm_switch().await {
                    self.note_refusal(&mut last_warning, "arm the switch", &error);
                }
            }
            if self.venue_is_busy() {
                continue;
            }
            let moved =
                quoted_mid_ticks.is_none_or(|quoted| quoted.abs_diff(second.mid_ticks) >= second.level_gap_ticks);
            if moved || traded || seconds_since_quote >= REQUOTE_AT_LEAST_EVERY_SECONDS {
                match self.requote(&second).await {
                    Ok(()) => {
                        quoted_mid_ticks = Some(second.mid_ticks);
                        seconds_since_quote = 0;
                    }
                    Err(error) => self.note_refusal(&mut last_warning, "requote", &error),
                }
                traded = false;
            }
            if let Some(order) = second.taker {
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_millis(order.delay_ms)) => {}
                    _ = stop.wait_for(|stopped| *stopped) => break,
                }
                match self.take(&order).await {
                    Ok(()) => traded = true,
                    Err(error) => self.note_refusal(&mut last_warning, "take", &error),
                }
            }
        }
        if let Err(error) = self.cancel_maker_orders().await {
            tracing::warn!(chain_id = self.chain_id, pair = %self.symbol, code = error.code, "the demo maker's orders could not be cancelled at the stop; its switch cancels them");
        }
    }

    /// Whether real clients keep the chain's writer busy (see [`STEP_ASIDE_QUEUE_DEPTH`]).
    fn venue_is_busy(&self) -> bool {
        self.app
            .venue
            .chain(self.chain_id)
            .is_some_and(|chain| chain.write_queue_depth() > STEP_ASIDE_QUEUE_DEPTH)
    }

    /// Logs a refusal: the expected ones (a stopping venue, a full queue) quietly, the rest at
    /// most once a minute per pair.
    fn note_refusal(&self, last_warning: &mut Option<Instant>, what: &str, error: &ApiError) {
        let expected = error.status.as_u16() == 503 || error.code == "RATE_LIMITED";
        if expected || last_warning.is_some_and(|at| at.elapsed() < WARNING_INTERVAL) {
            tracing::debug!(chain_id = self.chain_id, pair = %self.symbol, code = error.code, message = %error.message, "demo: could not {what}");
            return;
        }
        *last_warning = Some(Instant::now());
        tracing::warn!(chain_id = self.chain_id, pair = %self.symbol, code = error.code, message = %error.message, "demo: could not {what}");
    }

    async fn cancel_maker_orders(&self) -> Result<(), ApiError> {
        call(
            &self.app,
            handlers::cancel_all,
            json!({
                "chainId": self.chain_id.to_string(),
                "symbol": self.symbol,
                "privateKey": self.maker.key_text(),
            }),
        )
        .await
        .map(drop)
    }

    async fn arm_switch(&self) -> Result<(), ApiError> {
        call(
            &self.app,
            handlers::cancel_all_after,
            json!({
                "chainId": self.chain_id.to_string(),
                "timeoutMs": MAKER_SWITCH_TIMEOUT_MS.to_string(),
                "privateKey": self.maker.key_text(),
            }),
        )
        .await
        .map(drop)
    }

    /// Cancels the maker's ladder and places the new one in one batch; a maker short of funds
    /// is topped up, and quotes again the next second.
    async fn requote(&self, second: &Second) -> Result<(), ApiError> {
        self.cancel_maker_orders().await?;
        let grid = self.walk.grid();
        let orders: Vec<Value> = second
            .ladder
            .iter()
            .map(|quote: &Quote| {
                json!({
                    "symbol": self.symbol,
                    "type": OrderType::Limit.wire_name(),
                    "direction": quote.direction.wire_name(),
                    "price": grid.price_text(quote.price_ticks),
                    "amount": grid.amount_text(quote.amount_steps),
                })
            })
            .collect();
        let answer = call(
            &self.app,
            handlers::batch_orders,
            json!({
                "chainId": self.chain_id.to_string(),
                "orders": orders,
                "privateKey": self.maker.key_text(),
            }),
        )
        .await?;
        let answer: Value = serde_json::from_str(answer.get()).map_err(|_| ApiError::internal())?;
        let refused = answer["results"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|result| result["error"]["code"].as_str())
            .collect::<Vec<_>>();
        if refused.contains(&"INSUFFICIENT_BALANCE") {
            fund(&self.app, self.chain_id, &self.maker, &self.maker_top_ups).await?;
        }
        Ok(())
    }

    /// Sends a taker's immediate-or-cancel order; a taker short of funds is topped up.
    async fn take(&self, order: &super::walk::TakerOrder) -> Result<(), ApiError> {
        let taker = &self.takers.accounts[order.taker % self.takers.accounts.len()];
        let grid = self.walk.grid();
        let placed = self
            .place(
                taker,
                json!({
                    "type": OrderType::Limit.wire_name(),
                    "timeInForce": TimeInForce::ImmediateOrCancel.wire_name(),
                    "direction": order.direction.wire_name(),
                    "price": grid.price_text(order.limit_price_ticks),
                    "amount": grid.amount_text(order.amount_steps),
                }),
            )
            .await;
        match placed {
            Ok(_) if order.direction == Direction::Buy && order.delay_ms.is_multiple_of(STOP_EVERY_NTH_BUY) => {
                self.place_stop(order).await;
                Ok(())
            }
            Ok(_) => Ok(()),
            Err(error) if error.code == "INSUFFICIENT_BALANCE" => {
                fund(&self.app, self.chain_id, taker, &self.takers.top_ups).await
            }
            Err(error) => Err(error),
        }
    }

    /// After some of its buys a taker protects them with a stop-loss: a market sell of what it
    /// bought that fires if a trade prints 1 % below its price, expiring after
    /// [`DEMO_STOP_LIFETIME_MS`], so that a newcomer sees stops wait, fire and expire. A stop the
    /// market already met, or one the taker cannot lock, is simply not placed.
    async fn place_stop(&self, order: &super::walk::TakerOrder) {
        let taker = &self.takers.accounts[order.taker % self.takers.accounts.len()];
        let grid = self.walk.grid();
        let trigger_ticks = order.limit_price_ticks - order.limit_price_ticks / 100;
        let placed = self
            .place(
                taker,
                json!({
                    "type": OrderType::Market.wire_name(),
                    "direction": Direction::Sell.wire_name(),
                    "amount": grid.amount_text(order.amount_steps),
                    "triggerPrice": grid.price_text(trigger_ticks),
                    "triggerCondition": TriggerCondition::Below.wire_name(),
                    "expiresAt": dexd_store::now_ms() + DEMO_STOP_LIFETIME_MS,
                }),
            )
            .await;
        if let Err(error) = placed {
            tracing::debug!(chain_id = self.chain_id, pair = %self.symbol, code = error.code, "a demo stop was not placed");
        }
    }

    /// Places an order of `taker` on this pair: `terms` are the order's own fields (its type,
    /// direction, amount…); the chain, the pair and the taker's key are added here.
    async fn place(&self, taker: &DemoAccount, terms: Value) -> Result<(), ApiError> {
        let Value::Object(mut fields) = terms else {
            return Err(ApiError::internal());
        };
        fields.insert("chainId".into(), self.chain_id.to_string().into());
        fields.insert("symbol".into(), self.symbol.clone().into());
        fields.insert("privateKey".into(), taker.key_text().into());
        call(&self.app, handlers::add_order, Value::Object(fields))
            .await
            .map(drop)
    }
}

/// One buy in this many (by its delay, a draw of the walk) is followed by a stop-loss.
const STOP_EVERY_NTH_BUY: u64 = 3;
/// How long a demo stop-loss waits before it expires, in ms.
const DEMO_STOP_LIFETIME_MS: u64 = 120_000;
