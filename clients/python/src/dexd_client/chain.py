"""What the SDK sends to a vault chain from the account's own wallet, with no venue in the way:
a withdrawal asked for on chain (``requestWithdrawal(token, amount)``, contract version 5).

The venue must serve such a request within the vault's ``requestPeriod`` (a day by default),
through a final liability root; if it does not, anyone may freeze the vault and every account
exits. This module signs the transaction with the account's key and sends it over the chain's
JSON-RPC node; it never sends the key anywhere.
"""

from __future__ import annotations

import time
from typing import Any

import requests
from eth_abi import encode
from eth_account.signers.local import LocalAccount
from eth_utils import keccak, to_checksum_address

#: ``requestWithdrawal(address,uint256)``.
_REQUEST_SELECTOR = keccak(text="requestWithdrawal(address,uint256)")[:4]
#: ``WithdrawalRequested(uint256,address,address,uint256,uint256)``'s topic.
_REQUESTED_TOPIC = "0x" + keccak(text="WithdrawalRequested(uint256,address,address,uint256,uint256)").hex()


def _rpc(rpc_url: str, method: str, params: list, timeout_seconds: float) -> Any:
    answer = requests.post(rpc_url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params},
                           timeout=timeout_seconds).json()
    if "error" in answer:
        raise ValueError(f"the chain's node refused {method}: {answer['error']}")
    return answer["result"]


def request_withdrawal(rpc_url: str, vault: str, account: LocalAccount, token: str, units: int,
                       timeout_seconds: float = 10.0, wait_seconds: float = 120.0) -> int:
    """Sends ``requestWithdrawal(token, units)`` to ``vault`` from ``account`` and waits for it to be
    mined; returns the vault's number of the request. ``token`` is the zero address for the
    chain's native asset."""
    data = "0x" + (_REQUEST_SELECTOR + encode(["address", "uint256"], [to_checksum_address(token), units])).hex()
    call = {"from": account.address, "to": to_checksum_address(vault), "data": data}
    gas = int(_rpc(rpc_url, "eth_estimateGas", [call], timeout_seconds), 16)
    base_fee = int(_rpc(rpc_url, "eth_getBlockByNumber", ["latest", False], timeout_seconds)["baseFeePerGas"], 16)
    priority = int(_rpc(rpc_url, "eth_maxPriorityFeePerGas", [], timeout_seconds), 16)
    transaction = {
        "to": call["to"], "data": data, "value": 0, "gas": gas + gas // 4, "type": 2,
        "maxPriorityFeePerGas": priority, "maxFeePerGas": 2 * base_fee + priority,
        "chainId": int(_rpc(rpc_url, "eth_chainId", [], timeout_seconds), 16),
        "nonce": int(_rpc(rpc_url, "eth_getTransactionCount", [account.address, "pending"], timeout_seconds), 16),
    }
    signed = account.sign_transaction(transaction)
    raw = "0x" + signed.raw_transaction.hex().removeprefix("0x")
    transaction_hash = _rpc(rpc_url, "eth_sendRawTransaction", [raw], timeout_seconds)
    deadline = time.time() + wait_seconds
    while True:
        receipt = _rpc(rpc_url, "eth_getTransactionReceipt", [transaction_hash], timeout_seconds)
        if receipt is not None:
            break
        if time.time() > deadline:
            raise TimeoutError(f"the request {transaction_hash} was not mined in {wait_seconds} s")
        time.sleep(0.5)
    if int(receipt["status"], 16) != 1:
        raise ValueError(f"the vault refused the request (transaction {transaction_hash})")
    for log in receipt["logs"]:
        if log["topics"] and log["topics"][0].lower() == _REQUESTED_TOPIC.lower():
            return int(log["topics"][1], 16)
    raise ValueError(f"the transaction {transaction_hash} has no WithdrawalRequested event")
