//! A stateful random test of the vault and the venue together: random sequences of deposits
//! (credited at once, late, or never before the end), trades that move value between accounts
//! and tokens, withdrawals, the venue's roots, the guardian's vetoes (of the venue's roots now and
//! then, and always of a root planted with the operator's stolen key), time passing and payments,
//! then a freeze and every account's exit, on a real node (anvil) with the real contract, dexd's
//! own engine, tree and payment rule (`payable_through`: a withdrawal is paid only through a
//! final root of the venue's covering its debit).
//!
//! After the exits it checks, for every account and token: the account got exactly its exit
//! root's balance, plus its withdrawals debited and never paid, plus what it deposited after the
//! root; every withdrawal paid was debited at or before the exit root's position (so nothing
//! paid is owed again); and the vault, having paid everyone, holds nothing: it never owed more
//! than it held, and no deposit was stranded.
//!
//! `DEXD_EXIT_RANDOM_SEQUENCES` (default 1,000) and `DEXD_EXIT_RANDOM_SEED` (default fixed) set
//! the run; `scripts/soak-exit` runs a longer one with a fresh seed. The guardian is honest and
//! always in time: without one, a stolen operator key can plant the exit root (the README's trust
//! model says so).

mod common;

use std::collections::HashMap;

use alloy::eips::BlockId;
use alloy::primitives::{Address as ChainAddress, FixedBytes, TxKind, U256};
use alloy::signers::local::PrivateKeySigner;
use alloy::sol_types::SolCall;
use common::chain::{TestChain, USDC_UNIT, WBTC_UNIT};
use dexd_core::{
    Address, Amount, AssetIndex, AssetSpec, ChainDeposit, Command, CustodyMode, Direction, Engine, EngineConfig,
    EngineLimits, FeeRate, LiabilityRootRecord, NewOrder, OrderId, OrderType, PairDefinition, PairIndex, RootOrigin,
    RootStanding, TimeInForce, TransferRequest, VaultWithdrawal, WithdrawalKey,
};
use dexd_crypto::liability_tree::{LiabilityLeaf, LiabilityTree};
use dexd_crypto::{PrivateKey, SigningDomain};
use dexd_custody::deploy::{self, RootTerms};
use dexd_custody::liabilities::TreeAtPosition;
use dexd_custody::node::Node;
use dexd_custody::vault::{chain_address, venue_address, DexdVault, DexdVaultV2, WithdrawalTerms};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

const TERMS: RootTerms = RootTerms {
    max_root_age_s: 3_600,
    challenge_period_s: 60,
    guardian: None,
};
const FEES: Address = Address::from_bytes([0xfe; 20]);
const USDC: AssetIndex = AssetIndex(0);
const WBTC: AssetIndex = AssetIndex(1);

fn engine_config() -> EngineConfig {
    let decimal = |text: &str| dexd_core::Decimal::parse(text).unwrap();
    EngineConfig {
        assets: vec![AssetSpec { decimals: 6 }, AssetSpec { decimals: 8 }],
        pairs: vec![PairDefinition {
            base: WBTC,
            quote: USDC,
            tick_size: decimal("1"),
            step_size: decimal("0.0001"),
            min_amount: decimal("0.0001"),
            min_notional: decimal("0"),
            maker_fee: FeeRate::from_parts_per_million(1_000).unwrap(),
            taker_fee: FeeRate::from_parts_per_million(2_000).unwrap(),
        }],
        fee_account: FEES,
        custody: CustodyMode::Vault,
        limits: EngineLimits::default(),
    }
}

/// The chain, with the vault deployed and the users funded and approving it.
struct World {
    chain: TestChain,
    users: Vec<PrivateKeySigner>,
    tokens: [ChainAddress; 2],
    /// Each sender's next nonce: read after each revert, then counted here, so that a
    /// transaction is one send and one receipt (thousands of them make a run).
    nonces: parking_lot::Mutex<HashMap<ChainAddress, u64>>,
}

