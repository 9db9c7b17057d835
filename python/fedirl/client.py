"""Talking to a fedirl server from Python: fetch a task, learn theta_i (with `fedirl irl`, or any way you
like), submit it and fetch the fused theta; or submit the values of any reward model (a neural network,
other features) on the task's probe points instead of theta (`probe_points`, `Client.submit_reward`); or
answer a joint task's gradient/Hessian rounds (`Client.run_joint`).

The gRPC stubs are generated at first use from federation.proto (the checkout's proto/, else the copy
installed with the package) with grpc_tools into a temporary folder, removed once they are imported (nothing
generated is committed or left behind). Needs grpcio, grpcio-tools (Debian: python3-grpcio,
python3-grpc-tools).
"""
import importlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
# The checkout's proto/ when running from the repository, else the copy installed with the package
# (python/fedirl/federation.proto, kept identical to proto/federation.proto by TestPythonPackageProtoCopy).
_REPO_PROTO_DIR = os.path.normpath(os.path.join(HERE, "..", "..", "proto"))
DEFAULT_PROTO_DIR = _REPO_PROTO_DIR if os.path.exists(os.path.join(_REPO_PROTO_DIR, "federation.proto")) else HERE

_stubs = None


from .api import FedirlError  # noqa: E402  (one error type for the package)


def load_stubs(proto_dir=None):
    """Generates and imports federation_pb2 and federation_pb2_grpc (once per process)."""
    global _stubs
    if _stubs is not None:
        return _stubs
    try:
        from grpc_tools import protoc
    except ImportError as e:
        raise FedirlError("grpc_tools is not installed (Debian: python3-grpc-tools)") from e
    proto_dir = proto_dir or os.environ.get("FEDIRL_PROTO_DIR", DEFAULT_PROTO_DIR)
    proto = os.path.join(proto_dir, "federation.proto")
    if not os.path.exists(proto):
        raise FedirlError(f"{proto} not found (set FEDIRL_PROTO_DIR)")
    out = tempfile.mkdtemp(prefix="fedirl-stubs-")
    try:
        rc = protoc.main(["grpc_tools.protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}", proto])
        if rc != 0:
            raise FedirlError(f"grpc_tools.protoc failed with {rc} on {proto}")
        sys.path.insert(0, out)
        try:
            _stubs = importlib.import_module("federation_pb2"), importlib.import_module("federation_pb2_grpc")
        finally:
            sys.path.remove(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)  # the imported modules stay loaded
    return _stubs


def read_token(path, client_id):
    """A client's token from a file holding the bare token or the tokens JSON of `fedirl server task create`."""
    with open(path, encoding="utf-8") as f:
        text = f.read().strip()
    if text.startswith("{"):
        tokens = json.loads(text)
        if client_id not in tokens:
            raise FedirlError(f"{path} has no token for client {client_id!r}")
        return tokens[client_id]
    return text


def _is_loopback(addr):
    host = addr.rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


# Transport failures that no retry fixes, by the words of gRPC's C core and OpenSSL, with the likely fix.
_CONNECTION_FIXES = [
    (("WRONG_VERSION_NUMBER", "wrong version number", "first record does not look like a TLS handshake"), True,
     "the server speaks plaintext (it was started with --insecure): pass insecure=True (loopback only), "
     "or restart the server with --tls-cert and --tls-key"),
    (("DNS resolution failed", "no such host"), None, "check the host name of the server address (host:port)"),
    (("CERTIFICATE_VERIFY_FAILED", "certificate verify failed", "Peer name", "is not in peer certificate"), True,
     "pass ca= the PEM of the CA that signed the server's certificate, and dial the name it was issued for "
     "(see README-federation, \"Certificates for TLS and mutual TLS\")"),
    (("Socket closed", "Connection reset by peer"), False,
     "the server may serve TLS: drop insecure=True and pass ca= (a server that is down gives the same error)"),
]


def explain_rpc_error(err, server, tls):
    """A FedirlError naming the likely fix for a gRPC connection failure, or None when none is known."""
    details = f"{err.details() if hasattr(err, 'details') else err}"
    for needles, when_tls, fix in _CONNECTION_FIXES:
        if when_tls is not None and when_tls != tls:
            continue
        if any(n in details for n in needles):
            return FedirlError(f"cannot talk to {server}: {details}\n  fix: {fix}")
    return None


class _ExplainedStub:
    """Wraps a gRPC stub so that a connection failure raises a FedirlError naming the likely fix."""

    def __init__(self, stub, server, insecure):
        self._stub, self._server, self._tls = stub, server, not insecure

    def __getattr__(self, name):
        method = getattr(self._stub, name)

        def call(*args, **kwargs):
            import grpc
            try:
                return method(*args, **kwargs)
            except grpc.RpcError as e:
                if e.code() == grpc.StatusCode.UNAVAILABLE:
                    explained = explain_rpc_error(e, self._server, self._tls)
                    if explained is not None:
                        raise explained from e
                raise
        return call


