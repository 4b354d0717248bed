"""The graph compiler: what turns a traced Symbol into the code a hybridized call runs.

* pipeline.py: the passes in order (`print(PIPELINE)`: cse -> epilogue -> drop_identity_reshapes -> fuse ->
  memory), each a Graph -> Graph function over a typed Symbol, declaring what it needs;
* plan.py: `CompiledPlan` (a graph through the pipeline, compiled to straight-line Python by symbol/compile.py),
  made by `compile_plan`, and `fused_plan` for fusion after an unfused start.

The IR (Node, Symbol, typing, the rewrite helper) and the passes' own code live in mixnet/symbol; Gluon
(gluon/cached_op.py) and compiled loop bodies (symbol/loop.py) ask this package for plans.
"""
from .pipeline import PIPELINE, Graph, Options, Pass, Pipeline  # noqa: F401
from .plan import CompiledPlan, compile_plan, fused_plan, typed_graph  # noqa: F401
