//! The data that rebuilds a liability root from the chain alone (contract version 5, "Exits from
//! the chain's data alone"): what the venue publishes with each root, in the root's own
//! transaction, and how anyone holding the data of a run of roots rebuilds the newest one's tree
//! with nothing from the venue.
//!
//! The data of a root lists accounts, each with **all** its leaves at that root (an account
//! listed with none has no leaf left): every account whose leaves changed since the previous root
//! of the venue, and every account of the tree in the root's *range*, a slice of the address
//! space. The ranges of the roots of one snapshot cycle cover the whole address space, so the data
//! of the roots of any one cycle ending at a root rebuild that root's tree: each account's leaves
//! are those of its newest listing ([`Rebuild`]). A venue's first root, and any root whose range
//! is the whole space, rebuilds alone.
//!
//! The encoding (version 1), every integer big-endian unless said otherwise:
//!
//! | field | bytes |
//! |---|---|
//! | magic `DXRD` | 4 |
//! | version (1) | 1 |
//! | journal sequence the tree was built at | 8 |
//! | deposit count the root covers | 8 |
//! | the root | 32 |
//! | the previous root of the venue's the changes are against (zeros for none) | 32 |
//! | range: first and last address, both included | 20 + 20 |
//! | token count `t` (at most [`MAX_TOKENS`]) | 2 |
//! | the tokens, strictly increasing | 20 × `t` |
//! | account count | varint |
//! | per account, strictly increasing: address, leaf count (varint), per leaf (token strictly increasing): token's index in the table, balance, credited deposits, debited withdrawals | 20 + varints |
//!
//! A varint is unsigned LEB128, at most 19 bytes (a `u128`), with no superfluous trailing zero
//! byte; nothing follows the last account. A decoder refuses anything else, so one value has one
//! encoding. This module is pure: it neither sends nor fetches the data (`root_blobs` packs it
//! into blobs; the payer and `dexd exit` move it) and does not decide the ranges' schedule beyond
//! [`slice_range`].

use std::collections::BTreeMap;

use alloy::primitives::U256;
use dexd_core::Address;
use dexd_crypto::liability_tree::{LiabilityLeaf, LiabilityTree};

/// The first bytes of a root's data.
pub const MAGIC: &[u8; 4] = b"DXRD";
/// The encoding's version this dexd writes and reads.
pub const VERSION: u8 = 1;
/// The most tokens one root's data names.
pub const MAX_TOKENS: usize = u16::MAX as usize;
/// The most bytes a root's data may take (64 MiB): a decoder refuses more before reading it.
pub const MAX_ROOT_DATA_BYTES: usize = 64 << 20;
/// The fixed part before the token table: magic, version, sequence, deposit count, two roots,
/// the range.
const HEADER_BYTES: usize = 4 + 1 + 8 + 8 + 32 + 32 + 20 + 20;

/// A slice of the address space, both ends included.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AccountRange {
    /// The first address in it.
    pub first: Address,
    /// The last address in it.
    pub last: Address,
}

impl AccountRange {
    /// The whole address space.
    pub const WHOLE: AccountRange = AccountRange {
        first: Address::from_bytes([0; 20]),
        last: Address::from_bytes([0xff; 20]),
    };

    /// Whether `account` is in it.
    pub fn contains(&self, account: &Address) -> bool {
        self.first <= *account && *account <= self.last
    }
}

/// Slice `index` of `count` equal slices of the address space (`count` at least 1; `index`
/// taken modulo `count`): a root of epoch `e` takes slice `e mod count`, so that `count`
/// consecutive roots cover every address.
pub fn slice_range(index: u64, count: u64) -> AccountRange {
    let count = count.max(1);
    let index = index % count;
    let space = U256::from(1u8) << 160;
    let bound = |slice: u64| space * U256::from(slice) / U256::from(count);
    let first = bound(index);
    let end = bound(index + 1) - U256::from(1u8);
    AccountRange {
        first: address_of(first),
        last: address_of(end),
    }
}

fn address_of(value: U256) -> Address {
    let bytes: [u8; 32] = value.to_be_bytes();
    let mut address = [0u8; 20];
    address.copy_from_slice(&bytes[12..]);
    Address::from_bytes(address)
}

/// One account listed in a root's data: all its leaves at that root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ListedAccount {
    /// The account.
    pub account: Address,
    /// Its leaves, by token (none: it has no leaf left).
    pub leaves: Vec<LiabilityLeaf>,
}

