"""`mx.random`: seeding and per-device random state (numpy Generators; cupy's on GPUs). Its samplers
(`mx.random.uniform` & co.) are mx.nd.random's, which sits above this module: mixnet's __init__ puts them here."""
import numpy as np

from .context import Context

_STATES = {}
_BASE_SEED = [None]


def _state(ctx):
    """The Generator of a device, created on first use (from the last seed, or from entropy)."""
    gen = _STATES.get(ctx)
    if gen is None:
        seed = None if _BASE_SEED[0] is None else (_BASE_SEED[0], ctx.device_typeid, ctx.device_id)
        gen = _STATES[ctx] = np.random.default_rng(seed)
    return gen


def _context_of(generator):
    """The Context whose Generator `generator` is, or None. A compiled graph hands its random kernels the
    generator of its own device; numpy arrays do not say which cpu(k) they are on, so a kernel that runs ops on
    them (control flow with random ops in its body) learns the device from the generator it was given."""
    for ctx, gen in list(_STATES.items()):
        if gen is generator:
            return ctx
    return None



def seed(seed_state, ctx="all"):
    """Seeds the random number generators: of every device (ctx='all') or of one."""
    # MXNet passes the seed through a C int: negative seeds work, and seeds equal modulo 2**32 give one stream
    seed_state = int(seed_state) % (1 << 32)
    if ctx == "all":
        _BASE_SEED[0] = seed_state
        _STATES.clear()
        return
    ctx = Context(ctx)
    _STATES[ctx] = np.random.default_rng((seed_state, ctx.device_typeid, ctx.device_id))