impl World {
    async fn send(&self, from: &PrivateKeySigner, to: ChainAddress, input: Vec<u8>) -> dexd_custody::node::Receipt {
        let node = &self.chain.node;
        let cached = self.nonces.lock().get(&from.address()).copied();
        let nonce = match cached {
            Some(nonce) => nonce,
            None => node.latest_nonce(from.address()).await.unwrap(),
        };
        self.nonces.lock().insert(from.address(), nonce + 1);
        let terms = dexd_custody::node::TransactionTerms {
            to: TxKind::Call(to),
            input,
            value: U256::ZERO,
            nonce,
            fees: dexd_custody::node::Fees {
                max_fee_per_gas: 100_000_000_000,
                max_priority_fee_per_gas: 1_000_000_000,
                gas_limit: 3_000_000,
            },
        };
        let sent = node.send(from, terms).await.unwrap();
        let receipt = node
            .wait_for_receipt(
                sent.hash,
                std::time::Duration::from_millis(2),
                std::time::Duration::from_secs(10),
            )
            .await
            .unwrap();
        assert!(receipt.succeeded, "a transaction to {to} reverted");
        receipt
    }

    async fn view<Call: SolCall>(&self, call: Call) -> Call::Return {
        self.chain
            .node
            .view(self.chain.vault, call, BlockId::latest())
            .await
            .unwrap()
    }

    async fn time_s(&self) -> u64 {
        let head = self.chain.node.head().await.unwrap();
        self.chain.node.block(head).await.unwrap().unwrap().1
    }

    async fn holdings(&self, token: ChainAddress) -> U256 {
        self.chain.vault_balance(Some(token)).await
    }
}

async fn world() -> World {
    let chain = TestChain::start_with_terms(&[], TERMS).await;
    let users: Vec<PrivateKeySigner> = chain.users.clone();
    let tokens = [chain.usdc, chain.wbtc];
    for user in &users {
        for token in tokens {
            deploy::approve(&chain.node, user, token, chain.vault, U256::MAX)
                .await
                .unwrap();
        }
    }
    World {
        chain,
        users,
        tokens,
        nonces: parking_lot::Mutex::default(),
    }
}

/// A deposit the vault took: its number, account, asset and amount.
#[derive(Clone, Copy)]
struct VaultDeposit {
    id: u64,
    account: Address,
    asset: AssetIndex,
    units: u128,
    block: u64,
}

/// One sequence's venue: the engine, what it has not credited yet, the trees it committed.
struct Venue<'w> {
    world: &'w World,
    engine: Engine,
    time_ms: u64,
    uncredited: std::collections::VecDeque<VaultDeposit>,
    trees: HashMap<u64, std::sync::Arc<TreeAtPosition>>,
    /// Each withdrawal paid: its debit's position.
    paid_debits: Vec<u64>,
    /// How many roots the stolen key planted.
    planted: u32,
    next_withdrawal: u8,
    next_order: u64,
}

impl<'w> Venue<'w> {
    fn run(&mut self, command: Command) -> bool {
        self.time_ms += 1;
        let mut events = Vec::new();
        let applied = self.engine.execute(command, self.time_ms, &mut events).is_ok();
        self.engine.check_invariants().unwrap();
        applied
    }

    async fn deposit(&mut self, rng: &mut StdRng) {
        let user = &self.world.users[rng.gen_range(0..self.world.users.len())];
        let asset = if rng.gen_bool(0.5) { USDC } else { WBTC };
        let units = match asset {
            USDC => rng.gen_range(1..=5_000) * USDC_UNIT,
            _ => rng.gen_range(1..=20) * WBTC_UNIT / 10,
        };
        let id: u64 = self.world.view(DexdVault::depositCountCall {}).await.saturating_to();
        let token = self.world.tokens[usize::from(asset.0)];
        let call = DexdVault::depositCall {
            token,
            amount: U256::from(units),
        };
        let receipt = self.world.send(user, self.world.chain.vault, call.abi_encode()).await;
        self.uncredited.push_back(VaultDeposit {
            id,
            account: venue_address(&user.address()),
            asset,
            units,
            block: receipt.block_number,
        });
    }

