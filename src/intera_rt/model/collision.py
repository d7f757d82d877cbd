"""Self-collision model of the robot, from the URDF's collision primitives (spheres,
cylinders, boxes), checked with hpp-fcl through Pinocchio's GeometryModel on the robot's
shared Pinocchio model. No ROS here.

Every pair of shapes is a candidate except (recorded in `CollisionModel.excluded`, keyed by
the pair of link names, with the reason): ``rigid`` (both move with the same joint: their
answer never changes), ``unused`` (a shape on a link the model's user leaves out:
MOTION_CONTROLLER_UNUSED for the motion controller, whose seed 000 says the boxes around the
pedestal's base and the controller box are for external planners; none for the IK/FK
services, which answer any client), ``adjacent`` (links joined by one joint), ``always``
(touching at every one of `samples` seeded configurations: envelopes that overlap by
construction, an SRDF's "Always") and ``default`` (touching at a pose the robot rests in,
neutral or shipping: envelopes too coarse for that pair, an SRDF's "Default").

ShapeModel does the loading and the rigid/unused/adjacent/always selection that this model
and the collision-avoidance model (model.avoidance) share; each decides what to do with the
pairs that touch at the reference poses. Design notes: docs/model.md.
"""
import numpy as np
import pinocchio as pin

from intera_rt.model.pinocchio_model import pinocchio_models
from intera_rt.model.safe_xml import safe_urdf
from intera_rt.robot import ARM_JOINTS, HEAD_JOINTS, HEAD_NAMED_POSES, NAMED_POSES

# The named poses the robot rests in, with the head at its named angle: the reference poses
# for the "default" exclusions.
REFERENCE_POSES = {name: (NAMED_POSES[name], HEAD_NAMED_POSES[name])
                   for name in ('neutral', 'shipping')}
DEFAULT_SAMPLES = 1000
DEFAULT_SEED = 0
# Seed 000: the boxes around the pedestal's base and the controller box are for external
# planners, "not used by the Motion Controller".
MOTION_CONTROLLER_UNUSED = ('pedestal_feet', 'controller_box')


class CollisionModelError(ValueError):
    """The URDF cannot be turned into a collision model (e.g. a mesh that cannot be loaded)."""


class ShapeModel:
    """A URDF's collision shapes on a Pinocchio model, and the pairs of them worth checking:
    every pair but the ``rigid``, ``unused`` (either shape on one of `unused_links`),
    ``adjacent`` and ``always`` ones (see the module docstring), recorded in `excluded`.
    What is left is `candidates` (pairs of shape indices); subclasses choose among them and
    install their pairs with `_set_pairs`."""

    def __init__(self, urdf_xml, samples=DEFAULT_SAMPLES, seed=DEFAULT_SEED, unused_links=()):
        urdf_xml = safe_urdf(urdf_xml)          # hostile or oversized XML: UnsafeXMLError
        try:
            self.models = models = pinocchio_models(urdf_xml)   # built once per URDF
            self.model = models.full
            # (geometry of our own: _set_pairs adds its collision pairs to it)
            self.geom = pin.buildGeomFromUrdfString(self.model, urdf_xml, pin.COLLISION)
        except Exception as exc:   # pinocchio raises ValueError/RuntimeError/IOError
            raise CollisionModelError('cannot build the collision model from the URDF: %s' % exc)
        self.data = self.model.createData()
        model = self.model
        self._q = pin.neutral(model)
        self._arm_idx = self._idx_q(models, ARM_JOINTS)
        self._head_idx = self._idx_q(models, HEAD_JOINTS[:1])[0] if models.has_joint(HEAD_JOINTS[0]) else None
        objects = list(self.geom.geometryObjects)
        self.shape_links = [model.frames[g.parentFrame].name for g in objects]
        parent_link = self._geometric_parents(urdf_xml)
        unused_links = frozenset(unused_links)

        self.excluded = {}
        candidates = []
        for i in range(len(objects)):
            for j in range(i + 1, len(objects)):
                a, b = self.shape_links[i], self.shape_links[j]
                key = (a, b)
                if objects[i].parentJoint == objects[j].parentJoint:
                    self.excluded[key] = 'rigid'
                elif a in unused_links or b in unused_links:
                    self.excluded[key] = 'unused'
                elif parent_link.get(a) == b or parent_link.get(b) == a:
                    self.excluded[key] = 'adjacent'
                else:
                    candidates.append((i, j))
        self._set_pairs(candidates)

        # "always": in contact at every sampled configuration.
        rng = np.random.default_rng(seed)
        lo, hi = model.lowerPositionLimit, model.upperPositionLimit
        movable = np.concatenate([self._arm_idx] + ([[self._head_idx]] if self._head_idx is not None else []))
        hits = np.zeros(len(candidates), dtype=int)
        q = pin.neutral(model)
        for _ in range(samples):
            q[movable] = rng.uniform(lo[movable], hi[movable])
            hits += self._pair_hits(q)
        self.candidates = []
        self._touch_rate = {}            # candidate pair → fraction of samples in contact
        for k, pair in enumerate(candidates):
            if samples and hits[k] == samples:
                self.excluded[self._key(pair)] = 'always'
            else:
                self.candidates.append(pair)
                self._touch_rate[pair] = hits[k] / samples if samples else 0.0
        self.pairs, self._pair_set = [], set()

    # --- construction helpers -----------------------------------------------------------
    def _key(self, pair):
        return self.shape_links[pair[0]], self.shape_links[pair[1]]

    @staticmethod
    def _idx_q(models, names):
        for name in names:
            if not models.has_joint(name):
                raise CollisionModelError('the URDF has no joint %r' % name)
        return models.idx_q(names)

    def _geometric_parents(self, urdf_xml):
        """link → nearest ancestor link that has a collision shape."""
        from urdf_parser_py.urdf import URDF
        robot = URDF.from_xml_string(urdf_xml.encode())
        with_shape = set(self.shape_links)
        parents = {}
        for link in robot.link_map:
            up = robot.parent_map.get(link)
            while up is not None and up[1] not in with_shape:
                up = robot.parent_map.get(up[1])
            if up is not None:
                parents[link] = up[1]
        return parents

    def _set_pairs(self, pairs):
        """Check these pairs of shape indices from now on (`pairs`: their link names)."""
        self.geom.removeAllCollisionPairs()
        for i, j in pairs:
            self.geom.addCollisionPair(pin.CollisionPair(i, j))
        self.gdata = pin.GeometryData(self.geom)
        self.pairs = [self._key(pair) for pair in pairs]
        self._pair_set = set(self.pairs)

    def _pair_hits(self, q):
        pin.computeCollisions(self.model, self.data, self.geom, self.gdata, q, False)
        results = self.gdata.collisionResults
        return np.fromiter((r.isCollision() for r in results), dtype=bool, count=len(results))

    def _config(self, q_arm, q_head):
        try:
            q_arm = np.asarray(q_arm, dtype=float)
        except (TypeError, ValueError):
            raise ValueError('q_arm must be 7 finite joint angles, got %r' % (q_arm,))
        if q_arm.shape != (7,) or not np.all(np.isfinite(q_arm)):
            raise ValueError('q_arm must be 7 finite joint angles, got %r' % (q_arm,))
        q = self._q
        q[self._arm_idx] = q_arm
        if self._head_idx is not None:
            try:
                q_head = float(q_head)
            except (TypeError, ValueError):
                raise ValueError('q_head must be one finite angle, got %r' % (q_head,))
            if not np.isfinite(q_head):
                raise ValueError('q_head must be finite, got %r' % (q_head,))
            q[self._head_idx] = q_head
        return q

    def exclusion(self, link_a, link_b):
        """Why the pair is not checked (see `excluded`), 'checked' when it is, None when the
        links have no shapes (either order of names)."""
        for key in ((link_a, link_b), (link_b, link_a)):
            if key in self.excluded:
                return self.excluded[key]
            if key in self._pair_set:
                return 'checked'
        return None


