"""Trading on dexd without sending a private key: each request signed locally, sent as JSON.

    pip install ./clients/python
    python docs/examples/signed_order.py http://127.0.0.1:8080

Deposits 5000 USDC, places a limit buy and cancels it, all signed locally; the key never leaves
this process. The venue publishes the EIP-712 domain and types at GET /account/eip712. The
signing is the SDK's (`dexd_client.signing.RequestSigner`, eth-account underneath); the requests
are written out here to show what goes on the wire. `dexd_client.Client(..., private_key=...)`
does all of it in one call per request.
"""

import json
import sys
import urllib.request

from dexd_client.signing import RequestSigner

BASE = sys.argv[1] if len(sys.argv) > 1 else "http://127.0.0.1:8080"
CHAIN_ID = "1"
signer = RequestSigner("0x" + "5c" * 32)


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
    """The request fields of a signed message: account, nonce (fresh), expiry and signature."""
    return signer.sign(eip712, primary_type, message)


# Strings are signed in the venue's canonical form: symbols as listed, decimals without trailing
# zeros, orderType/direction in lower case, timeInForce in upper case, "" for an absent price or
# clientOrderId, trigger price, trigger condition or ocoGroup, and 0 for an absent expiresAt.
deposit = {"symbol": "USDC", "quantity": "5000"}
answer = call("POST", "/portfolio/deposit",
              {"chainId": CHAIN_ID, "from": signer.address, **deposit, **sign("Deposit", deposit)})
print("deposited:", answer["balance"])

order = {"symbol": "ETH/USDC", "orderType": "limit", "direction": "buy", "timeInForce": "GTC",
         "postOnly": False, "price": "1500", "amount": "0.5", "clientOrderId": "py-1",
         "triggerPrice": "", "triggerCondition": "", "ocoGroup": "", "expiresAt": 0}
fields = sign("Order", order)
answer = call("POST", "/order/addOrder", {
    "chainId": CHAIN_ID, "symbol": "ETH/USDC", "type": "limit", "direction": "buy",
    "price": "1500", "amount": "0.5", "clientOrderId": "py-1", **fields})
order_id = answer["order"]["orderId"]
print("placed:", order_id, answer["order"]["status"])

cancel = {"symbol": "ETH/USDC", "orderId": order_id}
answer = call("POST", "/order/cancelOrder", {"chainId": CHAIN_ID, **cancel, **sign("CancelOrder", cancel)})
print("cancelled:", answer["order"]["status"])
