//! The session report: one self-contained HTML file of what happened
//! (the timeline with its pictures and results, errors, the person's
//! interventions, start and end, the tabs), for reading later or sending
//! to someone. It loads nothing: pictures are `data:` URLs, each written
//! once however many entries show it, and its own policy forbids
//! fetching anything; it has no script.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::Arc;
use std::time::{Duration, UNIX_EPOCH};

use axum::extract::{Query, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use browser_provider::browser::LiveTab;

use super::Relay;
use super::timeline::{Actor, Entry, Picture};

/// `/report` query: one session's report, or everything's.
#[derive(Debug, serde::Deserialize)]
pub(super) struct ReportQuery {
    session: Option<String>,
}

/// `GET /report[?session=S]`: the report as an HTML download.
pub(super) async fn download(
    State(relay): State<Relay>,
    Query(query): Query<ReportQuery>,
) -> Response {
    let session = query.session.filter(|s| !s.is_empty());
    let entries: Vec<Arc<Entry>> = relay
        .timeline
        .entries()
        .into_iter()
        .filter(|entry| belongs(entry, session.as_deref()))
        .collect();
    if let Some(session) = &session
        && !entries
            .iter()
            .any(|e| e.actor == Actor::Agent(session.clone()))
    {
        let known: Vec<String> = relay
            .live
            .browser()
            .sessions()
            .iter()
            .map(|s| s.as_str().to_owned())
            .collect();
        return (
            StatusCode::NOT_FOUND,
            format!(
                "SESSION_NOT_FOUND: no activity of session {session:?} is kept; sessions now: {}\n",
                if known.is_empty() {
                    "none".to_owned()
                } else {
                    known.join(", ")
                }
            ),
        )
            .into_response();
    }
    let tabs: Vec<LiveTab> = relay
        .live
        .tabs()
        .await
        .into_iter()
        .filter(|tab| match &session {
            Some(session) => tab.session.as_ref().is_some_and(|s| s.as_str() == session),
            None => true,
        })
        .collect();
    let html = render(&entries, session.as_deref(), &tabs);
    let mut response = html.into_response();
    let headers = response.headers_mut();
    headers.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/html; charset=utf-8"),
    );
    headers.insert(
        header::CONTENT_DISPOSITION,
        HeaderValue::from_static("attachment; filename=\"browser-shell-report.html\""),
    );
    response
}

/// Whether `entry` goes into the report of `session` (the person's steps
/// go into every report: they are what happened to it).
fn belongs(entry: &Entry, session: Option<&str>) -> bool {
    match (&entry.actor, session) {
        (_, None) | (Actor::Person, _) => true,
        (Actor::Agent(own), Some(session)) => own == session,
    }
}

