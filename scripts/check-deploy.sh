#!/usr/bin/env bash
# Validates every manifest under deploy/kubernetes offline, without a
# Kubernetes cluster (none is needed, and none was used to write them):
#   - each Kubernetes object against the schemas of the Kubernetes API
#     (PyPI's kubernetes-validate, strict: an unknown field fails), for the
#     oldest and the newest Kubernetes they are meant for (DATAJUMP_K8S_VERSIONS,
#     default "1.30 1.37");
#   - each KEDA ScaledObject, which those schemas do not have (KEDA's CRD
#     defines it), against the JSON schema below, written from the fields of
#     KEDA's CRD that a ScaledObject may carry; its metadata and its HPA
#     behavior are checked against the Kubernetes schemas they are;
#   - each kustomization.yaml's resources exist;
#   - what holds the files together: selectors match a Deployment, probes
#     name a port the container has, secret and ConfigMap references exist
#     in secret.example.yaml and configmap.yaml, a runner's grace period
#     outlasts its --drain-timeout, and a ScaledObject scales a Deployment of
#     this folder on its own queue's consumers with its --slots as target.
# A schema says nothing of what an API server would do with the objects
# (admission, quotas, the KEDA operator's own checks): that needs a cluster.
# kubernetes-validate is installed into a virtualenv of its own under
# ~/.cache/datajump-ci when missing (scripts/setup-services.sh). Exits non-zero if anything fails.
set -euo pipefail
cd "$(dirname "$0")/.."
source scripts/setup-services.sh
venv="$(cached_venv kubernetes-validate 1.37.0)"

exec "$venv/bin/python" - deploy/kubernetes ${DATAJUMP_K8S_VERSIONS:-1.30 1.37} <<'EOF'
import json
import pathlib
import re
import shlex
import sys

import jsonschema
import kubernetes_validate
import referencing
import yaml

root = pathlib.Path(sys.argv[1])
versions = sys.argv[2:]
schemas = pathlib.Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema"

K8S_DEFS = "https://kubernetes.io/api/_definitions.json#/$defs/"

# A ScaledObject as KEDA's CRD (keda.sh/v1alpha1, KEDA 2.12 to 2.20) allows
# it, the status left out; unknown fields fail, as kubernetes-validate's
# strict mode makes them fail for built-in kinds.
SCALED_OBJECT = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "required": ["apiVersion", "kind", "metadata", "spec"],
    "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "keda.sh/v1alpha1"},
        "kind": {"const": "ScaledObject"},
        "metadata": {"$ref": K8S_DEFS + "io.k8s.apimachinery.pkg.apis.meta.v1.ObjectMeta"},
        "spec": {
            "type": "object",
            "required": ["scaleTargetRef", "triggers"],
            "additionalProperties": False,
            "properties": {
                "scaleTargetRef": {
                    "type": "object",
                    "required": ["name"],
                    "additionalProperties": False,
                    "properties": {
                        "apiVersion": {"type": "string"},
                        "kind": {"type": "string"},
                        "name": {"type": "string", "minLength": 1},
                        "envSourceContainerName": {"type": "string"},
                    },
                },
                "pollingInterval": {"type": "integer", "minimum": 1},
                "cooldownPeriod": {"type": "integer", "minimum": 0},
                "initialCooldownPeriod": {"type": "integer", "minimum": 0},
                "idleReplicaCount": {"type": "integer", "minimum": 0},
                "minReplicaCount": {"type": "integer", "minimum": 0},
                "maxReplicaCount": {"type": "integer", "minimum": 1},
                "fallback": {
                    "type": "object",
                    "required": ["failureThreshold", "replicas"],
                    "additionalProperties": False,
                    "properties": {
                        "failureThreshold": {"type": "integer", "minimum": 0},
                        "replicas": {"type": "integer", "minimum": 0},
                        "behavior": {"enum": ["static", "currentReplicas", "currentReplicasIfHigher",
                                              "currentReplicasIfLower", "scalingModifiers"]},
                    },
                },
                "advanced": {
                    "type": "object",
                    "additionalProperties": False,
                    "properties": {
                        "restoreToOriginalReplicaCount": {"type": "boolean"},
                        "horizontalPodAutoscalerConfig": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "name": {"type": "string"},
                                "behavior": {"$ref": K8S_DEFS + "io.k8s.api.autoscaling.v2.HorizontalPodAutoscalerBehavior"},
                            },
                        },
                        "scalingModifiers": {
                            "type": "object",
                            "additionalProperties": False,
                            "properties": {
                                "formula": {"type": "string"},
                                "target": {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$"},
                                "activationTarget": {"type": "string", "pattern": r"^[0-9]+(\.[0-9]+)?$"},
                                "metricType": {"enum": ["AverageValue", "Value"]},
                            },
                        },
                    },
                },
                "triggers": {
                    "type": "array",
                    "minItems": 1,
                    "items": {
                        "type": "object",
                        "required": ["type", "metadata"],
                        "additionalProperties": False,
                        "properties": {
                            "type": {"type": "string", "minLength": 1},
                            "name": {"type": "string"},
                            "metadata": {"type": "object", "additionalProperties": {"type": "string"}},
                            "metricType": {"enum": ["AverageValue", "Value", "Utilization"]},
                            "useCachedMetrics": {"type": "boolean"},
                            "authenticationRef": {
                                "type": "object",
                                "required": ["name"],
                                "properties": {
                                    "name": {"type": "string"},
                                    "kind": {"enum": ["TriggerAuthentication", "ClusterTriggerAuthentication"]},
                                },
                            },
                        },
                        # The metadata each trigger type used here requires
                        # (KEDA's pkg/scalers: nats_jetstream_scaler.go,
                        # prometheus_scaler.go).
                        "allOf": [
                            {"if": {"properties": {"type": {"const": "nats-jetstream"}}},
                             "then": {"properties": {"metadata": {
                                 "required": ["natsServerMonitoringEndpoint", "stream", "consumer"],
                                 "anyOf": [{"required": ["account"]}, {"required": ["accountID"]}],
                                 "properties": {
                                     "lagThreshold": {"pattern": "^[0-9]+$"},
                                     "activationLagThreshold": {"pattern": "^[0-9]+$"},
                                     "useHttps": {"enum": ["true", "false"]},
                                 }}}}},
                            {"if": {"properties": {"type": {"const": "prometheus"}}},
                             "then": {"properties": {"metadata": {
                                 "required": ["serverAddress", "query", "threshold"],
                                 "properties": {
                                     "threshold": {"pattern": r"^[0-9]+(\.[0-9]+)?$"},
                                     "activationThreshold": {"pattern": r"^[0-9]+(\.[0-9]+)?$"},
                                     "ignoreNullValues": {"enum": ["true", "false"]},
                                 }}}}},
                        ],
                    },
                },
            },
        },
    },
}