class Client:
    """One client's connection to a fedirl server."""

    def __init__(self, server, client_id, token, insecure=False, ca=None, proto_dir=None):
        import grpc
        self.pb, pb_grpc = load_stubs(proto_dir)
        if insecure:
            if not _is_loopback(server):
                raise FedirlError(f"insecure (plaintext) connections are only allowed to loopback addresses, not {server}")
            self.channel = grpc.insecure_channel(server)
        else:
            roots = open(ca, "rb").read() if ca else None
            self.channel = grpc.secure_channel(server, grpc.ssl_channel_credentials(root_certificates=roots))
        self.stub = _ExplainedStub(pb_grpc.FederationStub(self.channel), server, insecure)
        self.client_id = client_id
        self.md = [("authorization", "Bearer " + token)]

    def close(self):
        self.channel.close()

    def get_task(self, task_id):
        """The task as a dict: its spec fields (probe, irl and fusion decoded from JSON), current_round, done."""
        r = self.stub.GetTask(self.pb.GetTaskRequest(task_id=task_id, client_id=self.client_id), metadata=self.md, timeout=30)
        s = r.spec
        spec = {"id": s.id, "env_family": s.env_family, "theta_dim": s.theta_dim, "quorum": s.quorum,
                "rounds": s.rounds, "warm_start": s.warm_start,
                "probe": json.loads(s.probe) if s.probe else None,
                "irl": json.loads(s.irl) if s.irl else {}, "fusion": json.loads(s.fusion) if s.fusion else {}}
        # joint: the task's rounds are gradient/Hessian rounds (fusion method joint; run_joint answers them),
        # trial the theta its current round evaluates, joint_update whether they take local updates instead
        # (update fedavg or fedprox). privacy: the task's required client-level DP, None when it has none.
        privacy = None
        if s.HasField("privacy"):
            p = s.privacy
            privacy = {"max_epsilon": p.max_epsilon, "max_delta": p.max_delta, "clip": p.clip,
                       "client_clip": p.client_clip}
        return {"spec": spec, "current_round": r.current_round, "done": r.done, "warm_start": list(r.warm_start),
                "joint": r.joint, "trial": list(r.trial), "joint_update": r.joint_update, "privacy": privacy}

    def submit(self, task_id, theta, demo_count=0, iterations=0, grad_norm=0.0, round=None):
        """Submits theta_i for the task's current round (or the given one); returns (round, server message)."""
        theta = np.asarray(theta, dtype=np.float64).ravel()
        if not np.all(np.isfinite(theta)):
            raise FedirlError("theta holds non-finite values")
        task = self.get_task(task_id)
        if len(theta) != task["spec"]["theta_dim"]:
            raise FedirlError(f"theta has {len(theta)} values, task {task_id} wants theta_dim {task['spec']['theta_dim']}")
        rnd = round or task["current_round"]
        res = self.stub.Submit(self.pb.SubmitRequest(task_id=task_id, round=rnd, client_id=self.client_id,
                                                     theta=theta.tolist(), demo_count=int(demo_count),
                                                     iterations=int(iterations), grad_norm=float(grad_norm)),
                               metadata=self.md, timeout=30)
        return rnd, res.message

    def submit_reward(self, task_id, reward, round=None, task=None):
        """Submits this client's reward on the task's probe support instead of theta; returns (round, message).

        reward is either the values, one per probe point in the order of probe_points(spec), or any callable
        that takes that (points, dims) array of coordinates and returns them: a neural network, a reward on
        other features, a lookup table. The server fuses it in reward space with the other clients (theta
        clients evaluated as Phi theta) when the task's fusion method takes rewards (mean, normalized-mean,
        barycenter, debiased, reward-median, reward-trimmed-mean) and refuses it otherwise. task is the
        get_task() dict, if already fetched.
        """
        task = task or self.get_task(task_id)
        points = probe_points(task["spec"])
        values = reward(points) if callable(reward) else reward
        values = np.asarray(values, dtype=np.float64).ravel()
        if len(values) != len(points):
            raise FedirlError(f"the reward has {len(values)} values, task {task_id}'s probe has {len(points)} points")
        if not np.all(np.isfinite(values)):
            bad = int(np.flatnonzero(~np.isfinite(values))[0])
            raise FedirlError(f"reward[{bad}] = {values[bad]} (point {points[bad].tolist()}): every value must be finite")
        rnd = round or task["current_round"]
        res = self.stub.Submit(self.pb.SubmitRequest(task_id=task_id, round=rnd, client_id=self.client_id,
                                                     reward=values.tolist()),
                               metadata=self.md, timeout=30)
        return rnd, res.message

    def fetch_fused(self, task_id, round, timeout=600):
        """Waits for the round's fusion and returns the fused result as a dict (theta, method, clients, ...)."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise FedirlError(f"gave up waiting for the fusion of task {task_id} round {round}")
            r = self.stub.GetFused(self.pb.GetFusedRequest(task_id=task_id, round=round, client_id=self.client_id,
                                                           wait_ms=int(min(10, left) * 1000)),
                                   metadata=self.md, timeout=min(10, left) + 5)
            if r.ready:
                f = r.result
                return {"task_id": f.task_id, "round": f.round, "theta": list(f.theta), "method": f.method,
                        "clients": list(f.clients), "weights": list(f.weights),
                        "marginal_error": f.marginal_error, "trigger": f.trigger,
                        "outlier_scores": list(f.outlier_scores),
                        # With reward submissions: the fused reward on the probe points (theta is its least
                        # squares fit on the task's Phi) and the clients that sent rewards.
                        "reward": list(f.reward), "reward_clients": list(f.reward_clients),
                        # A joint task's round: the trial evaluated, the sum's value and gradient norm there,
                        # the next round's trial (empty once done) and why the rounds ended.
                        "joint": _joint_round(f.joint) if f.HasField("joint") else None}

    def submit_eval(self, task_id, round, trial, value, grad, hess=None, update=None, demo_count=0):
        """Submits this client's answer to a joint task's round: its objective's value and gradient (and, unless
        the task takes local updates, Hessian, d x d) at the round's trial theta, or with update fedavg/fedprox
        the theta its local steps reached as update; returns the server's message."""
        trial = np.asarray(trial, dtype=np.float64).ravel()
        d = len(trial)
        grad = np.asarray(grad, dtype=np.float64).ravel()
        hess = None if hess is None else np.asarray(hess, dtype=np.float64).ravel()
        update = None if update is None else np.asarray(update, dtype=np.float64).ravel()
        if len(grad) != d or (hess is not None and len(hess) != d * d) or (update is not None and len(update) != d):
            raise FedirlError(f"a joint evaluation at a {d}-component theta wants a {d}-entry gradient, a {d}x{d} "
                              f"Hessian or a {d}-component update")
        parts = [trial, [float(value)], grad] + [x for x in (hess, update) if x is not None]
        if not all(np.all(np.isfinite(x)) for x in parts):
            raise FedirlError("the joint evaluation holds non-finite values")
        ev = self.pb.Eval(value=float(value), grad=grad.tolist(), hess=[] if hess is None else hess.tolist())
        res = self.stub.Submit(self.pb.SubmitRequest(task_id=task_id, round=int(round), client_id=self.client_id,
                                                     theta=trial.tolist(), demo_count=int(demo_count), eval=ev,
                                                     update=[] if update is None else update.tolist()),
                               metadata=self.md, timeout=30)
        return res.message

    def run_joint(self, task_id, mdp, demos, features=None, solver="newton", timeout=600, log=None):
        """Answers every round of a joint task (fusion method joint) until the server's iteration ends, as
        `fedirl client` does: each round it evaluates its objective at the server's trial theta on its own MDP
        and demonstrations (fedirl.joint_eval: `fedirl client eval`, the Go client's own code), submits it,
        waits for the round to close and continues at the next trial. Returns {"final": the last fused result
        (its theta the fused theta, its joint the reason and steps), "rounds": [{"round", "eval", "message",
        "fused"}, ...]}.

        mdp and demos as for fedirl.irl (paths, a JSON spec dict, a LatticeMDP with features=). A task that
        requires differential privacy is refused: this client adds no noise (run `fedirl client` with its
        --dp-* flags, which clips, noises and records each round's evaluation). timeout bounds the wait for
        each round's fusion, in seconds; log, if given, is called with one line per round.
        """
        import grpc
        from .api import joint_eval
        task = self.get_task(task_id)
        spec = task["spec"]
        if not task["joint"]:
            raise FedirlError(f"task {task_id} fuses each client's theta once (fusion {spec['fusion'].get('method')!r}), "
                              f"it runs no joint rounds: learn theta (run_irl) and submit it")
        if task["privacy"] is not None:
            raise FedirlError(f"task {task_id} requires differential privacy ({task['privacy']}) and this Python client "
                              f"adds no noise to its evaluations: answer its rounds with `fedirl client --dp-epsilon "
                              f"... --dp-delta ...`, which clips, noises and records each one")
        say = log or (lambda line: None)
        rnd, trial, done = task["current_round"], task["trial"], task["done"]
        rounds = []
        while True:
            entry = {"round": rnd, "eval": None, "message": None}
            if not done:
                if len(trial) != spec["theta_dim"]:
                    raise FedirlError(f"task {task_id} round {rnd}: the server sent a trial theta of {len(trial)} "
                                      f"components, the task has {spec['theta_dim']}")
                ev = joint_eval(spec, mdp, demos, trial, features=features, solver=solver)
                entry["eval"] = ev
                try:
                    entry["message"] = self.submit_eval(task_id, rnd, trial, ev["value"], ev["grad"], ev.get("hess"),
                                                        ev.get("update"), ev["demo_count"])
                    say(f"round {rnd}: submitted evaluation ({entry['message']})")
                except grpc.RpcError as e:
                    if e.code() != grpc.StatusCode.FAILED_PRECONDITION:
                        raise
                    say(f"round {rnd}: evaluation not taken: {e.details()}")  # the round closed without it
            fused = self.fetch_fused(task_id, rnd, timeout=timeout)
            entry["fused"] = fused
            rounds.append(entry)
            j = fused["joint"]
            if j is None:
                raise FedirlError(f"task {task_id} round {rnd}: the server's result is no joint round")
            if done or j["done"]:
                say(f"round {rnd}: joint rounds ended ({j['reason']}) after {j['steps']} steps, "
                    f"|grad F| {j['grad_norm']:.3g}")
                return {"final": fused, "rounds": rounds}
            say(f"round {rnd}: F {j['value']:.12g}, |grad F| {j['grad_norm']:.3g}")
            rnd, trial = rnd + 1, j["next"]


