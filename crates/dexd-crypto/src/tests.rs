//! Known-answer and property checks of keys, addresses and typed data.

use alloy_primitives::keccak256;

use dexd_core::Address;

use crate::eip712::{text_word, DOMAIN_TYPE, EIP712_DOMAIN_MEMBERS, ORDER_TYPE_WITHOUT_CONDITIONS};
use crate::*;

/// The key of the EIP-712 specification's example: keccak256("cow").
fn cow_key() -> PrivateKey {
    PrivateKey::parse(&hex_prefixed(keccak256("cow").as_slice())).unwrap()
}

#[test]
fn cached_type_hashes_are_the_hashes_of_the_encoded_types() {
    for struct_type in [ORDER_TYPE, CANCEL_ORDER_TYPE, DEPOSIT_TYPE, WITHDRAW_TYPE] {
        assert_eq!(struct_type.type_hash(), keccak256(struct_type.encode_type()).0);
    }
    // A type that is not cached, even one named like a cached one, is hashed as it is.
    let other = StructType {
        name: "Order",
        members: &[("account", "address")],
    };
    assert_eq!(other.type_hash(), keccak256("Order(address account)").0);
}

#[test]
fn derives_the_published_address_of_a_known_key() {
    assert_eq!(
        checksummed(&cow_key().address()),
        "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"
    );
}

#[test]
fn signs_the_eip712_specification_example_to_its_published_signature() {
    // The digest of the specification's Mail example (EIP-712, "Test cases").
    let digest = parse_hex_bytes::<32>("0xbe609aee343fb3c4b28e1df9e632fca64fcfaede20f02e86244efddf30957bd2").unwrap();
    let signature = cow_key().sign_digest(digest);
    assert_eq!(signature[64], 28);
    assert_eq!(
        hex_prefixed(&signature[..32]),
        "0x4355c47d63924e8a72e509b65029052eb6c299d53a04e167c5775fd466751c9d"
    );
    assert_eq!(
        hex_prefixed(&signature[32..64]),
        "0x07299936d304c153f6443dfa05f40ff007d72911b6f72307f996231605b91562"
    );
    assert_eq!(recover_signer(digest, &signature), Some(cow_key().address()));
}

#[test]
fn refuses_keys_that_are_not_valid_secrets() {
    for text in [
        "",
        "0x",
        "0x00",
        &format!("0x{}", "0".repeat(64)),
        &format!("0x{}", "f".repeat(64)),
        &format!("0x{}g", "1".repeat(63)),
        &"1".repeat(64),
    ] {
        assert!(PrivateKey::parse(text).is_err(), "{text:?}");
    }
}

#[test]
fn the_address_cache_gives_each_key_its_own_address() {
    let cache = AddressCache::default();
    let cow = cow_key();
    let other = PrivateKey::parse(&format!("0x{}", "42".repeat(32))).unwrap();
    for _ in 0..2 {
        assert_eq!(cache.address_of(&cow), cow.address());
        assert_eq!(cache.address_of(&other), other.address());
    }
    assert_ne!(cache.address_of(&cow), cache.address_of(&other));
}

#[test]
fn the_order_digest_encoded_in_place_is_the_typed_message_digest() {
    let domain = SigningDomain::new(11155111, Address::from_bytes([0xde; 20]));
    let limit = OrderMessage {
        account: Address::from_bytes([0x12; 20]),
        symbol: "ETH/USDC".into(),
        order_type: "limit".into(),
        direction: "sell".into(),
        time_in_force: "IOC".into(),
        post_only: true,
        price: "2500.5".into(),
        amount: "0.25".into(),
        client_order_id: "bot-7".into(),
        nonce: [0x34; 32],
        expiry_ms: 1_800_000_000_123,
        trigger_price: String::new(),
        trigger_condition: String::new(),
        oco_group: String::new(),
        expires_at_ms: 0,
        without_conditions: false,
    };
    let market = OrderMessage {
        order_type: "market".into(),
        post_only: false,
        price: String::new(),
        client_order_id: String::new(),
        ..limit.clone()
    };
    let stop = OrderMessage {
        trigger_price: "2400".into(),
        trigger_condition: "below".into(),
        oco_group: "exit-7".into(),
        expires_at_ms: 1_800_000_100_000,
        ..limit.clone()
    };
    let journaled_before_conditions = OrderMessage {
        without_conditions: true,
        ..limit.clone()
    };
    assert_ne!(
        domain.order_digest(&limit),
        domain.order_digest(&journaled_before_conditions)
    );
    for message in [limit, market, stop, journaled_before_conditions] {
        assert_eq!(domain.order_digest(&message), domain.digest(&message.typed()));
    }
    for text in [
        "limit", "market", "buy", "sell", "GTC", "IOC", "FOK", "above", "below", "", "ETH/USDC", "limit ",
    ] {
        assert_eq!(text_word(text), keccak256(text.as_bytes()).0, "{text:?}");
    }
}

