//! The extension host against a real "person's Chrome": Debian's full
//! Chromium with `assets/extension` loaded, paired through its own pairing
//! page, tabs shared through its own popup. One such browser and one
//! [`ExtensionHost`] serve the whole binary; every test opens its own
//! agent session and tabs.
//!
//! Besides the extension's own trials, the browser suite's tests of what
//! agents do (snapshots and refs, actions and diffs, content, screenshots,
//! tabs, waits, console, network, the real widget libraries) run here again,
//! unchanged, through the extension host.

#![allow(clippy::unwrap_used, missing_debug_implementations)]

use browser_testkit::person;
use browser_testkit::provider::harness as support;

mod bridge;
mod faults;
mod stress;
mod tabs;

// The browser suite's modules, compiled here to run through the extension.
#[allow(dead_code)]
#[path = "../browser/act.rs"]
mod act;
#[allow(dead_code)]
#[path = "../browser/console.rs"]
mod console;
#[allow(dead_code)]
#[path = "../browser/content.rs"]
mod content;
#[allow(dead_code)]
#[path = "../browser/input.rs"]
mod input;
#[allow(dead_code)]
#[path = "../browser/network.rs"]
mod network;
#[allow(dead_code)]
#[path = "../browser/patterns.rs"]
mod patterns;
#[allow(dead_code)]
#[path = "../browser/reach.rs"]
mod reach;
#[allow(dead_code)]
#[path = "../browser/screenshot.rs"]
mod screenshot;
#[allow(dead_code)]
#[path = "../browser/snapshot.rs"]
mod snapshot;
#[allow(dead_code)]
#[path = "../browser/tabs.rs"]
mod suite_tabs;
#[allow(dead_code)]
#[path = "../browser/wait.rs"]
mod wait;
#[allow(dead_code)]
#[path = "../browser/widgets.rs"]
mod widgets;

use std::future::Future;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::Arc;

use browser_provider::SessionId;
use browser_provider::browser::{Browser, SessionOptions};
use browser_provider::host::ExtensionHost;
use browser_provider::host::extension::pairing::Pairing;

use browser_testkit::provider::extension::paired;
use person::Person;
use serde_json::json;

/// Everything the tests share.
pub struct Env {
    /// The runtime, the browser (through the extension host) and the
    /// fixture server, in the shape the browser suite's tests expect.
    pub suite: Arc<support::Env>,
    pub person: Person,
    pub host: Arc<ExtensionHost>,
    pub pairing: Pairing,
}

/// One test's view of the environment.
#[derive(Clone)]
pub struct Ctx {
    pub env: Arc<Env>,
}

impl Ctx {
    pub fn url(&self, path: &str) -> String {
        format!("{}/{path}", self.env.suite.base)
    }

    pub async fn session(&self) -> SessionId {
        self.env
            .suite
            .browser
            .open_session(SessionOptions::default())
            .await
            .unwrap()
    }

    pub fn bridge_address(&self) -> SocketAddr {
        self.env.host.address().expect("paired")
    }
}

type TestFn = fn(Arc<Env>) -> Pin<Box<dyn Future<Output = ()> + Send>>;

/// The extension's own trials, each given a [`Ctx`].
macro_rules! trials {
    ($($module:ident :: $name:ident),* $(,)?) => {
        vec![$((concat!(stringify!($module), "::", stringify!($name)), (|env| Box::pin($module::$name(Ctx { env }))) as TestFn)),*]
    };
}

/// The browser suite's tests, each given the suite's [`support::Ctx`]; the
/// sessions a test leaves open are closed after it, as a person's Chrome
/// would otherwise fill with agent tabs.
macro_rules! suite {
    ($($module:ident :: $name:ident),* $(,)?) => {
        vec![$((concat!("suite::", stringify!($module), "::", stringify!($name)), (|env| Box::pin(in_the_suite(env, |ctx| Box::pin($module::$name(ctx))))) as TestFn)),*]
    };
}

