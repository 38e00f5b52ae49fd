"""Typed results: the contract's objects as frozen dataclasses, decimals as ``Decimal``.

Each ``from_json`` takes the object exactly as dexd sends it (docs/api.md, "Objects") and fails
loudly on a missing field rather than inventing one. This module does no IO.
"""

from __future__ import annotations

from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Optional


def _decimal(value: Any) -> Decimal:
    return Decimal(value)


def _optional_decimal(value: Any) -> Optional[Decimal]:
    return None if value is None else Decimal(value)


@dataclass(frozen=True)
class Order:
    order_id: str
    client_order_id: Optional[str]
    chain_id: str
    account: str
    symbol: str
    type: str
    direction: str
    time_in_force: str
    post_only: bool
    price: Optional[Decimal]
    amount: Decimal
    filled: Decimal
    remaining: Decimal
    cost: Decimal
    average: Optional[Decimal]
    fee: Decimal
    fee_asset: str
    status: str
    timestamp: int
    updated_at: int
    signature: str

    @staticmethod
    def from_json(data: dict) -> "Order":
        return Order(
            order_id=data["orderId"], client_order_id=data["clientOrderId"], chain_id=data["chainId"],
            account=data["account"], symbol=data["symbol"], type=data["type"], direction=data["direction"],
            time_in_force=data["timeInForce"], post_only=data["postOnly"], price=_optional_decimal(data["price"]),
            amount=_decimal(data["amount"]), filled=_decimal(data["filled"]), remaining=_decimal(data["remaining"]),
            cost=_decimal(data["cost"]), average=_optional_decimal(data["average"]), fee=_decimal(data["fee"]),
            fee_asset=data["feeAsset"], status=data["status"], timestamp=data["timestamp"],
            updated_at=data["updatedAt"], signature=data["signature"],
        )


@dataclass(frozen=True)
class Trade:
    trade_id: str
    chain_id: str
    symbol: str
    price: Decimal
    amount: Decimal
    cost: Decimal
    taker_direction: str
    maker_order_id: str
    taker_order_id: str
    timestamp: int

    @staticmethod
    def from_json(data: dict) -> "Trade":
        return Trade(
            trade_id=data["tradeId"], chain_id=data["chainId"], symbol=data["symbol"],
            price=_decimal(data["price"]), amount=_decimal(data["amount"]), cost=_decimal(data["cost"]),
            taker_direction=data["takerDirection"], maker_order_id=data["makerOrderId"],
            taker_order_id=data["takerOrderId"], timestamp=data["timestamp"],
        )


@dataclass(frozen=True)
class AccountTrade:
    """One of the account's own fills: the trade, and the account's side of it."""

    trade: Trade
    order_id: str
    role: str
    fee: Decimal
    fee_asset: str

    @property
    def side(self) -> str:
        """``buy`` or ``sell``: the account's direction in this fill."""
        taker_buys = self.trade.taker_direction == "buy"
        return "buy" if taker_buys == (self.role == "taker") else "sell"

    @staticmethod
    def from_json(data: dict) -> "AccountTrade":
        return AccountTrade(
            trade=Trade.from_json(data), order_id=data["orderId"], role=data["role"],
            fee=_decimal(data["fee"]), fee_asset=data["feeAsset"],
        )


@dataclass(frozen=True)
class Balance:
    symbol: str
    total: Decimal
    available: Decimal
    locked: Decimal

    @staticmethod
    def from_json(data: dict) -> "Balance":
        return Balance(symbol=data["symbol"], total=_decimal(data["total"]),
                       available=_decimal(data["available"]), locked=_decimal(data["locked"]))


@dataclass(frozen=True)
class Transfer:
    id: str
    chain_id: str
    account: str
    symbol: str
    quantity: Decimal
    status: str
    tx_hash: Optional[str]
    block_number: Optional[int]
    timestamp: int
    updated_at: int

    @staticmethod
    def from_json(data: dict) -> "Transfer":
        return Transfer(
            id=data["id"], chain_id=data["chainId"], account=data["account"], symbol=data["symbol"],
            quantity=_decimal(data["quantity"]), status=data["status"], tx_hash=data["txHash"],
            block_number=data["blockNumber"], timestamp=data["timestamp"], updated_at=data["updatedAt"],
        )


@dataclass(frozen=True)
class Level:
    price: Decimal
    amount: Decimal
    orders: int


@dataclass(frozen=True)
class OrderBook:
    """Both sides of a pair's book, best price first, each read at its own ``sequence``."""

    symbol: str
    bids: list[Level]
    asks: list[Level]
    bids_sequence: int
    asks_sequence: int
    timestamp: int


@dataclass(frozen=True)
class Candle:
    open_time: int
    open: Decimal
    high: Decimal
    low: Decimal
    close: Decimal
    volume: Decimal
    quote_volume: Decimal
    trades: int

    @staticmethod
    def from_json(data: dict) -> "Candle":
        return Candle(
            open_time=data["openTime"], open=_decimal(data["open"]), high=_decimal(data["high"]),
            low=_decimal(data["low"]), close=_decimal(data["close"]), volume=_decimal(data["volume"]),
            quote_volume=_decimal(data["quoteVolume"]), trades=data["trades"],
        )


@dataclass(frozen=True)
class Asset:
    symbol: str
    name: str
    decimals: int
    address: Optional[str]
    native: bool


@dataclass(frozen=True)
class Pair:
    symbol: str
    base: str
    quote: str
    tick_size: Decimal
    step_size: Decimal
    min_amount: Decimal
    min_notional: Decimal
    maker_fee: Decimal
    taker_fee: Decimal
    last_price: Optional[Decimal]

    @staticmethod
    def from_json(data: dict) -> "Pair":
        return Pair(
            symbol=data["symbol"], base=data["base"], quote=data["quote"], tick_size=_decimal(data["tickSize"]),
            step_size=_decimal(data["stepSize"]), min_amount=_decimal(data["minAmount"]),
            min_notional=_decimal(data["minNotional"]), maker_fee=_decimal(data["makerFee"]),
            taker_fee=_decimal(data["takerFee"]), last_price=_optional_decimal(data["lastPrice"]),
        )


@dataclass(frozen=True)
class Position:
    symbol: str
    net_amount: Decimal
    average_entry_price: Decimal
    mark_price: Optional[Decimal]
    realized_pnl: Decimal
    unrealized_pnl: Decimal
    base: Balance
    quote: Balance
    open_orders: list[Order]


@dataclass(frozen=True)
class Page:
    """One page of a list, and the cursor of the next (``None`` at the end)."""

    items: list[Any]
    next_cursor: Optional[str]
