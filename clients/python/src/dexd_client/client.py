"""``Client``: dexd's REST API with typed results and every write signed locally.

A client is bound to one venue (``base_url``) and one chain (``chain_id``); give it the account's
key to trade, and a ``subaccount`` (1 to 1,000) to bind it to one of the account's subaccounts:
every read, write and stream of the client is then that subaccount's, and only transfers,
deposits and withdrawals name the owner. Writes (orders, cancels, deposits, withdrawals) are signed here with eth-account as
the venue's EIP-712 typed data and sent with ``account``, ``nonce``, ``expiry`` and
``signature``: the key never leaves the process and ``privateKey`` is never sent. Errors are the
exceptions of :mod:`dexd_client.errors`. Live streams are :meth:`Client.stream`
(:mod:`dexd_client.streams`).
"""

from __future__ import annotations

import json
import secrets
from decimal import Decimal
from typing import Any, Iterator, Optional

import requests

from .errors import Unavailable, error_from_answer
from .chain import request_withdrawal
from .liabilities import ProofCheck, check_proof, vault_of
from .signing import RequestSigner, canonical_decimal, pinned_eip712, subaccount_address
from .types import (AccountTrade, Asset, Balance, Candle, Level, Order, OrderBook, Page, Pair, Position, Trade,
                    Transfer)

#: Seconds to wait for an answer.
DEFAULT_TIMEOUT_SECONDS = 10.0
#: The highest subaccount number (contract version 5).
MAX_SUBACCOUNT = 1_000


