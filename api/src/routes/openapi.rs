//! `GET /api/v1/openapi.json`: an OpenAPI 3 document of the API, built from
//! the route table ([`super::table`]) the router serves.
//!
//! It describes each operation's path and query parameters, its request
//! and response bodies field by field, its success status, the shared error
//! shape and which operations need a bearer token and which role
//! (`x-datajump-role`: viewer, operator or admin). The body schemas are
//! derived (`schemars`) from the Rust types the handlers read and write,
//! named in the route table, so the document cannot drift from them; a DAG
//! definition's own fields are those of `docs/DAG_FORMAT.md`, in camelCase.

use axum::Json;
use serde_json::{Map, Value, json};

use schemars::SchemaGenerator;
use schemars::generate::SchemaSettings;

use super::table::{Access, Answer, Body, Endpoint, SchemaOf, endpoints};

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

/// The `content` of a success answer, if it has one.
fn answer_content(answer: Answer, generator: &mut SchemaGenerator) -> Option<Value> {
    match answer {
        Answer::Undeclared | Answer::Nothing => None,
        Answer::Json(schema) => {
            Some(json!({ "application/json": { "schema": schema(generator) } }))
        }
        Answer::Text => Some(json!({ "text/plain": { "schema": { "type": "string" } } })),
        Answer::Events(events) => {
            let data: Map<String, Value> = events
                .iter()
                .map(|(name, schema)| ((*name).to_owned(), schema(generator).to_value()))
                .collect();
            Some(json!({
                "text/event-stream": {
                    "schema": { "type": "string" },
                    "x-datajump-events": data,
                }
            }))
        }
    }
}

/// Schemas of what the API writes (serialized) and of what it reads
/// (deserialized): a field with a default is optional in a request and
/// always present in an answer.
struct Generators {
    answers: SchemaGenerator,
    requests: SchemaGenerator,
}

impl Generators {
    fn new() -> Generators {
        Generators {
            answers: SchemaSettings::openapi3().for_serialize().into_generator(),
            requests: SchemaSettings::openapi3()
                .for_deserialize()
                .into_generator(),
        }
    }

    /// Every schema named, and the names whose request and answer shapes
    /// differ (none may: they share one name in the document).
    fn definitions(mut self) -> (Map<String, Value>, Vec<String>) {
        let mut schemas = self.answers.take_definitions(true);
        let mut differing = Vec::new();
        for (name, schema) in self.requests.take_definitions(true) {
            match schemas.get(&name) {
                Some(answer) if *answer != schema => differing.push(name),
                Some(_) => {}
                None => {
                    schemas.insert(name, schema);
                }
            }
        }
        (schemas, differing)
    }
}

