//! The WAI-ARIA Authoring Practices patterns and the ways pages make plain
//! elements operable (`fixtures/widgets/apg-*.html`, `operable.html`): the
//! snapshot shows their roles, states and refs, and tasks complete through
//! refs or role and name.

use browser_provider::page::act::{Action, Target};
use browser_provider::page::wait::Condition;

use crate::snapshot::{click, ref_of};
use crate::support::Ctx;
use crate::widgets::{Widget, shown, type_text};

fn press(key: &str) -> Action {
    Action::Press {
        keys: vec![key.into()],
    }
}

pub async fn operable_elements_get_refs_and_their_names(ctx: Ctx) {
    let page = Widget::open(&ctx, "operable.html", "window.operableReady === true").await;
    let text = page.snapshot().await;
    for expected in [
        "- generic [ref=",
        ": Focusable div",
        ": pointer span",
        ": onclick span",
        "- generic \"April 17, 2026\" [ref=",
        "- gridcell \"cell t0\" [ref=",
        // Slotted light DOM shows where a person sees it: open, closed and nested roots.
        "- paragraph: shadow text",
        "- button \"Light button\" [ref=",
        "- text: light text",
        "- paragraph: closed shadow text",
        "- button \"Closed light button\" [ref=",
        "- button \"Nested button\" [ref=",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    for plain in ["paragraph: shadow text", "heading \"Order\""] {
        let line = text.lines().find(|l| l.contains(plain)).unwrap();
        assert!(!line.contains("[ref="), "plain text has no ref: {line}");
    }
    for (needle, recorded) in [
        ("Focusable div", "focusable div"),
        ("pointer span", "pointer"),
        ("onclick span", "onclick"),
        ("\"April 17, 2026\"", "day:17"),
        ("gridcell \"cell t0\"", "cell t0"),
        ("\"Light button\"", "light button"),
        ("\"Closed light button\"", "closed light button"),
        ("\"Nested button\"", "nested button"),
    ] {
        page.act_on(needle, click()).await;
        let clicked = page.eval("JSON.stringify(window.clicked)").await;
        assert!(
            clicked
                .as_str()
                .unwrap()
                .contains(&format!("\"{recorded}\"")),
            "clicking {needle} recorded {clicked}"
        );
    }
}

pub async fn role_and_name_reach_what_the_snapshot_shows_without_a_ref(ctx: Ctx) {
    let page = Widget::open(&ctx, "operable.html", "window.operableReady === true").await;
    // `- paragraph: closed shadow text` (in a closed shadow root) has no
    // ref; acting by its role and text works.
    page.act_by_role("paragraph", "closed shadow text", click())
        .await;
    let clicked = page.eval("JSON.stringify(window.clicked)").await;
    assert!(
        clicked.as_str().unwrap().contains("\"closed shadow text\""),
        "{clicked}"
    );
    // Two paragraphs read "shadow text" (a card and the card nested in a
    // panel): that is ambiguous, and said so with both refs.
    let ambiguous = page
        .try_act(
            Target::Role {
                role: "paragraph".into(),
                name: "shadow text".into(),
            },
            click(),
        )
        .await
        .unwrap_err();
    assert_eq!(ambiguous.code(), "TARGET_AMBIGUOUS", "{ambiguous}");
    // A drag from one list item to another, by role and name.
    page.act_by_role(
        "listitem",
        "Alpha",
        Action::Drag {
            to: Target::Role {
                role: "listitem".into(),
                name: "Gamma".into(),
            },
        },
    )
    .await;
    let order = page.eval("listOrder().join(',')").await;
    assert_ne!(order, "Alpha,Beta,Gamma", "the drag reordered the list");
    assert_eq!(page.eval("listOrder()[0]").await, "Beta", "{order}");
    // Nothing with that role and name: a clear error, not a guess.
    let missing = page
        .try_act(
            Target::Role {
                role: "listitem".into(),
                name: "Omega".into(),
            },
            click(),
        )
        .await
        .unwrap_err();
    assert_eq!(missing.code(), "ELEMENT_NOT_FOUND", "{missing}");
}

pub async fn type_presses_keys_that_keyup_pages_hear(ctx: Ctx) {
    let page = Widget::open(&ctx, "operable.html", "window.operableReady === true").await;
    let typed = page
        .act_on("textbox \"Search people\"", type_text("Gr"))
        .await;
    assert_eq!(
        page.eval("JSON.stringify(searchResults())").await,
        "[\"Grace Hopper\"]"
    );
    assert!(
        shown(&typed).contains("-   - listitem: Ada Lovelace"),
        "the result shows the filtered list:\n{}",
        shown(&typed)
    );
    let events = page.eval("JSON.stringify(window.events)").await;
    let events = events.as_str().unwrap();
    assert!(
        events.contains("\"keyup:G\"") && events.contains("\"keyup:Gr\""),
        "{events}"
    );
    // Characters no key types still arrive, as text.
    page.act_on("textbox \"Search people\"", type_text(" é😀中"))
        .await;
    assert_eq!(
        page.eval("document.getElementById('search').value").await,
        "Gr é😀中"
    );
}

pub async fn a_virtualized_grid_sorts_scrolls_and_says_how_much_exists(ctx: Ctx) {
    let grid = Widget::open(&ctx, "apg-grid.html", "!!window.apg").await;
    let text = grid.snapshot().await;
    assert!(
        text.contains("- grid \"Shipments\" [rows 2–21 of 1001]"),
        "{text}"
    );
    assert!(
        text.contains("- columnheader [sort=ascending] [ref="),
        "{text}"
    );
    grid.act_on("button \"Weight (kg)\"", click()).await;
    assert_eq!(
        grid.eval("JSON.stringify(apg.gridSort())").await,
        "{\"column\":\"weight\",\"direction\":\"ascending\"}"
    );

    // A wheel over a cell scrolls the grid's own scroller, not the window,
    // and the result shows the rows that came into view.
    let first_cell = ref_of(&grid.snapshot().await, "- gridcell ");
    let scrolled = grid
        .try_act(
            Target::Ref(first_cell),
            Action::Scroll { dx: 0.0, dy: 600.0 },
        )
        .await
        .unwrap();
    assert_eq!(grid.eval("String(window.scrollY)").await, "0");
    let first = grid.eval("apg.gridRendered().first").await;
    assert!(first.as_i64().unwrap() > 2, "{first}");
    let after = shown(&scrolled);
    assert!(
        after.contains("[rows ") && !after.contains("[rows 2–21 of 1001]"),
        "the result shows the rows that came into view:\n{after}"
    );

    // A row that is not rendered yet is reached by role and name.
    grid.act_by_role("gridcell", "SHP-0950", click()).await;
    assert_eq!(grid.eval("apg.gridActive().text").await, "SHP-0950");
    // And a wait for text further on scrolls the grid to it.
    let ids = grid.eval("JSON.stringify(apg.gridRenderedIds())").await;
    assert!(!ids.as_str().unwrap().contains("SHP-0123"), "{ids}");
    grid.wait(&Condition::Text {
        text: "SHP-0123".into(),
        gone: false,
    })
    .await
    .unwrap();
    let ids = grid.eval("JSON.stringify(apg.gridRenderedIds())").await;
    assert!(ids.as_str().unwrap().contains("SHP-0123"), "{ids}");
}

pub async fn a_combobox_popup_in_a_portal_shows_under_its_combobox(ctx: Ctx) {
    let page = Widget::open(&ctx, "apg-combobox.html", "!!window.apg").await;
    let typed = page
        .act_by_role("combobox", "Country", type_text("Ca"))
        .await;
    let diff = shown(&typed);
    let combobox = diff
        .lines()
        .position(|l| l.contains("combobox \"Country\""))
        .unwrap_or_else(|| panic!("{diff}"));
    let listbox = diff
        .lines()
        .position(|l| l.contains("listbox"))
        .unwrap_or_else(|| panic!("{diff}"));
    assert!(
        listbox == combobox + 1,
        "the popup sits under its combobox:\n{diff}"
    );
    assert!(diff.contains("[expanded]"), "{diff}");
    let moved = page
        .act_by_role("combobox", "Country", press("ArrowDown"))
        .await;
    assert!(
        shown(&moved).contains("[active]"),
        "the active descendant is marked:\n{}",
        shown(&moved)
    );
    page.act_by_role("option", "Canada", click()).await;
    assert_eq!(page.eval("apg.comboSelected()").await, "Canada");
    // A multi-select listbox takes several options by name in one call.
    let chosen = page
        .act_by_role(
            "listbox",
            "Amenities",
            Action::Select {
                values: vec!["Gym".into(), "Spa".into()],
            },
        )
        .await;
    assert_eq!(
        page.eval("JSON.stringify(apg.listboxValues())").await,
        "[\"Gym\",\"Spa\"]"
    );
    assert!(
        shown(&chosen).contains("option \"Spa\" [selected]"),
        "{}",
        shown(&chosen)
    );
}

pub async fn trees_tabs_menus_and_range_widgets_show_their_states(ctx: Ctx) {
    let tree = Widget::open(&ctx, "apg-tree.html", "!!window.apg").await;
    let text = tree.snapshot().await;
    assert!(
        text.contains("- treeitem \"Projects\" [level=1] [collapsed] [ref="),
        "{text}"
    );
    let expanded = tree.act_by_role("treeitem", "Projects", click()).await;
    assert!(
        shown(&expanded).contains("[expanded]") && shown(&expanded).contains("project-1.docx"),
        "{}",
        shown(&expanded)
    );
    assert!(
        shown(&expanded).contains("[level=2]"),
        "{}",
        shown(&expanded)
    );

    let menu = Widget::open(&ctx, "apg-menubar.html", "!!window.apg").await;
    let text = menu.snapshot().await;
    assert!(text.contains("- menubar"), "{text}");
    let opened = menu.act_by_role("menuitem", "Format", click()).await;
    assert!(
        shown(&opened).contains("menuitemcheckbox \"Bold\""),
        "{}",
        shown(&opened)
    );
    menu.act_by_role("menuitemcheckbox", "Bold", click()).await;
    assert_eq!(menu.eval("apg.menuState().bold").await, true);

    let controls = Widget::open(&ctx, "apg-controls.html", "!!window.apg").await;
    let text = controls.snapshot().await;
    for expected in [
        "- tab \"Profile\" [selected] [ref=",
        "- switch \"Notifications\" [ref=",
        "- slider \"Temperature\" [min=10] [max=30] [ref=",
        "- spinbutton \"Guests\" [min=1] [max=12] [ref=",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    controls.act_by_role("tab", "Security", click()).await;
    assert_eq!(controls.eval("apg.selectedTab()").await, "Security");
    let switched = controls
        .act_by_role("switch", "Notifications", click())
        .await;
    assert!(
        shown(&switched).contains("switch \"Notifications\" [checked]"),
        "{}",
        shown(&switched)
    );
    let slid = controls
        .act_by_role("slider", "Temperature", press("ArrowRight"))
        .await;
    assert!(shown(&slid).contains(": 21 °C"), "{}", shown(&slid));
    let dialog = controls
        .act_by_role("button", "Add delivery address", click())
        .await;
    assert!(
        shown(&dialog).contains("- dialog \"Add delivery address\" [modal]"),
        "{}",
        shown(&dialog)
    );
}

pub async fn pointer_cursors_from_any_style_sheet_get_refs(ctx: Ctx) {
    let session = ctx.session_at("pointer.html").await;
    let loaded = crate::support::eventually(std::time::Duration::from_secs(10), || async {
        ctx.eval(&session, "window.farLoaded === true").await == true
    })
    .await;
    assert!(loaded, "the cross-origin style sheet loaded");
    let text = crate::snapshot::snap(&ctx, &session).await;
    // A `:hover` rule, a rule inside `@media`, an adopted sheet in a shadow
    // root, and a sheet from another origin that scripts cannot read.
    for pointer in ["Hover chip", "Media tag", "Shadow tool", "Far rule"] {
        let line = text
            .lines()
            .find(|l| l.contains(pointer))
            .unwrap_or_else(|| panic!("{pointer} missing in:\n{text}"));
        assert!(
            line.contains("generic [ref="),
            "{pointer} has a ref: {line}\n{text}"
        );
    }
    for words in ["Plain words", "Shadow words", "Near words"] {
        let line = text.lines().find(|l| l.contains(words)).unwrap();
        assert!(!line.contains("[ref="), "{words} has none: {line}");
    }
    // What a walk found is kept only while the page stays as it was: a
    // chip added later, and a new rule, are seen by the next snapshot.
    ctx.eval(
        &session,
        "document.querySelector('p').insertAdjacentHTML('beforeend', ' <span class=\"chip\">Late chip</span> <span class=\"late\">Late rule</span>'); \
         const style = document.createElement('style'); style.textContent = '.late { cursor: pointer }'; document.head.append(style); true",
    )
    .await;
    let text = crate::snapshot::snap(&ctx, &session).await;
    for late in ["Late chip", "Late rule"] {
        let line = text.lines().find(|l| l.contains(late)).unwrap();
        assert!(line.contains("generic [ref="), "{late}: {line}\n{text}");
    }
}

pub async fn aria_owns_re_parents_and_lists_say_their_window(ctx: Ctx) {
    let session = ctx.session_at("owns.html").await;
    let text = crate::snapshot::snap(&ctx, &session).await;
    let lines: Vec<&str> = text.lines().collect();
    let list = lines
        .iter()
        .position(|l| l.contains("list \"Chores\""))
        .unwrap_or_else(|| panic!("{text}"));
    assert!(
        lines[list + 2].contains("listitem: Dust (owned)"),
        "the owned item sits in its owner, after its own items:\n{text}"
    );
    assert_eq!(
        text.matches("Dust (owned)").count(),
        1,
        "and only there:\n{text}"
    );
    // Two groups owning each other: both stay on the page.
    for button in ["Left button", "Right button"] {
        assert!(text.contains(button), "{button} missing:\n{text}");
    }
    assert!(
        text.contains("- tree \"Big tree\" [items 11–13 of 40]"),
        "{text}"
    );
    assert!(
        text.contains("- treeitem \"Item 12\" [level=1] [ref="),
        "{text}"
    );
}
