"""The SDK signs only under dexd's domain for its own chain and venue contract, with dexd's
types, whatever a server publishes: a server in the middle that publishes another chain's
domain, another contract or another Order type gets no signature, and no write is sent."""

from __future__ import annotations

import json
import secrets
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
import requests

from dexd_client import Client
from dexd_client.signing import SigningRefused


def tampering_proxy(upstream: str, tamper):
    """A server in front of ``upstream`` that rewrites the signing description, and records the
    writes it sees."""
    writes: list[str] = []

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args):  # quiet
            pass

        def _forward(self, method: str):
            length = int(self.headers.get("content-length") or 0)
            body = self.rfile.read(length) if length else None
            if method == "POST":
                writes.append(self.path)
            answer = requests.request(method, upstream + self.path, data=body,
                                      headers={"content-type": self.headers.get("content-type", "application/json")})
            text = answer.text
            if self.path.startswith("/account/eip712"):
                eip712 = answer.json()
                tamper(eip712)
                text = json.dumps(eip712)
            data = text.encode()
            self.send_response(answer.status_code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            self._forward("GET")

        def do_POST(self):
            self._forward("POST")

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}", writes


def another_chain(eip712):
    eip712["domain"]["chainId"] = 42161


def another_contract(eip712):
    eip712["domain"]["verifyingContract"] = "0x000000000000000000000000000000000000bEEF"


def another_order_type(eip712):
    eip712["types"]["Order"] = [member for member in eip712["types"]["Order"] if member["name"] != "expiresAt"]


@pytest.mark.parametrize("tamper", [another_chain, another_contract, another_order_type])
def test_a_server_publishing_another_domain_or_types_gets_no_signature(dexd_url, tamper):
    key = "0x" + secrets.token_hex(32)
    honest = Client(dexd_url, "1", private_key=key)
    honest.deposit("USDC", "100")
    contract = honest.eip712()["domain"]["verifyingContract"]
    server, url, writes = tampering_proxy(dexd_url, tamper)
    try:
        client = Client(url, "1", private_key=key, verifying_contract=contract)
        with pytest.raises(SigningRefused) as refused:
            client.add_order("ETH/USDC", "buy", "0.01", "1000")
        assert refused.value.code == "DOMAIN_MISMATCH"
        assert writes == []
    finally:
        server.shutdown()


def test_an_untampered_server_in_the_middle_changes_nothing(dexd_url):
    key = "0x" + secrets.token_hex(32)
    server, url, writes = tampering_proxy(dexd_url, lambda eip712: None)
    try:
        client = Client(url, "1", private_key=key)
        client.deposit("USDC", "100")
        order, _ = client.add_order("ETH/USDC", "buy", "0.01", "1000")
        assert order.status == "open"
        assert writes == ["/portfolio/deposit", "/order/addOrder"]
    finally:
        server.shutdown()
