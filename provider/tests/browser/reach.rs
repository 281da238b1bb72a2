//! The real web, round two (issue 38): targets inside scrolling boxes,
//! names of cells that hold controls, what a person drags, and acting at a
//! point. Fixtures: `scrollers.html`, `names.html`, `board.html`.

use browser_provider::SessionId;
use browser_provider::page::act::{Action, Target};
use browser_provider::snapshot::Scope;
use tokio_util::sync::CancellationToken;

use crate::snapshot::click;
use crate::support::Ctx;

/// A fixture page open in a session of its own.
struct Probe {
    ctx: Ctx,
    session: SessionId,
}

impl Probe {
    async fn open(ctx: &Ctx, page: &str) -> Self {
        let session = ctx.session_at(page).await;
        Self {
            ctx: ctx.clone(),
            session,
        }
    }

    async fn snapshot(&self) -> String {
        self.ctx
            .browser()
            .snapshot(&self.session, &Scope::Page, &CancellationToken::new())
            .await
            .unwrap()
            .text
    }

    async fn act(&self, role: &str, name: &str, action: Action) -> String {
        let target = Target::Role {
            role: role.into(),
            name: name.into(),
        };
        let report = self
            .ctx
            .browser()
            .act(&self.session, &target, &action, &CancellationToken::new())
            .await
            .unwrap_or_else(|e| panic!("{role} {name:?}: {e}"));
        format!("{:?}", report.outcome.observation)
    }

    async fn eval(&self, script: &str) -> String {
        let value = self.ctx.eval(&self.session, script).await;
        value.as_str().map_or_else(|| value.to_string(), str::to_owned)
    }
}

pub async fn targets_inside_scroll_boxes_are_scrolled_to_and_clicked(ctx: Ctx) {
    let page = Probe::open(&ctx, "scrollers.html").await;
    // Each target lies outside what its box shows: below a listbox's fold,
    // in a box inside a box, under a sticky table header once scrolled to,
    // off to the right of a horizontal scroller, in a shadow root's box, in
    // a frame's box; the later ones below the page's fold too.
    for (role, name) in [
        ("option", "Port 20"),
        ("option", "Port 1"),
        ("button", "Nested 13"),
        ("button", "Load 2"),
        ("button", "Load 19"),
        ("button", "Column 11"),
        ("button", "Shadow 11"),
        ("button", "Framed 18"),
    ] {
        page.act(role, name, click()).await;
        let out = page.eval("document.getElementById('out').textContent").await;
        assert_eq!(out, format!("clicked {name}"), "clicking {role} {name:?}");
    }
}
