"""EIP-712 signing of dexd's requests, locally, with eth-account.

The venue publishes its domain and types at ``GET /account/eip712``; :class:`RequestSigner`
signs a request's message with them and returns the fields that go in the request instead of
``privateKey`` (``account``, ``nonce``, ``expiry``, ``signature``). Values are signed in the
venue's canonical form (:func:`canonical_decimal`). The key stays in this process: nothing here
sends anything, and the signer never exposes the key in its ``repr``.
"""

from __future__ import annotations

import secrets
import time
from decimal import Decimal
from typing import Any, Optional

from eth_abi import encode as abi_encode
from eth_account import Account
from eth_account.signers.local import LocalAccount
from eth_utils import keccak, to_checksum_address

#: How long a signed request stays valid, well within the venue's one-hour limit.
DEFAULT_LIFETIME_MS = 60_000
# A withdrawal's signature lives longer: it is paid once a liability root covering it is past the
# vault's challenge period, and a vault chain refuses an expiry less than that wait ahead
# (``minWithdrawalLifetimeMs`` of ``GET /account/eip712``): it lives that wait and fifteen
# minutes more, at least fifteen minutes, at most the venue's ``maxWithdrawalLifetimeMs``.
WITHDRAWAL_LIFETIME_MS = 15 * 60_000


def withdrawal_lifetime_ms(eip712: dict) -> int:
    """How long a withdrawal's signature lives on the chain ``eip712`` describes."""
    lifetime = eip712.get("minWithdrawalLifetimeMs", 0) + WITHDRAWAL_LIFETIME_MS
    return min(lifetime, eip712.get("maxWithdrawalLifetimeMs", lifetime))


#: The domain's name and version every dexd request is signed under.
DOMAIN_NAME = "dexd"
DOMAIN_VERSION = "1"

#: Every request type's members, as dexd defines them (compiled in: what the venue publishes is
#: checked against these, never trusted in their place).
REQUEST_TYPES: dict[str, list[dict[str, str]]] = {
    name: [{"name": member, "type": kind} for member, kind in members]
    for name, members in {
        "Order": [("account", "address"), ("symbol", "string"), ("orderType", "string"), ("direction", "string"),
                  ("timeInForce", "string"), ("postOnly", "bool"), ("price", "string"), ("amount", "string"),
                  ("clientOrderId", "string"), ("nonce", "uint256"), ("expiry", "uint256"),
                  ("triggerPrice", "string"), ("triggerCondition", "string"), ("ocoGroup", "string"),
                  ("expiresAt", "uint256")],
        "OrderBatch": [("account", "address"), ("orders", "Order[]"), ("nonce", "uint256"), ("expiry", "uint256")],
        "CancelOrder": [("account", "address"), ("symbol", "string"), ("orderId", "bytes32"), ("nonce", "uint256"),
                        ("expiry", "uint256")],
        "Deposit": [("account", "address"), ("symbol", "string"), ("quantity", "string"), ("nonce", "uint256"),
                    ("expiry", "uint256")],
        "Withdraw": [("account", "address"), ("symbol", "string"), ("quantity", "string"), ("nonce", "uint256"),
                     ("expiry", "uint256")],
        "CancelAll": [("account", "address"), ("symbol", "string"), ("nonce", "uint256"), ("expiry", "uint256")],
        "AmendOrder": [("account", "address"), ("symbol", "string"), ("orderId", "bytes32"), ("price", "string"),
                       ("amount", "string"), ("nonce", "uint256"), ("expiry", "uint256")],
        "CancelAllAfter": [("account", "address"), ("timeoutMs", "uint256"), ("nonce", "uint256"),
                           ("expiry", "uint256")],
        "ApproveAgent": [("account", "address"), ("agent", "address"), ("name", "string"), ("validUntil", "uint256"),
                         ("nonce", "uint256"), ("expiry", "uint256")],
        "RevokeAgent": [("account", "address"), ("agent", "address"), ("nonce", "uint256"), ("expiry", "uint256")],
        "Transfer": [("account", "address"), ("fromSubaccount", "uint32"), ("toSubaccount", "uint32"),
                     ("symbol", "string"), ("quantity", "string"), ("clientTransferId", "string"),
                     ("nonce", "uint256"), ("expiry", "uint256")],
        "Twap": [("account", "address"), ("symbol", "string"), ("direction", "string"), ("amount", "string"),
                 ("durationMs", "uint256"), ("intervalMs", "uint256"), ("limitPrice", "string"),
                 ("clientTwapId", "string"), ("nonce", "uint256"), ("expiry", "uint256")],
        "CancelTwap": [("account", "address"), ("twapId", "uint256"), ("nonce", "uint256"), ("expiry", "uint256")],
        # The vault's own withdrawal type (vault chains), signed under the same domain.
        "Withdrawal": [("account", "address"), ("token", "address"), ("amount", "uint256"),
                       ("withdrawalId", "uint256"), ("expiry", "uint256")],
    }.items()
}