/// A root's data, decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RootData {
    /// The journal position the tree was built at.
    pub journal_sequence: u64,
    /// How many of the vault's deposits the root covers.
    pub deposit_count: u64,
    /// The root the data is for.
    pub root: [u8; 32],
    /// The venue's previous root, which the changes listed are against (zeros for none).
    pub previous_root: [u8; 32],
    /// Every account of the tree in this range is listed.
    pub range: AccountRange,
    /// The accounts listed, by address.
    pub accounts: Vec<ListedAccount>,
}

/// Why bytes are not a root's data.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RootDataError {
    /// Longer than [`MAX_ROOT_DATA_BYTES`].
    TooLong(usize),
    /// The bytes end inside a field.
    Truncated,
    /// Not `DXRD`.
    Magic,
    /// A version this dexd does not read.
    Version(u8),
    /// Something out of order, out of range, or left over; what.
    Malformed(&'static str),
}

impl std::fmt::Display for RootDataError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RootDataError::TooLong(bytes) => write!(formatter, "root data of {bytes} bytes is over the bound"),
            RootDataError::Truncated => write!(formatter, "root data ends inside a field"),
            RootDataError::Magic => write!(formatter, "not root data (no DXRD magic)"),
            RootDataError::Version(version) => write!(formatter, "root data of version {version}, not {VERSION}"),
            RootDataError::Malformed(what) => write!(formatter, "malformed root data: {what}"),
        }
    }
}

impl std::error::Error for RootDataError {}

impl RootData {
    /// The data of the root of `leaves` (sorted by account, as the venue's are): every account
    /// whose leaves differ from `previous` (the leaves of the venue's previous root and that
    /// root; `None` for a first root, whose data must then list the whole space), and every
    /// account in `range`.
    pub fn for_root(
        (journal_sequence, deposit_count, root): (u64, u64, [u8; 32]),
        leaves: &[LiabilityLeaf],
        previous: Option<(&[LiabilityLeaf], [u8; 32])>,
        range: AccountRange,
    ) -> RootData {
        // The root of an empty tree is all zeros, which the encoding reads as "no previous
        // root": data after it lists the whole space, as a first root's does.
        let previous = previous.filter(|(_, root)| *root != [0; 32]);
        let range = if previous.is_none() { AccountRange::WHOLE } else { range };
        let now = by_account(leaves);
        let before = previous.map(|(leaves, _)| by_account(leaves)).unwrap_or_default();
        let mut accounts = Vec::new();
        let mut listed =
            |account: Address, leaves: Vec<LiabilityLeaf>| accounts.push(ListedAccount { account, leaves });
        // Both maps are sorted: one merge lists every account in order.
        let mut now_iter = now.into_iter().peekable();
        let mut before_iter = before.into_iter().peekable();
        loop {
            match (now_iter.peek(), before_iter.peek()) {
                (None, None) => break,
                (Some((account, _)), Some((old, _))) if account == old => {
                    let (account, leaves) = now_iter.next().expect("peeked");
                    let (_, old_leaves) = before_iter.next().expect("peeked");
                    if leaves != old_leaves || range.contains(&account) {
                        listed(account, leaves);
                    }
                }
                (Some((account, _)), Some((old, _))) if old < account => {
                    let (old, _) = before_iter.next().expect("peeked");
                    listed(old, Vec::new());
                }
                (Some(_), _) => {
                    let (account, leaves) = now_iter.next().expect("peeked");
                    listed(account, leaves);
                }
                (None, Some(_)) => {
                    let (old, _) = before_iter.next().expect("peeked");
                    listed(old, Vec::new());
                }
            }
        }
        RootData {
            journal_sequence,
            deposit_count,
            root,
            previous_root: previous.map_or([0; 32], |(_, root)| root),
            range,
            accounts,
        }
    }

