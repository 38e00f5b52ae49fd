//! `dexd audit`: follows a venue's public journal, checks every command, replays it with dexd's
//! own engine, and on a vault chain compares every committed root with the tree its replay
//! builds at the root's position; as the vault's guardian it vetoes a root that does not match,
//! or whose journal it could not obtain in time.
//!
//! For each page of the journal: the lines are parsed and their own checks run on every core
//! (`checks`); what needs the chain is asked of it (`chain`: a credit against the vault's
//! `Deposited` event, a confirmed or failed withdrawal against what the vault paid, a contract
//! account's approval); the commands are replayed in order on the auditor's engine (a command
//! the engine refuses does not check), the published state hashes compared, and the page
//! appended to the auditor's copy of the journal (`copy`). The first check that fails stops the
//! replay there (`FAIL <sequence> <what>`): what follows cannot be trusted, and every root past
//! it is treated as not matching. Output lines go to standard output; the logs to standard
//! error.
//!
//! It never writes to the venue, and trusts nothing the venue says that it can check.

pub(crate) mod chain;
mod chain_checks;
pub(crate) mod checks;
pub(crate) mod copy;
mod metrics;
mod requests;
mod root_data_check;
mod roots;
mod serve;
pub(crate) mod source;

pub use self::copy::trees_directory;

use std::io::Write;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use dexd_core::{Command, Engine};
use dexd_crypto::{hex_prefixed, RequestMessages};
use dexd_custody::config::MAX_SNAPSHOT_INTERVAL_MS;
use dexd_custody::liabilities::root_data::RangeWindow;
use dexd_custody::liabilities::TreeAtPosition;
use dexd_store::JournalEntry;

use self::chain::AuditedVault;
use self::checks::{check_lines, BatchClaims, LineCheck};
use self::copy::{AuditCopy, SNAPSHOT_EVERY_COMMANDS};
use self::metrics::{serve_metrics, AuditMetrics};
use self::source::{JournalSource, SourceError};
use crate::format::{parse_line, CommandLine, JournalLine, MAX_JOURNAL_PAGE_COMMANDS, STATE_HASH_INTERVAL};
use crate::page::link_batch_hashes;
use crate::segments::{segment_of, segment_positions, SegmentFiles};

/// How long the auditor waits for a page before it checks the roots' deadlines (and goes on
/// waiting for the same page): a venue that trickles its pages never holds off a veto by more.
const PAGE_WAIT_BETWEEN_ROOT_CHECKS: Duration = Duration::from_secs(1);

/// What `dexd audit` was asked to do.
#[derive(Debug, Clone)]
pub struct AuditOptions {
    /// The venue's base URL.
    pub venue: String,
    /// The chain audited.
    pub chain_id: u64,
    /// The auditor's directory.
    pub directory: PathBuf,
    /// The chain's JSON-RPC node and the vault, on a vault chain.
    pub chain: Option<(String, dexd_core::Address)>,
    /// The environment variable holding the vault guardian's key, to veto with.
    pub guardian_key_env: Option<String>,
    /// The beacon node the roots' blobs are read from (`None`: the chain's RPC URL).
    pub beacon_url: Option<String>,
    /// Stop at the journal's end (exit status: whether every check held).
    pub once: bool,
    /// Blocks on top of a root's before it is checked.
    pub confirmations: u64,
    /// How long to wait before asking again when the journal has nothing new.
    pub poll_interval_ms: u64,
    /// Where to serve `/metrics`.
    pub metrics_listen: Option<SocketAddr>,
    /// The most commands asked for in one page (at most the format's 10,000).
    pub page_commands: usize,
    /// Other sources of the journal's segments (`--mirror`), tried when the venue gives none.
    pub mirrors: Vec<String>,
    /// Where to serve the segments this auditor has checked (`--serve`).
    pub serve: Option<SocketAddr>,
}