def _joint_round(j):
    return {"trial": list(j.trial), "demo_counts": list(j.demo_counts), "value": j.value, "grad_norm": j.grad_norm,
            "next": list(j.next), "done": j.done, "reason": j.reason, "rounds": j.rounds, "steps": j.steps}


def probe_points(spec):
    """The coordinates of a task's probe support, shape (points, dims), in the order a reward submission lists
    its values: a "lattice" task's state-action pairs (state coordinates then action coordinates, row s*A + a,
    as LatticeTask.pair_points); a "gridworld" task's (row, col, action) for cell row*size + col and action
    0..3. spec is get_task()["spec"]."""
    family, probe = spec["env_family"], spec["probe"]
    if family == "lattice":
        from .lattice import LatticeTask
        return LatticeTask.from_probe(probe).pair_points()
    if family == "gridworld":
        n = int(probe["size"])
        rows, cols, acts = np.meshgrid(np.arange(n), np.arange(n), np.arange(4), indexing="ij")
        return np.stack([rows.ravel(), cols.ravel(), acts.ravel()], axis=1).astype(np.float64)
    raise FedirlError(f"task {spec.get('id')!r} is of family {family!r}: probe_points knows the lattice and gridworld "
                      f"families")


# The task's irl section (irl.Config JSON) as `fedirl irl` flags; zero means the default.
_IRL_FLAGS = {"learning_rate": "--lr", "l2": "--l2", "temperature": "--temperature", "max_iter": "--iters",
              "grad_tol": "--grad-tol", "optimizer": "--optimizer"}