    /// The encoding (module documentation).
    pub fn encode(&self) -> Vec<u8> {
        let mut tokens: Vec<Address> = self
            .accounts
            .iter()
            .flat_map(|listed| listed.leaves.iter().map(|leaf| leaf.token))
            .collect();
        tokens.sort_unstable();
        tokens.dedup();
        assert!(
            tokens.len() <= MAX_TOKENS,
            "invariant: a chain lists fewer than 65,536 tokens"
        );
        let mut out = Vec::with_capacity(HEADER_BYTES + 2 + 20 * tokens.len() + 48 * self.accounts.len());
        out.extend_from_slice(MAGIC);
        out.push(VERSION);
        out.extend_from_slice(&self.journal_sequence.to_be_bytes());
        out.extend_from_slice(&self.deposit_count.to_be_bytes());
        out.extend_from_slice(&self.root);
        out.extend_from_slice(&self.previous_root);
        out.extend_from_slice(self.range.first.as_bytes());
        out.extend_from_slice(self.range.last.as_bytes());
        out.extend_from_slice(&(tokens.len() as u16).to_be_bytes());
        for token in &tokens {
            out.extend_from_slice(token.as_bytes());
        }
        write_varint(&mut out, self.accounts.len() as u128);
        for listed in &self.accounts {
            out.extend_from_slice(listed.account.as_bytes());
            write_varint(&mut out, listed.leaves.len() as u128);
            let mut leaves: Vec<&LiabilityLeaf> = listed.leaves.iter().collect();
            leaves.sort_unstable_by_key(|leaf| leaf.token);
            for leaf in leaves {
                let index = tokens.binary_search(&leaf.token).expect("the table holds every token");
                write_varint(&mut out, index as u128);
                write_varint(&mut out, leaf.balance);
                write_varint(&mut out, leaf.credited_deposits);
                write_varint(&mut out, leaf.debited_withdrawals);
            }
        }
        out
    }

    /// Decodes `bytes`, refusing anything but the one encoding of a valid data.
    pub fn decode(bytes: &[u8]) -> Result<RootData, RootDataError> {
        if bytes.len() > MAX_ROOT_DATA_BYTES {
            return Err(RootDataError::TooLong(bytes.len()));
        }
        let mut reader = Reader { bytes, at: 0 };
        if reader.take(4)? != MAGIC {
            return Err(RootDataError::Magic);
        }
        let version = reader.take(1)?[0];
        if version != VERSION {
            return Err(RootDataError::Version(version));
        }
        let journal_sequence = reader.u64()?;
        let deposit_count = reader.u64()?;
        let root = reader.array::<32>()?;
        let previous_root = reader.array::<32>()?;
        let range = AccountRange {
            first: Address::from_bytes(reader.array::<20>()?),
            last: Address::from_bytes(reader.array::<20>()?),
        };
        if range.first > range.last {
            return Err(RootDataError::Malformed("the range ends before it starts"));
        }
        let token_count = u16::from_be_bytes(reader.array::<2>()?) as usize;
        let mut tokens = Vec::with_capacity(token_count);
        for _ in 0..token_count {
            let token = Address::from_bytes(reader.array::<20>()?);
            if tokens.last().is_some_and(|last| *last >= token) {
                return Err(RootDataError::Malformed("tokens not strictly increasing"));
            }
            tokens.push(token);
        }
        let account_count = reader.count()?;
        // Each account takes at least 21 bytes: no allocation beyond what the bytes can hold.
        let mut accounts = Vec::with_capacity(account_count.min(bytes.len() / 21));
        for _ in 0..account_count {
            let account = Address::from_bytes(reader.array::<20>()?);
            if accounts
                .last()
                .is_some_and(|last: &ListedAccount| last.account >= account)
            {
                return Err(RootDataError::Malformed("accounts not strictly increasing"));
            }
            let leaf_count = reader.count()?;
            let mut leaves: Vec<LiabilityLeaf> = Vec::with_capacity(leaf_count.min(tokens.len()));
            for _ in 0..leaf_count {
                let index = reader.count()?;
                let token = *tokens
                    .get(index)
                    .ok_or(RootDataError::Malformed("a token index past the table"))?;
                if leaves.last().is_some_and(|last| last.token >= token) {
                    return Err(RootDataError::Malformed("an account's tokens not strictly increasing"));
                }
                let leaf = LiabilityLeaf {
                    account,
                    token,
                    balance: reader.varint()?,
                    credited_deposits: reader.varint()?,
                    debited_withdrawals: reader.varint()?,
                };
                if leaf.balance == 0 && leaf.credited_deposits == 0 && leaf.debited_withdrawals == 0 {
                    return Err(RootDataError::Malformed("a leaf of all zeros"));
                }
                leaves.push(leaf);
            }
            accounts.push(ListedAccount { account, leaves });
        }
        if reader.at != bytes.len() {
            return Err(RootDataError::Malformed("bytes after the last account"));
        }
        Ok(RootData {
            journal_sequence,
            deposit_count,
            root,
            previous_root,
            range,
            accounts,
        })
    }
}

