//! The WebSocket streams: channels, sequence numbers, limits and slow consumers.

mod bbo;
mod market;
mod protocol;