def irl_flags(irl):
    """`fedirl irl` flags for a task's irl section; refuses settings the command cannot take."""
    args = []
    for key, value in sorted((irl or {}).items()):
        if key in _IRL_FLAGS:
            if value not in (0, "", None):
                args += [_IRL_FLAGS[key], str(value)]
        elif key == "init_from_mdp":
            if value:
                args.append("--init-from-mdp")
        elif value not in (0, "", None, False):
            raise FedirlError(f"irl.{key} = {value!r}: `fedirl irl` has no flag for it")
    return args


def fedirl_binary():
    """The fedirl command: $FEDIRL_BIN, else the binary installed with the package, else `fedirl` on PATH
    (fedirl.api.binary)."""
    from .api import binary
    return binary()


def run_irl(spec_path, demos_path, irl=None, theta0=None, fedirl=None, out_path=None):
    """Runs `fedirl irl` on a client's MDP spec and demonstrations with a task's irl settings and returns
    its output JSON (theta, iterations, grad_norm, ...) as a dict."""
    cmd = [fedirl or fedirl_binary(), "irl", "--spec", spec_path, "--demos", demos_path] + irl_flags(irl)
    tmp = None
    if theta0 is not None:
        tmp = tempfile.NamedTemporaryFile("w", suffix=".json", delete=False)
        json.dump([float(x) for x in theta0], tmp)
        tmp.close()
        cmd += ["--theta0", tmp.name]
    cmd += ["--out", out_path or "-"]
    try:
        p = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        if tmp:
            os.unlink(tmp.name)
    if p.returncode != 0:
        raise FedirlError(f"{' '.join(cmd[:2])} failed: {p.stderr.strip()}")
    if out_path:
        with open(out_path, encoding="utf-8") as f:
            return json.load(f)
    return json.loads(p.stdout)
