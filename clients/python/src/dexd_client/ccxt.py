"""``dexd``: a CCXT exchange class for dexd, signing every write locally.

    from dexd_client.ccxt import dexd
    exchange = dexd({"walletAddress": "0x…", "privateKey": "0x…",
                     "options": {"baseUrl": "http://127.0.0.1:8080", "chainId": "1"}})
    exchange.create_order("ETH/USDC", "limit", "buy", 0.5, 1500)

With ``options={"subaccount": N}`` (1 to 1,000) the exchange is bound to the account's subaccount
``N``: every order, cancel, balance, order list and trade is that subaccount's; ``transfer`` moves
funds between the account's subaccounts (CCXT account ids are their numbers as strings, ``"0"``
the owner), ``fetchAccounts`` lists them and ``fetchTransfers`` their transfers; deposits and
withdrawals are always the owner's.

It subclasses ``ccxt.Exchange`` (no fork of CCXT) and implements the unified methods on top of
:class:`dexd_client.Client`, which signs orders, cancels, deposits and withdrawals as EIP-712
typed data in this process: ``privateKey`` is never sent. Results are CCXT's unified structures
(built with CCXT's own ``safe_order``, ``safe_trade``... helpers), precision is in CCXT's
``TICK_SIZE`` mode from the pairs' tick and step, and the contract's error codes become CCXT's
exception classes. dexd is spot only: no margin, no positions in CCXT's sense.
"""

from __future__ import annotations

from typing import Any, Optional

import ccxt
from ccxt.base.decimal_to_precision import TICK_SIZE

from . import errors as dexd_errors
from .client import Client

#: The contract's error codes → CCXT's exception classes (by status when a code is not listed).
EXCEPTIONS_BY_CODE: dict[str, type[Exception]] = {
    "INSUFFICIENT_BALANCE": ccxt.InsufficientFunds,
    "INSUFFICIENT_FUNDS_ON_CHAIN": ccxt.InsufficientFunds,
    "ORDER_NOT_FOUND": ccxt.OrderNotFound,
    "ORDER_NOT_OPEN": ccxt.InvalidOrder,
    "DUPLICATE_CLIENT_ORDER_ID": ccxt.DuplicateOrderId,
    "POST_ONLY_WOULD_TAKE": ccxt.OrderImmediatelyFillable,
    "FOK_NOT_FILLABLE": ccxt.OrderNotFillable,
    "NO_LIQUIDITY": ccxt.OrderNotFillable,
    "INVALID_TICK": ccxt.InvalidOrder,
    "INVALID_STEP": ccxt.InvalidOrder,
    "BELOW_MIN_AMOUNT": ccxt.InvalidOrder,
    "BELOW_MIN_NOTIONAL": ccxt.InvalidOrder,
    "TOO_MANY_OPEN_ORDERS": ccxt.InvalidOrder,
    "AMOUNT_TOO_LARGE": ccxt.InvalidOrder,
    "UNKNOWN_PAIR": ccxt.BadSymbol,
    "UNKNOWN_ASSET": ccxt.BadRequest,
    "UNKNOWN_CHAIN": ccxt.BadRequest,
    "NONCE_REUSED": ccxt.InvalidNonce,
    "TRANSFER_ID_REUSED": ccxt.BadRequest,
    "TOO_MANY_TRANSFERS": ccxt.RateLimitExceeded,
    "INVALID_SIGNATURE": ccxt.AuthenticationError,
    "SIGNATURE_EXPIRED": ccxt.AuthenticationError,
    "INVALID_PRIVATE_KEY": ccxt.AuthenticationError,
    "UNAUTHENTICATED": ccxt.AuthenticationError,
    "ACCOUNT_MISMATCH": ccxt.PermissionDenied,
    "AGENT_NOT_ALLOWED": ccxt.PermissionDenied,
    "TOO_MANY_AGENTS": ccxt.BadRequest,
    "AGENT_NOT_FOUND": ccxt.BadRequest,
    "RATE_LIMITED": ccxt.RateLimitExceeded,
    "CHAIN_UNAVAILABLE": ccxt.ExchangeNotAvailable,
    "UNAVAILABLE": ccxt.ExchangeNotAvailable,
    "UNREACHABLE": ccxt.NetworkError,
}
EXCEPTIONS_BY_STATUS: dict[int, type[Exception]] = {
    400: ccxt.BadRequest, 401: ccxt.AuthenticationError, 403: ccxt.PermissionDenied, 404: ccxt.BadRequest,
    409: ccxt.InvalidOrder, 422: ccxt.InvalidOrder, 429: ccxt.RateLimitExceeded, 502: ccxt.ExchangeNotAvailable,
    503: ccxt.ExchangeNotAvailable,
}

