//! The world of the random exit test: the node and its accounts, and the venue (dexd's own
//! engine, tree and payment rule) with the vault, driven one random step at a time.

use crate::common;

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
use dexd_custody::vault::{venue_address, DexdVault, DexdVaultV2, WithdrawalTerms};
use rand::rngs::StdRng;
use rand::Rng;

pub(super) const TERMS: RootTerms = RootTerms {
    max_root_age_s: 3_600,
    challenge_period_s: 60,
    request_period_s: 600,
    guardians: Vec::new(),
};
pub(super) const FEES: Address = Address::from_bytes([0xfe; 20]);
pub(super) const USDC: AssetIndex = AssetIndex(0);
pub(super) const WBTC: AssetIndex = AssetIndex(1);

pub(super) fn engine_config() -> EngineConfig {
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
            fee_raise: None,
        }],
        fee_account: FEES,
        custody: CustodyMode::Vault,
        limits: EngineLimits::default(),
    }
}

/// The chain, with the vault deployed and the users funded and approving it.
pub(super) struct World {
    pub(super) chain: TestChain,
    pub(super) users: Vec<PrivateKeySigner>,
    /// A contract wallet of the first user's (`FickleWallet`), holding tokens and approving the
    /// vault: its withdrawals are approved or refused on chain as a step says.
    pub(super) wallet: ChainAddress,
    pub(super) tokens: [ChainAddress; 2],
    /// Each sender's next nonce: read after each revert, then counted here, so that a
    /// transaction is one send and one receipt (thousands of them make a run).
    pub(super) nonces: parking_lot::Mutex<HashMap<ChainAddress, u64>>,
}

impl World {
    pub(super) async fn send(
        &self,
        from: &PrivateKeySigner,
        to: ChainAddress,
        input: Vec<u8>,
    ) -> dexd_custody::node::Receipt {
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
            blobs: None,
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

    pub(super) async fn view<Call: SolCall>(&self, call: Call) -> Call::Return {
        self.chain
            .node
            .view(self.chain.vault, call, BlockId::latest())
            .await
            .unwrap()
    }

    pub(super) async fn time_s(&self) -> u64 {
        let head = self.chain.node.head().await.unwrap();
        self.chain.node.block(head).await.unwrap().unwrap().1
    }

    pub(super) async fn holdings(&self, token: ChainAddress) -> U256 {
        self.chain.vault_balance(Some(token)).await
    }
}

pub(super) async fn world() -> World {
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
    let wallet = deploy::deploy_fickle_wallet(&chain.node, &chain.deployer, users[0].address(), (0, 0))
        .await
        .unwrap()
        .address;
    for token in tokens {
        deploy::mint(&chain.node, &chain.deployer, token, wallet, U256::from(u64::MAX))
            .await
            .unwrap();
        let approve = dexd_custody::vault::Erc20::approveCall {
            spender: chain.vault,
            amount: U256::MAX,
        };
        deploy::execute_from_smart_wallet(
            &chain.node,
            &users[0],
            wallet,
            (token, U256::ZERO, approve.abi_encode()),
        )
        .await
        .unwrap();
    }
    World {
        chain,
        users,
        wallet,
        tokens,
        nonces: parking_lot::Mutex::default(),
    }
}

/// A withdrawal an account asked the vault for on chain, and whether the venue recorded it.
#[derive(Clone, Copy)]
pub(super) struct ChainRequest {
    pub(super) id: u64,
    pub(super) account: Address,
    pub(super) asset: AssetIndex,
    pub(super) units: u128,
    pub(super) deadline_s: u64,
    pub(super) block: u64,
}

/// A deposit the vault took: its number, account, asset and amount.
#[derive(Clone, Copy)]
pub(super) struct VaultDeposit {
    pub(super) id: u64,
    pub(super) account: Address,
    pub(super) asset: AssetIndex,
    pub(super) units: u128,
    pub(super) block: u64,
}

/// One sequence's venue: the engine, what it has not credited yet, the trees it committed.
pub(super) struct Venue<'w> {
    pub(super) world: &'w World,
    pub(super) engine: Engine,
    pub(super) time_ms: u64,
    pub(super) uncredited: std::collections::VecDeque<VaultDeposit>,
    pub(super) trees: HashMap<u64, std::sync::Arc<TreeAtPosition>>,
    /// Each withdrawal paid: its debit's position.
    pub(super) paid_debits: Vec<u64>,
    /// How many roots the stolen key planted.
    pub(super) planted: u32,
    pub(super) next_withdrawal: u8,
    pub(super) next_order: u64,
    /// Requests made on chain the venue has not recorded yet, oldest first.
    pub(super) unrecorded_requests: std::collections::VecDeque<ChainRequest>,
    /// How many requests were made, served, and withdrawals the vault skipped.
    pub(super) requests_made: u32,
    pub(super) requests_served: u32,
    pub(super) skipped: u32,
    /// The venue stopped serving (and recording) anything: a venue gone quiet, or one keeping
    /// funds in by doing nothing.
    pub(super) stopped: bool,
    /// The contract wallet's owner turns it to refuse its withdrawals right before the next
    /// payment: a withdrawal that passed every check and fails on chain.
    pub(super) poison_before_paying: bool,
}

