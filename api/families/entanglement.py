"""Command-line hooks of the entanglement family: ``placement generate entanglement``,
``placement import quantum-topology`` and ``placement plot``."""

from __future__ import annotations

import argparse
from typing import Any

from placement.api.argtypes import fraction, non_negative_int, positive_int
from placement.api.extensions import (
    Generator,
    Importer,
    Plotter,
    Suite,
    lazy,
    register,
    suite_functions,
)


def _fidelity_range(text: str) -> tuple[float, float]:
    parts = text.split(",")
    try:
        values = [float(p) for p in parts]
    except ValueError:
        values = []
    if len(values) == 1:
        values = values * 2
    if len(values) != 2 or not (0.25 < values[0] <= values[1] <= 1):
        raise argparse.ArgumentTypeError(
            f"got {text!r}, expected F or LOW,HIGH with 0.25 < LOW <= HIGH <= 1"
        )
    return values[0], values[1]


def _probability(text: str) -> float:
    value = fraction(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a probability in (0, 1]")
    return value


def _positive_number(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = -1.0
    if not value > 0 or value == float("inf"):
        raise argparse.ArgumentTypeError(f"got {text!r}, expected a finite number > 0")
    return value


def _generate_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--nodes", type=positive_int, default=100, metavar="N", help="nodes (default: 100)"
    )
    parser.add_argument(
        "--degree",
        type=_positive_number,
        default=6.0,
        metavar="D",
        help="average degree (default: 6)",
    )
    parser.add_argument(
        "--success",
        type=_probability,
        default=0.6,
        metavar="P",
        help="mean link success (default: 0.6)",
    )
    parser.add_argument(
        "--swap", type=_probability, default=0.9, metavar="Q", help="swap success (default: 0.9)"
    )
    parser.add_argument(
        "--pairs", type=non_negative_int, default=10, metavar="K", help="S-D requests (default: 10)"
    )
    parser.add_argument("--seed", type=int, default=0, metavar="S", help="random seed (default: 0)")
    parser.add_argument(
        "--min-fidelity",
        type=fraction,
        default=0.0,
        metavar="F",
        help="every request's threshold (default: 0)",
    )
    parser.add_argument(
        "--link-fidelity",
        type=_fidelity_range,
        default=(1.0, 1.0),
        metavar="LOW,HIGH",
        help="link fidelities uniform in [LOW, HIGH] (default: 1)",
    )
    parser.add_argument(
        "--candidate-paths",
        type=positive_int,
        default=None,
        metavar="K",
        help="candidate paths per request of the exact models (default: 8)",
    )


def _generate_build(args: argparse.Namespace) -> Any:
    from placement.models.entanglement.generate import generate

    return generate(
        args.nodes,
        args.degree,
        args.success,
        args.swap,
        args.pairs,
        args.seed,
        min_fidelity=args.min_fidelity,
        link_fidelity=args.link_fidelity,
        candidate_paths=args.candidate_paths,
        out=None if args.out == "-" else args.out,
    )


register(
    Generator(
        family="entanglement",
        help="a quantum repeater network and S-D requests (Q-CAST's setup)",
        description=(
            "Generate a seeded entanglement-routing instance in Q-CAST's setup: nodes uniformly "
            "in a 100 x 100 area, Waxman links tuned to an average degree, 10-14 qubits per "
            "node, 3-7 channels per link, link success exp(-alpha x length) tuned to a mean, "
            "one swap probability, random S-D pairs."
        ),
        add_arguments=_generate_arguments,
        build=_generate_build,
    )
)


def _topology_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("topology", metavar="FILE", help="a .gml or .graphml topology")
    parser.add_argument(
        "--qubits", type=non_negative_int, default=12, help="qubits per node (default: 12)"
    )
    parser.add_argument(
        "--channels", type=positive_int, default=5, help="channels per link (default: 5)"
    )
    parser.add_argument(
        "--attenuation-per-km",
        type=float,
        default=0.01,
        metavar="A",
        help="link success exp(-A x km) (default: 0.01)",
    )
    parser.add_argument(
        "--link-fidelity", type=float, default=0.97, metavar="F", help="(default: 0.97)"
    )
    parser.add_argument(
        "--swap", type=_probability, default=0.9, metavar="Q", help="(default: 0.9)"
    )
    parser.add_argument(
        "--pairs", type=non_negative_int, default=10, help="S-D requests (default: 10)"
    )
    parser.add_argument("--seed", type=int, default=0, help="seed of the requests (default: 0)")
    parser.add_argument(
        "--min-fidelity", type=fraction, default=0.0, metavar="F", help="(default: 0)"
    )
    parser.add_argument(
        "--default-length-km",
        type=_positive_number,
        default=None,
        metavar="KM",
        help="length of links whose ends lack Latitude/Longitude (default: such files are refused)",
    )
    parser.add_argument("--name", default=None, help="instance name (default: the file's stem)")


def _topology_build(args: argparse.Namespace) -> Any:
    from placement.models.entanglement.topology import load_topology

    return load_topology(
        args.topology,
        qubits=args.qubits,
        channels=args.channels,
        attenuation_per_km=args.attenuation_per_km,
        link_fidelity=args.link_fidelity,
        swap=args.swap,
        pairs=args.pairs,
        seed=args.seed,
        min_fidelity=args.min_fidelity,
        default_length_km=args.default_length_km,
        name=args.name,
    )


register(
    Importer(
        format="quantum-topology",
        family="entanglement",
        help="a GML / GraphML network topology (Internet Topology Zoo) as a repeater network",
        description=(
            "Read a GML or GraphML topology: nodes become repeaters, edges links whose length "
            "is the haversine distance of the ends' Latitude/Longitude; qubits, channels, "
            "attenuation, fidelity and swap success are options; random S-D requests."
        ),
        add_arguments=_topology_arguments,
        build=_topology_build,
    )
)


register(Plotter("entanglement", lazy("placement.models.entanglement.plot", "draw")))


_BENCH = "placement.models.entanglement.bench"
register(
    Suite(
        name="entanglement-qcast",
        family="entanglement",
        help="Q-CAST's setting: our MILP vs Q-CAST's greedy and REPS-style rounding (default, sweeps over n and p, plot)",
        **suite_functions(_BENCH, "qcast"),
        time_limit_s=10.0,
    )
)
register(
    Suite(
        name="entanglement-topologies",
        family="entanglement",
        help="SURFnet and GEANT with fidelity thresholds: served requests, throughput, max-min fairness, reasons",
        **suite_functions(_BENCH, "topologies"),
        data="quantum/topologies",
        time_limit_s=10.0,
    )
)
