//! The HTTP API: every operation, its errors, signatures, agents, limits, TLS and the operator's view.

mod admin;
mod agents;
mod batch_signing;
mod cancel_reasons;
mod conditional_orders;
mod end_to_end;
mod hostile_input;
mod market_history;
mod openapi;
mod operability;
mod operations;
mod rate_limits;
mod signatures;
mod signed_requests;
mod subaccounts;
mod tls;
mod trading_extensions;
mod twaps;
