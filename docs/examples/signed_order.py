"""Trading on dexd without sending a private key: sign each request with eth-account.

    pip install eth-account==0.13.7 requests
    python docs/examples/signed_order.py http://127.0.0.1:8080

Deposits 5000 USDC, places a limit buy and cancels it, all signed locally; the key never leaves
this process. The venue publishes the EIP-712 domain and types at GET /account/eip712.
"""

import json
import secrets
import sys
import time
import urllib.request

from eth_account import Account

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
CHAIN_ID = "1"
account = Account.from_key("0x" + "5c" * 32)


def call(method, path, body=None):
    request = urllib.request.Request(
        BASE + path,
        method=method,
        data=None if body is None else json.dumps(body).encode(),
        headers={"content-type": "application/json"},
    )
    try:
        with urllib.request.urlopen(request) as response:
            return json.load(response)
    except urllib.error.HTTPError as error:
        raise SystemExit(f"{path}: {error.code} {error.read().decode()}")


eip712 = call("GET", f"/account/eip712?chainId={CHAIN_ID}")


def sign(primary_type, message):
    """Adds account, nonce and expiry to the message, signs it, returns the request fields."""
    nonce = secrets.randbits(128)  # any uint256, once per account while the request is live
    expiry = int(time.time() * 1000) + 60_000  # ms; at most maxLifetimeMs ahead
    message = {"account": account.address, **message, "nonce": nonce, "expiry": expiry}
    signed = Account.sign_typed_data(
        account.key,
        full_message={
            "types": {
                "EIP712Domain": eip712["types"]["EIP712Domain"],
                primary_type: eip712["types"][primary_type],
            },
            "primaryType": primary_type,
            "domain": eip712["domain"],
            "message": message,
        },
    )
    signature = "0x" + signed.signature.hex().removeprefix("0x")
    return {"account": account.address, "nonce": str(nonce), "expiry": expiry, "signature": signature}


# Strings are signed in the venue's canonical form: symbols as listed, decimals without trailing
# zeros, orderType/direction in lower case, timeInForce in upper case, "" for an absent price or
# clientOrderId.
deposit = {"symbol": "USDC", "quantity": "5000"}
answer = call("POST", "/portfolio/deposit",
              {"chainId": CHAIN_ID, "from": account.address, **deposit, **sign("Deposit", deposit)})
print("deposited:", answer["balance"])

order = {"symbol": "ETH/USDC", "orderType": "limit", "direction": "buy", "timeInForce": "GTC",
         "postOnly": False, "price": "1500", "amount": "0.5", "clientOrderId": "py-1"}
fields = sign("Order", order)
answer = call("POST", "/order/addOrder", {
    "chainId": CHAIN_ID, "symbol": "ETH/USDC", "type": "limit", "direction": "buy",
    "price": "1500", "amount": "0.5", "clientOrderId": "py-1", **fields})
order_id = answer["order"]["orderId"]
print("placed:", order_id, answer["order"]["status"])

cancel = {"symbol": "ETH/USDC", "orderId": order_id}
answer = call("POST", "/order/cancelOrder", {"chainId": CHAIN_ID, **cancel, **sign("CancelOrder", cancel)})
print("cancelled:", answer["order"]["status"])
