// Compiles the vault and the test tokens with the pinned solc (the npm `solc` package, the
// official compiler built to JavaScript: no download at build time) and writes one artifact per
// contract into artifacts/: the ABI, the creation and runtime bytecode, and what built them.
//
//   node build.mjs          write artifacts/*.json
//   node build.mjs --check  compile again and fail if the committed artifacts differ
//
// The artifacts are committed so that `cargo build` needs no Node: dexd's bindings are
// generated from artifacts/DexdVault.json at compile time. The check is the reproducible-build
// test: the same sources, compiler and settings must give the same bytes.

import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createRequire } from "node:module";

const require = createRequire(import.meta.url);
const solc = require("solc");

const here = path.dirname(fileURLToPath(import.meta.url));
const artifactsDir = path.join(here, "artifacts");
const expectedCompiler = JSON.parse(fs.readFileSync(path.join(here, "package.json"), "utf8")).devDependencies.solc;

// Contract sources, relative to this directory, and the contracts to write out of each.
const sources = {
  "src/DexdVaultBase.sol": [],
  "src/DexdVault.sol": ["DexdVault"],
  "src/DexdVaultV2.sol": ["DexdVaultV2"],
  "test/TestToken.sol": ["TestToken"],
  "test/FeeOnTransferToken.sol": ["FeeOnTransferToken"],
  "test/ReentrantToken.sol": ["ReentrantToken"],
  "test/TestSmartWallet.sol": ["TestSmartWallet"],
  "test/FickleWallet.sol": ["FickleWallet"],
};

// The optimizer's runs: 10,000 (cheaper calls) unless a contract needs fewer to stay within
// EIP-170's 24,576 bytes of code. Version 1 keeps the settings it was deployed with, so that its
// code stays byte for byte what contracts/reference holds.
const defaultRuns = 10000;
const runsOf = { DexdVaultV2: 1000 };

function settings(runs) {
  return {
    // Cancun: the newest hardfork that every chain dexd is likely to run on supports.
    evmVersion: "cancun",
    optimizer: { enabled: true, runs },
    outputSelection: { "*": { "*": ["abi", "evm.bytecode.object", "evm.deployedBytecode.object"] } },
  };
}

function findImport(importPath) {
  const candidates = [path.join(here, importPath), path.join(here, "node_modules", importPath)];
  for (const candidate of candidates) {
    if (fs.existsSync(candidate)) {
      return { contents: fs.readFileSync(candidate, "utf8") };
    }
  }
  return { error: `not found: ${importPath}` };
}

function compile(runs) {
  const version = solc.version();
  if (!version.startsWith(`${expectedCompiler}+`)) {
    throw new Error(`solc ${version} is installed, package.json pins ${expectedCompiler}; run npm ci`);
  }
  const input = {
    language: "Solidity",
    sources: Object.fromEntries(
      Object.keys(sources).map((file) => [file, { content: fs.readFileSync(path.join(here, file), "utf8") }]),
    ),
    settings: settings(runs),
  };
  const output = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport }));
  const errors = (output.errors || []).filter((entry) => entry.severity === "error");
  // A warning about a source none of whose contracts this build writes is the other build's.
  const written = (file) =>
    sources[file]?.length === 0
      ? runs === defaultRuns
      : (sources[file]?.some((name) => (runsOf[name] ?? defaultRuns) === runs) ?? true);
  for (const entry of output.errors || []) {
    if (entry.severity === "error" || written(entry.sourceLocation?.file)) {
      process.stderr.write(entry.formattedMessage);
    }
  }
  if (errors.length > 0) {
    throw new Error(`${errors.length} compilation error(s)`);
  }
  const artifacts = {};
  for (const [file, names] of Object.entries(sources)) {
    for (const name of names.filter((name) => (runsOf[name] ?? defaultRuns) === runs)) {
      const contract = output.contracts[file][name];
      artifacts[name] = {
        contractName: name,
        sourceName: file,
        compiler: { version, settings: { evmVersion: settings(runs).evmVersion, optimizer: settings(runs).optimizer } },
        abi: contract.abi,
        bytecode: { object: `0x${contract.evm.bytecode.object}` },
        deployedBytecode: { object: `0x${contract.evm.deployedBytecode.object}` },
      };
    }
  }
  return artifacts;
}

function text(artifact) {
  return `${JSON.stringify(artifact, null, 2)}\n`;
}

const check = process.argv.includes("--check");
const artifacts = Object.assign(
  {},
  ...[...new Set([defaultRuns, ...Object.values(runsOf)])].map((runs) => compile(runs)),
);
let stale = [];
for (const [name, artifact] of Object.entries(artifacts)) {
  const file = path.join(artifactsDir, `${name}.json`);
  if (check) {
    const committed = fs.existsSync(file) ? fs.readFileSync(file, "utf8") : null;
    if (committed !== text(artifact)) {
      stale.push(name);
    }
  } else {
    fs.mkdirSync(artifactsDir, { recursive: true });
    fs.writeFileSync(file, text(artifact));
  }
}
if (check) {
  if (stale.length > 0) {
    console.error(`stale artifacts: ${stale.join(", ")}; run \`node contracts/build.mjs\` and commit the result`);
    process.exit(1);
  }
  console.log(`artifacts match a fresh build with solc ${solc.version()}`);
} else {
  console.log(`wrote ${Object.keys(artifacts).length} artifacts with solc ${solc.version()}`);
}
