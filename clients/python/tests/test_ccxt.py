"""The CCXT class against a live dexd: every unified method, checked against REST and against
CCXT's own structure tests (ccxt.test.exchange.base, shipped with the ccxt package)."""

from __future__ import annotations

import secrets

import ccxt
import pytest
import requests
from eth_account import Account
from ccxt.test.exchange.base.test_balance import test_balance as check_balance
from ccxt.test.exchange.base.test_currency import test_currency as check_currency
from ccxt.test.exchange.base.test_deposit_withdrawal import test_deposit_withdrawal as check_deposit_withdrawal
from ccxt.test.exchange.base.test_market import test_market as check_market
from ccxt.test.exchange.base.test_ohlcv import test_ohlcv as check_ohlcv
from ccxt.test.exchange.base.test_order import test_order as check_order
from ccxt.test.exchange.base.test_order_book import test_order_book as check_order_book
from ccxt.test.exchange.base.test_ticker import test_ticker as check_ticker
from ccxt.test.exchange.base.test_trade import test_trade as check_trade

from dexd_client.ccxt import dexd

SYMBOL = "ETH/USDC"


def exchange_for(dexd_url: str) -> dexd:
    key = "0x" + secrets.token_hex(32)
    return dexd({"walletAddress": Account.from_key(key).address, "privateKey": key,
                 "options": {"baseUrl": dexd_url, "chainId": "1"}})


def rest(dexd_url, path, **params):
    return requests.get(dexd_url + path, params={"chainId": "1", **params}).json()


@pytest.fixture(scope="module")
def traded(dexd_url):
    """Two accounts that traded: the maker's sell rests partly filled, the taker's buy filled."""
    maker, taker = exchange_for(dexd_url), exchange_for(dexd_url)
    maker.deposit("ETH", 3)
    taker.deposit("USDC", 20000)
    sell = maker.create_order(SYMBOL, "limit", "sell", 2, 2500, {"clientOrderId": "ccxt-maker-1"})
    buy = taker.create_order(SYMBOL, "market", "buy", 0.5)
    return maker, taker, sell, buy


def test_markets_and_currencies(dexd_url, traded):
    maker, _, _, _ = traded
    markets = maker.fetch_markets()
    pairs = rest(dexd_url, "/account/assetPairs")["pairs"]
    assert [market["symbol"] for market in markets] == [pair["symbol"] for pair in pairs]
    for market in markets:
        check_market(maker, {}, "fetchMarkets", market)
    eth_usdc = next(market for market in markets if market["symbol"] == SYMBOL)
    pair = next(pair for pair in pairs if pair["symbol"] == SYMBOL)
    assert eth_usdc["precision"]["price"] == float(pair["tickSize"])
    assert eth_usdc["precision"]["amount"] == float(pair["stepSize"])
    assert eth_usdc["limits"]["cost"]["min"] == float(pair["minNotional"])
    currencies = maker.fetch_currencies()
    assets = rest(dexd_url, "/account/assetsInfo")["assets"]
    assert sorted(currencies) == sorted(asset["symbol"] for asset in assets)
    for currency in currencies.values():
        check_currency(maker, {}, "fetchCurrencies", currency)
    assert currencies["USDC"]["precision"] == 0.000001