/// The auditor's run: its copy, engine, vault and what it counts.
struct Auditor {
    options: AuditOptions,
    copy: AuditCopy,
    engine: Engine,
    messages: Option<RequestMessages>,
    vault: Option<AuditedVault>,
    source: JournalSource,
    /// The venue's journal end at the last page read.
    journal_end: u64,
    /// When a page was last had, in ms since the epoch (0: never in this run).
    last_page_ms: u64,
    metrics: AuditMetrics,
    threads: usize,
    /// The next page, asked for while the last one is checked (its first position, and the
    /// request), so that the venue's reading and sending overlaps the checks.
    prefetched: Option<(u64, tokio::task::JoinHandle<Result<ParsedPage, SourceError>>)>,
    /// The segments checked whole, kept to serve to other auditors (with `--serve`).
    served_segments: Option<Arc<SegmentFiles>>,
    /// The orders of batches signed once, followed line by line.
    batch_claims: BatchClaims,
    /// The public keys of the signers seen so far, so that their signatures are checked in
    /// batches (at most `dexd_crypto::MAX_SIGNER_KEYS`).
    signer_keys: dexd_crypto::SignerKeys,
    /// The oldest withdrawal requested on chain not yet seen served (this run's; a restart
    /// reads them again from 0).
    first_request_to_check: u64,
    /// The roots warned of as not verified a quarter into their challenge period (each once).
    warned_unverified: std::collections::BTreeSet<u64>,
    /// The newest root found good, with its tree: the one the next root's data most likely
    /// lists its changes against.
    last_good_tree: std::sync::Mutex<Option<Arc<TreeAtPosition>>>,
    /// The ranges of the roots' data found good in this run, over the longest snapshot
    /// interval a venue may have: every address must be listed in it.
    range_window: std::sync::Mutex<RangeWindow>,
}

/// Prints one output line at once (standard output may be a pipe).
fn output(line: &str) {
    let mut stdout = std::io::stdout().lock();
    let _ = writeln!(stdout, "{line}");
    let _ = stdout.flush();
}

/// Runs the auditor; with `--once`, returns whether every check held.
pub async fn run(options: AuditOptions) -> Result<bool, String> {
    let copy = AuditCopy::open(&options.directory, options.chain_id)?;
    let position = copy.position()?;
    let engine = tokio::task::block_in_place(|| copy.engine_at(position))?;
    let messages = engine
        .configuration()
        .map(|configuration| RequestMessages::new(&configuration).map_err(|error| format!("{error:?}")))
        .transpose()?;
    let vault = match &options.chain {
        None => None,
        Some((rpc_url, vault)) => {
            let guardian = match &options.guardian_key_env {
                None => None,
                Some(variable) => Some(
                    dexd_custody::operator_key::read_operator_key(
                        &dexd_custody::config::OperatorKeySource::Environment(variable.clone()),
                    )
                    .map_err(|error| format!("--guardian-key-env: {error}"))?,
                ),
            };
            let beacon_url = options.beacon_url.clone().unwrap_or_else(|| rpc_url.clone());
            Some(
                AuditedVault::connect(
                    (rpc_url, &beacon_url),
                    *vault,
                    options.chain_id,
                    options.confirmations,
                    guardian,
                )
                .await?,
            )
        }
    };
    let source = JournalSource::new(&options.venue, &options.mirrors, options.chain_id)?;
    let served_segments = match options.serve {
        Some(address) => {
            let files = Arc::new(SegmentFiles::new(&options.directory, options.chain_id));
            serve::serve_segments(address, options.chain_id, Arc::clone(&files)).await?;
            Some(files)
        }
        None => None,
    };
    let metrics = AuditMetrics::new();
    if let Some(address) = options.metrics_listen {
        serve_metrics(address, Arc::clone(&metrics.telemetry)).await?;
    }
    let mut auditor = Auditor {
        threads: std::thread::available_parallelism().map_or(2, usize::from),
        options,
        copy,
        engine,
        messages,
        vault,
        source,
        journal_end: 0,
        last_page_ms: 0,
        metrics,
        prefetched: None,
        served_segments,
        batch_claims: BatchClaims::default(),
        signer_keys: dexd_crypto::SignerKeys::new(),
        first_request_to_check: 0,
        warned_unverified: std::collections::BTreeSet::new(),
        last_good_tree: std::sync::Mutex::new(None),
        range_window: std::sync::Mutex::new(RangeWindow::new(MAX_SNAPSHOT_INTERVAL_MS / 1_000)),
    };
    tracing::info!(chain_id = auditor.options.chain_id, position, "the auditor resumes");
    auditor.run().await
}