#[test]
fn the_order_type_encodes_as_eip712_writes_it() {
    assert_eq!(
        ORDER_TYPE.encode_type(),
        "Order(address account,string symbol,string orderType,string direction,string timeInForce,\
         bool postOnly,string price,string amount,string clientOrderId,uint256 nonce,uint256 expiry,\
         string triggerPrice,string triggerCondition,string ocoGroup,uint256 expiresAt)"
    );
    assert_eq!(
        ORDER_TYPE_WITHOUT_CONDITIONS.encode_type(),
        "Order(address account,string symbol,string orderType,string direction,string timeInForce,\
         bool postOnly,string price,string amount,string clientOrderId,uint256 nonce,uint256 expiry)"
    );
    assert_eq!(EIP712_DOMAIN_MEMBERS.encode_type(), DOMAIN_TYPE);
}

#[test]
fn a_key_never_shows_in_debug_output() {
    let text = format!("{:?}", cow_key());
    assert_eq!(text, "PrivateKey(<redacted>)");
}

#[test]
fn addresses_need_a_valid_checksum_only_in_mixed_case() {
    let checksummed_text = "0xCD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826";
    let address = parse_address(checksummed_text).unwrap();
    assert_eq!(parse_address(&checksummed_text.to_lowercase()).unwrap(), address);
    assert_eq!(
        parse_address(&format!("0x{}", checksummed_text[2..].to_uppercase())).unwrap(),
        address
    );
    assert_eq!(
        parse_address("0xcD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"),
        Err(AddressError::BadChecksum)
    );
    assert_eq!(parse_address("0x1234"), Err(AddressError::Malformed));
    assert_eq!(
        parse_address("CD2a3d9F938E13CD947Ec05AbC7FE734Df8DD826"),
        Err(AddressError::Malformed)
    );
}

#[test]
fn only_the_low_s_signature_with_v_27_or_28_is_contract_canonical() {
    let key = cow_key();
    let digest = keccak256("a withdrawal").0;
    let signature = key.sign_digest(digest);
    assert!(
        is_contract_canonical_signature(&signature),
        "the venue signs the canonical form"
    );
    // v as 0/1: the same signer, a form the vault refuses.
    let mut zero_one = signature;
    zero_one[64] -= 27;
    assert_eq!(recover_signer(digest, &zero_one), Some(key.address()));
    assert!(!is_contract_canonical_signature(&zero_one));
    // The high-s twin: s' = n - s with v flipped recovers the same signer too.
    let order = alloy_primitives::U256::from_be_bytes([
        0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xfe, 0xba, 0xae,
        0xdc, 0xe6, 0xaf, 0x48, 0xa0, 0x3b, 0xbf, 0xd2, 0x5e, 0x8c, 0xd0, 0x36, 0x41, 0x41,
    ]);
    let s = alloy_primitives::U256::from_be_slice(&signature[32..64]);
    let mut high_s = signature;
    high_s[32..64].copy_from_slice(&(order - s).to_be_bytes::<32>());
    high_s[64] = if signature[64] == 27 { 28 } else { 27 };
    assert_eq!(recover_signer(digest, &high_s), Some(key.address()));
    assert!(!is_contract_canonical_signature(&high_s));
}

#[test]
fn an_order_batch_digest_is_alloys_eip712_signing_hash_of_its_typed_data() {
    // alloy's own EIP-712 encoder (arrays of structs included) over the typed data dexd serves:
    // an independent implementation of the same standard.
    let domain = SigningDomain::new(31337, Address::from_bytes([0xab; 20]));
    let account = Address::from_bytes([0x42; 20]);
    let first = OrderMessage {
        account,
        symbol: "ETH/USDC".into(),
        order_type: "limit".into(),
        direction: "buy".into(),
        time_in_force: "GTC".into(),
        post_only: false,
        price: "2500".into(),
        amount: "0.5".into(),
        client_order_id: "q-1".into(),
        nonce: [0x07; 32],
        expiry_ms: 1_900_000_000_000,
        trigger_price: String::new(),
        trigger_condition: String::new(),
        oco_group: String::new(),
        expires_at_ms: 0,
        without_conditions: false,
    };
    let second = OrderMessage {
        direction: "sell".into(),
        price: "2510".into(),
        trigger_price: "2400".into(),
        trigger_condition: "below".into(),
        expires_at_ms: 1_900_000_100_000,
        ..first.clone()
    };
    let orders = [first, second];
    let hashes: Vec<[u8; 32]> = orders.iter().map(eip712::order_struct_hash).collect();
    let ours = domain.order_batch_digest(&account, &hashes, [0x07; 32], 1_900_000_000_000);
    let typed_data = domain.order_batch_typed_data(&account, &orders, [0x07; 32], 1_900_000_000_000);
    let alloys: alloy_dyn_abi::TypedData = serde_json::from_value(typed_data).unwrap();
    assert_eq!(ours, alloys.eip712_signing_hash().unwrap().0);
    assert_eq!(
        ORDER_BATCH_TYPE.type_hash(),
        keccak256(format!(
            "OrderBatch(address account,Order[] orders,uint256 nonce,uint256 expiry){}",
            ORDER_TYPE.encode_type()
        ))
        .0
    );
    // Each order's proof holds its own order and no other.
    let proof = BatchProof {
        index: 1,
        order_hashes: hashes.clone().into(),
    };
    assert!(proof.holds(&orders[1]));
    assert!(!proof.holds(&orders[0]));
    // Another order in its place, or the orders in another order, sign another digest.
    let swapped = [hashes[1], hashes[0]];
    assert_ne!(
        ours,
        domain.order_batch_digest(&account, &swapped, [0x07; 32], 1_900_000_000_000)
    );
}
