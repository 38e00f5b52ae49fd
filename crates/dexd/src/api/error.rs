//! The API's one error type and its conversion into the contract's error body.
//!
//! Every failure of a request ends here as `{"error": {"code", "message", "field"}}` with the
//! contract's status. Internal failures are logged by the caller and answered with an opaque
//! 500. This module does not decide which error applies.

use axum::http::{HeaderValue, StatusCode};
use axum::response::{IntoResponse, Response};
use axum::Json;
use dexd_core::{AgentRejection, DecimalError, NonceRejection, PairValueError, Rejection};
use serde_json::json;

/// An error answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ApiError {
    /// The HTTP status.
    pub status: StatusCode,
    /// The contract's error code.
    pub code: &'static str,
    /// What was wrong and what is allowed.
    pub message: String,
    /// The parameter at fault, when one is.
    pub field: Option<String>,
    /// Seconds to wait, sent as `Retry-After` with a 429.
    pub retry_after_seconds: Option<u64>,
}

impl ApiError {
    /// An error with a status, code and message.
    pub fn new(status: StatusCode, code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError {
            status,
            code,
            message: message.into(),
            field: None,
            retry_after_seconds: None,
        }
    }

    /// The same error, naming a field.
    pub fn on(mut self, field: &str) -> ApiError {
        self.field = Some(field.to_string());
        self
    }

    /// The same error about the item at `index` of the list parameter `list` (a batch's
    /// `orders[3].price`).
    pub fn within(mut self, list: &str, index: usize) -> ApiError {
        let place = format!("{list}[{index}]");
        self.message = format!("{place}: {}", self.message);
        self.field = Some(match self.field {
            Some(field) => format!("{place}.{field}"),
            None => place,
        });
        self
    }

