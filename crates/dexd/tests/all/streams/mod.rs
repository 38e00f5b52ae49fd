//! The WebSocket streams: channels, sequence numbers, limits and slow consumers.

mod market;
mod protocol;