    fn credit_oldest(&mut self) {
        let Some(deposit) = self.uncredited.pop_front() else {
            return;
        };
        let token = venue_address(&self.world.tokens[usize::from(deposit.asset.0)]);
        let credited = self.run(Command::CreditChainDeposit(ChainDeposit {
            deposit_id: deposit.id,
            account: deposit.account,
            token,
            asset: Some(deposit.asset),
            amount: Some(Amount::from_units(deposit.units)),
            tx_hash: [deposit.id as u8; 32],
            log_index: 0,
            block_number: deposit.block,
            block_hash: [1; 32],
        }));
        assert!(credited, "the vault's next deposit is credited");
    }

    fn trade(&mut self, rng: &mut StdRng) {
        let users = &self.world.users;
        let seller = venue_address(&users[rng.gen_range(0..users.len())].address());
        let buyer = venue_address(&users[rng.gen_range(0..users.len())].address());
        let spec = self.engine.pair_spec(PairIndex(0)).unwrap().clone();
        let price = spec
            .price_from_decimal(dexd_core::Decimal::parse(&rng.gen_range(20_000..70_000).to_string()).unwrap())
            .unwrap();
        let quantity = spec
            .quantity_from_decimal(dexd_core::Decimal::parse(&format!("0.{:04}", rng.gen_range(1..5_000))).unwrap())
            .unwrap();
        // The seller's order rests; the buyer's takes what it can at once.
        for (account, direction, time_in_force) in [
            (seller, Direction::Sell, TimeInForce::GoodTillCancelled),
            (buyer, Direction::Buy, TimeInForce::ImmediateOrCancel),
        ] {
            self.next_order += 1;
            let mut id = [0u8; 32];
            id[..8].copy_from_slice(&self.next_order.to_be_bytes());
            self.run(Command::PlaceOrder(NewOrder {
                order_id: OrderId::from_bytes(id),
                client_order_id: None,
                account,
                pair: PairIndex(0),
                order_type: OrderType::Limit,
                direction,
                time_in_force,
                post_only: false,
                price: Some(price),
                quantity,
            }));
        }
        // What did not fill is cancelled, so that balances are free to withdraw and exit.
        for account in [seller, buyer] {
            self.run(Command::CancelAll { account, pair: None });
        }
    }

    fn withdraw(&mut self, rng: &mut StdRng) {
        let user = &self.world.users[rng.gen_range(0..self.world.users.len())];
        let account = venue_address(&user.address());
        let asset = if rng.gen_bool(0.5) { USDC } else { WBTC };
        let available = self.engine.balance(&account, asset).available.units();
        if available == 0 {
            return;
        }
        let units = rng.gen_range(1..=available);
        self.next_withdrawal = self.next_withdrawal.wrapping_add(1);
        let terms = WithdrawalTerms {
            account,
            token: Some(venue_address(&self.world.tokens[usize::from(asset.0)])),
            amount_units: units,
            withdrawal_id: [self.next_withdrawal; 32],
            expiry_ms: 4_000_000_000_000,
        };
        let domain = SigningDomain::new(self.world.chain.chain_id, venue_address(&self.world.chain.vault));
        let key = PrivateKey::parse(&format!("0x{}", alloy::hex::encode(user.to_bytes()))).unwrap();
        let signature = key.sign_digest(terms.digest(&domain));
        self.run(Command::RequestWithdrawal(VaultWithdrawal {
            request: TransferRequest {
                transfer_id: terms.withdrawal_id,
                account,
                asset,
                amount: Amount::from_units(units),
            },
            expiry_ms: terms.expiry_ms,
            signature,
        }));
    }

