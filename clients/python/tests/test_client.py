"""dexd_client.Client against a live dexd: a whole session signed locally, checked against REST
and against an independent recovery of the signatures."""

from __future__ import annotations

import asyncio
import secrets
from decimal import Decimal

import pytest
import requests
from eth_account import Account
from eth_account.messages import _hash_eip191_message, encode_typed_data

import dexd_client
from dexd_client import Client
from dexd_client.streams import checksum

from conftest import ALICE_KEY, BOB_KEY


def fresh_key() -> str:
    return "0x" + secrets.token_hex(32)


def test_session_signed_locally(dexd_url, spy):
    alice = Client(dexd_url, "1", private_key=fresh_key())
    bob = Client(dexd_url, "1", private_key=fresh_key())
    transfer, balance = alice.deposit("ETH", "2")
    assert transfer.status == "confirmed" and balance.total == Decimal("2")
    bob.deposit("usdc", "10000")

    sell, trades = alice.add_order("ETH/USDC", "sell", "1.5", "2500", client_order_id="alice-1")
    assert sell.status == "open" and trades == [] and sell.client_order_id == "alice-1"
    buy, trades = bob.add_order("eth/usdc", "buy", Decimal("1.0"), Decimal("2510.00"))
    assert len(trades) == 1 and trades[0].price == Decimal("2500") and trades[0].amount == Decimal("1")
    assert buy.status == "filled" and buy.average == Decimal("2500")

    # The book as the client reads it equals the raw REST answer.
    book = alice.order_book("ETH/USDC")
    raw = requests.get(f"{dexd_url}/order/sellOrderbooks", params={"chainId": "1", "pair": "ETH/USDC"}).json()
    assert [(str(level.price), str(level.amount)) for level in book.asks] == \
        [(level["price"], level["amount"]) for level in raw["levels"]]
    assert book.asks[0].amount == Decimal("0.5")

    # Fills: each side sees its own, with role and fee in the asset it received.
    [alice_fill] = alice.account_trades("ETH/USDC").items
    [bob_fill] = bob.account_trades().items
    assert alice_fill.role == "maker" and alice_fill.side == "sell" and alice_fill.fee_asset == "USDC"
    assert bob_fill.role == "taker" and bob_fill.side == "buy" and bob_fill.fee_asset == "ETH"
    assert alice_fill.order_id == sell.order_id and bob_fill.order_id == buy.order_id
    assert alice_fill.trade.trade_id == bob_fill.trade.trade_id == trades[0].trade_id
    assert bob_fill.fee == Decimal("0.002")  # 0.2 % taker fee of 1 ETH
    assert alice_fill.fee == Decimal("2.5")  # 0.1 % maker fee of 2500 USDC

    # Cancel the rest; histories agree.
    assert [order.order_id for order in alice.open_orders().items] == [sell.order_id]
    cancelled = alice.cancel_order("ETH/USDC", sell.order_id)
    assert cancelled.status == "cancelled" and cancelled.filled == Decimal("1")
    assert alice.open_orders().items == []
    assert [order.order_id for order in alice.cancelled_orders().items] == [sell.order_id]
    assert [order.order_id for order in bob.filled_orders().items] == [buy.order_id]
    assert [deposit.symbol for deposit in alice.deposits().items] == ["ETH"]
    withdrawal, balance = bob.withdraw("USDC", "100")
    assert withdrawal.status == "confirmed" and balance.total == Decimal("7400")
    assert [item.quantity for item in bob.withdrawals().items] == [Decimal("100")]
    assert bob.balances()["ETH"].total == Decimal("0.998")
    position = bob.position("ETH/USDC")
    assert position.net_amount == Decimal("1") and position.average_entry_price == Decimal("2500")
    assert any(request[0].endswith("/order/addOrder") for request in spy.requests)


def test_signatures_recover_to_the_account_independently(dexd_url):
    key = fresh_key()
    client = Client(dexd_url, "1", private_key=key)
    client.deposit("USDC", "1000")
    order, _ = client.add_order("ETH/USDC", "buy", "0.1", "1000", post_only=True)
    typed_data = client.order_typed_data(order.order_id)
    signable = encode_typed_data(full_message=typed_data)
    assert Account.recover_message(signable, signature=order.signature) == client.address
    # The order id is the EIP-712 digest the account signed.
    digest = _hash_eip191_message(signable)
    assert "0x" + bytes(digest).hex() == order.order_id


