//! Records the commit the binary is built from, for `--version`: the
//! `BROWSER_SHELL_COMMIT` variable when set (a build from a source
//! tarball), else `git rev-parse` of the checkout, else "unknown".

use std::process::Command;

fn main() {
    println!("cargo:rerun-if-env-changed=BROWSER_SHELL_COMMIT");
    let manifest = std::env::var("CARGO_MANIFEST_DIR").unwrap_or_default();
    let git_dir = Command::new("git")
        .args(["rev-parse", "--absolute-git-dir"])
        .current_dir(&manifest)
        .output()
        .ok()
        .filter(|out| out.status.success())
        .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned());
    if let Some(dir) = &git_dir {
        // A new commit or branch changes one of these. (A path that does
        // not exist would make every build run this script again.)
        for watched in ["HEAD", "refs/heads", "packed-refs"] {
            let path = std::path::Path::new(dir).join(watched);
            if path.exists() {
                println!("cargo:rerun-if-changed={}", path.display());
            }
        }
    }
    let commit = std::env::var("BROWSER_SHELL_COMMIT")
        .ok()
        .filter(|c| !c.is_empty())
        .or_else(|| {
            Command::new("git")
                .args(["rev-parse", "--short=12", "HEAD"])
                .current_dir(&manifest)
                .output()
                .ok()
                .filter(|out| out.status.success())
                .map(|out| String::from_utf8_lossy(&out.stdout).trim().to_owned())
        })
        .unwrap_or_else(|| "unknown".to_owned());
    println!("cargo:rustc-env=BROWSER_SHELL_COMMIT={commit}");
}
