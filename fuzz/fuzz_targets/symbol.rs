//! Asset and pair lookup by symbol in the embedded configuration: never panics, is
//! case-insensitive, and finds only listed symbols.
#![no_main]

use dexd_venue::config::Config;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    thread_local! {
        static CONFIG: Config = Config::embedded_default();
    }
    CONFIG.with(|config| {
        for chain in &config.chains {
            if let Some(pair) = chain.pair(text) {
                assert!(chain.pair_config(pair).symbol.eq_ignore_ascii_case(text));
            }
            if let Some(asset) = chain.asset(text) {
                assert!(chain.asset_config(asset).symbol.eq_ignore_ascii_case(text));
            }
        }
    });
});
