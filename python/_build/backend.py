"""fedirl's PEP 517 build backend, in pure Python with nothing to install: it writes the wheel (a zip with the
package, the `fedirl` binary built for this machine with `go build`, and the .dist-info) itself, so that
`pip install ./python` works with or without build isolation on any Python >= 3.9 with pip, with no
setuptools or wheel and no network (pyproject.toml: requires = [], backend-path = ["_build"]).

Go is needed at build time: `go` on PATH (or $GO, or /usr/local/go/bin/go) and the fedirl source tree, the
folder above python/ (or $FEDIRL_SOURCE). The wheel is tagged for this platform (py3-none-<platform>), as
wheels that carry a native binary are.
"""
import base64
import hashlib
import io
import os
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
import zipfile

NAME = "fedirl"
HERE = os.path.dirname(os.path.abspath(__file__))
PROJECT = os.path.dirname(HERE)  # python/


def _pyproject():
    """pyproject.toml's [project] table (tomllib on Python >= 3.11; before, a small reader of the TOML subset
    this pyproject.toml uses: strings, lists of strings, inline tables, one table per section)."""
    path = os.path.join(PROJECT, "pyproject.toml")
    try:
        import tomllib
    except ImportError:
        tomllib = None
    if tomllib is not None:
        with open(path, "rb") as f:
            return tomllib.load(f)["project"]
    tables, section, buf = {}, None, ""
    with open(path, encoding="utf-8") as f:
        for raw in f.read().splitlines():
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            if line.startswith("[") and not buf:
                section = line.strip("[]").strip()
                tables.setdefault(section, {})
                continue
            buf = (buf + " " + line).strip()
            if buf.count("[") > buf.count("]") or buf.count("{") > buf.count("}"):
                continue  # a value continued on the next line
            key, _, value = buf.partition("=")
            buf = ""
            tables[section][key.strip().strip('"')] = _value(value.strip())
    project = tables.get("project", {})
    if "project.optional-dependencies" in tables:
        project["optional-dependencies"] = tables["project.optional-dependencies"]
    return project


def _value(v):
    if v.startswith('"'):
        return v[1:v.index('"', 1)]
    if v.startswith("["):
        return [x.strip().strip('"') for x in v.strip("[]").split(",") if x.strip()]
    if v.startswith("{"):
        d = {}
        for part in v.strip("{}").split(","):
            k, _, val = part.partition("=")
            d[k.strip()] = val.strip().strip('"')
        return d
    return v


