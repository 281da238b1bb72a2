//! The real web, round two (issue 38): targets inside scrolling boxes,
//! names of cells that hold controls, what a person drags, and acting at a
//! point. Fixtures: `scrollers.html`, `names.html`, `board.html`.

use browser_provider::browser::ActionReport;
use browser_provider::page::act::{Action, Aftermath, Target};
use browser_provider::page::inspect::{InspectOptions, InspectTarget};
use browser_provider::page::wait::{Condition, ElementState};
use browser_provider::snapshot::Scope;
use browser_provider::{BrowserError, SessionId};
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

    async fn act(&self, role: &str, name: &str, action: Action) -> ActionReport {
        let target = Target::Role {
            role: role.into(),
            name: name.into(),
        };
        self.try_act(&target, action)
            .await
            .unwrap_or_else(|e| panic!("{role} {name:?}: {e}"))
    }

    async fn try_act(&self, target: &Target, action: Action) -> Result<ActionReport, BrowserError> {
        self.ctx
            .browser()
            .act(&self.session, target, &action, &CancellationToken::new())
            .await
    }

    /// Waits (bounded) until `condition` evaluates to true in the page.
    async fn until(&self, condition: &str) {
        let script = format!("!!({condition})");
        let ready = crate::support::eventually(std::time::Duration::from_secs(10), || async {
            self.ctx.eval(&self.session, &script).await == serde_json::json!(true)
        })
        .await;
        assert!(ready, "{condition} never held");
    }

    async fn eval(&self, script: &str) -> String {
        let value = self.ctx.eval(&self.session, script).await;
        value
            .as_str()
            .map_or_else(|| value.to_string(), str::to_owned)
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
        let out = page
            .eval("document.getElementById('out').textContent")
            .await;
        assert_eq!(out, format!("clicked {name}"), "clicking {role} {name:?}");
    }
}