def test_public_market_data(dexd_url, traded):
    maker, _, _, _ = traded
    now = maker.milliseconds()
    book = maker.fetch_order_book(SYMBOL)
    check_order_book(maker, {}, "fetchOrderBook", book, SYMBOL)
    raw_asks = rest(dexd_url, "/order/sellOrderbooks", pair=SYMBOL)["levels"]
    assert book["asks"] == [[float(level["price"]), float(level["amount"])] for level in raw_asks]
    assert book["asks"][0] == [2500.0, 1.5]
    trades = maker.fetch_trades(SYMBOL)
    for trade in trades:
        check_trade(maker, {}, "fetchTrades", trade, SYMBOL, now, True)
    raw_trades = rest(dexd_url, "/order/tradeHistories", pair=SYMBOL)["trades"]
    assert sorted(trade["id"] for trade in trades) == sorted(trade["tradeId"] for trade in raw_trades)
    ohlcv = maker.fetch_ohlcv(SYMBOL, "1m")
    assert ohlcv, "the trade made a candle"
    for candle in ohlcv:
        check_ohlcv(maker, {}, "fetchOHLCV", candle, SYMBOL, now)
    raw_candles = rest(dexd_url, "/order/tradesOHCL", pair=SYMBOL, interval="1m")["candles"]
    assert ohlcv[-1][4] == float(raw_candles[-1]["close"])
    ticker = maker.fetch_ticker(SYMBOL)
    check_ticker(maker, {}, "fetchTicker", ticker, SYMBOL)
    assert ticker["last"] == 2500.0 and ticker["ask"] == 2500.0


def test_account_methods(dexd_url, traded):
    maker, taker, sell, buy = traded
    now = maker.milliseconds()
    for order in (sell, buy):
        check_order(maker, {}, "createOrder", order, SYMBOL, now)
    assert sell["status"] == "open" and sell["clientOrderId"] == "ccxt-maker-1"
    assert buy["status"] == "closed" and buy["filled"] == 0.5 and buy["average"] == 2500.0

    balance = taker.fetch_balance()
    check_balance(taker, {}, "fetchBalance", balance)
    raw = rest(dexd_url, "/account/assetBalances", account=taker.walletAddress)["balances"]
    for item in raw:
        assert balance[item["symbol"]]["total"] == float(item["total"])
        assert balance[item["symbol"]]["free"] == float(item["available"])
    assert balance["USDC"]["total"] == 20000 - 1250

    open_orders = maker.fetch_open_orders(SYMBOL)
    assert [order["id"] for order in open_orders] == [sell["id"]]
    for order in open_orders:
        check_order(maker, {}, "fetchOpenOrders", order, SYMBOL, now)
    assert open_orders[0]["filled"] == 0.5 and open_orders[0]["remaining"] == 1.5
    fetched = maker.fetch_order(sell["id"])
    check_order(maker, {}, "fetchOrder", fetched, SYMBOL, now)
    assert fetched["id"] == sell["id"] and fetched["status"] == "open"

    closed = taker.fetch_closed_orders(SYMBOL)
    assert [order["id"] for order in closed] == [buy["id"]]

    my_trades = maker.fetch_my_trades(SYMBOL)
    assert len(my_trades) == 1
    check_trade(maker, {}, "fetchMyTrades", my_trades[0], SYMBOL, now, False)
    assert my_trades[0]["order"] == sell["id"] and my_trades[0]["side"] == "sell"
    assert my_trades[0]["takerOrMaker"] == "maker" and my_trades[0]["fee"]["currency"] == "USDC"
    [taker_trade] = taker.fetch_my_trades()
    assert taker_trade["takerOrMaker"] == "taker" and taker_trade["side"] == "buy"
    assert taker_trade["fee"] == {"cost": 0.001, "currency": "ETH"}
    raw_fills = rest(dexd_url, "/order/accountTrades", account=taker.walletAddress)["trades"]
    assert [fill["tradeId"] for fill in raw_fills] == [taker_trade["id"]]

    cancelled = maker.cancel_order(sell["id"], SYMBOL)
    assert cancelled["status"] == "canceled"
    canceled = maker.fetch_canceled_orders(SYMBOL)
    assert [order["id"] for order in canceled] == [sell["id"]]
    for order in canceled:
        check_order(maker, {}, "fetchCanceledOrders", order, SYMBOL, now)
    assert maker.fetch_open_orders(SYMBOL) == []

    deposits = taker.fetch_deposits()
    assert [deposit["amount"] for deposit in deposits] == [20000.0]
    withdrawal = taker.withdraw("USDC", 100, taker.walletAddress)
    assert withdrawal["status"] == "ok" and withdrawal["amount"] == 100.0
    withdrawals = taker.fetch_withdrawals("USDC")
    assert [item["id"] for item in withdrawals] == [withdrawal["id"]]
    # Ledger mode moves nothing on chain: a transfer has no transaction (txid null, by the
    # contract); every other field is checked.
    for transaction in deposits + withdrawals:
        assert transaction["txid"] is None
        check_deposit_withdrawal(taker, {"txid": True}, "fetchDeposits", transaction, None, now)
    with pytest.raises(ccxt.BadRequest):
        taker.withdraw("USDC", 1, maker.walletAddress)