impl Auditor {
    async fn run(&mut self) -> Result<bool, String> {
        loop {
            let progressed = self.follow_journal().await?;
            let roots_settled = self.check_roots().await?;
            self.check_requests().await?;
            self.update_metrics();
            // After a failure nothing more is replayed, so the end is where it failed.
            let at_end = (self.failed_at().is_some() || self.position() >= self.journal_end) && self.last_page_ms > 0;
            if self.options.once && at_end && roots_settled {
                self.print_counts()?;
                self.snapshot_if_due(true)?;
                return Ok(self.all_held());
            }
            if !progressed {
                tokio::time::sleep(Duration::from_millis(self.options.poll_interval_ms)).await;
            }
        }
    }

    fn position(&self) -> u64 {
        self.engine.journal_sequence()
    }

    fn failed_at(&self) -> Option<u64> {
        self.copy.progress().failed.as_ref().map(|(sequence, _)| *sequence)
    }

    fn all_held(&self) -> bool {
        let progress = self.copy.progress();
        self.failed_at().is_none()
            && progress.roots.values().all(|root| root.verdict == "ok")
            && progress.overdue_requests.is_empty()
    }

    /// Says what the chain cannot vouch for: ledger deposits (credited from nothing), and vault
    /// credits when no node was given. Counted from the copy, so a restart counts each once.
    fn print_counts(&self) -> Result<(), String> {
        let ledger = tokio::task::block_in_place(|| {
            self.copy
                .count_commands(|command| matches!(command, Command::Deposit(_)))
        })?;
        if ledger > 0 {
            output(&format!("ledger deposits: {ledger} not checkable against a chain"));
        }
        if self.vault.is_none() {
            let credits = tokio::task::block_in_place(|| {
                self.copy
                    .count_commands(|command| matches!(command, Command::CreditChainDeposit(_)))
            })?;
            if credits > 0 {
                output(&format!(
                    "vault deposits: {credits} not checked against the chain (no --rpc-url)"
                ));
            }
        }
        Ok(())
    }

    fn update_metrics(&self) {
        let position = self.position();
        self.metrics.position.set(position as f64);
        self.metrics.lag.set(self.journal_end.saturating_sub(position) as f64);
        self.metrics
            .failures
            .set(if self.failed_at().is_some() { 1.0 } else { 0.0 });
    }

    /// Records the first failure, prints it, and stops the replay there.
    fn fail(&mut self, sequence: u64, what: &str) -> Result<(), String> {
        let line = format!("FAIL {sequence} {what}");
        output(&line);
        self.copy
            .update_progress(|progress| progress.failed = Some((sequence, line)))
    }

