"""The contract's errors as exceptions.

Every error answer of dexd is ``{"error": {"code", "message", "field"}}`` with an HTTP status;
:func:`error_from_answer` turns it into the most specific class below, so a bot can catch
``InsufficientBalance`` or ``RateLimited`` instead of parsing codes. This module does no IO.
"""

from __future__ import annotations


class DexdError(Exception):
    """An error answer of dexd (or a transport failure, with ``status`` 0)."""

    def __init__(self, status: int, code: str, message: str, field: str | None = None,
                 retry_after_seconds: float | None = None):
        super().__init__(f"{status} {code}: {message}" + (f" (field {field})" if field else ""))
        self.status = status
        self.code = code
        self.message = message
        self.field = field
        self.retry_after_seconds = retry_after_seconds


class InvalidRequest(DexdError):
    """400: a parameter is missing, malformed or unknown."""


class AuthenticationFailed(DexdError):
    """401/403: no credential, a bad key or signature, an expired signature, the wrong account."""


class NotFound(DexdError):
    """404: unknown chain, pair, asset or path."""


class OrderNotFound(NotFound):
    """404 ORDER_NOT_FOUND."""


class Conflict(DexdError):
    """409: the order is not open, the client order id or the nonce is taken."""


class OrderNotOpen(Conflict):
    """409 ORDER_NOT_OPEN: the order is already filled or cancelled."""


class Rejected(DexdError):
    """422: the venue's rules refuse the request (tick, step, minimums, post-only...)."""


class InsufficientBalance(Rejected):
    """422 INSUFFICIENT_BALANCE (or INSUFFICIENT_FUNDS_ON_CHAIN for a vault deposit)."""


class RateLimited(DexdError):
    """429: wait ``retry_after_seconds``."""


class ChainUnavailable(DexdError):
    """502: a vault chain's node cannot be used now; nothing was applied."""


class Unavailable(DexdError):
    """503 (or a transport failure): nothing was applied; try again."""


_BY_CODE: dict[str, type[DexdError]] = {
    "ORDER_NOT_FOUND": OrderNotFound,
    "ORDER_NOT_OPEN": OrderNotOpen,
    "INSUFFICIENT_BALANCE": InsufficientBalance,
    "INSUFFICIENT_FUNDS_ON_CHAIN": InsufficientBalance,
    "AGENT_NOT_ALLOWED": AuthenticationFailed,
    "INVALID_SIGNATURE": AuthenticationFailed,
    "UNAUTHENTICATED": AuthenticationFailed,
    "DUPLICATE_CLIENT_ORDER_ID": Conflict,
    "NONCE_REUSED": Conflict,
    "TRANSFER_ID_REUSED": Conflict,
    "RATE_LIMITED": RateLimited,
}

_BY_STATUS: dict[int, type[DexdError]] = {
    400: InvalidRequest,
    401: AuthenticationFailed,
    403: AuthenticationFailed,
    404: NotFound,
    408: InvalidRequest,
    409: Conflict,
    413: InvalidRequest,
    415: InvalidRequest,
    422: Rejected,
    429: RateLimited,
    502: ChainUnavailable,
    503: Unavailable,
}


def error_from_answer(status: int, body: object, retry_after: str | None = None) -> DexdError:
    """The exception for an error answer (its status and decoded JSON body)."""
    error = body.get("error") if isinstance(body, dict) else None
    if not isinstance(error, dict):
        return DexdError(status, "UNEXPECTED_ANSWER", f"an answer without an error object: {body!r:.200}")
    code = str(error.get("code", "UNKNOWN"))
    message = str(error.get("message", ""))
    field = error.get("field")
    cls = _BY_CODE.get(code) or _BY_STATUS.get(status, DexdError)
    retry_after_seconds = None
    if retry_after is not None:
        try:
            retry_after_seconds = float(retry_after)
        except ValueError:
            retry_after_seconds = None
    return cls(status, code, message, field, retry_after_seconds)
