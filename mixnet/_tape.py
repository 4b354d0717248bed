"""The autograd tape: what an op call recorded under `autograd.record()` leaves on its outputs.

It sits below the dispatch door, which records through `record_op`; mixnet/autograd.py walks the tape backward.
"""
import operator

_DATA = operator.attrgetter("_data")
_VERSION = operator.attrgetter("_version")


class Leaf:
    """Marks an array whose gradient the user asked for (attach_grad / mark_variables)."""
    __slots__ = ("grad_req",)
    released = False

    def __init__(self, grad_req):
        self.grad_req = grad_req


class TapeNode:
    """One recorded op application: what backward needs to run the op's gradient rule.

    It keeps its outputs' buffers, not the output NDArrays, so the graph has no reference cycles and is freed as
    soon as the last array using it goes away.
    """
    __slots__ = ("op", "attrs", "inputs", "out_data", "ctx", "versions", "released", "is_train")

    def __init__(self, op, attrs, inputs, outputs, is_train):
        self.op = op
        self.attrs = attrs
        self.is_train = is_train
        self.inputs = inputs
        self.out_data = tuple(map(_DATA, outputs))     # map over C getters: no comprehension frame per record
        self.ctx = outputs[0]._ctx
        self.versions = list(map(_VERSION, inputs))
        self.released = False


def record_op(op, attrs, inputs, outputs, is_train):
    node = TapeNode(op, attrs, inputs, outputs, is_train)
    for i, out in enumerate(outputs):
        out._node = node
        if i:
            out._oidx = i
