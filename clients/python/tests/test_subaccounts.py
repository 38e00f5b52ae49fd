"""Subaccounts through the SDK and the CCXT class against a live dexd (contract version 5): a
client bound once to a subaccount trades, reads and streams as it (never as the owner), its
address is the venue's, transfers are answered once however often they are sent, and the CCXT
class's accounts and transfers pass CCXT's own structure checks."""

from __future__ import annotations

import asyncio
import secrets

import pytest
from ccxt.test.exchange.base.test_account import test_account as check_account
from ccxt.test.exchange.base.test_order import test_order as check_order
from ccxt.test.exchange.base.test_transfer import test_transfer as check_transfer
from eth_abi import encode
from eth_account import Account
from eth_utils import keccak, to_checksum_address

from dexd_client import Client
from dexd_client.ccxt import dexd
from dexd_client.errors import AuthenticationFailed, Conflict, InvalidRequest
from dexd_client.signing import subaccount_address

SYMBOL = "ETH/USDC"


def fresh_key() -> str:
    return "0x" + secrets.token_hex(32)


def test_the_subaccount_address_is_the_tail_of_the_abi_encodings_keccak():
    owner = "0x" + "07" * 20
    expected = to_checksum_address(keccak(encode(["address", "uint32"], [to_checksum_address(owner), 3]))[12:])
    assert subaccount_address(owner, 3) == expected
    assert subaccount_address(owner, 0) == to_checksum_address(owner)


def test_a_client_bound_to_a_subaccount_trades_reads_and_streams_as_it(dexd_url):
    key = fresh_key()
    owner = Client(dexd_url, "1", private_key=key)
    owner.deposit("USDC", "5000")
    moved = owner.transfer("USDC", "1200", 0, 3, client_transfer_id="fund-3")
    bound = Client(dexd_url, "1", private_key=key, subaccount=3)
    # The SDK's address of subaccount 3 is the venue's.
    assert bound.address == moved["to"] != owner.address
    assert bound.owner_address == owner.address
    listed = {item["subaccount"]: item["address"] for item in owner.subaccounts()}
    assert listed == {0: owner.address, 3: bound.address}

    # Every write and read of the bound client is the subaccount's.
    order, _ = bound.add_order(SYMBOL, "buy", "1", "1000", client_order_id="s3-bid")
    assert order.account == bound.address
    assert bound.balances()["USDC"].locked == 1000
    assert owner.balances()["USDC"].locked == 0
    assert [item.order_id for item in bound.open_orders().items] == [order.order_id]
    assert owner.open_orders().items == []

    async def first_balance_update():
        async with bound.stream(reconnect=False) as stream:
            await stream.subscribe("balances")
            await stream.subscribe("orders")
            seen = {}
            async for message in stream.messages():
                if message.get("event") in ("snapshot", "update"):
                    assert message["account"] == bound.address, message
                    seen[message["channel"]] = message
                    if message["channel"] == "orders" and message["event"] == "update":
                        return seen
                    if len(seen) == 2 and message["event"] == "snapshot" and "cancel" not in seen:
                        seen["cancel"] = True
                        bound.cancel_order(SYMBOL, order.order_id)

    seen = asyncio.run(asyncio.wait_for(first_balance_update(), 20))
    assert seen["orders"]["orders"][0]["status"] == "cancelled"
    assert bound.balances()["USDC"].locked == 0

    # Funds move only by the owner's transfer: sent again, the first result and nothing more.
    again = bound.transfer("USDC", "1200", 0, 3, client_transfer_id="fund-3")
    assert again == moved
    assert bound.balances()["USDC"].total == 1200
    with pytest.raises(Conflict) as reused:
        bound.transfer("USDC", "1", 0, 3, client_transfer_id="fund-3")
    assert reused.value.code == "TRANSFER_ID_REUSED"
    with pytest.raises(InvalidRequest):
        bound.transfer("USDC", "1", 3, 3)
    back = bound.transfer("USDC", "200", 3, 0)
    assert back["fromSubaccount"] == 3 and back["toSubaccount"] == 0
    assert [item["clientTransferId"] for item in owner.transfers().items] == [back["clientTransferId"], "fund-3"]


def test_an_agent_bound_to_a_subaccount_trades_there_and_never_transfers(dexd_url):
    owner = Client(dexd_url, "1", private_key=fresh_key())
    owner.deposit("USDC", "1000")
    owner.transfer("USDC", "500", 0, 9)
    bot_key = fresh_key()
    owner.approve_agent(Account.from_key(bot_key).address, "sub-9-bot")
    bot = Client(dexd_url, "1", private_key=bot_key, account=owner.address, subaccount=9)
    order, _ = bot.add_order(SYMBOL, "buy", "0.1", "1000")
    assert order.account == bot.address
    with pytest.raises(AuthenticationFailed):
        bot.transfer("USDC", "1", 9, 0)


def test_the_ccxt_class_bound_to_a_subaccount(dexd_url):
    key = fresh_key()
    address = Account.from_key(key).address
    owner = dexd({"walletAddress": address, "privateKey": key, "options": {"baseUrl": dexd_url, "chainId": "1"}})
    owner.load_markets()
    owner.deposit("USDC", 3000)
    moved = owner.transfer("USDC", 1000, "0", "2", {"clientTransferId": "ccxt-1"})
    check_transfer(owner, {}, "transfer", moved, "USDC")
    assert (moved["fromAccount"], moved["toAccount"], moved["amount"]) == ("0", "2", 1000)
    assert owner.transfer("USDC", 1000, "0", "2", {"clientTransferId": "ccxt-1"}) == moved

    accounts = owner.fetch_accounts()
    for account in accounts:
        check_account(owner, {}, "fetchAccounts", account)
    assert [account["id"] for account in accounts] == ["0", "2"]

    bound = dexd({"walletAddress": address, "privateKey": key,
                  "options": {"baseUrl": dexd_url, "chainId": "1", "subaccount": 2}})
    bound.load_markets()
    order = bound.create_order(SYMBOL, "limit", "buy", 0.5, 1000)
    check_order(bound, {}, "createOrder", order, SYMBOL, bound.milliseconds())
    assert order["info"]["account"] == accounts[1]["name"]
    assert bound.fetch_balance()["USDC"]["used"] == 500
    assert owner.fetch_balance()["USDC"]["used"] == 0
    assert [item["id"] for item in bound.fetch_open_orders(SYMBOL)] == [order["id"]]
    assert owner.fetch_open_orders(SYMBOL) == []
    transfers = bound.fetch_transfers("USDC")
    for transfer in transfers:
        check_transfer(bound, {}, "fetchTransfers", transfer, "USDC")
    assert [transfer["id"] for transfer in transfers] == [moved["id"]]