class SigningRefused(Exception):
    """A venue's signing description this client will not sign under (code ``DOMAIN_MISMATCH``)."""

    code = "DOMAIN_MISMATCH"

    def __init__(self, message: str):
        super().__init__(f"refusing to sign: {message}")


def pinned_eip712(published: dict, chain_id: str, verifying_contract: Optional[str] = None) -> dict:
    """The venue's ``published`` signing description with the compiled-in types, once its domain
    is dexd's, of ``chain_id``, and of ``verifying_contract`` when one is given; raises
    :class:`SigningRefused` otherwise, or when it publishes a type with other members."""
    domain = published["domain"]
    if domain.get("name") != DOMAIN_NAME or domain.get("version") != DOMAIN_VERSION:
        raise SigningRefused(f"the venue signs as {domain.get('name')!r} version {domain.get('version')!r}, "
                             "not dexd version 1")
    if str(domain.get("chainId")) != str(chain_id):
        raise SigningRefused(f"the venue publishes the domain of chain {domain.get('chainId')}; "
                             f"this client signs for chain {chain_id}")
    if verifying_contract is not None and \
            to_checksum_address(domain["verifyingContract"]) != to_checksum_address(verifying_contract):
        raise SigningRefused(f"the venue publishes the contract {domain['verifyingContract']}; "
                             f"this client signs for {verifying_contract}")
    for name, members in REQUEST_TYPES.items():
        theirs = published.get("types", {}).get(name)
        if theirs is not None and [(m["name"], m["type"]) for m in theirs] != [(m["name"], m["type"]) for m in members]:
            raise SigningRefused(f"the venue publishes the type {name} with other members than dexd's")
    return {**published, "types": {"EIP712Domain": published["types"]["EIP712Domain"], **REQUEST_TYPES}}


def subaccount_address(owner: str, number: int) -> str:
    """The address of ``owner``'s subaccount ``number`` (contract version 5): the last 20 bytes of
    ``keccak256(abi.encode(owner, uint32(number)))``; number 0 is the owner itself."""
    if number == 0:
        return to_checksum_address(owner)
    return to_checksum_address(keccak(abi_encode(["address", "uint32"], [to_checksum_address(owner), number]))[12:])


def canonical_decimal(value: Any) -> str:
    """A decimal in the venue's canonical form: no exponent, no trailing zeros, no sign.

    >>> canonical_decimal("1500.00"), canonical_decimal(Decimal("0.50")), canonical_decimal(2)
    ('1500', '0.5', '2')
    """
    number = Decimal(str(value))
    if not number.is_finite() or number < 0:
        raise ValueError(f"not a non-negative decimal: {value!r}")
    text = format(number.normalize(), "f")
    if "." in text:
        text = text.rstrip("0").rstrip(".")
    return text or "0"


