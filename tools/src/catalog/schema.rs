//! Tool schemas every client takes.
//!
//! The argument types derive their JSON Schema (`schemars`), which is
//! correct but not portable: optional fields come as `null` unions, Rust
//! integer widths as formats no validator knows (`uint32`, `double`),
//! enums behind `$ref`, a `title` per type, and "any value" as a bare
//! `true`. Strict validators (Ajv 2020), the MCP Inspector's strict check
//! and model APIs with a strict schema subset reject or warn on those. So
//! every schema goes through [`portable`] once, when the tools are listed:
//! an optional field is simply not `required` (a `null` sent for it is still
//! taken as absent), integers keep their bounds as `minimum`/`maximum`,
//! enums become `enum` lists whose variants are described in the field's
//! description, references are inlined, titles dropped.
//!
//! [`problems`] says what in a schema is not portable; a test runs it over
//! every tool, so a new tool cannot bring one back.

use serde_json::{Map, Value};

/// The formats JSON Schema 2020-12 defines; any other is dropped.
const STANDARD_FORMATS: &[&str] = &[
    "date-time",
    "date",
    "time",
    "duration",
    "email",
    "idn-email",
    "hostname",
    "idn-hostname",
    "ipv4",
    "ipv6",
    "uri",
    "uri-reference",
    "iri",
    "iri-reference",
    "uuid",
    "uri-template",
    "json-pointer",
    "relative-json-pointer",
    "regex",
];

/// `schema` as every client takes it (see the module documentation).
pub fn portable(schema: &Map<String, Value>) -> Map<String, Value> {
    let definitions = schema
        .get("$defs")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut root = schema.clone();
    root.remove("$defs");
    root.remove("$schema");
    // The argument type's own doc comment (such as "`browser_open`."): the
    // tool's description says it better.
    root.remove("description");
    match clean(Value::Object(root), &definitions, 0) {
        Value::Object(map) => map,
        _ => Map::new(),
    }
}

/// How deep references are followed (the argument types are shallow; a
/// cycle would stop here instead of looping).
const MAX_DEPTH: usize = 16;

fn clean(value: Value, definitions: &Map<String, Value>, depth: usize) -> Value {
    let mut node = match value {
        // `true` accepts anything: an empty schema says the same to everyone.
        Value::Bool(true) => return Value::Object(Map::new()),
        Value::Bool(false) => {
            return Value::Object(Map::from_iter([(
                "not".to_owned(),
                Value::Object(Map::new()),
            )]));
        }
        Value::Object(node) => node,
        other => return other,
    };
    if depth > MAX_DEPTH {
        return Value::Object(node);
    }
    // A reference is replaced by what it names; the field's own words win.
    if let Some(Value::String(target)) = node.remove("$ref") {
        resolve(&mut node, &target, definitions);
    }
    // `["string", "null"]` → `"string"`: absent stands for null.
    if let Some(Value::Array(types)) = node.get("type") {
        let kept: Vec<Value> = types
            .iter()
            .filter(|t| t.as_str() != Some("null"))
            .cloned()
            .collect();
        let kept = match kept.as_slice() {
            [one] => one.clone(),
            _ => Value::Array(kept),
        };
        node.insert("type".into(), kept);
    }
    // `anyOf: [X, {type: null}]` → X, with the field's description.
    if let Some(Value::Array(branches)) = node.get("anyOf") {
        let kept: Vec<Value> = branches
            .iter()
            .filter(|b| b.get("type").and_then(Value::as_str) != Some("null"))
            .cloned()
            .collect();
        if let [Value::Object(branch)] = kept.as_slice() {
            let mut branch = branch.clone();
            node.remove("anyOf");
            if let Some(Value::String(target)) = branch.remove("$ref") {
                resolve(&mut branch, &target, definitions);
            }
            for (key, value) in branch {
                node.entry(key).or_insert(value);
            }
        } else {
            node.insert("anyOf".into(), Value::Array(kept));
        }
    }
    // An enum of documented strings (`oneOf` of `const`s) → `enum`, the
    // variants' documentation folded into the description.
    if let Some(Value::Array(variants)) = node.get("oneOf")
        && variants
            .iter()
            .all(|v| v.get("const").is_some_and(Value::is_string))
    {
        let names: Vec<Value> = variants.iter().map(|v| v["const"].clone()).collect();
        let documented: Vec<String> = variants
            .iter()
            .filter_map(|v| {
                let name = v["const"].as_str()?;
                let doc = v.get("description")?.as_str()?;
                Some(format!("{name}: {}", squash(doc)))
            })
            .collect();
        node.remove("oneOf");
        node.insert("type".into(), Value::String("string".into()));
        node.insert("enum".into(), Value::Array(names));
        if !documented.is_empty() {
            let lead = node
                .get("description")
                .and_then(Value::as_str)
                .map(squash)
                .unwrap_or_default();
            let joined = documented.join("; ");
            let description = if lead.is_empty() {
                joined
            } else {
                format!("{lead} {joined}")
            };
            node.insert("description".into(), Value::String(description));
        }
    }
    node.remove("title");
    if node.get("default").is_some_and(Value::is_null) {
        node.remove("default");
    }
    if let Some(Value::String(format)) = node.get("format")
        && !STANDARD_FORMATS.contains(&format.as_str())
    {
        node.remove("format");
    }
    if let Some(Value::String(description)) = node.get("description") {
        let squashed = squash(description);
        node.insert("description".into(), Value::String(squashed));
    }
    for key in ["properties", "$defs"] {
        if let Some(Value::Object(children)) = node.remove(key) {
            let children = children
                .into_iter()
                .map(|(name, child)| (name, clean(child, definitions, depth + 1)))
                .collect();
            node.insert(key.into(), Value::Object(children));
        }
    }
    for key in ["items", "additionalProperties", "not"] {
        if let Some(child) = node.remove(key) {
            let child = match child {
                // `additionalProperties: false` is a rule, not a schema to widen.
                Value::Bool(rule) if key == "additionalProperties" => Value::Bool(rule),
                child => clean(child, definitions, depth + 1),
            };
            node.insert(key.into(), child);
        }
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = node.remove(key) {
            let branches = branches
                .into_iter()
                .map(|branch| clean(branch, definitions, depth + 1))
                .collect();
            node.insert(key.into(), Value::Array(branches));
        }
    }
    Value::Object(node)
}

