"""Liability proofs through the SDK against a real vault: anvil (from ``contracts/node_modules``),
``dexd devnet-setup`` and dexd in vault mode committing a root every second. A deposit straight
from the wallet is credited, a root holds it, the SDK checks the account's proof against the root
it reads from the vault itself, and a proof with a changed balance does not check."""

from __future__ import annotations

import contextlib
import json
import os
import re
import socket
import subprocess
import tempfile
import time
from pathlib import Path

from decimal import Decimal

import pytest
import requests
from eth_account import Account

from dexd_client import Client, check_proof, leaf_hash, verify

from conftest import REPOSITORY, dexd_binary

ANVIL = REPOSITORY / "contracts/node_modules/@foundry-rs/anvil-linux-amd64/bin/anvil"
# anvil's first development account: a test key, funded on every fresh anvil.
FUNDER_KEY = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80"


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def rpc(url: str, method: str, params: list):
    answer = requests.post(url, json={"jsonrpc": "2.0", "id": 1, "method": method, "params": params}, timeout=10).json()
    assert "error" not in answer, answer
    return answer["result"]


def wait_for(what: str, ready, seconds: float = 60.0):
    deadline = time.time() + seconds
    while True:
        value = ready()
        if value:
            return value
        assert time.time() < deadline, f"timed out waiting for {what}"
        time.sleep(0.2)


@contextlib.contextmanager
def vault_venue():
    """anvil mining a block every second, the devnet's contracts, and dexd on them committing a
    liability root every second; yields (dexd URL, node URL, devnet.json)."""
    if not ANVIL.exists():
        pytest.fail(f"{ANVIL} is missing: run scripts/install-test-tools")
    with tempfile.TemporaryDirectory() as work:
        folder = Path(work)
        rpc_url = f"http://127.0.0.1:{free_port()}"
        anvil = subprocess.Popen([str(ANVIL), "--port", rpc_url.rsplit(":", 1)[1], "--block-time", "1"],
                                 stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        server = None
        try:
            wait_for("anvil", lambda: _answers(rpc_url), 30)
            subprocess.run([str(dexd_binary()), "devnet-setup", "--rpc-url", rpc_url, "--dir", str(folder),
                            "--funder-key-env", "DEXD_TEST_FUNDER_KEY", "--accounts", "1"],
                           check=True, capture_output=True, env={**os.environ, "DEXD_TEST_FUNDER_KEY": FUNDER_KEY})
            config = folder / "dexd.toml"
            config.write_text(re.sub(r"root_interval_ms = \d+", "root_interval_ms = 1000", config.read_text()))
            log_path = folder / "dexd.log"
            with open(log_path, "w") as log:
                server = subprocess.Popen([str(dexd_binary()), "serve", "--listen", "127.0.0.1:0", "--config",
                                           str(config), "--data-dir", str(folder / "data")],
                                          stdout=log, stderr=subprocess.STDOUT)
            def address():
                text = log_path.read_text()
                found = re.search(r"address=([0-9.:]+)", text)
                assert server.poll() is None, text
                return found.group(1) if found and "dexd ready" in text else None

            listening = wait_for("dexd", address, 60)
            yield f"http://{listening}", rpc_url, json.loads((folder / "devnet.json").read_text())
        finally:
            if server is not None:
                server.terminate()
                server.wait(timeout=30)
            anvil.terminate()
            anvil.wait(timeout=30)


def _answers(url: str) -> bool:
    try:
        rpc(url, "eth_chainId", [])
        return True
    except requests.RequestException:
        return False


def deposit_native(rpc_url: str, vault: str, key: str, wei: int):
    """``depositNative()`` from the account's own wallet, signed here."""
    account = Account.from_key(key)
    transaction = {
        "to": vault, "value": wei, "data": "0xdb6b5246", "gas": 200_000, "maxFeePerGas": 10**11,
        "maxPriorityFeePerGas": 10**9, "chainId": int(rpc(rpc_url, "eth_chainId", []), 16),
        "nonce": int(rpc(rpc_url, "eth_getTransactionCount", [account.address, "pending"]), 16), "type": 2,
    }
    signed = account.sign_transaction(transaction)
    rpc(rpc_url, "eth_sendRawTransaction", ["0x" + signed.raw_transaction.hex().removeprefix("0x")])


def test_the_sdk_checks_an_accounts_leaves_against_the_vaults_root():
    with vault_venue() as (url, rpc_url, devnet):
        account = devnet["accounts"][0]
        client = Client(url, devnet["chainId"], private_key=account["privateKey"])
        assert client.custody()["frozen"] is False
        deposit_native(rpc_url, devnet["vault"], account["privateKey"], 3 * 10**18)

        def proof_with_deposit():
            try:
                proof = client.liability_proof()
            except Exception:  # ROOT_NOT_FOUND until the first root is recorded
                return None
            return proof if any(leaf["balance"] == str(3 * 10**18) for leaf in proof["leaves"]) else None

        proof = wait_for("a root holding the deposit", proof_with_deposit)
        check = client.check_liabilities(rpc_url)
        assert check.holds, check
        eth = next(leaf for leaf in check.leaves if leaf.symbol == "ETH")
        assert (eth.balance, eth.credited_deposits, eth.debited_withdrawals) == (3 * 10**18, 3 * 10**18, 0)
        assert eth.token == "0x0000000000000000000000000000000000000000"

        # A balance the root does not hold does not check.
        forged = json.loads(json.dumps(proof))
        forged["leaves"][0]["balance"] = str(int(forged["leaves"][0]["balance"]) + 1)
        assert not check_proof(forged, rpc_url, devnet["vault"]).holds

        # The leaves of the epoch rebuild the account's leaf, whose proof leads to the root.
        leaves = client.liability_leaves(proof["epoch"])
        mine = [line for line in leaves if line["account"] == client.address]
        assert [line["balance"] for line in mine] == [leaf["balance"] for leaf in proof["leaves"]]
        hashed = leaf_hash(client.address, mine[0]["token"], int(mine[0]["balance"]),
                           int(mine[0]["creditedDeposits"]), int(mine[0]["debitedWithdrawals"]))
        assert verify(check.root, hashed, [bytes.fromhex(node[2:]) for node in proof["leaves"][0]["proof"]])
        roots = client.liability_roots()["roots"]
        assert roots[0]["epoch"] >= proof["epoch"] and roots[0]["txHash"].startswith("0x")


def test_a_withdrawal_asked_for_on_chain_is_served_by_the_venue():
    """The account asks the vault itself (``requestWithdrawal``) with the SDK, from its own wallet;
    the venue debits it, serves it through a final root, and lists it as requested on chain."""
    with vault_venue() as (url, rpc_url, devnet):
        account = devnet["accounts"][0]
        client = Client(url, devnet["chainId"], private_key=account["privateKey"])
        deposit_native(rpc_url, devnet["vault"], account["privateKey"], 2 * 10**18)
        wait_for("the deposit credited", lambda: client.balances()["ETH"].available == 2)
        request_id = client.request_withdrawal_on_chain(rpc_url, "ETH", "0.5")
        assert request_id == 0

        def served():
            withdrawals = client.withdrawals().items
            return withdrawals[0] if withdrawals and withdrawals[0].status == "confirmed" else None

        wait_for("the request served", served, 120)
        raw = client.request("GET", "/portfolio/withdrawHistories",
                             params={"chainId": client.chain_id, "account": client.address})
        listed = raw["withdrawals"][0]
        assert (listed["requested"], listed["requestId"], listed["quantity"]) == ("chain", 0, "0.5")
        assert client.balances()["ETH"].total == Decimal("1.5")
