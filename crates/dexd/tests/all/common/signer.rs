//! A client that keeps its key and signs each request itself, with an EIP-712 implementation
//! that shares no code with dexd (alloy's typed-data hasher, k256's signer).

use alloy_dyn_abi::TypedData;
use k256::ecdsa::SigningKey;
use serde_json::{json, Value};

use super::{TestServer, Trader};

/// A trader that signs its own requests.
pub struct Signer {
    pub trader: Trader,
    key: SigningKey,
}

impl Signer {
    pub fn new(byte: u8) -> Signer {
        let trader = Trader::new(byte);
        let key = SigningKey::from_slice(&[byte; 32]).unwrap();
        Signer { trader, key }
    }

    /// Signs `message` as `primary_type` with the types and domain the server publishes, and
    /// returns the signature and the digest.
    pub fn sign(&self, eip712: &Value, primary_type: &str, message: Value) -> (String, String) {
        // Every published type: a type names the others it uses (`OrderBatch` its `Order`).
        let typed_data = json!({
            "types": eip712["types"],
            "primaryType": primary_type,
            "domain": eip712["domain"],
            "message": message,
        });
        let typed_data: TypedData = serde_json::from_value(typed_data).unwrap();
        let digest = typed_data.eip712_signing_hash().unwrap();
        let (signature, recovery) = self.key.sign_prehash_recoverable(digest.as_slice()).unwrap();
        let mut bytes = signature.to_bytes().to_vec();
        bytes.push(27 + recovery.to_byte());
        (format!("0x{}", hex::encode(bytes)), format!("{digest}"))
    }
}

pub fn now_ms() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
}

/// The chain's EIP-712 domain and types.
pub async fn eip712(server: &TestServer) -> Value {
    let (status, body) = server.get("/account/eip712", &[("chainId", "1")]).await;
    assert_eq!(status, 200, "{body}");
    body
}
