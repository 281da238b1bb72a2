//! Behaviour tests against a real Chromium (Debian's `/usr/bin/chromium`)
//! and the pages in `fixtures/`, served on 127.0.0.1.
//!
//! One browser is shared by the whole binary (a Chromium per test is slow on
//! two cores); every test opens its own session and tabs. The binary uses
//! libtest-mimic so that `main` can shut the browser down after the last test
//! and check that no process and no temporary profile is left behind.

#![allow(clippy::unwrap_used)]

use browser_testkit::provider::harness as support;

mod act;
mod bounds;
mod console;
mod content;
mod control;
mod dialogs;
mod execute;
mod input;
mod inspect;
mod lifecycle;
mod live;
mod navigation;
mod network;
mod patterns;
mod reach;
mod reference;
mod screenshot;
mod snapshot;
mod tabs;
mod wait;
mod widgets;

use support::{Env, TestFn};

macro_rules! trials {
    ($($module:ident :: $name:ident),* $(,)?) => {
        vec![$((concat!(stringify!($module), "::", stringify!($name)), (|ctx| Box::pin($module::$name(ctx))) as TestFn)),*]
    };
}

fn main() {
    let tests = trials![
        wait::a_cancelled_wait_stops_its_work_in_the_page,
        reach::targets_inside_scroll_boxes_are_scrolled_to_and_clicked,
        reach::cells_that_hold_controls_keep_their_own_words,
        reach::names_agree_with_chrome_s_accessibility_tree,
        reach::what_a_person_drags_has_a_ref_and_drops_where_it_is_aimed,
        reach::a_scroll_in_a_box_says_what_came_into_view,
        reach::actions_at_a_point_reach_what_has_no_element,
        reach::a_combobox_library_s_results_scroll_in_their_box,
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
        tabs::open_reports_url_title_and_status,
        tabs::tabs_open_switch_and_close,
        tabs::reset_closes_every_tab,
        tabs::other_sessions_tabs_are_not_owned_and_not_listed,
        tabs::closing_a_session_closes_its_tabs_and_is_idempotent,
        tabs::popups_join_the_opener_session,
        tabs::isolated_sessions_do_not_share_cookies,
        tabs::a_person_s_tab_is_claimed_exactly_and_returned_when_the_session_ends,
        tabs::kept_tabs_outlive_their_session,
        navigation::redirects_and_http_status_are_reported,
        navigation::back_forward_and_reload,
        navigation::back_without_history_is_an_invalid_argument,
        navigation::blocked_schemes_never_reach_the_browser,
        navigation::host_lists_are_enforced,
        navigation::unreachable_server_is_navigation_failed,
        navigation::same_document_navigation_returns_at_once,
        navigation::our_world_is_ready_in_a_page_that_has_loaded,
        navigation::a_load_that_never_finishes_is_reported_not_hung,
        navigation::downloads_are_refused,
        execute::expressions_and_function_bodies_with_arguments,
        execute::promises_are_awaited,
        execute::exceptions_come_back_with_message_and_line,
        execute::runaway_scripts_time_out_and_the_tab_recovers,
        execute::a_promise_that_never_settles_times_out,
        execute::cancellation_aborts_at_once,
        execute::a_cancelled_wait_leaves_the_page_s_scripts_alone,
        execute::results_are_capped_and_odd_values_described,
        execute::bad_input_is_an_invalid_argument,
        content::markdown_keeps_structure,
        content::txt_is_rendered_text,
        content::html_masks_password_values,
        content::json_gives_structured_facts,
        content::selector_scoping_and_errors,
        content::max_chars_truncates_and_flags,
        reference::markdown_keeps_what_pandoc_finds_in_the_fixtures,
        reference::markdown_keeps_what_pandoc_finds_in_the_python_docs,
        screenshot::viewport_png_matches_the_viewport,
        screenshot::jpeg_with_quality,
        screenshot::full_page_covers_the_document,
        screenshot::element_clip_shows_the_element,
        screenshot::ceilings_downscale_instead_of_failing,
        screenshot::bad_arguments_are_refused,
        screenshot::a_page_rendered_at_2x_still_gives_css_pixels,
        input::click_and_type_at_coordinates,
        input::commands_in_a_batch_arrive_in_order_and_answer_their_first_failure,
        dialogs::dialogs_are_dismissed_and_reported,
        dialogs::beforeunload_does_not_block_navigation,
        dialogs::a_dialog_loop_keeps_the_navigation_bound,
        bounds::a_page_that_loops_keeps_every_call_bounded,
        bounds::a_page_that_starts_looping_later_lets_go_on_navigation,
        bounds::a_stalled_server_keeps_the_navigation_bound,
        bounds::a_silent_server_leaves_the_page_in_place,
        bounds::a_stopped_navigation_leaves_the_tab_usable,
        bounds::a_popup_storm_is_bounded_and_reported,
        bounds::a_huge_script_result_is_capped,
        bounds::a_screenshot_waiting_for_its_turn_keeps_its_bound,
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
        console::console_messages_exceptions_and_failed_loads_are_read_by_cursor,
        network::requests_are_logged_filtered_redacted_and_read_by_cursor,
        inspect::elements_are_inspected_by_ref_and_selector,
        wait::each_condition_ends_the_wait_when_it_holds,
        wait::a_wait_that_runs_out_says_what_it_saw,
        wait::waits_end_at_once_when_cancelled_or_a_person_takes_over,
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
        control::taking_control_interrupts_and_blocks_agent_actions,
        control::handoff_waits_for_the_person_and_reports_what_changed,
        live::screencast_frames_arrive_and_keep_coming,
        live::a_change_on_a_static_page_sends_a_new_frame,
        live::a_still_page_is_sent_sharp_for_sharper_screens,
        lifecycle::missing_browser_names_the_paths_tried,
        lifecycle::dropping_the_host_leaves_nothing_behind,
        lifecycle::a_killed_browser_fails_pending_commands_promptly,
        lifecycle::connects_to_an_existing_browser_over_websocket,
        lifecycle::the_headless_shell_is_preferred_and_the_full_browser_works_too,
        lifecycle::the_full_browser_leaves_no_singleton_directory_closed_or_killed,
    ];

    let mut profile = None;
    let (env, conclusion) = support::run_on_one_browser(tests, || {
        let env = Env::start();
        profile = env
            .launched
            .as_ref()
            .and_then(|host| host.temporary_profile());
        env
    });

    // The shared browser is shut down: prove nothing is left behind.
    let runtime = &env.runtime;
    if let Some(profile) = profile {
        assert!(
            !profile.exists(),
            "the temporary profile {} was left behind",
            profile.display()
        );
        let needle = profile.display().to_string();
        let leftover = runtime.block_on(support::eventually(
            std::time::Duration::from_secs(5),
            || {
                let needle = needle.clone();
                async move { support::processes_mentioning(&needle).is_empty() }
            },
        ));
        assert!(
            leftover,
            "Chromium processes were left behind: {:?}",
            support::processes_mentioning(&needle)
        );
    }
    conclusion.exit();
}