def _metadata():
    m = _pyproject()
    lines = ["Metadata-Version: 2.1", f"Name: {m['name']}", f"Version: {m['version']}", f"Summary: {m['description']}",
             f"Requires-Python: {m['requires-python']}"]
    lic = m.get("license")
    if isinstance(lic, dict) and lic.get("text"):
        lines.append(f"License: {lic['text']}")
    for dep in m.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    for extra, deps in sorted(m.get("optional-dependencies", {}).items()):
        lines.append(f"Provides-Extra: {extra}")
        for dep in deps:
            lines.append(f'Requires-Dist: {dep}; extra == "{extra}"')
    lines.append("Description-Content-Type: text/markdown")
    with open(os.path.join(PROJECT, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    return "\n".join(lines) + "\n\n" + readme, m


def _platform_tag():
    return sysconfig.get_platform().replace("-", "_").replace(".", "_")


def _go():
    for cand in (os.environ.get("GO"), shutil.which("go"), "/usr/local/go/bin/go"):
        if cand and os.path.exists(cand):
            return cand
    raise RuntimeError("fedirl's wheel contains the fedirl Go binary, built now: Go is needed at build time "
                       "(https://go.dev/dl/, Go >= the go line of go.mod), on PATH or as $GO")


def _source():
    src = os.environ.get("FEDIRL_SOURCE") or os.path.dirname(PROJECT)
    if not os.path.exists(os.path.join(src, "go.mod")) or not os.path.isdir(os.path.join(src, "cmd", "fedirl")):
        raise RuntimeError(f"the fedirl Go source (go.mod, cmd/fedirl) is not at {src}: build from the checkout's "
                           "python/ folder, or set $FEDIRL_SOURCE to the checkout")
    return src


def _build_binary(dest):
    exe = "fedirl.exe" if os.name == "nt" else "fedirl"
    out = os.path.join(dest, exe)
    cmd = [_go(), "build", "-o", out, "./cmd/fedirl"]
    print("fedirl build backend: " + " ".join(cmd), file=sys.stderr)
    p = subprocess.run(cmd, cwd=_source(), capture_output=True, text=True)
    if p.returncode != 0:
        raise RuntimeError(f"go build ./cmd/fedirl failed:\n{p.stdout}{p.stderr}")
    return out, exe


def _record_line(arc, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arc},sha256={digest},{len(data)}"


def _package_files():
    pkg = os.path.join(PROJECT, NAME)
    for root, dirs, files in os.walk(pkg):
        dirs[:] = sorted(d for d in dirs if d not in ("__pycache__", "bin"))
        for fn in sorted(files):
            if fn.endswith((".py", ".proto")):
                full = os.path.join(root, fn)
                yield full, os.path.relpath(full, PROJECT).replace(os.sep, "/")


# PEP 517 hooks.

def get_requires_for_build_wheel(config_settings=None):
    return []


def get_requires_for_build_sdist(config_settings=None):
    return []


def prepare_metadata_for_build_wheel(metadata_directory, config_settings=None):
    text, m = _metadata()
    di = f"{m['name']}-{m['version']}.dist-info"
    os.makedirs(os.path.join(metadata_directory, di), exist_ok=True)
    with open(os.path.join(metadata_directory, di, "METADATA"), "w", encoding="utf-8") as f:
        f.write(text)
    return di


def _wheel(wheel_directory):
    text, m = _metadata()
    name, version = m["name"], m["version"]
    tag = f"py3-none-{_platform_tag()}"
    di = f"{name}-{version}.dist-info"
    wheel_name = f"{name}-{version}-{tag}.whl"
    records = []
    with tempfile.TemporaryDirectory(prefix="fedirl-wheel-") as tmp:
        binary, exe = _build_binary(tmp)
        path = os.path.join(wheel_directory, wheel_name)
        with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
            def add(arc, data, mode=0o644):
                info = zipfile.ZipInfo(arc, date_time=(2020, 1, 1, 0, 0, 0))
                info.external_attr = (0o100000 | mode) << 16
                info.compress_type = zipfile.ZIP_DEFLATED
                z.writestr(info, data)
                records.append(_record_line(arc, data))
            for full, arc in _package_files():
                with open(full, "rb") as f:
                    add(arc, f.read())
            with open(binary, "rb") as f:
                add(f"{name}/bin/{exe}", f.read(), 0o755)
            add(f"{di}/METADATA", text.encode())
            add(f"{di}/WHEEL", (f"Wheel-Version: 1.0\nGenerator: fedirl-build-backend\nRoot-Is-Purelib: false\n"
                                f"Tag: {tag}\n").encode())
            add(f"{di}/top_level.txt", f"{name}\n".encode())
            records.append(f"{di}/RECORD,,")
            z.writestr(zipfile.ZipInfo(f"{di}/RECORD", date_time=(2020, 1, 1, 0, 0, 0)), "\n".join(records) + "\n")
    return wheel_name


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    return _wheel(wheel_directory)


def build_sdist(sdist_directory, config_settings=None):
    _, m = _metadata()
    base = f"{m['name']}-{m['version']}"
    path = os.path.join(sdist_directory, base + ".tar.gz")
    with tarfile.open(path, "w:gz") as t:
        for fn in ("pyproject.toml", "README.md"):
            t.add(os.path.join(PROJECT, fn), f"{base}/{fn}")
        t.add(HERE, f"{base}/_build", filter=lambda ti: None if "__pycache__" in ti.name else ti)
        for full, arc in _package_files():
            t.add(full, f"{base}/{arc}")
        pkg = io.BytesIO(f"Metadata-Version: 2.1\nName: {m['name']}\nVersion: {m['version']}\n".encode())
        ti = tarfile.TarInfo(f"{base}/PKG-INFO")
        ti.size = len(pkg.getvalue())
        t.addfile(ti, pkg)
    return base + ".tar.gz"
