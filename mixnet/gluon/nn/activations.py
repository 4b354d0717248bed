"""gluon.nn activation layers beyond Activation(act_type)."""
from ... import initializer
from ..block import HybridBlock

__all__ = ["LeakyReLU", "PReLU", "ELU", "SELU", "Swish", "GELU"]


class LeakyReLU(HybridBlock):
    """Leaky ReLU: `x` where x >= 0, `alpha * x` elsewhere.

    Parameters
    ----------
    alpha : float
        The slope for negative inputs (>= 0).
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape. Outputs: the same shape.
    """

    def __init__(self, alpha, **kwargs):
        if alpha < 0:
            raise ValueError(f"LeakyReLU: slope coefficient alpha must be >= 0, got {alpha}")
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="leaky", slope=self._alpha, name="fwd")

    def __repr__(self):
        return f"{type(self).__name__}({self._alpha})"


class PReLU(HybridBlock):
    """Parametric ReLU: a leaky ReLU whose negative slope `alpha` is learned (one per channel with in_channels > 1,
    channels on axis 1).

    Parameters
    ----------
    alpha_initializer : Initializer, default Constant(0.25)
        The initializer of alpha.
    in_channels : int, default 1
        The number of slopes: 1 shares one over all channels.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape. Outputs: the same shape.
    """

    def __init__(self, alpha_initializer=initializer.Constant(0.25), in_channels=1, **kwargs):
        super().__init__(**kwargs)
        with self.name_scope():
            self.alpha = self.params.get("alpha", shape=(in_channels,), init=alpha_initializer)

    def hybrid_forward(self, F, x, alpha):
        return F.LeakyReLU(x, gamma=alpha, act_type="prelu", name="fwd")


class ELU(HybridBlock):
    """Exponential linear unit: `x` where x > 0, `alpha * (exp(x) - 1)` elsewhere.

    Parameters
    ----------
    alpha : float, default 1.0
        The scale of the negative part.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape. Outputs: the same shape.
    """

    def __init__(self, alpha=1.0, **kwargs):
        super().__init__(**kwargs)
        self._alpha = alpha

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="elu", slope=self._alpha)


class SELU(HybridBlock):
    """Scaled exponential linear unit (the self-normalizing constants of Klambauer et al.).

    Parameters
    ----------
    prefix : str, optional
        The name prefix of the block's parameters, as every Block takes.
    params : ParameterDict, optional
        Parameters to share, as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape. Outputs: the same shape.
    """

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="selu", name="fwd")


class Swish(HybridBlock):
    """Swish: `x * sigmoid(beta * x)`.

    Parameters
    ----------
    beta : float, default 1.0
        The sigmoid's input scale.
    **kwargs
        `prefix` (the parameters' name prefix) and `params` (a ParameterDict to share), as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape. Outputs: the same shape.
    """

    def __init__(self, beta=1.0, **kwargs):
        super().__init__(**kwargs)
        self._beta = beta

    def hybrid_forward(self, F, x):
        return x * F.sigmoid(self._beta * x, name="fwd")


class GELU(HybridBlock):
    """Gaussian error linear unit: `x * Phi(x)`, Phi the standard normal CDF.

    Parameters
    ----------
    prefix : str, optional
        The name prefix of the block's parameters, as every Block takes.
    params : ParameterDict, optional
        Parameters to share, as every Block takes.

    Notes
    -----
    Inputs: `data` of any shape. Outputs: the same shape.
    """

    def hybrid_forward(self, F, x):
        return F.LeakyReLU(x, act_type="gelu", name="fwd")
