//! # Where the lesson's locks and threads come from
//!
//! Every `Mutex`, `Condvar`, `Arc` and thread the lesson uses is named here,
//! once, as the standard library's. The lesson's code says
//! `use crate::sync::…` instead of `use std::sync::…` for one reason: its
//! model tests (`tests/model.rs`) compile `queue.rs`, `pool.rs` and
//! `crawler.rs` against a `sync` of their own, whose types are `loom`'s,
//! which run a small test under every interleaving of its threads. Nothing
//! else changes: this module adds no behaviour.

pub use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
pub use std::thread;