#: Transfer statuses → CCXT's transaction statuses.
TRANSFER_STATUSES = {"pending": "pending", "sent": "pending", "confirmed": "ok", "failed": "failed"}
#: CCXT's network codes of the chains the embedded configuration serves.
NETWORKS_BY_CHAIN_ID = {"1": "ERC20", "42161": "ARBONE", "11155111": "SEPOLIA"}
#: Order statuses → CCXT's (a filled order is "closed").
ORDER_STATUSES = {"open": "open", "untriggered": "open", "filled": "closed", "cancelled": "canceled"}


def ccxt_exception(error: dexd_errors.DexdError) -> Exception:
    """The CCXT exception for a dexd error (its message keeps the code)."""
    cls = EXCEPTIONS_BY_CODE.get(error.code) or EXCEPTIONS_BY_STATUS.get(error.status, ccxt.ExchangeError)
    return cls(f"dexd {error.code}: {error.message}")


class dexd(ccxt.Exchange):  # noqa: N801 (CCXT names exchange classes in lower case)
    """dexd, one chain of it (``options.chainId``), as a CCXT exchange."""

    def describe(self) -> dict:
        return self.deep_extend(super().describe(), {
            "id": "dexd",
            "name": "dexd",
            "countries": [],
            "version": "2",
            "rateLimit": 0,
            "certified": False,
            "pro": False,
            "dex": True,
            "precisionMode": TICK_SIZE,
            "requiredCredentials": {"apiKey": False, "secret": False, "walletAddress": True, "privateKey": True},
            "has": {
                "CORS": None, "spot": True, "margin": False, "swap": False, "future": False, "option": False,
                "cancelOrder": True, "createOrder": True, "createMarketOrder": True, "createLimitOrder": True,
                "createOrders": True, "cancelOrders": True, "cancelAllOrders": True, "editOrder": True,
                "cancelAllOrdersAfter": True,
                "fetchBalance": True, "fetchCanceledOrders": True, "fetchClosedOrders": True,
                "fetchCurrencies": True, "fetchDeposits": True, "fetchMarkets": True, "fetchMyTrades": True,
                "fetchOHLCV": True, "fetchOpenOrders": True, "fetchOrder": True, "fetchOrderBook": True,
                "fetchTicker": True, "fetchTrades": True, "fetchWithdrawals": True, "withdraw": True,
                "fetchTickers": False, "fetchPositions": False, "fetchOrders": False, "fetchTime": False,
                "fetchAccounts": True, "transfer": True, "fetchTransfers": True,
                "createTwapOrder": True, "cancelTwapOrder": True,
            },
            "timeframes": {"1m": "1m", "5m": "5m", "15m": "15m", "30m": "30m", "1h": "1h", "4h": "4h",
                           "1d": "1d", "1w": "1w"},
            "urls": {"api": {"rest": "http://127.0.0.1:8080"}, "www": "https://github.com/", "doc": []},
            "options": {"baseUrl": "http://127.0.0.1:8080", "chainId": "1", "subaccount": 0},
        })

    # An agent: ``privateKey`` is a key the account ``walletAddress`` approved
    # (``POST /account/approveAgent``); it signs the account's orders with its own key and can
    # never withdraw. A ``privateKey`` whose address is ``walletAddress`` is the account's own.

    def __init__(self, config: Optional[dict] = None):
        super().__init__(config or {})
        self._client: Optional[Client] = None

    def __repr__(self) -> str:  # never the key
        return f"dexd({self.options.get('baseUrl')!r}, chainId={self.options.get('chainId')!r})"

    # -- plumbing -------------------------------------------------------------------------------

    @property
    def client(self) -> Client:
        """The dexd client this exchange signs and calls with (made on first use)."""
        if self._client is None:
            # walletAddress other than the key's own: the key trades as the account's agent.
            self._client = Client(self.options["baseUrl"], self.options["chainId"],
                                  private_key=self.privateKey or None, account=self.walletAddress or None,
                                  subaccount=self._subaccount(),
                                  verifying_contract=self.options.get("verifyingContract"))
        return self._client

    def _call(self, method, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(*args, **kwargs)
        except dexd_errors.DexdError as error:
            raise ccxt_exception(error) from None

    def _subaccount(self) -> int:
        """The subaccount the exchange is bound to (``options.subaccount``; 0, the owner)."""
        return int(self.options.get("subaccount") or 0)

    def _owner(self) -> str:
        """The owner's address (number 0): who deposits, withdraws and transfers."""
        owner = self.walletAddress or self.client.owner_address
        if not owner:
            raise ccxt.AuthenticationError("dexd needs walletAddress (and privateKey to trade)")
        return owner

    def _account(self) -> str:
        """The address the exchange trades and reads as: its subaccount's, when bound to one."""
        from .signing import subaccount_address
        return subaccount_address(self._owner(), self._subaccount())

    def _raw(self, path: str, **params: Any) -> Any:
        return self._call(self.client._get, path, **params)

    # -- public ---------------------------------------------------------------------------------

    def fetch_markets(self, params={}) -> list:
        answer = self._raw("/account/assetPairs")
        return [self._parse_market(pair) for pair in answer["pairs"]]

    def _parse_market(self, pair: dict) -> dict:
        return self.safe_market_structure({
            "id": pair["symbol"], "symbol": pair["symbol"], "base": pair["base"], "quote": pair["quote"],
            "baseId": pair["base"], "quoteId": pair["quote"], "settle": None, "settleId": None,
            "type": "spot", "spot": True, "margin": False, "swap": False, "future": False, "option": False,
            "active": True, "contract": False, "linear": None, "inverse": None,
            "taker": self.parse_number(pair["takerFee"]), "maker": self.parse_number(pair["makerFee"]),
            "percentage": True, "tierBased": False, "feeSide": "get",
            "contractSize": None, "expiry": None, "expiryDatetime": None, "strike": None, "optionType": None,
            "precision": {"amount": self.parse_number(pair["stepSize"]), "price": self.parse_number(pair["tickSize"])},
            "limits": {
                "leverage": {"min": None, "max": None},
                "amount": {"min": self.parse_number(pair["minAmount"]), "max": None},
                "price": {"min": self.parse_number(pair["tickSize"]), "max": None},
                "cost": {"min": self.parse_number(pair["minNotional"]), "max": None},
            },
            "created": None,
            "info": pair,
        })

    def fetch_currencies(self, params={}) -> dict:
        answer = self._raw("/account/assetsInfo")
        result = {}
        for asset in answer["assets"]:
            code = asset["symbol"]
            result[code] = self.safe_currency_structure({
                "id": code, "code": code, "name": asset["name"], "active": True, "deposit": True,
                "withdraw": True, "fee": None, "fees": {},
                "precision": self.parse_number(self.parse_precision(str(asset["decimals"]))),
                "limits": {"amount": {"min": None, "max": None}, "withdraw": {"min": None, "max": None},
                           "deposit": {"min": None, "max": None}},
                "networks": {}, "type": "crypto", "info": asset,
            })
        return result

    def fetch_order_book(self, symbol: str, limit: Optional[int] = None, params={}) -> dict:
        self.load_markets()
        market = self.market(symbol)
        depth = limit or 50
        bids = self._raw("/order/buyOrderbooks", pair=market["id"], depth=depth)
        asks = self._raw("/order/sellOrderbooks", pair=market["id"], depth=depth)
        timestamp = max(bids["timestamp"], asks["timestamp"])
        book = self.parse_order_book({
            "bids": [[level["price"], level["amount"]] for level in bids["levels"]],
            "asks": [[level["price"], level["amount"]] for level in asks["levels"]],
        }, market["symbol"], timestamp)
        book["nonce"] = min(bids["sequence"], asks["sequence"])
        return book

    def fetch_ohlcv(self, symbol: str, timeframe="1m", since: Optional[int] = None, limit: Optional[int] = None,
                    params={}) -> list:
        self.load_markets()
        market = self.market(symbol)
        # With `since`, the first `limit` candles from it (paging forward, as backtests read the
        # whole history); without, the newest `limit`.
        answer = self._raw("/order/tradesOHCL", pair=market["id"], interval=self.timeframes[timeframe],
                           **{"from": since}, limit=min(limit or 500, 1000))
        return [[candle["openTime"], self.parse_number(candle["open"]), self.parse_number(candle["high"]),
                 self.parse_number(candle["low"]), self.parse_number(candle["close"]),
                 self.parse_number(candle["volume"])] for candle in answer["candles"]]

    def fetch_trades(self, symbol: str, since: Optional[int] = None, limit: Optional[int] = None, params={}) -> list:
        self.load_markets()
        market = self.market(symbol)
        answer = self._raw("/order/tradeHistories", pair=market["id"], startTime=since,
                           limit=min(limit or 100, 1000))
        trades = [self._parse_public_trade(trade, market) for trade in answer["trades"]]
        return self.filter_by_since_limit(self.sort_by(trades, "timestamp"), since, limit)

    def _parse_public_trade(self, trade: dict, market: dict) -> dict:
        return self.safe_trade({
            "id": trade["tradeId"], "order": None, "info": trade, "timestamp": trade["timestamp"],
            "datetime": self.iso8601(trade["timestamp"]), "symbol": market["symbol"], "type": None,
            "side": trade["takerDirection"], "takerOrMaker": "taker", "price": trade["price"],
            "amount": trade["amount"], "cost": trade["cost"], "fee": None,
        }, market)

    def fetch_ticker(self, symbol: str, params={}) -> dict:
        """From the last 24 hourly candles and the top of the book (dexd has no ticker call)."""
        self.load_markets()
        market = self.market(symbol)
        now = self.milliseconds()
        candles = self._raw("/order/tradesOHCL", pair=market["id"], interval="1h",
                            startTime=now - 24 * 3_600_000, limit=25)["candles"]
        book = self.fetch_order_book(symbol, 1)
        last = candles[-1]["close"] if candles else None
        open_price = candles[0]["open"] if candles else None
        return self.safe_ticker({
            "symbol": market["symbol"], "timestamp": now, "datetime": self.iso8601(now),
            "high": max((c["high"] for c in candles), key=float) if candles else None,
            "low": min((c["low"] for c in candles), key=float) if candles else None,
            "bid": book["bids"][0][0] if book["bids"] else None,
            "bidVolume": book["bids"][0][1] if book["bids"] else None,
            "ask": book["asks"][0][0] if book["asks"] else None,
            "askVolume": book["asks"][0][1] if book["asks"] else None,
            "vwap": None, "open": open_price, "close": last, "last": last, "previousClose": None,
            "change": None, "percentage": None, "average": None,
            "baseVolume": sum(float(c["volume"]) for c in candles) if candles else None,
            "quoteVolume": sum(float(c["quoteVolume"]) for c in candles) if candles else None,
            "info": {"candles": candles},
        }, market)

    # -- private --------------------------------------------------------------------------------

    def fetch_balance(self, params={}) -> dict:
        answer = self._raw("/account/assetBalances", account=self._account())
        result: dict = {"info": answer, "timestamp": None, "datetime": None}
        for balance in answer["balances"]:
            account = self.account()
            account["free"] = balance["available"]
            account["used"] = balance["locked"]
            account["total"] = balance["total"]
            result[balance["symbol"]] = account
        return self.safe_balance(result)

    def _parse_dexd_order(self, order: dict, trades: Optional[list] = None) -> dict:
        market = self.safe_market(order["symbol"])
        fee = {"cost": self.parse_number(order["fee"]), "currency": order["feeAsset"]}
        return self.safe_order({
            "id": order["orderId"], "clientOrderId": order["clientOrderId"], "info": order,
            "timestamp": order["timestamp"], "datetime": self.iso8601(order["timestamp"]),
            "lastTradeTimestamp": order["updatedAt"] if order["filled"] != "0" else None,
            "lastUpdateTimestamp": order["updatedAt"],
            "symbol": market["symbol"], "type": order["type"], "timeInForce": order["timeInForce"],
            "postOnly": order["postOnly"], "side": order["direction"], "price": order["price"],
            "stopPrice": order.get("triggerPrice"), "triggerPrice": order.get("triggerPrice"),
            "amount": order["amount"], "cost": order["cost"],
            "average": order["average"], "filled": order["filled"], "remaining": order["remaining"],
            "status": ORDER_STATUSES[order["status"]], "fee": fee, "trades": trades,
        }, market)

    def create_order(self, symbol: str, type: str, side: str, amount: float, price: Optional[float] = None,
                     params={}) -> dict:
        self.load_markets()
        market = self.market(symbol)
        time_in_force = self.safe_string_upper(params, "timeInForce")
        post_only = self.safe_bool(params, "postOnly", False)
        if time_in_force == "PO":
            time_in_force, post_only = "GTC", True
        client_order_id = self.safe_string_2(params, "clientOrderId", "client_order_id")
        amount_text = self.amount_to_precision(symbol, amount)
        price_text = None if type == "market" else self.price_to_precision(symbol, price)
        answer = self._call(
            self.client.add_order_answer, market["id"], side, amount_text, price_text, type=type,
            time_in_force=time_in_force, post_only=post_only, client_order_id=client_order_id,
            **self._conditions(symbol, side, params),
        )
        return self._parse_dexd_order(answer["order"])

    def _conditions(self, symbol: str, side: str, params: dict) -> dict:
        """The venue's trigger, group and expiry from CCXT's parameters: ``stopLossPrice`` fires
        when the price moves against the order's side (below for a sell), ``takeProfitPrice`` when
        it moves with it (above for a sell), ``triggerPrice`` as ``triggerDirection`` says
        ("above"/"up" or "below"/"down"; a stop's direction when left out); ``ocoGroup`` and
        ``expiresAt`` (ms) pass through."""
        sell = side.lower() == "sell"
        trigger_price, condition = None, None
        stop_loss = self.safe_value(params, "stopLossPrice")
        take_profit = self.safe_value(params, "takeProfitPrice")
        trigger = self.safe_value_2(params, "triggerPrice", "stopPrice")
        if stop_loss is not None:
            trigger_price, condition = stop_loss, ("below" if sell else "above")
        elif take_profit is not None:
            trigger_price, condition = take_profit, ("above" if sell else "below")
        elif trigger is not None:
            direction = (self.safe_string(params, "triggerDirection") or "").lower()
            named = {"above": "above", "up": "above", "ascending": "above",
                     "below": "below", "down": "below", "descending": "below"}
            condition = named.get(direction, "below" if sell else "above")
            trigger_price = trigger
        expires_at = self.safe_integer(params, "expiresAt")
        return {
            "trigger_price": None if trigger_price is None else self.price_to_precision(symbol, trigger_price),
            "trigger_condition": condition,
            "oco_group": self.safe_string(params, "ocoGroup"),
            "expires_at": expires_at,
        }

    def create_orders(self, orders: list, params={}) -> list:
        """Up to 50 orders of one pair in one journaled step; each is CCXT's order, or a rejected
        one (``status`` "rejected", the error in ``info``) when the venue refused that order."""
        self.load_markets()
        requests_ = []
        for order in orders:
            symbol, type_, side = order["symbol"], order["type"], order["side"]
            extra = order.get("params") or {}
            time_in_force = self.safe_string_upper(extra, "timeInForce")
            post_only = self.safe_bool(extra, "postOnly", False)
            if time_in_force == "PO":
                time_in_force, post_only = "GTC", True
            price = order.get("price")
            requests_.append({
                "symbol": self.market(symbol)["id"], "direction": side,
                "amount": self.amount_to_precision(symbol, order["amount"]),
                "price": None if type_ == "market" else self.price_to_precision(symbol, price), "type": type_,
                "time_in_force": time_in_force, "post_only": post_only,
                "client_order_id": self.safe_string_2(extra, "clientOrderId", "client_order_id"),
                **self._conditions(symbol, side, extra),
            })
        answer = self._call(self.client.create_orders_answer, requests_)
        return [self._parse_result(result, "order") for result in answer["results"]]

    def _parse_result(self, result: dict, key: str) -> dict:
        """A batch item's result as CCXT's order: the order, or a rejected one with the error."""
        if "error" in result:
            return self.safe_order({"info": result, "status": "rejected"})
        return self._parse_dexd_order(result[key])

    def cancel_orders(self, ids: list, symbol: Optional[str] = None, params={}) -> list:
        """Up to 50 cancels in one journaled step (their symbols read back when not given)."""
        self.load_markets()
        cancels = []
        for id in ids:
            order_symbol = symbol or self.fetch_order(id)["symbol"]
            cancels.append((self.market(order_symbol)["id"], id))
        answer = self._call(self.client.cancel_orders_answer, cancels)
        return [self._parse_result(result, "order") for result in answer["results"]]

    def cancel_all_orders(self, symbol: Optional[str] = None, params={}) -> list:
        self.load_markets()
        market_id = self.market(symbol)["id"] if symbol else None
        answer = self._call(self.client.cancel_all_answer, market_id)
        return [self._parse_dexd_order(order) for order in answer["orders"]]

    def edit_order(self, id: str, symbol: str, type: str, side: str, amount: Optional[float] = None,
                   price: Optional[float] = None, params={}) -> dict:
        """Amends an open order in one step: the old one is cancelled and the new one (a new id,
        the old one's side, type and clientOrderId) placed; if the new one is refused the old one
        stays. ``type`` and ``side`` are the order's own, whatever is passed."""
        self.load_markets()
        market = self.market(symbol)
        amount_text = None if amount is None else self.amount_to_precision(symbol, amount)
        price_text = None if price is None else self.price_to_precision(symbol, price)
        answer = self._call(self.client.amend_order_answer, market["id"], id, price_text, amount_text)
        return self._parse_dexd_order(answer["order"], None)

    def cancel_all_orders_after(self, timeout: int, params={}) -> dict:
        """The dead man's switch: every open order is cancelled ``timeout`` ms from now unless this
        is called again first (0 turns it off; 5,000 to 86,400,000 otherwise)."""
        trigger_at = self._call(self.client.cancel_all_after, int(timeout))
        return {"info": {"triggerAt": trigger_at}, "triggerAt": trigger_at}

    def cancel_order(self, id: str, symbol: Optional[str] = None, params={}) -> dict:
        if symbol is None:
            symbol = self.fetch_order(id)["symbol"]
        self.load_markets()
        market = self.market(symbol)
        answer = self._call(self.client.cancel_order_answer, market["id"], id)
        return self._parse_dexd_order(answer["order"])

    def fetch_order(self, id: str, symbol: Optional[str] = None, params={}) -> dict:
        self.load_markets()
        answer = self._raw("/order/orderDetail", orderId=id)
        return self._parse_dexd_order(answer["order"])

    def _fetch_orders(self, path: str, symbol: Optional[str], since: Optional[int], limit: Optional[int]) -> list:
        self.load_markets()
        market = self.market(symbol) if symbol else None
        answer = self._raw(path, account=self._account(), symbol=market["id"] if market else None,
                           startTime=since, limit=min(limit or 100, 1000))
        orders = [self._parse_dexd_order(order) for order in answer["orders"]]
        return self.filter_by_since_limit(self.sort_by(orders, "timestamp"), since, limit)

    def fetch_open_orders(self, symbol: Optional[str] = None, since: Optional[int] = None,
                          limit: Optional[int] = None, params={}) -> list:
        return self._fetch_orders("/order/openOrders", symbol, since, limit)

    def fetch_closed_orders(self, symbol: Optional[str] = None, since: Optional[int] = None,
                            limit: Optional[int] = None, params={}) -> list:
        return self._fetch_orders("/order/filledOrders", symbol, since, limit)

    def fetch_canceled_orders(self, symbol: Optional[str] = None, since: Optional[int] = None,
                              limit: Optional[int] = None, params={}) -> list:
        return self._fetch_orders("/order/cancelledOrders", symbol, since, limit)

    def fetch_my_trades(self, symbol: Optional[str] = None, since: Optional[int] = None,
                        limit: Optional[int] = None, params={}) -> list:
        self.load_markets()
        market = self.market(symbol) if symbol else None
        answer = self._raw("/order/accountTrades", account=self._account(), pair=market["id"] if market else None,
                           startTime=since, limit=min(limit or 100, 1000))
        trades = []
        for trade in answer["trades"]:
            trade_market = self.safe_market(trade["symbol"])
            taker_buys = trade["takerDirection"] == "buy"
            side = "buy" if taker_buys == (trade["role"] == "taker") else "sell"
            trades.append(self.safe_trade({
                "id": trade["tradeId"], "order": trade["orderId"], "info": trade,
                "timestamp": trade["timestamp"], "datetime": self.iso8601(trade["timestamp"]),
                "symbol": trade_market["symbol"], "type": None, "side": side, "takerOrMaker": trade["role"],
                "price": trade["price"], "amount": trade["amount"], "cost": trade["cost"],
                "fee": {"cost": self.parse_number(trade["fee"]), "currency": trade["feeAsset"]},
            }, trade_market))
        return self.filter_by_since_limit(self.sort_by(trades, "timestamp"), since, limit)

    def _parse_transfer(self, transfer: dict, kind: str) -> dict:
        return {
            "info": transfer, "id": transfer["id"], "txid": transfer["txHash"], "type": kind,
            "currency": transfer["symbol"], "network": self._network(),
            "amount": self.parse_number(transfer["quantity"]),
            "status": TRANSFER_STATUSES[transfer["status"]], "timestamp": transfer["timestamp"],
            "datetime": self.iso8601(transfer["timestamp"]), "address": transfer["account"],
            # The account is both ends: it deposits from its wallet, and the vault pays only it.
            "addressFrom": transfer["account"], "addressTo": transfer["account"],
            "tag": None, "tagFrom": None, "tagTo": None, "updated": transfer["updatedAt"], "comment": None,
            "internal": False,
            # dexd charges nothing for a transfer (the chain's gas is the sender's).
            "fee": {"cost": self.parse_number("0"), "currency": transfer["symbol"]},
        }

    def _network(self) -> str:
        """CCXT's unified network code of the chain (``options.network`` overrides it)."""
        chain_id = str(self.options["chainId"])
        return self.options.get("network") or NETWORKS_BY_CHAIN_ID.get(chain_id, f"EVM{chain_id}")

    def _fetch_transfers(self, path: str, key: str, kind: str, code: Optional[str], since: Optional[int],
                         limit: Optional[int]) -> list:
        answer = self._raw(path, account=self._owner(), startTime=since, limit=min(limit or 100, 1000))
        transfers = [self._parse_transfer(item, kind) for item in answer[key]
                     if code is None or item["symbol"] == code]
        return self.filter_by_since_limit(self.sort_by(transfers, "timestamp"), since, limit)

    def fetch_deposits(self, code: Optional[str] = None, since: Optional[int] = None, limit: Optional[int] = None,
                       params={}) -> list:
        return self._fetch_transfers("/portfolio/depositHistories", "deposits", "deposit", code, since, limit)

    def fetch_withdrawals(self, code: Optional[str] = None, since: Optional[int] = None,
                          limit: Optional[int] = None, params={}) -> list:
        return self._fetch_transfers("/portfolio/withdrawHistories", "withdrawals", "withdrawal", code, since,
                                     limit)

    def withdraw(self, code: str, amount: float, address: str, tag=None, params={}) -> dict:
        """dexd pays only the account itself: ``address`` must be the wallet address."""
        if address.lower() != self._owner().lower():
            raise ccxt.BadRequest("dexd withdraws only to the account's own address")
        answer = self._call(self.client.withdraw_answer, code, self.number_to_string(amount))
        return self._parse_transfer(answer["withdrawal"], "withdrawal")

    def deposit(self, code: str, amount: float, params={}) -> dict:
        """A ledger-mode deposit (not a CCXT unified method; on a vault chain deposit from a wallet)."""
        answer = self._call(self.client.deposit_answer, code, self.number_to_string(amount))
        return self._parse_transfer(answer["deposit"], "deposit")

    # -- subaccounts (contract version 5) -------------------------------------------------------

    def fetch_accounts(self, params={}) -> list:
        """The owner (id ``"0"``) and every subaccount that ever received funds."""
        listed = self._raw("/account/subaccounts", account=self._owner())["subaccounts"]
        return [{"id": str(item["subaccount"]), "type": "main" if item["subaccount"] == 0 else "subaccount",
                 "name": item["address"], "code": None, "info": item} for item in listed]

    def _parse_subaccount_transfer(self, transfer: dict) -> dict:
        return {
            "info": transfer, "id": transfer["transferId"], "timestamp": transfer["timestamp"],
            "datetime": self.iso8601(transfer["timestamp"]), "currency": transfer["symbol"],
            "amount": self.parse_number(transfer["quantity"]),
            "fromAccount": str(transfer["fromSubaccount"]), "toAccount": str(transfer["toSubaccount"]),
            "status": "ok",
        }

    def transfer(self, code: str, amount: float, fromAccount: str, toAccount: str, params={}) -> dict:
        """Moves ``amount`` of ``code`` between two of the owner's subaccounts (account ids
        ``"0"`` to ``"1000"``), at once and free. ``params={"clientTransferId": ...}`` makes a
        retry safe: sent again, it answers the first result and moves nothing again."""
        answer = self._call(self.client.transfer_answer, code, self.number_to_string(amount), int(fromAccount),
                            int(toAccount), params.get("clientTransferId"))
        return self._parse_subaccount_transfer(answer["transfer"])

    def fetch_transfers(self, code: Optional[str] = None, since: Optional[int] = None,
                        limit: Optional[int] = None, params={}) -> list:
        """The owner's transfers between its subaccounts (``params={"subaccount": N}``: only
        those from or to N)."""
        answer = self._raw("/account/transfers", account=self._owner(), subaccount=params.get("subaccount"),
                           startTime=since, limit=min(limit or 100, 1000))
        transfers = [self._parse_subaccount_transfer(item) for item in answer["transfers"]
                     if code is None or item["symbol"] == code]
        return self.filter_by_since_limit(self.sort_by(transfers, "timestamp"), since, limit)

    # -- TWAP orders (contract version 5) ------------------------------------------------------

    def _parse_twap(self, twap: dict) -> dict:
        status = {"running": "open", "completed": "closed", "cancelled": "canceled"}[twap["status"]]
        return self.safe_order({
            "info": twap, "id": twap["twapId"], "clientOrderId": twap["clientTwapId"],
            "timestamp": twap["startedAt"], "datetime": self.iso8601(twap["startedAt"]),
            "lastTradeTimestamp": None, "lastUpdateTimestamp": twap["updatedAt"],
            "symbol": twap["symbol"], "type": "twap", "timeInForce": None, "postOnly": False,
            "side": twap["direction"], "price": self.parse_number(twap["limitPrice"]) if twap["limitPrice"] else None,
            "amount": self.parse_number(twap["amount"]), "filled": self.parse_number(twap["filled"]),
            "remaining": self.parse_number(twap["remaining"]), "cost": self.parse_number(twap["cost"]),
            "average": self.parse_number(twap["average"]) if twap["average"] else None,
            "status": status, "fee": None, "trades": [],
        })

    def create_twap_order(self, symbol: str, side: str, amount: float, duration: int, params={}) -> dict:
        """A TWAP of ``amount`` over ``duration`` ms (300,000 to 86,400,000); ``params``:
        ``interval`` (ms between slices, default 30,000, dividing ``duration``), ``price`` (the
        limit no slice passes; without it, 3 % from the best price), ``clientOrderId`` (a retry
        with it starts nothing again). Returned as an order of type ``twap``."""
        price = params.get("price")
        answer = self._call(self.client.add_twap_answer, symbol, side, self.number_to_string(amount), int(duration),
                            int(params.get("interval", 30_000)),
                            None if price is None else self.number_to_string(price), params.get("clientOrderId"))
        return self._parse_twap(answer["twap"])

    def cancel_twap_order(self, id: str, symbol: Optional[str] = None, params={}) -> dict:
        """Cancels a running TWAP: no slice is placed after it."""
        return self._parse_twap(self._call(self.client.cancel_twap, id))

    def fetch_twap_orders(self, symbol: Optional[str] = None, params={}) -> list:
        """The account's running TWAPs and its last 20 finished ones."""
        twaps = [self._parse_twap(twap) for twap in self._call(self.client.twaps)]
        return [twap for twap in twaps if symbol is None or twap["symbol"] == symbol]