/// The report page.
pub fn render(entries: &[Arc<Entry>], session: Option<&str>, tabs: &[LiveTab]) -> String {
    let mut out = String::new();
    let subject = match session {
        Some(session) => format!("session {session}"),
        None => "all sessions".to_owned(),
    };
    let _ = write!(
        out,
        "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\
         <meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; img-src data:; style-src 'unsafe-inline'\">\
         <meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\
         <title>browser-shell report: {}</title><style>{STYLE}",
        escape(&subject)
    );
    // Each picture once, as a class; entries refer to it.
    let mut pictures: BTreeMap<u64, &Arc<Picture>> = BTreeMap::new();
    for entry in entries {
        for picture in [&entry.before, &entry.after].into_iter().flatten() {
            pictures.entry(picture.sequence).or_insert(picture);
        }
    }
    for (sequence, picture) in &pictures {
        let _ = write!(
            out,
            ".p{sequence}{{background-image:url({});aspect-ratio:{}/{}}}",
            picture.data_url, picture.width, picture.height
        );
    }
    out.push_str("</style></head><body>");
    let _ = write!(out, "<h1>browser-shell report: {}</h1>", escape(&subject));

    let calls = entries
        .iter()
        .filter(|e| matches!(e.actor, Actor::Agent(_)))
        .count();
    let errors: Vec<&Arc<Entry>> = entries
        .iter()
        .filter(|e| e.outcome.as_deref().is_some_and(|o| o != "ok"))
        .collect();
    let interventions: Vec<&Arc<Entry>> = entries
        .iter()
        .filter(|e| e.actor == Actor::Person)
        .collect();
    let (start, end) = match (entries.first(), entries.last()) {
        (Some(first), Some(last)) => (first.at, last.at + last.millis.unwrap_or_default()),
        _ => (0, 0),
    };
    out.push_str("<dl class=\"facts\">");
    if entries.is_empty() {
        out.push_str("<dt>Activity</dt><dd>none kept</dd>");
    } else {
        let _ = write!(
            out,
            "<dt>Start</dt><dd>{}</dd><dt>End</dt><dd>{}</dd><dt>Length</dt><dd>{}</dd>",
            date_time(start),
            date_time(end),
            length(end.saturating_sub(start))
        );
    }
    let _ = write!(
        out,
        "<dt>Agent calls</dt><dd>{calls}</dd><dt>Errors</dt><dd>{}</dd><dt>The person stepped in</dt><dd>{}</dd></dl>",
        errors.len(),
        interventions.len()
    );

    out.push_str("<h2>Tabs</h2>");
    if tabs.is_empty() {
        out.push_str("<p class=\"muted\">No tab is open now.</p>");
    } else {
        out.push_str("<ul>");
        for tab in tabs {
            let owner = tab.session.as_ref().map_or("the person", |s| s.as_str());
            let _ = write!(
                out,
                "<li><b>{}</b> {} <span class=\"muted\">{} · {}</span></li>",
                escape(tab.handle.as_str()),
                escape(if tab.title.is_empty() {
                    "(untitled)"
                } else {
                    &tab.title
                }),
                escape(&tab.url),
                escape(owner)
            );
        }
        out.push_str("</ul>");
    }
    if !errors.is_empty() {
        out.push_str("<h2>Errors</h2><ul>");
        for entry in &errors {
            let _ = write!(
                out,
                "<li><a href=\"#e{}\">{}</a> {} <b class=\"bad\">{}</b></li>",
                entry.id,
                clock(entry.at),
                escape(&entry.what),
                escape(entry.outcome.as_deref().unwrap_or_default())
            );
        }
        out.push_str("</ul>");
    }
    if !interventions.is_empty() {
        out.push_str("<h2>The person stepped in</h2><ul>");
        for entry in &interventions {
            let _ = write!(
                out,
                "<li><a href=\"#e{}\">{}</a> {}{}</li>",
                entry.id,
                clock(entry.at),
                escape(&entry.what),
                if entry.summary.is_empty() {
                    String::new()
                } else {
                    format!(": {}", escape(&entry.summary))
                }
            );
        }
        out.push_str("</ul>");
    }

    out.push_str("<h2>Timeline</h2><ol class=\"timeline\">");
    for entry in entries {
        render_entry(&mut out, entry);
    }
    out.push_str("</ol><p class=\"muted\">Made by browser-shell. Typed text, passwords and secrets are not in this report.</p></body></html>\n");
    out
}

fn render_entry(out: &mut String, entry: &Entry) {
    let who = match &entry.actor {
        Actor::Agent(session) => format!("agent {session}"),
        Actor::Person => "person".to_owned(),
    };
    let outcome = match entry.outcome.as_deref() {
        None => "<span class=\"muted\">unfinished</span>".to_owned(),
        Some("ok") => format!(
            "<span class=\"ok\">{}</span>",
            escape(if entry.headline.is_empty() {
                "done"
            } else {
                &entry.headline
            })
        ),
        Some(code) => format!("<b class=\"bad\">{}</b>", escape(code)),
    };
    let _ = write!(
        out,
        "<li id=\"e{}\" class=\"{}\"><div class=\"head\"><span class=\"time\">{}</span> <span class=\"who\">{}</span> <b>{}</b> <span class=\"summary\">{}</span> {outcome}{}</div>",
        entry.id,
        if entry.actor == Actor::Person {
            "person"
        } else {
            "agent"
        },
        clock(entry.at),
        escape(&who),
        escape(&entry.what),
        escape(&entry.summary),
        entry
            .millis
            .map(|ms| format!(" <span class=\"muted\">{ms} ms</span>"))
            .unwrap_or_default()
    );
    if entry.before.is_some() || entry.after.is_some() {
        out.push_str("<div class=\"frames\">");
        for (label, picture) in [("before", &entry.before), ("after", &entry.after)] {
            if let Some(picture) = picture {
                let _ = write!(
                    out,
                    "<figure><div class=\"picture p{}\" role=\"img\" aria-label=\"{label}\"></div><figcaption>{label}</figcaption></figure>",
                    picture.sequence
                );
            }
        }
        out.push_str("</div>");
    }
    if !entry.arguments.is_empty() || !entry.result.is_empty() {
        out.push_str("<details><summary>Arguments and result</summary>");
        if !entry.arguments.is_empty() {
            let _ = write!(out, "<pre>{}</pre>", escape(&entry.arguments));
        }
        if !entry.result.is_empty() {
            let _ = write!(out, "<pre>{}</pre>", escape(&entry.result));
        }
        out.push_str("</details>");
    }
    out.push_str("</li>");
}

