//! What is typed by browser-provider (feature `provider`): the provider's
//! test-binary harness, a bare page for the benchmarks' floors, and an
//! extension host paired with the person's Chrome. See the crate
//! documentation for why this dependency is sound.

pub mod bare;
#[cfg(target_os = "linux")]
pub mod extension;
pub mod harness;
