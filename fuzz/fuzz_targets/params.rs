//! Request parameters from untrusted bodies and query strings (JSON and form data), checked
//! against every operation and read through every accessor: never panics.
#![no_main]

use dexd::api::operations::ALL;
use dexd::api::params::Params;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Some((&selector, body)) = data.split_first() else {
        return;
    };
    let parsed = match selector % 3 {
        0 => Params::from_body(Some("application/json"), body),
        1 => Params::from_body(Some("application/x-www-form-urlencoded"), body),
        _ => match std::str::from_utf8(body) {
            Ok(query) => Params::from_query(Some(query)),
            Err(_) => return,
        },
    };
    let Ok(params) = parsed else {
        return;
    };
    for operation in ALL {
        let _ = params.check_allowed(operation);
        for field in operation.fields {
            let _ = params.text(field.name);
            let _ = params.decimal(field.name);
            let _ = params.integer(field.name);
            let _ = params.bool(field.name);
            let _ = params.uint256(field.name);
        }
    }
    let _ = params.private_key();
});
