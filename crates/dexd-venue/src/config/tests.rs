//! Configurations refused with their line, and the embedded one accepted.

use super::line_of;
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

/// The embedded default with its first chain in vault custody, with `settings` added.
fn vault_config_text(rpc_url: &str, settings: &str) -> String {
    DEFAULT_CONFIG_TOML.replacen(
        "[[chains.assets]]",
        &format!(
            "[chains.custody]\nmode = \"vault\"\nrpc_url = \"{rpc_url}\"\nvault = \"0x00000000000000000000000000000000000de7d1\"\noperator_key_env = \"DEXD_TEST_OPERATOR_KEY\"\n{settings}\n[[chains.assets]]"
        ),
        1,
    )
}

#[test]
fn the_withdrawal_expiry_margin_is_bounded_and_shorter_than_the_validity() {
    for (settings, accepted) in [
        ("", true),
        ("withdrawal_expiry_margin_ms = 0\n", true),
        ("withdrawal_expiry_margin_ms = 1800000\n", true),
        ("withdrawal_expiry_margin_ms = 1800001\n", false),
        ("withdrawal_validity_ms = 300000\n", false),
        ("withdrawal_validity_ms = 300001\n", true),
    ] {
        let parsed = Config::parse(&vault_config_text("http://127.0.0.1:8545", settings));
        assert_eq!(parsed.is_ok(), accepted, "{settings}: {:?}", parsed.err());
    }
    let parsed = Config::parse(&vault_config_text("http://127.0.0.1:8545", "")).unwrap();
    let vault = parsed.chains[0].vault().unwrap();
    assert_eq!(
        vault.withdrawal_expiry_margin_ms, 300_000,
        "the default is five minutes"
    );
}

#[test]
fn a_node_off_this_machine_must_be_reached_over_https() {
    for (host, accepted) in [
        ("http://127.0.0.1:8545", true),
        ("http://localhost:8545/", true),
        ("http://[::1]:8545", true),
        ("https://eth.example/v2/key", true),
        ("http://eth.example/v2/key", false),
        ("http://10.0.0.5:8545", false),
        ("http://127.0.0.1.example:8545", false),
        ("http://localhost:1@eth.example", false),
        ("http://127.0.0.2:8545", true),
    ] {
        let parsed = Config::parse(&vault_config_text(host, ""));
        assert_eq!(parsed.is_ok(), accepted, "{host}: {:?}", parsed.err());
        if let Err(error) = parsed {
            assert!(error.message.contains("https://"), "{}", error.message);
            assert!(
                !error.message.contains("eth.example"),
                "the message quotes the URL: {}",
                error.message
            );
        }
    }
}

#[test]
fn two_assets_of_one_token_or_two_native_assets_are_refused() {
    let usdc = "symbol = \"USDC\"\nname = \"USD Coin\"\ndecimals = 6\naddress = \"0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48\"";
    let second_usdc = format!("[[chains.assets]]\n{}\n\n[[chains.assets]]\nsymbol = \"USDC2\"\nname = \"USD Coin again\"\ndecimals = 6\naddress = \"0xA0b86991c6218b36c1d19D4a2e9Eb0cE3606eB48\"\n", usdc);
    let text = DEFAULT_CONFIG_TOML.replacen(&format!("[[chains.assets]]\n{usdc}\n"), &second_usdc, 1);
    assert_ne!(text, DEFAULT_CONFIG_TOML, "the test's edit applies");
    let error = Config::parse(&text).unwrap_err();
    assert!(
        error.message.contains("USDC and USDC2 are both the token 0xA0b8"),
        "{}",
        error.message
    );
    let second_native = DEFAULT_CONFIG_TOML.replacen(
        "[[chains.assets]]\nsymbol = \"USDC\"",
        "[[chains.assets]]\nsymbol = \"ETH2\"\nname = \"Ether again\"\ndecimals = 18\nnative = true\n\n[[chains.assets]]\nsymbol = \"USDC\"",
        1,
    );
    assert_ne!(second_native, DEFAULT_CONFIG_TOML, "the test's edit applies");
    let error = Config::parse(&second_native).unwrap_err();
    assert!(
        error.message.contains("ETH and ETH2 are both the chain's native asset"),
        "{}",
        error.message
    );
}