    /// 400 `MISSING_PARAMETER`.
    pub fn missing(field: &str) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "MISSING_PARAMETER",
            format!("{field} is required"),
        )
        .on(field)
    }

    /// 400 `INVALID_PARAMETER`.
    pub fn invalid(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_PARAMETER",
            format!("{field} {}", message.into()),
        )
        .on(field)
    }

    /// 400 `INVALID_NUMBER`.
    pub fn invalid_number(field: &str, message: impl Into<String>) -> ApiError {
        ApiError::new(
            StatusCode::BAD_REQUEST,
            "INVALID_NUMBER",
            format!("{field} {}", message.into()),
        )
        .on(field)
    }

    /// 404 `NOT_FOUND` or another not-found code.
    pub fn not_found(code: &'static str, message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::NOT_FOUND, code, message)
    }

    /// 503 `UNAVAILABLE`.
    pub fn unavailable(message: impl Into<String>) -> ApiError {
        ApiError::new(StatusCode::SERVICE_UNAVAILABLE, "UNAVAILABLE", message)
    }

    /// 500 `INTERNAL`, saying nothing of the cause.
    pub fn internal() -> ApiError {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            "INTERNAL",
            "internal error; nothing was applied",
        )
    }

    /// The error for a decimal that does not fit a pair's rules.
    pub fn from_pair_value(field: &str, error: PairValueError) -> ApiError {
        match error {
            PairValueError::Decimal(DecimalError::TooPrecise) => {
                ApiError::invalid_number(field, "has more decimals than the asset allows")
            }
            PairValueError::Decimal(other) => ApiError::invalid_number(field, other.to_string()),
            PairValueError::Zero => ApiError::invalid_number(field, "must be positive"),
            PairValueError::NotOnTick => unprocessable(
                "INVALID_TICK",
                format!("{field} is not a multiple of the pair's tick size"),
            )
            .on(field),
            PairValueError::NotOnStep => unprocessable(
                "INVALID_STEP",
                format!("{field} is not a multiple of the pair's step size"),
            )
            .on(field),
            PairValueError::TooLarge => {
                unprocessable("AMOUNT_TOO_LARGE", format!("{field} is larger than the venue accepts")).on(field)
            }
        }
    }

    /// The error for an engine rejection.
    pub fn from_rejection(rejection: Rejection) -> ApiError {
        match rejection {
            Rejection::UnknownPair => ApiError::not_found("UNKNOWN_PAIR", "no such pair on this chain"),
            Rejection::UnknownAsset => ApiError::not_found("UNKNOWN_ASSET", "no such asset on this chain"),
            Rejection::InvalidOrder(message) => ApiError::new(StatusCode::BAD_REQUEST, "INVALID_PARAMETER", message),
            Rejection::InsufficientBalance => {
                unprocessable("INSUFFICIENT_BALANCE", "the available balance is below what this needs")
            }
            Rejection::BelowMinAmount => {
                unprocessable("BELOW_MIN_AMOUNT", "the amount is below the pair's minimum amount").on("amount")
            }
            Rejection::BelowMinNotional => unprocessable(
                "BELOW_MIN_NOTIONAL",
                "price × amount is below the pair's minimum notional",
            ),
            Rejection::PostOnlyWouldTake => unprocessable(
                "POST_ONLY_WOULD_TAKE",
                "a post-only order would trade on arrival; nothing was stored",
            ),
            Rejection::FillOrKillNotFillable => unprocessable(
                "FOK_NOT_FILLABLE",
                "a fill-or-kill order cannot fill completely now; nothing was stored",
            ),
            Rejection::NoLiquidity => unprocessable(
                "NO_LIQUIDITY",
                "there is nothing to trade against on the other side; nothing was stored",
            ),
            Rejection::TooManyOpenOrders => unprocessable(
                "TOO_MANY_OPEN_ORDERS",
                "the account has its limit of open orders on this chain",
            ),
            Rejection::AmountTooLarge => {
                unprocessable("AMOUNT_TOO_LARGE", "the value is larger than the venue accepts")
            }
            Rejection::DuplicateClientOrderId => ApiError::new(
                StatusCode::CONFLICT,
                "DUPLICATE_CLIENT_ORDER_ID",
                "an open order of the account already uses this clientOrderId",
            )
            .on("clientOrderId"),
            Rejection::OrderChanged => ApiError::new(
                StatusCode::CONFLICT,
                "ORDER_CHANGED",
                "the order kept filling while it was amended; nothing changed, amend it again",
            )
            .on("orderId"),
            Rejection::OrderNotFound | Rejection::NotOwner => {
                ApiError::not_found("ORDER_NOT_FOUND", "no such order on this chain for this account").on("orderId")
            }
            Rejection::BookFull | Rejection::TooManyAccounts => {
                ApiError::unavailable("the venue is at its capacity for this chain; nothing was applied")
            }
            Rejection::DuplicateOrderId => ApiError::internal(),
            Rejection::AgentNotAllowed => agent_not_allowed(),
            Rejection::Agent(AgentRejection::TooManyAgents) => unprocessable(
                "TOO_MANY_AGENTS",
                format!(
                    "the account has {} agents already; revoke one first",
                    dexd_core::MAX_AGENTS_PER_ACCOUNT
                ),
            )
            .on("agent"),
            Rejection::Agent(AgentRejection::InvalidName) => {
                ApiError::invalid("name", "must be 1 to 32 of the characters A-Z a-z 0-9 . _ -")
            }
            Rejection::Agent(AgentRejection::SelfApproval) => agent_is_account(),
            Rejection::Agent(AgentRejection::AlreadyExpired) => valid_until_passed(),
            Rejection::AgentNotFound => {
                ApiError::not_found("AGENT_NOT_FOUND", "the account has no such agent").on("agent")
            }
            // The venue's timer raced a new setting of the switch or a cancel; nothing to tell a
            // client.
            Rejection::SwitchNotDue | Rejection::ExpiryNotDue | Rejection::NoMetTriggersWaiting => ApiError::internal(),
            Rejection::TriggerAlreadyMet => unprocessable(
                "TRIGGER_ALREADY_MET",
                "the pair's last trade price already meets the trigger; nothing was stored",
            )
            .on("triggerPrice"),
            Rejection::ExpiryTooSoon => unprocessable(
                "EXPIRY_TOO_SOON",
                format!(
                    "expiresAt must be at least {} ms after now; nothing was stored",
                    dexd_core::MIN_EXPIRY_AHEAD_MS
                ),
            )
            .on("expiresAt"),
            Rejection::ExpiryTooFar => unprocessable(
                "EXPIRY_TOO_FAR",
                format!(
                    "expiresAt must be at most {} days after now (is it in seconds?); nothing was stored",
                    dexd_core::MAX_EXPIRY_AHEAD_MS / 86_400_000
                ),
            )
            .on("expiresAt"),
            Rejection::OcoGroupInvalid(why) => {
                unprocessable("OCO_GROUP_INVALID", format!("{why}; nothing was stored")).on("ocoGroup")
            }
            // Only custody journals roots; no client request leads here.
            // Commands of the chain and the venue, never a client's.
            Rejection::RootOutOfOrder | Rejection::ConfigurationRefused => ApiError::internal(),
            Rejection::InvalidTransfer(message) => ApiError::new(StatusCode::BAD_REQUEST, "INVALID_PARAMETER", message),
            // The handler answers an applied transfer with its first result before it gets here;
            // a race that reaches it is told to look the transfer up.
            Rejection::TransferAlreadyApplied => ApiError::new(
                StatusCode::CONFLICT,
                "TRANSFER_ID_REUSED",
                "this transfer was applied already; GET /account/transfers shows it",
            )
            .on("clientTransferId"),
            Rejection::TransferIdReused => ApiError::new(
                StatusCode::CONFLICT,
                "TRANSFER_ID_REUSED",
                "the owner used this clientTransferId for another transfer in the last 24 hours; nothing moved",
            )
            .on("clientTransferId"),
            Rejection::Twap(rejection) => twap_error(rejection),
            Rejection::PairHalted => unprocessable(
                "PAIR_HALTED",
                "the operator halted this pair: it takes cancels only until it is resumed",
            )
            .on("symbol"),
            Rejection::TooManyTransfers => unprocessable(
                "TOO_MANY_TRANSFERS",
                format!(
                    "the owner made {} transfers in the last 24 hours, the most remembered at once; nothing moved",
                    dexd_core::subaccounts::MAX_REMEMBERED_TRANSFERS_PER_OWNER
                ),
            ),
            Rejection::VaultFrozen => ApiError::new(
                StatusCode::CONFLICT,
                "VAULT_FROZEN",
                "the chain's vault is frozen: it takes no orders, deposits or withdrawals; each account leaves \
                 through the vault's exit (dexd exit, or the exitCalldata of /account/liabilityProof)",
            ),
            Rejection::Nonce(NonceRejection::Expired) => signature_expired(),
            Rejection::Nonce(NonceRejection::ExpiryTooFar { max_lifetime_ms }) => {
                ApiError::invalid("expiry", format!("must be at most {max_lifetime_ms} ms after now"))
            }
            Rejection::UnknownAccount => ApiError::not_found(
                "ACCOUNT_NOT_FOUND",
                "this account has nothing on this chain: deposit first (an account with no deposit holds no signed \
                 request, dead man's switch or agent)",
            )
            .on("account"),
            Rejection::Nonce(NonceRejection::Reused) => ApiError::new(
                StatusCode::CONFLICT,
                "NONCE_REUSED",
                "this account already used this nonce in a request that has not expired; sign again with a new nonce",
            )
            .on("nonce"),
            Rejection::Nonce(NonceRejection::BatchNotClaimed) => ApiError::new(
                StatusCode::CONFLICT,
                "NONCE_REUSED",
                "this order's batch holds no live claim of its nonce; sign the batch again with a new nonce",
            )
            .on("nonce"),
            Rejection::Nonce(NonceRejection::AccountFull { frees_at_ms }) => too_many_requests(
                "this account holds its limit of live signed requests (each lives until its expiry; sign with \
                 shorter expiries)",
                std::time::Duration::from_millis(frees_at_ms.saturating_sub(dexd_store::now_ms())),
            ),
            Rejection::Nonce(NonceRejection::Full) => ApiError::unavailable(
                "the venue holds its limit of live signed requests and this signer its share; retry shortly",
            ),
            Rejection::WrongCustodyMode => ApiError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_PARAMETER",
                "this chain's custody mode does not take this operation",
            ),
            Rejection::DuplicateTransfer => ApiError::new(
                StatusCode::CONFLICT,
                "NONCE_REUSED",
                "a pending transfer of this account already has this id; sign again with a new nonce",
            )
            .on("nonce"),
            Rejection::ReservedWithdrawalId => ApiError::new(
                StatusCode::BAD_REQUEST,
                "INVALID_PARAMETER",
                "a withdrawal id (the nonce) whose first 24 bytes are all 0xff is kept for withdrawals requested on \
                 chain; sign again with another nonce",
            )
            .on("nonce"),
            Rejection::TooManyPendingTransfers => ApiError::unavailable(
                "the chain holds its limit of transfers waiting for the chain; nothing was applied, retry later",
            ),
            // Only the chain's own watcher and payer send these; a client never causes them.
            Rejection::TransferNotPending | Rejection::DepositOutOfOrder | Rejection::WithdrawalNotCovered => {
                ApiError::internal()
            }
        }
    }
}