class Client:
    """dexd's REST API for one chain, optionally as one account."""

    def __init__(self, base_url: str = "http://127.0.0.1:8080", chain_id: str | int = "1",
                 private_key: Optional[str] = None, timeout_seconds: float = DEFAULT_TIMEOUT_SECONDS,
                 session: Optional[requests.Session] = None, account: Optional[str] = None,
                 subaccount: int = 0, verifying_contract: Optional[str] = None):
        """``account``: trade for this account with ``private_key`` as its approved agent.
        ``subaccount``: bind the client to the account's subaccount of this number (0, the
        default, is the account itself). ``verifying_contract``: the venue contract to sign for
        (the domain's); when left out, the venue's first answer sets it and it is held."""
        if not 0 <= int(subaccount) <= MAX_SUBACCOUNT:
            raise ValueError(f"subaccount is 0 (the account itself) to {MAX_SUBACCOUNT}")
        self.base_url = base_url.rstrip("/")
        self.chain_id = str(chain_id)
        self.timeout_seconds = timeout_seconds
        self.subaccount = int(subaccount)
        self.verifying_contract = verifying_contract
        self._session = session or requests.Session()
        # The owner's signer moves funds (transfers, deposits, withdrawals); the trading signer
        # signs every order operation as the bound subaccount, with the same key.
        self._owner_signer = RequestSigner(private_key, account=account) if private_key else None
        self._signer = self._owner_signer
        if self._owner_signer is not None and self.subaccount:
            bound = subaccount_address(self._owner_signer.address, self.subaccount)
            self._signer = RequestSigner(private_key, account=bound)
        self._eip712: Optional[dict] = None
        self._assets: Optional[dict[str, dict]] = None

    def __repr__(self) -> str:  # never the key
        return (f"Client({self.base_url!r}, chain_id={self.chain_id!r}, account={self.address!r}, "
                f"subaccount={self.subaccount})")

    # -- plumbing -------------------------------------------------------------------------------

    @property
    def address(self) -> Optional[str]:
        """The address the client trades and reads as (its subaccount's, when bound to one),
        when the client has a key."""
        return self._signer.address if self._signer else None

    @property
    def owner_address(self) -> Optional[str]:
        """The owner's address (number 0), when the client has a key."""
        return self._owner_signer.address if self._owner_signer else None

    def _account(self, account: Optional[str]) -> str:
        account = account or self.address
        if account is None:
            raise ValueError("no account: give one, or make the client with private_key")
        return account

    def request(self, method: str, path: str, params: Optional[dict] = None, body: Optional[dict] = None) -> Any:
        """One call; the decoded JSON answer, or the contract's error as an exception."""
        query = {key: value for key, value in (params or {}).items() if value is not None}
        try:
            response = self._session.request(method, self.base_url + path, params=query, json=body,
                                             timeout=self.timeout_seconds)
        except requests.RequestException as error:
            raise Unavailable(0, "UNREACHABLE", f"{method} {path}: {type(error).__name__}") from None
        try:
            answer = response.json()
        except ValueError:
            answer = None
        if response.status_code != 200:
            raise error_from_answer(response.status_code, answer, response.headers.get("Retry-After"))
        return answer

    def _get(self, path: str, **params: Any) -> Any:
        return self.request("GET", path, {"chainId": self.chain_id, **params})

    def _signed_post(self, path: str, primary_type: str, message: dict, body: dict) -> Any:
        return self.request("POST", path, body={"chainId": self.chain_id, **body,
                                                **self._sign(primary_type, message)})

    def _sign(self, primary_type: str, message: dict, as_owner: bool = False) -> dict:
        """``account``, ``nonce``, ``expiry`` and ``signature`` of ``message``: as the bound
        subaccount, or ``as_owner`` (funds move only by the owner)."""
        signer = self._owner_signer if as_owner else self._signer
        if signer is None:
            raise ValueError("this client has no key: make it with private_key to sign writes")
        return signer.sign(self.eip712(), primary_type, message)

    def _owner_post(self, path: str, primary_type: str, message: dict, body: dict) -> Any:
        return self.request("POST", path, body={"chainId": self.chain_id, **body,
                                                **self._sign(primary_type, message, as_owner=True)})

    def eip712(self) -> dict:
        """The chain's EIP-712 domain and request types: read once, checked against the
        compiled-in domain and types and pinned to this client's chain and venue contract; a
        venue that publishes another is refused (:class:`~dexd_client.signing.SigningRefused`)
        and nothing is signed."""
        if self._eip712 is None:
            self._eip712 = pinned_eip712(self._get("/account/eip712"), self.chain_id, self.verifying_contract)
        return self._eip712

    # -- market data ----------------------------------------------------------------------------

    def assets(self) -> list[Asset]:
        answer = self._get("/account/assetsInfo")
        return [Asset(item["symbol"], item["name"], item["decimals"], item["address"], item["native"])
                for item in answer["assets"]]

    def custody(self) -> dict:
        """The chain's custody: ``{"mode": "ledger"}`` or the vault's address and confirmations."""
        return self._get("/account/assetsInfo")["custody"]

    def pairs(self) -> list[Pair]:
        return [Pair.from_json(item) for item in self._get("/account/assetPairs")["pairs"]]

    def order_book(self, pair: str, depth: int = 50) -> OrderBook:
        bids = self._get("/order/buyOrderbooks", pair=pair, depth=depth)
        asks = self._get("/order/sellOrderbooks", pair=pair, depth=depth)
        side = lambda answer: [Level(Decimal(level["price"]), Decimal(level["amount"]), level["orders"])
                               for level in answer["levels"]]
        return OrderBook(symbol=bids["symbol"], bids=side(bids), asks=side(asks), bids_sequence=bids["sequence"],
                         asks_sequence=asks["sequence"], timestamp=max(bids["timestamp"], asks["timestamp"]))

    def candles(self, pair: str, interval: str = "1m", start_time: Optional[int] = None,
                end_time: Optional[int] = None, limit: Optional[int] = None) -> list[Candle]:
        answer = self._get("/order/tradesOHCL", pair=pair, interval=interval, startTime=start_time,
                           endTime=end_time, limit=limit)
        return [Candle.from_json(item) for item in answer["candles"]]

    def candle_page(self, pair: str, interval: str = "1m", from_ms: int = 0, to_ms: Optional[int] = None,
                    limit: Optional[int] = None, cursor: Optional[str] = None) -> Page:
        """A page of a pair's candles paging forward from ``from_ms`` (oldest first), with the
        cursor of the next page while more remain: the whole history, from the first trade."""
        answer = self._get("/order/tradesOHCL", pair=pair, interval=interval, limit=limit, cursor=cursor,
                           **{"from": from_ms, "to": to_ms})
        return Page([Candle.from_json(item) for item in answer["candles"]], answer["nextCursor"])

    def all_candles(self, pair: str, interval: str = "1m", from_ms: int = 0,
                    to_ms: Optional[int] = None) -> Iterator[Candle]:
        """Every candle of a pair from ``from_ms`` (to ``to_ms``), oldest first, a page of 1,000 at
        a time."""
        cursor = None
        while True:
            page = self.candle_page(pair, interval, from_ms, to_ms, limit=1000, cursor=cursor)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    def trades_csv(self, pair: str, from_ms: Optional[int] = None, to_ms: Optional[int] = None) -> Iterator[str]:
        """Every trade of a pair within ``[from_ms, to_ms]`` as CSV lines, the header first, oldest
        first, read as the server streams them (``GET /market/trades.csv``)."""
        query = {"chainId": self.chain_id, "pair": pair, "from": from_ms, "to": to_ms}
        query = {key: value for key, value in query.items() if value is not None}
        with self._session.get(self.base_url + "/market/trades.csv", params=query, stream=True,
                               timeout=self.timeout_seconds) as response:
            if response.status_code != 200:
                raise error_from_answer(response.status_code, response.json(), response.headers.get("Retry-After"))
            for line in response.iter_lines(decode_unicode=True):
                if line:
                    yield line

    def trades(self, pair: str, limit: Optional[int] = None, cursor: Optional[str] = None,
               start_time: Optional[int] = None, end_time: Optional[int] = None) -> Page:
        answer = self._get("/order/tradeHistories", pair=pair, limit=limit, cursor=cursor, startTime=start_time,
                           endTime=end_time)
        return Page([Trade.from_json(item) for item in answer["trades"]], answer["nextCursor"])

    # -- the account's state --------------------------------------------------------------------

    def balances(self, account: Optional[str] = None) -> dict[str, Balance]:
        answer = self._get("/account/assetBalances", account=self._account(account))
        return {item["symbol"]: Balance.from_json(item) for item in answer["balances"]}

    def tradable_amounts(self, account: Optional[str] = None) -> list[dict]:
        return self._get("/account/tradableAmounts", account=self._account(account))["tradable"]

    def _orders(self, path: str, account: Optional[str], symbol: Optional[str], limit: Optional[int],
                cursor: Optional[str], start_time: Optional[int], end_time: Optional[int]) -> Page:
        answer = self._get(path, account=self._account(account), symbol=symbol, limit=limit, cursor=cursor,
                           startTime=start_time, endTime=end_time)
        return Page([Order.from_json(item) for item in answer["orders"]], answer["nextCursor"])

    def open_orders(self, symbol: Optional[str] = None, account: Optional[str] = None, limit: Optional[int] = None,
                    cursor: Optional[str] = None, start_time: Optional[int] = None,
                    end_time: Optional[int] = None) -> Page:
        return self._orders("/order/openOrders", account, symbol, limit, cursor, start_time, end_time)

    def filled_orders(self, symbol: Optional[str] = None, account: Optional[str] = None,
                      limit: Optional[int] = None, cursor: Optional[str] = None, start_time: Optional[int] = None,
                      end_time: Optional[int] = None) -> Page:
        return self._orders("/order/filledOrders", account, symbol, limit, cursor, start_time, end_time)

    def cancelled_orders(self, symbol: Optional[str] = None, account: Optional[str] = None,
                         limit: Optional[int] = None, cursor: Optional[str] = None,
                         start_time: Optional[int] = None, end_time: Optional[int] = None) -> Page:
        return self._orders("/order/cancelledOrders", account, symbol, limit, cursor, start_time, end_time)

    def order(self, order_id: str) -> Order:
        """An order by id (any account's), from ``/order/orderDetail``."""
        return Order.from_json(self._get("/order/orderDetail", orderId=order_id)["order"])

    def order_typed_data(self, order_id: str) -> dict:
        """The EIP-712 typed data an order's signature covers, to verify it independently."""
        return self._get("/order/orderDetail", orderId=order_id)["typedData"]

    def account_trades(self, pair: Optional[str] = None, account: Optional[str] = None,
                       limit: Optional[int] = None, cursor: Optional[str] = None,
                       start_time: Optional[int] = None, end_time: Optional[int] = None) -> Page:
        """The account's own fills, newest first."""
        answer = self._get("/order/accountTrades", account=self._account(account), pair=pair, limit=limit,
                           cursor=cursor, startTime=start_time, endTime=end_time)
        return Page([AccountTrade.from_json(item) for item in answer["trades"]], answer["nextCursor"])

    def position(self, pair: str, account: Optional[str] = None) -> Position:
        answer = self._get("/order/openPositions", pair=pair, account=self._account(account))
        position = answer["position"]
        return Position(
            symbol=answer["symbol"], net_amount=Decimal(position["netAmount"]),
            average_entry_price=Decimal(position["averageEntryPrice"]),
            mark_price=None if position["markPrice"] is None else Decimal(position["markPrice"]),
            realized_pnl=Decimal(position["realizedPnl"]), unrealized_pnl=Decimal(position["unrealizedPnl"]),
            base=Balance.from_json(position["base"]), quote=Balance.from_json(position["quote"]),
            open_orders=[Order.from_json(item) for item in answer["openOrders"]],
        )

    def deposits(self, account: Optional[str] = None, limit: Optional[int] = None,
                 cursor: Optional[str] = None) -> Page:
        answer = self._get("/portfolio/depositHistories", account=self._account(account), limit=limit, cursor=cursor)
        return Page([Transfer.from_json(item) for item in answer["deposits"]], answer["nextCursor"])

    def withdrawals(self, account: Optional[str] = None, limit: Optional[int] = None,
                    cursor: Optional[str] = None) -> Page:
        answer = self._get("/portfolio/withdrawHistories", account=self._account(account), limit=limit,
                           cursor=cursor)
        return Page([Transfer.from_json(item) for item in answer["withdrawals"]], answer["nextCursor"])

    def reserves(self) -> dict:
        return self._get("/account/reserves")

    def liability_proof(self, account: Optional[str] = None) -> dict:
        """The account's leaves and proofs in the newest committed liability root."""
        return self._get("/account/liabilityProof", account=self._account(account))

    def liability_roots(self, limit: Optional[int] = None, cursor: Optional[str] = None) -> dict:
        """The liability roots the vault committed, newest first."""
        return self._get("/account/liabilityRoots", limit=limit, cursor=cursor)

    def liability_leaves(self, epoch: int) -> list[dict]:
        """Every leaf of a committed root (the body is JSON lines)."""
        response = self._session.get(f"{self.base_url}/account/liabilityLeaves",
                                     params={"chainId": self.chain_id, "epoch": str(epoch)},
                                     timeout=self.timeout_seconds)
        if response.status_code != 200:
            raise error_from_answer(response.status_code, response.json(), response.headers.get("Retry-After"))
        return [json.loads(line) for line in response.text.splitlines() if line]

    def check_liabilities(self, rpc_url: str, account: Optional[str] = None) -> ProofCheck:
        """The account's proof, checked against the root read from the vault over ``rpc_url``:
        ``.holds`` is true when every leaf is in a root the guardian did not veto."""
        vault = vault_of(self.custody())
        if vault is None:
            raise ValueError("this chain has no vault: ledger chains commit no liability roots")
        return check_proof(self.liability_proof(account), rpc_url, vault, self.timeout_seconds)

    def all_pages(self, method, *args: Any, **kwargs: Any) -> Iterator[Any]:
        """Every item of a list method (``client.all_pages(client.trades, "ETH/USDC")``)."""
        cursor = None
        while True:
            page = method(*args, cursor=cursor, limit=1000, **kwargs)
            yield from page.items
            if page.next_cursor is None:
                return
            cursor = page.next_cursor

    # -- writes, signed here --------------------------------------------------------------------

    # Each write has a typed form and an ``*_answer`` form that returns the server's JSON as sent
    # (the CCXT class builds its structures from that).

    def add_order(self, symbol: str, direction: str, amount: Any, price: Any = None, type: Optional[str] = None,
                  time_in_force: Optional[str] = None, post_only: bool = False,
                  client_order_id: Optional[str] = None, trigger_price: Any = None,
                  trigger_condition: Optional[str] = None, oco_group: Optional[str] = None,
                  expires_at: Optional[int] = None) -> tuple[Order, list[Trade]]:
        """Places an order; a ``price`` makes it a limit order unless ``type`` says otherwise.

        Returns the order and the trades it made on arrival.
        """
        answer = self.add_order_answer(symbol, direction, amount, price, type, time_in_force, post_only,
                                       client_order_id, trigger_price, trigger_condition, oco_group, expires_at)
        return Order.from_json(answer["order"]), [Trade.from_json(item) for item in answer["trades"]]

    def add_order_answer(self, symbol: str, direction: str, amount: Any, price: Any = None,
                         type: Optional[str] = None, time_in_force: Optional[str] = None, post_only: bool = False,
                         client_order_id: Optional[str] = None, trigger_price: Any = None,
                         trigger_condition: Optional[str] = None, oco_group: Optional[str] = None,
                         expires_at: Optional[int] = None) -> dict:
        """:meth:`add_order`, answered as the server's JSON (``{"order", "trades"}``)."""
        message, body = self._order_terms(symbol, direction, amount, price, type, time_in_force, post_only,
                                          client_order_id, trigger_price, trigger_condition, oco_group,
                                          expires_at)
        return self._signed_post("/order/addOrder", "Order", message, body)

    def _order_terms(self, symbol: str, direction: str, amount: Any, price: Any = None, type: Optional[str] = None,
                     time_in_force: Optional[str] = None, post_only: bool = False,
                     client_order_id: Optional[str] = None, trigger_price: Any = None,
                     trigger_condition: Optional[str] = None, oco_group: Optional[str] = None,
                     expires_at: Optional[int] = None) -> tuple[dict, dict]:
        """An order's ``Order`` message (without the signed fields) and its request fields."""
        order_type = type or ("market" if price is None else "limit")
        time_in_force = (time_in_force or ("IOC" if order_type == "market" else "GTC")).upper()
        symbol = self._listed_pair(symbol)
        message = {
            "symbol": symbol, "orderType": order_type, "direction": direction.lower(), "timeInForce": time_in_force,
            "postOnly": bool(post_only), "price": "" if price is None else canonical_decimal(price),
            "amount": canonical_decimal(amount), "clientOrderId": client_order_id or "",
            "triggerPrice": "" if trigger_price is None else canonical_decimal(trigger_price),
            "triggerCondition": trigger_condition or "", "ocoGroup": oco_group or "",
            "expiresAt": int(expires_at or 0),
        }
        body = {"symbol": symbol, "type": order_type, "direction": direction.lower(),
                "amount": message["amount"], "timeInForce": time_in_force, "postOnly": bool(post_only)}
        if price is not None:
            body["price"] = message["price"]
        if client_order_id:
            body["clientOrderId"] = client_order_id
        if trigger_price is not None:
            body["triggerPrice"] = message["triggerPrice"]
        if trigger_condition:
            body["triggerCondition"] = trigger_condition
        if oco_group:
            body["ocoGroup"] = oco_group
        if expires_at:
            body["expiresAt"] = int(expires_at)
        return message, body

    def create_orders_answer(self, orders: list[dict]) -> dict:
        """Places 1 to 50 orders of one pair in one journaled step (``POST /order/batchOrders``).

        Each of ``orders`` holds :meth:`add_order`'s arguments by name (``symbol``, ``direction``,
        ``amount``, ``price``, ``type``, ``time_in_force``, ``post_only``, ``client_order_id``);
        the answer is the server's JSON: ``{"results": [...]}``, one
        ``{"order", "trades"}`` or ``{"error"}`` per order, in order. The batch is signed once
        (an ``OrderBatch``, contract version 4): one signature, however many orders.
        """
        if self._signer is None:
            raise ValueError("this client has no key: make it with private_key to sign writes")
        messages, items = [], []
        for order in orders:
            message, body = self._order_terms(**order)
            messages.append(message)
            items.append(body)
        signed = self._signer.sign_batch(self.eip712(), messages)
        return self.request("POST", "/order/batchOrders", body={"chainId": self.chain_id, **signed, "orders": items})

    def create_orders(self, orders: list[dict]) -> list[tuple[Order, list[Trade]] | Exception]:
        """:meth:`create_orders_answer`, typed: each result is ``(order, trades)`` or the error
        (an exception of :mod:`dexd_client.errors`, not raised)."""
        from .errors import error_from_answer
        answer = self.create_orders_answer(orders)
        results: list[tuple[Order, list[Trade]] | Exception] = []
        for result in answer["results"]:
            if "error" in result:
                results.append(error_from_answer(422, result, None))
            else:
                results.append((Order.from_json(result["order"]), [Trade.from_json(t) for t in result["trades"]]))
        return results

    def cancel_orders_answer(self, cancels: list[tuple[str, str]]) -> dict:
        """Cancels 1 to 50 orders, each ``(symbol, order_id)``, in one journaled step
        (``POST /order/batchCancel``); ``{"results": [{"order"} | {"error"}]}``."""
        items = []
        for symbol, order_id in cancels:
            message = {"symbol": self._listed_pair(symbol), "orderId": order_id}
            items.append({**message, **self._sign("CancelOrder", message)})
        return self.request("POST", "/order/batchCancel", body={"chainId": self.chain_id, "cancels": items})

    def cancel_all_answer(self, symbol: Optional[str] = None) -> dict:
        """Cancels every open order of the account on the chain, or on ``symbol``; ``{"orders"}``."""
        pair = self._listed_pair(symbol) if symbol else ""
        body = {"symbol": pair} if pair else {}
        return self._signed_post("/order/cancelAll", "CancelAll", {"symbol": pair}, body)

    def cancel_all(self, symbol: Optional[str] = None) -> list[Order]:
        return [Order.from_json(order) for order in self.cancel_all_answer(symbol)["orders"]]

    def amend_order_answer(self, symbol: str, order_id: str, price: Any = None, amount: Any = None) -> dict:
        """Replaces an open order by one with a new ``price`` and/or ``amount`` in one step;
        ``{"cancelled", "order", "trades"}``. If the new one is refused the old one stays."""
        if price is None and amount is None:
            raise ValueError("give price, amount or both")
        symbol = self._listed_pair(symbol)
        message = {"symbol": symbol, "orderId": order_id,
                   "price": "" if price is None else canonical_decimal(price),
                   "amount": "" if amount is None else canonical_decimal(amount)}
        body = {"symbol": symbol, "orderId": order_id}
        if price is not None:
            body["price"] = message["price"]
        if amount is not None:
            body["amount"] = message["amount"]
        return self._signed_post("/order/amendOrder", "AmendOrder", message, body)

    def amend_order(self, symbol: str, order_id: str, price: Any = None, amount: Any = None) -> Order:
        """:meth:`amend_order_answer`, typed: the new order."""
        return Order.from_json(self.amend_order_answer(symbol, order_id, price, amount)["order"])

    def cancel_all_after(self, timeout_ms: int) -> Optional[int]:
        """Arms the dead man's switch (5,000 to 86,400,000 ms; 0 turns it off): unless called again
        in time, every open order of the account on the chain is cancelled. The trigger time."""
        answer = self._signed_post("/order/cancelAllAfter", "CancelAllAfter", {"timeoutMs": int(timeout_ms)},
                                   {"timeoutMs": int(timeout_ms)})
        return answer["triggerAt"]

    def approve_agent(self, agent: str, name: str, valid_until_ms: Optional[int] = None) -> dict:
        """Approves ``agent`` (an address) to trade, never to move funds, for the account."""
        message = {"agent": agent, "name": name, "validUntil": valid_until_ms or 0}
        body = {"agent": agent, "name": name}
        if valid_until_ms:
            body["validUntil"] = valid_until_ms
        return self._signed_post("/account/approveAgent", "ApproveAgent", message, body)["agent"]

    def revoke_agent(self, agent: str) -> None:
        """Ends an agent's approval at once."""
        self._signed_post("/account/revokeAgent", "RevokeAgent", {"agent": agent}, {"agent": agent})

    def agents(self, account: Optional[str] = None) -> list[dict]:
        """The agents the account approved that have not ended."""
        return self._get("/account/agents", account=self._account(account))["agents"]

    def rate_limits(self, account: Optional[str] = None) -> dict:
        """The account's budget of state changes and its open orders (``GET /account/rateLimits``)."""
        return self._get("/account/rateLimits", account=self._account(account))

    def cancel_order(self, symbol: str, order_id: str) -> Order:
        return Order.from_json(self.cancel_order_answer(symbol, order_id)["order"])

    def cancel_order_answer(self, symbol: str, order_id: str) -> dict:
        """:meth:`cancel_order`, answered as the server's JSON (``{"order"}``)."""
        symbol = self._listed_pair(symbol)
        message = {"symbol": symbol, "orderId": order_id}
        return self._signed_post("/order/cancelOrder", "CancelOrder", message, dict(message))

    def deposit(self, symbol: str, quantity: Any) -> tuple[Transfer, Balance]:
        """A ledger-mode deposit (on a vault chain, send the tokens to the vault from a wallet)."""
        answer = self.deposit_answer(symbol, quantity)
        return Transfer.from_json(answer["deposit"]), Balance.from_json(answer["balance"])

    def deposit_answer(self, symbol: str, quantity: Any) -> dict:
        """:meth:`deposit`, answered as the server's JSON (``{"deposit", "balance"}``)."""
        asset = self._asset(symbol)
        message = {"symbol": asset["symbol"], "quantity": canonical_decimal(quantity)}
        body = {"from": self.owner_address, **message}
        return self._owner_post("/portfolio/deposit", "Deposit", message, body)

    def withdraw(self, symbol: str, quantity: Any) -> tuple[Transfer, Balance]:
        """A withdrawal: on a vault chain signed as the vault's own ``Withdrawal``, which the
        operator then pays on chain."""
        answer = self.withdraw_answer(symbol, quantity)
        return Transfer.from_json(answer["withdrawal"]), Balance.from_json(answer["balance"])

    def withdraw_answer(self, symbol: str, quantity: Any) -> dict:
        """:meth:`withdraw`, answered as the server's JSON (``{"withdrawal", "balance"}``)."""
        asset = self._asset(symbol)
        quantity_text = canonical_decimal(quantity)
        body = {"from": self.owner_address, "symbol": asset["symbol"], "quantity": quantity_text}
        if self.eip712()["primaryTypes"]["withdraw"] == "Withdrawal":
            units = int(Decimal(quantity_text).scaleb(asset["decimals"]))
            token = asset["address"] or "0x0000000000000000000000000000000000000000"
            message = {"token": token, "amount": units}
            return self._owner_post("/portfolio/withdraw", "Withdrawal", message, body)
        message = {"symbol": asset["symbol"], "quantity": quantity_text}
        return self._owner_post("/portfolio/withdraw", "Withdraw", message, body)

    # -- TWAP orders (contract version 5) ------------------------------------------------------

    def add_twap_answer(self, symbol: str, direction: str, amount: Any, duration_ms: int, interval_ms: int,
                        limit_price: Any = None, client_twap_id: Optional[str] = None) -> dict:
        """Starts a TWAP: every ``interval_ms`` (30,000 to 3,600,000, dividing ``duration_ms``,
        300,000 to 86,400,000) the venue places an immediate-or-cancel slice of what remains over
        the slices left, at ``limit_price`` or within 3 % of the best price; ``{"twap"}``. Sent
        again with the same ``client_twap_id`` (a fresh one is made when left out), the same TWAP
        is the answer and nothing starts again."""
        client_twap_id = client_twap_id or f"sdk-{secrets.token_hex(12)}"
        message = {"symbol": self._listed_pair(symbol), "direction": direction, "amount": canonical_decimal(amount),
                   "durationMs": int(duration_ms), "intervalMs": int(interval_ms),
                   "limitPrice": "" if limit_price is None else canonical_decimal(limit_price),
                   "clientTwapId": client_twap_id}
        body = {key: value for key, value in message.items() if value != ""}
        return self._signed_post("/order/addTwap", "Twap", message, body)

    def add_twap(self, symbol: str, direction: str, amount: Any, duration_ms: int, interval_ms: int,
                 limit_price: Any = None, client_twap_id: Optional[str] = None) -> dict:
        """:meth:`add_twap_answer`: the TWAP."""
        return self.add_twap_answer(symbol, direction, amount, duration_ms, interval_ms, limit_price,
                                    client_twap_id)["twap"]

    def cancel_twap(self, twap_id: str) -> dict:
        """Cancels a running TWAP of the account: no slice is placed after it. The TWAP."""
        message = {"twapId": int(twap_id)}
        return self._signed_post("/order/cancelTwap", "CancelTwap", message, {"twapId": str(twap_id)})["twap"]

    def twaps(self, account: Optional[str] = None) -> list[dict]:
        """The account's running TWAPs, then its last 20 finished ones, newest first."""
        return self._get("/order/twaps", account=self._account(account))["twaps"]

    # -- subaccounts (contract version 5) -------------------------------------------------------

    def transfer_answer(self, symbol: str, quantity: Any, from_subaccount: int, to_subaccount: int,
                        client_transfer_id: Optional[str] = None) -> dict:
        """Moves available funds between two of the owner's subaccounts (0, the owner, to 1000),
        signed by the owner; ``{"transfer"}``. Sending it again with the same
        ``client_transfer_id`` (a fresh one is made when left out) answers the first result and
        moves nothing again."""
        asset = self._asset(symbol)
        client_transfer_id = client_transfer_id or f"sdk-{secrets.token_hex(12)}"
        message = {"fromSubaccount": int(from_subaccount), "toSubaccount": int(to_subaccount),
                   "symbol": asset["symbol"], "quantity": canonical_decimal(quantity),
                   "clientTransferId": client_transfer_id}
        body = {"from": self.owner_address, **message}
        return self._owner_post("/account/transfer", "Transfer", message, body)

    def transfer(self, symbol: str, quantity: Any, from_subaccount: int, to_subaccount: int,
                 client_transfer_id: Optional[str] = None) -> dict:
        """:meth:`transfer_answer`: the transfer."""
        return self.transfer_answer(symbol, quantity, from_subaccount, to_subaccount, client_transfer_id)["transfer"]

    def transfers(self, subaccount: Optional[int] = None, limit: Optional[int] = None,
                  cursor: Optional[str] = None) -> Page:
        """The owner's transfers between its subaccounts, newest first (with ``subaccount``, only
        those from or to it)."""
        answer = self._get("/account/transfers", account=self._account(self.owner_address), subaccount=subaccount,
                           limit=limit, cursor=cursor)
        return Page(answer["transfers"], answer["nextCursor"])

    def subaccounts(self) -> list[dict]:
        """The owner (number 0) and its subaccounts that ever received funds, each with its
        address, open orders and balances."""
        return self._get("/account/subaccounts", account=self._account(self.owner_address))["subaccounts"]

    def request_withdrawal_on_chain(self, rpc_url: str, symbol: str, quantity: Any) -> int:
        """Asks the vault itself, from the account's own wallet over ``rpc_url``, for a withdrawal
        of ``quantity`` of ``symbol`` (contract version 5): what to do when the venue does not
        answer or refuses. The venue must serve it within the vault's request period, cancelling
        the account's orders as needed, or anyone may freeze the vault. Returns the vault's
        number of the request; :meth:`withdrawals` lists it with ``"requested": "chain"``."""
        if self._signer is None:
            raise ValueError("a request on chain is sent from the account's wallet: make the client with its key")
        vault = vault_of(self.custody())
        if vault is None:
            raise ValueError("this chain has no vault: ledger chains take no request on chain")
        asset = self._asset(symbol)
        units = int(Decimal(canonical_decimal(quantity)).scaleb(asset["decimals"]))
        token = asset["address"] or "0x0000000000000000000000000000000000000000"
        return request_withdrawal(rpc_url, vault, self._signer.local_account, token, units, self.timeout_seconds)

    def _asset(self, symbol: str) -> dict:
        if self._assets is None:
            self._assets = {item["symbol"].upper(): item for item in self._get("/account/assetsInfo")["assets"]}
        asset = self._assets.get(symbol.upper())
        if asset is None:
            from .errors import NotFound
            raise NotFound(404, "UNKNOWN_ASSET", f"no asset {symbol} on chain {self.chain_id}", "symbol")
        return asset

    def _listed_pair(self, symbol: str) -> str:
        """The pair as the venue lists it (the symbol is signed in that form)."""
        return symbol.upper()

    # -- streams --------------------------------------------------------------------------------

    def stream(self, reconnect: bool = True):
        """A live stream connection (async context manager) that reconnects, subscribes again
        and resyncs books on its own unless ``reconnect`` is false; see :mod:`dexd_client.streams`.
        Its ``orders`` and ``balances`` subscriptions default to the client's address (its
        subaccount's, when bound to one)."""
        from .streams import Stream
        return Stream(self.base_url, self.chain_id, reconnect=reconnect, account=self.address)
