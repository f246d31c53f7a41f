"""deploy/: the Kubernetes manifests against the Kubernetes objects' schemas
(kubernetes-validate) and the inference gateway's CRDs (tests/deploy/crd_schemas.json);
the HAProxy configuration through `haproxy -c`; the container recipe's packages
against the shared libraries the built binary needs. There is no cluster, container
engine or endpoint picker here: docs/scale-out.md says what was and was not run."""
import json
import os
import pathlib
import re
import shutil
import subprocess
import sys

import pytest

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parents[1] / "server"))
from conftest import require  # noqa: E402  (skips, or fails under KILN_TESTS_REQUIRE_DATA=1)

ROOT = pathlib.Path(__file__).resolve().parents[2]
DEPLOY = ROOT / "deploy"


def manifests():
    yaml = pytest.importorskip("yaml")
    return [d for d in yaml.safe_load_all((DEPLOY / "kubernetes" / "kiln.yaml").read_text()) if d]


def test_kubernetes_objects_validate_against_their_schemas():
    kv = pytest.importorskip("kubernetes_validate")
    jsonschema = pytest.importorskip("jsonschema")
    crds = json.loads((ROOT / "tests" / "deploy" / "crd_schemas.json").read_text())
    kinds = []
    for doc in manifests():
        kinds.append(doc["kind"])
        if doc["kind"] in crds:
            jsonschema.validate(doc, crds[doc["kind"]])
        else:
            kv.validate(doc, "1.33.0", strict=True)  # strict: unknown fields are errors
    assert kinds == ["Deployment", "Service", "InferencePool", "InferenceObjective"]


def test_the_validators_catch_mistakes():
    """The checks above would fail on a wrong manifest (a typo'd field, a bad port)."""
    kv = pytest.importorskip("kubernetes_validate")
    jsonschema = pytest.importorskip("jsonschema")
    crds = json.loads((ROOT / "tests" / "deploy" / "crd_schemas.json").read_text())
    docs = {d["kind"]: d for d in manifests()}
    bad = json.loads(json.dumps(docs["Deployment"]))
    bad["spec"]["template"]["spec"]["containers"][0]["readinessProbe"]["httpGet"]["paht"] = "/health"
    with pytest.raises(kv.ValidationError):
        kv.validate(bad, "1.33.0", strict=True)
    pool = json.loads(json.dumps(docs["InferencePool"]))
    pool["spec"]["targetPorts"] = [{"number": 70000}]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(pool, crds["InferencePool"])
    objective = json.loads(json.dumps(docs["InferenceObjective"]))
    del objective["spec"]["poolRef"]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(objective, crds["InferenceObjective"])


def test_manifests_agree_with_each_other_and_with_kiln():
    docs = {d["kind"]: d for d in manifests()}
    dep, svc, pool, obj = docs["Deployment"], docs["Service"], docs["InferencePool"], docs["InferenceObjective"]
    labels = dep["spec"]["template"]["metadata"]["labels"]
    assert dep["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert svc["spec"]["selector"].items() <= labels.items()
    assert pool["spec"]["selector"]["matchLabels"].items() <= labels.items()
    assert obj["spec"]["poolRef"]["name"] == pool["metadata"]["name"]
    c = dep["spec"]["template"]["spec"]["containers"][0]
    port = int(c["args"][c["args"].index("--port") + 1])
    assert c["ports"][0]["containerPort"] == port == pool["spec"]["targetPorts"][0]["number"]
    for probe in ("readinessProbe", "startupProbe", "livenessProbe"):
        assert c[probe]["httpGet"]["path"] == "/health"  # answers 503 until the model is loaded, needs no key
    drain = int(c["args"][c["args"].index("--drain-timeout") + 1])
    assert dep["spec"]["template"]["spec"]["terminationGracePeriodSeconds"] > drain
    # Every flag the manifest passes is one `kiln serve` knows.
    kiln = pathlib.Path(os.environ.get("KILN_BINARY", ROOT / "build" / "kiln"))
    require(kiln.exists(), f"no kiln binary at {kiln}")
    helptext = subprocess.run([str(kiln), "serve", "--help"], capture_output=True, text=True).stdout
    for arg in c["args"]:
        if arg.startswith("-") and not arg.startswith("$("):
            assert re.search(r"(^|[\s,])" + re.escape(arg) + r"\b", helptext), arg


def test_haproxy_configuration_is_valid():
    haproxy = shutil.which("haproxy")
    require(haproxy is not None, "haproxy is not installed (setup.sh installs Debian's haproxy)")
    p = subprocess.run([haproxy, "-c", "-f", str(DEPLOY / "haproxy" / "haproxy.cfg")], capture_output=True, text=True)
    assert p.returncode == 0, p.stdout + p.stderr
    cfg = (DEPLOY / "haproxy" / "haproxy.cfg").read_text()
    assert "balance hash req.body" in cfg and "hash-type consistent" in cfg and "hash-balance-factor" in cfg
    assert len(re.findall(r"^\s*server r\d 127\.0\.0\.1:\d+ check", cfg, re.M)) == 3


def test_container_recipe_provides_every_library_the_binary_needs():
    kiln = pathlib.Path(os.environ.get("KILN_BINARY", ROOT / "build" / "kiln"))
    require(kiln.exists(), f"no kiln binary at {kiln}")
    recipe = (DEPLOY / "container" / "Containerfile").read_text()
    packages = set(re.search(r"--no-install-recommends\s*\\\n(.*?)\\\n", recipe, re.S).group(1).split())
    libs = re.findall(r"^\s*(\S+\.so[.\d]*) => (\S+)", subprocess.run(["ldd", str(kiln)], capture_output=True, text=True).stdout, re.M)
    assert libs
    for name, path in libs:
        real = os.path.realpath(path)
        owners = set()
        for candidate in {path, real, "/usr" + path if not path.startswith("/usr") else path}:
            out = subprocess.run(["dpkg", "-S", candidate], capture_output=True, text=True).stdout
            owners |= {line.split(":")[0] for line in out.splitlines() if line}
        if owners & {"libc6", "libgcc-s1"}:
            continue  # in every Debian base image
        assert owners & packages, f"{name} ({path}) comes from {owners or 'no package'}, not in the Containerfile's list"
