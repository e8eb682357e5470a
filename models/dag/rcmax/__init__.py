"""The R||Cmax search: independent tasks on unrelated one-slot machines, makespan objective.

The grid-scheduling case of the dag family where only machine loads matter
(:func:`~placement.models.dag.greedy.pure_assignment` with the makespan objective): give each
task a machine so that the largest load is smallest. The Braun et al. ETC instances are of
this kind.

One concept per module:

- :mod:`.loads`: :class:`Loads`, an assignment with its machine loads, updated in place;
- :mod:`.descent`: :func:`descend`, a variable-neighbourhood descent with moves, swaps and
  2-move ejection chains (a task leaves a machine and pushes one task of its new machine on
  to a third), each neighbourhood evaluated with numpy over every candidate at once. The
  objective is lexicographic: (makespan, number of critical machines, sum of squared
  loads). A step leaves every machine it touches below the makespan and either relieves a
  critical machine or lowers the sum of squares (less total work, better balance);
- :mod:`.critical`: :func:`~.critical.relieve`, a descent on the critical machine only (its
  tasks against every machine and task: about a millisecond a step at 4,096 x 128, the
  search's first step), and :func:`~.critical.balance`, which levels the LP's rounding with
  least extra weighted work;
- :mod:`.lp`: the assignment model, its LP relaxation (a lower bound; within 0.06-0.53 % of
  the best known on Braun) with an assignment rounded from it (:func:`lp_rounding`), the
  same LP by column generation (:func:`~.lp.priced_lp`) with its Lagrangian bound, valid for
  the whole matrix (:func:`~.lp.lagrangian_bound`), and :func:`lower_bound_from_lp`;
- :mod:`.parametric`: Lagrangian machine weights by mirror ascent (:func:`~.parametric.ascend`,
  the LP's value within 0.04 % in about a second at 4,096 x 128) and the parametric
  (Lenstra-Shmoys-Tardos) bound: no pair longer than the makespan
  (:func:`~.parametric.parametric_bound`);
- :mod:`.construct`: starts priced by those weights (each task on its cheapest weighted
  machine, or a regret greedy under a load cap), levelled by the weighted critical-machine
  descent; the search restarts from them under noise on the weights;
- :mod:`.lns`: :class:`MachineLns`, large-neighbourhood steps. The most loaded machine and
  a few others (drawn from a seeded generator) get their tasks re-assigned among themselves
  by an exact MILP (:func:`reoptimise`, HiGHS, warm-started, never worse), then a descent
  around them. Subsets proved to hold nothing better are not retried while their loads stay
  the same; when most of them are spent, the subsets grow by one machine;
- :mod:`.exchange`: HiGHS on the whole assignment model in a background thread, exchanging
  assignments with the search;
- :mod:`.search`: :func:`solve_assignment`, the exact phase. HiGHS on the whole model
  (:mod:`.exchange`) and :class:`MachineLns` in the caller's thread, side by side until the
  deadline, each adopting the other's better assignments. HiGHS is good at the global
  structure (its LP-guided heuristics reach about 0.2 % of the best known); the subset steps
  polish what it finds (to within 0.1 %), and their results go back to HiGHS as user
  solutions, which tighten its pruning. :func:`applicable` tells which instances it is for;
- :mod:`.encoding`: the search as an exact encoding of the dag family, and the ``auto``
  routing (:func:`auto_backend`).

Every assignment leaves through the caller's ``ctx.report`` (the portfolio's checker). With
``deterministic`` the search runs on a work budget (steps and MILP nodes per step, never
the clock) and HiGHS on the whole model runs after it, so the search's part is
reproducible; the full MILP, like every MILP backend here, stops on wall time. Every HiGHS
model is a :class:`~placement.solver.backends.highs.HighsModel`.

References: Braun et al., JPDC 61(6) 2001 (the instances); Fanjul-Peyro, Ruiz, EJOR 207(1)
2010 (local search for unrelated parallel machines); Ahuja, Orlin, Sharma, Math. Prog. 91
2001 (ejection chains and very large-scale neighbourhoods); Danna, Rothberg, Le Pape, Math.
Prog. 102 2005 (MILP-based neighbourhoods); Lenstra, Shmoys, Tardos, Math. Prog. 46 1990
(the parametric bound); Martello, Toth 1981 (regret greedy for generalised assignment).
"""

from placement.models.dag.rcmax.descent import descend
from placement.models.dag.rcmax.encoding import RcmaxEncoding, auto_backend
from placement.models.dag.rcmax.lns import MachineLns, MilpStep, improve, reoptimise
from placement.models.dag.rcmax.loads import REL_EPS, Loads
from placement.models.dag.rcmax.lp import lower_bound_from_lp, lp_rounding
from placement.models.dag.rcmax.search import applicable, solve_assignment

__all__ = [
    "REL_EPS",
    "Loads",
    "MachineLns",
    "MilpStep",
    "RcmaxEncoding",
    "applicable",
    "auto_backend",
    "descend",
    "improve",
    "lower_bound_from_lp",
    "lp_rounding",
    "reoptimise",
    "solve_assignment",
]
