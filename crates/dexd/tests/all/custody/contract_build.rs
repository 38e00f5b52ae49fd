//! The vault's build is reproducible: compiling `contracts/` again with the pinned solc (npm)
//! gives exactly the committed artifacts that dexd's bindings are generated from.

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
