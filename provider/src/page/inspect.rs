//! `browser_inspect`: structured evidence about one element, by ref or by
//! CSS selector — tag, role and name, attributes, text, computed style,
//! box and quads, visibility (and what covers it), scroll position, form
//! state with sensitive values masked, and a CSS selector verified to match
//! it alone. The page-side half is `src/js/inspect.js`.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};
use serde_json::json;

use super::act::Target;
use super::{Budget, Page};
use crate::error::{BrowserError, Result};
use crate::snapshot::{Ref, SnapshotLimits};

/// Which element to inspect.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum InspectTarget {
    /// A ref from a snapshot of this tab.
    Ref(Ref),
    /// A CSS selector that must match exactly one element of the main document.
    Selector(String),
    /// Exactly one element with this role and the name (or, unnamed, the
    /// text) the snapshot shows; found as actions find it.
    Role {
        /// The role, such as `columnheader`.
        role: String,
        /// The name or shown text.
        name: String,
    },
}

/// What to include beyond the defaults.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct InspectOptions {
    /// Computed style properties to show; `None`: a useful default set;
    /// `["all"]`: every property.
    pub styles: Option<Vec<String>>,
}

/// A rectangle in CSS pixels of the tab's viewport.
#[derive(Debug, Clone, Copy, PartialEq, Serialize, Deserialize)]
pub struct Rect {
    /// Left edge.
    pub x: f64,
    /// Top edge.
    pub y: f64,
    /// Width.
    pub width: f64,
    /// Height.
    pub height: f64,
}

/// Whether a person can see the element, and why not.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Visibility {
    /// Rendered with a size, not hidden by display, visibility or opacity.
    pub visible: bool,
    /// Computed `display`.
    pub display: String,
    /// Computed `visibility`.
    pub visibility: String,
    /// Computed `opacity`.
    pub opacity: f64,
    /// Some of it is inside the viewport.
    pub in_viewport: bool,
    /// What is drawn over its centre instead of it, if anything.
    pub covered_by: Option<String>,
}

/// Scroll positions.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Scroll {
    /// The page's horizontal scroll.
    pub page_x: f64,
    /// The page's vertical scroll.
    pub page_y: f64,
    /// The element's own horizontal scroll.
    pub element_left: f64,
    /// The element's own vertical scroll.
    pub element_top: f64,
    /// Its scrollable width.
    pub element_scroll_width: f64,
    /// Its scrollable height.
    pub element_scroll_height: f64,
}

/// A form control's state.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct FormState {
    /// Disabled (itself or by a fieldset).
    pub disabled: bool,
    /// Checked, for checkboxes and radio buttons.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub checked: Option<bool>,
    /// The value (masked for passwords and similar).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub value: Option<String>,
    /// Required.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub required: Option<bool>,
    /// Passes its constraints.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub valid: Option<bool>,
    /// The browser's message when it does not.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub validation_message: Option<String>,
}

/// Everything known about the element.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Inspection {
    /// Lower-case tag name.
    pub tag: String,
    /// Its role (as in snapshots), if it has one.
    pub role: Option<String>,
    /// Its accessible name.
    pub name: String,
    /// A CSS selector that matched it and only it when inspected.
    pub selector: Option<String>,
    /// The selector is relative to a shadow root, not the document.
    pub selector_in_shadow_root: bool,
    /// Its attributes (sensitive values masked, long ones cut).
    pub attributes: BTreeMap<String, String>,
    /// Its visible text, cut at 500 characters.
    pub text: String,
    /// Computed style, by property.
    pub styles: BTreeMap<String, String>,
    /// Its bounding box.
    #[serde(rename = "box")]
    pub bounds: Rect,
    /// Its boxes (one per line for inline content) as quads
    /// `[x1, y1, x2, y2, x3, y3, x4, y4]`.
    pub quads: Vec<[f64; 8]>,
    /// Whether a person can see it.
    pub visibility: Visibility,
    /// Scroll positions.
    pub scroll: Scroll,
    /// Form state, for form controls.
    pub form: Option<FormState>,
}

/// What the page side answers.
#[derive(Deserialize)]
#[serde(untagged)]
enum Answer {
    Found(Box<Inspection>),
    Missing { error: String, detail: String },
}

/// Inspects one element of `page`.
///
/// # Errors
/// `STALE_REF` / `INVALID_ARGUMENT` for refs that cannot be used,
/// `ELEMENT_NOT_FOUND` for a selector matching nothing, `INVALID_ARGUMENT`
/// for one matching several or not parsing.
pub async fn inspect(
    page: &Page,
    target: &InspectTarget,
    options: &InspectOptions,
    limits: &SnapshotLimits,
    budget: &Budget,
) -> Result<Inspection> {
    let by_ref = async |reference: &Ref| -> Result<(Option<String>, serde_json::Value)> {
        let record = super::observe::live_record(page, reference, budget).await?;
        Ok((record.frame, json!({ "ref": reference })))
    };
    let (frame, spec) = match target {
        InspectTarget::Ref(reference) => by_ref(reference).await?,
        // Found as an action finds its element, then inspected by ref.
        InspectTarget::Role { role, name } => {
            let by_role = Target::Role {
                role: role.clone(),
                name: name.clone(),
            };
            by_ref(&super::act::find(page, &by_role, limits, budget).await?).await?
        }
        InspectTarget::Selector(selector) => (None, json!({ "selector": selector })),
    };
    let expression = format!(
        "__browserShell.inspect({spec}, {})",
        json!({ "styles": options.styles })
    );
    let value = page
        .world(frame.as_deref())
        .evaluate(page, budget, &expression)
        .await?;
    let answer: Answer =
        serde_json::from_value(value).map_err(|e| BrowserError::ExecuteFailed {
            message: format!("the inspection returned an unexpected shape: {e}"),
        })?;
    let mut inspection = match answer {
        Answer::Found(inspection) => *inspection,
        Answer::Missing { error, detail } => {
            return Err(match (target, error.as_str()) {
                (InspectTarget::Selector(selector), "none") => BrowserError::ElementNotFound {
                    selector: selector.clone(),
                },
                (InspectTarget::Selector(_), _) => BrowserError::invalid(
                    "selector",
                    format!("{detail}; give a selector that matches exactly one element"),
                ),
                (InspectTarget::Ref(_) | InspectTarget::Role { .. }, _) => BrowserError::invalid(
                    "ref",
                    format!("{detail}; take a snapshot and use a ref from it"),
                ),
            });
        }
    };
    // Coordinates inside an out-of-process frame, moved into the tab's viewport.
    let (dx, dy) = super::observe::frame_offset(page, frame.as_deref(), budget).await?;
    inspection.bounds.x += dx;
    inspection.bounds.y += dy;
    for quad in &mut inspection.quads {
        for (i, value) in quad.iter_mut().enumerate() {
            *value += if i % 2 == 0 { dx } else { dy };
        }
    }
    Ok(inspection)
}
