"""dexd's Python client: REST and live streams with every write signed locally (EIP-712).

- :class:`dexd_client.Client`: the REST API for one chain, typed results, errors as exceptions.
- :mod:`dexd_client.streams`: the WebSocket streams, books checked for gaps and checksums.
- :mod:`dexd_client.ccxt`: ``dexd``, a CCXT exchange class (needs the ``ccxt`` extra).
- :mod:`dexd_client.liabilities`: an account's liability proof checked against the vault's root.

The account's key stays in the process: requests carry the account's signature, never the key.
"""

from .client import Client
from .errors import (AuthenticationFailed, ChainUnavailable, Conflict, DexdError, InsufficientBalance,
                     InvalidRequest, NotFound, OrderNotFound, OrderNotOpen, RateLimited, Rejected, Unavailable)
from .liabilities import ProofCheck, check_proof, leaf_hash, read_vault_root, verify
from .signing import RequestSigner, canonical_decimal

__all__ = [
    "Client", "RequestSigner", "canonical_decimal", "DexdError", "InvalidRequest", "AuthenticationFailed",
    "NotFound", "OrderNotFound", "Conflict", "OrderNotOpen", "Rejected", "InsufficientBalance", "RateLimited",
    "ChainUnavailable", "Unavailable", "ProofCheck", "check_proof", "leaf_hash", "read_vault_root", "verify",
]