fn main() {
    let mut tests = trials![
        tabs::an_unshared_tab_is_invisible_and_unreachable,
        tabs::a_shared_tab_is_driven_with_the_person_s_login,
        tabs::agent_tabs_open_in_a_group_and_do_everything,
        tabs::stop_in_the_extension_interrupts_the_agent,
        tabs::a_shared_tab_that_leaves_its_site_is_not_shared,
        tabs::the_person_s_own_input_stops_the_agent,
        tabs::the_person_s_key_among_the_agent_s_many_is_theirs,
        tabs::a_tab_whose_debugger_is_taken_away_is_driven_again_once_free,
        tabs::cross_origin_frames_are_seen_and_driven,
        tabs::the_person_s_input_in_a_cross_origin_frame_stops_the_agent,
        tabs::the_popup_s_controls_stay_still_while_agents_act,
        bridge::handshake_abuse_is_refused_and_changes_nothing,
        bridge::commands_past_the_pending_cap_wait_for_a_slot,
        bridge::the_service_worker_stopping_fails_one_call_and_the_next_works,
        faults::chrome_quitting_fails_the_call_and_it_comes_back,
        stress::a_hundred_worker_stops_during_a_workload,
    ];
    tests.extend(suite![
        snapshot::snapshot_lines_read_like_other_tools,
        snapshot::refs_survive_snapshots_and_churn,
        snapshot::stale_refs_never_hit_another_element,
        snapshot::scoped_snapshots,
        snapshot::open_and_closed_shadow_roots_and_same_origin_frames_are_inline,
        snapshot::huge_pages_are_cut_within_limits,
        snapshot::cross_origin_frames_are_inline_and_actionable,
        snapshot::frames_walked_side_by_side_keep_one_ref_namespace,
        snapshot::every_kind_of_input_reaches_frames_and_shadow_roots,
        act::every_action_kind_works,
        act::role_and_name_must_match_exactly_one,
        act::blocked_elements_are_not_actionable,
        act::clicking_a_link_navigates_and_resets,
        act::a_change_nearly_as_large_as_the_page_is_a_reset,
        act::a_re_rendered_list_reports_its_look_alikes_in_one_line,
        act::what_a_page_draws_after_the_handler_is_in_the_result,
        act::navigations_that_start_after_a_click_are_followed,
        act::passwords_never_appear_in_snapshots_or_diffs,
        act::outcomes_report_new_tabs_dialogs_and_refused_downloads,
        act::drag_moves_an_element_onto_another,
        act::scrolling_the_page_and_pressing_keys_without_an_element,
        content::markdown_keeps_structure,
        content::txt_is_rendered_text,
        content::html_masks_password_values,
        content::json_gives_structured_facts,
        content::selector_scoping_and_errors,
        content::max_chars_truncates_and_flags,
        screenshot::viewport_png_matches_the_viewport,
        screenshot::jpeg_with_quality,
        screenshot::full_page_covers_the_document,
        screenshot::element_clip_shows_the_element,
        screenshot::ceilings_downscale_instead_of_failing,
        screenshot::bad_arguments_are_refused,
        // (Not `a_page_rendered_at_2x_still_gives_css_pixels`: a window of
        // the person's Chrome lays out again over several frames after a
        // device-scale override, and that test reads its size only once.)
        suite_tabs::open_reports_url_title_and_status,
        suite_tabs::tabs_open_switch_and_close,
        suite_tabs::reset_closes_every_tab,
        suite_tabs::other_sessions_tabs_are_not_owned_and_not_listed,
        suite_tabs::closing_a_session_closes_its_tabs_and_is_idempotent,
        suite_tabs::popups_join_the_opener_session,
        wait::each_condition_ends_the_wait_when_it_holds,
        wait::a_wait_that_runs_out_says_what_it_saw,
        wait::waits_end_at_once_when_cancelled_or_a_person_takes_over,
        console::console_messages_exceptions_and_failed_loads_are_read_by_cursor,
        network::requests_are_logged_filtered_redacted_and_read_by_cursor,
        input::commands_in_a_batch_arrive_in_order_and_answer_their_first_failure,
        widgets::ag_grid_sorts_by_a_header_and_reaches_a_row_far_below,
        widgets::monaco_holds_exactly_what_was_filled,
        widgets::codemirror_holds_exactly_what_was_filled,
        widgets::codemirror6_holds_exactly_what_was_filled,
        widgets::ace_holds_exactly_what_was_filled,
        widgets::native_selects_show_their_options,
        widgets::a_combobox_library_is_chosen_by_option_name,
        widgets::shadow_dom_components_are_operable,
        patterns::operable_elements_get_refs_and_their_names,
        patterns::role_and_name_reach_what_the_snapshot_shows_without_a_ref,
        patterns::type_presses_keys_that_keyup_pages_hear,
        patterns::a_virtualized_grid_sorts_scrolls_and_says_how_much_exists,
        patterns::a_combobox_popup_in_a_portal_shows_under_its_combobox,
        patterns::trees_tabs_menus_and_range_widgets_show_their_states,
        patterns::pointer_cursors_from_any_style_sheet_get_refs,
        patterns::aria_owns_re_parents_and_lists_say_their_window,
        reach::targets_inside_scroll_boxes_are_scrolled_to_and_clicked,
        reach::cells_that_hold_controls_keep_their_own_words,
        reach::what_a_person_drags_has_a_ref_and_drops_where_it_is_aimed,
        reach::a_scroll_in_a_box_says_what_came_into_view,
        reach::actions_at_a_point_reach_what_has_no_element,
        reach::a_combobox_library_s_results_scroll_in_their_box,
    ]);
    let mut args = libtest_mimic::Arguments::from_args();
    // Stop in the extension holds every session: one test at a time.
    args.test_threads = Some(1);
    let (env, conclusion) = support::run_trials(args, tests, start, |env, test| {
        env.suite.runtime.block_on(test(Arc::clone(env)));
    });
    // The process exits without dropping anything: the person's Chrome
    // must be ended here, or it outlives the tests.
    match Arc::try_unwrap(env) {
        Ok(Env { suite, person, .. }) => suite.runtime.block_on(person.quit()),
        Err(env) => env.suite.runtime.block_on(async {
            let _ = env.person.cdp.send(None, "Browser.close", json!({})).await;
        }),
    }
    conclusion.exit();
}

