"""Compiled loop bodies: the plans `_foreach` runs each step with (mixnet/ops/control_flow.py).

A foreach body is a Symbol. For one set of step input shapes and dtypes, one device and one training mode it is
compiled once, with the machinery hybridized blocks use (mixnet/compiler, run by gluon/cached_op.py's plans):
CSE, epilogue folding, elementwise chains fused into generated kernels, straight-line Python calling the registry
kernels. Two plans, each made at
its first use:

* `inference`: the body's forward alone, with planned buffers for its intermediates (static_alloc; the step's
  outputs are never planned, so they may be carried to the next step);
* `training`: graph-mode autodiff of the body w.r.t. every floating-point input (data step, states and the
  closed-over values), split into a forward that also returns the values its backward reads ("saved") and that
  backward, reading the saved values and the gradients of the step's outputs. `_foreach` keeps each step's saved
  values, and its backward runs the compiled backward once per step in reverse: no op-by-op tape recording.

Plans are kept per body (weakly, by the body's first output node) and per signature, so every call of a
hybridized block, and every executor run of an mx.sym graph, reuses them.
"""
import dataclasses
import threading
import weakref

import numpy as np

from ..codegen import backend
from . import infer
from .passes import cse
from .typed import with_types
from ..compiler import Options, typed_graph
from ..gluon.cached_op import InferencePlan, TrainingPlan

__all__ = ["BodyPlan", "body_plan"]

_PLANS = weakref.WeakKeyDictionary()      # body's first output node -> {signature: BodyPlan}
_LOCK = threading.Lock()


class BodyPlan:
    """A body compiled for one signature. names: the body's inputs in the order `run` takes them."""

    def __init__(self, body, names, shapes, dtypes, ctx, is_train):
        self.body, self.names, self.ctx, self.is_train = body, list(names), ctx, is_train
        # CSE'd and typed once, for both plans: the training plan differentiates the CSE'd body, so its forward
        # part is not CSE'd again. The types are those the foreach node's inference found for the body, when it
        # had these inputs (the usual case: the traced graph was typed just before), else the body is typed here.
        types = infer.subgraph_types(body, shapes, dtypes)
        self.graph = typed_graph(cse(body if types is None else with_types(body, *types)), names, shapes, dtypes,
                                 done=("cse",))
        self.out_shapes = [n.types[i][0] for n, i in self.graph.symbol._outputs]
        self.out_dtypes = [n.types[i][1] for n, i in self.graph.symbol._outputs]
        self._options = Options(device=ctx.device_type, fusion=backend.fuses(ctx.device_type))
        self.wrt = [n for n in self.names if np.dtype(dtypes[n]).kind == "f"]
        self._inference = self._training = None
        self._lock = threading.Lock()

    @property
    def inference(self):
        """InferencePlan of the body (outputs only)."""
        if self._inference is None:
            with self._lock:
                if self._inference is None:
                    self._inference = InferencePlan(self.graph, self.ctx,
                                                    dataclasses.replace(self._options, static_alloc=True))
        return self._inference

    @property
    def training(self):
        """TrainingPlan of the body for every floating-point input; its `forward` returns outputs then saved
        values, its `backward` takes the heads named by `head_index` then the saved values."""
        if self._training is None:
            with self._lock:
                if self._training is None:
                    mask = [n in self.wrt for n in self.names]
                    self._training = TrainingPlan(self.graph, mask, self.ctx, self.is_train, self._options)
        return self._training


def body_plan(body, names, shapes, dtypes, ctx, is_train):
    """The BodyPlan of `body` for {input name: shape} / {input name: dtype}, `ctx` and `is_train`."""
    key = (tuple(tuple(shapes[n]) for n in names), tuple(np.dtype(dtypes[n]).str for n in names),
           ctx.device_type, ctx.device_id, bool(is_train))
    head = body._outputs[0][0]
    with _LOCK:
        plans = _PLANS.get(head)
        if plans is None:
            plans = _PLANS[head] = {}
        plan = plans.get(key)
        if plan is None:
            plan = plans[key] = BodyPlan(body, names, shapes, dtypes, ctx, is_train)
    return plan