    async fn commit_root(&mut self) {
        let position = self.engine.journal_sequence();
        let tokens: Vec<Option<Address>> = self
            .world
            .tokens
            .iter()
            .map(|token| Some(venue_address(token)))
            .collect();
        let tree = std::sync::Arc::new(TreeAtPosition::build(position, &self.engine, &tokens, None));
        let (tokens, totals) = tree.commit_arguments(|_| true);
        let call = DexdVaultV2::commitRootCall {
            root: FixedBytes(tree.root()),
            journalSequence: position,
            depositCount_: U256::from(tree.deposit_count),
            tokens,
            totals,
        };
        let receipt = self
            .world
            .send(&self.world.chain.operator, self.world.chain.vault, call.abi_encode())
            .await;
        self.record_root(
            tree.root(),
            position,
            tree.deposit_count,
            receipt,
            RootOrigin::Venue,
            tree.totals.clone(),
        )
        .await;
        let epoch = self.engine.custody().liabilities().roots_recorded() - 1;
        self.trees.insert(epoch, tree);
    }

    async fn record_root(
        &mut self,
        root: [u8; 32],
        journal_sequence: u64,
        deposit_count: u64,
        receipt: dexd_custody::node::Receipt,
        origin: RootOrigin,
        totals: Vec<Amount>,
    ) {
        let committed_at_s = self
            .world
            .chain
            .node
            .block(receipt.block_number)
            .await
            .unwrap()
            .unwrap()
            .1;
        let epoch = self.engine.custody().liabilities().roots_recorded();
        let recorded = self.run(Command::RecordLiabilityRoot(LiabilityRootRecord {
            epoch,
            root,
            journal_sequence,
            deposit_count,
            tx_hash: [2; 32],
            block_number: receipt.block_number,
            committed_at_ms: committed_at_s * 1_000,
            final_after_ms: (committed_at_s + TERMS.challenge_period_s) * 1_000,
            origin,
            totals,
        }));
        assert!(recorded);
    }

    /// The stolen key plants a root owing the vault's whole holdings to the last user; the
    /// guardian vetoes it in its challenge period.
    async fn plant_root(&mut self, rng: &mut StdRng) {
        let thief = venue_address(&self.world.users.last().unwrap().address());
        let mut leaves = Vec::new();
        for token in self.world.tokens {
            leaves.push(LiabilityLeaf {
                account: thief,
                token: venue_address(&token),
                balance: self.world.holdings(token).await.saturating_to(),
                credited_deposits: 0,
                debited_withdrawals: 0,
            });
        }
        let fake = LiabilityTree::build(&leaves, 1);
        let deposits: u64 = self.world.view(DexdVault::depositCountCall {}).await.saturating_to();
        let position = if rng.gen_bool(0.5) {
            u64::MAX
        } else {
            self.engine.journal_sequence()
        };
        let mut tokens = self.world.tokens.to_vec();
        tokens.sort();
        let call = DexdVaultV2::commitRootCall {
            root: FixedBytes(fake.root()),
            journalSequence: position,
            depositCount_: U256::from(deposits),
            totals: vec![U256::ZERO; tokens.len()],
            tokens,
        };
        let epoch = self.engine.custody().liabilities().roots_recorded();
        let receipt = self
            .world
            .send(&self.world.chain.operator, self.world.chain.vault, call.abi_encode())
            .await;
        self.record_root(
            fake.root(),
            position,
            deposits,
            receipt,
            RootOrigin::Foreign,
            Vec::new(),
        )
        .await;
        assert!(
            self.engine.custody().liabilities().payable_through().is_none(),
            "a foreign root stops payments"
        );
        self.veto(epoch).await;
        self.planted += 1;
    }

    async fn veto(&mut self, epoch: u64) {
        let call = DexdVaultV2::vetoCall {
            epoch: U256::from(epoch),
        };
        self.world
            .send(&self.world.chain.guardian, self.world.chain.vault, call.abi_encode())
            .await;
        assert!(self.run(Command::SettleLiabilityRoot {
            epoch,
            standing: RootStanding::Vetoed,
        }));
    }