class RequestSigner:
    """Signs requests for one account with the venue's published EIP-712 types.

    With ``account``, the key is an *agent* the account approved (``POST /account/approveAgent``):
    it signs the account's requests with its own key, and the venue lets it trade (never move
    funds) for the account.
    """

    def __init__(self, private_key: str, lifetime_ms: int = DEFAULT_LIFETIME_MS, account: Optional[str] = None):
        self._account: LocalAccount = Account.from_key(private_key)
        self._acting_for = account
        self.lifetime_ms = lifetime_ms

    def __repr__(self) -> str:  # never the key
        return f"RequestSigner(address={self.address}, key_address={self.key_address})"

    @property
    def address(self) -> str:
        """The EIP-55 address of the account the requests are for."""
        return self._acting_for or self._account.address

    @property
    def local_account(self) -> LocalAccount:
        """The key's account, to sign a chain transaction from the account's own wallet: never an
        agent's, since the vault pays whoever sends a request on chain."""
        if self._acting_for is not None and self._acting_for.lower() != self._account.address.lower():
            raise ValueError("an agent cannot ask the vault for the account's withdrawal: the account sends it")
        return self._account

    @property
    def key_address(self) -> str:
        """The key's own address (an agent's, when the signer acts for another account)."""
        return self._account.address

    def sign(self, eip712: dict, primary_type: str, message: dict, nonce: Optional[int] = None,
             expiry_ms: Optional[int] = None) -> dict:
        """Signs ``message`` (without account, nonce, expiry) as ``primary_type``.

        Returns the request fields ``account``, ``nonce`` (decimal digits), ``expiry`` and
        ``signature``. A fresh random 128-bit nonce is used unless one is given.
        """
        nonce = secrets.randbits(128) if nonce is None else nonce
        if expiry_ms is None:
            lifetime_ms = max(self.lifetime_ms, withdrawal_lifetime_ms(eip712)) if primary_type == "Withdrawal" \
                else self.lifetime_ms
            expiry_ms = int(time.time() * 1000) + lifetime_ms
        full = {"account": self.address, **message, "nonce": nonce, "expiry": expiry_ms}
        if primary_type == "Withdrawal":
            # The vault's own type: the id is the nonce.
            full = {"account": self.address, **message, "withdrawalId": nonce, "expiry": expiry_ms}
        signature = self.sign_typed(eip712, primary_type, full)
        return {"account": self.address, "nonce": str(nonce), "expiry": expiry_ms, "signature": signature}

    def sign_batch(self, eip712: dict, orders: list[dict], nonce: Optional[int] = None,
                   expiry_ms: Optional[int] = None) -> dict:
        """Signs 1 to 50 orders (each an ``Order`` message without account, nonce, expiry) once,
        as an ``OrderBatch`` (contract version 4): each order carries the batch's nonce and
        expiry. Returns the request's top-level ``account``, ``nonce``, ``expiry`` and
        ``signature``; the items then carry none."""
        nonce = secrets.randbits(128) if nonce is None else nonce
        expiry_ms = int(time.time() * 1000) + self.lifetime_ms if expiry_ms is None else expiry_ms
        full_orders = [{"account": self.address, **order, "nonce": nonce, "expiry": expiry_ms} for order in orders]
        batch = {"account": self.address, "orders": full_orders, "nonce": nonce, "expiry": expiry_ms}
        signature = self.sign_typed(eip712, "OrderBatch", batch)
        return {"account": self.address, "nonce": str(nonce), "expiry": expiry_ms, "signature": signature}

    def sign_typed(self, eip712: dict, primary_type: str, message: dict) -> str:
        """The 65-byte signature (0x + 130 hex) of ``message`` under the published domain."""
        types = {"EIP712Domain": eip712["types"]["EIP712Domain"], primary_type: eip712["types"][primary_type]}
        if primary_type == "OrderBatch":
            types["Order"] = eip712["types"]["Order"]
        signed = Account.sign_typed_data(
            self._account.key,
            full_message={
                "types": types,
                "primaryType": primary_type,
                "domain": eip712["domain"],
                "message": message,
            },
        )
        return "0x" + bytes(signed.signature).hex()
