//! Real widget libraries, pinned from npm (`fixtures/widgets/`): each
//! shows up in the snapshot with refs, and a task on it completes through
//! refs (or role and name) alone; `execute` only checks the outcome.

use std::time::Duration;

use browser_provider::browser::ActionReport;
use browser_provider::page::act::{Action, Target};
use browser_provider::page::wait::Condition;
use browser_provider::snapshot::{Observation, Scope};
use browser_provider::{BrowserError, SessionId};
use tokio_util::sync::CancellationToken;

use crate::snapshot::{click, ref_of};
use crate::support::{Ctx, eventually, fixtures_dir};

/// A session on one widget page, with the calls a model makes.
pub struct Widget {
    ctx: Ctx,
    session: SessionId,
}

impl Widget {
    /// Opens `fixtures/widgets/<page>` and waits (bounded) until `ready`
    /// evaluates to true in the page.
    pub async fn open(ctx: &Ctx, page: &str, ready: &str) -> Self {
        assert!(
            fixtures_dir().join("widgets/node_modules").is_dir(),
            "the widget libraries are not installed: run .ci/setup (npm ci in fixtures/widgets)"
        );
        let session = ctx.session_at(&format!("widgets/{page}")).await;
        let widget = Self {
            ctx: ctx.clone(),
            session,
        };
        widget.until(ready).await;
        widget
    }

    /// The whole-page snapshot text.
    pub async fn snapshot(&self) -> String {
        self.ctx
            .browser()
            .snapshot(&self.session, &Scope::Page, &CancellationToken::new())
            .await
            .unwrap()
            .text
    }

    /// Acts on `target`.
    pub async fn try_act(
        &self,
        target: Target,
        action: Action,
    ) -> Result<ActionReport, BrowserError> {
        self.ctx
            .browser()
            .act(&self.session, &target, &action, &CancellationToken::new())
            .await
    }

    /// Acts on the ref of the first snapshot line containing `needle`.
    pub async fn act_on(&self, needle: &str, action: Action) -> ActionReport {
        let reference = ref_of(&self.snapshot().await, needle);
        self.try_act(Target::Ref(reference), action)
            .await
            .unwrap_or_else(|e| panic!("acting on {needle:?}: {e}"))
    }

    /// Acts on the element with this role and exact name.
    pub async fn act_by_role(&self, role: &str, name: &str, action: Action) -> ActionReport {
        self.try_act(
            Target::Role {
                role: role.into(),
                name: name.into(),
            },
            action,
        )
        .await
        .unwrap_or_else(|e| panic!("acting on {role} {name:?}: {e}"))
    }

    /// Waits (10 s at most) for `condition`, as `browser_wait` does.
    pub async fn wait(&self, condition: &Condition) -> Result<(), BrowserError> {
        self.ctx
            .browser()
            .wait(
                &self.session,
                condition,
                Duration::from_secs(10),
                &CancellationToken::new(),
            )
            .await
            .map(|_| ())
    }

    /// Evaluates `script` in the page.
    pub async fn eval(&self, script: &str) -> serde_json::Value {
        self.ctx.eval(&self.session, script).await
    }

    /// Waits (bounded) until `script` evaluates to true.
    pub async fn until(&self, script: &str) {
        let held = eventually(Duration::from_secs(10), || async {
            self.eval(script).await == serde_json::Value::Bool(true)
        })
        .await;
        assert!(held, "{script} did not become true within 10 s");
    }
}

/// The text an action's result shows: its diff, or the full snapshot.
pub fn shown(report: &ActionReport) -> String {
    match &report.outcome.observation {
        Observation::Diff { text, .. } => text.clone(),
        Observation::Reset { snapshot, .. } => snapshot.text.clone(),
    }
}

pub fn type_text(text: &str) -> Action {
    Action::Type {
        text: text.into(),
        submit: false,
    }
}

pub fn fill(text: &str) -> Action {
    Action::Fill {
        text: text.into(),
        submit: false,
    }
}