const STYLE: &str = "body{font:14px/1.45 system-ui,sans-serif;margin:24px auto;max-width:980px;padding:0 16px;color:#16181d}\
h1{font-size:20px}h2{font-size:16px;margin-top:28px}.muted{color:#6b7280}.ok{color:#15803d}.bad{color:#b91c1c}\
.facts{display:grid;grid-template-columns:max-content 1fr;gap:2px 14px}.facts dt{color:#6b7280}.facts dd{margin:0}\
.timeline{list-style:none;padding:0}.timeline li{border:1px solid #e2e5ea;border-radius:8px;padding:8px 10px;margin:6px 0}\
.timeline li.person{border-color:#fdba74;background:#fff7ed}.time{color:#6b7280;font-variant-numeric:tabular-nums}.who{color:#6b7280}\
.frames{display:flex;gap:10px;margin-top:6px}figure{margin:0}figcaption{color:#6b7280;font-size:12px}\
.picture{width:320px;max-width:42vw;background-size:cover;border:1px solid #e2e5ea;border-radius:4px}\
pre{white-space:pre-wrap;word-break:break-word;background:#f4f5f7;padding:8px;border-radius:6px;max-height:24em;overflow:auto}";

/// Text made safe for HTML.
fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

/// `10:42:07 UTC`.
fn clock(millis: u64) -> String {
    browser_provider::browser::clock(UNIX_EPOCH + Duration::from_millis(millis))
}

/// `2026-12-03 10:42:07 UTC`.
fn date_time(millis: u64) -> String {
    let days = (millis / 86_400_000) as i64;
    // Civil date from days since 1970-01-01 (Howard Hinnant's algorithm).
    let z = days + 719_468;
    let era = z.div_euclid(146_097);
    let day_of_era = z.rem_euclid(146_097);
    let year_of_era =
        (day_of_era - day_of_era / 1460 + day_of_era / 36_524 - day_of_era / 146_096) / 365;
    let day_of_year = day_of_era - (365 * year_of_era + year_of_era / 4 - year_of_era / 100);
    let mp = (5 * day_of_year + 2) / 153;
    let day = day_of_year - (153 * mp + 2) / 5 + 1;
    let month = if mp < 10 { mp + 3 } else { mp - 9 };
    let year = year_of_era + era * 400 + i64::from(month <= 2);
    format!("{year:04}-{month:02}-{day:02} {}", clock(millis))
}

/// `1 h 02 min`, `3 min 20 s`, `12 s`.
fn length(millis: u64) -> String {
    let seconds = millis / 1000;
    match seconds {
        0..60 => format!("{seconds} s"),
        60..3600 => format!("{} min {:02} s", seconds / 60, seconds % 60),
        _ => format!("{} h {:02} min", seconds / 3600, seconds / 60 % 60),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dates_and_lengths_read_as_people_write_them() {
        // 2026-12-03 10:42:07 UTC
        assert_eq!(date_time(1_796_294_527_000), "2026-12-03 10:42:07 UTC");
        assert_eq!(date_time(0), "1970-01-01 00:00:00 UTC");
        assert_eq!(length(12_400), "12 s");
        assert_eq!(length(200_000), "3 min 20 s");
        assert_eq!(length(3_720_000), "1 h 02 min");
    }

    #[test]
    fn page_text_cannot_become_markup() {
        assert_eq!(
            escape("<script>alert('x')</script> & \"q\""),
            "&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt; &amp; &quot;q&quot;"
        );
    }
}
