//! The journal position of the change a write request made, carried from the handler that
//! submitted it to its answer's `X-Dexd-Sequence` header, through a value scoped to the request's
//! task: the handlers answer JSON and need not know the header.
//!
//! It does not wait for anything; a read waits for a position with `X-Dexd-Min-Sequence`.

use std::cell::Cell;
use std::future::Future;

use dexd_core::Command;
use dexd_store::{Authorization, Events, WriteError};

use dexd_venue::Chain;

tokio::task_local! {
    static WRITTEN_AT: Cell<Option<u64>>;
}

/// Runs a request's handler, and gives the journal position of the change it submitted, if any.
pub async fn recording<F: Future>(handler: F) -> (F::Output, Option<u64>) {
    WRITTEN_AT
        .scope(Cell::new(None), async {
            let answer = handler.await;
            (answer, WRITTEN_AT.with(Cell::get))
        })
        .await
}

/// Submits a command on `chain` and records its journal position for the answer's header.
pub async fn submit(
    chain: &Chain,
    command: Command,
    authorization: Option<Authorization>,
) -> Result<Events, WriteError> {
    let (sequence, events) = chain.submit_at(command, authorization).await?;
    let _ = WRITTEN_AT.try_with(|written_at| written_at.set(Some(sequence)));
    Ok(events)
}

/// Submits commands as one group on `chain` (see [`Chain::submit_group`]) and records the
/// journal position of the last one applied for the answer's header.
pub async fn submit_group(
    chain: &Chain,
    commands: Vec<(Command, Option<Authorization>)>,
) -> Result<Vec<Result<Events, WriteError>>, WriteError> {
    let outcomes = chain.submit_group(commands).await?;
    let last = outcomes
        .iter()
        .filter_map(|outcome| outcome.as_ref().ok().map(|(sequence, _)| *sequence))
        .max();
    if let Some(sequence) = last {
        let _ = WRITTEN_AT.try_with(|written_at| written_at.set(Some(sequence)));
    }
    Ok(outcomes
        .into_iter()
        .map(|outcome| outcome.map(|(_, events)| events))
        .collect())
}
