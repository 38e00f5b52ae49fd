//! The operator's key: read once at start from a file or an environment variable, held by the
//! payer for as long as the process runs.
//!
//! The key is never written anywhere, and an error names where it was looked for, never what
//! was found. This module does not sign anything itself.

use std::fmt;

use alloy::signers::local::PrivateKeySigner;
use zeroize::Zeroizing;

use crate::config::OperatorKeySource;

/// The key of an operator, as the payer holds it (never printed: alloy's signer shows its
/// address only).
pub type OperatorKey = PrivateKeySigner;

/// Why an operator key could not be read. Names where it was looked for, never what was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OperatorKeyError(pub String);

impl fmt::Display for OperatorKeyError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(&self.0)
    }
}

impl std::error::Error for OperatorKeyError {}

/// Reads a vault chain's operator key from its file or environment variable: `0x` + 64 hex
/// digits, surrounding whitespace ignored. The key signs the vault's withdrawal transactions for
/// as long as the process runs; it is never written anywhere, and an error never repeats it.
pub fn read_operator_key(source: &OperatorKeySource) -> Result<OperatorKey, OperatorKeyError> {
    let (text, origin) =
        match source {
            OperatorKeySource::File(path) => {
                refuse_shared_key_file(path)?;
                (
                    Zeroizing::new(std::fs::read_to_string(path).map_err(|error| {
                        OperatorKeyError(format!("cannot read the operator key file {}: {error}", path.display()))
                    })?),
                    format!("the operator key file {}", path.display()),
                )
            }
            OperatorKeySource::Environment(variable) => (
                Zeroizing::new(std::env::var(variable).map_err(|_| {
                    OperatorKeyError(format!("the environment variable {variable} holds no operator key"))
                })?),
                format!("the environment variable {variable}"),
            ),
        };
    let key = dexd_crypto::PrivateKey::parse(text.trim()).map_err(|_| {
        OperatorKeyError(format!(
            "{origin} does not hold 0x + 64 hex digits of a valid secp256k1 key"
        ))
    })?;
    Ok(key.transaction_signer())
}

/// Refuses a key file that users other than its owner may read or write: whoever reads it can
/// sign as the operator and spend the operator's gas; whoever writes it can replace the key.
fn refuse_shared_key_file(path: &std::path::Path) -> Result<(), OperatorKeyError> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(path)
        .map_err(|error| OperatorKeyError(format!("cannot read the operator key file {}: {error}", path.display())))?
        .permissions()
        .mode();
    if mode & 0o077 != 0 {
        return Err(OperatorKeyError(format!(
            "the operator key file {} may be read or written by others (mode {:o}); make it its owner's only \
             (chmod 600)",
            path.display(),
            mode & 0o777
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    #[test]
    fn a_key_file_others_may_read_is_refused_without_its_content() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("operator.key");
        let key = "0x59c6995e998f97a5a0044966f0945389dc9e86dae88c7a8412f4603b6b78690d";
        std::fs::write(&path, key).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o644)).unwrap();
        let error = read_operator_key(&OperatorKeySource::File(path.clone())).unwrap_err();
        assert!(error.0.contains("mode 644") && error.0.contains("chmod 600"), "{error}");
        assert!(!error.0.contains(&key[2..]), "the key is never repeated");
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
        assert!(read_operator_key(&OperatorKeySource::File(path)).is_ok());
    }
}