    /// Reads, checks and applies one page of the journal; whether it got further.
    async fn follow_journal(&mut self) -> Result<bool, String> {
        if self.failed_at().is_some() {
            // Nothing after a failure is checked; the journal's end is still followed for the
            // roots.
            if let Ok(Ok(page)) =
                tokio::time::timeout(PAGE_WAIT_BETWEEN_ROOT_CHECKS, self.source.page(self.position() + 1, 1)).await
            {
                self.journal_end = page.journal_end;
                self.last_page_ms = dexd_store::now_ms();
            }
            return Ok(false);
        }
        let from = self.position() + 1;
        let limit = self.options.page_commands.clamp(1, MAX_JOURNAL_PAGE_COMMANDS);
        let mut request = match self.prefetched.take() {
            Some((at, request)) if at == from => request,
            other => {
                if let Some((_, request)) = other {
                    request.abort();
                }
                self.fetch_and_parse(from, limit)
            }
        };
        // A page that is slow to come (a venue trickling its answer) is waited for in turns,
        // the roots' deadlines checked in between, so that no page can hold off a veto.
        let fetched = match tokio::time::timeout(PAGE_WAIT_BETWEEN_ROOT_CHECKS, &mut request).await {
            Ok(joined) => {
                joined.unwrap_or_else(|error| Err(SourceError::Unavailable(format!("the page's request: {error}"))))
            }
            Err(_) => {
                self.prefetched = Some((from, request));
                return Ok(false);
            }
        };
        let (page, mut lines) = match fetched {
            Ok(ParsedPage { page, lines }) => (page, lines),
            // A page in another format, over the size bound, or not answered is not obtained:
            // the auditor goes on (and, as a guardian, vetoes what stays unverified).
            Err(SourceError::Format(message) | SourceError::Unavailable(message) | SourceError::TooLarge(message)) => {
                tracing::warn!(%message, "the venue's journal page was not obtained; trying again");
                return Ok(false);
            }
        };
        self.journal_end = self.journal_end.max(page.journal_end);
        // A mirror's segment says nothing of the venue's end: the auditor is not at the end
        // until the venue has said where it is.
        if page.from_venue {
            self.last_page_ms = dexd_store::now_ms();
        }
        if page.text.is_empty() {
            return Ok(false);
        }
        // A segment read by an auditor that resumed inside it: what it checked already is left
        // out (after the batches' hashes were linked, which may come from those lines).
        if page.segment.is_some() {
            lines.retain(|line| {
                !matches!(line, Ok(JournalLine::Command(command)) if command.sequence < from)
                    && !matches!(line, Ok(JournalLine::StateHash { sequence, .. }) if *sequence < from)
            });
        }
        // A full page or a segment: the journal goes on past it, so what follows is asked for now.
        let commands = lines
            .iter()
            .filter(|line| !matches!(line, Ok(JournalLine::StateHash { .. })))
            .count() as u64;
        let ends_segment = page.segment.is_some() || segment_positions(segment_of(from)).1 == from + commands - 1;
        if commands > 0 && (ends_segment || commands == limit as u64) {
            let next = from + commands;
            self.prefetched = Some((next, self.fetch_and_parse(next, limit)));
        }
        let before = self.position();
        self.apply_page(lines).await?;
        if let (Some(segment), Some(files)) = (page.segment, &self.served_segments) {
            if self.failed_at().is_none() && self.position() >= segment_positions(segment).1 {
                tokio::task::block_in_place(|| files.store(segment, page.text.as_bytes()))
                    .map_err(|error| format!("cannot keep segment {segment} to serve: {error}"))?;
            }
        }
        Ok(self.position() > before)
    }

    /// Fetches what comes next from `from` and parses it, as a task: the next page is read and
    /// parsed (on the auditor's threads) while this one is checked and replayed.
    fn fetch_and_parse(&self, from: u64, limit: usize) -> tokio::task::JoinHandle<Result<ParsedPage, SourceError>> {
        let (source, journal_end, threads) = (self.source.clone(), self.journal_end, self.threads);
        tokio::spawn(async move {
            let page = source.next(from, limit, journal_end).await?;
            tokio::task::spawn_blocking(move || {
                let lines = parse_page(&page.text, threads);
                ParsedPage { page, lines }
            })
            .await
            .map_err(|error| SourceError::Unavailable(format!("the page's parse: {error}")))
        })
    }

    /// Checks and applies a page's lines, segment by segment (a configuration starts a new
    /// one: the lines after it are checked under it); appends what applied to the copy.
    async fn apply_page(&mut self, lines: Vec<Result<JournalLine, String>>) -> Result<(), String> {
        let mut journaled = Vec::new();
        let mut index = 0;
        let outcome = loop {
            if index >= lines.len() {
                break Ok(());
            }
            let mut segment = Vec::new();
            while let Some(Ok(line)) = lines.get(index) {
                let configures =
                    matches!(line, JournalLine::Command(command) if matches!(command.command, Command::Configure(_)));
                if configures && !command_lines(&segment).is_empty() {
                    break;
                }
                segment.push(line.clone());
                index += 1;
            }
            if segment.is_empty() {
                let what = lines[index].as_ref().err().cloned().unwrap_or_default();
                break Err(Stop::Fail(self.position() + 1, format!("an unreadable line: {what}")));
            }
            if let Err(failure) = self.apply_segment(&segment, &mut journaled).await? {
                break Err(failure);
            }
        };
        if !journaled.is_empty() {
            tokio::task::block_in_place(|| self.copy.append(&journaled))?;
            self.metrics.commands.increment(journaled.len() as u64);
        }
        match outcome {
            Ok(()) => {}
            Err(Stop::Fail(sequence, what)) => self.fail(sequence, &what)?,
            // What checked so far is kept; the rest is read again next round.
            Err(Stop::NotObtained(what)) => {
                tracing::warn!(%what, position = self.position(), "a check needs the chain, which did not answer; trying again");
                self.prefetched = None;
            }
        }
        self.snapshot_if_due(false)?;
        Ok(())
    }

