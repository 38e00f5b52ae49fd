//! Configurations refused with their line, and the embedded one accepted.

use super::parse::line_of;
use super::*;

#[test]
fn the_embedded_default_has_three_real_networks() {
    let config = Config::embedded_default();
    let ids: Vec<u64> = config.chains.iter().map(|chain| chain.chain_id).collect();
    assert_eq!(ids, vec![1, 11_155_111, 42_161]);
    let mainnet = config.chain(1).unwrap();
    assert_eq!(mainnet.pair("eth/usdc"), Some(PairIndex(0)));
    let usdc = mainnet.asset_config(mainnet.asset("usdc").unwrap());
    assert_eq!(
        dexd_crypto::checksummed(&usdc.address.unwrap()),
        "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48"
    );
}

#[test]
fn a_bad_pair_is_refused_with_its_line() {
    let text = DEFAULT_CONFIG_TOML.replacen("tick_size = \"0.01\"", "tick_size = \"0.000001\"", 1);
    let error = Config::parse(&text).unwrap_err();
    let expected_line = line_of(&text, text.find("[[chains.pairs]]").unwrap());
    assert_eq!(error.line, Some(expected_line), "{error}");
    assert!(error.message.contains("ETH/USDC"), "{error}");
}

#[test]
fn a_bad_checksum_and_a_syntax_error_are_refused_with_their_lines() {
    let text = DEFAULT_CONFIG_TOML.replacen(
        "0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
        "0xa0B86991c6218b36c1d19D4a2e9Eb0cE3606eB48",
        1,
    );
    let error = Config::parse(&text).unwrap_err();
    assert!(error.message.contains("USDC"), "{error}");
    assert!(error.line.is_some());
    let error = Config::parse("[[chains]]\nchain_id = \"x\"\n").unwrap_err();
    assert_eq!(error.line, Some(2), "{error}");
    let error = Config::parse("[[chains]]\nchain_id = 1\nnmae = \"x\"\n").unwrap_err();
    assert!(error.line.is_some(), "{error}");
}