#[test]
fn an_accounts_live_nonce_limit_is_positive_and_within_the_chains() {
    let line = "max_live_nonces_per_account = 100000";
    assert!(DEFAULT_CONFIG_TOML.contains(line));
    assert_eq!(Config::embedded_default().limits.max_live_nonces_per_account, 100_000);
    for refused in [
        "max_live_nonces_per_account = 0",
        "max_live_nonces_per_account = 1000001",
    ] {
        let error = Config::parse(&DEFAULT_CONFIG_TOML.replacen(line, refused, 1)).unwrap_err();
        assert!(
            error.message.contains("max_live_nonces_per_account"),
            "{refused}: {error}"
        );
    }
    let config = Config::parse(&DEFAULT_CONFIG_TOML.replacen(line, "max_live_nonces_per_account = 7", 1)).unwrap();
    assert_eq!(
        config.chains[0]
            .engine_config(&config.limits)
            .limits
            .max_live_nonces_per_account,
        7
    );
}

#[test]
fn confirmations_are_a_depth_or_finality() {
    for (settings, expected) in [
        ("", Some(Confirmations::Blocks(12))),
        ("confirmations = 1\n", Some(Confirmations::Blocks(1))),
        ("confirmations = 10000\n", Some(Confirmations::Blocks(10_000))),
        ("confirmations = \"finalized\"\n", Some(Confirmations::Finalized)),
        ("confirmations = 0\n", None),
        ("confirmations = 10001\n", None),
        ("confirmations = \"safe\"\n", None),
        ("confirmations = -3\n", None),
    ] {
        let parsed = Config::parse(&vault_config_text("http://127.0.0.1:8545", settings));
        match expected {
            Some(confirmations) => assert_eq!(
                parsed.unwrap().chains[0].vault().unwrap().confirmations,
                confirmations,
                "{settings}"
            ),
            None => assert!(
                parsed.unwrap_err().message.contains("confirmations must be"),
                "{settings}"
            ),
        }
    }
}

#[test]
fn a_roots_data_goes_in_blobs_or_calldata_and_a_full_set_passes_within_the_snapshot_interval() {
    for (settings, expected) in [
        ("", Some((RootDataCarrier::Blobs, 604_800_000, 2_520))),
        (
            "data = \"calldata\"\n",
            Some((RootDataCarrier::Calldata, 604_800_000, 2_520)),
        ),
        (
            "data = \"blobs\"\nroot_interval_ms = 1000\nsnapshot_interval_ms = 8000\n",
            Some((RootDataCarrier::Blobs, 8_000, 4)),
        ),
        (
            "snapshot_interval_ms = 240000\n",
            Some((RootDataCarrier::Blobs, 240_000, 1)),
        ),
        ("data = \"sidecar\"\n", None),
        ("snapshot_interval_ms = 239999\n", None),
        ("snapshot_interval_ms = 1209600001\n", None),
        ("snapshot_interval_ms = 0\n", None),
    ] {
        let parsed = Config::parse(&vault_config_text("http://127.0.0.1:8545", settings));
        match expected {
            Some((carrier, interval_ms, slices)) => {
                let parsed = parsed.unwrap();
                let vault = parsed.chains[0].vault().unwrap();
                assert_eq!(
                    (vault.root_data, vault.snapshot_interval_ms, vault.snapshot_slices()),
                    (carrier, interval_ms, slices),
                    "{settings}"
                );
            }
            None => {
                let message = parsed.unwrap_err().message;
                assert!(
                    message.contains("data must be") || message.contains("snapshot_interval_ms must be"),
                    "{settings}: {message}"
                );
            }
        }
    }
}

