"""The registries themselves (atrec/registry.py), over both of atrec's: registration checks
that name the problem, and a broken plug-in that leaves the registry working."""

from importlib import metadata

import pytest

from atrec.errors import AtrecError
from atrec.methods.base import Method, validate_method_class
from atrec.methods.mf_ips import MFIPS
from atrec.methods.registry import METHODS
from atrec.propensity.base import Propensity, validate_propensity_class
from atrec.propensity.builtin import Uniform
from atrec.propensity.registry import PROPENSITIES
from atrec.registry import Registry

KINDS = {
    "method": (METHODS, Method, MFIPS, validate_method_class),
    "propensity": (PROPENSITIES, Propensity, Uniform, validate_propensity_class),
}


def _subclass(kind: str, **attrs) -> type:
    registry, base, builtin, _ = KINDS[kind]
    body = {"fit": lambda self, *a: None} if base is Method else {"estimate": lambda self, s: None}
    body.update(attrs)
    return type("Candidate", (base,), body)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("attrs, fragment", [
    ({"name": "fresh-one"}, "lacks a non-empty 'label'"),
    ({"name": "fresh-one", "label": ""}, "lacks a non-empty 'label'"),
    ({"name": "Bad Name", "label": "x"}, "'Bad Name'"),
    ({"name": None, "label": "x"}, "got None"),
], ids=["no-label", "empty-label", "bad-name", "no-name"])
def test_registration_names_the_problem(kind, attrs, fragment):
    registry = KINDS[kind][0]
    before = registry.names()
    with pytest.raises(ValueError, match=f"^{kind} class|is not a subclass") as info:
        registry.register(_subclass(kind, **attrs))
    assert fragment in str(info.value)
    assert registry.names() == before


@pytest.mark.parametrize("kind", KINDS)
def test_a_clashing_name_is_refused(kind):
    registry, _, builtin, _ = KINDS[kind]
    before = registry.names()
    with pytest.raises(ValueError, match=f"{kind} name '{builtin.name}' is already registered "
                                         f"by built-in"):
        registry.register(_subclass(kind, name=builtin.name, label="Clash"))
    assert registry.names() == before and registry.get(builtin.name) is builtin


class _EntryPoint:
    """What ``metadata.entry_points(group=...)`` yields, with a ``load`` of our choosing."""

    def __init__(self, name, load, package="atrec-plugin-x"):
        self.name, self._load = name, load
        self.value = f"{package.replace('-', '_')}:Plugin"
        self.dist = type("Dist", (), {"name": package})()

    def load(self):
        return self._load()


def _fresh(kind, monkeypatch, entry_points) -> Registry:
    _, _, builtin, validate = KINDS[kind]
    registry = Registry(kind, f"atrec.{kind}s", validate)
    registry.builtins(lambda: registry.register(builtin))
    monkeypatch.setattr("atrec.registry.metadata.entry_points",
                        lambda group: list(entry_points) if group == registry.group else [])
    return registry


@pytest.mark.parametrize("kind", KINDS)
def test_a_plugin_that_fails_to_import_leaves_the_registry_working(kind, monkeypatch):
    # a real EntryPoint of a module that is not installed: load() raises ModuleNotFoundError
    broken = metadata.EntryPoint(name="broken", value="atrec_missing_plugin:Plugin",
                                 group=f"atrec.{kind}s")

    def fails():
        raise ImportError("No module named 'torch'")

    registry = _fresh(kind, monkeypatch, [broken, _EntryPoint("torchy", fails)])
    builtin = KINDS[kind][2]
    assert registry.names() == (builtin.name,)
    assert registry.get(builtin.name) is builtin
    assert set(registry.problems) == {"broken", "torchy"}
    line = registry.problems["torchy"]
    assert "\n" not in line and "'atrec-plugin-x'" in line and "ImportError" in line
    assert "No module named 'torch'" in line
    assert "'atrec_missing_plugin'" in registry.problems["broken"]
    assert "ModuleNotFoundError" in registry.problems["broken"]
    for name in ("broken", "torchy"):
        with pytest.raises(AtrecError) as info:
            registry.get(name)
        assert str(info.value) == registry.problems[name]
    with pytest.raises(AtrecError, match=f"unknown {kind} 'other'"):
        registry.get("other")


