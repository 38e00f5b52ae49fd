//! A client's stream connection (`GET /ws`): [`connection`], the socket, its reader and writer,
//! pings and limits; `orders`, orders sent over the stream, run as their REST operations.
//!
//! It stands above the streams (`api::streams`: the protocol, the hubs, the outboxes), which it
//! subscribes through, and above the handlers, which run its orders; it holds no market data and
//! no order logic of its own.

pub mod connection;
pub(crate) mod orders;
