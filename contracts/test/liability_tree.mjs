// OpenZeppelin's own StandardMerkleTree (@openzeppelin/merkle-tree) over the entries given on
// standard input as JSON lines ([account, token, balance, creditedDeposits, debitedWithdrawals],
// amounts as decimal strings): prints the root and each entry's proof as JSON, so that a test
// can hold dexd's tree against the library's.
import { StandardMerkleTree } from "@openzeppelin/merkle-tree";
import { readFileSync } from "node:fs";

const entries = readFileSync(0, "utf8").split("\n").filter((line) => line.trim() !== "").map((line) => JSON.parse(line));
const tree = StandardMerkleTree.of(entries, ["address", "address", "uint256", "uint256", "uint256"]);
const proofs = entries.map((_, index) => tree.getProof(index));
process.stdout.write(JSON.stringify({ root: tree.root, proofs }));
