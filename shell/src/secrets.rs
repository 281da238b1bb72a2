//! Reading the secrets a person gives the shell: a TOML file that only
//! its owner can read, and `BROWSER_SHELL_SECRET_<NAME>` variables.
//!
//! ```toml
//! github = "ghp_…"                                   # any host
//! bank = { value = "…", hosts = ["bank.example"] }   # only there
//! ```

use std::path::Path;

use browser_provider::{BrowserError, Result};
use browser_tools::secrets::{Secret, Secrets};

/// Environment variables with this prefix are secrets named by the rest.
pub const ENV_PREFIX: &str = "BROWSER_SHELL_SECRET_";

/// One entry of the file: a bare value, or a value with hosts.
#[derive(serde::Deserialize)]
#[serde(untagged)]
enum Entry {
    Value(String),
    Bound {
        value: String,
        #[serde(default)]
        hosts: Vec<String>,
    },
}

/// The secrets from `file` (if given) and from `variables` (the
/// environment); a variable wins over a file entry of the same name.
///
/// # Errors
/// `INVALID_ARGUMENT` for a file that others may read or that is not the
/// user's, that cannot be read or parsed, or a secret that is unusable.
pub fn load(
    file: Option<&Path>,
    variables: impl IntoIterator<Item = (String, String)>,
) -> Result<Secrets> {
    let mut entries = Vec::new();
    if let Some(path) = file {
        entries.extend(read_file(path)?);
    }
    for (key, value) in variables {
        if let Some(name) = key.strip_prefix(ENV_PREFIX) {
            entries.push(Secret::new(name, value, Vec::new())?);
        }
    }
    Ok(Secrets::new(entries))
}

fn read_file(path: &Path) -> Result<Vec<Secret>> {
    let refuse =
        |why: String| BrowserError::invalid("secrets", format!("{}: {why}", path.display()));
    std::fs::metadata(path).map_err(|e| refuse(format!("cannot read it: {e}")))?;
    if let Some(exposure) = crate::platform::files::exposure(path) {
        return Err(refuse(format!(
            "{}; secrets must be your own file that only you can read; run: {}",
            exposure.problem, exposure.fix
        )));
    }
    let text = std::fs::read_to_string(path).map_err(|e| refuse(format!("cannot read it: {e}")))?;
    let table: toml::Table = toml::from_str(&text).map_err(|e| refuse(e.message().to_owned()))?;
    let mut secrets = Vec::new();
    for (name, value) in table {
        let entry: Entry = value.try_into().map_err(|_| {
            refuse(format!(
                "{name} must be a string, or {{ value = \"…\", hosts = [\"…\"] }}"
            ))
        })?;
        let (value, hosts) = match entry {
            Entry::Value(value) => (value, Vec::new()),
            Entry::Bound { value, hosts } => (value, hosts),
        };
        secrets.push(Secret::new(&name, value, hosts)?);
    }
    Ok(secrets)
}

#[cfg(test)]
#[cfg(unix)]
mod tests {
    use std::os::unix::fs::PermissionsExt;

    use super::*;

    /// A secrets file in `dir` (removed with it when the test ends).
    fn file(dir: &tempfile::TempDir, name: &str, text: &str, mode: u32) -> std::path::PathBuf {
        let path = dir.path().join(name);
        std::fs::write(&path, text).unwrap();
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(mode)).unwrap();
        path
    }

    #[test]
    fn a_private_file_and_variables_give_secrets() {
        let dir = tempfile::tempdir().unwrap();
        let path = file(
            &dir,
            "good.toml",
            "github = \"ghp_abcdef\"\nbank = { value = \"hunter22\", hosts = [\"bank.example\"] }\n",
            0o600,
        );
        let secrets = load(
            Some(&path),
            [
                ("BROWSER_SHELL_SECRET_API".to_owned(), "key-0001".to_owned()),
                ("PATH".to_owned(), "/bin".to_owned()),
            ],
        )
        .unwrap();
        assert_eq!(secrets.names(), ["API", "bank", "github"]);
        assert_eq!(secrets.get("bank").unwrap().hosts, ["bank.example"]);
        assert_eq!(secrets.get("API").unwrap().value(), "key-0001");
    }

    #[test]
    fn files_others_can_read_or_odd_entries_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let open = file(&dir, "open.toml", "github = \"ghp_abcdef\"\n", 0o644);
        let error = load(Some(&open), []).unwrap_err();
        assert!(error.to_string().contains("chmod 600"), "{error}");
        let odd = file(&dir, "odd.toml", "github = 12\n", 0o600);
        let error = load(Some(&odd), []).unwrap_err();
        assert!(
            error.to_string().contains("github must be a string"),
            "{error}"
        );
        let short = file(&dir, "short.toml", "pin = \"123\"\n", 0o600);
        assert!(load(Some(&short), []).is_err());
        let missing = std::path::Path::new("/nonexistent/secrets.toml");
        assert_eq!(
            load(Some(missing), []).unwrap_err().code(),
            "INVALID_ARGUMENT"
        );
    }
}