    /// The guardian vetoes the newest root of the venue's still in its challenge period.
    async fn veto_a_venue_root(&mut self) {
        let open = self
            .engine
            .custody()
            .liabilities()
            .roots()
            .rev()
            .find(|root| root.standing == RootStanding::Challengeable)
            .map(|root| root.record.epoch);
        if let Some(epoch) = open {
            self.veto(epoch).await;
        }
    }

    /// The venue's rhythm: a root, its challenge period passing, the payments it allows.
    async fn root_then_pay(&mut self) {
        self.commit_root().await;
        self.advance(TERMS.challenge_period_s + 1).await;
        self.pay().await;
    }

    async fn pass_time(&mut self, rng: &mut StdRng) {
        self.advance(rng.gen_range(1..=2 * TERMS.challenge_period_s)).await;
    }

    /// Moves the chain's clock and journals the roots it made final.
    async fn advance(&mut self, seconds: u64) {
        self.world.chain.advance_time(seconds).await;
        let now_s = self.world.time_s().await;
        let open: Vec<(u64, u64)> = self
            .engine
            .custody()
            .liabilities()
            .roots()
            .filter(|root| root.standing == RootStanding::Challengeable)
            .map(|root| (root.record.epoch, root.record.committed_at_ms / 1_000))
            .collect();
        for (epoch, committed_at_s) in open {
            if now_s < committed_at_s + TERMS.challenge_period_s {
                break;
            }
            assert!(self.run(Command::SettleLiabilityRoot {
                epoch,
                standing: RootStanding::Final,
            }));
        }
    }

    /// Pays what the rule allows: every pending withdrawal debited at or before the newest
    /// final root of the venue's.
    async fn pay(&mut self) {
        let Some(through) = self.engine.custody().liabilities().payable_through() else {
            return;
        };
        let payable: Vec<(WithdrawalKey, dexd_core::PendingWithdrawal)> = self
            .engine
            .custody()
            .pending_withdrawals()
            .filter(|(_, pending)| pending.debited_at_sequence <= through)
            .map(|(key, pending)| (*key, pending.clone()))
            .collect();
        if payable.is_empty() {
            return;
        }
        let call = DexdVault::withdrawBatchCall {
            withdrawals: payable
                .iter()
                .map(|(key, pending)| {
                    WithdrawalTerms {
                        account: key.account,
                        token: Some(venue_address(&self.world.tokens[usize::from(pending.asset.0)])),
                        amount_units: pending.amount.units(),
                        withdrawal_id: key.withdrawal_id,
                        expiry_ms: pending.expiry_ms,
                    }
                    .call_argument(&pending.signature)
                })
                .collect(),
        };
        let receipt = self
            .world
            .send(&self.world.chain.operator, self.world.chain.vault, call.abi_encode())
            .await;
        let keys: Vec<WithdrawalKey> = payable.iter().map(|(key, _)| *key).collect();
        self.paid_debits
            .extend(payable.iter().map(|(_, pending)| pending.debited_at_sequence));
        assert!(self.run(Command::MarkWithdrawalsSent {
            tx_hash: [3; 32],
            withdrawals: keys.clone(),
        }));
        assert!(self.run(Command::ConfirmWithdrawals {
            tx_hash: [3; 32],
            block_number: receipt.block_number,
            withdrawals: keys,
        }));
    }
}

/// What a freeze found.
struct ExitSummary {
    had_exit_root: bool,
    /// Deposits the exit root did not cover.
    deposits_after_root: u64,
}