passed = failed = 0


def fail(where, message):
    print(f"FAIL {where}: {message}")


def definitions(version):
    major_minor = ".".join(version.split(".")[:2])
    text = (schemas / f"v{major_minor}.0-local-strict" / "_definitions.json").read_text()
    return referencing.Resource.from_contents(json.loads(text))


def check_scaled_object(where, obj):
    ok = True
    for version in versions:
        registry = definitions(version) @ referencing.Registry()
        validator = jsonschema.Draft202012Validator(SCALED_OBJECT, registry=registry)
        for error in validator.iter_errors(obj):
            path = ".".join(str(p) for p in error.absolute_path)
            fail(where, f"ScaledObject schema (metadata and behavior of Kubernetes {version}): {path}: {error.message}")
            ok = False
    spec = obj.get("spec", {})
    names = [t.get("name") for t in spec.get("triggers", []) if t.get("name")]
    if len(names) != len(set(names)):
        fail(where, "trigger names repeat")
        ok = False
    formula = spec.get("advanced", {}).get("scalingModifiers", {}).get("formula")
    if formula is not None:
        unknown = set(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", formula)) - set(names)
        if unknown:
            fail(where, f"the formula names no trigger {sorted(unknown)}")
            ok = False
        if not spec["advanced"]["scalingModifiers"].get("target"):
            fail(where, "scalingModifiers has a formula and no target")
            ok = False
    if spec.get("minReplicaCount", 0) > spec.get("maxReplicaCount", 100):
        fail(where, "minReplicaCount is above maxReplicaCount")
        ok = False
    return ok


def check_kubernetes(where, obj):
    ok = True
    for version in versions:
        try:
            kubernetes_validate.validate(obj, version, strict=True)
        except kubernetes_validate.ValidationError as error:
            path = ".".join(str(p) for p in error.path)
            fail(where, f"Kubernetes {version}: {path}: {error.message}")
            ok = False
        except (kubernetes_validate.SchemaNotFoundError, kubernetes_validate.InvalidSchemaError) as error:
            fail(where, f"Kubernetes {version}: {error.message}")
            ok = False
    return ok


def check_kustomization(path, obj):
    ok = True
    for resource in obj.get("resources", []):
        if not (path.parent / resource).is_file():
            fail(str(path), f"lists {resource}, which does not exist")
            ok = False
    return ok


objects = []  # (path, object)
for path in sorted(root.rglob("*.y*ml")):
    try:
        documents = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    except yaml.YAMLError as error:
        fail(str(path), f"not YAML: {error}")
        failed += 1
        continue
    for obj in documents:
        kind = obj.get("kind", "?")
        name = obj.get("metadata", {}).get("name", "")
        where = f"{path} {kind}/{name}".rstrip("/")
        if str(obj.get("apiVersion", "")).startswith("kustomize.config.k8s.io/"):
            ok = check_kustomization(path, obj)
        elif obj.get("apiVersion") == "keda.sh/v1alpha1":
            ok = kind == "ScaledObject" and check_scaled_object(where, obj)
            if kind != "ScaledObject":
                fail(where, "only ScaledObject is checked among KEDA's kinds")
        else:
            ok = check_kubernetes(where, obj)
        if ok:
            passed += 1
            print(f"ok   {where}")
        else:
            failed += 1
        objects.append((path, obj))

# What holds the files together.
by_kind = {}
for path, obj in objects:
    by_kind.setdefault(obj.get("kind"), []).append((path, obj))
deployments = {obj["metadata"]["name"]: obj for _, obj in by_kind.get("Deployment", [])}
secret_keys = {k for _, o in by_kind.get("Secret", []) for k in o.get("stringData", {})}
config_maps = {o["metadata"]["name"] for _, o in by_kind.get("ConfigMap", [])}


def selects(selector, labels):
    return all(labels.get(k) == v for k, v in selector.items())


def pod_specs():
    for kind in ("Deployment", "Job"):
        for path, obj in by_kind.get(kind, []):
            yield f"{path} {kind}/{obj['metadata']['name']}", obj["spec"]["template"]


def flag(args, name, default):
    return args[args.index(name) + 1] if name in args else default


def link(ok, where, message):
    """Counts one check between files; prints it when it fails."""
    global passed, failed
    if ok:
        passed += 1
    else:
        failed += 1
        fail(where, message)


objects_checked = passed + failed
for kind in ("PodDisruptionBudget", "Service"):
    for path, obj in by_kind.get(kind, []):
        spec = obj["spec"]
        selector = spec["selector"].get("matchLabels", {}) if kind == "PodDisruptionBudget" else spec["selector"]
        link(any(selects(selector, d["spec"]["template"]["metadata"]["labels"]) for d in deployments.values()),
             f"{path} {kind}/{obj['metadata']['name']}", f"its selector {selector} matches no Deployment's pods")

for where, template in pod_specs():
    spec = template["spec"]
    for container in spec["containers"]:
        ports = {p.get("name") for p in container.get("ports", [])} | {p["containerPort"] for p in container.get("ports", [])}
        for probe in ("startupProbe", "livenessProbe", "readinessProbe"):
            port = container.get(probe, {}).get("httpGet", {}).get("port")
            if port is not None:
                link(port in ports, where, f"{probe} names port {port!r}, which the container does not have")
        for env in container.get("env", []):
            ref = env.get("valueFrom", {}).get("secretKeyRef")
            if ref:
                link(ref["key"] in secret_keys, where,
                     f"{env['name']} takes key {ref['key']!r}, which secret.example.yaml lacks")
        for source in container.get("envFrom", []):
            ref = source.get("configMapRef")
            if ref:
                link(ref["name"] in config_maps, where, f"envFrom names ConfigMap {ref['name']!r}, which is not here")
        args = container.get("args", [])
        if args[:1] == ["runner"]:
            drain = int(flag(args, "--drain-timeout", "30"))
            grace = spec.get("terminationGracePeriodSeconds", 30)
            link(grace > drain, where, f"terminationGracePeriodSeconds {grace} does not outlast --drain-timeout {drain}")

for path, obj in by_kind.get("ScaledObject", []):
    where = f"{path} ScaledObject/{obj['metadata']['name']}"
    spec = obj["spec"]
    target = deployments.get(spec["scaleTargetRef"]["name"])
    link(target is not None, where, f"scales {spec['scaleTargetRef']['name']!r}, which is no Deployment here")
    if target is None:
        continue
    args = target["spec"]["template"]["spec"]["containers"][0].get("args", [])
    queues = flag(args, "--queues", "default").split(",")
    slots = flag(args, "--slots", "8")
    for trigger in spec["triggers"]:
        metadata = trigger["metadata"]
        if trigger["type"] == "nats-jetstream":
            consumer = re.fullmatch(r"runner-(.+)-p([0-9]+)", metadata["consumer"])
            link(bool(consumer) and consumer.group(1) in queues and 1 <= int(consumer.group(2)) <= 10, where,
                 f"consumer {metadata['consumer']!r} is not a work consumer of {queues}")
            link(metadata.get("lagThreshold") == slots, where,
                 f"lagThreshold {metadata.get('lagThreshold')} is not the runner's --slots {slots}")
        elif trigger["type"] == "prometheus":
            link(f'queue="{queues[0]}"' in metadata["query"] and metadata["threshold"] == slots, where,
                 f"the query or threshold is not for queue {queues[0]} and --slots {slots}")
    modifiers = spec.get("advanced", {}).get("scalingModifiers")
    if modifiers:
        link(modifiers.get("target") == slots, where,
             f"scalingModifiers target {modifiers.get('target')} is not the runner's --slots {slots}")

print(f"{objects_checked} objects against their schemas, {passed + failed - objects_checked} links between files")
print(f"deploy: {passed} passed, {failed} failed")
sys.exit(1 if failed else 0)
EOF
