//! What differs between operating systems, one concern per module, each
//! with one implementation per OS behind the same functions, so the rest
//! of the shell has no `cfg`: where per-user directories are, files and
//! directories only their owner can read, other processes (alive, ended,
//! asked to stop), and the signals that stop the shell or raise its window.

pub mod dirs;
pub mod files;
pub mod process;
pub mod signals;