pub async fn cells_that_hold_controls_keep_their_own_words(ctx: Ctx) {
    let page = Probe::open(&ctx, "names.html").await;
    let text = page.snapshot().await;
    for expected in [
        "columnheader \"Tonnes\" [ref=",
        "button \"Sort column ascending\" [ref=",
        "columnheader \"Port\"",
        "button \"Filter ports\" [ref=",
        "columnheader \"Vessel\"",
        "cell \"Rotterdam\"",
        "button \"Details\" [ref=",
        "columnheader \"Name\"",
        "button \"Sort by name\" [ref=",
        "gridcell \"Ishmael\" [ref=",
        "checkbox \"Select Ishmael\" [ref=",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // The header is addressed as it is printed, and the button in it too,
    // for actions, waits and inspection.
    page.act("columnheader", "Tonnes", click()).await;
    page.act("button", "Sort column ascending", click()).await;
    let inspected = page
        .ctx
        .browser()
        .inspect(
            &page.session,
            &InspectTarget::Role {
                role: "listitem".into(),
                name: "Renew charts".into(),
            },
            &InspectOptions::default(),
            &CancellationToken::new(),
        )
        .await
        .unwrap();
    assert_eq!(
        (inspected.tag.as_str(), inspected.text.as_str()),
        ("li", "Renew charts")
    );
    let waited = page
        .ctx
        .browser()
        .wait(
            &page.session,
            &Condition::Role {
                role: "listitem".into(),
                name: "Inspect hull".into(),
                state: ElementState::Visible,
            },
            std::time::Duration::from_secs(2),
            &CancellationToken::new(),
        )
        .await;
    assert!(waited.is_ok(), "{waited:?}");
    // Every name agrees with Chrome's own accessibility tree: ours is the
    // cell's own words, Chrome's adds the names of the controls in it.
    let chrome = chrome_names(&page).await;
    let named = named_lines(&text);
    assert!(named.len() >= 11, "{text}");
    for (role, name) in named {
        let agrees = chrome
            .iter()
            .any(|(their_role, their_name)| *their_role == role && agrees(&name, their_name));
        assert!(
            agrees,
            "{role} {name:?} is not in Chrome's tree: {chrome:?}"
        );
    }
}

/// Whether our name agrees with Chrome's: the same, or all of it within
/// Chrome's, which also counts the names of the controls inside a cell and
/// CSS-generated content (a tree's "▸ " marker).
fn agrees(ours: &str, chrome: &str) -> bool {
    chrome == ours || chrome.contains(ours)
}

/// `(role, name)` of every snapshot line with a quoted name.
fn named_lines(snapshot: &str) -> Vec<(String, String)> {
    snapshot
        .lines()
        .filter_map(|line| {
            let line = line.trim_start().strip_prefix("- ")?;
            let (role, rest) = line.split_once(" \"")?;
            let (name, _) = rest.split_once('"')?;
            Some((role.to_owned(), name.to_owned()))
        })
        .collect()
}

/// `(role, name)` of every node of Chrome's accessibility tree of the page.
async fn chrome_names(page: &Probe) -> Vec<(String, String)> {
    let browser = page.ctx.browser();
    let tab = browser.active_tab(&page.session).unwrap();
    let view = browser.view_of(&page.session, &tab).unwrap();
    let tree = browser
        .host()
        .send_command(
            &view,
            "Accessibility.getFullAXTree",
            serde_json::json!({}),
            std::time::Duration::from_secs(10),
        )
        .await
        .unwrap();
    let text = |node: &serde_json::Value, field: &str| {
        node[field]["value"].as_str().unwrap_or_default().to_owned()
    };
    tree["nodes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|node| (text(node, "role"), text(node, "name")))
        .collect()
}

pub async fn names_agree_with_chrome_s_accessibility_tree(ctx: Ctx) {
    let mut disagreements = Vec::new();
    for (page, ready) in [
        ("widgets/apg.html", "true"),
        ("widgets/apg-grid.html", "true"),
        ("widgets/apg-treegrid.html", "true"),
        ("widgets/apg-controls.html", "true"),
        ("widgets/apg-menubar.html", "true"),
        ("widgets/apg-tree.html", "true"),
        ("widgets/apg-combobox.html", "true"),
        ("widgets/aggrid.html", "!!document.querySelector('.ag-row')"),
        ("widgets/tomselect.html", "true"),
        ("widgets/shoelace.html", "true"),
        ("form.html", "true"),
    ] {
        let probe = Probe::open(&ctx, page).await;
        probe.until(ready).await;
        let text = probe.snapshot().await;
        let chrome = chrome_names(&probe).await;
        for (role, name) in named_lines(&text) {
            let agrees = chrome
                .iter()
                .any(|(their_role, their_name)| *their_role == role && agrees(&name, their_name));
            if !agrees {
                disagreements.push(format!("{page}: {role} {name:?}"));
            }
        }
    }
    assert!(disagreements.is_empty(), "{disagreements:#?}");
}

pub async fn what_a_person_drags_has_a_ref_and_drops_where_it_is_aimed(ctx: Ctx) {
    let page = Probe::open(&ctx, "widgets/sortable.html").await;
    page.until("window.boardReady === true").await;
    let text = page.snapshot().await;
    // Items that show a grab cursor get refs, and so do the plain cards of
    // lists the library listens on for presses.
    for item in ["Lisbon", "Valletta", "Piraeus", "Inspect hull", "Hire crew"] {
        let line = text
            .lines()
            .find(|l| l.contains(item))
            .unwrap_or_else(|| panic!("no {item} in:\n{text}"));
        assert!(line.contains("[ref="), "{line}");
    }
    // A card onto the other list (native HTML5 drag and drop, addressed by
    // the text the snapshot shows and the list's name).
    let drag_to = |role: &str, name: &str| Action::Drag {
        to: Target::Role {
            role: role.into(),
            name: name.into(),
        },
    };
    let report = page
        .act("listitem", "Inspect hull", drag_to("list", "Done"))
        .await;
    let Some(Aftermath::Dropped(Some(place))) = &report.outcome.aftermath else {
        panic!("{:?}", report.outcome.aftermath)
    };
    assert_eq!(
        place.to_string(),
        r#"listitem "Inspect hull" is now 2 of 2 in list "Done""#
    );
    assert_eq!(
        page.eval("JSON.stringify(order('done'))").await,
        r#"["Hire crew","Inspect hull"]"#,
        "moves: {}",
        page.eval("JSON.stringify(moves)").await
    );
    // Within a list, onto another item: it lands in that item's place.
    page.act("listitem", "Lisbon", drag_to("listitem", "Piraeus"))
        .await;
    assert_eq!(
        page.eval("JSON.stringify(order('ports'))").await,
        r#"["Valletta","Piraeus","Lisbon"]"#,
        "moves: {}",
        page.eval("JSON.stringify(moves)").await
    );
}

pub async fn a_scroll_in_a_box_says_what_came_into_view(ctx: Ctx) {
    let page = Probe::open(&ctx, "scrollers.html").await;
    let report = page
        .act("option", "Port 3", Action::Scroll { dx: 0.0, dy: 240.0 })
        .await;
    let Some(Aftermath::Scrolled(view)) = &report.outcome.aftermath else {
        panic!("{:?}", report.outcome.aftermath)
    };
    let scrolled = page
        .eval("String(document.getElementById('ports').scrollTop)")
        .await;
    assert_eq!(view.top.to_string(), scrolled, "{view}");
    assert!(view.top > 0, "{view}");
    let text = view.to_string();
    assert!(
        text.starts_with(r#"listbox "Ports" is scrolled "#),
        "{text}"
    );
    let first = view.first.as_ref().unwrap();
    assert_eq!(first.role, "option", "{text}");
    assert_ne!(first.name, "Port 1", "{text}");
    // The page itself, without an element.
    let report = page
        .try_act(&Target::Page, Action::Scroll { dx: 0.0, dy: 300.0 })
        .await
        .unwrap();
    let Some(Aftermath::Scrolled(view)) = &report.outcome.aftermath else {
        panic!("{:?}", report.outcome.aftermath)
    };
    assert!(view.container.is_none() && view.top > 0, "{view}");
}

pub async fn actions_at_a_point_reach_what_has_no_element(ctx: Ctx) {
    let page = Probe::open(&ctx, "canvas.html").await;
    let at = |x: f64, y: f64| Target::Point { x, y };
    // The canvas's box starts at (60, 40) in the viewport (its margin).
    let report = page.try_act(&at(160.0, 240.0), click()).await.unwrap();
    assert_eq!(
        page.eval("JSON.stringify(log)").await,
        r#"["click 100,200"]"#
    );
    let found = report.outcome.at_point.as_ref().expect("what was hit");
    assert_eq!(found.to_string(), r#"generic "Tonnage chart""#, "{found:?}");
    page.try_act(&at(210.0, 140.0), Action::Hover)
        .await
        .unwrap();
    assert_eq!(
        page.eval("document.getElementById('chart').dataset.hover")
            .await,
        "150,100"
    );
    page.try_act(
        &at(100.0, 100.0),
        Action::Drag {
            to: at(300.0, 200.0),
        },
    )
    .await
    .unwrap();
    // (A press and release on the same element is also a click, as a
    // person's drag on a canvas is.)
    let log = page.eval("JSON.stringify(log)").await;
    assert!(log.contains("drag 40,60 -> 240,160"), "{log}");
    // Outside the viewport, or an action that needs an element: refused.
    for (target, action) in [
        (at(-5.0, 10.0), click()),
        (at(10.0, 100_000.0), click()),
        (at(f64::NAN, 10.0), click()),
        (
            at(160.0, 240.0),
            Action::Type {
                text: "x".into(),
                submit: false,
            },
        ),
    ] {
        let refused = page.try_act(&target, action).await.unwrap_err();
        assert_eq!(refused.code(), "INVALID_ARGUMENT", "{refused}");
    }
}

pub async fn a_combobox_library_s_results_scroll_in_their_box(ctx: Ctx) {
    // Tom Select keeps its options in a box of 200 px that scrolls: the
    // last of 80 lies far below the box's fold, the box well inside the page.
    let page = Probe::open(&ctx, "widgets/tomselect.html").await;
    page.until("window.tomSelectReady === true").await;
    page.act("combobox", "Fruit", click()).await;
    let below = page
        .eval("String(document.querySelector('.ts-dropdown-content').scrollTop)")
        .await;
    assert_eq!(below, "0", "the box starts at its top");
    page.act("option", "Pomegranate", click()).await;
    assert_eq!(page.eval("selectedValue()").await, "pomegranate");
}
