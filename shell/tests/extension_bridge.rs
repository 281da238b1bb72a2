//! The extension bridge's tests (`bridge_join`), in a binary of their own:
//! they time how soon the person's Chrome (a real Chromium with the
//! extension) connects, so they run beside each other only, not beside the
//! load of every other test of the shell (see `tests.rs`).

#![allow(clippy::unwrap_used, clippy::expect_used)]

mod bridge;
mod common;

mod bridge_join;
