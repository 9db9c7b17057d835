#!/usr/bin/env python3
"""A minimal Python client of a fedirl federation.

It learns nothing itself: it submits a reward parameter vector theta_i read
from a NumPy .npy file (learned however you like, e.g. with imitation's
MaxEnt IRL on the task's features) and waits for the server's fused theta.
The gRPC stubs are generated at run time from proto/federation.proto with
grpc_tools (nothing generated is committed).

Needs grpcio, grpcio-tools and numpy (Debian: python3-grpcio,
python3-grpc-tools, python3-numpy).

  python3 examples/python/fedirl_client.py --server 127.0.0.1:7443 --insecure \\
      --task grid5-py --id carol --token-file quickstart/tokens-py.json \\
      --theta quickstart/carol_theta.npy --out quickstart/carol-fused.json

A refusal by the server (unknown task, wrong token, a theta of the wrong size,
...) is printed as one line naming the call and the server's reason.
"""
import argparse
import importlib
import json
import os
import shutil
import sys
import tempfile
import time

# gRPC's C core logs a failed TLS handshake on stderr by itself ("E1201 … ssl_transport_security.cc … Handshake
# failed"); this client says what failed and how to fix it instead (call()), so the core stays quiet.
os.environ.setdefault("GRPC_VERBOSITY", "NONE")
import grpc  # noqa: E402
import numpy as np
from grpc_tools import protoc

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_PROTO_DIR = os.path.join(HERE, "..", "..", "proto")


def load_stubs(proto_dir):
    """Generates federation_pb2 and federation_pb2_grpc into a temporary folder,
    imports them and removes the folder (the imported modules stay loaded)."""
    proto = os.path.join(proto_dir, "federation.proto")
    if not os.path.exists(proto):
        sys.exit(f"fedirl_client: {proto} not found (set --proto-dir)")
    out = tempfile.mkdtemp(prefix="fedirl-stubs-")
    try:
        rc = protoc.main(["grpc_tools.protoc", f"-I{proto_dir}", f"--python_out={out}", f"--grpc_python_out={out}", proto])
        if rc != 0:
            sys.exit(f"fedirl_client: grpc_tools.protoc failed with {rc} on {proto}")
        sys.path.insert(0, out)
        try:
            return importlib.import_module("federation_pb2"), importlib.import_module("federation_pb2_grpc")
        finally:
            sys.path.remove(out)
    finally:
        shutil.rmtree(out, ignore_errors=True)


# Connection failures no retry fixes, by the words of gRPC's C core and OpenSSL: (needles, with TLS?, fix).
FIXES = [
    (("WRONG_VERSION_NUMBER", "wrong version number", "first record does not look like a TLS handshake"), True,
     "the server speaks plaintext (it was started with --insecure): pass --insecure (loopback only), or restart "
     "the server with --tls-cert and --tls-key"),
    (("CERTIFICATE_VERIFY_FAILED", "certificate verify failed"), True,
     "pass --ca with the PEM of the CA that signed the server's certificate"),
    (("Socket closed", "Connection reset by peer"), False,
     "the server may serve TLS: drop --insecure and pass --ca (a server that is down gives the same error)"),
]
TLS = True  # set by main()


def call(what, server, fn, *args, **kwargs):
    """Calls a stub method; a gRPC error ends the program with one line
    (the call, the status code and the server's reason, and the fix when one is known), not a traceback."""
    try:
        return fn(*args, **kwargs)
    except grpc.RpcError as e:
        code = e.code()
        reason = e.details() or ""
        if code == grpc.StatusCode.UNAVAILABLE:
            fix = next((f for needles, tls, f in FIXES if tls == TLS and any(n in reason for n in needles)), None)
            sys.exit(f"fedirl_client: {what}: cannot reach the server at {server} ({reason})"
                     + (f"; fix: {fix}" if fix else ""))
        if code == grpc.StatusCode.DEADLINE_EXCEEDED:
            sys.exit(f"fedirl_client: {what}: no answer from {server} in time")
        sys.exit(f"fedirl_client: {what} refused by {server}: {code.name.lower().replace('_', ' ')}: {reason}")


def read_token(path, client_id):
    """A file holding the bare token, or the tokens JSON of 'fedirl server task create'."""
    if not path:
        token = os.environ.get("FEDIRL_TOKEN", "")
        if not token:
            sys.exit("fedirl_client: give --token-file or set FEDIRL_TOKEN")
        return token
    with open(path, encoding="utf-8") as f:
        text = f.read().strip()
    if text.startswith("{"):
        tokens = json.loads(text)
        if client_id not in tokens:
            sys.exit(f"fedirl_client: {path} has no token for client {client_id!r} (it has {', '.join(sorted(tokens))}): "
                     "create a task that admits this client (fedirl server task create --clients ...)")
        return tokens[client_id]
    return text


