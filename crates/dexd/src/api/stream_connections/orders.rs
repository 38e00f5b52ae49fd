//! Orders over the stream: `{"op": "order", "id", "action", "chainId", ...the REST fields}` runs
//! the REST operation of `action` (`add`, `cancel`, `cancelAll`, `batchOrders`, `batchCancel`,
//! `amend`) with the same checks, and is answered `{"event": "result", "id", ...the REST 200
//! body}` or with an error event carrying the REST error.
//!
//! A connection's orders run one after the other, in the order they arrived (a cancel sent
//! after an add applies after it), on a task of their own, so that the connection keeps
//! reading meanwhile; at most [`MAX_QUEUED_STREAM_ORDERS`] wait. This module holds no order
//! logic: the REST handlers do the work.

use std::net::IpAddr;
use std::sync::Arc;

use serde_json::Value;
use tokio::sync::mpsc;

use crate::api::error::{too_many_requests, ApiError};
use crate::api::handlers;
use crate::api::operations::{self, Operation};
use crate::api::params::Params;
use crate::api::state::AppState;
use crate::api::streams::outbox::Outbox;
use crate::api::streams::protocol::{self, OrderFields};

/// The orders of one connection that may wait for the ones before them; one more is refused
/// with `RATE_LIMITED`.
pub const MAX_QUEUED_STREAM_ORDERS: usize = 64;

/// The actions `op: "order"` takes, each with the operation whose fields it takes.
pub const ACTIONS: [(&str, &Operation); 6] = [
    ("add", &operations::ADD_ORDER),
    ("cancel", &operations::CANCEL_ORDER),
    ("cancelAll", &operations::CANCEL_ALL),
    ("batchOrders", &operations::BATCH_ORDERS),
    ("batchCancel", &operations::BATCH_CANCEL),
    ("amend", &operations::AMEND_ORDER),
];

/// One order message, read.
pub struct OrderRequest {
    /// The client's `id`, as JSON text.
    pub id_json: String,
    /// Which action.
    pub action: String,
    /// Its fields.
    pub fields: OrderFields,
}

/// A connection's queue of orders, and the task that runs them.
pub struct StreamOrders {
    queue: mpsc::Sender<OrderRequest>,
}

impl StreamOrders {
    /// Starts the connection's order task for a client at `peer`; answers go to `outbox`. It
    /// ends with the queue.
    pub fn start(app: Arc<AppState>, outbox: Arc<Outbox>, peer: IpAddr) -> StreamOrders {
        let (queue, mut requests) = mpsc::channel::<OrderRequest>(MAX_QUEUED_STREAM_ORDERS);
        tokio::spawn(async move {
            while let Some(request) = requests.recv().await {
                let id_json = request.id_json.clone();
                let answer = match run(Arc::clone(&app), request, peer).await {
                    Ok(Value::Object(body)) => protocol::message("result", &id_json, body),
                    Ok(_) => protocol::error(&id_json, &ApiError::internal(), None),
                    Err(error) => protocol::error(&id_json, &error, None),
                };
                outbox.push(answer);
            }
        });
        StreamOrders { queue }
    }

    /// Queues an order; when too many wait, the answer is an error at once.
    pub fn submit(&self, request: OrderRequest, outbox: &Outbox) {
        if let Err(mpsc::error::TrySendError::Full(request) | mpsc::error::TrySendError::Closed(request)) =
            self.queue.try_send(request)
        {
            let error = too_many_requests(
                "this connection has its limit of orders waiting for their answers",
                std::time::Duration::from_secs(1),
            );
            outbox.push(protocol::error(&request.id_json, &error, None));
        }
    }
}

/// Runs one order message as its REST operation, counted against the client address's budget
/// as the same request over HTTP is (one, and each batch item beyond the first).
async fn run(app: Arc<AppState>, request: OrderRequest, peer: IpAddr) -> Result<Value, ApiError> {
    let Some((_, operation)) = ACTIONS.iter().find(|(name, _)| *name == request.action) else {
        let names: Vec<&str> = ACTIONS.iter().map(|(name, _)| *name).collect();
        return Err(ApiError::invalid(
            "action",
            format!("must be one of {}", names.join(", ")),
        ));
    };
    app.rate_limits
        .check_ip(peer)
        .map_err(|wait| too_many_requests("this address is sending requests faster than allowed", wait))?;
    let params = Params::from_json_object(request.fields.0)?;
    params.check_allowed(operation)?;
    app.charge_batch_items(peer, &params)?;
    match request.action.as_str() {
        "add" => {
            let answer = handlers::add_order(app, params).await?;
            serde_json::from_str(answer.get()).map_err(|_| ApiError::internal())
        }
        "cancel" => handlers::cancel_order(app, params).await,
        "cancelAll" => handlers::cancel_all(app, params).await,
        "batchOrders" => {
            let answer = handlers::batch_orders(app, params).await?;
            serde_json::from_str(answer.get()).map_err(|_| ApiError::internal())
        }
        "batchCancel" => handlers::batch_cancel(app, params).await,
        _ => handlers::amend_order(app, params).await,
    }
}