/// The freeze and everyone's exit, with the checks.
async fn freeze_and_exit_everyone(venue: &Venue<'_>, sequence: u64) -> ExitSummary {
    let world = venue.world;
    world.chain.advance_time(TERMS.max_root_age_s + 1).await;
    let freezer = &world.users[0];
    world
        .send(freezer, world.chain.vault, DexdVaultV2::freezeCall {}.abi_encode())
        .await;
    let exit_tree = if world.view(DexdVaultV2::hasExitRootCall {}).await {
        let epoch: u64 = world.view(DexdVaultV2::exitEpochCall {}).await.saturating_to();
        let tree = venue.trees.get(&epoch).cloned();
        assert!(
            tree.is_some(),
            "sequence {sequence}: the exit root {epoch} is one of the venue's"
        );
        tree
    } else {
        None
    };
    if let Some(tree) = &exit_tree {
        assert!(
            venue.paid_debits.iter().all(|debit| *debit <= tree.journal_sequence),
            "sequence {sequence}: a withdrawal paid after the exit root"
        );
    }
    let accounts: Vec<Address> = world
        .users
        .iter()
        .map(|user| venue_address(&user.address()))
        .chain([FEES])
        .collect();
    for account in accounts {
        for token in world.tokens {
            let holder = chain_address(&account);
            let deposited = world.view(DexdVaultV2::depositedCall { account: holder, token }).await;
            let paid = world.view(DexdVaultV2::paidCall { account: holder, token }).await;
            let leaf = exit_tree.as_ref().and_then(|tree| {
                tree.leaves_of(&account)
                    .find(|index| tree.leaves[*index].token == venue_address(&token))
                    .map(|index| (tree.leaves[index], tree.tree.proof(index).unwrap()))
            });
            // What the account is owed: its leaf (all zero without one) by the formula.
            let (balance, credited, debited) = leaf.as_ref().map_or((0, 0, 0), |(leaf, _)| {
                (leaf.balance, leaf.credited_deposits, leaf.debited_withdrawals)
            });
            let owed =
                (U256::from(balance) + U256::from(debited) + deposited).saturating_sub(U256::from(credited) + paid);
            let mut paid_now = paid;
            if let Some((leaf, proof)) = &leaf {
                if owed > U256::ZERO {
                    let call = DexdVaultV2::exitCall {
                        account: holder,
                        token,
                        balance: U256::from(leaf.balance),
                        creditedDeposits: U256::from(leaf.credited_deposits),
                        debitedWithdrawals: U256::from(leaf.debited_withdrawals),
                        proof: proof.iter().map(|node| FixedBytes(*node)).collect(),
                    };
                    world.send(freezer, world.chain.vault, call.abi_encode()).await;
                    paid_now += owed;
                }
            }
            let may = world
                .view(DexdVaultV2::mayExitWithoutLeafCall { account: holder, token })
                .await;
            if may && deposited > paid_now {
                let call = DexdVaultV2::exitCall {
                    account: holder,
                    token,
                    balance: U256::ZERO,
                    creditedDeposits: U256::ZERO,
                    debitedWithdrawals: U256::ZERO,
                    proof: Vec::new(),
                };
                world.send(freezer, world.chain.vault, call.abi_encode()).await;
            }
            // What the exits paid the account: the vault's count of what it paid, which the
            // vault's token transfers follow (the vault's holdings end at zero below).
            let got = world.view(DexdVaultV2::paidCall { account: holder, token }).await - paid;
            // The account gets its exit-root balance, its debits never paid, and its deposits
            // after the root: never less (nor more) than the formula.
            assert_eq!(got, owed, "sequence {sequence}: {account} in {token}");
        }
    }
    for token in world.tokens {
        assert_eq!(
            world.holdings(token).await,
            U256::ZERO,
            "sequence {sequence}: the vault paid everyone and holds nothing of {token}"
        );
    }
    let deposits: u64 = world.view(DexdVault::depositCountCall {}).await.saturating_to();
    ExitSummary {
        had_exit_root: exit_tree.is_some(),
        deposits_after_root: deposits - exit_tree.as_ref().map_or(0, |tree| tree.deposit_count),
    }
}

