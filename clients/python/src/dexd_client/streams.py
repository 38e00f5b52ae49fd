"""Live streams (``GET /ws``) with the websockets library: subscribe, then iterate messages.

The protocol (docs/streams.md) sends a snapshot, then every durable change with
``sequence``/``previousSequence``; this module keeps each book subscription's levels, checks
that no update is missing and verifies the CRC-32 checksum, raising :class:`StreamGap` when
either fails (resubscribe to recover). It does not reconnect by itself.
"""

from __future__ import annotations

import itertools
import json
import zlib
from decimal import Decimal
from typing import Any, AsyncIterator, Optional

import websockets


class StreamGap(Exception):
    """An update did not follow the one before it, or a checksum did not match."""


class StreamError(Exception):
    """The server's ``error`` event (for example ``SLOW_CONSUMER``)."""

    def __init__(self, code: str, message: str):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message


class Stream:
    """One WebSocket connection to dexd, as an async context manager and iterator."""

    def __init__(self, base_url: str, chain_id: str):
        self.url = base_url.replace("http://", "ws://").replace("https://", "wss://") + "/ws"
        self.chain_id = chain_id
        self._socket = None
        self._ids = itertools.count(1)
        self.books: dict[str, dict[str, dict[Decimal, Decimal]]] = {}
        self._book_sequences: dict[str, int] = {}

    async def __aenter__(self) -> "Stream":
        self._socket = await websockets.connect(self.url, max_size=2**24)
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self._socket.close()

    async def subscribe(self, channel: str, **params: Any) -> str:
        """Subscribes; returns the request id (the subscription's messages carry the channel)."""
        request_id = f"r{next(self._ids)}"
        await self._socket.send(json.dumps({"op": "subscribe", "id": request_id, "channel": channel,
                                            "chainId": self.chain_id, **params}))
        return request_id

    async def messages(self) -> AsyncIterator[dict]:
        """Every message, with book subscriptions checked and kept in :attr:`books`."""
        async for text in self._socket:
            message = json.loads(text)
            if message.get("event") == "error" and message.get("code") in ("SLOW_CONSUMER", "UNAVAILABLE"):
                raise StreamError(message["code"], message.get("message", ""))
            if message.get("channel") == "book" and message.get("event") in ("snapshot", "update"):
                self._apply_book(message)
            yield message

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
