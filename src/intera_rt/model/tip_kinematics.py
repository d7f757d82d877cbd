"""The KDL chain base → one arm tip with its solvers and preallocated KDL objects: the
pose, error twist, Jacobian and KDL's LMA solver the IK solver iterates with. Not
thread-safe (reused buffers): one per tip per IKSolver. No ROS here.
"""
import numpy as np
import PyKDL as kdl

class TipKinematics:
    """KDL chain base → tip with preallocated KDL objects (one per tip, reused)."""

    def __init__(self, model, tip):
        chain = model.chain(tip)
        n = chain.n
        self.tip = tip
        self.n = n
        self.names = list(chain.joint_names)
        self.chain = chain.chain
        lim = model.limit_arrays(self.names)
        self.lo = lim['lower']
        self.hi = lim['upper']
        self._fk = kdl.ChainFkSolverPos_recursive(self.chain)
        self._jac_solver = kdl.ChainJntToJacSolver(self.chain)
        self._lma = kdl.ChainIkSolverPos_LMA(self.chain, 1e-7, 300, 1e-12)
        self._q = kdl.JntArray(n)
        self._q_out = kdl.JntArray(n)
        self._frame = kdl.Frame()
        self._jac = kdl.Jacobian(n)
        self._jac_get = self._jac.__getitem__
        self._jac_keys = [(r, c) for r in range(6) for c in range(n)]
        self._range = range(n)
        self.eye6 = np.eye(6)

    def _load(self, q):
        arr = self._q
        for i in self._range:
            arr[i] = q[i]

    def frame(self, q):
        self._load(q)
        self._fk.JntToCart(self._q, self._frame)
        return self._frame

    def pose(self, q):
        f = self.frame(q)
        return np.array([f.p[0], f.p[1], f.p[2]]), np.array(f.M.GetQuaternion())

    def error(self, q, target):
        """Twist (dx, dy, dz, rx, ry, rz) from the tip at q to the target, in base; loads q."""
        self._load(q)
        self._fk.JntToCart(self._q, self._frame)
        tw = kdl.diff(self._frame, target)
        v = tw.vel
        r = tw.rot
        return np.array((v[0], v[1], v[2], r[0], r[1], r[2]))

    def jacobian_loaded(self):
        """6×n Jacobian at the q of the last error()/frame() call."""
        self._jac_solver.JntToJac(self._q, self._jac)
        return np.fromiter(map(self._jac_get, self._jac_keys), float, 6 * self.n).reshape(6, self.n)

    def jacobian(self, q):
        self._load(q)
        return self.jacobian_loaded()

    def lma(self, q):
        """KDL's LMA from q (no limits); returns the joint vector it ends at."""
        self._load(q)
        self._lma.CartToJnt(self._q, self._frame_target, self._q_out)
        out = self._q_out
        return np.array([out[i] for i in self._range])

    def set_target(self, target):
        self._frame_target = target
