"""Small numeric helpers for the 1 kHz path, where numpy's Python-level wrappers cost more
than the arithmetic on 7 or 8 joints. Tests on any/all use np.count_nonzero (a C call)
rather than ndarray.any() (~6× slower on such arrays)."""
try:
    from numpy._core.umath import clip                 # numpy ≥ 2
except ImportError:                                    # numpy 1.x
    from numpy.core.umath import clip                  # the ufunc: np.clip's checks cost 3× more

__all__ = ['clip']
