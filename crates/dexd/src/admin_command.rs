//! `dexd admin ...`: the operator's client of the admin API (`dexd serve --admin-listen`), the
//! token read from an environment variable, never from the command line. It prints the API's
//! JSON answer and exits non-zero on a refusal. The API itself is `dexd::admin`.

use std::process::ExitCode;

use clap::{Args, Subcommand};
use serde_json::{json, Value};
use zeroize::Zeroizing;

/// Arguments of `dexd admin`.
#[derive(Args)]
pub struct Admin {
    /// The admin listener's URL (`http://127.0.0.1:9090`).
    #[arg(long)]
    url: String,
    /// The environment variable holding the operator's token.
    #[arg(long, default_value = dexd::admin::DEFAULT_ADMIN_TOKEN_ENV)]
    token_env: String,
    #[command(subcommand)]
    action: Action,
}

#[derive(Subcommand)]
enum Action {
    /// Every pair of a chain, with whether it is halted.
    Pairs {
        /// The chain.
        #[arg(long)]
        chain_id: u64,
    },
    /// Halt a pair: it takes cancels only until it is resumed.
    HaltPair {
        /// The chain.
        #[arg(long)]
        chain_id: u64,
        /// The pair, BASE/QUOTE.
        #[arg(long)]
        symbol: String,
    },
    /// Resume a halted pair.
    ResumePair {
        /// The chain.
        #[arg(long)]
        chain_id: u64,
        /// The pair, BASE/QUOTE.
        #[arg(long)]
        symbol: String,
    },
    /// List an asset (a ledger chain's; a vault chain's are in its configuration file).
    ListAsset {
        /// The chain.
        #[arg(long)]
        chain_id: u64,
        /// Its symbol.
        #[arg(long)]
        symbol: String,
        /// Decimals of its smallest unit.
        #[arg(long)]
        decimals: u32,
        /// Its token contract (left out for the chain's native asset).
        #[arg(long)]
        token: Option<String>,
    },
    /// List a pair between two listed assets; it trades at once.
    ListPair {
        /// The chain.
        #[arg(long)]
        chain_id: u64,
        /// The asset bought and sold.
        #[arg(long)]
        base: String,
        /// The asset prices are quoted in.
        #[arg(long)]
        quote: String,
        /// The price increment.
        #[arg(long)]
        tick_size: String,
        /// The amount increment.
        #[arg(long)]
        step_size: String,
        /// The smallest amount.
        #[arg(long)]
        min_amount: String,
        /// The smallest price × amount.
        #[arg(long)]
        min_notional: String,
        /// The maker fee rate (0.001 is 0.1 %).
        #[arg(long)]
        maker_fee: String,
        /// The taker fee rate.
        #[arg(long)]
        taker_fee: String,
    },
    /// Change a pair's fees: a cut at once, a raise after the chain's notice.
    SetFees {
        /// The chain.
        #[arg(long)]
        chain_id: u64,
        /// The pair, BASE/QUOTE.
        #[arg(long)]
        symbol: String,
        /// The maker fee rate (0.001 is 0.1 %).
        #[arg(long)]
        maker_fee: String,
        /// The taker fee rate.
        #[arg(long)]
        taker_fee: String,
    },
}

/// Runs `dexd admin`.
pub fn run_admin(arguments: Admin) -> ExitCode {
    let token = match std::env::var(&arguments.token_env) {
        Ok(token) => Zeroizing::new(token),
        Err(_) => {
            eprintln!(
                "dexd admin: the operator's token is not in the environment variable {}",
                arguments.token_env
            );
            return ExitCode::from(2);
        }
    };
    let base = arguments.url.trim_end_matches('/').to_string();
    let _ = rustls::crypto::ring::default_provider().install_default();
    let client = alloy_reqwest::Client::new();
    let authorization = format!("Bearer {}", token.trim());
    let request = match &arguments.action {
        Action::Pairs { chain_id } => client.get(format!("{base}/admin/pairs?chainId={chain_id}")),
        Action::HaltPair { chain_id, symbol } => client
            .post(format!("{base}/admin/haltPair"))
            .json(&json!({"chainId": chain_id.to_string(), "symbol": symbol})),
        Action::ResumePair { chain_id, symbol } => client
            .post(format!("{base}/admin/resumePair"))
            .json(&json!({"chainId": chain_id.to_string(), "symbol": symbol})),
        Action::ListAsset {
            chain_id,
            symbol,
            decimals,
            token,
        } => {
            let mut body = json!({"chainId": chain_id.to_string(), "symbol": symbol, "decimals": decimals});
            if let Some(token) = token {
                body["token"] = json!(token);
            }
            client.post(format!("{base}/admin/listAsset")).json(&body)
        }
        Action::ListPair {
            chain_id,
            base: base_asset,
            quote,
            tick_size,
            step_size,
            min_amount,
            min_notional,
            maker_fee,
            taker_fee,
        } => client.post(format!("{base}/admin/listPair")).json(&json!({
            "chainId": chain_id.to_string(),
            "base": base_asset,
            "quote": quote,
            "tickSize": tick_size,
            "stepSize": step_size,
            "minAmount": min_amount,
            "minNotional": min_notional,
            "makerFee": maker_fee,
            "takerFee": taker_fee,
        })),
        Action::SetFees {
            chain_id,
            symbol,
            maker_fee,
            taker_fee,
        } => client.post(format!("{base}/admin/setFees")).json(&json!({
            "chainId": chain_id.to_string(),
            "symbol": symbol,
            "makerFee": maker_fee,
            "takerFee": taker_fee,
        })),
    };
    let answer = crate::chain_commands::runtime().block_on(async move {
        let response = request
            .header("authorization", authorization)
            .send()
            .await
            .map_err(|error| format!("cannot reach {base}: {error}"))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|error| format!("cannot read the answer: {error}"))?;
        Ok::<_, String>((status, text))
    });
    match answer {
        Ok((status, text)) => {
            let shown = serde_json::from_str::<Value>(&text)
                .map(|value| serde_json::to_string_pretty(&value).unwrap_or(text.clone()))
                .unwrap_or(text);
            if status.is_success() {
                println!("{shown}");
                ExitCode::SUCCESS
            } else {
                eprintln!("dexd admin: {status}: {shown}");
                ExitCode::FAILURE
            }
        }
        Err(reason) => {
            eprintln!("dexd admin: {reason}");
            ExitCode::FAILURE
        }
    }
}