/// The leaves of each account, in order.
fn by_account(leaves: &[LiabilityLeaf]) -> BTreeMap<Address, Vec<LiabilityLeaf>> {
    let mut accounts: BTreeMap<Address, Vec<LiabilityLeaf>> = BTreeMap::new();
    for leaf in leaves {
        accounts.entry(leaf.account).or_default().push(*leaf);
    }
    for leaves in accounts.values_mut() {
        leaves.sort_unstable_by_key(|leaf| leaf.token);
    }
    accounts
}

fn write_varint(out: &mut Vec<u8>, mut value: u128) {
    loop {
        let byte = (value & 0x7f) as u8;
        value >>= 7;
        if value == 0 {
            out.push(byte);
            return;
        }
        out.push(byte | 0x80);
    }
}

struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, count: usize) -> Result<&'a [u8], RootDataError> {
        let end = self.at.checked_add(count).ok_or(RootDataError::Truncated)?;
        let slice = self.bytes.get(self.at..end).ok_or(RootDataError::Truncated)?;
        self.at = end;
        Ok(slice)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RootDataError> {
        Ok(self.take(N)?.try_into().expect("took N bytes"))
    }

    fn u64(&mut self) -> Result<u64, RootDataError> {
        Ok(u64::from_be_bytes(self.array::<8>()?))
    }

    fn varint(&mut self) -> Result<u128, RootDataError> {
        let mut value: u128 = 0;
        for index in 0..19 {
            let byte = self.take(1)?[0];
            let bits = u128::from(byte & 0x7f);
            if index == 18 && bits > 0x03 {
                return Err(RootDataError::Malformed("a varint over 128 bits"));
            }
            value |= bits << (7 * index);
            if byte & 0x80 == 0 {
                if byte == 0 && index > 0 {
                    return Err(RootDataError::Malformed("a varint with a superfluous zero byte"));
                }
                return Ok(value);
            }
        }
        Err(RootDataError::Malformed("a varint over 19 bytes"))
    }

    fn count(&mut self) -> Result<usize, RootDataError> {
        usize::try_from(self.varint()?).map_err(|_| RootDataError::Malformed("a count past the address space"))
    }
}

/// The part of the address space a run of roots' data covers: their ranges, merged.
#[derive(Debug, Default, Clone)]
pub struct Coverage {
    /// The ranges so far, merged, sorted.
    covered: Vec<(Address, Address)>,
}

impl Coverage {
    /// Adds a range.
    pub fn cover(&mut self, range: AccountRange) {
        self.covered.push((range.first, range.last));
        self.covered.sort_unstable();
        let mut merged: Vec<(Address, Address)> = Vec::with_capacity(self.covered.len());
        for (first, last) in self.covered.drain(..) {
            match merged.last_mut() {
                Some((_, merged_last)) if adjacent_or_overlapping(merged_last, &first) => {
                    if last > *merged_last {
                        *merged_last = last;
                    }
                }
                _ => merged.push((first, last)),
            }
        }
        self.covered = merged;
    }

    /// Whether the ranges cover every address.
    pub fn is_complete(&self) -> bool {
        self.covered.first() == Some(&(AccountRange::WHOLE.first, AccountRange::WHOLE.last))
    }
}

/// The ranges of a run of roots' data by their commit time, kept for `window_s`: whether every
/// address was listed in that window (what an exit reading back that far needs), once the run
/// has lasted that long.
#[derive(Debug, Clone)]
pub struct RangeWindow {
    window_s: u64,
    /// The first root's time.
    first_s: Option<u64>,
    /// The ranges within the window, oldest first.
    ranges: std::collections::VecDeque<(u64, AccountRange)>,
}

impl RangeWindow {
    /// An empty window of `window_s` seconds.
    pub fn new(window_s: u64) -> RangeWindow {
        RangeWindow {
            window_s,
            first_s: None,
            ranges: std::collections::VecDeque::new(),
        }
    }