/// 401 `SIGNATURE_EXPIRED`.
pub fn signature_expired() -> ApiError {
    ApiError::new(
        StatusCode::UNAUTHORIZED,
        "SIGNATURE_EXPIRED",
        "the signed request's expiry has passed; sign again with a later expiry",
    )
    .on("expiry")
}

/// 429 `RATE_LIMITED`, with the wait rounded up to whole seconds for `Retry-After`.
pub fn too_many_requests(message: &str, wait: std::time::Duration) -> ApiError {
    let seconds = (wait.as_secs() + u64::from(wait.subsec_nanos() > 0)).max(1);
    let mut error = ApiError::new(
        StatusCode::TOO_MANY_REQUESTS,
        "RATE_LIMITED",
        format!("{message}; retry in {seconds} s"),
    );
    error.retry_after_seconds = Some(seconds);
    error
}

/// 422 with a code.
pub fn unprocessable(code: &'static str, message: impl Into<String>) -> ApiError {
    ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, code, message)
}

impl ApiError {
    /// The contract's error object, `{"code", "message", "field"}` (a batch item's result and a
    /// stream's error event carry it).
    pub fn object(&self) -> serde_json::Value {
        json!({"code": self.code, "message": self.message, "field": self.field})
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let body = json!({"error": self.object()});
        let mut response = (self.status, Json(body)).into_response();
        if let Some(seconds) = self.retry_after_seconds {
            response.headers_mut().insert("retry-after", HeaderValue::from(seconds));
        }
        response
    }
}