/// Fills `node` with what the definition `target` (`#/$defs/Name`) says,
/// where `node` does not say it already.
fn resolve(node: &mut Map<String, Value>, target: &str, definitions: &Map<String, Value>) {
    let name = target.trim_start_matches("#/$defs/");
    if let Some(Value::Object(definition)) = definitions.get(name) {
        for (key, value) in definition {
            node.entry(key.clone()).or_insert_with(|| value.clone());
        }
    }
}

/// The output schema of a tool whose answers are `T`: `T`'s schema made
/// portable, with every field optional and an `error` field beside them,
/// since a failed call carries `{"error": {code, message, hint}}` as its
/// structured content and clients check that against the same schema.
///
/// The schema is the one of what `T` writes (a field skipped when empty is
/// not required), and [`portable`] takes `null` out of it: so an `Option`
/// field of an output type is skipped when `None`, never written as `null`.
pub fn output_schema<T: schemars::JsonSchema + 'static>() -> std::sync::Arc<Map<String, Value>> {
    let data = schemars::generate::SchemaSettings::draft2020_12()
        .for_serialize()
        .into_generator()
        .into_root_schema_for::<T>();
    let data = match data.to_value() {
        Value::Object(map) => map,
        _ => Map::new(),
    };
    let mut schema = portable(&data);
    schema.remove("required");
    // A list's items are described by the list (the item type's own doc
    // comment would only repeat it, in every tools/list).
    undescribe_items(&mut schema);
    let error = rmcp::handler::server::common::schema_for_type::<crate::call::ErrorReport>();
    let mut error = portable(&error);
    error.insert(
        "description".into(),
        Value::String("Only on failure.".into()),
    );
    if let Some(Value::Object(properties)) = schema.get_mut("properties") {
        properties.insert("error".into(), Value::Object(error));
    }
    std::sync::Arc::new(schema)
}

