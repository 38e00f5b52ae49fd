//! Decimal parsing: never panics; what parses prints canonically and parses back to itself.
#![no_main]

use dexd_core::Decimal;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let Ok(decimal) = Decimal::parse(text) else {
        return;
    };
    let printed = decimal.to_string();
    let reparsed = Decimal::parse(&printed).expect("a printed decimal parses");
    assert_eq!(reparsed, decimal, "{text:?} printed as {printed:?}");
    assert_eq!(reparsed.to_string(), printed, "printing is canonical");
    for decimals in [0, 6, 8, 18] {
        if let Ok(units) = decimal.to_scaled_units(decimals) {
            assert_eq!(dexd_core::decimal::format_scaled_units(units, decimals), printed);
        }
    }
});