/// The query parameters of a query type: one per field, with the field's
/// schema and description, none required (each has a default).
fn query_parameters(query: SchemaOf, generator: &mut SchemaGenerator) -> Vec<Value> {
    // Parameters are not among the document's definitions, which get the
    // OpenAPI transforms (`nullable`, `enum`) when taken: apply them here.
    let mut schema = query(generator);
    for transform in generator.transforms_mut() {
        transform.transform(&mut schema);
    }
    let schema = schema.to_value();
    let required: Vec<&str> = schema["required"]
        .as_array()
        .map(|names| names.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    schema["properties"]
        .as_object()
        .into_iter()
        .flatten()
        .map(|(name, field)| {
            let mut field = field.clone();
            let description = field
                .as_object_mut()
                .and_then(|object| object.remove("description"));
            let mut parameter = json!({
                "name": name,
                "in": "query",
                "required": required.contains(&name.as_str()),
                "schema": field,
            });
            if let Some(description) = description {
                parameter["description"] = description;
            }
            parameter
        })
        .collect()
}

fn operation(endpoint: &Endpoint, generators: &mut Generators) -> Value {
    let mut parameters: Vec<Value> = path_parameters(endpoint.path).map(path_parameter).collect();
    if let Some(query) = endpoint.query {
        parameters.extend(query_parameters(query, &mut generators.requests));
    }
    let generator = &mut generators.answers;
    let error = json!({
        "description": "An error",
        "content": { "application/json": { "schema": generator.subschema_for::<crate::error::ErrorBody>() } },
    });
    let mut success = json!({ "description": endpoint.summary });
    if let Some(content) = answer_content(endpoint.answer, generator) {
        success["content"] = content;
    }
    let mut responses = json!({ "default": error });
    if let Some(dry_run) = endpoint.dry_run {
        let dry_run = dry_run(generator);
        if endpoint.status == 200 {
            let answer = &mut success["content"]["application/json"]["schema"];
            *answer = json!({ "oneOf": [answer.take(), dry_run] });
        } else {
            responses["200"] = json!({
                "description": "The dry run (`dryRun=true`): what it would do, nothing done",
                "content": { "application/json": { "schema": dry_run } },
            });
        }
    }
    responses[endpoint.status.to_string()] = success;
    let mut operation = json!({
        "summary": endpoint.summary,
        "parameters": parameters,
        "responses": responses,
    });
    if endpoint.body != Body::None {
        let schema = endpoint.request.map_or_else(
            || json!({ "type": "object" }),
            |schema| schema(&mut generators.requests).to_value(),
        );
        operation["requestBody"] = json!({
            "required": endpoint.body == Body::Required,
            "content": { "application/json": { "schema": schema } },
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
    let (document, _) = build_checked(endpoints);
    document
}

/// [`build`], and the schema names whose request and answer shapes differ.
fn build_checked(endpoints: &[Endpoint]) -> (Value, Vec<String>) {
    let mut generators = Generators::new();
    let mut paths: Map<String, Value> = Map::new();
    for endpoint in endpoints {
        let item = paths
            .entry(endpoint.path)
            .or_insert_with(|| Value::Object(Map::new()));
        item[endpoint.verb.openapi_name()] = operation(endpoint, &mut generators);
    }
    let (schemas, differing) = generators.definitions();
    let document = json!({
        "openapi": "3.0.3",
        "info": {
            "title": "DataJump",
            "description": "The DataJump control plane: DAGs, runs, schedules, events and runners.",
            "version": env!("CARGO_PKG_VERSION"),
        },
        "paths": paths,
        "components": {
            "schemas": schemas,
            "securitySchemes": { "bearer": { "type": "http", "scheme": "bearer" } },
        },
    });
    (document, differing)
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
                !matches!(endpoint.answer, Answer::Undeclared),
                "{verb} {} does not say what it answers (answers::<T>() and kin)",
                endpoint.path
            );
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

    /// Every `$ref` names a schema of the document, and the bodies have
    /// fields: a run's answer lists its task instances' fields.
    #[test]
    fn bodies_are_described_field_by_field() {
        let (document, differing) = build_checked(&endpoints());
        assert!(
            differing.is_empty(),
            "read and written with different shapes under one name: {differing:?}"
        );
        let schemas = document["components"]["schemas"]
            .as_object()
            .expect("schemas");
        let text = document.to_string();
        for reference in text.split("\"$ref\":\"").skip(1) {
            let name = reference
                .split('"')
                .next()
                .and_then(|r| r.strip_prefix("#/components/schemas/"))
                .unwrap_or_else(|| panic!("a $ref outside the components: {reference:.80}"));
            assert!(
                schemas.contains_key(name),
                "{name} is referred to but not defined"
            );
        }
        let detail = &schemas["RunDetail"];
        let instances = &detail["properties"]["taskInstances"];
        assert_eq!(instances["type"], "array", "{detail}");
        let instance = &schemas["TaskInstanceDto"]["properties"];
        for field in ["id", "status", "attempts", "startTime", "outputs"] {
            assert!(
                instance.get(field).is_some(),
                "TaskInstanceDto.{field}: {instance}"
            );
        }
        let trigger = &document["paths"]["/api/v1/dags/{dagId}/trigger"]["post"];
        assert!(
            trigger["requestBody"]["content"]["application/json"]["schema"]["$ref"]
                .as_str()
                .is_some_and(|r| r.ends_with("/TriggerRequest")),
            "{trigger}"
        );
    }
}
