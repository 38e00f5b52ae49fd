"""What a market maker uses, through the SDK and the CCXT class against a live dexd: an agent key
trading for an account (and refused a withdrawal), batches of orders and cancels, amend, cancel
all and the dead man's switch, every write signed locally; the CCXT results pass CCXT's own
order structure test."""

from __future__ import annotations

import secrets
import time
from decimal import Decimal

import ccxt
import pytest
from eth_account import Account
from ccxt.test.exchange.base.test_order import test_order as check_order

from dexd_client import Client
from dexd_client.ccxt import dexd
from dexd_client.errors import AuthenticationFailed, InsufficientBalance

SYMBOL = "ETH/USDC"


def fresh_key() -> str:
    return "0x" + secrets.token_hex(32)


def quote(direction: str, price: str, amount: str = "0.1", **extra) -> dict:
    return {"symbol": SYMBOL, "direction": direction, "amount": amount, "price": price, **extra}


def test_an_agent_key_trades_for_the_account_in_batches_and_never_withdraws(dexd_url):
    account = Client(dexd_url, "1", private_key=fresh_key())
    account.deposit("USDC", "10000")
    account.deposit("ETH", "5")
    bot_key = fresh_key()
    bot_address = Account.from_key(bot_key).address
    approved = account.approve_agent(bot_address, "mm-bot", valid_until_ms=int(time.time() * 1000) + 3_600_000)
    assert approved["agent"] == bot_address
    assert [agent["name"] for agent in account.agents()] == ["mm-bot"]

    bot = Client(dexd_url, "1", private_key=bot_key, account=account.address)
    assert bot.address == account.address
    results = bot.create_orders([quote("buy", "2400"), quote("buy", "2390"), quote("sell", "2600"),
                                 quote("buy", "2000", amount="100")])
    placed = [result for result in results if not isinstance(result, Exception)]
    assert len(placed) == 3
    assert all(order.account == account.address for order, _ in placed)
    assert isinstance(results[3], InsufficientBalance)
    # The batch was signed once (an OrderBatch): every order carries its one signature, and each
    # order's detail holds its place among the batch's four orders.
    assert len({order.signature for order, _ in placed}) == 1
    details = [bot._get("/order/orderDetail", chainId="1", orderId=order.order_id) for order, _ in placed]
    assert [detail["batch"]["index"] for detail in details] == [0, 1, 2]
    assert all(len(detail["batch"]["orderHashes"]) == 4 for detail in details)
    assert {order.order_id for order in account.open_orders().items} == {order.order_id for order, _ in placed}

    amended = bot.amend_order(SYMBOL, placed[0][0].order_id, price="2405")
    assert amended.price == Decimal("2405") and amended.order_id != placed[0][0].order_id
    cancels = bot.cancel_orders_answer([(SYMBOL, amended.order_id), (SYMBOL, placed[0][0].order_id)])
    assert cancels["results"][0]["order"]["status"] == "cancelled"
    assert cancels["results"][1]["error"]["code"] == "ORDER_NOT_OPEN"
    assert len(bot.cancel_all(SYMBOL)) == 2
    assert account.open_orders().items == []

    trigger = bot.cancel_all_after(5_000)
    assert trigger > time.time() * 1000
    assert bot.cancel_all_after(0) is None
    with pytest.raises(AuthenticationFailed):
        bot.withdraw("USDC", "1")
    account.revoke_agent(bot_address)
    assert account.agents() == []
    with pytest.raises(AuthenticationFailed) as refused:
        bot.add_order(SYMBOL, "buy", "0.1", "2000")
    assert refused.value.code == "AGENT_NOT_ALLOWED"


def test_the_ccxt_class_batches_edits_and_cancels_all_as_an_agent(dexd_url):
    owner_key = fresh_key()
    owner = Client(dexd_url, "1", private_key=owner_key)
    owner.deposit("USDC", "10000")
    agent_key = fresh_key()
    owner.approve_agent(Account.from_key(agent_key).address, "ccxt-bot")
    exchange = dexd({"walletAddress": owner.address, "privateKey": agent_key,
                     "options": {"baseUrl": dexd_url, "chainId": "1"}})
    assert exchange.has["createOrders"] and exchange.has["cancelAllOrdersAfter"]
    now = exchange.milliseconds()
    orders = exchange.create_orders([
        {"symbol": SYMBOL, "type": "limit", "side": "buy", "amount": 0.1, "price": 2400},
        {"symbol": SYMBOL, "type": "limit", "side": "buy", "amount": 0.1, "price": 2390,
         "params": {"clientOrderId": "ccxt-q2"}},
        {"symbol": SYMBOL, "type": "limit", "side": "buy", "amount": 1000, "price": 2380},
    ])
    for order in orders[:2]:
        check_order(exchange, {}, "createOrders", order, SYMBOL, now)
        assert order["status"] == "open"
    assert orders[2]["status"] == "rejected"
    assert orders[2]["info"]["error"]["code"] == "INSUFFICIENT_BALANCE"
    edited = exchange.edit_order(orders[1]["id"], SYMBOL, "limit", "buy", price=2395)
    check_order(exchange, {}, "editOrder", edited, SYMBOL, now)
    assert edited["price"] == 2395 and edited["clientOrderId"] == "ccxt-q2" and edited["id"] != orders[1]["id"]
    cancelled = exchange.cancel_orders([orders[0]["id"]], SYMBOL)
    assert cancelled[0]["status"] == "canceled"
    switch = exchange.cancel_all_orders_after(10_000)
    assert switch["triggerAt"] >= now + 10_000
    remaining = exchange.cancel_all_orders(SYMBOL)
    assert [order["id"] for order in remaining] == [edited["id"]]
    assert exchange.fetch_open_orders(SYMBOL) == []
    with pytest.raises(ccxt.PermissionDenied):
        exchange.withdraw("USDC", 1, owner.address)
