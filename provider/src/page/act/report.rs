//! What an action learned about its own effect beyond the diff, as the
//! page-side script reports it: where a dragged element ended up, what a
//! scroll brought into view, and what was found at a point.
//!
//! A diff shows what changed in the tree; these say what a person would
//! see that a tree cannot: a list that scrolled keeps all its items in the
//! tree, and a card moved between lists is a removal and an addition.

use std::fmt;

use serde::Deserialize;

use super::kinds::world_call;
use crate::page::{Budget, Page};
use crate::snapshot::Ref;

/// An element as the snapshot shows it: its role and name (or, unnamed,
/// its own words).
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Named {
    /// Its role, such as `listitem`.
    pub role: String,
    /// Its name or own words; empty when it has neither.
    #[serde(default)]
    pub name: String,
}

impl fmt::Display for Named {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.name.is_empty() {
            f.write_str(&self.role)
        } else {
            write!(f, "{} {:?}", self.role, self.name)
        }
    }
}

/// Where an element is after a drag: its place among its siblings and the
/// container it is in.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct Placement {
    /// The element's role.
    pub role: String,
    /// Its name or own words.
    #[serde(default)]
    pub name: String,
    /// Its place among its visible siblings, from 1.
    pub index: u32,
    /// How many visible siblings it has, itself included.
    pub of: u32,
    /// The nearest container with a role, if any.
    #[serde(default)]
    pub container: Option<Named>,
}

impl fmt::Display for Placement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let element = Named {
            role: self.role.clone(),
            name: self.name.clone(),
        };
        write!(f, "{element} is now {} of {}", self.index, self.of)?;
        if let Some(container) = &self.container {
            write!(f, " in {container}")?;
        }
        Ok(())
    }
}

/// A scrolling box (or the page) after a scroll: how far it is scrolled
/// and what a person sees at its top and bottom edges.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ScrollView {
    /// The box that scrolled; `None` for the page.
    #[serde(default)]
    pub container: Option<Named>,
    /// Pixels scrolled to the right.
    pub left: i64,
    /// Pixels scrolled down.
    pub top: i64,
    /// The furthest it can scroll to the right.
    pub max_left: i64,
    /// The furthest it can scroll down.
    pub max_top: i64,
    /// What is shown at its top edge.
    #[serde(default)]
    pub first: Option<Named>,
    /// What is shown at its bottom edge.
    #[serde(default)]
    pub last: Option<Named>,
}

impl fmt::Display for ScrollView {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.container {
            Some(container) => write!(f, "{container} is scrolled")?,
            None => f.write_str("The page is scrolled")?,
        }
        write!(f, " {} of {} px down", self.top, self.max_top)?;
        if self.max_left > 0 {
            write!(f, ", {} of {} px across", self.left, self.max_left)?;
        }
        match (&self.first, &self.last) {
            (Some(first), Some(last)) if first != last => {
                write!(f, "; in view from {first} to {last}")
            }
            (Some(shown), _) | (None, Some(shown)) => write!(f, "; in view: {shown}"),
            (None, None) => Ok(()),
        }
    }
}

/// What an action learned about its effect, for the result.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Aftermath {
    /// A drag: where the dragged element ended up (`None`: it is gone, as
    /// when a list re-renders its items).
    Dropped(Option<Placement>),
    /// A scroll: the box (or page) that scrolled and what is in view now.
    Scrolled(ScrollView),
}

impl fmt::Display for Aftermath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Dropped(Some(place)) => write!(f, "Dropped: {place}."),
            Self::Dropped(None) => f.write_str(
                "Dropped: the dragged element is no longer on the page (the page may have drawn it anew; see the diff).",
            ),
            Self::Scrolled(view) => write!(f, "{view}."),
        }
    }
}

/// Where the dragged element `reference` is now (main frame).
pub(super) async fn placement(page: &Page, reference: &Ref, budget: &Budget) -> Aftermath {
    let expression = format!(
        "__browserShell.placeOf({})",
        serde_json::json!(reference.as_str())
    );
    let place = match world_call(page, None, budget, &expression).await {
        Ok(value) => serde_json::from_value(value).ok(),
        Err(_) => None,
    };
    Aftermath::Dropped(place)
}

/// What the scroll around `reference` (or of the page) shows now; `None`
/// when the page cannot say (it navigated, or the element went).
pub(super) async fn scroll_view(
    page: &Page,
    reference: Option<&Ref>,
    budget: &Budget,
) -> Option<Aftermath> {
    let expression = format!(
        "__browserShell.scrolledView({})",
        serde_json::json!(reference.map(Ref::as_str))
    );
    let value = world_call(page, None, budget, &expression).await.ok()?;
    serde_json::from_value(value).ok().map(Aftermath::Scrolled)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn named(role: &str, name: &str) -> Named {
        Named {
            role: role.into(),
            name: name.into(),
        }
    }

    #[test]
    fn a_drop_says_where_the_element_is_now() {
        let place = Placement {
            role: "listitem".into(),
            name: "Inspect hull".into(),
            index: 2,
            of: 2,
            container: Some(named("list", "Done")),
        };
        assert_eq!(
            Aftermath::Dropped(Some(place)).to_string(),
            r#"Dropped: listitem "Inspect hull" is now 2 of 2 in list "Done"."#
        );
    }

    #[test]
    fn a_scroll_says_how_far_and_what_is_in_view() {
        let view = ScrollView {
            container: Some(named("listbox", "Ports")),
            left: 0,
            top: 120,
            max_left: 0,
            max_top: 520,
            first: Some(named("option", "Port 6")),
            last: Some(named("option", "Port 13")),
        };
        assert_eq!(
            Aftermath::Scrolled(view).to_string(),
            r#"listbox "Ports" is scrolled 120 of 520 px down; in view from option "Port 6" to option "Port 13"."#
        );
        let page = ScrollView {
            container: None,
            left: 30,
            top: 0,
            max_left: 90,
            max_top: 0,
            first: None,
            last: Some(named("button", "Column 11")),
        };
        assert_eq!(
            Aftermath::Scrolled(page).to_string(),
            r#"The page is scrolled 0 of 0 px down, 30 of 90 px across; in view: button "Column 11"."#
        );
    }
}