pub async fn ag_grid_sorts_by_a_header_and_reaches_a_row_far_below(ctx: Ctx) {
    let grid = Widget::open(&ctx, "aggrid.html", "window.gridReady === true").await;
    let text = grid.snapshot().await;
    for expected in [
        "- heading \"Inventory\" [level=1]",
        " of 5001]",
        "- columnheader \"Weight (t)\" [ref=",
        "- gridcell \"INV-00001\" [ref=",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(
        !text.contains("INV-04000"),
        "a virtualized grid holds only a window of its rows:\n{text}"
    );

    let sorted = grid.act_on("columnheader \"Weight (t)\"", click()).await;
    assert_eq!(
        grid.eval("JSON.stringify(sortState().map(s => [s.colId, s.sort]))")
            .await,
        "[[\"weight\",\"asc\"]]"
    );
    assert!(
        shown(&sorted).contains("[sort=ascending]"),
        "the result shows the new sort:\n{}",
        shown(&sorted)
    );

    // Far below the rendered window: found by scrolling the grid's own
    // scroller, then clicked like any cell.
    let id = grid
        .eval("gridApi.getDisplayedRowAtIndex(700).data.id")
        .await;
    let id = id.as_str().unwrap().to_owned();
    assert!(!grid.snapshot().await.contains(&id));
    grid.act_by_role("gridcell", &id, click()).await;
    assert_eq!(
        grid.eval("String(gridApi.getFocusedCell().rowIndex)").await,
        "700"
    );
    let text = grid.snapshot().await;
    assert!(
        text.contains(&format!("gridcell \"{id}\"")),
        "the row found is in view:\n{text}"
    );
}

/// The exact text `fill` must leave in a code editor: brackets, quotes,
/// indentation and several lines, which auto-closing and auto-indent would
/// mangle if it were typed.
const CODE: &str = "function greet(name) {\n  if (!name) {\n    return \"nobody\";\n  }\n  return `hi ${name}` + ['!'].join('');\n}\n";

async fn editor_takes_exact_code_and_keystrokes(ctx: &Ctx, page: &str, name: &str) {
    let editor = Widget::open(ctx, page, "window.editorReady === true").await;
    let text = editor.snapshot().await;
    let line = format!("- textbox \"{name}\" [ref=");
    assert!(text.contains(&line), "{page}: missing {line:?} in:\n{text}");
    assert!(
        text.contains(": // start"),
        "{page}: the editor's text is its value:\n{text}"
    );
    let needle = format!("textbox \"{name}\"");

    let filled = editor.act_on(&needle, fill(CODE)).await;
    assert_eq!(editor.eval("editorValue()").await, CODE, "{page}");
    assert!(
        shown(&filled).contains("function greet(name) {\\n"),
        "{page}: the result shows the new text:\n{}",
        shown(&filled)
    );

    // Keystrokes go to the caret (after the filled text) and the editor
    // reacts to them as to a person's.
    editor.act_on(&needle, type_text("f(1")).await;
    let value = editor.eval("editorValue()").await;
    let value = value.as_str().unwrap();
    assert!(
        value.starts_with(CODE) && value[CODE.len()..].starts_with("f(1"),
        "{page}: {value:?}"
    );

    // A click lands in the editor (no zero-size or covered refusal).
    editor.act_on(&needle, click()).await;
    assert_eq!(
        editor
            .eval("document.activeElement !== document.body")
            .await,
        true,
        "{page}: the click focused the editor"
    );
}

pub async fn monaco_holds_exactly_what_was_filled(ctx: Ctx) {
    editor_takes_exact_code_and_keystrokes(&ctx, "monaco.html", "Editor content").await;
    // Its zero-size input proxy, reached through a scoped snapshot, is
    // clicked where a person would click: on the editor.
    let editor = Widget::open(&ctx, "monaco.html", "window.editorReady === true").await;
    let scoped = ctx
        .browser()
        .snapshot(
            &editor.session,
            &Scope::Selector(".monaco-editor .native-edit-context".into()),
            &CancellationToken::new(),
        )
        .await
        .unwrap()
        .text;
    let proxy = ref_of(&scoped, "textbox");
    assert_eq!(
        editor
            .eval("document.querySelector('.monaco-editor .native-edit-context').getBoundingClientRect().width < 1")
            .await,
        true,
        "the proxy is zero-size"
    );
    editor
        .try_act(Target::Ref(proxy), click())
        .await
        .expect("a click on the proxy lands on the editor");
    assert_eq!(editor.eval("editor.hasTextFocus()").await, true);
}

pub async fn codemirror_holds_exactly_what_was_filled(ctx: Ctx) {
    editor_takes_exact_code_and_keystrokes(&ctx, "codemirror.html", "Script").await;
}

pub async fn codemirror6_holds_exactly_what_was_filled(ctx: Ctx) {
    editor_takes_exact_code_and_keystrokes(&ctx, "codemirror6.html", "Notes").await;
}

pub async fn ace_holds_exactly_what_was_filled(ctx: Ctx) {
    editor_takes_exact_code_and_keystrokes(&ctx, "ace.html", "Script").await;
}

pub async fn native_selects_show_their_options(ctx: Ctx) {
    let page = Widget::open(&ctx, "tomselect.html", "window.tomSelectReady === true").await;
    let text = page.snapshot().await;
    for expected in [
        "- combobox \"City\" [ref=",
        "  - group \"Europe\"",
        "    - option \"Amsterdam\" [selected]",
        "    - option \"Berlin\" [disabled]",
        "  … 15 more items omitted",
        "- listbox \"Toppings\" [multiselectable] [ref=",
        "  - option \"Olives\"",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    // The select Tom Select hides (a pixel, out of the tab order) is not a
    // second "Fruit" control.
    assert_eq!(text.matches("combobox \"").count(), 2, "{text}");

    let chosen = page
        .act_on(
            "combobox \"City\"",
            Action::Select {
                values: vec!["Tokyo".into()],
            },
        )
        .await;
    assert_eq!(page.eval("cityValue()").await, "tokyo");
    assert!(shown(&chosen).contains(": Tokyo"), "{}", shown(&chosen));
    page.act_on(
        "listbox \"Toppings\"",
        Action::Select {
            values: vec!["Ham".into(), "olives".into()],
        },
    )
    .await;
    assert_eq!(
        page.eval("JSON.stringify(toppingsValue())").await,
        "[\"ham\",\"olives\"]"
    );
}

pub async fn a_combobox_library_is_chosen_by_option_name(ctx: Ctx) {
    let page = Widget::open(&ctx, "tomselect.html", "window.tomSelectReady === true").await;
    let opened = page.act_on("combobox \"Fruit\"", click()).await;
    let diff = shown(&opened);
    assert!(
        diff.contains("combobox \"Fruit\"") && diff.contains("[expanded]"),
        "{diff}"
    );
    assert!(
        diff.contains("option \"Cherry\" [ref="),
        "the popup's options come with refs:\n{diff}"
    );
    let chosen = page.act_by_role("option", "Cherry", click()).await;
    assert_eq!(page.eval("selectedValue()").await, "cherry");
    assert!(shown(&chosen).contains("Cherry"), "{}", shown(&chosen));
    // `select` does the same in one call: open, then the option by name.
    let selected = page
        .act_by_role(
            "combobox",
            "Fruit",
            Action::Select {
                values: vec!["Banana".into()],
            },
        )
        .await;
    assert_eq!(page.eval("selectedValue()").await, "banana");
    assert!(shown(&selected).contains("Banana"), "{}", shown(&selected));
    let missing = page
        .try_act(
            Target::Role {
                role: "combobox".into(),
                name: "Fruit".into(),
            },
            Action::Select {
                values: vec!["Durian pie".into()],
            },
        )
        .await
        .unwrap_err();
    assert_eq!(missing.code(), "INVALID_ARGUMENT", "{missing}");
    assert!(
        missing.to_string().contains("Cherry"),
        "names the options: {missing}"
    );
}

pub async fn shadow_dom_components_are_operable(ctx: Ctx) {
    let page = Widget::open(&ctx, "shoelace.html", "window.shoelaceReady === true").await;
    let text = page.snapshot().await;
    for expected in [
        "- textbox \"Name\" [ref=",
        "- combobox \"Size\"",
        "- switch \"Dark mode\" [ref=",
        "- button \"Save\" [ref=",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    page.act_on("button \"Save\"", click()).await;
    page.act_on("switch \"Dark mode\"", click()).await;
    page.act_on("textbox \"Name\"", type_text("Ada")).await;
    let opened = page.act_on("combobox \"Size\"", click()).await;
    assert!(
        shown(&opened).contains("option \"Medium\""),
        "{}",
        shown(&opened)
    );
    page.act_by_role("option", "Medium", click()).await;
    let state = page.eval("JSON.stringify(state())").await;
    assert_eq!(
        state,
        "{\"saved\":true,\"dark\":true,\"size\":\"medium\",\"name\":\"Ada\",\"dialogOpen\":false}"
    );
    page.act_on(
        "combobox \"Size\"",
        Action::Select {
            values: vec!["Large".into()],
        },
    )
    .await;
    assert_eq!(page.eval("state().size").await, "large");
    let dialog = page.act_on("button \"Open dialog\"", click()).await;
    assert!(
        shown(&dialog).contains("- dialog \"Confirm\" [modal]"),
        "{}",
        shown(&dialog)
    );
}
