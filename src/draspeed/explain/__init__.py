"""Why a pod's claims fit on a node, or why not: :func:`explain`.

The verdict is the allocator's own (``Allocator.allocate``), so it is never a guess.
Around it, for every request (and every ``firstAvailable`` alternative) the
explanation counts the node's devices stage by stage -- on the node, matching the
class selectors, matching the request's selectors, not in use, with enough shared
counters left, with enough consumable capacity left, not tainted -- next to what the
request needs. Each stage keeps the devices that passed the ones before it, so the
first stage that drops below the need is where the request runs out.

When every request has enough candidates on its own and the claims still do not
fit, the search itself was blocked by what ties requests together. Those blockers
are found exactly, by asking the allocator again: once per constraint with that
constraint dropped, and with a pool's counter sets made large enough for anything;
whatever makes the claims fit is reported, with the counters' remaining and needed
amounts taken from the solution found.
"""

from draspeed.explain.explainer import explain
from draspeed.explain.results import STAGES, Blocker, Explanation, Funnel, PoolNote

__all__ = ["STAGES", "Blocker", "Explanation", "Funnel", "PoolNote", "explain"]
