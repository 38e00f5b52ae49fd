//! The vault's build is reproducible: compiling `contracts/` again with the pinned solc (npm)
//! gives exactly the committed artifacts that dexd's bindings are generated from; version 1 of the
//! vault still runs the code it was first deployed with.

use std::process::Command;

#[test]
fn the_committed_contract_artifacts_are_what_the_sources_compile_to() {
    let contracts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contracts");
    assert!(
        contracts.join("node_modules/solc").exists(),
        "the pinned solc is not installed: run scripts/install-test-tools (npm ci in contracts/) first"
    );
    let output = Command::new("node")
        .arg("build.mjs")
        .arg("--check")
        .current_dir(&contracts)
        .output()
        .expect("node runs");
    assert!(
        output.status.success(),
        "the artifacts differ from a fresh build:\n{}{}",
        String::from_utf8_lossy(&output.stdout),
        String::from_utf8_lossy(&output.stderr)
    );
}

/// The runtime code of an artifact without the compiler's metadata (its CBOR trailer, whose
/// length is the code's last two bytes): what a deployed vault runs.
fn runtime_without_metadata(artifact: &serde_json::Value) -> Vec<u8> {
    let text = artifact["deployedBytecode"]["object"].as_str().unwrap();
    let code = hex::decode(text.trim_start_matches("0x")).unwrap();
    let metadata = usize::from(u16::from_be_bytes([code[code.len() - 2], code[code.len() - 1]]));
    code[..code.len() - metadata - 2].to_vec()
}

/// An ABI as the chain sees it: its entries without `internalType` (which names the Solidity
/// contract a struct is declared in, not what goes on the wire), in a fixed order.
fn wire_abi(artifact: &serde_json::Value) -> Vec<String> {
    fn without_internal_types(value: &serde_json::Value) -> serde_json::Value {
        match value {
            serde_json::Value::Object(fields) => fields
                .iter()
                .filter(|(name, _)| name.as_str() != "internalType")
                .map(|(name, value)| (name.clone(), without_internal_types(value)))
                .collect(),
            serde_json::Value::Array(values) => values.iter().map(without_internal_types).collect(),
            other => other.clone(),
        }
    }
    let mut entries: Vec<String> = artifact["abi"]
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| without_internal_types(entry).to_string())
        .collect();
    entries.sort();
    entries
}

#[test]
fn version_1_of_the_vault_runs_the_code_and_speaks_the_abi_it_was_deployed_with() {
    // Version 1 now inherits what both versions share (DexdVaultBase.sol); vaults deployed before
    // run the code in contracts/reference, and dexd must go on speaking to them.
    let contracts = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../contracts");
    let read = |path: &str| -> serde_json::Value {
        serde_json::from_str(&std::fs::read_to_string(contracts.join(path)).unwrap()).unwrap()
    };
    let deployed = read("reference/DexdVault-version-1.json");
    let built = read("artifacts/DexdVault.json");
    assert_eq!(wire_abi(&built), wire_abi(&deployed), "version 1's ABI changed");
    assert!(
        runtime_without_metadata(&built) == runtime_without_metadata(&deployed),
        "version 1's deployed code changed ({} bytes now, {} as deployed)",
        runtime_without_metadata(&built).len(),
        runtime_without_metadata(&deployed).len()
    );
}
