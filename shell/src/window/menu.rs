//! The window's menu bar where the system has one for each app (macOS),
//! with a Mac app's keyboard conventions: ⌘Q quits, ⌘W closes the window,
//! ⌘H hides and ⌘M minimizes; the Edit menu's ⌘Z, ⌘X, ⌘C, ⌘V and ⌘A reach
//! the web view, which on macOS hears those keys only through menu items.
//! Elsewhere the window has no menu bar: the column is all there is.

/// The installed menu bar, kept while the window lives.
pub struct MenuBar {
    #[cfg(target_os = "macos")]
    _menu: muda::Menu,
}

impl std::fmt::Debug for MenuBar {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("MenuBar")
    }
}

/// Installs the menu bar (after the event loop made the application).
/// A menu that cannot be made is logged and left out: the window works
/// without it.
#[cfg(target_os = "macos")]
pub fn install() -> Option<MenuBar> {
    match mac_menu() {
        Ok(menu) => {
            menu.init_for_nsapp();
            Some(MenuBar { _menu: menu })
        }
        Err(error) => {
            tracing::warn!(%error, "the menu bar could not be made");
            None
        }
    }
}

/// No menu bar on this system.
#[cfg(not(target_os = "macos"))]
pub fn install() -> Option<MenuBar> {
    None
}

#[cfg(target_os = "macos")]
fn mac_menu() -> muda::Result<muda::Menu> {
    use muda::{AboutMetadata, Menu, PredefinedMenuItem as Item, Submenu};
    let about = AboutMetadata {
        name: Some("browser-shell".into()),
        version: Some(env!("CARGO_PKG_VERSION").into()),
        ..AboutMetadata::default()
    };
    let app = Submenu::with_items(
        "browser-shell",
        true,
        &[
            &Item::about(None, Some(about)),
            &Item::separator(),
            &Item::hide(None),
            &Item::hide_others(None),
            &Item::show_all(None),
            &Item::separator(),
            &Item::quit(None),
        ],
    )?;
    let edit = Submenu::with_items(
        "Edit",
        true,
        &[
            &Item::undo(None),
            &Item::redo(None),
            &Item::separator(),
            &Item::cut(None),
            &Item::copy(None),
            &Item::paste(None),
            &Item::select_all(None),
        ],
    )?;
    let window = Submenu::with_items(
        "Window",
        true,
        &[
            &Item::minimize(None),
            &Item::fullscreen(None),
            &Item::separator(),
            &Item::close_window(None),
        ],
    )?;
    window.set_as_windows_menu_for_nsapp();
    Menu::with_items(&[&app, &edit, &window])
}
