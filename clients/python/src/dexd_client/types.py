"""Typed results: the contract's objects as frozen dataclasses, decimals as ``Decimal``.

Each ``from_json`` takes the object exactly as dexd sends it (docs/api.md, "Objects") and fails
loudly on a missing field rather than inventing one. This module does no IO.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, Optional, TypeVar

T = TypeVar("T")


def _decimal(value: Any) -> Decimal:
    return Decimal(value)


def _optional_decimal(value: Any) -> Optional[Decimal]:
    return None if value is None else Decimal(value)


def _camel_case(name: str) -> str:
    """The contract's name of a field: ``time_in_force`` is ``timeInForce``."""
    first, *rest = name.split("_")
    return first + "".join(part.title() for part in rest)


def _from_json(cls: type[T], data: dict) -> T:
    """A flat dataclass from the contract's object: every field read under its camelCase name
    (a missing one raises ``KeyError``), decimals as ``Decimal``."""
    values = {}
    for field in dataclasses.fields(cls):
        raw = data[_camel_case(field.name)]
        if field.type == "Decimal":
            values[field.name] = _decimal(raw)
        elif field.type == "Optional[Decimal]":
            values[field.name] = _optional_decimal(raw)
        else:
            values[field.name] = raw
    return cls(**values)


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
    cancel_reason: Optional[str]
    trigger_price: Optional[Decimal]
    trigger_condition: Optional[str]
    oco_group: Optional[str]
    expires_at: Optional[int]
    #: The TWAP this order is a slice of (``None`` for any other order).
    twap_id: Optional[str]
    timestamp: int
    updated_at: int
    signature: str

    @staticmethod
    def from_json(data: dict) -> "Order":
        return _from_json(Order, data)


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
        return _from_json(Trade, data)


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
        return _from_json(Balance, data)


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
        return _from_json(Transfer, data)


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
        return _from_json(Candle, data)


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
    #: The operator halted the pair: it takes cancels only.
    halted: bool

    @staticmethod
    def from_json(data: dict) -> "Pair":
        return _from_json(Pair, data)


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
