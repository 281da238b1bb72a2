//! Content extraction in the four formats, scoping, caps and masking.

use browser_provider::page::content::{ContentFormat, ContentRequest, ContentResult};
use browser_provider::{BrowserError, SessionId};
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::support::Ctx;

async fn fetch(
    ctx: &Ctx,
    session: &SessionId,
    format: ContentFormat,
    selector: Option<&str>,
    max_chars: usize,
) -> Result<ContentResult, BrowserError> {
    let request = ContentRequest {
        format,
        selector: selector.map(str::to_owned),
        max_chars,
    };
    ctx.browser()
        .content(session, request, None, &CancellationToken::new())
        .await
}

const SECRET: &str = "hunter2-secret";

pub async fn markdown_keeps_structure(ctx: Ctx) {
    let session = ctx.session_at("article.html").await;
    let markdown = fetch(&ctx, &session, ContentFormat::Markdown, None, 0)
        .await
        .unwrap()
        .content;
    for expected in [
        "# Field Guide to Owls",
        "## Where to look",
        "### Counting script",
        "- Old barns",
        "  - Near clearings",
        "1. Listen at dusk",
        "2. Stay still",
        "| Name | Wingspan (cm) |",
        "| --- | --- |",
        "| Barn owl | 85 |",
        "```python\nowls = [\"barn\", \"tawny\"]\nprint(len(owls))\n```",
        &format!("[barn owl page]({})", ctx.url("species/barn-owl.html")),
        "[Owl database](https://example.test/owls?id=1)",
        "**nocturnal**",
        "> An owl sees you before you see it.",
    ] {
        assert!(
            markdown.contains(expected),
            "missing {expected:?} in:\n{markdown}"
        );
    }
    assert!(
        !markdown.contains("secret note"),
        "hidden content leaked:\n{markdown}"
    );
    assert!(!markdown.contains(SECRET));
}

pub async fn txt_is_rendered_text(ctx: Ctx) {
    let session = ctx.session_at("article.html").await;
    let text = fetch(&ctx, &session, ContentFormat::Txt, None, 0)
        .await
        .unwrap()
        .content;
    assert!(text.contains("Owls are nocturnal birds of prey."));
    assert!(text.contains("Barn owl"));
    assert!(!text.contains("secret note"));
    assert!(!text.contains('<'));
    assert!(!text.contains(SECRET));
}

pub async fn html_masks_password_values(ctx: Ctx) {
    let session = ctx.session_at("article.html").await;
    let html = fetch(&ctx, &session, ContentFormat::Html, None, 0)
        .await
        .unwrap()
        .content;
    assert!(html.starts_with("<html"));
    assert!(html.contains("<table id=\"species\">"));
    assert!(html.contains("name=\"password\""));
    assert!(!html.contains(SECRET), "the password value leaked");
    // The page itself is unchanged.
    assert_eq!(
        ctx.eval(
            &session,
            "document.getElementById('secret').getAttribute('value')"
        )
        .await,
        SECRET
    );
}

pub async fn json_gives_structured_facts(ctx: Ctx) {
    let session = ctx.session_at("article.html").await;
    ctx.eval(
        &session,
        "document.getElementById('observer').value = 'Grace'",
    )
    .await;
    let text = fetch(&ctx, &session, ContentFormat::Json, None, 0)
        .await
        .unwrap()
        .content;
    assert!(!text.contains(SECRET));
    let facts: Value = serde_json::from_str(&text).unwrap();
    assert_eq!(facts["title"], "Field Guide to Owls");
    assert_eq!(facts["url"], ctx.url("article.html"));
    assert_eq!(facts["language"], "en");
    assert_eq!(
        facts["description"],
        "A short guide to common owls, with a sighting form."
    );
    assert_eq!(
        facts["headings"][0],
        serde_json::json!({"level": 1, "text": "Field Guide to Owls"})
    );
    let links = facts["links"].as_array().unwrap();
    assert!(
        links
            .iter()
            .any(|l| l["text"] == "barn owl page" && l["href"] == ctx.url("species/barn-owl.html"))
    );
    assert!(
        links.iter().any(|l| l["href"] == ctx.url("index.html")),
        "relative links become absolute"
    );

    let form = &facts["forms"][0];
    assert_eq!(form["name"], "sighting");
    assert_eq!(form["method"], "post");
    let fields = form["fields"].as_array().unwrap();
    let field = |name: &str| {
        fields
            .iter()
            .find(|f| f["name"] == name)
            .unwrap_or_else(|| panic!("no field {name}"))
    };
    assert_eq!(field("observer")["label"], "Observer name");
    assert_eq!(
        field("observer")["value"],
        "Grace",
        "live values, not the markup"
    );
    assert_eq!(field("observer")["required"], true);
    assert_eq!(field("password")["type"], "password");
    assert_eq!(field("password")["label"], "Account password");
    assert_eq!(field("password")["masked"], true);
    assert_eq!(field("night")["checked"], true);
    assert_eq!(field("kind")["value"], "tawny");
    assert_eq!(field("notes")["label"], "Notes");

    let table = &facts["tables"][0];
    assert_eq!(table["caption"], "Species seen this year");
    assert_eq!(
        table["headers"],
        serde_json::json!(["Name", "Wingspan (cm)"])
    );
    assert_eq!(
        table["rows"],
        serde_json::json!([["Barn owl", "85"], ["Tawny owl", "95"]])
    );
    assert_eq!(facts["jsonLd"][0]["headline"], "Field Guide to Owls");
    assert_eq!(facts["jsonLd"][0]["author"]["name"], "Ada Lovelace");
}

pub async fn selector_scoping_and_errors(ctx: Ctx) {
    let session = ctx.session_at("article.html").await;
    let table = fetch(&ctx, &session, ContentFormat::Markdown, Some("#species"), 0)
        .await
        .unwrap()
        .content;
    assert!(table.contains("| Tawny owl | 95 |"));
    assert!(!table.contains("Where to look"));
    let scoped = fetch(&ctx, &session, ContentFormat::Json, Some("#report"), 0)
        .await
        .unwrap()
        .content;
    let scoped: Value = serde_json::from_str(&scoped).unwrap();
    assert_eq!(scoped["headings"].as_array().unwrap().len(), 1);
    assert_eq!(scoped["tables"].as_array().unwrap().len(), 0);

    let missing = fetch(&ctx, &session, ContentFormat::Txt, Some("#nothing-here"), 0)
        .await
        .unwrap_err();
    assert_eq!(missing.code(), "ELEMENT_NOT_FOUND");
    let invalid = fetch(&ctx, &session, ContentFormat::Txt, Some("##bad(("), 0)
        .await
        .unwrap_err();
    assert_eq!(invalid.code(), "INVALID_ARGUMENT");
    assert!(invalid.to_string().contains("selector"));
}

pub async fn max_chars_truncates_and_flags(ctx: Ctx) {
    let session = ctx.session_at("article.html").await;
    let cut = fetch(&ctx, &session, ContentFormat::Markdown, None, 40)
        .await
        .unwrap();
    assert!(cut.truncated);
    assert_eq!(cut.content.chars().count(), 40);
    let whole = fetch(&ctx, &session, ContentFormat::Txt, Some("h1"), 1000)
        .await
        .unwrap();
    assert!(!whole.truncated);
    assert_eq!(whole.content.trim(), "Field Guide to Owls");
}