/// Runs one of the browser suite's tests, then closes the sessions it left open.
async fn in_the_suite(
    env: Arc<Env>,
    test: impl FnOnce(support::Ctx) -> Pin<Box<dyn Future<Output = ()> + Send>>,
) {
    let browser = &env.suite.browser;
    let before = browser.sessions();
    test(support::Ctx {
        env: Arc::clone(&env.suite),
    })
    .await;
    for session in browser.sessions() {
        if !before.contains(&session) {
            let _ = browser.close_session(&session).await;
        }
    }
}

fn start() -> Arc<Env> {
    let runtime = support::test_runtime();
    let (person, host, browser, base, pairing) = runtime.block_on(async {
        let base = support::serve_fixtures().await;
        let person = Person::start().await;
        let (host, browser, pairing) = paired(&person).await;
        (person, host, browser, base, pairing)
    });
    Arc::new(Env {
        suite: Arc::new(support::Env {
            runtime,
            launched: None,
            browser,
            base,
        }),
        person,
        host,
        pairing,
    })
}

/// An agent's wait that never ends by itself (20 s bound), running in the
/// background: the call in flight when a fault strikes.
pub fn waiting_in_background(
    browser: &Browser,
    session: &SessionId,
) -> tokio::task::JoinHandle<browser_provider::Result<browser_provider::page::wait::Waited>> {
    let browser = browser.clone();
    let session = session.clone();
    tokio::spawn(async move {
        browser
            .wait(
                &session,
                &browser_provider::page::wait::Condition::Text {
                    text: "never on this page".into(),
                    gone: false,
                },
                std::time::Duration::from_secs(20),
                &tokio_util::sync::CancellationToken::new(),
            )
            .await
    })
}