    /// Checks and replays one segment; `Err(Stop::Fail(position, what))` at the first check that
    /// fails, `Err(Stop::NotObtained)` when a check needs the chain and its node did not answer.
    async fn apply_segment(
        &mut self,
        segment: &[JournalLine],
        journaled: &mut Vec<JournalEntry>,
    ) -> Result<Result<(), Stop>, String> {
        let commands = command_lines(segment);
        // The journal's first command is its configuration: the messages of the rest follow
        // from it.
        let first_configures = commands
            .first()
            .is_some_and(|line| matches!(line.command, Command::Configure(_)));
        if self.position() == 0 && !first_configures {
            return Ok(Err(Stop::Fail(
                1,
                "the journal does not begin with the chain's configuration".into(),
            )));
        }
        if first_configures {
            // A configuration is checked on its own (no messages are needed for it); the rest of
            // the segment is checked under it once it applied.
            let (first, rest) = segment.split_first().expect("a segment is not empty");
            let JournalLine::Command(line) = first else {
                unreachable!("the segment starts with its configuration")
            };
            let check = checks::check_configuration_line(line);
            if let Err(failure) = self.replay(std::slice::from_ref(first), &[check], journaled).await? {
                return Ok(Err(failure));
            }
            if rest.is_empty() {
                return Ok(Ok(()));
            }
            return Box::pin(self.apply_segment(rest, journaled)).await;
        }
        let Some(messages) = &self.messages else {
            return Ok(Err(Stop::Fail(
                self.position() + 1,
                "no configuration to check it under".into(),
            )));
        };
        let (checks, learnt) =
            tokio::task::block_in_place(|| check_lines(&commands, messages, self.threads, &self.signer_keys));
        for (signer, key) in learnt {
            self.signer_keys.insert(signer, key);
        }
        self.replay(segment, &checks, journaled).await
    }

    /// Replays a checked segment in order: the chain's checks first, then each command on the
    /// engine, each state hash compared.
    async fn replay(
        &mut self,
        segment: &[JournalLine],
        checks: &[LineCheck],
        journaled: &mut Vec<JournalEntry>,
    ) -> Result<Result<(), Stop>, String> {
        let commands = command_lines(segment);
        let chain_failures = match self.chain_failures(&commands, checks).await {
            Ok(failures) => failures,
            Err(what) => return Ok(Err(Stop::NotObtained(what))),
        };
        let mut check_of = commands
            .iter()
            .zip(checks)
            .map(|(line, check)| (line.sequence, check.clone()));
        let mut pending_hash: Option<u64> = None;
        for line in segment {
            match line {
                JournalLine::StateHash { sequence, state_hash } => {
                    if let Err(stop) = self.check_state_hash(*sequence, state_hash) {
                        return Ok(Err(stop));
                    }
                    pending_hash = None;
                }
                JournalLine::Command(line) => {
                    if let Some(sequence) = pending_hash {
                        return Ok(Err(Stop::Fail(
                            sequence,
                            "no state hash after a multiple of 10,000".into(),
                        )));
                    }
                    let expected = self.position() + 1;
                    if line.sequence != expected {
                        return Ok(Err(Stop::Fail(
                            expected,
                            format!("missing from the journal (the next line is {})", line.sequence),
                        )));
                    }
                    let (_, check) = check_of.next().expect("one check per command");
                    match check {
                        LineCheck::Fails(what) => return Ok(Err(Stop::Fail(line.sequence, what))),
                        LineCheck::Holds | LineCheck::NeedsContractApproval { .. } => {}
                    }
                    if let Some(what) = chain_failures.get(&line.sequence) {
                        return Ok(Err(Stop::Fail(line.sequence, what.clone())));
                    }
                    if let Err(stop) = self.apply_line(line, journaled).await? {
                        return Ok(Err(stop));
                    }
                    if line.sequence.is_multiple_of(STATE_HASH_INTERVAL) {
                        pending_hash = Some(line.sequence);
                    }
                }
            }
        }
        Ok(Ok(()))
    }