impl<'w> Venue<'w> {
    pub(super) fn run(&mut self, command: Command) -> bool {
        self.time_ms += 1;
        let mut events = Vec::new();
        let applied = self.engine.execute(command, self.time_ms, &mut events).is_ok();
        self.engine.check_invariants().unwrap();
        applied
    }

    pub(super) async fn deposit(&mut self, rng: &mut StdRng) {
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
        // Now and then from the contract wallet, which its owner makes call the vault.
        let (account, receipt) = if rng.gen_bool(0.3) {
            let execute = deploy::FickleWallet::executeCall {
                target: self.world.chain.vault,
                value: U256::ZERO,
                data: call.abi_encode().into(),
            };
            let receipt = self
                .world
                .send(&self.world.users[0], self.world.wallet, execute.abi_encode())
                .await;
            (self.world.wallet, receipt)
        } else {
            (
                user.address(),
                self.world.send(user, self.world.chain.vault, call.abi_encode()).await,
            )
        };
        self.uncredited.push_back(VaultDeposit {
            id,
            account: venue_address(&account),
            asset,
            units,
            block: receipt.block_number,
        });
    }

    pub(super) fn credit_oldest(&mut self) {
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

    pub(super) fn trade(&mut self, rng: &mut StdRng) {
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
                conditions: Default::default(),
            }));
        }
        // What did not fill is cancelled, so that balances are free to withdraw and exit.
        for account in [seller, buyer] {
            self.run(Command::CancelAll { account, pair: None });
        }
    }

    pub(super) fn withdraw(&mut self, rng: &mut StdRng) {
        let index = rng.gen_range(0..self.world.users.len());
        // The contract wallet's withdrawal is signed by its owner, the first user.
        let wallet = rng.gen_bool(0.35);
        if wallet && rng.gen_bool(0.5) {
            self.poison_before_paying = true;
        }
        let user = &self.world.users[if wallet { 0 } else { index }];
        let account = if wallet {
            venue_address(&self.world.wallet)
        } else {
            venue_address(&user.address())
        };
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

    pub(super) async fn commit_root(&mut self) {
        let position = self.engine.journal_sequence();
        let tokens: Vec<Option<Address>> = self
            .world
            .tokens
            .iter()
            .map(|token| Some(venue_address(token)))
            .collect();
        let tree = std::sync::Arc::new(TreeAtPosition::build(position, &self.engine, &tokens, None));
        let (tokens, totals) = tree.commit_arguments(|_| true);
        let call = DexdVaultV2::commitRootWithDataCall {
            root: FixedBytes(tree.root()),
            journalSequence: position,
            depositCount_: U256::from(tree.deposit_count),
            tokens,
            totals,
            data: crate::common::vault_calls::TEST_ROOT_DATA.to_vec().into(),
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

    pub(super) async fn record_root(
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
    pub(super) async fn plant_root(&mut self, rng: &mut StdRng) {
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
        let call = DexdVaultV2::commitRootWithDataCall {
            root: FixedBytes(fake.root()),
            journalSequence: position,
            depositCount_: U256::from(deposits),
            totals: vec![U256::ZERO; tokens.len()],
            tokens,
            data: crate::common::vault_calls::TEST_ROOT_DATA.to_vec().into(),
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

    pub(super) async fn veto(&mut self, epoch: u64) {
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
    pub(super) async fn veto_a_venue_root(&mut self) {
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
    pub(super) async fn root_then_pay(&mut self) {
        self.commit_root().await;
        self.advance(TERMS.challenge_period_s + 1).await;
        self.pay().await;
    }

    pub(super) async fn pass_time(&mut self, rng: &mut StdRng) {
        self.advance(rng.gen_range(1..=2 * TERMS.challenge_period_s)).await;
    }

    /// Moves the chain's clock and journals the roots it made final.
    pub(super) async fn advance(&mut self, seconds: u64) {
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
    /// final root of the venue's: the signed ones in one `withdrawBatch` (which skips what the
    /// account's contract refuses: those go back to pending), the requests made on chain in one
    /// `serveRequests`. A venue that stopped pays nothing.
    pub(super) async fn pay(&mut self) {
        if self.stopped {
            return;
        }
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
        let (requests, signed): (Vec<_>, Vec<_>) = payable
            .into_iter()
            .partition(|(_, pending)| pending.origin.request_id().is_some());
        if !signed.is_empty() {
            self.pay_signed(signed).await;
        }
        if !requests.is_empty() {
            self.serve(requests).await;
        }
    }

    async fn pay_signed(&mut self, payable: Vec<(WithdrawalKey, dexd_core::PendingWithdrawal)>) {
        if std::mem::take(&mut self.poison_before_paying) {
            let never = deploy::FickleWallet::setModeCall {
                mode_: 3,
                until_: U256::ZERO,
            };
            self.world
                .send(&self.world.users[0], self.world.wallet, never.abi_encode())
                .await;
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
        assert!(self.run(Command::MarkWithdrawalsSent {
            tx_hash: [3; 32],
            withdrawals: keys.clone(),
        }));
        // What the transaction paid, as the vault shows at its block.
        let ids: Vec<(ChainAddress, U256)> = keys
            .iter()
            .map(|key| {
                (
                    dexd_custody::vault::chain_address(&key.account),
                    U256::from_be_bytes(key.withdrawal_id),
                )
            })
            .collect();
        let paid = self
            .world
            .chain
            .node
            .withdrawn_many(&ids, BlockId::number(receipt.block_number))
            .await
            .unwrap();
        let (mut confirmed, mut skipped) = (Vec::new(), Vec::new());
        for ((key, pending), paid) in payable.iter().zip(paid) {
            if paid {
                confirmed.push(*key);
                self.paid_debits.push(pending.debited_at_sequence);
            } else {
                skipped.push(*key);
            }
        }
        if !confirmed.is_empty() {
            assert!(self.run(Command::ConfirmWithdrawals {
                tx_hash: [3; 32],
                block_number: receipt.block_number,
                withdrawals: confirmed,
            }));
        }
        if !skipped.is_empty() {
            self.skipped += skipped.len() as u32;
            assert!(self.run(Command::MarkWithdrawalsUnpaid {
                tx_hash: [3; 32],
                withdrawals: skipped,
            }));
        }
    }

    async fn serve(&mut self, requests: Vec<(WithdrawalKey, dexd_core::PendingWithdrawal)>) {
        let call = DexdVaultV2::serveRequestsCall {
            requestIds: requests
                .iter()
                .map(|(_, pending)| U256::from(pending.origin.request_id().unwrap()))
                .collect(),
            amounts: requests
                .iter()
                .map(|(_, pending)| U256::from(pending.amount.units()))
                .collect(),
        };
        let receipt = self
            .world
            .send(&self.world.chain.operator, self.world.chain.vault, call.abi_encode())
            .await;
        let keys: Vec<WithdrawalKey> = requests.iter().map(|(key, _)| *key).collect();
        self.paid_debits
            .extend(requests.iter().map(|(_, pending)| pending.debited_at_sequence));
        self.requests_served += keys.len() as u32;
        assert!(self.run(Command::MarkWithdrawalsSent {
            tx_hash: [4; 32],
            withdrawals: keys.clone(),
        }));
        assert!(self.run(Command::ConfirmWithdrawals {
            tx_hash: [4; 32],
            block_number: receipt.block_number,
            withdrawals: keys,
        }));
    }

    /// An account asks the vault for a withdrawal on chain (any amount: more than it holds,
    /// nothing held, the same again).
    pub(super) async fn request_on_chain(&mut self, rng: &mut StdRng) {
        let user = &self.world.users[rng.gen_range(0..self.world.users.len())];
        let asset = if rng.gen_bool(0.5) { USDC } else { WBTC };
        let units = match asset {
            USDC => rng.gen_range(1..=3_000) * USDC_UNIT,
            _ => rng.gen_range(1..=15) * WBTC_UNIT / 10,
        };
        let id: u64 = self.world.view(DexdVaultV2::requestCountCall {}).await.saturating_to();
        let call = DexdVaultV2::requestWithdrawalCall {
            token: self.world.tokens[usize::from(asset.0)],
            amount: U256::from(units),
        };
        let receipt = self.world.send(user, self.world.chain.vault, call.abi_encode()).await;
        let stored = self
            .world
            .view(DexdVaultV2::withdrawalRequestCall {
                requestId: U256::from(id),
            })
            .await;
        self.unrecorded_requests.push_back(ChainRequest {
            id,
            account: venue_address(&user.address()),
            asset,
            units,
            deadline_s: stored.deadline.saturating_to(),
            block: receipt.block_number,
        });
        self.requests_made += 1;
    }

    /// The venue records the requests made on chain, in the vault's order.
    pub(super) fn record_requests(&mut self) {
        if self.stopped {
            return;
        }
        while let Some(request) = self.unrecorded_requests.pop_front() {
            let recorded = self.run(Command::RecordWithdrawalRequest(dexd_core::ChainWithdrawalRequest {
                request_id: request.id,
                account: request.account,
                token: venue_address(&self.world.tokens[usize::from(request.asset.0)]),
                asset: Some(request.asset),
                amount: Amount::from_units(request.units),
                deadline_ms: request.deadline_s * 1_000,
                tx_hash: [5; 32],
                log_index: 0,
                block_number: request.block,
                block_hash: [1; 32],
            }));
            assert!(recorded, "the vault's next request is recorded");
        }
    }

    /// The contract wallet turns: it refuses (or approves again) its withdrawals on chain, as an
    /// attacker's wallet would after its withdrawal passed every check.
    pub(super) async fn turn_the_wallet(&mut self, rng: &mut StdRng) {
        let mode = if rng.gen_bool(0.5) { 3 } else { 0 };
        let call = deploy::FickleWallet::setModeCall {
            mode_: mode,
            until_: U256::ZERO,
        };
        self.world
            .send(&self.world.users[0], self.world.wallet, call.abi_encode())
            .await;
    }
}
