//! Bindings of the vault contract, generated from its committed artifact.
alloy::sol!(
    #[sol(rpc)]
    #[derive(Debug)]
    DexdVault,
    "../../contracts/artifacts/DexdVault.json"
);