class CollisionModel(ShapeModel):
    """Self-collision checks for the arm (+ head) configuration. unused_links: links whose
    shapes are left out (see motion_controller_model)."""

    def __init__(self, urdf_xml, samples=DEFAULT_SAMPLES, seed=DEFAULT_SEED,
                 reference_poses=REFERENCE_POSES, unused_links=()):
        super().__init__(urdf_xml, samples, seed, unused_links)
        candidates = self.candidates
        self._set_pairs(candidates)
        # "default": in contact at a reference pose.
        default = set()
        for arm, head in reference_poses.values():
            flags = self._pair_hits(self._config(arm, head))
            default |= {candidates[k] for k in range(len(candidates)) if flags[k]}
        active = []
        for pair in candidates:
            if pair in default:
                self.excluded[self._key(pair)] = 'default'
            else:
                active.append(pair)
        self._set_pairs(active)

    # --- queries ------------------------------------------------------------------------
    def in_collision(self, q_arm, q_head=0.0):
        """True when any checked pair of shapes touches at this configuration."""
        q = self._config(q_arm, q_head)
        return bool(pin.computeCollisions(self.model, self.data, self.geom, self.gdata, q, True))

    def first_in_collision(self, qs_arm, q_head=0.0):
        """Index of the first row of qs_arm (N×7) in collision, or None: in_collision over a
        path, with the input checked once and the q vector updated in place (the per-call
        Python work otherwise costs about half as much as the check itself)."""
        qs_arm = np.asarray(qs_arm, dtype=float)
        if qs_arm.ndim != 2 or qs_arm.shape[1] != 7 or not np.all(np.isfinite(qs_arm)):
            raise ValueError('qs_arm must be N×7 finite joint angles, got shape %r' % (qs_arm.shape,))
        if len(qs_arm) == 0:
            return None
        q = self._config(qs_arm[0], q_head)
        arm_idx = self._arm_idx
        collide, args = pin.computeCollisions, (self.model, self.data, self.geom, self.gdata, q, True)
        for i, row in enumerate(qs_arm):
            q[arm_idx] = row
            if collide(*args):
                return i
        return None

    def colliding_pairs(self, q_arm, q_head=0.0):
        """The (link, link) pairs in contact, for logs and tests."""
        flags = self._pair_hits(self._config(q_arm, q_head))
        return [self.pairs[k] for k in np.flatnonzero(flags)]

    def min_distance(self, q_arm, q_head=0.0, with_pair=False):
        """Smallest distance (m) between checked pairs; ≤ 0 when in contact (hpp-fcl reports
        a penetration as a negative distance for the primitives used here)."""
        q = self._config(q_arm, q_head)
        k = pin.computeDistances(self.model, self.data, self.geom, self.gdata, q)
        d = float(self.gdata.distanceResults[k].min_distance) if self.pairs else float('inf')
        if with_pair:
            return d, (self.pairs[k] if self.pairs else None)
        return d


def motion_controller_model(urdf_xml, **kwargs):
    """The motion controller's self-collision model: every shape but the pedestal's
    collision boxes (MOTION_CONTROLLER_UNUSED, seed 000)."""
    return CollisionModel(urdf_xml, unused_links=MOTION_CONTROLLER_UNUSED, **kwargs)