def is_loopback(addr):
    host = addr.rsplit(":", 1)[0].strip("[]")
    return host in ("localhost", "::1") or host.startswith("127.")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--server", default="127.0.0.1:7443", help="server address host:port")
    ap.add_argument("--insecure", action="store_true", help="plaintext gRPC (loopback servers only)")
    ap.add_argument("--ca", help="PEM CA bundle that signed the server certificate (TLS)")
    ap.add_argument("--task", required=True, help="task id")
    ap.add_argument("--id", required=True, help="this client's id")
    ap.add_argument("--token-file", help="file with this client's token, or the tokens JSON (default: $FEDIRL_TOKEN)")
    ap.add_argument("--theta", required=True, help=".npy file with theta_i (theta_dim floats)")
    ap.add_argument("--demo-count", type=int, default=0, help="demonstrations behind theta_i (for 'demos' weighting)")
    ap.add_argument("--out", default="-", help="JSON output file (- for stdout)")
    ap.add_argument("--timeout", type=float, default=600, help="give up after this many seconds")
    ap.add_argument("--proto-dir", default=DEFAULT_PROTO_DIR, help="folder holding federation.proto")
    args = ap.parse_args()

    pb, pb_grpc = load_stubs(args.proto_dir)
    global TLS
    TLS = not args.insecure
    if args.insecure:
        if not is_loopback(args.server):
            sys.exit(f"fedirl_client: --insecure is only allowed to loopback addresses, not {args.server}")
        channel = grpc.insecure_channel(args.server)
    else:
        roots = None
        if args.ca:
            try:
                with open(args.ca, "rb") as fh:
                    roots = fh.read()
            except OSError as e:
                sys.exit(f"fedirl_client: --ca: {e}")
        channel = grpc.secure_channel(args.server, grpc.ssl_channel_credentials(root_certificates=roots))
    stub = pb_grpc.FederationStub(channel)
    md = [("authorization", "Bearer " + read_token(args.token_file, args.id))]

    try:
        theta = np.load(args.theta).astype(np.float64).ravel()
    except (OSError, ValueError) as e:
        sys.exit(f"fedirl_client: --theta {args.theta}: {e}")
    if not np.all(np.isfinite(theta)):
        sys.exit(f"fedirl_client: {args.theta} holds non-finite values")
    task = call(f"GetTask {args.task}", args.server, stub.GetTask,
                pb.GetTaskRequest(task_id=args.task, client_id=args.id), metadata=md, timeout=30)
    if len(theta) != task.spec.theta_dim:
        sys.exit(f"fedirl_client: {args.theta} has {len(theta)} values, task {args.task} wants theta_dim {task.spec.theta_dim}")
    rnd = task.current_round
    res = call(f"Submit to {args.task} round {rnd}", args.server, stub.Submit,
               pb.SubmitRequest(task_id=args.task, round=rnd, client_id=args.id, theta=theta.tolist(),
                                demo_count=args.demo_count), metadata=md, timeout=30)
    print(f"fedirl_client {args.id}: round {rnd}: {res.message}", file=sys.stderr)

    deadline = time.monotonic() + args.timeout
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            sys.exit(f"fedirl_client: gave up waiting for the fusion of task {args.task} round {rnd}")
        r = call(f"GetFused {args.task} round {rnd}", args.server, stub.GetFused,
                 pb.GetFusedRequest(task_id=args.task, round=rnd, client_id=args.id, wait_ms=int(min(10, left) * 1000)),
                 metadata=md, timeout=min(10, left) + 5)
        if r.ready:
            break
        waiting = ", ".join(r.waiting_for) + (f" and {r.waiting_for_more} more" if r.waiting_for_more else "")
        print(f"fedirl_client {args.id}: waiting for fusion ({r.submissions}/{r.quorum} submitted; waiting for {waiting})",
              file=sys.stderr)
    f = r.result
    out = {"task_id": f.task_id, "round": f.round, "client_id": args.id, "local_theta": theta.tolist(),
           "theta": list(f.theta), "method": f.method, "clients": list(f.clients), "weights": list(f.weights),
           "marginal_error": f.marginal_error, "trigger": f.trigger}
    text = json.dumps(out, indent=2) + "\n"
    if args.out == "-":
        sys.stdout.write(text)
    else:
        with open(args.out, "w", encoding="utf-8") as fh:
            fh.write(text)
    print(f"fedirl_client {args.id}: fused theta from {len(f.clients)} clients by {f.method}", file=sys.stderr)


if __name__ == "__main__":
    main()
