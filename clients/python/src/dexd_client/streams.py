"""Live streams (``GET /ws``) with the websockets library: subscribe, then iterate messages.

The protocol (docs/streams.md) sends a snapshot, then every durable change with
``sequence``/``previousSequence``; this module keeps each book subscription's levels, checks
that no update is missing and verifies the CRC-32 checksum. By default it also survives: a lost
connection (the server restarted, the network dropped) is opened again with exponential backoff
and every subscription is made again (each starts over from a fresh snapshot); a book whose
update does not follow the one before, or whose checksum does not match, is resubscribed on the
spot, and its updates until the new snapshot are dropped. With ``reconnect=False`` it raises
:class:`StreamGap` and :class:`StreamError` instead.
"""

from __future__ import annotations

import asyncio
import itertools
import json
import zlib
from decimal import Decimal
from typing import Any, AsyncIterator, Optional

import websockets

#: The first wait before opening a lost connection again, in seconds; doubled at each failed try.
INITIAL_BACKOFF_S = 0.25
#: The longest wait between two tries, in seconds.
MAX_BACKOFF_S = 10.0


class StreamGap(Exception):
    """An update did not follow the one before it, or a checksum did not match."""


class StreamError(Exception):
    """The server's ``error`` event (for example ``SLOW_CONSUMER``)."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Stream:
    """One WebSocket connection to dexd, as an async context manager and iterator.

    ``reconnects`` counts the connections opened again, ``resyncs`` the books taken again after
    a gap or a checksum mismatch.
    """

    def __init__(self, base_url: str, chain_id: str, reconnect: bool = True,
                 initial_backoff_s: float = INITIAL_BACKOFF_S, max_backoff_s: float = MAX_BACKOFF_S,
                 account: Optional[str] = None):
        """``account``: what the ``orders`` and ``balances`` channels subscribe to when a
        subscription names none (a client bound to a subaccount gives its address)."""
        self.url = base_url.replace("http://", "ws://").replace("https://", "wss://") + "/ws"
        self.chain_id = chain_id
        self.account = account
        self.reconnect = reconnect
        self.initial_backoff_s = initial_backoff_s
        self.max_backoff_s = max_backoff_s
        self._socket = None
        self._ids = itertools.count(1)
        self.books: dict[str, dict[str, dict[Decimal, Decimal]]] = {}
        self._book_sequences: dict[str, int] = {}
        # Every subscription made, by its request id: made again after a reconnection.
        self._subscriptions: dict[str, tuple[str, dict]] = {}
        # Book subscriptions waiting for the snapshot of a resync; their updates are dropped.
        self._resyncing: set[str] = set()
        self.reconnects = 0
        self.resyncs = 0

    async def __aenter__(self) -> "Stream":
        self._socket = await websockets.connect(self.url, max_size=2**24)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        self._subscriptions.clear()
        await self._socket.close()

    async def subscribe(self, channel: str, **params: Any) -> str:
        """Subscribes; returns the request id (the subscription's messages carry it)."""
        request_id = f"r{next(self._ids)}"
        if channel in ("orders", "balances") and "account" not in params and self.account is not None:
            params = {**params, "account": self.account}
        self._subscriptions[request_id] = (channel, params)
        await self._send("subscribe", request_id)
        return request_id

    async def _send(self, op: str, request_id: str) -> None:
        channel, params = self._subscriptions[request_id]
        await self._socket.send(json.dumps({"op": op, "id": request_id, "channel": channel,
                                            "chainId": self.chain_id, **params}))

    async def messages(self) -> AsyncIterator[dict]:
        """Every message, with book subscriptions checked and kept in :attr:`books`; with
        ``reconnect``, across lost connections and resyncs."""
        backoff = self.initial_backoff_s
        while True:
            try:
                async for text in self._socket:
                    backoff = self.initial_backoff_s
                    message = json.loads(text)
                    if not await self._take(message):
                        continue
                    yield message
            except (websockets.ConnectionClosed, OSError):
                if not self.reconnect:
                    raise
            except StreamError:
                if not self.reconnect:
                    raise
                # The server ends a slow consumer's connection: open it again, from snapshots.
                await self._socket.close()
            if not self.reconnect:
                return
            await asyncio.sleep(backoff)
            backoff = min(backoff * 2, self.max_backoff_s)
            await self._reopen()

    async def _reopen(self) -> None:
        """Opens the connection again and makes every subscription again (a failed try is left
        to the next turn of :meth:`messages`)."""
        try:
            self._socket = await websockets.connect(self.url, max_size=2**24)
        except (OSError, websockets.InvalidHandshake, asyncio.TimeoutError):
            return
        self.reconnects += 1
        self.books.clear()
        self._book_sequences.clear()
        self._resyncing.clear()
        for request_id in list(self._subscriptions):
            await self._send("subscribe", request_id)

    async def _take(self, message: dict) -> bool:
        """Checks a message; false when it is to be dropped (an update of a book being
        resynced)."""
        if message.get("event") == "error" and message.get("code") in ("SLOW_CONSUMER", "UNAVAILABLE"):
            request_id = message.get("id")
            if self.reconnect and message["code"] == "UNAVAILABLE" and request_id in self._subscriptions:
                # That subscription ended (the stream fell behind the venue): take it again.
                await self._send("subscribe", request_id)
                return True
            raise StreamError(message["code"], message.get("message", ""))
        if message.get("channel") != "book" or message.get("event") not in ("snapshot", "update"):
            return True
        request_id = message.get("id")
        if request_id in self._resyncing:
            if message["event"] != "snapshot":
                return False
            self._resyncing.discard(request_id)
        try:
            self._apply_book(message)
        except StreamGap:
            if not self.reconnect or request_id not in self._subscriptions:
                raise
            self.resyncs += 1
            self._resyncing.add(request_id)
            self.books.pop(f'{message.get("pair")}', None)
            await self._send("unsubscribe", request_id)
            await self._send("subscribe", request_id)
            return False
        return True

    def _apply_book(self, message: dict) -> None:
        key = f'{message.get("pair")}'
        if message["event"] == "snapshot":
            self.books[key] = {"bids": {}, "asks": {}}
        elif self._book_sequences.get(key) != message.get("previousSequence"):
            raise StreamGap(f"book {key}: update after {message.get('previousSequence')}, "
                            f"last seen {self._book_sequences.get(key)}")
        book = self.books[key]
        for side in ("bids", "asks"):
            for level in message.get(side, []):
                price, amount = Decimal(level["price"]), Decimal(level["amount"])
                if amount == 0:
                    book[side].pop(price, None)
                else:
                    book[side][price] = amount
        self._book_sequences[key] = message["sequence"]
        if "checksum" in message and checksum(book) != message["checksum"]:
            raise StreamGap(f"book {key}: checksum mismatch at sequence {message['sequence']}")


def checksum(book: dict[str, dict[Decimal, Decimal]], levels: int = 25) -> int:
    """The protocol's checksum: CRC-32 of the top bids then the top asks, ``price:amount`` in
    canonical decimals, joined by ``|`` (docs/streams.md)."""
    bids = sorted(book["bids"].items(), reverse=True)[:levels]
    asks = sorted(book["asks"].items())[:levels]
    text = "|".join(f"{_text(price)}:{_text(amount)}" for price, amount in bids + asks)
    return zlib.crc32(text.encode())


def _text(value: Decimal) -> str:
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text
