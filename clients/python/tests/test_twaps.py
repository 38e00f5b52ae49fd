"""TWAP orders through the SDK and the CCXT class against a live dexd (contract version 5): a
TWAP started once however often it is sent, its first slice placed at once and marked with the
TWAP, cancelled once; signed with the compiled-in ``Twap`` type, in a bound subaccount too."""

from __future__ import annotations

import secrets
import time

import pytest

from conftest import running_dexd
from dexd_client import Client
from dexd_client.ccxt import dexd
from dexd_client.errors import Conflict, Rejected

SYMBOL = "ETH/USDC"


def fresh_key() -> str:
    return "0x" + secrets.token_hex(32)


def wait_for_first_slice(client: Client) -> dict:
    for _ in range(200):
        twap = client.twaps()[0]
        if twap["slices"] >= 1:
            return twap
        time.sleep(0.05)
    raise AssertionError(f"no slice ran: {client.twaps()}")


def test_a_twap_starts_once_slices_at_once_and_is_cancelled_once():
    with running_dexd() as url:
        seller = Client(url, "1", private_key=fresh_key())
        seller.deposit("ETH", "5")
        seller.add_order(SYMBOL, "sell", "2", "2000")
        buyer = Client(url, "1", private_key=fresh_key())
        buyer.deposit("USDC", "10000")
        twap = buyer.add_twap(SYMBOL, "buy", "1", 300_000, 30_000, limit_price="2000", client_twap_id="dca-1")
        assert (twap["status"], twap["slicesPlanned"], twap["limitPrice"]) == ("running", 10, "2000")
        again = buyer.add_twap(SYMBOL, "buy", "1", 300_000, 30_000, limit_price="2000", client_twap_id="dca-1")
        assert again["twapId"] == twap["twapId"]
        with pytest.raises(Conflict):
            buyer.add_twap(SYMBOL, "buy", "2", 300_000, 30_000, client_twap_id="dca-1")
        ran = wait_for_first_slice(buyer)
        assert ran["filled"] == "0.1"
        slices = [order for order in buyer.filled_orders().items if order.twap_id == twap["twapId"]]
        assert [(order.amount, order.time_in_force) for order in slices] == [(slices[0].amount, "IOC")]
        assert str(slices[0].amount) == "0.1"
        cancelled = buyer.cancel_twap(twap["twapId"])
        assert cancelled["status"] == "cancelled"
        with pytest.raises(Conflict):
            buyer.cancel_twap(twap["twapId"])
        with pytest.raises(Rejected) as refused:
            buyer.add_twap(SYMBOL, "buy", "1", 300_000, 70_000)
        assert refused.value.code == "TWAP_OUT_OF_BOUNDS"


def test_the_ccxt_class_creates_fetches_and_cancels_a_twap_in_a_bound_subaccount(dexd_url):
    key = fresh_key()
    owner = Client(dexd_url, "1", private_key=key)
    owner.deposit("USDC", "3000")
    owner.transfer("USDC", "2000", 0, 4)
    exchange = dexd({"walletAddress": owner.address, "privateKey": key,
                     "options": {"baseUrl": dexd_url, "chainId": "1", "subaccount": 4}})
    exchange.load_markets()
    created = exchange.create_twap_order(SYMBOL, "buy", 0.5, 600_000,
                                         {"interval": 60_000, "price": 1000, "clientOrderId": "ccxt-twap"})
    assert (created["type"], created["status"], created["side"], created["amount"]) == ("twap", "open", "buy", 0.5)
    assert created["info"]["account"] == Client(dexd_url, "1", private_key=key, subaccount=4).address
    assert [twap["id"] for twap in exchange.fetch_twap_orders(SYMBOL)] == [created["id"]]
    assert owner.twaps() == []
    cancelled = exchange.cancel_twap_order(created["id"])
    assert cancelled["status"] == "canceled"
