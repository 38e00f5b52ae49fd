//! The trading page as the server serves it, and the demo market.

mod demo;
mod served;
