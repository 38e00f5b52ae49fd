//! "Your balance is in the root": the account's leaves of the newest liability root the venue
//! committed, each checked here, in the browser, against the root read from the vault itself
//! through the connected wallet's node (`eth_call`), never against the venue's word; and the
//! proof to download, whose `exitCalldata` leaves a frozen vault from any wallet.
//!
//! The tree is OpenZeppelin's `StandardMerkleTree`: a leaf is `keccak256(keccak256(abi.encode(
//! account, token, balance, creditedDeposits, debitedWithdrawals)))`, an inner node the keccak of
//! its two children sorted. It sends nothing to the chain but reads.

import { concat, decodeFunctionResult, encodeAbiParameters, encodeFunctionData, keccak256, type Hex } from "viem";
import { ApiError, reader as venueReader, type LiabilityProof, type ProofLeaf, type Venue } from "./api";
import { format } from "./decimal";
import { element, fill, row } from "./dom";

interface Reader { request(arguments_: { method: string; params?: unknown[] }): Promise<unknown> }

const ROOT_ABI = [{
  type: "function", name: "liabilityRoot", stateMutability: "view", inputs: [{ name: "epoch", type: "uint256" }],
  outputs: [{ type: "tuple", components: [
    { name: "root", type: "bytes32" }, { name: "journalSequence", type: "uint64" },
    { name: "depositCount", type: "uint64" }, { name: "committedAt", type: "uint40" }, { name: "vetoed", type: "bool" },
    { name: "previousGood", type: "uint32" }, { name: "nextGood", type: "uint32" },
  ] }],
}] as const;

/** The leaf's hash, as the vault checks it. */
export function leafHash(account: string, leaf: ProofLeaf): Hex {
  const encoded = encodeAbiParameters(
    [{ type: "address" }, { type: "address" }, { type: "uint256" }, { type: "uint256" }, { type: "uint256" }],
    [account as Hex, leaf.token as Hex, BigInt(leaf.balance), BigInt(leaf.creditedDeposits), BigInt(leaf.debitedWithdrawals)],
  );
  return keccak256(keccak256(encoded));
}

/** Whether `proof` leads from `leaf` to `root` (OpenZeppelin's `MerkleProof.verify`). */
export function verifyLeaf(root: string, leaf: Hex, proof: string[]): boolean {
  let node = leaf;
  for (const sibling of proof as Hex[]) {
    node = keccak256(node.toLowerCase() < sibling.toLowerCase() ? concat([node, sibling]) : concat([sibling, node]));
  }
  return node.toLowerCase() === root.toLowerCase();
}

/** The vault's root of `epoch`, read through `reader`. */
async function vaultRoot(reader: Reader, vault: string, epoch: number): Promise<{ root: string; vetoed: boolean }> {
  const data = encodeFunctionData({ abi: ROOT_ABI, functionName: "liabilityRoot", args: [BigInt(epoch)] });
  const answer = (await reader.request({ method: "eth_call", params: [{ to: vault, data }, "latest"] })) as Hex;
  const stored = decodeFunctionResult({ abi: ROOT_ABI, functionName: "liabilityRoot", data: answer });
  return { root: stored.root, vetoed: stored.vetoed };
}

/** A leaf's balance in the asset's decimals ("1.5" rather than units). */
function amount(venue: Venue, leaf: ProofLeaf): string {
  const decimals = venue.assets.find((asset) => asset.symbol === leaf.symbol)?.decimals ?? 0;
  return format({ units: BigInt(leaf.balance), scale: decimals });
}

let downloadUrl: string | null = null;
let downloadText: string | null = null;
/** The (chain, account, epoch) last checked against the vault: checked again only when it changes. */
let lastChecked: string | null = null;

/** Shows the account's leaves of the newest root, checked against the vault through `reader`
 * (the browser wallet) when there is one; hides the section on a ledger chain. */
export async function showLiabilities(venue: Venue, account: string | null, reader: Reader | null): Promise<void> {
  const section = element("liability");
  const custody = venue.custody;
  if (custody.mode !== "vault" || account === null) {
    section.hidden = true;
    return;
  }
  section.hidden = false;
  const state = element("liability-state");
  const link = element<HTMLAnchorElement>("download-proof");
  let proof: LiabilityProof;
  try {
    // The roots first (a list, empty before the first): a proof asked before any root is a 404,
    // which a browser reports as an error.
    const client = venueReader(venue.chainId);
    const roots = await client.liabilityRoots({ limit: 1 });
    if (roots.length === 0) throw new ApiError(404, "ROOT_NOT_FOUND", "no root yet", null);
    proof = await client.liabilityProof(account);
  } catch (error) {
    link.hidden = true;
    fill("liability-table", [], "No root yet.");
    state.textContent = error instanceof ApiError && error.code === "ROOT_NOT_FOUND"
      ? "The venue has not committed a liability root to the vault yet."
      : `The proof cannot be read now (${(error as Error).message}).`;
    return;
  }
  const text = JSON.stringify(proof, null, 2);
  if (text !== downloadText) {
    if (downloadUrl) URL.revokeObjectURL(downloadUrl);
    downloadUrl = URL.createObjectURL(new Blob([text], { type: "application/json" }));
    downloadText = text;
  }
  link.href = downloadUrl ?? "";
  link.download = `dexd-proof-${venue.chainId}-${account}-epoch-${proof.epoch}.json`;
  link.hidden = false;
  const committed = new Date(proof.committedAt).toLocaleString();
  const checkedKey = `${venue.chainId}/${account}/${proof.epoch}`;
  if (reader !== null && checkedKey === lastChecked) return;
  if (reader === null) {
    fill("liability-table", proof.leaves.map((leaf) => row([leaf.symbol, amount(venue, leaf), "not checked"])), "Nothing of yours in this root.");
    state.textContent = `Root ${proof.epoch} (committed ${committed}). Connect a browser wallet to check your ` +
      "leaves against the root the vault holds; or download the proof and check it with any node.";
    return;
  }
  try {
    const stored = await vaultRoot(reader, custody.vault, proof.epoch);
    const checks = proof.leaves.map((leaf) => stored.root.toLowerCase() === proof.root.toLowerCase()
      && verifyLeaf(stored.root, leafHash(account, leaf), leaf.proof));
    fill("liability-table", proof.leaves.map((leaf, index) => row([leaf.symbol, amount(venue, leaf), checks[index] ? "yes" : "NO"])),
      "Nothing of yours in this root.");
    const holds = !stored.vetoed && checks.every(Boolean);
    state.textContent = holds
      ? `Your balance is in the root: every leaf of yours checks against root ${proof.epoch} as the vault ` +
        `${custody.vault} holds it (committed ${committed}).`
      : stored.vetoed
        ? `Root ${proof.epoch} was vetoed by the vault's guardian: it will never be used for an exit.`
        : `Your balance is NOT in the vault's root ${proof.epoch}: a leaf does not check. Keep the proof and tell the operator.`;
    document.body.dataset.liability = holds ? "holds" : "fails";
    lastChecked = checkedKey;
  } catch (error) {
    state.textContent = `The vault's root could not be read through the wallet (${(error as Error).message}).`;
  }
}