def test_create_order_options_and_errors(dexd_url):
    trader = exchange_for(dexd_url)
    with pytest.raises(ccxt.InsufficientFunds):
        trader.create_order(SYMBOL, "limit", "buy", 1, 1000)
    trader.deposit("USDC", 10000)
    ioc = trader.create_order(SYMBOL, "limit", "buy", 0.1, 10, {"timeInForce": "IOC"})
    assert ioc["status"] == "canceled" and ioc["timeInForce"] == "IOC"
    resting = trader.create_order(SYMBOL, "limit", "buy", 0.1, 1000, {"postOnly": True, "clientOrderId": "po-1"})
    assert resting["postOnly"] is True and resting["clientOrderId"] == "po-1"
    seller = exchange_for(dexd_url)
    seller.deposit("ETH", 1)
    with pytest.raises(ccxt.OrderImmediatelyFillable):
        seller.create_order(SYMBOL, "limit", "sell", 0.1, 900, {"postOnly": True})
    with pytest.raises(ccxt.OrderNotFillable):
        seller.create_order(SYMBOL, "limit", "sell", 1, 999, {"timeInForce": "FOK"})
    with pytest.raises(ccxt.DuplicateOrderId):
        trader.create_order(SYMBOL, "limit", "buy", 0.1, 1000, {"clientOrderId": "po-1"})
    with pytest.raises(ccxt.OrderNotFound):
        trader.cancel_order("0x" + "00" * 32, SYMBOL)
    with pytest.raises(ccxt.BadSymbol):
        trader.fetch_order_book("DOGE/USDC")


def test_stop_loss_take_profit_and_expiry_pass_ccxts_order_checks(dexd_url, traded):
    """CCXT's stopLossPrice / takeProfitPrice become trigger orders (a sell's stop below, its
    take-profit above the last price of the `traded` market), listed open until they fire;
    ``expiresAt`` and ``ocoGroup`` pass through."""
    trader = exchange_for(dexd_url)
    trader.deposit("ETH", 2)
    now = trader.milliseconds()
    last = float(rest(dexd_url, "/account/assetPairs")["pairs"][0]["lastPrice"])
    stop = trader.create_order(SYMBOL, "market", "sell", 1, None,
                               {"stopLossPrice": last - 100, "ocoGroup": f"exit-{now}"})
    check_order(trader, {}, "createOrder", stop, SYMBOL, now)
    assert stop["status"] == "open" and stop["info"]["status"] == "untriggered"
    assert stop["triggerPrice"] == last - 100 and stop["info"]["triggerCondition"] == "below"
    take_profit = trader.create_order(SYMBOL, "limit", "sell", 1, last + 200,
                                      {"takeProfitPrice": last + 100, "expiresAt": now + 3_600_000})
    assert take_profit["info"]["triggerCondition"] == "above"
    assert take_profit["info"]["expiresAt"] == now + 3_600_000
    open_ids = {order["id"] for order in trader.fetch_open_orders(SYMBOL)}
    assert {stop["id"], take_profit["id"]} <= open_ids
    with pytest.raises(ccxt.InvalidOrder, match="TRIGGER_ALREADY_MET"):
        trader.create_order(SYMBOL, "market", "sell", 1, None, {"stopLossPrice": last + 100})
    trader.cancel_all_orders(SYMBOL)
