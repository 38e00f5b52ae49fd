//! The request bodies of the OpenAPI document: a POST's `requestBody` in JSON and in form data,
//! each a `oneOf` of the two credential forms (a key, or the client's own signature), with their
//! examples, built from the operation's declared fields. The rest of the document is `mod.rs`'s.

use serde_json::{json, Map, Value};

use super::schemas::reference;
use super::{field_schema, DecimalRules};
use crate::api::operations::{self, Kind, Operation, SIGNED_REQUEST_FIELDS};

/// A POST's `requestBody`: JSON or form data, each a reference to its schemas (a `oneOf` of the
/// two credential forms), which go into `component_schemas`.
pub(super) fn request_body(
    operation: &Operation,
    rules: &DecimalRules,
    component_schemas: &mut Map<String, Value>,
) -> Value {
    let mut media = |content: BodyContent| {
        let mut references = Vec::new();
        for (name, schema) in request_body_schemas(operation, rules, content) {
            references.push(reference(&name));
            component_schemas.insert(name, schema);
        }
        let schema = match <[Value; 1]>::try_from(references) {
            Ok([only]) => only,
            Err(references) => json!({ "oneOf": references }),
        };
        let mut media = json!({ "schema": schema });
        if let Some(examples) = body_examples(operation, content) {
            media["examples"] = examples;
        }
        media
    };
    // A batch's list is JSON in form data too, which no form schema can state: the document
    // offers JSON only for batches (the server takes form data with the list as a JSON string).
    let mut content = json!({"application/json": media(BodyContent::Json)});
    if !has_items(operation) {
        content["application/x-www-form-urlencoded"] = media(BodyContent::Form);
    }
    json!({
        "required": true,
        "content": content,
    })
}

/// A batch's items with a key at the top carry no credential; without one, each carries its
/// own `account`, `nonce`, `expiry` and `signature`, all four.
fn items_for_credential(list: &mut Value, with_key: bool) {
    let Some(item) = list.get_mut("items") else {
        return;
    };
    if with_key {
        if let Some(properties) = item["properties"].as_object_mut() {
            for name in SIGNED_REQUEST_FIELDS {
                properties.remove(name);
            }
        }
    } else if let Some(required) = item["required"].as_array_mut() {
        required.extend(SIGNED_REQUEST_FIELDS.iter().map(|name| json!(name)));
    }
}

/// Whether an operation takes a list of objects (a batch).
fn has_items(operation: &Operation) -> bool {
    operation
        .fields
        .iter()
        .any(|field| matches!(field.kind, Kind::Items { .. }))
}

/// How a body is encoded. Both carry the same fields; form data carries every value as text, so
/// its schemas admit only the string forms (`"1"`, `"true"`), where JSON also admits numbers
/// and booleans. Each gets its own named schemas, so a client generator can tell which
/// encoding a value is meant for.
#[derive(Clone, Copy)]
pub(super) enum BodyContent {
    Json,
    Form,
}

/// A state change's body schemas, named for `components/schemas`: the operation's own fields
/// with one of the two credentials, which exclude each other (two closed objects, offered as a
/// `oneOf`): `AddOrderWithKey` and `AddOrderSigned`, `AddOrderFormWithKey` and
/// `AddOrderFormSigned`, and so on. An alias path refers to its operation's schemas.
fn request_body_schemas(operation: &Operation, rules: &DecimalRules, content: BodyContent) -> Vec<(String, Value)> {
    let has_credential = operation.fields.iter().any(|field| field.name == "privateKey");
    // A batch of orders may carry one signature of all its orders at the top (contract
    // version 4): its signed fields are then among the operation's top-level fields.
    let signs_once = has_items(operation) && operation.fields.iter().any(|field| field.name == "signature");
    let form = |credential: Credential| credential_body_schema(operation, rules, content, credential);
    let mut stem = operation.id[..1].to_uppercase() + &operation.id[1..];
    if let BodyContent::Form = content {
        stem.push_str("Form");
    }
    // Titles are the schema's own name: generators name their classes by the title.
    if !has_credential {
        let name = format!("{stem}Body");
        let mut only = form(Credential::Key);
        only["title"] = json!(name);
        return vec![(name, only)];
    }
    let with_key_name = format!("{stem}WithKey");
    let mut with_key = form(Credential::Key);
    with_key["title"] = json!(with_key_name);
    with_key["description"] = json!("The venue signs with the account's key for this request only.");
    let signed_name = format!("{stem}Signed");
    let mut signed = form(Credential::Signed);
    signed["title"] = json!(signed_name);
    signed["description"] =
        json!("The client's own EIP-712 signature of the request's typed data (GET /account/eip712); no key is sent.");
    let mut schemas = vec![(with_key_name, with_key), (signed_name, signed)];
    if signs_once {
        let name = format!("{stem}SignedOnce");
        let mut once = form(Credential::SignedOnce);
        once["title"] = json!(name);
        once["description"] = json!(
            "One EIP-712 signature of the whole batch (an OrderBatch, whose orders carry its account, nonce and \
             expiry); the items carry no credential."
        );
        schemas.push((name, once));
    }
    schemas
}

