"""scipy.special ufuncs on Tensors: `scipy.special.gammaln(t)` runs vecjac's op.

SciPy's special functions are NumPy ufuncs, so they reach Tensor.__array_ufunc__
(vecjac/_src/numpy/dispatch.py), which asks `scipy_ufunc` here for the vecjac function that
takes the ufunc's inputs. They are matched by identity with the objects of scipy.special,
and only once something else has imported SciPy (vecjac does not import it: it costs
about 0.1 s). Functions of scipy.special that are not ufuncs (polygamma, logsumexp,
multigammaln) never reach NumPy's protocols: use vj.scipy.special.<name>.
"""
import sys

from vecjac._src.numpy.tables import _targets
from vecjac._src.ops.elementwise import arithmetic as _m
from vecjac._src.ops.elementwise import bessel as _bessel
from vecjac._src.ops.elementwise import scipy_special as _sp
from vecjac._src.ops.elementwise import special as _s
from vecjac._src.ops.nn import activations as _nn

_SCIPY_SPECIAL = {
    "expit": (_nn.sigmoid, "vj.sigmoid"), "erf": (_s.erf, "vj.erf"),
    "erfc": (_s.erfc, "vj.erfc"), "xlogy": (_s.xlogy, "vj.xlogy"),
    "log_expit": (lambda x: _m.negative(_nn.softplus(_m.negative(x))),
                  "-vj.nn.softplus(-x)"),
}
_SCIPY_SPECIAL.update({name: (getattr(_sp, name), f"vj.scipy.special.{name}") for name in (
    "gammaln", "digamma", "psi", "rgamma", "gamma", "gammasgn", "beta", "betaln", "betainc", "gammainc",
    "gammaincc", "erfinv", "erfcinv", "logit", "ndtr", "log_ndtr", "ndtri", "stdtr",
    "xlog1py", "entr")})
_SCIPY_SPECIAL.update({name: (getattr(_bessel, name), f"vj.scipy.special.{name}")
                       for name in _bessel.__all__})
_SCIPY_SPECIAL["yn"] = (_bessel.yv, "vj.scipy.special.yv (the order an integer)")
_SCIPY_SPECIAL["digamma"] = (_sp.digamma, "vj.scipy.special.digamma (= psi)")
_SCIPY_SPECIAL["psi"] = _SCIPY_SPECIAL["digamma"]
for _name, (_fn, _target) in _SCIPY_SPECIAL.items():
    _targets[f"scipy.special.{_name}"] = _target

_by_identity = {}  # id(scipy.special ufunc) -> vecjac function, filled at the first lookup


def scipy_ufunc(ufunc):
    """The vecjac function for a scipy.special ufunc, or None (not one of ours)."""
    if not _by_identity:
        special = sys.modules.get("scipy.special")
        if special is None:
            return None
        for name, (fn, _) in _SCIPY_SPECIAL.items():
            uf = getattr(special, name, None)
            if uf is not None:
                _by_identity[id(uf)] = (uf, fn)
    entry = _by_identity.get(id(ufunc))
    return entry[1] if entry is not None and entry[0] is ufunc else None