/// 403 `AGENT_NOT_ALLOWED`: a key acting for an account that has not approved it (or whose
/// approval ended), or an agent asking for what no agent may do.
pub fn agent_not_allowed() -> ApiError {
    ApiError::new(
        StatusCode::FORBIDDEN,
        "AGENT_NOT_ALLOWED",
        "this key is not an agent the account approved (or its approval ended), or agents may not do this: \
         an agent may place, cancel, amend and cancel all orders and set the switch, never deposit, withdraw, \
         transfer or approve agents; a subaccount is acted for by its owner's key or an agent the owner \
         approved, once it has received a transfer",
    )
    .on("account")
}

/// 422 `AGENT_IS_ACCOUNT`: an account cannot approve itself as its agent (a rule about the
/// account, which no schema states).
pub fn agent_is_account() -> ApiError {
    unprocessable("AGENT_IS_ACCOUNT", "an account cannot approve itself as its agent").on("agent")
}

/// 422 `VALID_UNTIL_PASSED`: an approval whose end is not after now.
pub fn valid_until_passed() -> ApiError {
    unprocessable(
        "VALID_UNTIL_PASSED",
        "validUntil must be later than now (ms since the Unix epoch); leave it out for an approval until revoked",
    )
    .on("validUntil")
}

/// The error for a refused TWAP command.
fn twap_error(rejection: dexd_core::TwapRejection) -> ApiError {
    use dexd_core::twaps::{MAX_RUNNING_TWAPS, MAX_RUNNING_TWAPS_PER_ACCOUNT_AND_PAIR};
    use dexd_core::TwapRejection;
    match rejection {
        // Bounds a schema cannot state (a divisor, the pair's minimum) are refused by rule.
        TwapRejection::Invalid(message) => {
            ApiError::new(StatusCode::UNPROCESSABLE_ENTITY, "TWAP_OUT_OF_BOUNDS", message)
        }
        TwapRejection::TooMany => ApiError::new(
            StatusCode::UNPROCESSABLE_ENTITY,
            "TOO_MANY_TWAPS",
            format!(
                "the account runs {MAX_RUNNING_TWAPS_PER_ACCOUNT_AND_PAIR} TWAPs on this pair, or the chain \
                 {MAX_RUNNING_TWAPS}; cancel one or wait for one to end"
            ),
        ),
        TwapRejection::ClientIdReused => ApiError::new(
            StatusCode::CONFLICT,
            "DUPLICATE_CLIENT_TWAP_ID",
            "the account has a TWAP with this clientTwapId and other terms; GET /order/twaps shows it",
        )
        .on("clientTwapId"),
        TwapRejection::NotFound => {
            ApiError::not_found("TWAP_NOT_FOUND", "no TWAP of this account has that id on this chain").on("twapId")
        }
        TwapRejection::NotRunning => ApiError::new(
            StatusCode::CONFLICT,
            "TWAP_NOT_RUNNING",
            "the TWAP completed or was cancelled already",
        )
        .on("twapId"),
        // Only the venue's timer runs slices; no request reaches this.
        TwapRejection::SliceNotDue => ApiError::internal(),
    }
}
