"""Real federated training on the CPU under each policy's device assignment
(``placement bench fl-training``).

The accuracy figures of this suite come from training, not from a curve: every job trains a
multinomial logistic regression (numpy) with FedAvg (McMahan et al. 2017: each chosen device
runs ``LOCAL_EPOCHS`` epochs of minibatch SGD from the global model on its own data; the
server averages the models weighted by the devices' sample counts) on scikit-learn's bundled
``digits`` data (1,797 8x8 images, 10 classes; 70 % split over the devices, 30 % held out).
Device ``d`` holds the training images of the classes it holds in the instance (each class's
images split evenly over its holders), so the label skew of the generated fleet is the data's.
Which devices train in which round is each policy's assignment, scored by the checker; the
time axis is the instance's device model (download + training + upload per round), not a
measurement.

Columns per (instance, policy, job): the test accuracy after the job's last round, the
job's completion time under the device model, and the modelled time at which the test
accuracy first reached ``TARGET``. Needs ``scikit-learn`` (for the data set only); the suite
says so and stops when it is absent.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from placement.benchmarks.runner import Rechecker
from placement.benchmarks.tables import markdown_table
from placement.models.fl.check import check, jain_index, participation, round_times_us
from placement.models.fl.generate import generate
from placement.models.fl.greedy import fastest_cover
from placement.models.fl.instance import FlInstance, FlSolution
from placement.models.fl.peers.fedact import fedact
from placement.models.fl.peers.random_selection import random_selection
from placement.models.fl.timing import US_PER_S
from placement.solver import SolveOptions, solve

LOCAL_EPOCHS = 5
BATCH = 16
LEARNING_RATE = 0.5
TARGET = 0.85
"""The test accuracy whose first modelled time the table shows."""
POLICIES = ("ours", "fastest-cover", "fedact", "random")


def cases(config: Any) -> list[dict[str, Any]]:
    """One case per seed (a fleet of 100 devices, 2 jobs, 30 rounds; 6 rounds in --quick)."""
    seeds = (0,) if config.quick else (0, 1, 2)
    rounds = 6 if config.quick else 30
    return [{"seed": s, "devices": 100, "jobs": 2, "rounds": rounds} for s in seeds]


def _digits() -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    try:
        # scikit-learn only for its bundled data set, an optional dependency of this suite
        from sklearn.datasets import load_digits
    except ImportError:
        return None
    x, y = load_digits(return_X_y=True)
    x = np.hstack([x / 16.0, np.ones((len(x), 1))])
    order = np.random.default_rng(12345).permutation(len(x))
    cut = int(0.7 * len(x))
    return x[order[:cut]], y[order[:cut]], x[order[cut:]], y[order[cut:]]


def _local_data(inst: FlInstance, y: np.ndarray, seed: int) -> list[np.ndarray]:
    """The training indices each device holds (its classes' images, split over holders)."""
    rng = np.random.default_rng(seed)
    out: list[list[int]] = [[] for _ in inst.devices]
    for c in range(10):
        holders = [d for d, dev in enumerate(inst.devices) if c in dev.classes]
        idx = rng.permutation(np.flatnonzero(y == c))
        for part, d in zip(np.array_split(idx, max(1, len(holders))), holders, strict=False):
            out[d].extend(int(i) for i in part)
    return [np.array(v, dtype=np.int64) for v in out]


def _softmax(z: np.ndarray) -> np.ndarray:
    z = z - z.max(axis=1, keepdims=True)
    e = np.exp(z)
    return e / e.sum(axis=1, keepdims=True)


def _local_sgd(w: np.ndarray, x: np.ndarray, y: np.ndarray, rng: np.random.Generator):
    w = w.copy()
    onehot = np.eye(10)[y]
    for _ in range(LOCAL_EPOCHS):
        order = rng.permutation(len(x))
        for start in range(0, len(x), BATCH):
            b = order[start : start + BATCH]
            grad = x[b].T @ (_softmax(x[b] @ w) - onehot[b]) / len(b)
            w -= LEARNING_RATE * grad
    return w


def train(
    inst: FlInstance, solution: FlSolution, j: int, data: tuple, local: list, seed: int
) -> tuple[float, float | None]:
    """FedAvg of job ``j`` under ``solution``: the final test accuracy and the modelled time
    (s) at which it first reached :data:`TARGET` (None: never)."""
    xtr, ytr, xte, yte = data
    rng = np.random.default_rng(seed + 7 * j)
    w = np.zeros((xtr.shape[1], 10))
    clock = 0.0
    reached = None
    per = round_times_us(inst, solution)
    acc = 0.0
    for r in range(inst.job_rounds(j)):
        models, weights = [], []
        for d in solution.assign[r][j]:
            idx = local[d]
            if len(idx):
                models.append(_local_sgd(w, xtr[idx], ytr[idx], rng))
                weights.append(len(idx))
        if models:
            w = np.average(np.stack(models), axis=0, weights=np.asarray(weights, dtype=float))
        clock += per[r][j] / US_PER_S
        acc = float((np.argmax(xte @ w, axis=1) == yte).mean())
        if reached is None and acc >= TARGET:
            reached = clock
    return acc, reached


def run(case: dict[str, Any], config: Any) -> list[dict[str, Any]]:
    """Every policy's assignment on the case's fleet, then FedAvg per job under each."""
    data = _digits()
    if data is None:
        return [
            {
                "seed": case["seed"],
                "policy": "-",
                "note": "scikit-learn not installed",
                "invalid": 0,
            }
        ]
    inst = generate(
        case["devices"],
        case["jobs"],
        rounds=case["rounds"],
        seed=case["seed"],
        min_k=5,
        max_k=10,
        participation_slack=2.0,
    )
    local = _local_data(inst, data[1], case["seed"])
    checker = Rechecker("fl")
    plans: dict[str, FlSolution | None] = {}
    result = solve(inst, SolveOptions(time_limit_s=config.time_limit_s, threads=2))
    checker.dropped(result.rejected_candidates)
    plans["ours"] = result.solution
    plans["fastest-cover"] = fastest_cover(inst)
    plans["fedact"] = fedact(inst)
    plans["random"] = random_selection(inst, seed=case["seed"])
    rows = []
    for policy, solution in plans.items():
        before = checker.invalid
        # Ours is re-checked and counted (a rejection is a bug); the others are scored only.
        if solution is None:
            feasible = False
        elif policy == "ours":
            feasible = checker(inst, solution).feasible
        else:
            feasible = check(inst, solution).feasible
        for j, job in enumerate(inst.jobs):
            started = time.monotonic()
            acc, reached = (
                (0.0, None)
                if solution is None
                else train(inst, solution, j, data, local, case["seed"])
            )
            per = round_times_us(inst, solution) if solution is not None else [[0]]
            rows.append(
                {
                    "seed": case["seed"],
                    "policy": policy,
                    "job": job.name,
                    "rounds": inst.job_rounds(j),
                    "devices_per_round": job.devices_per_round,
                    "feasible": int(bool(feasible)),
                    "test_accuracy": round(acc, 4),
                    "jct_s": round(sum(row[j] for row in per) / US_PER_S, 2),
                    "time_to_target_s": "" if reached is None else round(reached, 2),
                    "jain": round(jain_index(participation(inst, solution)), 4)
                    if solution is not None
                    else "",
                    "train_s": round(time.monotonic() - started, 2),
                    "note": "",
                    "invalid": checker.invalid - before,
                }
            )
    return rows


def report(rows: list[dict[str, Any]], config: Any) -> str:
    """Per policy: mean test accuracy, mean JCT, mean time to the target, over jobs and
    seeds; then every row."""
    if rows and rows[0].get("policy") == "-":
        return "Not run: scikit-learn (for the digits data set) is not installed."
    lines = [
        "Accuracy: **measured** by training (FedAvg of a numpy logistic regression on "
        "scikit-learn's digits, label-skewed over the fleet's devices as the instance says). "
        "Times: the instance's **device model** (download + training + upload), not measured. "
        f"`time to {TARGET:.0%}`: the modelled time at which the job's test accuracy first "
        "reached it (mean over the jobs that reached it; `n` of how many).",
        "",
    ]
    body = []
    for policy in POLICIES:
        mine = [r for r in rows if r["policy"] == policy]
        if not mine:
            continue
        hit = [float(r["time_to_target_s"]) for r in mine if r["time_to_target_s"] != ""]
        body.append(
            [
                policy,
                len(mine),
                f"{np.mean([float(r['test_accuracy']) for r in mine]):.4f}",
                f"{np.mean([float(r['jct_s']) for r in mine]):.1f}",
                f"{np.mean(hit):.1f} (n={len(hit)})" if hit else f"- (n=0 of {len(mine)})",
                f"{np.mean([float(r['jain']) for r in mine]):.3f}",
                sum(int(r["feasible"]) for r in mine),
            ]
        )
    lines += markdown_table(
        [
            "policy",
            "jobs x seeds",
            "mean test accuracy",
            "mean JCT s",
            f"time to {TARGET:.0%} s",
            "Jain",
            "feasible",
        ],
        body,
    )
    return "\n".join(lines)
