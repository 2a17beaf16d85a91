//! `GET /api/v1/openapi.json`: an OpenAPI 3 document of the API, built from
//! the route table ([`super::table`]) the router serves.
//!
//! It describes each operation's path and query parameters, whether it
//! takes a JSON body, its success status, the shared error shape and which
//! operations need a bearer token and which role
//! (`x-datajump-role`: viewer, operator or admin). Bodies are described as JSON objects
//! only: their fields are documented on the types in [`crate::dto`] and, for
//! DAG definitions, in `docs/DAG_FORMAT.md`.

use axum::Json;
use serde_json::{Map, Value, json};

use super::table::{Access, Body, Endpoint, endpoints};

/// `GET /api/v1/openapi.json`: this API as an OpenAPI 3 document.
pub async fn document() -> Json<Value> {
    Json(build(&endpoints()))
}

/// A path parameter: ids are integers, the rest strings.
fn path_parameter(name: &str) -> Value {
    let kind = if name.ends_with("Id") {
        "integer"
    } else {
        "string"
    };
    json!({ "name": name, "in": "path", "required": true, "schema": { "type": kind } })
}

/// The names between braces in `path`.
fn path_parameters(path: &str) -> impl Iterator<Item = &str> {
    path.split('/')
        .filter_map(|segment| segment.strip_prefix('{')?.strip_suffix('}'))
}

fn operation(endpoint: &Endpoint) -> Value {
    let mut parameters: Vec<Value> = path_parameters(endpoint.path).map(path_parameter).collect();
    parameters.extend(endpoint.query.iter().map(|name| {
        json!({ "name": name, "in": "query", "required": false, "schema": { "type": "string" } })
    }));
    let error = json!({
        "description": "An error",
        "content": { "application/json": { "schema": { "$ref": "#/components/schemas/Error" } } },
    });
    let mut operation = json!({
        "summary": endpoint.summary,
        "parameters": parameters,
        "responses": {
            endpoint.status.to_string(): { "description": endpoint.summary },
            "default": error,
        },
    });
    if endpoint.body != Body::None {
        operation["requestBody"] = json!({
            "required": endpoint.body == Body::Required,
            "content": { "application/json": { "schema": { "type": "object" } } },
        });
    }
    // Once any token exists every route but the probes needs one whose
    // role allows the route's (crate::auth).
    if let Access::Role(role) = endpoint.access {
        operation["security"] = json!([{ "bearer": [] }]);
        operation["x-datajump-role"] = json!(role.as_str());
    }
    operation
}

/// The OpenAPI 3 document of `endpoints`.
pub fn build(endpoints: &[Endpoint]) -> Value {
    let mut paths: Map<String, Value> = Map::new();
    for endpoint in endpoints {
        let item = paths
            .entry(endpoint.path)
            .or_insert_with(|| Value::Object(Map::new()));
        item[endpoint.verb.openapi_name()] = operation(endpoint);
    }
    json!({
        "openapi": "3.0.3",
        "info": {
            "title": "DataJump",
            "description": "The DataJump control plane: DAGs, runs, schedules, events and runners.",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "paths": paths,
        "components": {
            "schemas": {
                "Error": {
                    "type": "object",
                    "required": ["error", "message"],
                    "properties": {
                        "error": { "type": "string", "example": "NOT_FOUND" },
                        "message": { "type": "string" },
                        "details": { "type": "array", "items": { "type": "string" } },
                    },
                },
            },
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
        },
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn every_route_is_documented() {
        let endpoints = endpoints();
        let document = build(&endpoints);
        let mut seen = HashSet::new();
        for endpoint in &endpoints {
            let verb = endpoint.verb.openapi_name();
            assert!(
                seen.insert((verb, endpoint.path)),
                "{verb} {} is in the route table twice",
                endpoint.path
            );
            let operation = &document["paths"][endpoint.path][verb];
            assert!(
                operation.is_object(),
                "{verb} {} is served but not documented",
                endpoint.path
            );
            let documented: Vec<&str> = operation["parameters"]
                .as_array()
                .into_iter()
                .flatten()
                .filter(|p| p["in"] == "path")
                .filter_map(|p| p["name"].as_str())
                .collect();
            let served: Vec<&str> = path_parameters(endpoint.path).collect();
            assert_eq!(documented, served, "{verb} {}", endpoint.path);
        }
        let operations: usize = document["paths"]
            .as_object()
            .map(|paths| {
                paths
                    .values()
                    .filter_map(Value::as_object)
                    .map(Map::len)
                    .sum()
            })
            .unwrap_or(0);
        assert_eq!(operations, endpoints.len(), "documented operations");
    }
}
