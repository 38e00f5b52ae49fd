"""Liability proofs, checked here against the chain: is the account's balance in the root the
venue committed to its vault?

The tree is OpenZeppelin's ``StandardMerkleTree`` over ``(address account, address token,
uint256 balance, uint256 creditedDeposits, uint256 debitedWithdrawals)``: a leaf is
``keccak256(keccak256(abi.encode(...)))``, an inner node the keccak of its two children sorted.
The root is read from the vault itself (``liabilityRoot(epoch)``) over the chain's JSON-RPC
node, never taken from the venue's answer. This module sends nothing but ``eth_call``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import requests
from eth_abi import decode, encode
from eth_utils import keccak, to_checksum_address

#: ``liabilityRoot(uint256)``: the vault's root of an epoch.
_LIABILITY_ROOT_SELECTOR = keccak(text="liabilityRoot(uint256)")[:4]


def leaf_hash(account: str, token: str, balance: int, credited_deposits: int, debited_withdrawals: int) -> bytes:
    """The leaf of one (account, token), as the vault and OpenZeppelin's library hash it."""
    encoded = encode(["address", "address", "uint256", "uint256", "uint256"],
                     [to_checksum_address(account), to_checksum_address(token), balance, credited_deposits,
                      debited_withdrawals])
    return keccak(keccak(encoded))


def verify(root: bytes, leaf: bytes, proof: list[bytes]) -> bool:
    """Whether ``proof`` leads from ``leaf`` to ``root`` (OpenZeppelin's ``MerkleProof.verify``)."""
    node = leaf
    for sibling in proof:
        node = keccak(min(node, sibling) + max(node, sibling))
    return node == root


@dataclass(frozen=True)
class VaultRoot:
    """A root as the vault holds it."""

    root: bytes
    journal_sequence: int
    #: How many of the vault's deposits the root covers.
    deposit_count: int
    committed_at: int
    vetoed: bool


def read_vault_root(rpc_url: str, vault: str, epoch: int, timeout_seconds: float = 10.0) -> VaultRoot:
    """The vault's root of ``epoch``, read with ``eth_call`` at the node's latest block."""
    data = "0x" + (_LIABILITY_ROOT_SELECTOR + encode(["uint256"], [epoch])).hex()
    answer = requests.post(rpc_url, json={"jsonrpc": "2.0", "id": 1, "method": "eth_call",
                                          "params": [{"to": to_checksum_address(vault), "data": data}, "latest"]},
                           timeout=timeout_seconds).json()
    if "error" in answer:
        raise ValueError(f"the vault did not give the root of epoch {epoch}: {answer['error']}")
    # Contract version 5 keeps the roots not vetoed linked (the last two fields).
    root, journal_sequence, deposit_count, committed_at, vetoed, _, _ = decode(
        ["(bytes32,uint64,uint64,uint40,bool,uint32,uint32)"], bytes.fromhex(answer["result"][2:]))[0]
    return VaultRoot(root, journal_sequence, deposit_count, committed_at, vetoed)


@dataclass(frozen=True)
class LeafCheck:
    """One leaf of a proof, checked against the vault's root."""

    symbol: str
    token: str
    balance: int
    credited_deposits: int
    debited_withdrawals: int
    in_root: bool


@dataclass(frozen=True)
class ProofCheck:
    """An account's proof checked against the chain."""

    epoch: int
    root: bytes
    vetoed: bool
    leaves: list[LeafCheck]

    @property
    def holds(self) -> bool:
        """Every leaf is in the vault's root, and the guardian did not veto it."""
        return not self.vetoed and all(leaf.in_root for leaf in self.leaves)


def check_proof(proof: dict[str, Any], rpc_url: str, vault: str, timeout_seconds: float = 10.0) -> ProofCheck:
    """Checks a ``GET /account/liabilityProof`` answer against the vault's root of its epoch."""
    stored = read_vault_root(rpc_url, vault, int(proof["epoch"]), timeout_seconds)
    leaves = []
    for leaf in proof["leaves"]:
        amounts = [int(leaf[name]) for name in ("balance", "creditedDeposits", "debitedWithdrawals")]
        hashed = leaf_hash(proof["account"], leaf["token"], *amounts)
        path = [bytes.fromhex(node[2:]) for node in leaf["proof"]]
        leaves.append(LeafCheck(leaf["symbol"], leaf["token"], *amounts, in_root=verify(stored.root, hashed, path)))
    return ProofCheck(int(proof["epoch"]), stored.root, stored.vetoed, leaves)


def vault_of(custody: dict[str, Any]) -> Optional[str]:
    """The vault of a chain's custody object, if it has one."""
    return custody.get("vault") if custody.get("mode") == "vault" else None