    /// Adds a root's range, committed at `committed_at_s` (not earlier than the last one's), and
    /// forgets the ranges older than the window. `false` when the run has lasted the window and
    /// its ranges in it do not cover every address.
    pub fn add(&mut self, committed_at_s: u64, range: AccountRange) -> bool {
        let first_s = *self.first_s.get_or_insert(committed_at_s);
        self.ranges.push_back((committed_at_s, range));
        while self
            .ranges
            .front()
            .is_some_and(|(at_s, _)| at_s.saturating_add(self.window_s) < committed_at_s)
        {
            self.ranges.pop_front();
        }
        if committed_at_s.saturating_sub(first_s) < self.window_s {
            return true;
        }
        let mut coverage = Coverage::default();
        for (_, range) in &self.ranges {
            coverage.cover(*range);
        }
        coverage.is_complete()
    }
}

/// A tree rebuilt from the data of a run of roots, oldest first.
#[derive(Debug, Default)]
pub struct Rebuild {
    accounts: BTreeMap<Address, Vec<LiabilityLeaf>>,
    /// The ranges applied so far.
    covered: Coverage,
    /// The newest data applied: its root, sequence and deposit count.
    newest: Option<([u8; 32], u64, u64)>,
}

/// Why a run of data does not rebuild a root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RebuildError {
    /// The data's changes are against another root than the one applied before it.
    NotChained {
        /// The root the data names as its previous.
        previous_root: [u8; 32],
        /// The root applied before it.
        applied: [u8; 32],
    },
    /// The ranges applied do not cover the address space yet.
    Incomplete,
    /// The leaves rebuild another root than the data names.
    OtherRoot {
        /// The root the data names.
        named: [u8; 32],
        /// The root its leaves rebuild.
        rebuilt: [u8; 32],
    },
}

impl std::fmt::Display for RebuildError {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RebuildError::NotChained { previous_root, applied } => write!(
                formatter,
                "root data against 0x{} follows root 0x{}",
                alloy::hex::encode(previous_root),
                alloy::hex::encode(applied)
            ),
            RebuildError::Incomplete => write!(formatter, "the data's ranges do not cover every address yet"),
            RebuildError::OtherRoot { named, rebuilt } => write!(
                formatter,
                "the data of root 0x{} rebuilds 0x{}",
                alloy::hex::encode(named),
                alloy::hex::encode(rebuilt)
            ),
        }
    }
}

impl std::error::Error for RebuildError {}

impl Rebuild {
    /// Applies the next root's data: its listed accounts replace what was known of them. The
    /// first data applied may follow any root; each later one must follow the one before.
    pub fn apply(&mut self, data: &RootData) -> Result<(), RebuildError> {
        if let Some((applied, _, _)) = self.newest {
            if data.previous_root != applied {
                return Err(RebuildError::NotChained {
                    previous_root: data.previous_root,
                    applied,
                });
            }
        }
        for listed in &data.accounts {
            if listed.leaves.is_empty() {
                self.accounts.remove(&listed.account);
            } else {
                self.accounts.insert(listed.account, listed.leaves.clone());
            }
        }
        self.covered.cover(data.range);
        self.newest = Some((data.root, data.journal_sequence, data.deposit_count));
        Ok(())
    }

    /// Whether the ranges applied cover every address.
    pub fn is_complete(&self) -> bool {
        self.covered.is_complete()
    }

    /// The leaves rebuilt, by account then token, once complete and checked against the newest
    /// data's root; with that root, its journal sequence and deposit count.
    pub fn finish(&self, threads: usize) -> Result<(Vec<LiabilityLeaf>, [u8; 32], u64, u64), RebuildError> {
        let Some((named, journal_sequence, deposit_count)) = self.newest else {
            return Err(RebuildError::Incomplete);
        };
        if !self.is_complete() {
            return Err(RebuildError::Incomplete);
        }
        let leaves: Vec<LiabilityLeaf> = self.accounts.values().flatten().copied().collect();
        let rebuilt = LiabilityTree::build(&leaves, threads).root();
        if rebuilt != named {
            return Err(RebuildError::OtherRoot { named, rebuilt });
        }
        Ok((leaves, named, journal_sequence, deposit_count))
    }
}

/// Whether a range starting at `first` continues one ending at `last`.
fn adjacent_or_overlapping(last: &Address, first: &Address) -> bool {
    if first <= last {
        return true;
    }
    let next = U256::from_be_slice(last.as_bytes()) + U256::from(1u8);
    next == U256::from_be_slice(first.as_bytes())
}

#[cfg(test)]
#[path = "root_data_tests.rs"]
mod tests;