@pytest.mark.parametrize("kind", KINDS)
def test_plugins_register_with_their_package_and_clashes_are_problems(kind, monkeypatch):
    good = _subclass(kind, name="plug-in-one", label="Plug-in one")
    clash = _subclass(kind, name=KINDS[kind][2].name, label="Clash")
    registry = _fresh(kind, monkeypatch, [_EntryPoint("good", lambda: [good]),
                                          _EntryPoint("clash", lambda: clash, "other-pkg")])
    assert registry.names() == (KINDS[kind][2].name, "plug-in-one")
    assert registry.entry("plug-in-one").origin == "atrec-plugin-x"
    assert "already registered by built-in" in registry.problems["clash"]
    assert "'other-pkg'" in registry.problems["clash"]


# --- installed plug-ins, end to end -------------------------------------------------------------

def _install_fake_dist(site, dist: str, group: str, name: str, target: str, module: str,
                       source: str) -> None:
    """A distribution on ``site`` (a sys.path entry) with one entry point, as pip lays it out."""
    (site / f"{module}.py").write_text(source)
    info = site / f"{dist.replace('-', '_')}-1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {dist}\nVersion: 1.0\n")
    (info / "entry_points.txt").write_text(f"[{group}]\n{name} = {target}\n")


BROKEN = [
    ("import-error", "atrec.methods", "raise ImportError('no module named torch')\n",
     "ImportError: no module named torch"),
    ("missing-field", "atrec.methods",
     "from atrec.methods.learner_method import LearnerMethod\n"
     "class Thing(LearnerMethod):\n    name = 'no-label'\n",
     "lacks a non-empty 'label'"),
    ("clash", "atrec.methods",
     "from atrec.methods.mf_ips import MFIPS\n"
     "class Thing(MFIPS):\n    label = 'Mine'\n",
     "'mf-ips' is already registered by built-in"),
    ("clash", "atrec.propensities",
     "from atrec.propensity.builtin import Item\n"
     "class Thing(Item):\n    label = 'Mine'\n",
     "'item' is already registered by built-in"),
]


@pytest.mark.parametrize("case, group, source, fragment", BROKEN,
                         ids=[f"{c}-{g.split('.')[1]}" for c, g, _, _ in BROKEN])
def test_a_broken_installed_plugin_is_one_line_naming_its_package(tmp_path, case, group, source,
                                                                 fragment):
    import os
    import subprocess
    import sys

    _install_fake_dist(tmp_path, "broken-pkg", group, "thing", "broken_mod:Thing", "broken_mod",
                       source)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(tmp_path)] + sys.path))
    listed = subprocess.run([sys.executable, "-m", "atrec", "methods"], env=env,
                            capture_output=True, text=True, timeout=120)
    assert listed.returncode == 0, listed.stderr          # atrec itself keeps working
    assert "mf-ips" in listed.stdout and "Traceback" not in listed.stderr
    warning = [line for line in listed.stderr.splitlines() if line.startswith("warning:")]
    assert len(warning) == 1 and "'broken-pkg'" in warning[0] and fragment in warning[0]
    option = "--method" if group == "atrec.methods" else "--propensity"
    asked = subprocess.run([sys.executable, "-m", "atrec", "tune", option, "thing",
                            "--trials", "1"], env=env, capture_output=True, text=True,
                           timeout=120)
    assert asked.returncode == 2 and "Traceback" not in asked.stderr
    errors = [line for line in asked.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "'broken-pkg'" in errors[0]
