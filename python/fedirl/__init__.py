"""fedirl's Python side: federate your own problem.

  lattice   the lattice and feature map Phi of a "lattice" task (as the Go server builds them)
  model     a client's lattice MDP from its own simulator (GymnasiumState adapts classic-control envs) or
            logged transitions; value iteration
  client    gRPC client (fetch task, submit theta, fetch the fused theta) and `fedirl irl` runner
  runs      loaders for every file a fedirl run folder writes
  api       the main verbs on NumPy arrays, through the fedirl binary built into the wheel: barycenter, epic,
            irl, fuse, simulate (a whole federation of K clients in one process) and joint_eval (a client's
            value, gradient and Hessian in a joint task's round)

Install: pip install ./python (builds the fedirl Go binary into the wheel: Go is needed at build time; numpy is required; grpcio and grpcio-tools only for client.Client; PyYAML only
for config.yaml; pandas only for Table.to_pandas; gymnasium only if you adapt its environments).
"""
from .lattice import Axis, Lattice, LatticeTask, check_client_features, rbf_matrix, uniform_rbf
from .model import (GymnasiumState, LatticeMDP, mdp_from_transitions, sample_mdp, write_demos_imitation,
                    write_demos_jsonl)
from .runs import Figure, Pickled, Run, Table, load_file, load_run
from .api import FedirlError, barycenter, binary, epic, fuse, irl, joint_eval, simulate

__all__ = ["Axis", "Lattice", "LatticeTask", "check_client_features", "rbf_matrix", "uniform_rbf",
           "GymnasiumState", "LatticeMDP", "mdp_from_transitions", "sample_mdp", "write_demos_imitation",
           "write_demos_jsonl", "Figure", "Pickled", "Run", "Table", "load_file", "load_run", "client",
           "FedirlError", "barycenter", "binary", "epic", "fuse", "irl", "joint_eval", "simulate"]


def __getattr__(name):
    # The gRPC client is imported lazily so that the rest works without grpcio.
    if name == "client":
        import importlib
        return importlib.import_module(".client", __name__)
    raise AttributeError(name)
