//! The HTTP layer: routes, parameter reading, middleware, and the contract's bodies.
//!
//! Only this layer knows JSON and HTTP. Each route reads its parameters into [`params::Params`],
//! refuses unknown ones against the [`operations`] table, calls a handler, and renders the answer
//! or an `error::ApiError`. Every response, errors and unknown paths included, is JSON and
//! carries `X-Request-Id`; one log line per request records method, path (never the query),
//! status, latency and request id, and nothing else.

pub(crate) mod cluster_channel;
pub(crate) mod credential;
pub(crate) mod error;
pub(crate) mod fair_share;
pub(crate) mod forwarding;
pub(crate) mod handlers;
pub(crate) mod observability;
pub(crate) mod openapi;
pub mod operations;
pub mod page;
pub mod params;
pub(crate) mod rate_limit;
pub(crate) mod render;
mod router;
mod routes;
pub(crate) mod served_journals;
pub mod state;
pub mod stream_connections;
pub mod streams;
pub(crate) mod written;

pub use self::observability::starting_router;
pub use self::router::{router, ClientIp, MIN_SEQUENCE_WAIT_MS};
pub use self::state::{AppState, ConnectionGauge};