    /// A state hash line: at the replay's position, and equal to the replay's.
    fn check_state_hash(&self, sequence: u64, state_hash: &[u8; 32]) -> Result<(), Stop> {
        if sequence != self.position() {
            return Err(Stop::Fail(sequence, "a state hash out of place".into()));
        }
        if self.engine.state_hash() != *state_hash {
            return Err(Stop::Fail(
                sequence,
                format!(
                    "the state hash differs: the venue's {}, the replay's {}",
                    hex_prefixed(state_hash),
                    hex_prefixed(&self.engine.state_hash())
                ),
            ));
        }
        Ok(())
    }

    /// Applies a checked command line to the replay (its batch's claims followed, a request made
    /// on chain checked against the vault's serving) and keeps it for the copy's journal.
    async fn apply_line(
        &mut self,
        line: &CommandLine,
        journaled: &mut Vec<JournalEntry>,
    ) -> Result<Result<(), Stop>, String> {
        if let Err(what) = self.batch_claims.follow(&line.authorization) {
            return Ok(Err(Stop::Fail(line.sequence, what)));
        }
        match self.requests_served_unlike_the_replay(&line.command).await {
            Ok(None) => {}
            Ok(Some(what)) => return Ok(Err(Stop::Fail(line.sequence, what))),
            Err(what) => return Ok(Err(Stop::NotObtained(what))),
        }
        let authorization = line.journal_authorization();
        let claim = authorization.as_ref().map(dexd_store::Authorization::claim);
        let mut events = Vec::new();
        if let Err(rejection) = self
            .engine
            .execute_signed(line.command.clone(), claim, line.time_ms, &mut events)
        {
            return Ok(Err(Stop::Fail(
                line.sequence,
                format!("the engine refuses it ({rejection:?}): the venue could not have applied it"),
            )));
        }
        if let Command::Configure(configuration) = &line.command {
            self.messages = Some(
                RequestMessages::new(configuration)
                    .map_err(|error| format!("the journal's configuration: {error:?}"))?,
            );
        }
        journaled.push(JournalEntry {
            sequence: line.sequence,
            time_ms: line.time_ms,
            command: dexd_store::codec::encode_command(&line.command),
            authorization,
        });
        Ok(Ok(()))
    }

    /// Writes a snapshot of the copy when enough commands passed since the last (or at the end
    /// of a `--once` run), so a restart and a root's tree replay little.
    fn snapshot_if_due(&self, at_end: bool) -> Result<(), String> {
        let position = self.position();
        let newest = self.copy.newest_snapshot();
        if position > newest && (at_end || position - newest >= SNAPSHOT_EVERY_COMMANDS) {
            tokio::task::block_in_place(|| self.copy.snapshot(position))?;
        }
        Ok(())
    }
}

/// A page as fetched, with its lines parsed.
struct ParsedPage {
    page: source::Page,
    lines: Vec<Result<JournalLine, String>>,
}

/// Why the checks of a page stopped before its end.
enum Stop {
    /// A line does not check, at this position: the journal cannot be trusted from there.
    Fail(u64, String),
    /// A check needs the chain, and its node did not answer (or is behind): nothing is decided,
    /// and the rest is read again next round. A node's lag never becomes a `FAIL`.
    NotObtained(String),
}

/// The command lines of a segment, in order (its state hash lines left out).
fn command_lines(segment: &[JournalLine]) -> Vec<&CommandLine> {
    segment
        .iter()
        .filter_map(|line| match line {
            JournalLine::Command(line) => Some(&**line),
            JournalLine::StateHash { .. } => None,
        })
        .collect()
}

/// Parses a page's lines on `threads` threads, then gives each batch line the order hashes its
/// page gave once per batch.
fn parse_page(text: &str, threads: usize) -> Vec<Result<JournalLine, String>> {
    let lines: Vec<&str> = text.lines().filter(|line| !line.is_empty()).collect();
    let threads = threads.max(1);
    let mut parsed: Vec<Result<JournalLine, String>> = if lines.len() < 64 || threads == 1 {
        lines.into_iter().map(parse_line).collect()
    } else {
        let share = lines.len().div_ceil(threads);
        std::thread::scope(|scope| {
            let handles: Vec<_> = lines
                .chunks(share)
                .map(|chunk| scope.spawn(move || chunk.iter().map(|line| parse_line(line)).collect::<Vec<_>>()))
                .collect();
            handles
                .into_iter()
                .flat_map(|handle| handle.join().expect("parsing never panics"))
                .collect()
        })
    };
    link_batch_hashes(&mut parsed);
    parsed
}
