//! Parameters as a run holds them: names to values, and their JSON form in
//! the tables (`dag.params`, `task.params`, `dag_run.params`).

use std::collections::BTreeMap;

/// Parameters: names to values.
pub type Params = BTreeMap<String, String>;

/// Reads a JSON object of strings; non-string values are rendered as JSON.
pub fn params_from_json(value: &serde_json::Value) -> Params {
    value
        .as_object()
        .map(|object| {
            object
                .iter()
                .map(|(k, v)| {
                    let text = v.as_str().map_or_else(|| v.to_string(), str::to_owned);
                    (k.clone(), text)
                })
                .collect()
        })
        .unwrap_or_default()
}

/// Writes parameters as a JSON object.
pub fn params_to_json(params: &Params) -> serde_json::Value {
    serde_json::Value::Object(
        params
            .iter()
            .map(|(k, v)| (k.clone(), serde_json::Value::String(v.clone())))
            .collect(),
    )
}
