"""The stream client survives: a server killed and started again under a subscribed book, and an
update lost on the way (injected), both end with the book REST shows."""

from __future__ import annotations

import asyncio
import re
import secrets
import signal
import subprocess
import tempfile
import time
from pathlib import Path

from conftest import dexd_binary
from dexd_client import Client
from dexd_client.streams import checksum


def fresh_key() -> str:
    return "0x" + secrets.token_hex(32)


def start_dexd(listen: str, data_dir: Path, log_path: Path) -> tuple[subprocess.Popen, str]:
    """A dexd serving on ``listen`` over ``data_dir``, and its base URL once it is ready."""
    with open(log_path, "w") as log:
        server = subprocess.Popen([str(dexd_binary()), "serve", "--listen", listen, "--data-dir", str(data_dir)],
                                  stdout=log, stderr=subprocess.STDOUT)
    for _ in range(600):
        text = log_path.read_text()
        match = re.search(r"address=([0-9.:]+)", text)
        if match and "dexd ready" in text:
            return server, f"http://{match.group(1)}"
        if server.poll() is not None:
            break
        time.sleep(0.05)
    raise RuntimeError("dexd did not start:\n" + log_path.read_text())


def rest_book(client: Client, pair: str) -> dict:
    book = client.order_book(pair, depth=25)
    return {"bids": {level.price: level.amount for level in book.bids},
            "asks": {level.price: level.amount for level in book.asks}}


async def book_equal_to_rest(stream, client: Client, pair: str, timeout_s: float) -> dict:
    """Reads the stream until its book of ``pair`` is the one REST shows, and returns it."""
    async def read():
        async for message in stream.messages():
            if message.get("channel") == "book" and message.get("event") in ("snapshot", "update"):
                book = stream.books.get(pair)
                if book is not None and book == await asyncio.to_thread(rest_book, client, pair):
                    return book
    return await asyncio.wait_for(read(), timeout_s)


def test_a_book_stream_survives_a_server_killed_and_started_again():
    with tempfile.TemporaryDirectory() as work:
        data_dir = Path(work) / "data"
        server, url = start_dexd("127.0.0.1:0", data_dir, Path(work) / "log-1")
        listen = url.removeprefix("http://")
        trader = Client(url, "1", private_key=fresh_key())
        trader.deposit("USDC", "100000")
        trader.add_order("WBTC/USDC", "buy", "0.01", "20000")
        try:
            async def run():
                async with Client(url, "1").stream() as stream:
                    stream.initial_backoff_s = 0.1
                    await stream.subscribe("book", pair="WBTC/USDC", depth=25)
                    await book_equal_to_rest(stream, trader, "WBTC/USDC", 20)
                    # The server dies at once; what it acknowledged survives the restart.
                    server.send_signal(signal.SIGKILL)
                    server.wait(timeout=30)
                    restarted, _ = await asyncio.to_thread(start_dexd, listen, data_dir, Path(work) / "log-2")
                    try:
                        for index in range(3):
                            await asyncio.to_thread(trader.add_order, "WBTC/USDC", "buy", "0.01", str(20001 + index))
                        book = await book_equal_to_rest(stream, trader, "WBTC/USDC", 30)
                        assert stream.reconnects >= 1
                        assert len(book["bids"]) == 4
                        assert checksum(book) == checksum(rest_book(trader, "WBTC/USDC"))
                    finally:
                        restarted.terminate()
                        restarted.wait(timeout=30)

            asyncio.run(run())
        finally:
            if server.poll() is None:
                server.kill()


def test_a_lost_update_is_noticed_and_the_book_taken_again(dexd_url):
    trader = Client(dexd_url, "1", private_key=fresh_key())
    trader.deposit("USDC", "100000")

    async def run():
        async with Client(dexd_url, "1").stream() as stream:
            request_id = await stream.subscribe("book", pair="WBTC/USDC", depth=25)
            async for message in stream.messages():
                if message.get("event") == "snapshot" and message.get("id") == request_id:
                    break
            # An update lost on the way: the stream's last sequence falls one behind, so the
            # next update does not follow it.
            stream._book_sequences["WBTC/USDC"] -= 1
            await asyncio.to_thread(trader.add_order, "WBTC/USDC", "buy", "0.01", "19000")
            await asyncio.to_thread(trader.add_order, "WBTC/USDC", "buy", "0.01", "19001")
            book = await book_equal_to_rest(stream, trader, "WBTC/USDC", 20)
            assert stream.resyncs == 1, "the gap was seen once and repaired by a new snapshot"
            return book

    book = asyncio.run(run())
    assert book == rest_book(trader, "WBTC/USDC")


def test_without_reconnect_a_gap_is_an_error(dexd_url):
    from dexd_client.streams import StreamGap
    trader = Client(dexd_url, "1", private_key=fresh_key())
    trader.deposit("USDC", "100000")

    async def run():
        async with Client(dexd_url, "1").stream(reconnect=False) as stream:
            await stream.subscribe("book", pair="WBTC/USDC", depth=25)
            async for message in stream.messages():
                if message.get("event") == "snapshot":
                    stream._book_sequences["WBTC/USDC"] -= 1
                    await asyncio.to_thread(trader.add_order, "WBTC/USDC", "buy", "0.01", "18000")

    try:
        asyncio.run(asyncio.wait_for(run(), 20))
    except StreamGap:
        return
    raise AssertionError("the gap was not raised")
