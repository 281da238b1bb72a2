//! What the shell's benchmarks share beside the test kit's fixture server
//! and percentiles (`browser_testkit`): the memory of a process tree.

// Each benchmark uses its own part of this.
#![allow(dead_code)]

use std::collections::HashMap;

/// Parent of each process, from `/proc/PID/stat`.
pub fn parents() -> HashMap<u32, u32> {
    std::fs::read_dir("/proc")
        .into_iter()
        .flatten()
        .filter_map(Result::ok)
        .filter_map(|e| e.file_name().to_str()?.parse::<u32>().ok())
        .filter_map(|pid| {
            let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
            let ppid = stat
                .rsplit_once(')')?
                .1
                .split_whitespace()
                .nth(1)?
                .parse()
                .ok()?;
            Some((pid, ppid))
        })
        .collect()
}

/// PSS of `root` and every process below it, in kB.
pub fn tree_pss_kb(root: u32) -> u64 {
    tree_pss_by_kind(root).values().map(|(_, kb)| kb).sum()
}

/// PSS of `root` and every process below it by kind, in kB, with how many
/// processes of each kind: Chromium's child processes go by their `--type`
/// (and `--utility-sub-type`), others (the shell, Chromium's main process)
/// by their program's name.
pub fn tree_pss_by_kind(root: u32) -> std::collections::BTreeMap<String, (usize, u64)> {
    let parents = parents();
    let in_tree = |mut pid: u32| loop {
        if pid == root {
            return true;
        }
        match parents.get(&pid) {
            Some(&parent) if parent > 1 => pid = parent,
            _ => return false,
        }
    };
    let tree: Vec<u32> = parents
        .keys()
        .copied()
        .filter(|&pid| in_tree(pid))
        .collect();
    pss_by_kind(&tree)
}

/// PSS of the processes `pids` by kind, in kB, with how many processes of
/// each kind (see [`tree_pss_by_kind`]); processes gone meanwhile count
/// nothing.
pub fn pss_by_kind(pids: &[u32]) -> std::collections::BTreeMap<String, (usize, u64)> {
    let mut kinds = std::collections::BTreeMap::new();
    for &pid in pids {
        let Some(pss) = std::fs::read_to_string(format!("/proc/{pid}/smaps_rollup"))
            .ok()
            .and_then(|rollup| {
                rollup
                    .lines()
                    .find_map(|line| line.strip_prefix("Pss:"))
                    .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
            })
        else {
            continue;
        };
        let entry = kinds.entry(kind_of(pid)).or_insert((0, 0));
        entry.0 += 1;
        entry.1 += pss;
    }
    kinds
}

/// What a process is, from its command line (see [`tree_pss_by_kind`]).
fn kind_of(pid: u32) -> String {
    let cmdline = std::fs::read(format!("/proc/{pid}/cmdline")).unwrap_or_default();
    // Chromium rewrites its command line as one string, spaces between.
    let args: Vec<String> = cmdline
        .split(|&b| b == 0 || b == b' ')
        .filter(|a| !a.is_empty())
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    let value = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")).map(str::to_owned))
    };
    match (value("type"), value("utility-sub-type")) {
        (Some(kind), Some(sub)) => format!("{kind} ({sub})"),
        (Some(kind), None) => kind,
        (None, _) => {
            let program = args.first().map_or("?", String::as_str);
            format!("{} (main)", program.rsplit('/').next().unwrap_or(program))
        }
    }
}