def test_errors_are_exceptions(dexd_url):
    client = Client(dexd_url, "1", private_key=fresh_key())
    with pytest.raises(dexd_client.InsufficientBalance) as raised:
        client.add_order("ETH/USDC", "buy", "1", "1000")
    assert raised.value.code == "INSUFFICIENT_BALANCE" and raised.value.status == 422
    client.deposit("USDC", "5000")
    client.add_order("ETH/USDC", "buy", "1", "1000")
    other = Client(dexd_url, "1", private_key=fresh_key())
    other.deposit("ETH", "1")
    with pytest.raises(dexd_client.Rejected) as raised:
        other.add_order("ETH/USDC", "sell", "0.5", "900", post_only=True)
    assert raised.value.code == "POST_ONLY_WOULD_TAKE"
    with pytest.raises(dexd_client.OrderNotFound):
        other.cancel_order("ETH/USDC", "0x" + "00" * 32)
    with pytest.raises(dexd_client.NotFound) as raised:
        Client(dexd_url, "99999").pairs()
    assert raised.value.code == "UNKNOWN_CHAIN"
    with pytest.raises(dexd_client.InvalidRequest):
        client.trades("ETH/USDC", limit=0)
    # The signer and the client never show the key.
    assert ALICE_KEY[2:] not in repr(Client(dexd_url, "1", private_key=ALICE_KEY))


def test_book_stream_is_gapless_and_checksummed(dexd_url):
    # Place orders on a pair from another thread while the stream runs.
    funded = Client(dexd_url, "1", private_key=fresh_key())
    funded.deposit("USDC", "100000")

    async def run_with_orders():
        async with funded.stream() as stream:
            await stream.subscribe("book", pair="WBTC/USDC", depth=25)
            updates = 0
            async for message in stream.messages():
                if message.get("event") == "snapshot":
                    for index in range(5):
                        await asyncio.to_thread(funded.add_order, "WBTC/USDC", "buy", "0.01", str(20000 + index))
                elif message.get("event") == "update":
                    updates += 1
                    if updates == 5:
                        return stream.books["WBTC/USDC"]

    book = asyncio.run(asyncio.wait_for(run_with_orders(), 20))
    rest = funded.order_book("WBTC/USDC", depth=25)
    assert book["bids"] == {level.price: level.amount for level in rest.bids}
    assert checksum(book) == checksum({"bids": {l.price: l.amount for l in rest.bids},
                                       "asks": {l.price: l.amount for l in rest.asks}})


def test_the_whole_history_pages_forward_and_streams_as_csv():
    # A server of its own: the session's is shared, and its trades are other tests' business.
    from conftest import running_dexd

    with running_dexd() as dexd_url:
        _whole_history(dexd_url)


def _whole_history(dexd_url):
    maker = Client(dexd_url, "1", private_key="0x" + secrets.token_hex(32))
    taker = Client(dexd_url, "1", private_key="0x" + secrets.token_hex(32))
    maker.deposit("ETH", "1")
    taker.deposit("USDC", "10000")
    maker.add_order("ETH/USDC", "sell", "0.5", "2000")
    for _ in range(3):
        taker.add_order("ETH/USDC", "buy", "0.01", type="market")
    lines = list(taker.trades_csv("ETH/USDC"))
    assert lines[0] == "tradeId,timestamp,price,amount,cost,takerDirection,makerOrderId,takerOrderId"
    ids = [int(line.split(",")[0]) for line in lines[1:]]
    assert ids == sorted(ids) and len(ids) >= 3
    paged = {trade.trade_id for trade in taker.all_pages(taker.trades, "ETH/USDC")}
    assert {str(trade_id) for trade_id in ids} == {str(trade_id) for trade_id in paged}
    candles = list(taker.all_candles("ETH/USDC", "1m"))
    assert sum(candle.trades for candle in candles) == len(ids)