/// Removes the description of every `items` schema under `node`.
fn undescribe_items(node: &mut Map<String, Value>) {
    if let Some(Value::Object(items)) = node.get_mut("items") {
        items.remove("description");
    }
    for value in node.values_mut() {
        match value {
            Value::Object(child) => undescribe_items(child),
            Value::Array(children) => {
                for child in children.iter_mut().filter_map(Value::as_object_mut) {
                    undescribe_items(child);
                }
            }
            _ => {}
        }
    }
}

/// Doc comments keep their line breaks; a schema's description is one line.
fn squash(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// What in `schema` is not portable, as `path: problem` lines (empty when
/// it is): the rules [`portable`] makes hold.
pub fn problems(schema: &Map<String, Value>) -> Vec<String> {
    let mut found = Vec::new();
    if schema.get("type").and_then(Value::as_str) != Some("object") {
        found.push("inputSchema: not an object schema".to_owned());
    }
    walk(&Value::Object(schema.clone()), "inputSchema", &mut found);
    found
}

fn walk(value: &Value, path: &str, found: &mut Vec<String>) {
    let node = match value {
        Value::Object(node) => node,
        Value::Bool(_) => {
            found.push(format!("{path}: a bare true/false schema"));
            return;
        }
        _ => return,
    };
    for key in ["$ref", "$defs", "title", "nullable"] {
        if node.contains_key(key) {
            found.push(format!("{path}: has {key}"));
        }
    }
    match node.get("type") {
        Some(Value::Array(_)) => found.push(format!("{path}: type is a list")),
        Some(Value::String(kind)) if kind == "null" => {
            found.push(format!("{path}: type null"));
        }
        _ => {}
    }
    if let Some(Value::String(format)) = node.get("format")
        && !STANDARD_FORMATS.contains(&format.as_str())
    {
        found.push(format!("{path}: non-standard format {format}"));
    }
    if node.get("default").is_some_and(Value::is_null) {
        found.push(format!("{path}: default null"));
    }
    if let Some(Value::Object(properties)) = node.get("properties") {
        for (name, property) in properties {
            let at = format!("{path}.properties.{name}");
            if property
                .get("description")
                .and_then(Value::as_str)
                .is_none_or(str::is_empty)
            {
                found.push(format!("{at}: no description"));
            }
            walk(property, &at, found);
        }
    }
    if let Some(items) = node.get("items") {
        walk(items, &format!("{path}.items"), found);
    }
    for key in ["anyOf", "oneOf", "allOf"] {
        if let Some(Value::Array(branches)) = node.get(key) {
            for (index, branch) in branches.iter().enumerate() {
                walk(branch, &format!("{path}.{key}[{index}]"), found);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn object(value: Value) -> Map<String, Value> {
        match value {
            Value::Object(map) => map,
            _ => Map::new(),
        }
    }

    #[test]
    fn generated_noise_becomes_plain_json_schema() {
        let generated = object(json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "title": "ActArgs",
            "description": "`browser_act`.",
            "type": "object",
            "additionalProperties": false,
            "$defs": {"Kind": {"description": "Kinds.", "oneOf": [
                {"const": "png", "description": "Lossless.", "type": "string"},
                {"const": "jpeg", "description": "Smaller;\n set `quality`.", "type": "string"}
            ]}},
            "properties": {
                "count": {"description": "How many.", "format": "uint32", "minimum": 0,
                          "type": ["integer", "null"], "default": null},
                "kind": {"anyOf": [{"$ref": "#/$defs/Kind"}, {"type": "null"}], "description": "Which."},
                "args": {"description": "Values.", "items": true, "type": "array"},
                "at": {"description": "When.", "format": "date-time", "type": "string"}
            },
            "required": []
        }));
        let portable = portable(&generated);
        assert_eq!(
            Value::Object(portable.clone()),
            json!({
                "type": "object",
                "additionalProperties": false,
                "properties": {
                    "count": {"description": "How many.", "minimum": 0, "type": "integer"},
                    "kind": {"description": "Which. png: Lossless.; jpeg: Smaller; set `quality`.",
                             "type": "string", "enum": ["png", "jpeg"]},
                    "args": {"description": "Values.", "items": {}, "type": "array"},
                    "at": {"description": "When.", "format": "date-time", "type": "string"}
                },
                "required": []
            })
        );
        assert!(problems(&portable).is_empty(), "{:?}", problems(&portable));
        assert_eq!(problems(&generated).len(), 8, "{:?}", problems(&generated));
    }
}