/// A state change's body schema with one credential: the fields it takes with that
/// credential, which of them are required, and the conditions between them.
fn credential_body_schema(
    operation: &Operation,
    rules: &DecimalRules,
    content: BodyContent,
    credential: Credential,
) -> Value {
    let is_signed_field = |name: &str| SIGNED_REQUEST_FIELDS.contains(&name);
    let has_credential = operation.fields.iter().any(|field| field.name == "privateKey");
    let is_batch = has_items(operation);
    let fields: Vec<&operations::Field> = operation
        .fields
        .iter()
        .filter(|field| {
            // With a key, `account` names the account an agent's key acts for; a batch
            // signed item by item carries its accounts in its items.
            !has_credential
                || match credential {
                    Credential::Key => !is_signed_field(field.name) || field.name == "account",
                    // A signed request names a subaccount by its address, in `account`.
                    Credential::Signed if is_batch => {
                        field.name != "privateKey" && field.name != "subaccount" && !is_signed_field(field.name)
                    }
                    Credential::Signed | Credential::SignedOnce => {
                        field.name != "privateKey" && field.name != "subaccount"
                    }
                }
        })
        .collect();
    let properties: Map<String, Value> = fields
        .iter()
        .map(|field| {
            let mut schema = field_schema(field.kind, field.description, rules, content);
            if let Kind::Items { .. } = field.kind {
                items_for_credential(&mut schema, !matches!(credential, Credential::Signed));
            }
            (field.name.to_string(), schema)
        })
        .collect();
    let is_transfer = operation.fields.iter().any(|field| field.name == "from");
    let required: Vec<&str> = fields
        .iter()
        .filter(|field| {
            field.required
                || (has_credential && matches!(credential, Credential::Key) && field.name == "privateKey")
                || (has_credential
                    && !matches!(credential, Credential::Key)
                    && is_signed_field(field.name)
                    && !(is_transfer && field.name == "account"))
        })
        .map(|field| field.name)
        .collect();
    let mut schema =
        json!({"type": "object", "additionalProperties": false, "properties": properties, "required": required});
    let mut conditions = rules.conditions(operation.fields);
    if operation.id == "amendOrder" {
        // An amend changes the price, the amount or both.
        conditions.push(json!({"anyOf": [{"required": ["price"]}, {"required": ["amount"]}]}));
    }
    if !conditions.is_empty() {
        schema["allOf"] = Value::Array(conditions);
    }
    schema
}

/// Which credential a request body schema describes.
#[derive(Clone, Copy)]
enum Credential {
    /// `privateKey`.
    Key,
    /// The client's signature of the request (a batch's: each item's own).
    Signed,
    /// One client signature of a whole batch of orders, at the top.
    SignedOnce,
}

/// Request bodies that run against the embedded configuration in ledger mode (test keys only).
fn body_examples(operation: &Operation, content: BodyContent) -> Option<Value> {
    const TEST_KEY: &str = "0x1111111111111111111111111111111111111111111111111111111111111111";
    const TEST_ADDRESS: &str = "0x19E7E376E7C213B7E7e7e46cc70A5dD086DAff2A";
    let example = match operation.id {
        "deposit" => {
            json!({"chainId": "1", "from": TEST_ADDRESS, "symbol": "USDC", "quantity": "1000", "privateKey": TEST_KEY})
        }
        "withdraw" => {
            json!({"chainId": "1", "from": TEST_ADDRESS, "symbol": "USDC", "quantity": "1", "privateKey": TEST_KEY})
        }
        "addOrder" => {
            let post_only = match content {
                BodyContent::Json => json!(false),
                BodyContent::Form => json!("false"),
            };
            json!({"chainId": "1", "symbol": "ETH/USDC", "type": "limit", "direction": "buy", "price": "100", "amount": "0.01", "timeInForce": "GTC", "postOnly": post_only, "clientOrderId": "example-1", "privateKey": TEST_KEY})
        }
        _ => return None,
    };
    Some(
        json!({"withTestKey": {"summary": "A test key (never a real one) on the embedded configuration", "value": example}}),
    )
}