/// How much of what matters the run went through, so that a run that never pays, never freezes
/// with a root or never leaves anything after it cannot pass unnoticed.
#[derive(Default, Debug)]
struct Statistics {
    sequences: u64,
    with_payments: u64,
    with_exit_root: u64,
    with_planted_roots: u64,
    with_deposits_after_the_exit_root: u64,
    with_withdrawals_unpaid_at_the_freeze: u64,
}

impl Statistics {
    fn record(&mut self, venue: &Venue<'_>, exit: &ExitSummary) {
        self.sequences += 1;
        self.with_payments += u64::from(!venue.paid_debits.is_empty());
        self.with_exit_root += u64::from(exit.had_exit_root);
        self.with_planted_roots += u64::from(venue.planted > 0);
        self.with_deposits_after_the_exit_root += u64::from(exit.deposits_after_root > 0);
        self.with_withdrawals_unpaid_at_the_freeze +=
            u64::from(venue.engine.custody().pending_withdrawals().next().is_some());
    }

    /// Each kind of sequence that matters came up at least `share` of the time.
    fn assert_covered(&self, share: f64) {
        let least = (self.sequences as f64 * share) as u64;
        for (what, count) in [
            ("payments", self.with_payments),
            ("an exit root", self.with_exit_root),
            ("planted roots", self.with_planted_roots),
            ("deposits after the exit root", self.with_deposits_after_the_exit_root),
            (
                "withdrawals unpaid at the freeze",
                self.with_withdrawals_unpaid_at_the_freeze,
            ),
        ] {
            assert!(
                count >= least,
                "only {count} of {} sequences had {what}: {self:?}",
                self.sequences
            );
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn random_sequences_of_deposits_trades_withdrawals_roots_and_vetoes_end_in_exits_that_hold() {
    let sequences: u64 = std::env::var("DEXD_EXIT_RANDOM_SEQUENCES").map_or(1_000, |text| text.parse().unwrap());
    let seed: u64 = std::env::var("DEXD_EXIT_RANDOM_SEED").map_or(20_261_126, |text| text.parse().unwrap());
    let world = world().await;
    let node: &Node = &world.chain.node;
    let mut snapshot = node.raw_request("evm_snapshot", serde_json::json!([])).await.unwrap();
    let mut statistics = Statistics::default();
    for sequence in 0..sequences {
        let mut rng = StdRng::seed_from_u64(seed.wrapping_add(sequence));
        let mut venue = Venue {
            world: &world,
            engine: Engine::new(engine_config()).unwrap(),
            time_ms: 1_000,
            uncredited: Default::default(),
            trees: HashMap::new(),
            paid_debits: Vec::new(),
            planted: 0,
            next_withdrawal: 0,
            next_order: 0,
        };
        // A few deposits credited first, so that there is something to trade and withdraw.
        for _ in 0..rng.gen_range(2..5) {
            venue.deposit(&mut rng).await;
            venue.credit_oldest();
        }
        for _ in 0..rng.gen_range(8..24) {
            match rng.gen_range(0..100) {
                0..=9 => venue.deposit(&mut rng).await,
                10..=21 => venue.credit_oldest(),
                22..=39 => venue.trade(&mut rng),
                40..=54 => venue.withdraw(&mut rng),
                55..=62 => venue.commit_root().await,
                63..=66 => venue.plant_root(&mut rng).await,
                67..=69 => venue.veto_a_venue_root().await,
                70..=77 => venue.pass_time(&mut rng).await,
                78..=89 => venue.root_then_pay().await,
                _ => venue.pay().await,
            }
        }
        let exit = freeze_and_exit_everyone(&venue, sequence).await;
        statistics.record(&venue, &exit);
        let reverted = node
            .raw_request("evm_revert", serde_json::json!([snapshot]))
            .await
            .unwrap();
        assert_eq!(reverted, serde_json::json!(true));
        world.nonces.lock().clear();
        snapshot = node.raw_request("evm_snapshot", serde_json::json!([])).await.unwrap();
    }
    eprintln!("exit_random: seed {seed}, {statistics:?}");
    statistics.assert_covered(0.1);
}
