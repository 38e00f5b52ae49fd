//! The WebSocket streams: channels, sequence numbers, limits and slow consumers.

mod bbo;
mod depth;
mod market;
mod protocol;
