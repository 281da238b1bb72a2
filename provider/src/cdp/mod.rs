//! The Chrome DevTools Protocol connection.
//!
//! Layers, bottom up:
//! * [`transport`]: moves whole JSON messages over a pipe (`--remote-debugging-pipe`,
//!   NUL-delimited) or a WebSocket. Knows nothing about ids or sessions.
//! * [`connection`]: one reader task; correlates command ids with waiting
//!   callers, fans events out per target session, bounds every command and
//!   fails every pending call at once when the transport closes.
//! * [`protocol`]: typed params/results for the CDP methods we use.

pub mod connection;
pub mod protocol;
pub mod transport;

pub use connection::{
    CdpEvent, Connection, EventFilter, EventStream, RelayLink, Relayed, SessionId,
};
pub use protocol::Command;