#[test]
fn the_journal_is_sqlite_by_default_or_postgres_with_its_url_node_and_lease() {
    assert_eq!(Config::embedded_default().journal, JournalBackend::Sqlite);
    let with = |sections: &str| Config::parse(&format!("{DEFAULT_CONFIG_TOML}\n{sections}"));
    let parsed = with(
        "[store]\njournal = \"postgres\"\npostgres_url = \"postgresql://dexd:secret@db/dexd\"\n\
         [cluster]\nnode_id = \"node-a\"\nlease_ms = 2000\n",
    )
    .unwrap();
    match &parsed.journal {
        JournalBackend::Postgres(backend) => {
            assert_eq!(backend.url, "postgresql://dexd:secret@db/dexd");
            assert_eq!((backend.node_id.as_str(), backend.lease_ms), ("node-a", 2000));
        }
        other => panic!("{other:?}"),
    }
    assert!(
        !format!("{:?}", parsed.journal).contains("secret"),
        "the URL never reaches a debug print"
    );
    let on_postgres = "[store]\njournal = \"postgres\"\npostgres_url = \"postgresql://db/dexd\"\n";
    let vault_chain = format!("{}\n{on_postgres}", vault_config_text("http://127.0.0.1:8545", ""));
    // A vault chain runs on the shared journal too: its custody acts on the chain's leader only.
    let on_cluster = Config::parse(&vault_chain).unwrap();
    assert!(on_cluster.chains[0].vault().is_some());
    assert!(matches!(on_cluster.journal, JournalBackend::Postgres(_)));
    let defaults = with(on_postgres).unwrap();
    assert!(
        matches!(&defaults.journal, JournalBackend::Postgres(backend) if backend.lease_ms == 3_000 && backend.node_id == "dexd")
    );
    for (sections, fault) in [
        ("[store]\njournal = \"postgres\"\n", "exactly one of postgres_url"),
        ("[store]\njournal = \"mysql\"\n", "\"sqlite\" or \"postgres\""),
        (
            "[store]\njournal = \"sqlite\"\npostgres_url = \"postgresql://db\"\n",
            "are for journal",
        ),
        ("[cluster]\nnode_id = \"a\"\n", "[cluster] needs"),
        (
            "[store]\njournal = \"postgres\"\npostgres_url = \"postgresql://db\"\n[cluster]\nlease_ms = 100\n",
            "lease_ms must be between",
        ),
        (
            "[store]\njournal = \"postgres\"\npostgres_url = \"postgresql://db\"\n[cluster]\nnode_id = \"a b\"\n",
            "node_id must be",
        ),
        (
            "[store]\njournal = \"postgres\"\npostgres_url_env = \"DEXD_TEST_UNSET_VARIABLE_FOR_POSTGRES\"\n",
            "is not set",
        ),
    ] {
        let refused = with(sections).unwrap_err();
        assert!(refused.message.contains(fault), "{sections}: {}", refused.message);
    }
}

#[test]
fn the_cluster_secret_comes_from_the_environment_is_long_enough_and_is_never_printed() {
    let with = |sections: &str| Config::parse(&format!("{DEFAULT_CONFIG_TOML}\n{sections}"));
    let cluster = |variable: &str| {
        format!(
            "[store]\njournal = \"postgres\"\npostgres_url = \"postgresql://db/dexd\"\n\
             [cluster]\nnode_id = \"node-a\"\nsecret_env = \"{variable}\"\n"
        )
    };
    // Variables of this test alone (the tests of a binary share its environment).
    std::env::set_var("DEXD_CONFIG_TEST_SECRET_LONG", "0123456789abcdef0123456789abcdef");
    std::env::set_var("DEXD_CONFIG_TEST_SECRET_SHORT", "too short");
    let parsed = with(&cluster("DEXD_CONFIG_TEST_SECRET_LONG")).unwrap();
    let secret = parsed.cluster_secret.as_ref().expect("a secret");
    assert_eq!(secret.bytes(), b"0123456789abcdef0123456789abcdef");
    assert!(
        !format!("{parsed:?}").contains("0123456789abcdef"),
        "never in a debug print"
    );
    let short = with(&cluster("DEXD_CONFIG_TEST_SECRET_SHORT")).unwrap_err();
    assert!(short.message.contains("at least 32 bytes"), "{short}");
    assert!(!short.message.contains("too short"), "the value is not in the message");
    let missing = with(&cluster("DEXD_CONFIG_TEST_SECRET_MISSING")).unwrap_err();
    assert!(missing.message.contains("is not set"), "{missing}");
    assert!(with("").unwrap().cluster_secret.is_none());
}
