"""Fixtures: a real dexd (the binary from the cargo target directory, or ``DEXD_BINARY``) on port 0
with a fresh data directory, and a spy on every HTTP request this process sends."""

from __future__ import annotations

import contextlib
import os
import re
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

REPOSITORY = Path(__file__).resolve().parents[3]

# Test keys only (never real ones).
ALICE_KEY = "0x" + "a1" * 32
BOB_KEY = "0x" + "b2" * 32


def dexd_binary() -> Path:
    if "DEXD_BINARY" in os.environ:
        return Path(os.environ["DEXD_BINARY"])
    target = Path(os.environ.get("CARGO_TARGET_DIR", REPOSITORY / "target"))
    return target / "debug" / "dexd"


@contextlib.contextmanager
def running_dexd():
    """A dexd on port 0 with a fresh data directory, yielding its base URL; stopped at the end."""
    binary = dexd_binary()
    if not binary.exists():
        raise RuntimeError(f"{binary} is missing: run cargo build -p dexd first")
    with tempfile.TemporaryDirectory() as work:
        log_path = Path(work) / "log"
        with open(log_path, "w") as log:
            server = subprocess.Popen(
                [str(binary), "serve", "--listen", "127.0.0.1:0", "--data-dir", str(Path(work) / "data")],
                stdout=log, stderr=subprocess.STDOUT,
            )
        try:
            address = None
            for _ in range(600):
                text = log_path.read_text()
                match = re.search(r"address=([0-9.:]+)", text)
                if match and "dexd ready" in text:
                    address = match.group(1)
                    break
                if server.poll() is not None:
                    break
                time.sleep(0.05)
            if address is None:
                raise RuntimeError("dexd did not start:\n" + log_path.read_text())
            yield f"http://{address}"
        finally:
            server.terminate()
            server.wait(timeout=30)


@pytest.fixture(scope="session")
def dexd_url():
    with running_dexd() as url:
        yield url


class RequestSpy:
    """Every request ``requests`` sends from this process: URL, headers and body."""

    def __init__(self):
        self.requests: list[tuple[str, str, bytes]] = []

    def texts(self):
        for url, headers, body in self.requests:
            yield url + "\n" + headers + "\n" + (body or b"").decode("utf-8", "replace")


@pytest.fixture(autouse=True)
def spy(monkeypatch):
    """Records what leaves the process; after the test, no request may carry a test key."""
    recorder = RequestSpy()
    original_send = requests.Session.send

    def send(session, prepared, **kwargs):
        body = prepared.body if isinstance(prepared.body, bytes) else (prepared.body or "").encode()
        recorder.requests.append((prepared.url, str(dict(prepared.headers)), body))
        return original_send(session, prepared, **kwargs)

    monkeypatch.setattr(requests.Session, "send", send)
    yield recorder
    for text in recorder.texts():
        lowered = text.lower()
        for key in (ALICE_KEY, BOB_KEY):
            assert key[2:] not in lowered, "a request carried a private key"
        assert "privatekey" not in lowered, "a request carried a privateKey field"
