"""Small numeric helpers for the 1 kHz path, where numpy's Python-level wrappers cost more
than the arithmetic on 7 or 8 joints. Tests on any/all use count_nonzero (a C call)
rather than ndarray.any() (~6× slower on such arrays)."""
try:
    from numpy._core.umath import clip                 # numpy ≥ 2
    from numpy._core.multiarray import count_nonzero
except ImportError:                                    # numpy 1.x
    from numpy.core.umath import clip                  # the ufunc: np.clip's checks cost 3× more
    # the C function under np.count_nonzero, whose dispatch costs 3× the count
    from numpy.core.multiarray import count_nonzero

__all__ = ['clip', 'count_nonzero']
