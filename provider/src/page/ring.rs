//! A numbered ring buffer with cursors, shared by the console and network
//! logs: every entry gets the next sequence number as it goes in, the
//! oldest go when the cap is reached (and are counted), and a reader asks
//! for what came after its cursor, so nothing is lost or read twice.

use std::collections::VecDeque;

/// Entries numbered 1, 2, … as they arrive, the last `cap` kept.
#[derive(Debug)]
pub(crate) struct Ring<T> {
    entries: VecDeque<(u64, T)>,
    last_seq: u64,
    cap: usize,
}

/// One read: the entries after the cursor, the next cursor, and how many
/// entries after the cursor the cap had dropped.
#[derive(Debug)]
pub(crate) struct Read<T> {
    pub entries: Vec<(u64, T)>,
    pub cursor: u64,
    pub dropped: u64,
}

impl<T: Clone> Ring<T> {
    /// An empty ring keeping at most `cap` entries.
    pub(crate) fn new(cap: usize) -> Self {
        Self {
            entries: VecDeque::new(),
            last_seq: 0,
            cap,
        }
    }

    /// Adds `entry`; returns its sequence number.
    pub(crate) fn push(&mut self, entry: T) -> u64 {
        self.last_seq += 1;
        if self.entries.len() == self.cap {
            self.entries.pop_front();
        }
        self.entries.push_back((self.last_seq, entry));
        self.last_seq
    }

    /// Entries after `since` that `accept` takes, at most `limit`.
    pub(crate) fn read(&self, since: u64, limit: usize, accept: impl Fn(&T) -> bool) -> Read<T> {
        let oldest_kept = self.entries.front().map_or(self.last_seq + 1, |e| e.0);
        let dropped = oldest_kept.saturating_sub(since + 1);
        let entries: Vec<(u64, T)> = self
            .entries
            .iter()
            .filter(|(seq, entry)| *seq > since && accept(entry))
            .take(limit)
            .cloned()
            .collect();
        // A full page of results ends the cursor at its last entry, so the
        // next read continues there; otherwise everything up to now was read.
        let cursor = if entries.len() == limit {
            entries.last().map_or(since, |e| e.0)
        } else {
            self.last_seq
        };
        Read {
            entries,
            cursor,
            dropped,
        }
    }

    /// The number of the last entry that went in (0 before any).
    pub(crate) fn last_seq(&self) -> u64 {
        self.last_seq
    }

    /// The entries kept, oldest first.
    pub(crate) fn iter(&self) -> impl Iterator<Item = &T> {
        self.entries.iter().map(|(_, entry)| entry)
    }

    /// The entry numbered `seq`, if still kept.
    pub(crate) fn get(&self, seq: u64) -> Option<&T> {
        self.entries
            .iter()
            .find(|(number, _)| *number == seq)
            .map(|(_, entry)| entry)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_see_each_entry_once_and_count_what_the_cap_dropped() {
        let mut ring = Ring::new(3);
        for n in 1..=5 {
            assert_eq!(ring.push(n * 10), n);
        }
        let all = ring.read(0, 10, |_| true);
        assert_eq!(all.entries, vec![(3, 30), (4, 40), (5, 50)]);
        assert_eq!((all.cursor, all.dropped), (5, 2));
        let page = ring.read(3, 1, |_| true);
        assert_eq!((page.entries.clone(), page.cursor), (vec![(4, 40)], 4));
        assert_eq!(ring.read(page.cursor, 10, |_| true).entries, vec![(5, 50)]);
        assert!(ring.read(5, 10, |_| true).entries.is_empty());
        assert_eq!(ring.read(0, 10, |v| *v > 40).entries, vec![(5, 50)]);
        assert_eq!(ring.get(4), Some(&40));
        assert_eq!(ring.get(1), None);
    }
}
