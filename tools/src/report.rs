//! How errors look to the caller: `error[CODE]: message` plus a hint line,
//! and an exit status derived from the code.

use browser_provider::BrowserError;

use crate::words::Surface;

/// Exit status for a failed command: 2 for caller mistakes (bad arguments,
/// blocked URLs), 3 when the browser is missing or gone, 1 otherwise.
pub fn exit_status(error: &BrowserError) -> u8 {
    exit_status_of_code(error.code())
}

/// Exit status for an error known only by its code (as a remote call reports it).
pub fn exit_status_of_code(code: &str) -> u8 {
    match code {
        "INVALID_ARGUMENT" | "NAVIGATION_BLOCKED" | "ELEMENT_NOT_FOUND" => 2,
        "BROWSER_NOT_FOUND" | "LAUNCH_FAILED" | "NOT_CONNECTED" | "BROWSER_CRASHED" => 3,
        _ => 1,
    }
}

/// The error as two lines of text: what happened (with its stable code) and what to do.
pub fn render(error: &BrowserError) -> String {
    format!(
        "error[{}]: {error}\nhint: {}",
        error.code(),
        Surface::CommandLine.hint(error)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rendering_carries_code_and_hint() {
        let error =
            BrowserError::invalid("format", "\"pdf\" is not one of html, markdown, txt, json");
        let text = render(&error);
        assert!(text.starts_with("error[INVALID_ARGUMENT]: invalid argument format"));
        assert!(text.contains("\nhint: fix the named argument"));
        assert_eq!(exit_status(&error), 2);
        assert_eq!(exit_status(&BrowserError::Aborted), 1);
    }
}
